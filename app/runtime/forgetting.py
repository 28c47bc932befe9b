"""`facade.memory`, forgetting: preview, forget (at once, or deferred through its undo window),
receipts, tombstones.

A deferred forget is a durable row (app/memory/forgets.py): the fact is out of every read at once;
`cancel_forget` is its undo. It is applied by the timer here at its deadline, by `close()` for the
ones this process scheduled (the window closing ends their undo window), and by `apply_due_forgets()`
at the next open for any a crash left behind. Never lost, never half-done: the forget itself is one
transaction, and a row whose fact turns out already forgotten is simply cleared.

Every forget applied here ends with the erased words purged from the files of the search indexes
this process writes (a compaction, off the event loop), so no caller has to remember it and a
process that exits right after (a CLI command, a window closing) leaves none behind; the receipt
says where each index stands (`index_files`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from app.memory.errors import STORE_FAILURES
from app.memory.facts import FactError
from app.memory.forgets import ScheduledForget as StoredSchedule
from app.memory.forgets import StoredReceipt
from app.memory.liveness import LoopHealth, end_task
from app.memory.tombstones import foreign_tombstones, reimpose_tombstone
from app.memory.waiting import wait_set
from app.runtime.api.memory_base import MemoryBase
from app.runtime.api.view_builder import source_message
from app.runtime.api.views import (
    FORGET_UNDO_SECONDS,
    ForgetPreview,
    ForgetReceipt,
    IndexPurge,
    ScheduledForget,
    StoreCount,
    TombstoneView,
)
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind
from app.runtime.names import NameTable

_log = logging.getLogger(__name__)

CANNOT_BLOCK = "cannot block: its key is not on this machine"
IDLE_RECHECK_SECONDS = 60.0  # with nothing scheduled, look again this often anyway
RETRY_SECONDS = 2.0  # after a failed apply (a locked database), try again this soon

_FORGOTTEN_CHANGES = (
    ChangeKind.FACTS,
    ChangeKind.FORGETS,
    ChangeKind.TOMBSTONES,
    ChangeKind.DOSSIERS,
    ChangeKind.REFLECTIONS,
    ChangeKind.SUMMARIES,
    ChangeKind.EMBEDDINGS,
    ChangeKind.TURNS,
)


def _schedule_view(row: StoredSchedule) -> ScheduledForget:
    return ScheduledForget(
        id=row.id, fact_id=row.fact_id, due_at=row.due_at, redact_sources=row.redact_sources, held_ids=row.held_ids
    )


def _receipt_view(row: StoredReceipt, names: NameTable) -> ForgetReceipt:
    return ForgetReceipt(
        id=row.id,
        fact_ids=row.fact_ids,
        tombstone_id=row.tombstone_id or 0,
        stores=row.stores,
        redacted_turn_ids=row.redacted_turn_ids,
        redacted_reply_ids=row.redacted_reply_ids,
        subjects=tuple(names.person(s) for s in row.subjects),
        scope=names.place(row.scope),
        created_at=row.created_at,
    )


class ForgettingMixin(MemoryBase):
    async def forget_preview(self, fact_id: int, *, redact_sources: bool = False) -> ForgetPreview:
        """What a forget would erase, counted now (nothing is written)."""
        async with self._explained(fact_id):
            found = await self._history.erasure.preview(fact_id, redact_sources=redact_sources)
            turns = await self._views.turns(found.source_turn_ids)
        names = await self._views.names.table(people=found.subjects, places=[found.scope, *(t.place for t in turns)])
        return ForgetPreview(
            fact_id=fact_id,
            versions=found.fact_ids,
            subjects=tuple(names.person(s) for s in found.subjects),
            scope=names.place(found.scope),
            sources=tuple(source_message(t, names) for t in turns),
            redact_sources=redact_sources,
            stores=tuple(StoreCount(store, count) for store, count in found.stores),
        )

    async def forget(
        self,
        fact_id: int,
        *,
        revision: int | None = None,
        redact_sources: bool = False,
        initiator: object | None = None,
    ) -> ForgetReceipt:
        """Forget now (the CLI's path): erased everywhere, a tombstone left, the receipt kept and returned."""
        async with self._explained(fact_id):
            before = await self._history.facts.get(fact_id)
            receipt = await self._history.forget_fact(fact_id, revision=revision, redact_sources=redact_sources)
            stored = await self._deps.forgets.record_receipt(
                receipt, subjects=before.subjects if before else (), scope=before.scope if before else ""
            )
        await self._wrote(initiator, *_FORGOTTEN_CHANGES)
        return await self._receipt(stored, await self._purge())

    async def schedule_forget(
        self,
        fact_id: int,
        revision: int,
        *,
        redact_sources: bool = False,
        delay: float = FORGET_UNDO_SECONDS,
        initiator: object | None = None,
    ) -> ScheduledForget:
        """Forget after `delay` seconds, undoable until then with `cancel_forget`; the fact (its whole
        chain) is out of recall, the queue and every slice from now on."""
        due = datetime.now(UTC) + timedelta(seconds=max(0.0, delay))
        async with self._explained(fact_id):
            row = await self._deps.forgets.schedule(fact_id, revision, due_at=due, redact_sources=redact_sources)
        self._own_forgets.add(row.id)
        self._forget_wake.set()
        await self._wrote(initiator, ChangeKind.FACTS, ChangeKind.FORGETS)
        return _schedule_view(row)

    async def cancel_forget(self, schedule_id: int, *, initiator: object | None = None) -> ScheduledForget:
        """Undo a scheduled forget: the fact is back exactly as it was. Refused once it was applied."""
        async with self._explained():
            row = await self._deps.forgets.cancel(schedule_id)
        self._own_forgets.discard(schedule_id)
        await self._wrote(initiator, ChangeKind.FACTS, ChangeKind.FORGETS)
        return _schedule_view(row)

    async def scheduled_forgets(self) -> list[ScheduledForget]:
        async with self._explained():
            return [_schedule_view(r) for r in await self._deps.forgets.scheduled()]

    async def apply_due_forgets(self, *, own_too: bool = False) -> list[ForgetReceipt]:
        """Apply every scheduled forget whose deadline has passed (and, with `own_too`, every one this
        process scheduled, as when the window closes). Returns the receipts."""
        async with self._forget_lock:
            now = datetime.now(UTC)
            async with self._explained():
                rows = await self._deps.forgets.scheduled()
            due = [r for r in rows if r.due_at <= now or (own_too and r.id in self._own_forgets)]
            applied: list[StoredReceipt] = []
            for row in due:
                try:
                    stored = await self._apply(row)
                except FamiliarError as exc:  # the row stays: the timer, close or the next open tries again
                    _log.warning("scheduled forget %d of fact %d not applied yet: %s", row.id, row.fact_id, exc)
                    continue
                self._own_forgets.discard(row.id)
                if stored is not None:
                    applied.append(stored)
        if due:
            await self._wrote(None, *_FORGOTTEN_CHANGES)
        purged = await self._purge() if applied else {}
        return [await self._receipt(stored, purged) for stored in applied]

    async def _apply(self, row: StoredSchedule) -> StoredReceipt | None:
        before = await self._history.facts.get(row.fact_id)
        async with self._explained(row.fact_id):
            try:
                receipt = await self._history.forget_fact(row.fact_id, redact_sources=row.redact_sources)
            except FactError as exc:
                if before is not None and before.status != "forgotten":
                    raise
                # Forgotten already (a crash after the forget, before this row was cleared; or its source
                # message was deleted meanwhile): only the row is left to clear.
                _log.info("scheduled forget %d: fact %d was already forgotten (%s)", row.id, row.fact_id, exc)
                receipt = None
            return await self._deps.forgets.complete(
                row.id,
                receipt,
                subjects=before.subjects if before else (),
                scope=before.scope if before else "",
            )

    async def receipts(self, limit: int = 500) -> list[ForgetReceipt]:
        """Receipts of past forgets, newest first (content-free: ids, counts, who and where)."""
        async with self._explained():
            rows = await self._deps.forgets.receipts(limit)
        names = await self._views.names.table(
            people=[s for r in rows for s in r.subjects], places=[r.scope for r in rows]
        )
        return [_receipt_view(r, names) for r in rows]

    async def _receipt(self, row: StoredReceipt, purged: Mapping[str, IndexPurge]) -> ForgetReceipt:
        names = await self._views.names.table(people=row.subjects, places=[row.scope])
        return dataclasses.replace(_receipt_view(row, names), index_files=purged)

    async def _purge(self) -> dict[str, IndexPurge]:
        """The words of what was just forgotten leave the index files this process writes (see
        IndexPurge for each index's outcome). Never a reason to fail the forget: it is done already."""
        try:
            return await self._deps.ops.purge_index_files()
        except FamiliarError as exc:
            _log.warning("forgotten; the index files are purged later: %s", exc)
            return {}

    # -- tombstones ---------------------------------------------------------------------------------
    async def tombstones(self) -> list[TombstoneView]:
        """Tombstones in force, each with a content-free label: who, where, when, and its receipt."""
        async with self._explained():
            stones = await self._history.tombstones.fetch_all()
            by_stone = await self._deps.forgets.receipts_for_tombstones([t.id for t in stones])
            foreign = await foreign_tombstones(self._history.store, [t.id for t in stones])
        receipts = list(by_stone.values())
        names = await self._views.names.table(
            people=[s for r in receipts for s in r.subjects], places=[r.scope for r in receipts if r.scope]
        )
        out: list[TombstoneView] = []
        for stone in stones:
            receipt = by_stone.get(stone.id)
            subjects = tuple(names.person(s) for s in receipt.subjects) if receipt else ()
            scope = names.place(receipt.scope) if receipt and receipt.scope else None
            parts = [", ".join(p.name for p in subjects) or "no one in particular"] if receipt else [stone.reason]
            if scope is not None:
                parts.append(scope.name)
            parts.append(f"forgotten {stone.created_at.astimezone():%Y-%m-%d}")
            if receipt is not None:
                parts.append(f"receipt #{receipt.id}")
            if stone.id in foreign:
                parts.append(CANNOT_BLOCK)
            out.append(
                TombstoneView(
                    id=stone.id,
                    hash=stone.hash,
                    reason=stone.reason,
                    created_at=stone.created_at,
                    lifted_at=stone.lifted_at,
                    label=" · ".join(parts),
                    subjects=subjects,
                    scope=scope,
                    receipt_id=receipt.id if receipt else None,
                    can_block=stone.id not in foreign,
                )
            )
        return out

    async def lift_tombstone(self, tombstone_id: int, *, initiator: object | None = None) -> TombstoneView:
        """Allow what it blocked to be learned again."""
        async with self._explained():
            stone = await self._history.tombstones.lift(tombstone_id)
        await self._wrote(initiator, ChangeKind.TOMBSTONES)
        return TombstoneView(
            id=stone.id,
            hash=stone.hash,
            reason=stone.reason,
            created_at=stone.created_at,
            lifted_at=stone.lifted_at,
            label=f"{stone.reason} · lifted",
        )

    async def restore_tombstone(self, tombstone_id: int, *, initiator: object | None = None) -> TombstoneView:
        """Undo a lift: the tombstone blocks again (a fact learned again meanwhile stays, to forget)."""
        async with self._explained():
            await reimpose_tombstone(self._history.store, tombstone_id)
        await self._wrote(initiator, ChangeKind.TOMBSTONES)
        found = next((t for t in await self.tombstones() if t.id == tombstone_id), None)
        if found is None:  # lifted again by another process meanwhile
            raise FamiliarError(f"tombstone {tombstone_id} was lifted again meanwhile")
        return found

    # -- the timer -----------------------------------------------------------------------------------
    def start_forget_timer(self) -> None:
        if self._forget_task is None:
            self._forget_task = asyncio.create_task(self._forget_timer(), name="deferred-forgets")
            self._forget_watch.started(self._forget_task)

    def forget_timer_health(self) -> LoopHealth:
        return self._forget_watch.health()

    async def _forget_timer(self) -> None:
        while True:
            self._forget_watch.working()
            wait = IDLE_RECHECK_SECONDS
            try:
                await self.apply_due_forgets()
                upcoming = await self._deps.forgets.scheduled()
                if upcoming:
                    wait = max(0.0, (upcoming[0].due_at - datetime.now(UTC)).total_seconds())
            except STORE_FAILURES as exc:
                _log.warning("deferred forgets: %s; trying again shortly", exc)
                wait = RETRY_SECONDS
            except FamiliarError as exc:
                _log.warning("deferred forgets could not be applied yet: %s", exc)
                wait = RETRY_SECONDS
            self._forget_wake.clear()
            self._forget_watch.waiting(wait)
            await wait_set(self._forget_wake, wait)

    async def close_forgets(self) -> list[ForgetReceipt]:
        """Stop the timer and apply every forget this process scheduled: its undo window ends with it."""
        self._forget_watch.stopped()
        task, self._forget_task = self._forget_task, None
        await end_task(task)
        if not self._own_forgets:
            return await self.apply_due_forgets()
        return await self.apply_due_forgets(own_too=True)
