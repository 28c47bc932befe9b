"""Compaction: a removed document's words stay in its segment's files until the index is rewritten, so once
removals have been quiet a while (at most 12 times as long after the first one) the index is rewritten from
SQL in one commit, and removed documents leave the files too (`FtsIndex.stage_compaction`)."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable

from app.memory.errors import IndexLockedError, IndexUnavailableError
from app.memory.fts import write_failure
from app.memory.index import COMMITTER_LOG
from app.memory.index.core import IndexCore, utc_now

_log = logging.getLogger(COMMITTER_LOG)

DEADLINE_FACTOR = 12
"""However busy removals keep it, a compaction is at most this many quiet spells after the first removal."""


class Compaction:
    """When removed documents are purged from one index's files, the purge itself, and those waiting for it."""

    def __init__(self, core: IndexCore, *, after: float, clock: Callable[[], float] = time.monotonic) -> None:
        """`after`: how long removals must have been quiet before a compaction (IndexTiming.compact_after)."""
        self._core = core
        self._after = after
        self._clock = clock
        self.due: float | None = None  # monotonic time of the next compaction (None: nothing to purge)
        self._deadline: float | None = None
        self._waiters: list[asyncio.Future[None]] = []

    def schedule(self, removed: int) -> None:
        """`removed` more documents wait to leave the files: compact once removals have been quiet a while."""
        now = self._clock()
        self._core.c.awaiting_purge += removed
        if self._deadline is None:
            self._deadline = now + DEADLINE_FACTOR * self._after
        self.due = min(now + self._after, self._deadline)

    def is_due(self) -> bool:
        return self.due is not None and self._clock() >= self.due

    async def compact(self) -> None:
        """Rewrite the index from SQL in one commit, so removed documents leave the files too."""
        core, c = self._core, self._core.c
        started = time.perf_counter()
        purged = c.awaiting_purge
        await core.run_blocking(core.index.stage_compaction)
        try:
            watermark, total = 0, 0
            while watermark < core.watermark:
                docs, reached = await core.source.documents_after(watermark, core.batch)
                if reached <= watermark:
                    break
                live = [d for d in docs if int(d["id"]) <= core.watermark]  # newer rows come in the next round
                await core.run_blocking(functools.partial(core.index.stage, live, [], upsert=False))
                total += len(live)
                watermark = reached
            await core.run_blocking(core.index.commit)
        except BaseException as exc:
            await core.run_blocking(core.rollback)
            failure = write_failure(exc) if isinstance(exc, ValueError) else None
            if isinstance(failure, IndexLockedError):  # anything else goes up as it is (a round failed)
                raise failure from exc
            raise
        await core.run_blocking(core.index.collect_garbage)
        c.commits += 1
        c.last_commit_at = utc_now()
        self.purged(purged)
        _log.info(
            "index %s: compacted %d documents in %.2f s; %d removed ones purged from the files",
            core.name,
            total,
            time.perf_counter() - started,
            purged,
        )
        core.publish()

    def purged(self, count: int) -> None:
        """`count` removed documents left the files; wake those waiting when none is left."""
        c = self._core.c
        c.awaiting_purge = max(0, c.awaiting_purge - count)
        self.due = self._deadline = None
        if c.awaiting_purge:  # removals landed while it ran (they were staged after the rewrite)
            self.schedule(0)
            return
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)
        self._waiters = []

    async def wait_purged(self, timeout: float) -> None:
        """Compact now and wait until no removed document is left in the files."""
        if not self._core.c.awaiting_purge:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        self.due = self._clock()
        self._core.wake.set()
        await asyncio.wait_for(fut, timeout)

    def fail_waiters(self, reason: str) -> None:
        """Those waiting are told the index cannot purge now (locked, the disk full), instead of waiting."""
        for fut in self._waiters:
            if not fut.done():
                fut.set_exception(IndexUnavailableError(reason))
        self._waiters = []

    def cancel_waiters(self) -> None:
        for fut in self._waiters:
            if not fut.done():
                fut.cancel()
