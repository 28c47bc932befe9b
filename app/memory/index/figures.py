"""The index health pane's figures (and `familiar index status`): health with its lag measured in SQL now,
whichever process writes the index; the documents the index holds and SQL has; its last commit; its size."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from datetime import UTC, datetime

from app.memory.errors import no_room_left
from app.memory.fts import one_line
from app.memory.index import COMMITTER_LOG
from app.memory.index.core import IndexCore
from app.memory.records import IndexHealth, IndexState

_log = logging.getLogger(COMMITTER_LOG)

SOURCE_COUNT_MAX_AGE = 20.0  # seconds a full count of SQL's rows for an index is kept (see source_rows)


class IndexFigures:
    """What the pane shows of one index, counted now."""

    def __init__(self, core: IndexCore) -> None:
        self._core = core
        self._source_count: tuple[int, int, float] | None = None  # (rows, up to id, when): see source_rows

    def rows_removed(self) -> None:
        """Rows left the index: the next `source_rows` counts SQL's whole table again."""
        self._source_count = None

    async def status(self) -> IndexHealth:
        """Health with lag measured from SQL now (meaningful in a process that is not the writer too)."""
        core = self._core
        watermark, _version, _rebuilding = await core.source.load_state()
        newest = await core.source.newest_id()
        health = core.health()
        if not core.index.owned:
            shared: IndexHealth | None = await asyncio.to_thread(core.health_file.read)
            # "closed" is what the last writer left when it let go: while another process holds the
            # index, that file is older than its writer (which could not write it yet), not its state.
            stale = shared is not None and shared.state is IndexState.CLOSED and core.index.owned_elsewhere
            health = health if shared is None or stale else shared
        # On a full disk the writer cannot share its health either: what this process sees of the disk says it.
        full = health.disk_full or await asyncio.to_thread(no_room_left, core.index.path.parent)
        return dataclasses.replace(health, lag=max(0, newest - watermark), watermark=watermark, disk_full=full)

    async def document_count(self) -> int | None:
        """Documents the index holds now (None when it cannot be read now: locked, being rebuilt)."""
        index = self._core.index
        if not index.is_open:
            return None
        try:
            count: int = await asyncio.to_thread(index.num_docs)
        except ValueError as exc:  # a file refused while reading: say nothing rather than something wrong
            _log.debug("index %s: cannot count documents now: %s", self._core.name, one_line(exc))
            return None
        return count

    async def source_rows(self) -> int:
        """Documents SQL has for this index (what it holds once caught up). The whole table is counted
        at most every SOURCE_COUNT_MAX_AGE seconds, and again after the index removed documents (an
        edit, a deletion, a forget); in between, what was appended since is added (a cheap range)."""
        cached, now = self._source_count, time.monotonic()
        if cached is None or now - cached[2] >= SOURCE_COUNT_MAX_AGE:
            count, upto = await self._core.source.indexable_count()
            self._source_count = (count, upto, now)
            return count
        count, upto, _at = cached
        newer, _removals = await self._core.source.backlog(upto)
        return count + newer

    async def last_commit_at(self) -> datetime | None:
        """When a commit last landed: this process's own record, else the index files' time (a commit
        of an earlier run, or of the process that writes the index)."""
        if self._core.c.last_commit_at is not None:
            return self._core.c.last_commit_at
        stamp: float | None = await asyncio.to_thread(self._core.index.committed_at)
        return datetime.fromtimestamp(stamp, UTC) if stamp is not None else None

    async def disk_bytes(self) -> int:
        """What the index's files take on disk now (a rebuild's folder beside it included)."""
        return await asyncio.to_thread(self._core.index.disk_usage)
