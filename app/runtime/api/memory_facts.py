"""`facade.memory`, facts: the pending queue, fact detail, slices, recall, the owner's decisions and
their reversals (undo). Every write carries the revision seen and publishes a MemoryChanged."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import cast

from app.memory.decisions import Move
from app.memory.facts import Fact, NewFact
from app.memory.policy import place_problem
from app.memory.records import OWNER_KEY
from app.runtime.api.memory_base import MemoryBase
from app.runtime.api.view_builder import fact_view, source_message
from app.runtime.api.views import (
    FactDetail,
    FactStatus,
    FactView,
    PendingItem,
    PendingQueue,
    RecalledFact,
    RelatedFact,
    RememberOutcome,
    SourceMessage,
    StatusChange,
)
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind
from app.runtime.names import NameTable
from app.runtime.textdiff import relation, word_diff
from app.runtime.timeline import point, slice_filter

MAX_ROWS = 10_000
_LISTED = ("pending", "active", "rejected", "archived", "all")  # what list_facts takes
DEFAULT_SNOOZE = timedelta(days=1)


def _related(item: Fact, others: Sequence[Fact], names: NameTable) -> tuple[RelatedFact, ...]:
    """The current facts a pending item would duplicate or could replace, with why; the others of the
    same subject (a different attribute) are left out: accepting the item leaves them as they are."""
    out: list[RelatedFact] = []
    for other in others:
        found = relation(other.content, item.content)
        if found is not None:
            kind, reason = found
            out.append(RelatedFact(fact_view(other, names), kind, word_diff(other.content, item.content), reason))
    return tuple(out)


def _head_then(fact_id: int, then: Sequence[Fact], now: Sequence[Fact], recorded_at: datetime) -> int:
    """The head of the chain at `recorded_at`, from the versions recorded by then: `fact_id`'s successors
    while they were recorded by then. A fact not recorded yet then is an error."""
    by_id = {f.id: f for f in then}
    if fact_id not in by_id:
        made = next(f.created_at for f in now if f.id == fact_id)
        if made <= recorded_at:  # the timeline holds out a fact whose forget can still be undone, as every read
            raise FamiliarError(f"fact {fact_id} is waiting to be forgotten: no slice of the timeline shows it")
        raise FamiliarError(
            f"fact {fact_id} was not recorded yet at {recorded_at.isoformat()} (it was recorded at {made.isoformat()})"
        )
    current = by_id[fact_id]
    for _step in range(len(by_id)):  # the chain has no cycle (FactBook.chain checks): one step per version at most
        if current.superseded_by is None or current.superseded_by not in by_id:
            break
        current = by_id[current.superseded_by]
    return current.id


class FactsMixin(MemoryBase):
    # -- reads -----------------------------------------------------------------------------------
    async def pending(
        self, *, include_snoozed: bool = False, subject: str | None = None, limit: int = 200, with_related: bool = True
    ) -> PendingQueue:
        """The owner's queue, oldest first, each item with its sources and (unless `with_related` is
        False, for a quick first paint) the current facts it would duplicate or supersede. Snoozed facts
        are left out until their snooze ends, unless `include_snoozed`."""
        book = self._history.facts
        async with self._explained():
            shown = await book.pending(
                limit=max(1, min(limit, MAX_ROWS)), include_snoozed=include_snoozed, subject=subject
            )
            related = {f.id: await book.related_current(f) for f in shown} if with_related else {}
            waiting = await book.waiting_count(subject=subject)
            snoozed = await book.snoozed_count(subject=subject)
            turns = await self._views.turns(sorted({t for f in shown for t in f.source_turn_ids}))
        everything = [*shown, *(r for rs in related.values() for r in rs)]
        names = await self._views.table_for(everything, turns)

        def build() -> tuple[PendingItem, ...]:
            by_id = {t.id: source_message(t, names) for t in turns}
            return tuple(
                PendingItem(
                    fact=fact_view(f, names),
                    sources=tuple(by_id[t] for t in f.source_turn_ids if t in by_id),
                    related=_related(f, related.get(f.id, ()), names),
                )
                for f in shown
            )

        # The word diffs of a page of items with related facts take tens of ms: off the loop (the window's).
        items = await asyncio.to_thread(build) if any(related.values()) else build()
        return PendingQueue(items=items, pending=waiting, snoozed=snoozed)

    async def fact(self, fact_id: int, *, recorded_at: datetime | None = None) -> FactDetail:
        """A fact with its whole version chain, the sources of every version, its status history, and
        (when pending) the current facts it would duplicate or supersede.

        With `recorded_at`, the chain as it was recorded by then: only the versions recorded by then, each
        as the timeline's slice there shows it (the status it had then; not superseded if it was superseded
        only later), the status history up to then, and nothing it would duplicate (that is about now)."""
        book = self._history.facts
        async with self._explained(fact_id):
            chain = await book.chain(fact_id)
            versions = chain.facts
            head_id = chain.head_id
            if recorded_at is not None:
                versions = await self._timeline().versions_at([f.id for f in chain.facts], recorded_at)
                head_id = _head_then(fact_id, versions, chain.facts, recorded_at)
            target = next(f for f in versions if f.id == fact_id)
            pending = target.status == "pending" and recorded_at is None
            related = await book.related_current(target) if pending else []
            turns = await self._views.turns(sorted({t for f in versions for t in f.source_turn_ids}))
            log = await book.status_log([f.id for f in versions])
        names = await self._views.table_for([*versions, *related], turns)
        return FactDetail(
            fact=fact_view(target, names),
            versions=tuple(fact_view(f, names) for f in versions),
            head_id=head_id,
            sources=tuple(source_message(t, names) for t in turns),
            related=_related(target, related, names),
            status_history={
                fact_id: tuple(
                    StatusChange(cast(FactStatus, status), at)
                    for status, at in entries
                    if recorded_at is None or at <= recorded_at
                )
                for fact_id, entries in log.items()
            },
        )

    async def list_facts(
        self,
        *,
        status: str = "active",
        subject: str | None = None,
        world_at: datetime | None = None,
        recorded_at: datetime | None = None,
        limit: int = 200,
    ) -> list[FactView]:
        """Current truth, newest first; or (with world_at / recorded_at) the bi-temporal slice, in the
        timeline's order (latest start first), each fact as it stood at the recorded time: the status it
        had then, and not superseded if it was superseded only later (the timeline book's reading)."""
        if status not in _LISTED:
            raise FamiliarError(f"status '{status}' is not {', '.join(_LISTED[:-1])} or {_LISTED[-1]}")
        async with self._explained():
            if world_at is None and recorded_at is None:
                facts: Sequence[Fact] = await self._history.facts.list_facts(
                    status=status, subject=subject, limit=limit
                )
            else:
                where = slice_filter(None, status, subject)
                page = max(1, min(limit, MAX_ROWS))
                facts = await self._timeline().as_recorded(point(world_at, recorded_at), where, limit=page)
        return await self._views.facts(facts)

    async def sources(self, turn_ids: Sequence[int]) -> list[SourceMessage]:
        """Messages by turn id, as they stand now (redacted ones without content)."""
        async with self._explained():
            turns = await self._views.turns(turn_ids)
        names = await self._views.table_for((), turns)
        return [source_message(t, names) for t in turns]

    async def recall(self, query: str, where: str, limit: int = 10) -> list[RecalledFact]:
        """The facts retrieval would put into a reply at `where`, with their scores and signals: none
        while recall is paused there (everywhere, its server or the place itself), as for a reply."""
        if (problem := place_problem(where)) is not None:
            raise FamiliarError(problem)
        async with self._explained():
            if (await self._deps.pauses.state()).paused("recall", where):
                return []
            scored = await self._deps.retriever.facts(query, where, limit)
        views = await self._views.facts([s.fact for s in scored])
        return [RecalledFact(view, s.score, dict(s.signals)) for view, s in zip(views, scored, strict=True)]

    # -- the owner's decisions ---------------------------------------------------------------------
    async def remember(
        self,
        text: str,
        where: str,
        *,
        subjects: tuple[str, ...] = (),
        fact_type: str = "semantic",
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        initiator: object | None = None,
    ) -> RememberOutcome:
        """The owner's explicit path: inserts active (unless it duplicates a current fact or is tombstoned)."""
        async with self._explained():
            outcome = await self._history.insert_fact(
                NewFact(
                    content=text,
                    type=fact_type,
                    importance=7,
                    confidence=1.0,
                    subjects=subjects,
                    place=where,
                    speaker=OWNER_KEY,
                    valid_from=valid_from,
                    valid_to=valid_to,
                    origin="remember",
                    channel_scoped="/" in where,
                )
            )
        if outcome.outcome == "tombstoned":
            raise FamiliarError(
                "that fact was forgotten before and is blocked by a tombstone; lift the tombstone first"
            )
        if outcome.fact is None or outcome.outcome not in ("inserted", "duplicate"):
            raise FamiliarError(f"that fact was not remembered ({outcome.outcome})")
        await self._wrote(initiator, ChangeKind.FACTS)
        return RememberOutcome(
            outcome="inserted" if outcome.outcome == "inserted" else "duplicate",
            fact=await self._views.fact(outcome.fact),
        )

    async def accept(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView:
        return await self._move(fact_id, revision, "accept", initiator)

    async def reject(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView:
        return await self._move(fact_id, revision, "reject", initiator)

    async def snooze(
        self, fact_id: int, revision: int, until: datetime | None = None, *, initiator: object | None = None
    ) -> FactView:
        """Out of the queue until `until` (default: a day from now)."""
        until = until or datetime.now(UTC) + DEFAULT_SNOOZE
        return await self._move(fact_id, revision, "snooze", initiator, until=until)

    async def archive(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView:
        """An active fact leaves current truth (it stays in the history slices)."""
        return await self._move(fact_id, revision, "archive", initiator)

    async def edit(self, fact_id: int, revision: int, text: str, *, initiator: object | None = None) -> FactView:
        """A correction: a new version (active: the owner wrote it) supersedes this one. Returns the new head."""
        async with self._explained(fact_id):
            fact = await self._history.edit_fact(fact_id, revision, text)
        return await self._decided(fact, initiator)

    # -- reversals (undo) ------------------------------------------------------------------------------
    async def reopen(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView:
        """Undo an accept or a reject: back to the pending queue."""
        return await self._move(fact_id, revision, "reopen", initiator)

    async def unarchive(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView:
        return await self._move(fact_id, revision, "unarchive", initiator)

    async def restore_snooze(
        self, fact_id: int, revision: int, until: datetime | None, *, initiator: object | None = None
    ) -> FactView:
        """Undo a snooze: the snooze it had before (None: back in the queue now)."""
        return await self._move(fact_id, revision, "restore_snooze", initiator, until=until)

    async def revert_edit(self, fact_id: int, revision: int, *, initiator: object | None = None) -> FactView:
        """Undo an edit: the version from before is the head again as it was (its id, its dates, the status it
        had); the edit's version stays in the history, marked undone. Returns that version."""
        async with self._explained(fact_id):
            fact, _changes = await self._history.corrections.revert_edit(fact_id, revision)
        self._history.facts_index.notify()
        return await self._decided(fact, initiator)

    async def _move(
        self, fact_id: int, revision: int, move: Move, initiator: object | None, *, until: datetime | None = None
    ) -> FactView:
        """One of the owner's status moves (app.memory.decisions.TRANSITIONS)."""
        async with self._explained(fact_id):
            fact = await self._history.decisions.decide(fact_id, revision, move, until=until)
        return await self._decided(fact, initiator)

    async def _decided(self, fact: Fact, initiator: object | None) -> FactView:
        await self._wrote(initiator, ChangeKind.FACTS)
        return await self._views.fact(fact)
