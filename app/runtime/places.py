"""Keeps the names of the servers and channels the Discord adapter sees, so every view (and the CLI,
offline) can say "Lantern Club #general". Writes only when a name is new or changed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping

from app.memory.catalog import Catalog
from app.memory.errors import STORE_FAILURES
from app.runtime.events import GuildInfo, GuildsChanged, RuntimeEvent

_log = logging.getLogger(__name__)


class PlaceNamer:
    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._known: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def note(self, names: Mapping[str, str]) -> None:
        """Record `place -> name` pairs (guild:<id> -> server, guild:<id>/<channel> -> channel)."""
        fresh = {p: n for p, n in names.items() if n and self._known.get(p) != n}
        if not fresh:
            return
        try:
            await self._catalog.name_places(fresh)
        except STORE_FAILURES as exc:  # a name is a nicety: never fail a message for it
            _log.warning("could not record place names: %s", exc)
            return
        self._known.update(fresh)

    def on_event(self, event: RuntimeEvent) -> None:
        """Listens to the runtime's events for the adapter's guild list."""
        if isinstance(event, GuildsChanged):
            self.note_guilds(event.guilds)

    def note_guilds(self, guilds: Iterable[GuildInfo]) -> None:
        """From the adapter's guild list (an event, so not awaited by the caller)."""
        names = {f"guild:{g.id}": g.name for g in guilds}
        if any(self._known.get(p) != n for p, n in names.items()):
            task = asyncio.get_running_loop().create_task(self.note(names))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        await asyncio.gather(*self._tasks, return_exceptions=True)
