"""Runs the selected projectors on a timer, one after another, beside the conversation.

A tick never takes the familiar down: an unreachable background endpoint leaves the work behind
its watermarks (reported, retried next tick); any other error is logged with its traceback and the
other projectors still run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from app.memory.waiting import wait_set
from app.runtime.llm import LLMError
from app.runtime.projectors.base import MemoryProjector, ProjectorDeps

_log = logging.getLogger(__name__)


class ProjectorRunner:
    def __init__(self, projectors: Sequence[MemoryProjector], deps: ProjectorDeps, tick_seconds: float) -> None:
        self.projectors = tuple(projectors)
        self._deps = deps
        self._tick_seconds = tick_seconds
        self._task: asyncio.Task[None] | None = None
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
            await self._deps.begin_tick()
            try:
                for projector in self.projectors:
                    try:
                        said = await projector.run()
                    except LLMError as exc:
                        said = f"waiting for the background model: {exc}"
                        _log.info("%s: %s", projector.name, said)
                    except Exception:  # noqa: BLE001 - one failing worker must not stop the others
                        _log.exception("memory worker %s failed; it will try again next tick", projector.name)
                        continue
                    if said is not None:
                        self.reports[projector.name] = said
            finally:
                self._deps.end_tick()
            self.ticks += 1

    def start(self) -> None:
        if self._task is None and self.projectors:
            self._task = asyncio.create_task(self._loop(), name="memory-projectors")

    def nudge(self) -> None:
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            await self.tick()
            self._wake.clear()
            await wait_set(self._wake, self._tick_seconds)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
