"""The lorebook's state per place, kept for the runtime (the engine, app/lore, is pure and keeps none).

- Timed effects: a sticky or cooldown effect of one entry in one place, in the place's message numbers
  (active at start < clock <= end). The runtime replaces a place's effects with what an activation left.
- Message clocks: the number of a message in its place (1 = the first there, the familiar's own messages
  included; an edited message is still one message), SillyTavern's unit for sticky, cooldown and delay.
  Counting a long channel is done once; after that only the messages since the last count are counted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.memory.store import Store

_log = logging.getLogger(__name__)

_ANCHOR = "SELECT COALESCE(origin_id, id) FROM turns WHERE id = ?"
_COUNT_BETWEEN = (
    "SELECT COUNT(*) FROM turns WHERE place = ? AND superseded = 0"
    " AND COALESCE(origin_id, id) > ? AND COALESCE(origin_id, id) <= ?"
)


@dataclass(frozen=True, slots=True)
class TimedEffectRow:
    place: str
    entry: str  # the lorebook engine's entry key (a hash; never the entry's text)
    kind: str  # sticky | cooldown
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class FiredRow:
    """How many replies (kept explanations) an entry went into, as the replies named it (index, title)."""

    index: int  # 0-based, in the book as it was then
    title: str
    replies: int
    last: str  # ISO time of the newest


class LoreState:
    def __init__(self, store: Store) -> None:
        self._store = store

    # -- timed effects -----------------------------------------------------------------------------------
    async def effects(self, place: str) -> list[TimedEffectRow]:
        rows = await self._store.read_all(
            "SELECT place, entry, kind, start, end FROM lore_timed_effects WHERE place = ? ORDER BY entry, kind",
            (place,),
        )
        return [_row(r) for r in rows]

    async def all_effects(self) -> list[TimedEffectRow]:
        rows = await self._store.read_all(
            "SELECT place, entry, kind, start, end FROM lore_timed_effects ORDER BY place, entry, kind"
        )
        return [_row(r) for r in rows]

    async def replace(self, place: str, effects: Sequence[TimedEffectRow]) -> None:
        """The place's effects become these (one transaction); writes nothing when they are already."""
        current = await self.effects(place)
        wanted = sorted(effects, key=lambda e: (e.entry, e.kind))
        if current == wanted:
            return
        statements: list[tuple[str, Sequence[object]]] = [("DELETE FROM lore_timed_effects WHERE place = ?", (place,))]
        statements += [
            (
                "INSERT INTO lore_timed_effects (place, entry, kind, start, end) VALUES (?, ?, ?, ?, ?)",
                (place, e.entry, e.kind, e.start, e.end),
            )
            for e in wanted
        ]
        await self._store.write(statements)

    async def clear(self, place: str | None = None, entry: str | None = None) -> int:
        """End timed effects: of one place, of one entry, of both, or (neither) all; returns how many."""
        where, params = _where(place, entry)
        row = await self._store.read_one(f"SELECT COUNT(*) FROM lore_timed_effects{where}", params)
        count = int(row[0]) if row else 0
        if count:
            await self._store.write([(f"DELETE FROM lore_timed_effects{where}", params)])
        return count

    # -- what fired --------------------------------------------------------------------------------------
    async def fired_since(self, since: str) -> list[FiredRow]:
        """The entries that went into replies explained since `since` (ISO time; the explanations kept:
        app.memory.derived keeps the newest replies'), per entry as each reply named it."""
        rows = await self._store.read_all(
            "SELECT CAST(json_extract(j.value, '$.index') AS INTEGER) AS idx,"
            " COALESCE(json_extract(j.value, '$.title'), '') AS title, COUNT(DISTINCT e.id), MAX(e.created_at)"
            " FROM explanations e, json_each(e.body, '$.lorebook') j"
            " WHERE e.created_at >= ? AND json_valid(e.body) GROUP BY idx, title",
            (since,),
        )
        return [FiredRow(int(r[0]), str(r[1]), int(r[2]), str(r[3])) for r in rows if r[0] is not None]

    # -- message clocks ----------------------------------------------------------------------------------
    async def clock(self, place: str, turn_id: int) -> int:
        """The number of message `turn_id` in `place` (0 when the turn is not there)."""
        found = await self._store.read_one(_ANCHOR, (turn_id,))
        if found is None:
            return 0
        anchor = int(found[0])
        cached = await self._store.read_one("SELECT anchor, messages FROM lore_clocks WHERE place = ?", (place,))
        if cached is not None and int(cached[0]) == anchor:
            return int(cached[1])
        if cached is not None and int(cached[0]) > anchor:  # an older message: counted back, not kept
            between = await self._store.read_one(_COUNT_BETWEEN, (place, anchor, int(cached[0])))
            return int(cached[1]) - (int(between[0]) if between else 0)
        since, base = (int(cached[0]), int(cached[1])) if cached is not None else (-(2**62), 0)
        counted = await self._store.read_one(_COUNT_BETWEEN, (place, since, anchor))
        messages = base + (int(counted[0]) if counted else 0)
        await self._store.write(
            [
                (
                    "INSERT INTO lore_clocks (place, anchor, messages) VALUES (?, ?, ?)"
                    " ON CONFLICT (place) DO UPDATE SET anchor = excluded.anchor, messages = excluded.messages"
                    " WHERE excluded.anchor > lore_clocks.anchor",
                    (place, anchor, messages),
                )
            ]
        )
        return messages


def _row(row: Sequence[Any]) -> TimedEffectRow:
    place, entry, kind, start, end = row
    return TimedEffectRow(str(place), str(entry), str(kind), int(start), int(end))


def _where(place: str | None, entry: str | None) -> tuple[str, tuple[str, ...]]:
    parts: list[str] = []
    params: list[str] = []
    if place is not None:
        parts.append("place = ?")
        params.append(place)
    if entry is not None:
        parts.append("entry = ?")
        params.append(entry)
    return (" WHERE " + " AND ".join(parts) if parts else ""), tuple(params)


__all__ = ["FiredRow", "LoreState", "TimedEffectRow"]
