"""Whether a background loop still runs: its task, and the time by which the loop must come round again.

The loops that keep the familiar's memory up to date (the index committers, the memory workers, the change
poll, the lorebook watcher, the deferred forgets) never end on their own while the familiar runs: each
catches its errors and carries on. One can still stop: an exception it does not catch, a cancel from
outside, or a task that is never resumed (an asyncio task whose step failed to start, as under a nested
event loop, stays pending for ever with nothing to wake it). `LoopWatch` sees all three: a loop tells it
when it starts, before each wait how long the wait may last (`waiting`), and when it stops on purpose
(`stopped`); `health()` then says whether it runs, and if not, why, in words.

A loop that is working (not waiting) has no deadline: a slow model call or a long rebuild is not a
stopped loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

_log = logging.getLogger(__name__)

GRACE_SECONDS = 60.0
"""How late past its longest wait a loop may come round (a busy machine, a slow step) before it counts as stopped."""


@dataclass(frozen=True, slots=True)
class LoopHealth:
    name: str
    running: bool  # started and not stopped on purpose
    problem: str | None  # why it does not run although it should (None: it runs, or it is not meant to)


class LoopWatch:
    def __init__(self, name: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self._due: float | None = None  # the loop must have come round by then (None: it is working)
        self._waited = 0.0  # how long the wait it is in may last

    def started(self, task: asyncio.Task[None]) -> None:
        """The loop runs in `task` from now on."""
        self._task = task
        self._due = None

    def stopped(self) -> None:
        """The loop was stopped on purpose (the familiar closing, a rebuild pausing it)."""
        self._task = None
        self._due = None

    def waiting(self, seconds: float) -> None:
        """The loop is about to wait, at most `seconds` (then it comes round again)."""
        self._waited = max(0.0, seconds)
        self._due = self._clock() + self._waited + GRACE_SECONDS

    def working(self) -> None:
        """The loop came round and works (no deadline until its next wait)."""
        self._due = None

    def health(self) -> LoopHealth:
        task = self._task
        if task is None:
            return LoopHealth(self.name, running=False, problem=None)
        if task.done():
            if task.cancelled():
                problem = "stopped: its task was cancelled"
            elif (error := task.exception()) is not None:
                text = " ".join(str(error).split()) or type(error).__name__
                problem = f"stopped: {type(error).__name__}: {text}" if str(error) else f"stopped: {text}"
            else:
                problem = "stopped: its task ended"
            return LoopHealth(self.name, running=False, problem=problem)
        due = self._due
        if due is not None and self._clock() > due:
            late = self._clock() - (due - GRACE_SECONDS)
            return LoopHealth(
                self.name, running=False, problem=f"stopped: it should have come round {late:.0f} s ago and has not"
            )
        return LoopHealth(self.name, running=True, problem=None)


async def end_task(task: asyncio.Task[None] | None) -> None:
    """Cancel a loop's task and wait until it has ended. One that died already (its watch says how) is let go
    without raising its error again: closing the familiar must not fail for it."""
    if task is None:
        return
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception as error:  # noqa: BLE001 - it died before: reported by its watch, logged here once more
        _log.warning("the %s loop had stopped: %s", task.get_name(), error)
