"""What every part of `facade.memory` shares: its dependencies, its state, and error translation.

`MemoryService` (memory.py) is assembled from three parts kept in their own modules (facts and
decisions, forgetting, people); each is a mixin over `MemoryBase`, which owns the state.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.memory.catalog import Catalog
from app.memory.derived import Projections
from app.memory.errors import RevisionConflictError, StoreError
from app.memory.forgets import ForgetQueue
from app.memory.history import History
from app.memory.liveness import LoopWatch
from app.memory.pauses import PauseSwitches
from app.runtime.api.memory_ops import MemoryOps
from app.runtime.api.view_builder import ViewBuilder
from app.runtime.api.views import FactView
from app.runtime.changes import ChangeBroadcaster
from app.runtime.errors import FamiliarError, StaleRevisionError
from app.runtime.events import ChangeKind
from app.runtime.retrieval import Retriever

if TYPE_CHECKING:  # numpy loads with the timeline book, when a slice is first asked for: not for every command
    from app.memory.timeline import TimelineBook


@dataclass(frozen=True, slots=True)
class MemoryDeps:
    history: History
    projections: Projections
    pauses: PauseSwitches  # recall honours the pause switches, as a reply does
    catalog: Catalog
    forgets: ForgetQueue
    views: ViewBuilder
    changes: ChangeBroadcaster
    current_retriever: Callable[[], Retriever]  # the settings decide it: it changes with them
    ops: MemoryOps  # export / import and the index files' purge, shared with the index commands

    @property
    def retriever(self) -> Retriever:
        return self.current_retriever()


class MemoryBase:
    _timeline_book: TimelineBook | None = None

    def __init__(self, deps: MemoryDeps) -> None:
        self._deps = deps
        self._history = deps.history
        self._views = deps.views
        # Deferred forgets this process scheduled: applied at close even before their deadline.
        self._own_forgets: set[int] = set()
        self._forget_lock = asyncio.Lock()  # one applier at a time (the timer, close, an explicit call)
        self._forget_wake = asyncio.Event()
        self._forget_task: asyncio.Task[None] | None = None
        self._forget_watch = LoopWatch("deferred-forgets")

    def _timeline(self) -> TimelineBook:
        """The facts' bi-temporal slices (app/memory/timeline.py): every as-of read goes through it."""
        if self._timeline_book is None:
            from app.memory.timeline import TimelineBook

            self._timeline_book = TimelineBook(self._history.store)
        return self._timeline_book

    async def _wrote(self, initiator: object | None, *kinds: ChangeKind) -> None:
        await self._deps.changes.wrote(kinds, initiator)

    async def _current_view(self, fact_id: int | None) -> FactView | None:
        if fact_id is None:
            return None
        try:
            fact = await self._history.facts.get(fact_id)
            return await self._views.fact(fact) if fact is not None else None
        except (StoreError, ValueError):
            return None

    @asynccontextmanager
    async def _explained(self, fact_id: int | None = None) -> AsyncIterator[None]:
        """Store errors (a bad input among them: BadInputError) become one-line FamiliarErrors; a stale
        revision a StaleRevisionError carrying the fact as it is now. Any other error is a bug: it goes up as
        it is, with its traceback, never worded as a message for the owner."""
        try:
            yield
        except RevisionConflictError as exc:
            raise StaleRevisionError(str(exc), fact_id or 0, await self._current_view(fact_id)) from exc
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
