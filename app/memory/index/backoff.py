"""Lock backoff: an index that stays locked (it cannot be opened, or refuses every commit: the Windows
antivirus race) puts the committer in the "locked" state; it is tried again with growing pauses while
searches answer from the store, and heals by itself once the lock is gone. A full disk is neither a lock nor
damage: SQL keeps the documents and the index is tried again with the same growing pauses until there is
room (`IndexHealth.disk_full` says so meanwhile). Within a round, a commit a lock refuses is retried a few
times with short pauses of its own (`retry_pause`) before the round gives up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.memory.fts import one_line
from app.memory.index import COMMITTER_LOG
from app.memory.index.core import IndexCore, utc_now
from app.memory.records import IndexState

_log = logging.getLogger(COMMITTER_LOG)

MAX_DOUBLINGS = 16


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    """The pause before trying a refusing index again: `first`, doubled after each refusal, at most `longest`."""

    first: float
    longest: float

    def delay(self, attempt: int) -> float:
        """The pause after the `attempt`-th refusal in a row (1 for the first)."""
        return min(self.longest, self.first * 2.0 ** min(attempt - 1, MAX_DOUBLINGS))


def retry_pause(first: float, attempt: int) -> float:
    """The pause before a round's commit tries again after its `attempt`-th refusal (doubled each time)."""
    return first * 2.0 ** (attempt - 1)


class LockBackoff:
    """One index's refusals counted (a lock, a full disk, a setup that fails), and when to try it again."""

    def __init__(
        self,
        core: IndexCore,
        schedule: RetrySchedule,
        *,
        on_refused: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`on_refused`: called after a lock or a full disk refused a try (those waiting are told at once)."""
        self._core = core
        self.schedule = schedule
        self._on_refused = on_refused
        self._clock = clock
        self.retry_after = 0.0  # monotonic time before which a locked index is not tried again

    def seconds_left(self) -> float:
        """How long to leave the index alone still (0 or less: try it now)."""
        return self.retry_after - self._clock()

    def locked(self, exc: BaseException) -> None:
        """A try refused by a lock: say so, wake nobody up for nothing, and back off."""
        core, c = self._core, self._core.c
        c.locked_attempts += 1
        c.refused_in_a_row += 1
        c.last_error = one_line(exc)
        self.retry_after = self._clock() + self.schedule.delay(c.locked_attempts)
        core.set_state(IndexState.LOCKED)
        core.share_health(force=True)  # the attempt a reader shows: not held back while this one backs off
        if c.locked_attempts == 1:
            _log.warning(
                "index %s is locked (%s); searches answer from the store, retrying with backoff",
                core.name,
                c.last_error,
            )
        else:
            _log.info("index %s still locked (attempt %d): %s", core.name, c.locked_attempts, c.last_error)
        self._on_refused()

    def disk_full(self, exc: BaseException) -> None:
        """A try met a full disk: say so once, keep SQL's documents for later, and back off."""
        core, c = self._core, self._core.c
        c.disk_full = True
        c.full_attempts += 1
        c.live_attempt = 0
        c.last_error = one_line(exc)
        self.retry_after = self._clock() + self.schedule.delay(c.full_attempts)
        if c.full_attempts == 1:
            _log.warning(
                "index %s: the disk is full (%s); SQL keeps the documents, retrying with backoff",
                core.name,
                c.last_error,
            )
        else:
            _log.info("index %s: the disk is still full (attempt %d)", core.name, c.full_attempts)
        core.publish()
        core.share_health(force=True)  # as for a lock: what a reader shows while this one backs off
        self._on_refused()  # told now, not at their timeout: searches read the store until there is room

    def setup_failed(self) -> None:
        """Opening or rebuilding the index failed (not a lock): it is not started over every second."""
        self.retry_after = self._clock() + self.schedule.delay(self._core.c.failures)

    def healed(self) -> None:
        """The index opened, or a commit landed: no more backing off, and ready unless it must be rebuilt."""
        core, c = self._core, self._core.c
        if c.locked_attempts:
            _log.warning("index %s: the lock is gone after %d attempts; indexing again", core.name, c.locked_attempts)
            c.locked_attempts = 0
            c.last_error = None
        self.recovered()
        self.retry_after = 0.0
        if core.rebuild_reason is None and core.index.is_open:
            core.set_state(IndexState.READY)

    def recovered(self) -> None:
        """A commit landed, or a locked index opened: if refusals held it up, say how many it took."""
        core, c = self._core, self._core.c
        if c.disk_full:
            _log.warning("index %s: there is room on the disk again; indexing", core.name)
            c.disk_full = False
            c.full_attempts = 0
            c.last_error = None
        if c.refused_in_a_row:
            c.recovered_after = c.refused_in_a_row
            c.recovered_at = utc_now()
            c.refused_in_a_row = 0
