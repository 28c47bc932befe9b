"""`facade.lore`: the lorebook as the window and the CLI see it.

The watcher re-reads lorebook.toml about once a second (on a worker thread) and publishes a
`LorebookStatus` whenever what is wrong with it changes: a file that does not read names its line and
what is wrong, keeps the last good book in use, and a fixed file clears the banner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from app.runtime.context.lore_layer import LoreFile, LoreFileStatus
from app.runtime.events import LorebookStatus, RuntimeEvent

_log = logging.getLogger(__name__)

WATCH_SECONDS = 1.0  # a save in an editor shows (or clears) its banner within about a second


class LoreService:
    def __init__(
        self, lore: LoreFile, publish: Callable[[RuntimeEvent], None], *, watch_seconds: float = WATCH_SECONDS
    ) -> None:
        self._file = lore
        self._publish = publish
        self._watch_seconds = watch_seconds
        self._published: LoreFileStatus | None = None
        self._task: asyncio.Task[None] | None = None

    # -- status ----------------------------------------------------------------------------------------
    @property
    def problem(self) -> str | None:
        """Why lorebook.toml on disk is not the book in use, as last read (get_*: no I/O); None when it is."""
        status = self._published
        return None if status is None else status.problem

    async def check(self) -> LorebookStatus | None:
        """Re-read lorebook.toml if it changed; publish (and return) its status when that changed."""
        await asyncio.to_thread(self._file.refresh)
        status = self._file.status
        before, self._published = self._published, status
        if before == status or (before is None and status.problem is None and not status.warnings):
            return None  # unchanged, or a sound book at start: nothing to say
        event = LorebookStatus(str(self._file.path), status.problem, status.line, status.warnings)
        self._publish(event)
        return event

    def start_watching(self) -> None:
        """Watch lorebook.toml until `close()` (the window and headless mode)."""
        if self._task is None:
            self._task = asyncio.create_task(self._watch(), name="lorebook-watch")

    async def _watch(self) -> None:
        while True:
            try:
                await self.check()
            except OSError as exc:  # the folder itself went away: keep the book in use, try again
                _log.warning("could not look at %s: %s", self._file.path, exc)
            await asyncio.sleep(self._watch_seconds)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
