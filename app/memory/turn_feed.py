"""What the memory workers read of the conversation: which places have turns past their watermarks,
and the stretches of live turns (latest revisions, not redacted) they work on."""

from __future__ import annotations

from dataclasses import dataclass

from app.memory.records import Turn
from app.memory.store import Store

_LIVE = "superseded = 0 AND redacted = 0"


@dataclass(frozen=True, slots=True)
class NewTurns:
    """One place's live turns past a scan's floor."""

    place: str
    newest: int  # the newest live turn's id
    count: int  # how many live turns are past the floor


@dataclass(frozen=True, slots=True)
class TurnScan:
    top: int  # the newest turn id overall, live or not
    places: tuple[NewTurns, ...]


class TurnFeed:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def scan(self, floor: int) -> TurnScan:
        """Per place, the newest live turn past `floor` and how many there are; and the newest id.

        One statement, one snapshot, one range scan from the floor, so a tick reads only the turns
        that arrived since. (`GROUP BY +place` keeps SQLite on the id range; grouping through the
        place index would walk every turn.)"""
        rows = await self._store.read_all(
            "SELECT NULL, MAX(id), 0 FROM turns UNION ALL"
            f" SELECT place, MAX(id), COUNT(*) FROM turns WHERE id > ? AND {_LIVE} GROUP BY +place",
            (floor,),
        )
        top = max((int(r[1] or 0) for r in rows if r[0] is None), default=0)
        places = tuple(NewTurns(str(r[0]), int(r[1]), int(r[2])) for r in rows if r[0] is not None)
        return TurnScan(top, places)

    async def count_after(self, place: str, after: int) -> int:
        """How many live turns of a place are past `after`."""
        row = await self._store.read_one(
            f"SELECT COUNT(*) FROM turns WHERE place = ? AND id > ? AND {_LIVE}", (place, after)
        )
        return int(row[0]) if row else 0

    async def tail_start(self, place: str, tail: int) -> int:
        """The id just before a place's last `tail` live turns (0 when it has no more than that)."""
        row = await self._store.read_one(
            f"SELECT id FROM turns WHERE place = ? AND {_LIVE} ORDER BY id DESC LIMIT 1 OFFSET ?", (place, tail)
        )
        return int(row[0]) if row else 0

    async def newest(self, place: str, after: int, upto: int, limit: int) -> list[Turn]:
        """The newest `limit` live turns of a place in (after, upto], oldest first."""
        rows = await self._store.read_all(
            f"SELECT id FROM turns WHERE place = ? AND id > ? AND id <= ? AND {_LIVE} ORDER BY id DESC LIMIT ?",
            (place, after, upto, limit),
        )
        return await self._store.turns_by_ids(sorted(int(r[0]) for r in rows))

    async def display_name(self, canonical_key: str) -> str | None:
        """The name a participant was last seen with, None for someone never seen."""
        row = await self._store.read_one(
            "SELECT display_name FROM participants WHERE canonical_key = ?", (canonical_key,)
        )
        return str(row[0]) if row else None
