"""wait_set: an Event wait with a time limit that a cancellation always gets through."""

from __future__ import annotations

import asyncio

import pytest

from app.memory.waiting import wait_set

pytestmark = pytest.mark.asyncio


async def test_set_by_someone_else_is_true_and_a_timeout_is_false() -> None:
    event = asyncio.Event()
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await wait_set(event, 5.0) is True
    event.clear()
    assert await wait_set(event, 0.01) is False
    assert event.is_set()  # the caller clears it, as after a real wake


async def test_a_cancellation_always_ends_the_wait() -> None:
    # Cancel at, just before and just after the moment the time limit runs out, many times over.
    for n in range(60):
        event = asyncio.Event()
        waiter = asyncio.create_task(wait_set(event, 0.002))
        await asyncio.sleep(0.001 + (n % 3) * 0.001)
        waiter.cancel()
        done, _pending = await asyncio.wait({waiter}, timeout=2.0)
        assert waiter in done, "the cancelled wait did not end"
