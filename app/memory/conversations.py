"""Where a place's conversation starts: the owner clearing the window's chat starts it afresh.

A restart hides nothing from the memory and deletes nothing: the turns stay (searchable, in every fact,
summary and dossier made from them); only the place's recent window (`Store.recent_turns`: what the chat
shows and what a reply there is built from) begins after them. It is an owner decision, kept across
restarts in store_meta (`CONVERSATION_START` + place: the anchor, COALESCE(origin_id, id), of the last turn
left behind), and it can be undone: `restore` puts the start back where it was, unless the conversation
was restarted again since.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.memory.store import CONVERSATION_START, Store


@dataclass(frozen=True, slots=True)
class Restart:
    """A restart of one place's conversation: its start moved from `before` to `after` (turn anchors; 0 is the
    very beginning), leaving `turns` live turns behind (0: there was nothing to leave, nothing was written)."""

    place: str
    before: int
    after: int
    turns: int


class ConversationStarts:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def start(self, place: str) -> int:
        """The anchor after which the place's conversation runs now (0: from its first turn)."""
        row = await self._store.read_one("SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = ?", (_key(place),))
        return 0 if row is None or row[0] is None else int(row[0])

    async def restart(self, place: str) -> Restart:
        """Start the place's conversation after everything said there so far."""
        async with self._store.transaction() as conn:
            async with conn.execute(
                "SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = ?", (_key(place),)
            ) as cursor:
                row = await cursor.fetchone()
            before = 0 if row is None or row[0] is None else int(row[0])
            async with conn.execute(
                "SELECT COALESCE(MAX(COALESCE(origin_id, id)), 0),"
                " COUNT(*) FILTER (WHERE superseded = 0 AND redacted = 0 AND COALESCE(origin_id, id) > ?)"
                " FROM turns WHERE place = ?",
                (before, place),
            ) as cursor:
                found = await cursor.fetchone()
            after, turns = (int(found[0]), int(found[1])) if found is not None else (0, 0)
            if after <= before or not turns:
                return Restart(place, before, before, 0)
            await conn.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", (_key(place), after))
        return Restart(place, before, after, turns)

    async def restore(self, restart: Restart) -> bool:
        """Undo `restart`: the start goes back to where it was. False (nothing written) when the place's
        conversation no longer starts where `restart` left it (restarted again since)."""
        async with self._store.transaction() as conn:
            async with conn.execute(
                "SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = ?", (_key(restart.place),)
            ) as cursor:
                row = await cursor.fetchone()
            now = 0 if row is None or row[0] is None else int(row[0])
            if now != restart.after:
                return False
            if restart.before:
                await conn.execute(
                    "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)",
                    (_key(restart.place), restart.before),
                )
            else:
                await conn.execute("DELETE FROM store_meta WHERE key = ?", (_key(restart.place),))
        return True


def _key(place: str) -> str:
    return CONVERSATION_START + place
