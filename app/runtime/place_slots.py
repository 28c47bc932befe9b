"""The LLM client's concurrency cap, counted per place.

A request holds its slot for as long as it is in flight, which for a stalled endpoint is the whole
model timeout (and again for each retry). With one pool of slots for every place, as many stalled
requests as the cap held all of them, and every other channel's reply waited for a timeout before
it could even be sent. So each place (a channel, a DM, the local chat) draws on a pool of its own:
at most `per_place` of its requests in flight at once, the next ones waiting in order; a place never
waits for a slot another place holds, so a slow or stalled request only ever holds up its own place.

Runtime layer: no Qt, qasync or discord imports here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

__all__ = ["PlaceSlots"]


@dataclass(slots=True)
class _Pool:
    slots: asyncio.Semaphore
    users: int = field(default=0)  # requests holding or waiting for one of its slots


class PlaceSlots:
    """Slots for requests in flight, `per_place` for each place; a place's pool exists only while
    one of its requests holds or waits for a slot."""

    def __init__(self, per_place: int) -> None:
        if per_place < 1:
            raise ValueError("a place needs at least one slot")
        self._per_place = per_place
        self._pools: dict[str, _Pool] = {}

    @contextlib.asynccontextmanager
    async def hold(self, place: str) -> AsyncIterator[None]:
        """One of `place`'s slots, for as long as the block runs (waiting, in order, for one to free)."""
        pool = self._pools.get(place)
        if pool is None:
            pool = self._pools[place] = _Pool(asyncio.Semaphore(self._per_place))
        pool.users += 1
        try:
            async with pool.slots:
                yield
        finally:
            pool.users -= 1
            if not pool.users:
                del self._pools[place]
