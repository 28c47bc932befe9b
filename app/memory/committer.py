"""The group committer: feeds one tantivy index (app/memory/fts.py) from SQL.

SQL commits first and is canonical. `IndexCommitter` coordinates one index's jobs, one module each under
app/memory/index/: its loop runs the group commits (group_commit.py), backs off a lock or a full disk
(backoff.py), compacts removed documents out of the files (compaction.py), compares the index with SQL
(reconcile.py), rebuilds it beside the live one (rebuild.py), shares its health with other processes
(health_file.py), and answers searches or says truly why it cannot (fallback.py). The state they share
(the watermark, the counters, the state) is app/memory/index/core.py.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from app.memory.errors import IndexDiskFullError, IndexLockedError, IndexUnavailableError, is_disk_full
from app.memory.fts import FtsIndex, IndexTiming, OpenOutcome, one_line
from app.memory.index.backoff import LockBackoff, RetrySchedule
from app.memory.index.compaction import Compaction
from app.memory.index.core import IndexCore, IndexSource, utc_now
from app.memory.index.fallback import SearchFallback
from app.memory.index.figures import IndexFigures
from app.memory.index.group_commit import GroupCommits
from app.memory.index.health_file import HealthFile
from app.memory.index.rebuild import CancelCallback, PreparedRebuild, ProgressCallback, RebuildBeside
from app.memory.index.reconcile import Reconciler
from app.memory.liveness import LoopHealth, LoopWatch, end_task
from app.memory.records import IndexHealth, IndexState
from app.memory.waiting import wait_set

_log = logging.getLogger(__name__)

__all__ = ["CancelCallback", "IndexCommitter", "IndexSource", "PreparedRebuild", "ProgressCallback"]


class IndexCommitter:
    """Feeds one FtsIndex from SQL with group commits, retries and reconciliation."""

    def __init__(
        self,
        index: FtsIndex,
        source: IndexSource,
        *,
        executor: ThreadPoolExecutor | None = None,
        batch_size: int = 5000,
        linger: float = 0.02,
        max_attempts: int = 5,
        backoff: float = 0.05,
        failure_pause: float = 1.0,
        on_health: Callable[[IndexHealth], None] | None = None,
        timing: IndexTiming | None = None,
        health_file: Path | None = None,
        read_only: bool = False,
    ) -> None:
        """`health_file`: where the writer shares its health (default: beside the index folder).
        `read_only`: only read the index, never take it (the store is read as it stands: a full disk)."""
        self.index = index
        self._read_only = read_only
        self._own_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"fts-{index.spec.name}")
        self._linger = linger
        self._failure_pause = failure_pause
        timing = timing or IndexTiming()
        # Another process (the CLI beside the window) writes SQL too; this one learns of it by looking.
        self._poll_interval = timing.poll_interval
        shared = HealthFile(health_file or index.path.with_name(index.path.name + ".health.json"))
        self._core = core = IndexCore(index, source, self._executor, shared, batch_size=batch_size, on_health=on_health)
        self._backoff = LockBackoff(
            core, RetrySchedule(timing.locked_retry_first, timing.locked_retry_max), on_refused=self._fail_waiters
        )
        self._compaction = Compaction(core, after=timing.compact_after)
        self._figures = IndexFigures(core)
        self._commits = GroupCommits(
            core,
            self._backoff,
            self._compaction,
            max_attempts=max_attempts,
            pause=backoff,
            failure_pause=failure_pause,
            rows_removed=self._figures.rows_removed,
        )
        self._reconciler = Reconciler(core, self._commits, self._backoff, every=timing.reconcile_every)
        self._rebuild = RebuildBeside(core, self._backoff, self._compaction, pause=self._pause, resume=self._resume)
        self._fallback = SearchFallback(core)
        self._task: asyncio.Task[None] | None = None
        self._watch = LoopWatch(f"index-committer-{index.spec.name}")

    @property
    def owns_index(self) -> bool:
        """This process writes the index (it may still be locked or being rebuilt)."""
        return self.index.owned

    @property
    def state(self) -> IndexState:
        return self._core.state

    @property
    def watermark(self) -> int:
        return self._core.watermark

    # -- start, open, heal, close ------------------------------------------------------------------
    async def start(self) -> None:
        """Open the index. A locked index does not stop the start: it is retried in the background
        while searches answer from the store; a damaged or outdated one is rebuilt beside."""
        try:
            await self._open()
        except IndexLockedError as exc:
            self._backoff.locked(exc)
            if not self.index.owned and self._core.c.locked_attempts == 1:
                _log.warning("index %s is locked (%s); retrying in the background", self.index.spec.name, exc)
        if not self.index.owned and self._core.state is not IndexState.LOCKED:
            # Another process (the running familiar) owns the writer: read what is there, touch nothing.
            self._core.set_state(IndexState.READER)
            return
        self._task = asyncio.create_task(self._loop(), name=f"index-committer-{self.index.spec.name}")
        self._watch.started(self._task)
        self._core.wake.set()  # look now (nothing new is dated: a round dates what it finds)

    async def _open(self) -> None:
        """Open the live index and decide whether it must be rebuilt (IndexLockedError: not now)."""
        core, rebuild = self._core, self._rebuild
        watermark, version, rebuilding = await core.source.load_state()
        outcome: OpenOutcome = await core.run_blocking(functools.partial(self.index.open, writable=not self._read_only))
        core.watermark = watermark
        rebuild.sql_version = version
        rebuild.sql_rebuilding = rebuilding
        if not self.index.owned:
            return
        reason = None
        if outcome == "created":
            # A new, empty index: the rounds fill it from SQL (a crash resumes from the watermark).
            core.watermark = 0
            core.c.rebuilt_at_start = True
            rebuild.sql_version = self.index.spec.schema_version
            rebuild.sql_rebuilding = False
            await core.source.save_state(
                watermark=0, schema_version=rebuild.sql_version, rebuilding=False, outbox_upto=None
            )
        elif outcome != "opened":
            reason = f"it is {outcome} ({self.index.problem})"
        elif version != self.index.spec.schema_version:
            reason = f"SQL records index format {version}; this Familiar uses {self.index.spec.schema_version}"
        elif rebuilding:
            reason = "a rebuild was started and did not finish"
        if reason is not None:
            core.rebuild_reason = reason
            core.c.rebuilt_at_start = True
            _log.warning("index %s: rebuilding it beside the old one from SQL: %s", self.index.spec.name, reason)
            core.set_state(IndexState.REBUILDING)
            return
        if await core.run_blocking(self.index.leftover_build):
            await core.run_blocking(self.index.discard_leftover_build)
        # Words of documents removed before a restart (the last run ended before compacting) still
        # sit in the files: compact them away soon.
        leftover = await core.run_blocking(self.index.deleted_docs)
        if leftover:
            self._compaction.schedule(leftover)
        core.upsert = True
        core.needs_reconcile = True
        self._backoff.healed()

    async def _setup(self) -> None:
        """Open a locked index again, or build the new one beside the old; IndexLockedError: not yet."""
        core = self._core
        if not self.index.is_open and core.rebuild_reason is None:
            await self._open()
            if not self.index.owned:  # another process took the index meanwhile: only read it
                core.set_state(IndexState.READER)
                core.closing = True
                return
        if core.rebuild_reason is not None:
            await self._rebuild.in_background()

    def _fail_waiters(self) -> None:
        """Those waiting for a flush or a purge are told the index is locked, instead of waiting."""
        reason = self.unavailable_reason()
        self._commits.fail_waiters(reason)
        self._compaction.fail_waiters(reason)

    async def close(self) -> None:
        core = self._core
        core.closing = True
        core.state = IndexState.CLOSED  # what the shared health file says once this process has let go
        core.share_health(force=True)
        core.wake.set()
        await self._pause()
        await core.run_blocking(self.index.close)
        self._commits.cancel_waiters()
        self._compaction.cancel_waiters()
        if self._own_executor:
            self._executor.shutdown(wait=True)

    async def _pause(self) -> None:
        self._watch.stopped()
        if self._task is not None:
            await end_task(self._task)
            self._task = None

    def _resume(self) -> None:
        if not self._core.closing and self._task is None:
            self._task = asyncio.create_task(self._loop(), name=f"index-committer-{self.index.spec.name}")
            self._watch.started(self._task)
            self._core.wake.set()

    # -- running -----------------------------------------------------------------------------------
    def notify(self) -> None:
        """New rows exist in SQL (or an outbox entry): wake the committer."""
        if self._core.c.backlog_since is None:  # the oldest change the index lacks is at most this old
            self._core.c.backlog_since = utc_now()
        self._core.wake.set()

    async def flush(self, timeout: float = 30.0) -> None:
        """Wait until everything SQL has now is committed to the index (IndexUnavailableError at once
        while the index is locked, or as soon as it turns out to be, or a try meets a full disk)."""
        if self._core.state is IndexState.LOCKED:
            raise IndexUnavailableError(self.unavailable_reason())
        await self._commits.flush(timeout)

    async def purge(self, timeout: float = 30.0) -> None:
        """Compact now (after committing what is pending) and wait until removed documents left the files."""
        await self.flush(timeout)
        await self._compaction.wait_purged(timeout)

    async def reconcile(self) -> int:
        """Index what SQL has and the index lacks, and drop what the index has and SQL does not.

        Returns the number of documents repaired.
        """
        return await self._reconciler.reconcile()

    def _seconds_to_next_chore(self) -> float:
        now = time.monotonic()
        waits = [self._poll_interval, self._reconciler.seconds_to_due(now)]
        if self._compaction.due is not None:
            waits.append(self._compaction.due - now)
        return max(0.0, min(waits))

    async def _loop(self) -> None:
        watch, core, c = self._watch, self._core, self._core.c
        while not core.closing:
            try:
                if core.health_file.unwritten:  # a change the throttle or a refused write kept out of the file
                    core.share_health()
                backoff = self._backoff.seconds_left()
                if backoff > 0:  # a lock refused the last try: give it time
                    watch.waiting(backoff)
                    await asyncio.sleep(backoff)
                    watch.working()
                if core.setup_needed():
                    await self._setup()
                    continue
                # Not woken in time: look at SQL for another process's writes, or do a chore.
                idle = self._seconds_to_next_chore()
                watch.waiting(idle + self._linger)
                woken = await wait_set(core.wake, idle)
                core.wake.clear()
                hurry = self._commits.hurry
                if woken and self._linger and not hurry.is_set():
                    # Let a burst of appends gather into one commit, unless someone waits for a flush.
                    await wait_set(hurry, self._linger)
                watch.working()
                hurry.clear()
                while await self._commits.round():
                    pass
                if self._reconciler.is_due():
                    # After a start-up or a failed commit, and now and then: a commit can lose its batch
                    # silently, so compare the index with SQL and repair what differs.
                    await self._reconciler.run()
                if self._compaction.is_due():
                    await self._compaction.compact()
            except asyncio.CancelledError:
                raise
            except IndexLockedError as exc:
                self._backoff.locked(exc)
                core.needs_reconcile = True
                core.wake.set()
                continue
            except Exception as exc:  # noqa: BLE001 - keep the familiar running whatever the index does
                if is_disk_full(exc):  # SQL's bookkeeping or the index files: no room for now
                    if not isinstance(exc, IndexDiskFullError):  # a refused commit is counted already
                        c.failures += 1
                    self._backoff.disk_full(exc)
                    core.needs_reconcile = True
                    core.wake.set()
                    continue
                c.failures += 1
                c.last_error = one_line(exc)
                c.live_attempt = 0
                _log.warning("index %s: round failed: %s", self.index.spec.name, c.last_error)
                core.needs_reconcile = True
                core.publish()
                watch.waiting(self._failure_pause)
                await asyncio.sleep(self._failure_pause)
                watch.working()
                if core.setup_needed():  # a rebuild that fails is not started over every second
                    self._backoff.setup_failed()
                core.wake.set()
                continue
            self._commits.settle_waiters(idle=True)
            if core.health_file.unwritten:  # the last change of a burst reaches the shared file too
                core.share_health()

    def loop_health(self) -> LoopHealth:
        """Whether this process's committing loop runs (not started in a process that only reads the index)."""
        return self._watch.health()

    # -- rebuild beside ------------------------------------------------------------------------------
    async def prepare_rebuild(
        self, progress: ProgressCallback | None = None, cancelled: CancelCallback | None = None
    ) -> PreparedRebuild:
        """Build a new index from SQL beside the live one, which goes on answering searches; the
        committer is paused until `finish_rebuild` or `abandon_rebuild`. A cancel (the task cancelled,
        or `cancelled()` returning True: RebuildCancelledError) or a failure (IndexRebuildError; a reader's
        IndexOwnedElsewhereError) leaves the live index exactly as it was."""
        return await self._rebuild.prepare(progress, cancelled)

    async def finish_rebuild(self, prepared: PreparedRebuild) -> int:
        """Index what arrived since the build, swap it in, and go on; returns the documents built."""
        return await self._rebuild.finish(prepared)

    async def abandon_rebuild(self, prepared: PreparedRebuild) -> None:
        await self._rebuild.abandon(prepared.build)

    async def rebuild(self, progress: ProgressCallback | None = None, cancelled: CancelCallback | None = None) -> int:
        """Build the index again from SQL beside the live one and swap it in; `progress(done, total)`
        after each commit. Searches answer from the old index until the swap."""
        prepared = await self.prepare_rebuild(progress, cancelled)
        return await self.finish_rebuild(prepared)

    # -- searching ---------------------------------------------------------------------------------
    async def search(
        self, text: str, limit: int, place: str | tuple[str, ...] | None = None
    ) -> list[tuple[int, float]]:
        """BM25 hits; IndexUnavailableError (saying why, truly) when the index cannot answer now."""
        return await self._fallback.search(text, limit, place)

    async def stale_after(self) -> int | None:
        """The id past which the open index may lack rows searches should add from the store (None: none)."""
        return await self._fallback.stale_after()

    def unavailable_reason(self) -> str:
        """Why the index cannot answer (or catch up) now, in one line that is true."""
        return self._fallback.unavailable_reason()

    # -- health, and the index health pane's figures ---------------------------------------------------
    def health(self) -> IndexHealth:
        return self._core.health()

    def shared_health(self) -> IndexHealth | None:
        """The health the writing process last shared, when this process only reads the index."""
        return self._core.health_file.read()

    async def status(self) -> IndexHealth:
        """Health with lag measured from SQL now (meaningful in a process that is not the writer too)."""
        return await self._figures.status()

    async def backlog(self, watermark: int | None = None) -> tuple[int, int]:
        """(documents to add, documents to remove) for this index, counted in SQL now; from the
        committer's own watermark unless another is given."""
        return await self._core.source.backlog(self._core.watermark if watermark is None else watermark)

    async def document_count(self) -> int | None:
        """Documents the index holds now (None when it cannot be read now: locked, being rebuilt)."""
        return await self._figures.document_count()

    async def source_rows(self) -> int:
        """Documents SQL has for this index (what it holds once caught up; see IndexFigures.source_rows)."""
        return await self._figures.source_rows()

    async def last_commit_at(self) -> datetime | None:
        """When a commit last landed: this process's own record, else the index files' time."""
        return await self._figures.last_commit_at()

    async def disk_bytes(self) -> int:
        """What the index's files take on disk now (a rebuild's folder beside it included)."""
        return await self._figures.disk_bytes()
