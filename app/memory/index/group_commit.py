"""Group commits: a round reads what SQL has past the index's persisted watermark (and the removals waiting
in the outbox), stages many documents, and commits them together. A commit a transient lock refuses (the
Windows antivirus race: PermissionDenied / Access is denied / os error 5, or LockBusy) is rolled back and
the batch replayed as upserts with backoff; if it still cannot land, the watermark does not move, so a
later round (and the reconciler) indexes what SQL has and the index lacks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from app.memory.errors import (
    IndexCommitError,
    IndexDiskFullError,
    IndexLockedError,
    IndexUnavailableError,
    StoreError,
    is_disk_full,
)
from app.memory.fts import one_line, write_failure, writer_killed
from app.memory.index import COMMITTER_LOG
from app.memory.index.backoff import LockBackoff, retry_pause
from app.memory.index.compaction import Compaction
from app.memory.index.core import IndexCore, utc_now

_log = logging.getLogger(COMMITTER_LOG)


class GroupCommits:
    """One index's rounds of group commits, and those waiting for a flush."""

    def __init__(
        self,
        core: IndexCore,
        backoff: LockBackoff,
        compaction: Compaction,
        *,
        max_attempts: int,
        pause: float,
        failure_pause: float,
        rows_removed: Callable[[], None],
    ) -> None:
        """`max_attempts`: tries of one commit a lock refuses, `pause` seconds before the second (doubled
        each time); `failure_pause`: the wait after a round that failed otherwise; `rows_removed()`: called
        once removals landed (the count of SQL's rows is stale)."""
        self._core = core
        self._backoff = backoff
        self._compaction = compaction
        self._max_attempts = max_attempts
        self.pause = pause
        self._failure_pause = failure_pause
        self._rows_removed = rows_removed
        self.hurry = asyncio.Event()  # a flush is waiting: skip the linger
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    async def round(self) -> bool:
        """One group commit. Returns True when there may be more to do right away."""
        core, c, source = self._core, self._core.c, self._core.source
        # Removals are read before documents: a document read afterwards already reflects them, and
        # deletes are staged before adds, so a redacted row can never be added back.
        removals = await source.removals(core.batch)
        docs, reached = await source.documents_after(core.watermark, core.batch)
        newest = await source.newest_id()
        c.pending = len(docs) + len(removals)
        c.lag = max(0, newest - core.watermark)
        if reached <= core.watermark and not removals:
            c.pending = 0
            c.lag = 0
            c.backlog_since = None
            if core.upsert:
                core.upsert = False
            return False
        if c.backlog_since is None:  # another process wrote it (this one was not told)
            c.backlog_since = utc_now()
        delete_ids = [doc_id for _oid, doc_id in removals]
        failure = await self.commit(docs, delete_ids)
        if failure is not None:
            core.upsert = True
            if isinstance(failure, IndexLockedError | IndexDiskFullError):  # the loop backs off
                raise failure
            core.publish()
            await asyncio.sleep(self._failure_pause)
            return True
        await source.save_state(
            watermark=reached,
            schema_version=core.index.spec.schema_version,
            rebuilding=False,
            outbox_upto=max((oid for oid, _d in removals), default=None),
        )
        core.watermark = reached  # after SQL has it: a flush that sees it finds SQL agreeing
        self._backoff.healed()
        c.commits += 1
        c.documents += len(docs)
        c.pending = 0
        c.lag = max(0, newest - reached)
        if delete_ids:
            self._compaction.schedule(len(delete_ids))
            self._rows_removed()
        core.publish()
        self.settle_waiters(idle=False)
        return True

    async def commit(self, docs: list[dict[str, Any]], delete_ids: list[int]) -> StoreError | None:
        """Commit the batch, trying a lock again with backoff. None once it landed; else why it did not, as
        the typed error of the last try (`write_failure`: IndexLockedError, IndexDiskFullError or
        IndexCommitError, tantivy's own error its cause)."""
        core, c = self._core, self._core.c
        upsert = core.upsert
        failure: StoreError | None = None
        for attempt in range(1, self._max_attempts + 1):
            try:
                await core.run_blocking(self._stage_and_commit, docs, delete_ids, upsert)
                c.last_commit_at = utc_now()
                self._backoff.recovered()
                if c.live_attempt:
                    c.live_attempt = 0
                    c.last_error = None
                return None
            except ValueError as exc:
                await core.run_blocking(core.rollback)
                failure = write_failure(exc)
                c.last_error = one_line(exc)
                if writer_killed(exc):
                    try:
                        await core.run_blocking(core.index.recover_writer)
                    except ValueError as again:  # still locked: the next attempt tries again
                        _log.info("index %s: no new writer yet: %s", core.name, one_line(again))
                c.disk_full = is_disk_full(exc)  # what the last try met
                if c.disk_full:  # said once, by LockBackoff.disk_full: not an error per try
                    break
                if not isinstance(failure, IndexLockedError):
                    _log.error("index %s: commit failed: %s", core.name, c.last_error)
                    break
                upsert = True  # a failed commit may have lost part of the batch: replay as upserts
                c.refused_in_a_row += 1
                if attempt == self._max_attempts:
                    break
                c.retries += 1
                c.live_attempt = attempt + 1
                core.publish()
                await asyncio.sleep(retry_pause(self.pause, attempt))
        c.failures += 1
        c.live_attempt = 0
        core.needs_reconcile = True
        if failure is None:  # no try at all (max_attempts 0)
            failure = IndexCommitError(f"the {core.name} index was not asked to commit")
        # A lock says so once, as the index's state (LockBackoff.locked); anything else is a warning here.
        quiet = c.disk_full or isinstance(failure, IndexLockedError)
        log = _log.debug if quiet else _log.warning
        log(
            "index %s: %d documents could not be committed (%s); SQL keeps them and the index will catch up",
            core.name,
            len(docs),
            c.last_error,
        )
        return failure

    def _stage_and_commit(self, docs: list[dict[str, Any]], delete_ids: list[int], upsert: bool) -> None:
        self._core.index.stage(docs, delete_ids, upsert=upsert)
        self._core.index.commit()

    async def flush(self, timeout: float) -> None:
        """Wait until everything SQL has now is committed to the index."""
        core = self._core
        target = await core.source.newest_id()
        if core.watermark >= target and not core.setup_needed() and not await core.source.removals(1):
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, fut))
        self.hurry.set()
        core.wake.set()
        await asyncio.wait_for(fut, timeout)

    def settle_waiters(self, *, idle: bool) -> None:
        """Wake the flushes the watermark has reached, once the committer is `idle` (caught up)."""
        keep: list[tuple[int, asyncio.Future[None]]] = []
        for target, fut in self._waiters:
            if fut.done():
                continue
            if self._core.watermark >= target and idle:
                fut.set_result(None)
            else:
                keep.append((target, fut))
        self._waiters = keep

    def fail_waiters(self, reason: str) -> None:
        """Those waiting are told the index cannot catch up now (locked, the disk full), instead of waiting."""
        for _target, fut in self._waiters:
            if not fut.done():
                fut.set_exception(IndexUnavailableError(reason))
        self._waiters = []

    def cancel_waiters(self) -> None:
        for _target, fut in self._waiters:
            if not fut.done():
                fut.cancel()
