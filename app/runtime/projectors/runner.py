"""Runs the selected projectors on a timer, one after another, beside the conversation.

A tick never takes the familiar down: an unreachable background endpoint leaves the work behind
its watermarks (reported, retried next tick); so does a full disk (said once while it lasts, and
told to `on_disk_full`); any other error is logged with its traceback and the other projectors still run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from app.memory.errors import is_disk_full
from app.memory.liveness import LoopHealth, LoopWatch, end_task
from app.memory.waiting import wait_set
from app.runtime.llm import LLMError
from app.runtime.projectors.base import MemoryProjector, ProjectorDeps

_log = logging.getLogger(__name__)


class ProjectorRunner:
    def __init__(
        self,
        projectors: Sequence[MemoryProjector],
        deps: ProjectorDeps,
        tick_seconds: float,
        *,
        after_tick: Callable[[], Awaitable[object]] | None = None,
        on_disk_full: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.projectors = tuple(projectors)
        self._after_tick = after_tick  # e.g. publish what the tick changed
        self._on_disk_full = on_disk_full
        self._full = False  # the last tick met a full disk (said once until a tick goes without)
        self._deps = deps
        self._tick_seconds = tick_seconds
        self._task: asyncio.Task[None] | None = None
        self._watch = LoopWatch("memory-projectors")
        self._started = False
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self.ticks = 0
        self.reports: dict[str, str] = {}  # what each projector last said it did

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.projectors)

    async def tick(self) -> None:
        """Run every projector once (serialised with the timer's ticks)."""
        async with self._lock:
            # A `replace` during the tick takes effect at the next one: this one ends as it began.
            projectors, deps = self.projectors, self._deps
            await deps.begin_tick()
            full = False
            try:
                for projector in projectors:
                    try:
                        said = await projector.run()
                    except LLMError as exc:
                        said = f"waiting for the background model: {exc}"
                        _log.info("%s: %s", projector.name, said)
                    except Exception as exc:  # noqa: BLE001 - one failing worker must not stop the others
                        if not is_disk_full(exc):
                            _log.exception("memory worker %s failed; it will try again next tick", projector.name)
                            continue
                        said = "waiting for room on the disk"
                        log = _log.debug if full or self._full else _log.warning  # once while it lasts
                        log("memory worker %s: the disk is full (%s); it tries again next tick", projector.name, exc)
                        full = True
                        if self._on_disk_full is not None:
                            self._on_disk_full(exc)
                    if said is not None:
                        self.reports[projector.name] = said
            finally:
                deps.end_tick()
                self._full = full
            self.ticks += 1
            if self._after_tick is not None:
                try:
                    await self._after_tick()
                except Exception:  # noqa: BLE001 - a listener must never stop the workers
                    _log.exception("after a memory tick")

    def start(self) -> None:
        self._started = True
        if self._task is None and self.projectors:
            self._task = asyncio.create_task(self._loop(), name="memory-projectors")
            self._watch.started(self._task)

    def replace(self, projectors: Sequence[MemoryProjector], deps: ProjectorDeps, tick_seconds: float) -> None:
        """Run these projectors over these dependencies from the next tick on (the settings changed).
        Their state lives in SQL, so new instances carry on where the old ones stood."""
        changed = tick_seconds != self._tick_seconds
        self.projectors = tuple(projectors)
        self._deps = deps
        self._tick_seconds = tick_seconds
        if self._started:
            self.start()
            if changed:
                self.nudge()  # the wait under way was measured with the old interval

    def nudge(self) -> None:
        self._wake.set()

    def loop_health(self) -> LoopHealth:
        """Whether the workers' timer runs (it does not with no worker selected, or before `start`)."""
        return self._watch.health()

    async def _loop(self) -> None:
        while True:
            self._watch.working()
            await self.tick()
            self._wake.clear()
            self._watch.waiting(self._tick_seconds)
            await wait_set(self._wake, self._tick_seconds)

    async def close(self) -> None:
        self._started = False
        self._watch.stopped()
        task, self._task = self._task, None
        await end_task(task)
