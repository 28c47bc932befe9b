"""Lock backoff alone: the schedule of pauses, and one index's refusals counted against a clock the test
moves (a real tantivy index and a real SQLite store under tmp_path)."""

from __future__ import annotations

import pytest

from app.memory.errors import IndexDiskFullError, IndexLockedError
from app.memory.index.backoff import LockBackoff, RetrySchedule, retry_pause
from app.memory.index.core import IndexCore
from app.memory.records import IndexHealth, IndexState
from tests.memory.index.conftest import Clock


def test_the_pause_doubles_after_each_refusal_up_to_the_longest() -> None:
    schedule = RetrySchedule(first=0.5, longest=15.0)
    assert [schedule.delay(n) for n in range(1, 9)] == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0]


def test_the_doubling_stops_at_sixteen_however_long_the_longest() -> None:
    schedule = RetrySchedule(first=1.0, longest=float("inf"))
    assert schedule.delay(17) == 2.0**16
    assert schedule.delay(1000) == 2.0**16


def test_a_rounds_commit_retries_after_pauses_that_double() -> None:
    assert [retry_pause(0.05, attempt) for attempt in range(1, 5)] == pytest.approx([0.05, 0.1, 0.2, 0.4])


def test_a_lock_backs_off_longer_each_time_and_tells_the_waiters(core: IndexCore, healths: list[IndexHealth]) -> None:
    clock, refused = Clock(), []
    backoff = LockBackoff(core, RetrySchedule(0.5, 15.0), on_refused=lambda: refused.append(1), clock=clock)
    assert backoff.seconds_left() <= 0, "nothing refused yet: try now"
    backoff.locked(IndexLockedError("Access is denied. (os error 5)"))
    assert core.state is IndexState.LOCKED
    assert (core.c.locked_attempts, core.c.refused_in_a_row) == (1, 1)
    assert core.c.last_error == "Access is denied. (os error 5)"
    assert backoff.seconds_left() == 0.5
    assert refused == [1]
    backoff.locked(IndexLockedError("Access is denied. (os error 5)"))
    assert backoff.seconds_left() == 1.0
    clock.now += 0.25
    assert backoff.seconds_left() == 0.75
    shared = core.health_file.read()
    assert shared is not None
    assert (shared.state, shared.locked_attempts) == (IndexState.LOCKED, 2), "what a reader shows, not held back"
    assert healths[-1].state is IndexState.LOCKED, "the window is told too"


def test_healed_ends_the_lock_and_says_how_many_tries_it_refused(core: IndexCore) -> None:
    backoff = LockBackoff(core, RetrySchedule(0.5, 15.0), on_refused=lambda: None, clock=Clock())
    for _ in range(3):
        backoff.locked(IndexLockedError("LockBusy"))
    backoff.healed()
    assert core.state is IndexState.READY
    assert (core.c.locked_attempts, core.c.last_error, core.c.refused_in_a_row) == (0, None, 0)
    assert core.c.recovered_after == 3
    assert core.c.recovered_at is not None
    assert backoff.seconds_left() <= 0


def test_a_full_disk_backs_off_on_its_own_count_and_room_again_clears_it(core: IndexCore) -> None:
    clock, refused = Clock(), []
    backoff = LockBackoff(core, RetrySchedule(0.5, 15.0), on_refused=lambda: refused.append(1), clock=clock)
    core.c.live_attempt = 2
    for _ in range(3):
        backoff.disk_full(IndexDiskFullError("No space left on device (os error 28)"))
    assert core.c.disk_full
    assert (core.c.full_attempts, core.c.live_attempt, core.c.locked_attempts) == (3, 0, 0)
    assert backoff.seconds_left() == 2.0
    assert refused == [1, 1, 1]
    backoff.recovered()
    assert not core.c.disk_full
    assert (core.c.full_attempts, core.c.last_error) == (0, None)


def test_a_failing_setup_waits_by_the_failures_so_far(core: IndexCore) -> None:
    clock = Clock()
    backoff = LockBackoff(core, RetrySchedule(0.5, 15.0), on_refused=lambda: None, clock=clock)
    core.c.failures = 4
    backoff.setup_failed()
    assert backoff.seconds_left() == 4.0
