"""Waiting on an asyncio.Event with a time limit, safely cancellable on Python 3.11."""

from __future__ import annotations

import asyncio


async def wait_set(event: asyncio.Event, seconds: float) -> bool:
    """Wait until `event` is set, at most `seconds`; whether it was set by someone else.

    asyncio.wait_for on Python 3.11 can leave a cancelled caller waiting for ever when the cancellation
    meets its timeout (seen in the index committer: rebuild() cancelling it hung), so the timeout sets the
    event itself and the wait is a plain Event.wait().
    """
    if event.is_set():
        return True
    fired = False

    def time_up() -> None:
        nonlocal fired
        fired = True
        event.set()

    handle = asyncio.get_running_loop().call_later(max(0.0, seconds), time_up)
    try:
        await event.wait()
    finally:
        handle.cancel()
    return not fired
