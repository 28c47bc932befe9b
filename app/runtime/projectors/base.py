"""The `MemoryProjector` protocol, the dependencies the workers share, and the base they build on.

A projector is a background worker that reads turns (or facts) past its persisted watermark and
writes one side-index. `run()` is one tick: it does what is due and returns what it did. Watermarks
live in SQL (projector_state), so a restart, a pause or a dropped side-index resumes from where it
stood.

`ProjectorBase.run()` is the tick every built-in shares: nothing while learning is paused
everywhere, else the worker's own `tick()` (place_worker.py has the base of the workers that read
each place's new turns). What a worker keeps between ticks is its own (its report, its `Deferrals`,
a `Floor`), never a name-keyed entry on the shared dependencies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from app.config.settings import Settings
from app.memory.derived import Projections
from app.memory.embeddings import Embedder, EmbeddingIndex
from app.memory.fact_feed import FactFeed
from app.memory.history import History
from app.memory.pauses import PauseState, PauseSwitches
from app.memory.turn_feed import TurnFeed
from app.memory.watermarks import Watermarks
from app.memory.work_queue import WorkQueue
from app.runtime.llm import LLMClient

_log = logging.getLogger(__name__)


class MemoryProjector(Protocol):
    name: str

    async def run(self) -> str | None:
        """One tick; returns what it did, for status displays (None: nothing worth saying)."""
        ...


@dataclass
class ProjectorDeps:
    """What the projectors share; built once by the runtime."""

    history: History
    projections: Projections
    llm: LLMClient  # the background slot: a client and a budget of its own, apart from the replies'
    settings: Settings
    embedder: Embedder | None = None
    embeddings: EmbeddingIndex | None = None
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    # Read once at the start of a runner tick and shared by its projectors (None outside a tick).
    tick_pause: PauseState | None = None
    tick_queued: frozenset[str] | None = None

    # The store's reads and writes for memory work, over the history's store.
    marks: Watermarks = field(init=False)
    queue: WorkQueue = field(init=False)
    turns: TurnFeed = field(init=False)
    facts: FactFeed = field(init=False)
    pauses: PauseSwitches = field(init=False)

    def __post_init__(self) -> None:
        store = self.history.store
        self.marks = Watermarks(store)
        self.queue = WorkQueue(store)
        self.turns = TurnFeed(store)
        self.facts = FactFeed(store, self.history.facts)
        self.pauses = PauseSwitches(store)

    @property
    def display_name(self) -> str:
        return self.settings.familiar.display_name

    async def begin_tick(self) -> None:
        self.tick_pause, self.tick_queued = await self.projections.tick_state()

    def end_tick(self) -> None:
        self.tick_pause = self.tick_queued = None

    async def pause(self) -> PauseState:
        if self.tick_pause is not None:
            return self.tick_pause
        return await self.pauses.state()

    def queued(self, kind: str) -> None:
        """This tick queued work of this kind (so a later projector of the tick looks for it)."""
        if self.tick_queued is not None:
            self.tick_queued = self.tick_queued | {kind}

    def may_have_work(self, kind: str) -> bool:
        """False only when this tick's start saw no queued work of this kind."""
        return self.tick_queued is None or kind in self.tick_queued

    async def held_by_pause(self, pause: PauseState, scopes: Mapping[int, str]) -> set[int]:
        """Which of these facts (id -> scope) learning may not use while `pause` holds: those whose
        scope is paused, and those said where learning is paused (a message they came from was)."""
        if not pause.learning:
            return set()
        held = {fact_id for fact_id, scope in scopes.items() if pause.paused("learning", scope)}
        said = await self.facts.source_places([fact_id for fact_id in scopes if fact_id not in held])
        return held | {fact_id for fact_id, places in said.items() if any(pause.paused("learning", p) for p in places)}

    def channel_scoped(self, place: str) -> bool:
        """Whether facts learnt at `place` stay in its channel (`[memory] channel_scope_guilds`)."""
        if not place.startswith("guild:") or "/" not in place:
            return False
        guild = place.removeprefix("guild:").split("/", 1)[0]
        return guild.isdigit() and int(guild) in self.settings.memory.channel_scope_guilds


class ProjectorBase:
    """The tick every built-in shares: nothing while learning is paused everywhere, else `tick()`."""

    name: str

    def __init__(self, deps: ProjectorDeps) -> None:
        self._deps = deps
        self._said: str | None = None

    async def run(self) -> str | None:
        self._said = None
        pause = await self._deps.pause()
        if not pause.paused("learning", "*"):
            await self.tick(pause)
        return self._said

    async def tick(self, pause: PauseState) -> None:
        """The worker's own part of a tick (learning is not paused everywhere)."""
        raise NotImplementedError

    def report(self, text: str) -> None:
        """What the tick did (the last report of a tick is what `run()` returns)."""
        self._said = text
        _log.info("%s: %s", self.name, text)


class Deferrals:
    """The items a worker passed over because learning was paused where their facts were said.

    They are written down with the worker's watermark (`settle`), so the watermark moves on and
    nothing is lost, and they are looked at again whenever the pause switches have changed since the
    worker last went through them (and once after a start). Only the worker writes its own notes, so
    after the first read it knows which there are without reading them again."""

    def __init__(self, name: str, deps: ProjectorDeps) -> None:
        self._name = name
        self._deps = deps
        self._looked_under: tuple[str, ...] | None = None  # the learning pauses of the last full look
        self._known: set[str] = set()  # the items noted on disk (read by the first `due()`)

    async def due(self, pause: PauseState) -> dict[str, int]:
        """The deferred items (item -> where the worker met it) to look at again this tick."""
        if pause.learning == self._looked_under:
            return {}
        found = await self._deps.marks.deferred(self._name)
        self._known = set(found)
        return found

    def looked(self, pause: PauseState) -> None:
        """Every item `due()` gave under this pause has been looked at: not again until it changes."""
        self._looked_under = pause.learning

    async def settle(self, *, watermark: int | None, defer: Mapping[str, int], done: Iterable[str]) -> None:
        """Move the worker's watermark, note the items passed over and drop the notes of the items
        done, in one transaction (none when there is nothing to write)."""
        finished = [item for item in done if item in self._known and item not in defer]
        if watermark is None and not defer and not finished:
            return
        await self._deps.marks.settle(self._name, watermark=watermark, defer=defer, done=finished)
        self._known = (self._known - set(finished)) | set(defer)
