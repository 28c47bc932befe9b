"""Where each memory worker stands: its watermarks (the `projector_state` table).

A worker keeps one watermark (key "") or one per place plus a floor (key "", the lowest id its
next scan for new turns starts from). A watermark moves alone, or with the write it belongs to: the
write is given a `WatermarkAdvance` and moves it in its own transaction, so the work and the mark
that says it is done land together or not at all.

Keys starting with "#" are notes, not places: how often the worker was rewound from outside (what
it made was erased, see `rewind_in`), the items it passed over while learning was paused where they
were said (to be done once it resumes, see `settle`), and markers a worker keeps for itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import aiosqlite

from app.memory.store import Store, now_iso

FLOOR = ""
REWINDS = "#rewinds"  # how many times something outside the worker sent it back (`rewind_in`)
_DEFERRED = "#deferred:"  # + an item the worker passed over while learning was paused

_UPSERT = (
    "INSERT INTO projector_state (name, key, watermark, updated_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (name, key) DO UPDATE SET watermark = excluded.watermark, updated_at = excluded.updated_at"
)


@dataclass(frozen=True, slots=True)
class WatermarkAdvance:
    """Move worker `name`'s watermark at `key` (a place, or "" for its single watermark) to `value`."""

    name: str
    value: int
    key: str = FLOOR


@dataclass(frozen=True, slots=True)
class Marks:
    """Everything one worker has written down, read in one query."""

    floor: int  # key "": the floor, or the single watermark of a worker without places
    places: Mapping[str, int]
    rewinds: int  # moves when something outside the worker rewinds it: its floor in memory is stale


class Watermarks:
    """The watermarks of the memory workers."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def get(self, name: str, key: str = FLOOR) -> int:
        row = await self._store.read_one(
            "SELECT watermark FROM projector_state WHERE name = ? AND key = ?", (name, key)
        )
        return int(row[0]) if row else 0

    async def marks(self, name: str) -> Marks:
        rows = await self._store.read_all("SELECT key, watermark FROM projector_state WHERE name = ?", (name,))
        found = {str(r[0]): int(r[1]) for r in rows}
        places = {key: value for key, value in found.items() if key and not key.startswith("#")}
        return Marks(floor=found.get(FLOOR, 0), places=places, rewinds=found.get(REWINDS, 0))

    async def set(self, name: str, value: int, key: str = FLOOR) -> None:
        await self.advance(WatermarkAdvance(name, value, key))

    async def advance(self, *advances: WatermarkAdvance) -> None:
        """Move these watermarks together, in one transaction."""
        async with self._store.transaction() as conn:
            await advance_in(conn, advances)

    async def reset(self, name: str) -> None:
        """Forget everything a worker wrote down: it starts from the first turn."""
        await self._store.write([("DELETE FROM projector_state WHERE name = ?", (name,))])

    async def deferred(self, name: str) -> dict[str, int]:
        """The items a worker passed over while learning was paused, each with where its watermark
        stood when it met it."""
        rows = await self._store.read_all(
            "SELECT substr(key, ?), watermark FROM projector_state WHERE name = ? AND substr(key, 1, ?) = ?",
            (len(_DEFERRED) + 1, name, len(_DEFERRED), _DEFERRED),
        )
        return {str(r[0]): int(r[1]) for r in rows}

    async def settle(
        self,
        name: str,
        *,
        watermark: int | None = None,
        defer: Mapping[str, int] | None = None,
        done: Iterable[str] = (),
    ) -> None:
        """In one transaction: move the worker's single watermark past what it read, note the items
        it passed over (`defer`: item -> where it met it), and drop the notes of those it has done.
        The watermark may pass a deferred item only together with its note: nothing is lost."""
        now = now_iso()
        async with self._store.transaction() as conn:
            if watermark is not None:
                await advance_in(conn, [WatermarkAdvance(name, watermark)])
            gone = [(name, _DEFERRED + item) for item in done]
            if gone:
                await conn.executemany("DELETE FROM projector_state WHERE name = ? AND key = ?", gone)
            noted = [(name, _DEFERRED + item, position, now) for item, position in (defer or {}).items()]
            if noted:
                await conn.executemany(_UPSERT, noted)


async def advance_in(conn: aiosqlite.Connection, advances: Sequence[WatermarkAdvance]) -> None:
    """Move watermarks inside the caller's transaction."""
    now = now_iso()
    for advance in advances:
        await conn.execute(_UPSERT, (advance.name, advance.key, advance.value, now))


async def rewind_in(conn: aiosqlite.Connection, name: str, key: str, to: int) -> None:
    """Inside the caller's transaction: what worker `name` made at place `key` is gone, so its
    watermark there goes back to `to` (never forward), its floor too (so the next scan reaches the
    place's turns again), and its rewind count moves (so a running worker stops trusting the floor
    it keeps in memory)."""
    now = now_iso()
    await conn.execute(
        "INSERT INTO projector_state (name, key, watermark, updated_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (name, key) DO UPDATE SET watermark = MIN(watermark, excluded.watermark),"
        " updated_at = excluded.updated_at",
        (name, key, to, now),
    )
    # No floor row means a floor of 0: nothing to lower.
    await conn.execute(
        "UPDATE projector_state SET watermark = MIN(watermark, ?), updated_at = ? WHERE name = ? AND key = ?",
        (to, now, name, FLOOR),
    )
    await conn.execute(
        "INSERT INTO projector_state (name, key, watermark, updated_at) VALUES (?, ?, 1, ?)"
        " ON CONFLICT (name, key) DO UPDATE SET watermark = watermark + 1, updated_at = excluded.updated_at",
        (name, REWINDS, now),
    )
