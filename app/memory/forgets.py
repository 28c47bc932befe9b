"""Deferred forgets and forget receipts.

A forget from the window is not applied at once: it is scheduled, with a deadline, as a durable row.
From that moment every version of the fact is held out of every read (recall, the queue, the slices),
so it is gone for the familiar and for the owner; until the deadline the owner can undo it, which
deletes the row and changes nothing else. The runtime applies it (the real, irreversible forget of
Erasure.forget) at the deadline, when the window closes, or at the next open after a crash, so it is
never lost and never half-done.

A receipt records what a forget erased, content-free (ids, counts, subject keys, the scope), so the
owner can list receipts and tombstones can be labelled by who, where and when.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiosqlite

from app.memory.erasure import ForgetReceipt
from app.memory.errors import RevisionConflictError
from app.memory.facts import FactBook, FactError
from app.memory.store import Store

_SCHEDULE_COLUMNS = "id, fact_id, redact_sources, due_at, created_at"
_RECEIPT_COLUMNS = (
    "id, tombstone_id, fact_ids, stores, redacted_turn_ids, redacted_reply_ids, subjects, scope, created_at"
)


@dataclass(frozen=True, slots=True)
class ScheduledForget:
    id: int
    fact_id: int  # the version the owner chose; the whole chain goes
    redact_sources: bool
    due_at: datetime
    created_at: datetime
    held_ids: tuple[int, ...] = ()  # every version held out of reads until it is applied or cancelled


@dataclass(frozen=True, slots=True)
class StoredReceipt:
    id: int
    tombstone_id: int | None
    fact_ids: tuple[int, ...]
    stores: tuple[tuple[str, int], ...]
    redacted_turn_ids: tuple[int, ...]
    redacted_reply_ids: tuple[int, ...]  # the familiar's replies that quoted them
    subjects: tuple[str, ...]  # canonical keys, never text
    scope: str
    created_at: datetime


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise FactError("times must carry a time zone")
    return moment.astimezone(UTC).isoformat()


def _schedule(row: Sequence[Any], held: Sequence[int] = ()) -> ScheduledForget:
    return ScheduledForget(
        id=int(row[0]),
        fact_id=int(row[1]),
        redact_sources=bool(row[2]),
        due_at=datetime.fromisoformat(row[3]),
        created_at=datetime.fromisoformat(row[4]),
        held_ids=tuple(held),
    )


def _receipt(row: Sequence[Any]) -> StoredReceipt:
    return StoredReceipt(
        id=int(row[0]),
        tombstone_id=None if row[1] is None else int(row[1]),
        fact_ids=tuple(int(i) for i in json.loads(row[2])),
        stores=tuple((str(s), int(n)) for s, n in json.loads(row[3])),
        redacted_turn_ids=tuple(int(i) for i in json.loads(row[4])),
        redacted_reply_ids=tuple(int(i) for i in json.loads(row[5])),
        subjects=tuple(str(s) for s in json.loads(row[6])),
        scope=str(row[7]),
        created_at=datetime.fromisoformat(row[8]),
    )


class ForgetQueue:
    def __init__(self, store: Store, facts: FactBook) -> None:
        self._store = store
        self._facts = facts

    # -- scheduling ------------------------------------------------------------------------------
    async def schedule(
        self,
        fact_id: int,
        revision: int,
        *,
        due_at: datetime,
        redact_sources: bool = False,
        now: datetime | None = None,
    ) -> ScheduledForget:
        """Hold a fact's whole chain out of every read now and forget it at `due_at`. The revision seen
        is checked, as for any owner operation."""
        moment = now or datetime.now(UTC)
        chain = await self._facts.chain(fact_id)
        target = next(f for f in chain.facts if f.id == fact_id)
        if target.revision != revision:
            raise RevisionConflictError(
                f"fact {fact_id} changed since you saw it (revision {revision}, now {target.revision}); reload it"
            )
        live = {f.id: f.revision for f in chain.facts if f.status != "forgotten"}
        if not live:
            raise FactError(f"fact {fact_id} is already forgotten")
        marks = ",".join("?" * len(live))
        async with self._store.transaction() as conn:
            async with conn.execute(f"SELECT id, revision FROM facts WHERE id IN ({marks})", list(live)) as cursor:
                if {int(r[0]): int(r[1]) for r in await cursor.fetchall()} != live:
                    raise RevisionConflictError(f"fact {fact_id} changed while the forget was scheduled; try again")
            async with conn.execute(f"SELECT 1 FROM forget_holds WHERE fact_id IN ({marks})", list(live)) as cursor:
                if await cursor.fetchone() is not None:
                    raise FactError(f"fact {fact_id} is already being forgotten")
            cursor = await conn.execute(
                "INSERT INTO scheduled_forgets (fact_id, redact_sources, due_at, created_at) VALUES (?, ?, ?, ?)",
                (fact_id, int(redact_sources), _iso(due_at), _iso(moment)),
            )
            schedule_id = int(cursor.lastrowid or 0)
            await conn.executemany(
                "INSERT INTO forget_holds (fact_id, schedule_id) VALUES (?, ?)", [(i, schedule_id) for i in live]
            )
        return ScheduledForget(
            id=schedule_id,
            fact_id=fact_id,
            redact_sources=redact_sources,
            due_at=datetime.fromisoformat(_iso(due_at)),
            created_at=datetime.fromisoformat(_iso(moment)),
            held_ids=tuple(sorted(live)),
        )

    async def cancel(self, schedule_id: int) -> ScheduledForget:
        """Undo a scheduled forget: the fact comes back exactly as it was. Refused once it was applied."""
        async with self._store.transaction() as conn:
            async with conn.execute(
                f"SELECT {_SCHEDULE_COLUMNS} FROM scheduled_forgets WHERE id = ?", (schedule_id,)
            ) as cursor:
                row = await cursor.fetchone()
            if row is None:
                raise FactError("that forget was already applied; a forgotten fact cannot come back")
            async with conn.execute(
                "SELECT fact_id FROM forget_holds WHERE schedule_id = ? ORDER BY fact_id", (schedule_id,)
            ) as cursor:
                held = [int(r[0]) for r in await cursor.fetchall()]
            await conn.execute("DELETE FROM forget_holds WHERE schedule_id = ?", (schedule_id,))
            await conn.execute("DELETE FROM scheduled_forgets WHERE id = ?", (schedule_id,))
        return _schedule(tuple(row), held)

    async def scheduled(self, *, due_by: datetime | None = None) -> list[ScheduledForget]:
        """Scheduled forgets, soonest first; only those due by `due_by` when given."""
        where, params = ("", []) if due_by is None else (" WHERE due_at <= ?", [_iso(due_by)])
        rows = await self._store.read_all(
            f"SELECT {_SCHEDULE_COLUMNS} FROM scheduled_forgets{where} ORDER BY due_at, id", params
        )
        return [_schedule(r) for r in rows]

    async def get(self, schedule_id: int) -> ScheduledForget | None:
        row = await self._store.read_one(
            f"SELECT {_SCHEDULE_COLUMNS} FROM scheduled_forgets WHERE id = ?", (schedule_id,)
        )
        return _schedule(row) if row is not None else None

    async def complete(
        self,
        schedule_id: int,
        receipt: ForgetReceipt | None,
        *,
        subjects: Sequence[str] = (),
        scope: str = "",
        now: datetime | None = None,
    ) -> StoredReceipt | None:
        """The forget of `schedule_id` was applied (or found already done, `receipt` None): drop the
        schedule and its holds and keep the receipt, in one transaction."""
        async with self._store.transaction() as conn:
            await conn.execute("DELETE FROM forget_holds WHERE schedule_id = ?", (schedule_id,))
            await conn.execute("DELETE FROM scheduled_forgets WHERE id = ?", (schedule_id,))
            if receipt is None:
                return None
            return await _insert_receipt(conn, receipt, subjects, scope, now or datetime.now(UTC))

    # -- receipts ----------------------------------------------------------------------------------
    async def record_receipt(
        self, receipt: ForgetReceipt, *, subjects: Sequence[str], scope: str, now: datetime | None = None
    ) -> StoredReceipt:
        """Keep the receipt of a forget applied at once (the CLI's `familiar forget`)."""
        async with self._store.transaction() as conn:
            return await _insert_receipt(conn, receipt, subjects, scope, now or datetime.now(UTC))

    async def receipts(self, limit: int = 500) -> list[StoredReceipt]:
        rows = await self._store.read_all(
            f"SELECT {_RECEIPT_COLUMNS} FROM forget_receipts ORDER BY id DESC LIMIT ?", (max(1, limit),)
        )
        return [_receipt(r) for r in rows]

    async def receipts_for_tombstones(self, tombstone_ids: Sequence[int]) -> dict[int, StoredReceipt]:
        if not tombstone_ids:
            return {}
        marks = ",".join("?" * len(tombstone_ids))
        rows = await self._store.read_all(
            f"SELECT {_RECEIPT_COLUMNS} FROM forget_receipts WHERE tombstone_id IN ({marks}) ORDER BY id",
            list(tombstone_ids),
        )
        return {int(r[1]): _receipt(r) for r in rows}


async def _insert_receipt(
    conn: aiosqlite.Connection, receipt: ForgetReceipt, subjects: Sequence[str], scope: str, moment: datetime
) -> StoredReceipt:
    values = (
        receipt.tombstone_id or None,
        json.dumps(list(receipt.fact_ids)),
        json.dumps([list(s) for s in receipt.stores]),
        json.dumps(list(receipt.redacted_turn_ids)),
        json.dumps(list(receipt.redacted_reply_ids)),
        json.dumps(sorted(set(subjects))),
        scope,
        _iso(moment),
    )
    cursor = await conn.execute(
        "INSERT INTO forget_receipts (tombstone_id, fact_ids, stores, redacted_turn_ids, redacted_reply_ids, subjects,"
        " scope, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )
    return _receipt((int(cursor.lastrowid or 0), *values))
