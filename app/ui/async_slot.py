"""A typed `qasync.asyncSlot` that also keeps every task it starts referenced until it is done.

qasync ships no type information, so decorating with `qasync.asyncSlot()` directly would make every handler
untyped under `mypy --strict`. qasync only returns the task to Qt, which drops it; the event loop holds tasks
weakly, so a task nobody references can be collected mid-flight. Tasks live in `_running` until they finish;
`cancel_running_slots()` lets the window cancel what is still in flight when it shuts down.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, cast

import qasync

P = ParamSpec("P")

_running: set[asyncio.Future[None]] = set()


def async_slot(*signature: type) -> Callable[[Callable[P, Coroutine[Any, Any, None]]], Callable[P, asyncio.Task[None]]]:
    """Decorate an `async def` handler so a Qt signal can run it on the qasync loop (see module docstring)."""

    def decorate(handler: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, asyncio.Task[None]]:
        slot = cast(Callable[P, asyncio.Task[None]], qasync.asyncSlot(*signature)(handler))

        @functools.wraps(handler)
        def start(*args: P.args, **kwargs: P.kwargs) -> asyncio.Task[None]:
            task = slot(*args, **kwargs)
            _running.add(task)
            task.add_done_callback(_running.discard)
            return task

        return start

    return decorate


def running_slots() -> tuple[asyncio.Future[None], ...]:
    """The handler tasks still in flight."""
    return tuple(task for task in _running if not task.done())


async def cancel_running_slots() -> None:
    """Cancel every handler task still in flight and wait until they have all finished."""
    tasks = running_slots()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
