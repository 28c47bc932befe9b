"""`facade.memory`: the one place panes and the CLI read and steer what the familiar remembers.

Assembled from its parts: facts and decisions (memory_facts.py), forgetting (forgetting.py),
people (people.py) and the timeline (timeline.py), over the state and dependencies in
memory_base.py. The Protocol the UI depends on is `app.runtime.api.facade.MemoryApi`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from app.runtime.api.memory_facts import FactsMixin
from app.runtime.api.views import PlaceRef
from app.runtime.forgetting import ForgettingMixin
from app.runtime.people import PeopleMixin
from app.runtime.timeline import TimelineMixin


class MemoryService(FactsMixin, ForgettingMixin, PeopleMixin, TimelineMixin):
    async def places(self, keys: Sequence[str]) -> list[PlaceRef]:
        """These places by name, in this order, as every view names them ("Lantern Club #general", "DM
        with bob"); a place never seen by a readable form of its id ("server 500 #501")."""
        async with self._explained():
            names = await self._views.names.table(places=keys)
        return [names.place(key) for key in keys]

    async def export(self, target: Path, *, with_tombstone_key: bool = False) -> dict[str, int]:
        """Write the whole memory (and the lorebook) as JSON lines; atomically replaces `target`. The
        tombstone key travels only `with_tombstone_key`."""
        return await self._deps.ops.export(target, with_tombstone_key=with_tombstone_key)

    async def import_(self, source: Path) -> dict[str, int]:
        """Read an export into this (empty) familiar; the lorebook is replaced, the old one kept as .bak."""
        return await self._deps.ops.import_(source)
