"""Finding replies by their explanations: the newest reply (in a place), the reply before one in its
place, and the message a reply answered. What the "Why did it say that" pane opens and compares.

A reply is a turn linked to an explanation (`explanation_turns`); a long reply is several turns, of
which the first stands for it. Reads only.
"""

from __future__ import annotations

from app.memory.store import Store

SELF_KEY = "familiar:self"


class ReplyIndex:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def newest_reply(self, place: str | None = None) -> int | None:
        """The first turn of the newest explained reply (in `place`, or anywhere)."""
        where, params = ("WHERE e.place = ?", (place,)) if place is not None else ("", ())
        row = await self._store.read_one(
            "SELECT MIN(t.turn_id) FROM explanation_turns t JOIN explanations e ON e.id = t.explanation_id"
            f" WHERE t.explanation_id = (SELECT MAX(e.id) FROM explanations e"
            f" JOIN explanation_turns x ON x.explanation_id = e.id {where})",
            params,
        )
        return None if row is None or row[0] is None else int(row[0])

    async def previous_reply(self, turn_id: int) -> int | None:
        """The first turn of the explained reply before the one `turn_id` belongs to, in the same place; a
        reply replaced by a newer revision (regenerated in the window's chat) is not one before it."""
        row = await self._store.read_one(
            "SELECT MIN(x.turn_id) FROM explanation_turns x WHERE x.explanation_id = ("
            " SELECT MAX(p.id) FROM explanations p JOIN explanation_turns px ON px.explanation_id = p.id"
            " JOIN turns pt ON pt.id = px.turn_id AND pt.superseded = 0"
            " JOIN explanation_turns t ON t.turn_id = ? JOIN explanations e ON e.id = t.explanation_id"
            " WHERE p.place = e.place AND p.id < e.id)",
            (turn_id,),
        )
        return None if row is None or row[0] is None else int(row[0])

    async def answered(self, turn_id: int) -> int | None:
        """The message reply `turn_id` answered: the one it replies to, else the last message before it
        in its place that is not the familiar's own."""
        row = await self._store.read_one(
            "SELECT a.id FROM turns r JOIN turns a ON a.platform = r.platform AND a.message_id = r.reply_to"
            " WHERE r.id = ? AND r.reply_to IS NOT NULL ORDER BY a.superseded, a.id DESC LIMIT 1",
            (turn_id,),
        )
        if row is not None:
            return int(row[0])
        row = await self._store.read_one(
            "SELECT a.id FROM turns r JOIN turns a ON a.place = r.place AND a.id < r.id"
            " WHERE r.id = ? AND a.author_key != ? AND a.superseded = 0 ORDER BY a.id DESC LIMIT 1",
            (turn_id, SELF_KEY),
        )
        return None if row is None else int(row[0])
