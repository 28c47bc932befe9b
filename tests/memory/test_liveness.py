"""`LoopWatch`: a background loop seen running, stopped on purpose, dead (an exception, a cancel from
outside, an end) or hung (it never came round after its wait), on a clock the test moves."""

from __future__ import annotations

import asyncio

import pytest

from app.memory.liveness import GRACE_SECONDS, LoopWatch

pytestmark = pytest.mark.asyncio


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


async def test_a_loop_runs_until_it_is_stopped_on_purpose() -> None:
    watch = LoopWatch("memory-projectors", clock=Clock())
    assert watch.health().running is False
    assert watch.health().problem is None  # not started: nothing wrong (a command, no worker chosen)
    task = asyncio.create_task(asyncio.sleep(60))
    watch.started(task)
    watch.waiting(5)
    assert watch.health().running is True
    assert watch.health().problem is None
    watch.stopped()
    task.cancel()
    assert watch.health().problem is None


async def test_a_loop_that_died_says_how() -> None:
    async def fails() -> None:
        raise RuntimeError("Cannot enter into task")

    for body, said in (
        (fails(), "stopped: RuntimeError: Cannot enter into task"),
        (asyncio.sleep(0), "stopped: its task ended"),
        (asyncio.sleep(60), "stopped: its task was cancelled"),
    ):
        watch = LoopWatch("memory-change-poll")
        task = asyncio.create_task(body)
        watch.started(task)
        if said.endswith("cancelled"):
            task.cancel()
        await asyncio.wait([task])
        health = watch.health()
        assert (health.running, health.problem) == (False, said)


async def test_a_loop_that_never_comes_round_after_its_wait_is_stopped_but_a_working_one_is_not() -> None:
    clock = Clock()
    watch = LoopWatch("index-committer-turns", clock=clock)
    task = asyncio.create_task(asyncio.sleep(60))
    watch.started(task)
    watch.waiting(2)
    clock.now += 2 + GRACE_SECONDS - 1
    assert watch.health().problem is None  # late, but within the grace a busy machine needs
    clock.now += 10
    health = watch.health()
    assert health.running is False
    assert health.problem == f"stopped: it should have come round {GRACE_SECONDS + 9:.0f} s ago and has not"
    watch.working()  # it came round after all
    assert watch.health().running is True
    clock.now += 10_000  # a long rebuild, a slow model: working has no deadline
    assert watch.health().problem is None
    task.cancel()
