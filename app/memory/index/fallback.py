"""Search fallback: the index answers searches beside commits while it can; when it cannot (locked, being
rebuilt by another process, not open yet), it says why, truly, and searches answer from the store
(`History._hits`); while it is open but cannot take commits, it names the id past which the store must add
what the index lacks."""

from __future__ import annotations

import asyncio
import functools
import logging
import time

from app.memory.errors import IndexUnavailableError
from app.memory.fts import INLINE_SEARCH_LIMIT
from app.memory.index import COMMITTER_LOG
from app.memory.index.core import IndexCore
from app.memory.records import IndexState

_log = logging.getLogger(COMMITTER_LOG)

REOPEN_EVERY = 1.0
"""Seconds between two tries of a reader to open an index it could not read (the writer was rebuilding it)."""


class SearchFallback:
    """One index's searches, and what the store must answer when the index cannot."""

    def __init__(self, core: IndexCore) -> None:
        self._core = core
        self._reader_tried = 0.0

    async def search(
        self, text: str, limit: int, place: str | tuple[str, ...] | None = None
    ) -> list[tuple[int, float]]:
        """BM25 hits; IndexUnavailableError (saying why, truly) when the index cannot answer now."""
        index = self._core.index
        started = time.perf_counter()
        if not index.is_open:
            await self._reopen_as_reader()
            if not index.is_open:
                raise IndexUnavailableError(self.unavailable_reason())
        # Searches run beside commits (tantivy readers are thread-safe), not behind them. A short top-k
        # search takes about a millisecond even at 100k documents, less than the hop to a worker thread
        # costs on a busy machine, so it runs right here; a long one goes to a thread to keep the loop free.
        hits: list[tuple[int, float]]
        if limit <= INLINE_SEARCH_LIMIT:
            hits = index.search(text, limit, place)
        else:
            hits = await asyncio.to_thread(index.search, text, limit, place)
        _log.debug("search %r took %.2f ms", text, (time.perf_counter() - started) * 1000)
        return hits

    async def _reopen_as_reader(self) -> None:
        """A reader whose index could not be read (the writer was rebuilding it) looks again, now and then."""
        core = self._core
        if core.state is not IndexState.READER or time.monotonic() - self._reader_tried < REOPEN_EVERY:
            return
        self._reader_tried = time.monotonic()
        await core.run_blocking(functools.partial(core.index.open, writable=False))

    async def stale_after(self) -> int | None:
        """The id past which the open index may lack rows that searches should add from the store:
        while it is locked or the disk is full (it cannot take commits) or the old index answers during a rebuild (it
        takes none until the swap), and always in a reader (the writer may be locked or a moment
        behind: its persisted watermark says how far it got). None when it is catching up by itself."""
        core = self._core
        if not core.index.is_open:
            return None
        if core.state in (IndexState.LOCKED, IndexState.REBUILDING) or core.c.disk_full:  # it takes no commit now
            return core.watermark
        if core.state is IndexState.READER:
            watermark, _version, _rebuilding = await core.source.load_state()
            return watermark
        return None

    def unavailable_reason(self) -> str:
        """Why the index cannot answer (or catch up) now, in one line that is true."""
        core, c = self._core, self._core.c
        name = core.name
        if not core.index.owned and core.state is not IndexState.LOCKED:
            shared = core.health_file.read()
            if shared is not None and shared.state is IndexState.REBUILDING:
                return f"the {name} search index is being rebuilt by another Familiar process"
            if shared is not None and shared.state is IndexState.LOCKED:
                return (
                    f"the {name} search index is locked ({shared.last_error});"
                    " the Familiar process that writes it keeps retrying"
                )
            return f"the {name} search index cannot be read here ({core.index.problem or 'not open'})"
        if c.disk_full:
            return f"the {name} search index cannot take new documents now: the disk is full ({c.last_error})"
        if core.state is IndexState.LOCKED:
            return f"the {name} search index is locked, retrying (attempt {c.locked_attempts}): {c.last_error}"
        if core.state is IndexState.REBUILDING:
            return f"the {name} search index is being rebuilt"
        return f"the {name} search index is not open yet"
