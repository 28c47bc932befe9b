"""The durable queue of memory work on turns (dreaming over a quiet conversation, re-extraction after
an edit): the `memory_work` table.

An item is queued once per (kind, turn), claimed by the worker of its kind (running), then done, or
failed and queued again until MAX_ATTEMPTS, after which it stays `failed` with its last error for
the owner to inspect. A deleted source message cancels its items, and cancelled stays cancelled.
An error is kept without the credentials a web address in it may carry (app.config.redaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.config.redaction import redact_urls
from app.memory.errors import StoreError
from app.memory.store import Store, now_iso

MAX_ATTEMPTS = 3
_COLUMNS = "id, kind, turn_id, place, status, attempts, last_error, created_at"


@dataclass(frozen=True, slots=True)
class WorkItem:
    id: int
    kind: str
    turn_id: int
    place: str | None
    status: str
    attempts: int
    last_error: str | None
    created_at: datetime


class WorkQueue:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def enqueue(self, kind: str, turn_id: int, place: str) -> bool:
        """Queue work on a turn once: a turn already queued (in any state) for this kind is not queued again."""
        async with self._store.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO memory_work (kind, turn_id, place, created_at, updated_at)"
                " SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS"
                " (SELECT 1 FROM memory_work WHERE kind = ? AND turn_id = ?)",
                (kind, turn_id, place, now_iso(), now_iso(), kind, turn_id),
            )
            return cursor.rowcount > 0

    async def next_work(self, kind: str, *, skip_places: Sequence[str] = ()) -> WorkItem | None:
        """Claim the oldest queued item of a kind (marks it running, counts the attempt); items of
        `skip_places` (paused ones, a guild covering its channels) stay queued."""
        skip = ",".join("?" * len(skip_places))
        clause = (
            f" AND COALESCE(place, '') NOT IN ({skip})"
            f" AND substr(COALESCE(place, ''), 1, instr(COALESCE(place, '') || '/', '/') - 1) NOT IN ({skip})"
            if skip_places
            else ""
        )
        # Most ticks find nothing: look first with a plain read, take the write lock only to claim.
        if (
            await self._store.read_one(
                "SELECT 1 FROM memory_work WHERE kind = ? AND status = 'queued' LIMIT 1", (kind,)
            )
            is None
        ):
            return None
        async with self._store.transaction() as conn:
            async with conn.execute(
                f"SELECT {_COLUMNS} FROM memory_work WHERE kind = ? AND status = 'queued'{clause} ORDER BY id LIMIT 1",
                (kind, *skip_places, *skip_places),
            ) as cursor:
                row = await cursor.fetchone()
            if row is None:
                return None
            await conn.execute(
                "UPDATE memory_work SET status = 'running', attempts = attempts + 1, updated_at = ? WHERE id = ?",
                (now_iso(), row[0]),
            )
        item = _work(tuple(row))
        return WorkItem(
            item.id, item.kind, item.turn_id, item.place, "running", item.attempts + 1, item.last_error, item.created_at
        )

    async def finish_work(self, item_id: int, *, error: str | None = None) -> str:
        """Done, or failed: a failed attempt goes back to the queue until MAX_ATTEMPTS, then stays
        `failed` with its last error for the owner to inspect. Work cancelled meanwhile (its source
        was deleted) stays cancelled. Returns the new status."""
        async with self._store.transaction() as conn:
            async with conn.execute("SELECT status, attempts FROM memory_work WHERE id = ?", (item_id,)) as cursor:
                row = await cursor.fetchone()
            if row is None:
                raise StoreError(f"there is no memory work item {item_id}")
            status, attempts = str(row[0]), int(row[1])
            if status == "cancelled":
                return status
            new = "done" if error is None else ("failed" if attempts >= MAX_ATTEMPTS else "queued")
            await conn.execute(
                "UPDATE memory_work SET status = ?, last_error = ?, updated_at = ? WHERE id = ?",
                (new, None if error is None else redact_urls(error), now_iso(), item_id),
            )
        return new

    async def release_work(self, item_id: int, *, error: str) -> str:
        """Back to the queue without spending an attempt: the work could not be tried (the model was
        unreachable), which says nothing about the work itself. Cancelled work stays cancelled."""
        async with self._store.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE memory_work SET status = 'queued', attempts = MAX(attempts - 1, 0), last_error = ?,"
                " updated_at = ? WHERE id = ? AND status = 'running'",
                (redact_urls(error), now_iso(), item_id),
            )
            if cursor.rowcount:
                return "queued"
        return await self.work_status(item_id) or "gone"

    async def work_status(self, item_id: int) -> str | None:
        row = await self._store.read_one("SELECT status FROM memory_work WHERE id = ?", (item_id,))
        return str(row[0]) if row else None

    async def previous_turn(self, kind: str, place: str, turn_id: int) -> int:
        """The newest turn queued for this kind in this place before `turn_id` (0 when none): where
        the stretch of conversation an item covers begins."""
        row = await self._store.read_one(
            "SELECT COALESCE(MAX(turn_id), 0) FROM memory_work WHERE kind = ? AND place = ? AND turn_id < ?",
            (kind, place, turn_id),
        )
        return int(row[0]) if row else 0

    async def requeue_running(self) -> int:
        """At start-up: work a crash left running goes back to the queue."""
        async with self._store.transaction() as conn:
            cursor = await conn.execute("UPDATE memory_work SET status = 'queued' WHERE status = 'running'")
            return max(cursor.rowcount, 0)

    async def work(self, kind: str | None = None, status: str | None = None, limit: int = 200) -> list[WorkItem]:
        clauses, params = [], []
        if kind is not None:
            clauses.append("kind = ?")
            params.append(kind)
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = await self._store.read_all(
            f"SELECT {_COLUMNS} FROM memory_work{where} ORDER BY id LIMIT ?", [*params, limit]
        )
        return [_work(r) for r in rows]


def _work(row: Sequence[Any]) -> WorkItem:
    return WorkItem(
        id=int(row[0]),
        kind=str(row[1]),
        turn_id=int(row[2]),
        place=None if row[3] is None else str(row[3]),
        status=str(row[4]),
        attempts=int(row[5]),
        last_error=None if row[6] is None else str(row[6]),
        created_at=datetime.fromisoformat(row[7]),
    )
