"""The group committer: feeds one tantivy index (app/memory/fts.py) from SQL.

SQL commits first and is canonical. The committer reads what SQL has past the index's persisted
watermark, stages many documents, and commits them together. A commit that fails with a transient
lock (the Windows antivirus race: PermissionDenied / Access is denied / os error 5, or LockBusy) is
rolled back and the batch is replayed as upserts with backoff; if it still cannot land, the watermark
does not move, so the next round (the reconciler) indexes what SQL has and the index lacks.

An index that stays locked (it cannot be opened, or refuses every commit) puts the committer in the
"locked" state: it is tried again with growing pauses while searches answer from the store, and
heals by itself once the lock is gone. A rebuild (at start, for a damaged or outdated index, or when
the owner asks) is built beside the live index, which answers until the swap; a cancel leaves it
exactly as it was.

A full disk is neither a lock nor damage: the commit is rolled back, SQL keeps the documents, and the
index is tried again with the same growing pauses until there is room (`IndexHealth.disk_full` says so
meanwhile), then catches up from its watermark.

The process that writes an index shares its health with those that only read it (`familiar index status`
beside the window) through a small JSON file. It lives beside history.db, not in the index folder: a
locked or read-only index folder (the antivirus race) is exactly when a reader must learn "locked,
retrying (attempt N)". A write of it that fails (a scanner holding the file) is tried again at the
committer's next turn, and a reader does not take a file its writer left as "closed" for the state of an
index another process holds now.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from app.memory.errors import (
    IndexCommitError,
    IndexDiskFullError,
    IndexLockedError,
    IndexOwnedElsewhereError,
    IndexRebuildError,
    IndexUnavailableError,
    RebuildCancelledError,
    StoreError,
    is_disk_full,
    no_room_left,
)
from app.memory.fts import (
    INLINE_SEARCH_LIMIT,
    FtsIndex,
    IndexBuild,
    IndexTiming,
    OpenOutcome,
    is_lock_error,
    one_line,
    write_failure,
    writer_killed,
)
from app.memory.liveness import LoopHealth, LoopWatch, end_task
from app.memory.records import IndexHealth, IndexState
from app.memory.waiting import wait_set

_log = logging.getLogger(__name__)


class IndexSource(Protocol):
    """Where a committer reads what to index: SQL, the canonical store."""

    async def documents_after(self, watermark: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """Documents with id > watermark (at most `limit` rows scanned) and the id the scan reached."""
        ...

    async def removals(self, limit: int) -> list[tuple[int, int]]:
        """(outbox id, document id) to delete from the index."""
        ...

    async def load_state(self) -> tuple[int, int, bool]: ...

    async def save_state(
        self, *, watermark: int, schema_version: int, rebuilding: bool, outbox_upto: int | None
    ) -> None: ...

    async def newest_id(self) -> int: ...

    async def documents_by_ids(self, ids: Sequence[int]) -> list[dict[str, Any]]: ...

    async def indexable_ids(self) -> set[int]: ...

    async def backlog(self, watermark: int) -> tuple[int, int]:
        """(documents SQL has past `watermark` for the index, removals waiting), counted now."""
        ...

    async def indexable_count(self) -> tuple[int, int]:
        """(documents the index should hold once caught up: SQL's rows with text, the highest id among
        them), counted now in one snapshot. It reads the whole table: callers keep it a while."""
        ...


@dataclass(slots=True)
class _Counters:
    commits: int = 0
    documents: int = 0
    retries: int = 0
    live_attempt: int = 0
    failures: int = 0
    last_error: str | None = None
    pending: int = 0
    lag: int = 0
    rebuilt_at_start: bool = False
    awaiting_purge: int = 0
    locked_attempts: int = 0
    last_commit_at: datetime | None = None
    backlog_since: datetime | None = None
    refused_in_a_row: int = 0  # tries a lock or a refused file turned down since the last landed commit
    recovered_after: int = 0
    recovered_at: datetime | None = None
    disk_full: bool = False  # the last try met a full disk, and nothing has landed since
    full_attempts: int = 0  # tries a full disk has refused in a row (for the backoff)
    waiters: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)
    purge_waiters: list[asyncio.Future[None]] = field(default_factory=list)


@dataclass(slots=True)
class PreparedRebuild:
    """A complete build beside the live index, waiting to be swapped in (`IndexCommitter.finish_rebuild`)
    or abandoned (`abandon_rebuild`). The committer stays paused meanwhile; the old index answers."""

    build: IndexBuild
    documents: int


SOURCE_COUNT_MAX_AGE = 20.0  # seconds a full count of SQL's rows for an index is kept (see source_rows)
ProgressCallback = Callable[[int, int], None]
CancelCallback = Callable[[], bool]


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
        self._source = source
        self._own_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"fts-{index.spec.name}")
        self._batch = batch_size
        self._linger = linger
        self._max_attempts = max_attempts
        self._backoff = backoff
        self._failure_pause = failure_pause
        self._on_health = on_health
        self._wake = asyncio.Event()
        self._hurry = asyncio.Event()  # a flush is waiting: skip the linger
        self._task: asyncio.Task[None] | None = None
        self._watch = LoopWatch(f"index-committer-{index.spec.name}")
        self._watermark = 0
        self._sql_version = 0  # the format SQL records for the live index
        self._sql_rebuilding = False  # SQL says a rebuild was asked for and has not finished
        self._rebuild_reason: str | None = None  # the live index must be rebuilt (beside it) before use
        self._state = IndexState.STARTING
        self._retry_after = 0.0  # monotonic time before which a locked index is not tried again
        self._reader_tried = 0.0
        self._upsert = True  # the first round after opening replays as upserts (crash recovery)
        self._needs_reconcile = True  # once after start-up: the last run may have lost a batch silently
        self._health_file = health_file or index.path.with_name(index.path.name + ".health.json")
        self._health_written = 0.0
        self._health_unwritten = False  # a change the throttle kept out of the shared file, written when idle
        self._c = _Counters()
        self._closing = False
        self._source_count: tuple[int, int, float] | None = None  # (rows, up to id, when): see source_rows
        timing = timing or IndexTiming()
        # Another process (the CLI beside the window) writes SQL too; this one learns of it by looking.
        self._poll_interval = timing.poll_interval
        # Removed documents are purged from the files by a compaction once removals have been quiet this long
        # (at most 12 times as long after the first one).
        self._compact_after = timing.compact_after
        self._compact_due: float | None = None
        self._compact_deadline: float | None = None
        # A commit can lose its batch without an error: compare the index with SQL now and then.
        self._reconcile_every = timing.reconcile_every
        self._reconciled_at = time.monotonic()
        self._locked_retry_first = timing.locked_retry_first
        self._locked_retry_max = timing.locked_retry_max

    async def _run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    @property
    def owns_index(self) -> bool:
        """This process writes the index (it may still be locked or being rebuilt)."""
        return self.index.owned

    @property
    def state(self) -> IndexState:
        return self._state

    # -- start, open, heal -------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the index. A locked index does not stop the start: it is retried in the background
        while searches answer from the store; a damaged or outdated one is rebuilt beside."""
        try:
            await self._open()
        except IndexLockedError as exc:
            self._note_locked(exc)
            if not self.index.owned and self._c.locked_attempts == 1:
                _log.warning("index %s is locked (%s); retrying in the background", self.index.spec.name, exc)
        if not self.index.owned and self._state is not IndexState.LOCKED:
            # Another process (the running familiar) owns the writer: read what is there, touch nothing.
            self._set_state(IndexState.READER)
            return
        self._task = asyncio.create_task(self._loop(), name=f"index-committer-{self.index.spec.name}")
        self._watch.started(self._task)
        self._wake.set()  # look now (nothing new is dated: a round dates what it finds)

    async def _open(self) -> None:
        """Open the live index and decide whether it must be rebuilt (IndexLockedError: not now)."""
        watermark, version, rebuilding = await self._source.load_state()
        outcome: OpenOutcome = await self._run_blocking(
            functools.partial(self.index.open, writable=not self._read_only)
        )
        self._watermark = watermark
        self._sql_version = version
        self._sql_rebuilding = rebuilding
        if not self.index.owned:
            return
        reason = None
        if outcome == "created":
            # A new, empty index: the rounds fill it from SQL (a crash resumes from the watermark).
            self._watermark = 0
            self._c.rebuilt_at_start = True
            self._sql_version = self.index.spec.schema_version
            self._sql_rebuilding = False
            await self._source.save_state(
                watermark=0, schema_version=self._sql_version, rebuilding=False, outbox_upto=None
            )
        elif outcome != "opened":
            reason = f"it is {outcome} ({self.index.problem})"
        elif version != self.index.spec.schema_version:
            reason = f"SQL records index format {version}; this Familiar uses {self.index.spec.schema_version}"
        elif rebuilding:
            reason = "a rebuild was started and did not finish"
        if reason is not None:
            self._rebuild_reason = reason
            self._c.rebuilt_at_start = True
            _log.warning("index %s: rebuilding it beside the old one from SQL: %s", self.index.spec.name, reason)
            self._set_state(IndexState.REBUILDING)
            return
        if await self._run_blocking(self.index.leftover_build):
            await self._run_blocking(self.index.discard_leftover_build)
        # Words of documents removed before a restart (the last run ended before compacting) still
        # sit in the files: compact them away soon.
        leftover = await self._run_blocking(self.index.deleted_docs)
        if leftover:
            self._schedule_compaction(leftover)
        self._upsert = True
        self._needs_reconcile = True
        self._healed()

    def _setup_needed(self) -> bool:
        return not self.index.is_open or self._rebuild_reason is not None

    async def _setup(self) -> None:
        """Open a locked index again, or build the new one beside the old; IndexLockedError: not yet."""
        if not self.index.is_open and self._rebuild_reason is None:
            await self._open()
            if not self.index.owned:  # another process took the index meanwhile: only read it
                self._set_state(IndexState.READER)
                self._closing = True
                return
        if self._rebuild_reason is not None:
            await self._rebuild_in_background()

    def _note_locked(self, exc: BaseException) -> None:
        """A try refused by a lock: say so, wake nobody up for nothing, and back off."""
        c = self._c
        c.locked_attempts += 1
        c.refused_in_a_row += 1
        c.last_error = one_line(exc)
        delay = min(self._locked_retry_max, self._locked_retry_first * 2 ** min(c.locked_attempts - 1, 16))
        self._retry_after = time.monotonic() + delay
        self._set_state(IndexState.LOCKED)
        self._write_health_file(force=True)  # the attempt a reader shows: not held back while this one backs off
        if c.locked_attempts == 1:
            _log.warning(
                "index %s is locked (%s); searches answer from the store, retrying with backoff",
                self.index.spec.name,
                c.last_error,
            )
        else:
            _log.info("index %s still locked (attempt %d): %s", self.index.spec.name, c.locked_attempts, c.last_error)
        self._fail_waiters()

    def _note_disk_full(self, exc: BaseException) -> None:
        """A try met a full disk: say so once, keep SQL's documents for later, and back off."""
        c = self._c
        c.disk_full = True
        c.full_attempts += 1
        c.live_attempt = 0
        c.last_error = one_line(exc)
        delay = min(self._locked_retry_max, self._locked_retry_first * 2 ** min(c.full_attempts - 1, 16))
        self._retry_after = time.monotonic() + delay
        if c.full_attempts == 1:
            _log.warning(
                "index %s: the disk is full (%s); SQL keeps the documents, retrying with backoff",
                self.index.spec.name,
                c.last_error,
            )
        else:
            _log.info("index %s: the disk is still full (attempt %d)", self.index.spec.name, c.full_attempts)
        self._publish()
        self._write_health_file(force=True)  # as for a lock: what a reader shows while this one backs off
        self._fail_waiters()  # told now, not at their timeout: searches read the store until there is room

    def _healed(self) -> None:
        if self._c.locked_attempts:
            _log.warning(
                "index %s: the lock is gone after %d attempts; indexing again",
                self.index.spec.name,
                self._c.locked_attempts,
            )
            self._c.locked_attempts = 0
            self._c.last_error = None
        self._recovered()
        self._retry_after = 0.0
        if self._rebuild_reason is None and self.index.is_open:
            self._set_state(IndexState.READY)

    def _set_state(self, state: IndexState) -> None:
        changed = state != self._state
        self._state = state
        if changed:
            self._write_health_file(force=True)
        self._publish()

    def _fail_waiters(self) -> None:
        """Those waiting for a flush or a purge are told the index is locked, instead of waiting."""
        reason = self.unavailable_reason()
        for _target, fut in self._c.waiters:
            if not fut.done():
                fut.set_exception(IndexUnavailableError(reason))
        self._c.waiters = []
        for fut in self._c.purge_waiters:
            if not fut.done():
                fut.set_exception(IndexUnavailableError(reason))
        self._c.purge_waiters = []

    def unavailable_reason(self) -> str:
        """Why the index cannot answer (or catch up) now, in one line that is true."""
        name = self.index.spec.name
        c = self._c
        if not self.index.owned and self._state is not IndexState.LOCKED:
            shared = self.shared_health()
            if shared is not None and shared.state is IndexState.REBUILDING:
                return f"the {name} search index is being rebuilt by another Familiar process"
            if shared is not None and shared.state is IndexState.LOCKED:
                return (
                    f"the {name} search index is locked ({shared.last_error});"
                    " the Familiar process that writes it keeps retrying"
                )
            return f"the {name} search index cannot be read here ({self.index.problem or 'not open'})"
        if c.disk_full:
            return f"the {name} search index cannot take new documents now: the disk is full ({c.last_error})"
        if self._state is IndexState.LOCKED:
            return f"the {name} search index is locked, retrying (attempt {c.locked_attempts}): {c.last_error}"
        if self._state is IndexState.REBUILDING:
            return f"the {name} search index is being rebuilt"
        return f"the {name} search index is not open yet"

    # -- rebuild beside ------------------------------------------------------------------------------
    async def _rebuild_in_background(self) -> None:
        """The rebuild a start found necessary; a close leaves the build to be resumed next time."""
        self._set_state(IndexState.REBUILDING)
        if not self._sql_rebuilding:
            await self._mark_rebuilding(True)
        build: IndexBuild = await self._run_blocking(functools.partial(self.index.begin_build, resume=True))
        try:
            await self._fill(build, None, None)
            await self._run_blocking(self.index.swap_in, build)
        except BaseException:
            await self._run_blocking(build.close)
            raise
        await self._swapped(build)
        _log.info("index %s: rebuilt beside and swapped in (%d documents)", self.index.spec.name, build.watermark)

    async def _mark_rebuilding(self, rebuilding: bool) -> None:
        await self._source.save_state(
            watermark=self._watermark, schema_version=self._sql_version, rebuilding=rebuilding, outbox_upto=None
        )
        self._sql_rebuilding = rebuilding

    async def _fill(
        self, build: IndexBuild, progress: ProgressCallback | None, cancelled: CancelCallback | None
    ) -> int:
        """Index into `build` what SQL has past the build's watermark; `progress(reached, newest)` after
        each commit; `cancelled()` is asked before each batch. Returns the documents added."""
        total = await self._source.newest_id()
        upsert = build.resumed
        done = 0
        while True:
            if self._closing:
                raise RebuildCancelledError(f"the {self.index.spec.name} index rebuild stopped: Familiar is closing")
            if cancelled is not None and cancelled():
                raise RebuildCancelledError(
                    f"the {self.index.spec.name} index rebuild was cancelled; the old index answers as before"
                )
            docs, reached = await self._source.documents_after(build.watermark, self._batch)
            if reached <= build.watermark:
                return done
            try:
                await self._run_blocking(functools.partial(build.add, docs, reached, upsert=upsert))
            except (OSError, ValueError) as exc:
                if not is_lock_error(exc):
                    raise
                raise IndexLockedError(f"the {self.index.spec.name} index build was refused: {one_line(exc)}") from exc
            upsert = False
            done += len(docs)
            self._c.commits += 1
            self._c.last_commit_at = _now()
            self._c.documents += len(docs)
            if progress is not None:
                progress(reached, max(total, reached))

    async def _swapped(self, build: IndexBuild) -> None:
        """The build is the live index now: SQL records it, and the committer goes on from there."""
        self._watermark = build.watermark
        self._sql_version = self.index.spec.schema_version
        await self._source.save_state(
            watermark=build.watermark, schema_version=self._sql_version, rebuilding=False, outbox_upto=None
        )
        self._sql_rebuilding = False
        self._rebuild_reason = None
        self._upsert = False
        self._purged(self._c.awaiting_purge)  # a rebuilt index holds no removed document
        # Whatever changed while it was built (removals are still in the outbox) is repaired now.
        self._needs_reconcile = True
        self._healed()
        self._wake.set()

    async def _pause(self) -> None:
        self._watch.stopped()
        if self._task is not None:
            await end_task(self._task)
            self._task = None

    def _resume(self) -> None:
        if not self._closing and self._task is None:
            self._task = asyncio.create_task(self._loop(), name=f"index-committer-{self.index.spec.name}")
            self._watch.started(self._task)
            self._wake.set()

    def _require_owner(self) -> None:
        if not self.index.owned:
            raise IndexOwnedElsewhereError(
                f"another Familiar process is writing the {self.index.spec.name} index;"
                " stop it (or wait until it has stopped), then rebuild again"
            )

    async def prepare_rebuild(
        self, progress: ProgressCallback | None = None, cancelled: CancelCallback | None = None
    ) -> PreparedRebuild:
        """Build a new index from SQL beside the live one, which goes on answering searches; the
        committer is paused until `finish_rebuild` or `abandon_rebuild`. A cancel (the task cancelled,
        or `cancelled()` returning True: RebuildCancelledError) or a failure leaves the live index
        exactly as it was."""
        self._require_owner()
        await self._pause()
        build: IndexBuild | None = None
        try:
            await self._mark_rebuilding(True)
            build = await self._run_blocking(functools.partial(self.index.begin_build, resume=False))
            self._set_state(IndexState.REBUILDING)
            documents = await self._fill(build, progress, cancelled)
        except BaseException as exc:
            await self._abandon(build)
            failure = self._rebuild_failure(exc)
            if failure is None:
                raise
            raise failure from exc
        return PreparedRebuild(build=build, documents=documents)

    async def finish_rebuild(self, prepared: PreparedRebuild) -> int:
        """Index what arrived since the build, swap it in, and go on; returns the documents built."""
        try:
            documents = prepared.documents + await self._fill(prepared.build, None, None)
            await self._run_blocking(self.index.swap_in, prepared.build)
        except BaseException as exc:
            await self._abandon(prepared.build)
            failure = self._rebuild_failure(exc)
            if failure is None:
                raise
            raise failure from exc
        await self._swapped(prepared.build)
        self._resume()
        return documents

    def _rebuild_failure(self, exc: BaseException) -> IndexRebuildError | None:
        """What a failed rebuild the owner asked for raises instead of `exc`: a lock says the old index is
        kept; tantivy's own ValueError (a failed write, a build that cannot be opened) says what it says, as
        a store error. None: `exc` goes up as it is (a cancel, a store error, SQL's own, an OSError)."""
        if isinstance(exc, IndexLockedError):
            return IndexRebuildError(f"{exc}; the old {self.index.spec.name} index is kept")
        if isinstance(exc, ValueError) and not isinstance(exc, StoreError):
            return IndexRebuildError(str(exc))
        return None

    async def abandon_rebuild(self, prepared: PreparedRebuild) -> None:
        await self._abandon(prepared.build)

    async def _abandon(self, build: IndexBuild | None) -> None:
        """Drop a build and go on with the live index as it was."""
        if self._closing:  # the files are closed with the rest; the next start resumes or drops the build
            return
        try:
            if build is not None:
                await self._run_blocking(build.abandon)
            await self._mark_rebuilding(False)
        finally:
            if self._rebuild_reason is None:
                self._set_state(IndexState.READY if self.index.is_open else self._state)
            self._resume()

    async def rebuild(self, progress: ProgressCallback | None = None, cancelled: CancelCallback | None = None) -> int:
        """Build the index again from SQL beside the live one and swap it in; `progress(done, total)`
        after each commit. Searches answer from the old index until the swap."""
        prepared = await self.prepare_rebuild(progress, cancelled)
        return await self.finish_rebuild(prepared)

    # -- running -----------------------------------------------------------------------------------
    async def close(self) -> None:
        self._closing = True
        self._state = IndexState.CLOSED  # what the shared health file says once this process has let go
        self._write_health_file(force=True)
        self._wake.set()
        await self._pause()
        await self._run_blocking(self.index.close)
        for _target, fut in self._c.waiters:
            if not fut.done():
                fut.cancel()
        for fut in self._c.purge_waiters:
            if not fut.done():
                fut.cancel()
        if self._own_executor:
            self._executor.shutdown(wait=True)

    def notify(self) -> None:
        """New rows exist in SQL (or an outbox entry): wake the committer."""
        if self._c.backlog_since is None:  # the oldest change the index lacks is at most this old
            self._c.backlog_since = _now()
        self._wake.set()

    @property
    def watermark(self) -> int:
        return self._watermark

    async def flush(self, timeout: float = 30.0) -> None:
        """Wait until everything SQL has now is committed to the index (IndexUnavailableError at once
        while the index is locked, or as soon as it turns out to be, or a try meets a full disk)."""
        if self._state is IndexState.LOCKED:
            raise IndexUnavailableError(self.unavailable_reason())
        target = await self._source.newest_id()
        if self._watermark >= target and not self._setup_needed() and not await self._source.removals(1):
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._c.waiters.append((target, fut))
        self._hurry.set()
        self._wake.set()
        await asyncio.wait_for(fut, timeout)

    def loop_health(self) -> LoopHealth:
        """Whether this process's committing loop runs (not started in a process that only reads the index)."""
        return self._watch.health()

    def health(self) -> IndexHealth:
        c = self._c
        return IndexHealth(
            name=self.index.spec.name,
            commits=c.commits,
            documents_committed=c.documents,
            retries=c.retries,
            live_attempt=c.live_attempt,
            failures=c.failures,
            last_error=c.last_error,
            pending=c.pending,
            lag=c.lag,
            watermark=self._watermark,
            rebuilt_at_start=c.rebuilt_at_start,
            awaiting_purge=c.awaiting_purge,
            state=self._state,
            locked_attempts=c.locked_attempts,
            last_commit_at=c.last_commit_at,
            backlog_since=c.backlog_since,
            recovered_after=c.recovered_after,
            recovered_at=c.recovered_at,
            disk_full=c.disk_full,
        )

    def _recovered(self) -> None:
        """A commit landed, or a locked index opened: if refusals held it up, say how many it took."""
        c = self._c
        if c.disk_full:
            _log.warning("index %s: there is room on the disk again; indexing", self.index.spec.name)
            c.disk_full = False
            c.full_attempts = 0
            c.last_error = None
        if c.refused_in_a_row:
            c.recovered_after = c.refused_in_a_row
            c.recovered_at = _now()
            c.refused_in_a_row = 0

    def _publish(self) -> None:
        self._write_health_file()
        if self._on_health is not None:
            try:
                self._on_health(self.health())
            except Exception:  # noqa: BLE001 - a listener must never stop indexing
                _log.exception("index health listener failed")

    def _write_health_file(self, *, force: bool = False) -> None:
        """The writer shares its health with other processes (`familiar index status` beside the window)."""
        if not self.index.owned:
            return
        now = time.monotonic()
        if not force and now - self._health_written < 0.5 and not self._c.live_attempt:
            self._health_unwritten = True
            return
        data = _health_json(self.health())
        data["pid"] = os.getpid()
        tmp = self._health_file.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(data), encoding="utf-8")
            tmp.replace(self._health_file)
        except OSError as exc:  # a locked file must not stop indexing: the loop's next turn writes it again
            self._health_unwritten = True
            _log.debug("could not write %s: %s", self._health_file, exc)
            return
        self._health_written = now
        self._health_unwritten = False

    def shared_health(self) -> IndexHealth | None:
        """The health the writing process last shared, when this process only reads the index."""
        try:
            data = json.loads(self._health_file.read_text(encoding="utf-8"))
            data.pop("pid", None)
            return _health_from_json(data)
        except (OSError, ValueError, TypeError, AttributeError):
            return None

    def _seconds_to_next_chore(self) -> float:
        now = time.monotonic()
        waits = [self._poll_interval, self._reconciled_at + self._reconcile_every - now]
        if self._compact_due is not None:
            waits.append(self._compact_due - now)
        return max(0.0, min(waits))

    async def _loop(self) -> None:
        watch = self._watch
        while not self._closing:
            try:
                if self._health_unwritten:  # a change the throttle or a refused write kept out of the file
                    self._write_health_file()
                backoff = self._retry_after - time.monotonic()
                if backoff > 0:  # a lock refused the last try: give it time
                    watch.waiting(backoff)
                    await asyncio.sleep(backoff)
                    watch.working()
                if self._setup_needed():
                    await self._setup()
                    continue
                # Not woken in time: look at SQL for another process's writes, or do a chore.
                idle = self._seconds_to_next_chore()
                watch.waiting(idle + self._linger)
                woken = await wait_set(self._wake, idle)
                self._wake.clear()
                if woken and self._linger and not self._hurry.is_set():
                    # Let a burst of appends gather into one commit, unless someone waits for a flush.
                    await wait_set(self._hurry, self._linger)
                watch.working()
                self._hurry.clear()
                while await self._round():
                    pass
                if self._needs_reconcile or time.monotonic() >= self._reconciled_at + self._reconcile_every:
                    # After a start-up or a failed commit, and now and then: a commit can lose its batch
                    # silently, so compare the index with SQL and repair what differs.
                    self._needs_reconcile = False
                    self._reconciled_at = time.monotonic()
                    repaired = await self.reconcile()
                    if repaired:
                        _log.warning("index %s: reconciled %d documents with SQL", self.index.spec.name, repaired)
                if self._compact_due is not None and time.monotonic() >= self._compact_due:
                    await self._compact()
            except asyncio.CancelledError:
                raise
            except IndexLockedError as exc:
                self._note_locked(exc)
                self._needs_reconcile = True
                self._wake.set()
                continue
            except Exception as exc:  # noqa: BLE001 - keep the familiar running whatever the index does
                if is_disk_full(exc):  # SQL's bookkeeping or the index files: no room for now
                    if not isinstance(exc, IndexDiskFullError):  # a refused commit is counted already
                        self._c.failures += 1
                    self._note_disk_full(exc)
                    self._needs_reconcile = True
                    self._wake.set()
                    continue
                self._c.failures += 1
                self._c.last_error = one_line(exc)
                self._c.live_attempt = 0
                _log.warning("index %s: round failed: %s", self.index.spec.name, self._c.last_error)
                self._needs_reconcile = True
                self._publish()
                watch.waiting(self._failure_pause)
                await asyncio.sleep(self._failure_pause)
                watch.working()
                if self._setup_needed():  # a rebuild that fails is not started over every second
                    backoff = self._locked_retry_first * 2 ** min(self._c.failures - 1, 16)
                    self._retry_after = time.monotonic() + min(self._locked_retry_max, backoff)
                self._wake.set()
                continue
            self._settle_waiters(idle=True)
            if self._health_unwritten:  # the last change of a burst reaches the shared file too
                self._write_health_file()

    async def _round(self) -> bool:
        """One group commit. Returns True when there may be more to do right away."""
        # Removals are read before documents: a document read afterwards already reflects them, and
        # deletes are staged before adds, so a redacted row can never be added back.
        removals = await self._source.removals(self._batch)
        docs, reached = await self._source.documents_after(self._watermark, self._batch)
        newest = await self._source.newest_id()
        self._c.pending = len(docs) + len(removals)
        self._c.lag = max(0, newest - self._watermark)
        if reached <= self._watermark and not removals:
            self._c.pending = 0
            self._c.lag = 0
            self._c.backlog_since = None
            if self._upsert:
                self._upsert = False
            return False
        if self._c.backlog_since is None:  # another process wrote it (this one was not told)
            self._c.backlog_since = _now()
        delete_ids = [doc_id for _oid, doc_id in removals]
        failure = await self._commit_with_retries(docs, delete_ids)
        if failure is not None:
            self._upsert = True
            if isinstance(failure, IndexLockedError | IndexDiskFullError):  # the loop backs off
                raise failure
            self._publish()
            await asyncio.sleep(self._failure_pause)
            return True
        await self._source.save_state(
            watermark=reached,
            schema_version=self.index.spec.schema_version,
            rebuilding=False,
            outbox_upto=max((oid for oid, _d in removals), default=None),
        )
        self._watermark = reached  # after SQL has it: a flush that sees it finds SQL agreeing
        self._healed()
        self._c.commits += 1
        self._c.documents += len(docs)
        self._c.pending = 0
        self._c.lag = max(0, newest - reached)
        if delete_ids:
            self._schedule_compaction(len(delete_ids))
            self._source_count = None  # rows left the index: count SQL's again
        self._publish()
        self._settle_waiters(idle=False)
        return True

    def _schedule_compaction(self, removed: int) -> None:
        now = time.monotonic()
        self._c.awaiting_purge += removed
        if self._compact_deadline is None:
            self._compact_deadline = now + 12 * self._compact_after
        self._compact_due = min(now + self._compact_after, self._compact_deadline)

    async def _compact(self) -> None:
        """Rewrite the index from SQL in one commit, so removed documents leave the files too."""
        started = time.perf_counter()
        purged = self._c.awaiting_purge
        await self._run_blocking(self.index.stage_compaction)
        try:
            watermark, total = 0, 0
            while watermark < self._watermark:
                docs, reached = await self._source.documents_after(watermark, self._batch)
                if reached <= watermark:
                    break
                live = [d for d in docs if int(d["id"]) <= self._watermark]  # newer rows come in the next round
                await self._run_blocking(functools.partial(self.index.stage, live, [], upsert=False))
                total += len(live)
                watermark = reached
            await self._run_blocking(self.index.commit)
        except BaseException as exc:
            await self._run_blocking(self._safe_rollback)
            failure = write_failure(exc) if isinstance(exc, ValueError) else None
            if isinstance(failure, IndexLockedError):  # anything else goes up as it is (a round failed)
                raise failure from exc
            raise
        await self._run_blocking(self.index.collect_garbage)
        self._c.commits += 1
        self._c.last_commit_at = _now()
        self._purged(purged)
        _log.info(
            "index %s: compacted %d documents in %.2f s; %d removed ones purged from the files",
            self.index.spec.name,
            total,
            time.perf_counter() - started,
            purged,
        )
        self._publish()

    def _purged(self, count: int) -> None:
        """`count` removed documents left the files; wake those waiting when none is left."""
        self._c.awaiting_purge = max(0, self._c.awaiting_purge - count)
        self._compact_due = self._compact_deadline = None
        if self._c.awaiting_purge:  # removals landed while it ran (they were staged after the rewrite)
            self._schedule_compaction(0)
            return
        for fut in self._c.purge_waiters:
            if not fut.done():
                fut.set_result(None)
        self._c.purge_waiters = []

    async def purge(self, timeout: float = 30.0) -> None:
        """Compact now (after committing what is pending) and wait until removed documents left the files."""
        await self.flush(timeout)
        if not self._c.awaiting_purge:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._c.purge_waiters.append(fut)
        self._compact_due = time.monotonic()
        self._wake.set()
        await asyncio.wait_for(fut, timeout)

    async def _commit_with_retries(self, docs: list[dict[str, Any]], delete_ids: list[int]) -> StoreError | None:
        """Commit the batch, trying a lock again with backoff. None once it landed; else why it did not, as
        the typed error of the last try (`write_failure`: IndexLockedError, IndexDiskFullError or
        IndexCommitError, tantivy's own error its cause)."""
        upsert = self._upsert
        failure: StoreError | None = None
        for attempt in range(1, self._max_attempts + 1):
            try:
                await self._run_blocking(self._stage_and_commit, docs, delete_ids, upsert)
                self._c.last_commit_at = _now()
                self._recovered()
                if self._c.live_attempt:
                    self._c.live_attempt = 0
                    self._c.last_error = None
                return None
            except ValueError as exc:
                await self._run_blocking(self._safe_rollback)
                failure = write_failure(exc)
                self._c.last_error = one_line(exc)
                if writer_killed(exc):
                    try:
                        await self._run_blocking(self.index.recover_writer)
                    except ValueError as again:  # still locked: the next attempt tries again
                        _log.info("index %s: no new writer yet: %s", self.index.spec.name, one_line(again))
                self._c.disk_full = is_disk_full(exc)  # what the last try met
                if self._c.disk_full:  # said once, by _note_disk_full: not an error per try
                    break
                if not isinstance(failure, IndexLockedError):
                    _log.error("index %s: commit failed: %s", self.index.spec.name, self._c.last_error)
                    break
                upsert = True  # a failed commit may have lost part of the batch: replay as upserts
                self._c.refused_in_a_row += 1
                if attempt == self._max_attempts:
                    break
                self._c.retries += 1
                self._c.live_attempt = attempt + 1
                self._publish()
                await asyncio.sleep(self._backoff * (2 ** (attempt - 1)))
        self._c.failures += 1
        self._c.live_attempt = 0
        self._needs_reconcile = True
        if failure is None:  # no try at all (max_attempts 0)
            failure = IndexCommitError(f"the {self.index.spec.name} index was not asked to commit")
        # A lock says so once, as the index's state (see _note_locked); anything else is a warning here.
        quiet = self._c.disk_full or isinstance(failure, IndexLockedError)
        log = _log.debug if quiet else _log.warning
        log(
            "index %s: %d documents could not be committed (%s); SQL keeps them and the index will catch up",
            self.index.spec.name,
            len(docs),
            self._c.last_error,
        )
        return failure

    def _stage_and_commit(self, docs: list[dict[str, Any]], delete_ids: list[int], upsert: bool) -> None:
        self.index.stage(docs, delete_ids, upsert=upsert)
        self.index.commit()

    def _safe_rollback(self) -> None:
        try:
            self.index.rollback()
        except ValueError as exc:
            _log.warning("index %s: rollback failed: %s", self.index.spec.name, exc)

    def _settle_waiters(self, *, idle: bool) -> None:
        keep: list[tuple[int, asyncio.Future[None]]] = []
        for target, fut in self._c.waiters:
            if fut.done():
                continue
            if self._watermark >= target and idle:
                fut.set_result(None)
            else:
                keep.append((target, fut))
        self._c.waiters = keep

    async def reconcile(self) -> int:
        """Index what SQL has and the index lacks, and drop what the index has and SQL does not.

        Returns the number of documents repaired.
        """
        wanted = await self._source.indexable_ids()
        present: set[int] = await self._run_blocking(self.index.all_ids)
        missing = sorted(i for i in wanted if i <= self._watermark and i not in present)
        extra = sorted(present - wanted)
        if not missing and not extra:
            return 0
        docs = await self._source.documents_by_ids(missing)
        failure = await self._commit_with_retries(docs, extra)
        if failure is not None:
            if isinstance(failure, IndexLockedError | IndexDiskFullError):
                raise failure
            raise IndexCommitError(
                f"index {self.index.spec.name}: reconcile could not commit ({self._c.last_error})"
            ) from failure
        self._healed()
        self._c.commits += 1
        self._c.documents += len(docs)
        self._publish()
        return len(missing) + len(extra)

    async def backlog(self, watermark: int | None = None) -> tuple[int, int]:
        """(documents to add, documents to remove) for this index, counted in SQL now; from the
        committer's own watermark unless another is given."""
        return await self._source.backlog(self._watermark if watermark is None else watermark)

    async def status(self) -> IndexHealth:
        """Health with lag measured from SQL now (meaningful in a process that is not the writer too)."""
        watermark, _version, _rebuilding = await self._source.load_state()
        newest = await self._source.newest_id()
        health = self.health()
        if not self.index.owned:
            shared: IndexHealth | None = await asyncio.to_thread(self.shared_health)
            # "closed" is what the last writer left when it let go: while another process holds the
            # index, that file is older than its writer (which could not write it yet), not its state.
            stale = shared is not None and shared.state is IndexState.CLOSED and self.index.owned_elsewhere
            health = health if shared is None or stale else shared
        # On a full disk the writer cannot share its health either: what this process sees of the disk says it.
        full = health.disk_full or await asyncio.to_thread(no_room_left, self.index.path.parent)
        return dataclasses.replace(health, lag=max(0, newest - watermark), watermark=watermark, disk_full=full)

    async def search(
        self, text: str, limit: int, place: str | tuple[str, ...] | None = None
    ) -> list[tuple[int, float]]:
        """BM25 hits; IndexUnavailableError (saying why, truly) when the index cannot answer now."""
        started = time.perf_counter()
        if not self.index.is_open:
            await self._reopen_as_reader()
            if not self.index.is_open:
                raise IndexUnavailableError(self.unavailable_reason())
        # Searches run beside commits (tantivy readers are thread-safe), not behind them. A short top-k
        # search takes about a millisecond even at 100k documents, less than the hop to a worker thread
        # costs on a busy machine, so it runs right here; a long one goes to a thread to keep the loop free.
        hits: list[tuple[int, float]]
        if limit <= INLINE_SEARCH_LIMIT:
            hits = self.index.search(text, limit, place)
        else:
            hits = await asyncio.to_thread(self.index.search, text, limit, place)
        _log.debug("search %r took %.2f ms", text, (time.perf_counter() - started) * 1000)
        return hits

    async def _reopen_as_reader(self) -> None:
        """A reader whose index could not be read (the writer was rebuilding it) looks again, now and then."""
        if self._state is not IndexState.READER or time.monotonic() - self._reader_tried < 1.0:
            return
        self._reader_tried = time.monotonic()
        await self._run_blocking(functools.partial(self.index.open, writable=False))

    async def stale_after(self) -> int | None:
        """The id past which the open index may lack rows that searches should add from the store:
        while it is locked or the disk is full (it cannot take commits) or the old index answers during a rebuild (it
        takes none until the swap), and always in a reader (the writer may be locked or a moment
        behind: its persisted watermark says how far it got). None when it is catching up by itself."""
        if not self.index.is_open:
            return None
        if self._state in (IndexState.LOCKED, IndexState.REBUILDING) or self._c.disk_full:  # it takes no commit now
            return self._watermark
        if self._state is IndexState.READER:
            watermark, _version, _rebuilding = await self._source.load_state()
            return watermark
        return None

    # -- for the index health pane ---------------------------------------------------------------------
    async def document_count(self) -> int | None:
        """Documents the index holds now (None when it cannot be read now: locked, being rebuilt)."""
        if not self.index.is_open:
            return None
        try:
            count: int = await asyncio.to_thread(self.index.num_docs)
        except ValueError as exc:  # a file refused while reading: say nothing rather than something wrong
            _log.debug("index %s: cannot count documents now: %s", self.index.spec.name, one_line(exc))
            return None
        return count

    async def source_rows(self) -> int:
        """Documents SQL has for this index (what it holds once caught up). The whole table is counted
        at most every SOURCE_COUNT_MAX_AGE seconds, and again after the index removed documents (an
        edit, a deletion, a forget); in between, what was appended since is added (a cheap range)."""
        cached, now = self._source_count, time.monotonic()
        if cached is None or now - cached[2] >= SOURCE_COUNT_MAX_AGE:
            count, upto = await self._source.indexable_count()
            self._source_count = (count, upto, now)
            return count
        count, upto, _at = cached
        newer, _removals = await self._source.backlog(upto)
        return count + newer

    async def last_commit_at(self) -> datetime | None:
        """When a commit last landed: this process's own record, else the index files' time (a commit
        of an earlier run, or of the process that writes the index)."""
        if self._c.last_commit_at is not None:
            return self._c.last_commit_at
        stamp: float | None = await asyncio.to_thread(self.index.committed_at)
        return datetime.fromtimestamp(stamp, UTC) if stamp is not None else None

    async def disk_bytes(self) -> int:
        """What the index's files take on disk now (a rebuild's folder beside it included)."""
        return await asyncio.to_thread(self.index.disk_usage)


def _now() -> datetime:
    return datetime.now(UTC)


_HEALTH_TIMES = ("last_commit_at", "backlog_since", "recovered_at")


def _health_json(health: IndexHealth) -> dict[str, Any]:
    """IndexHealth as the shared health file holds it (times as ISO-8601)."""
    data: dict[str, Any] = {k: getattr(health, k) for k in health.__slots__}
    for key in _HEALTH_TIMES:
        moment = data[key]
        data[key] = moment.isoformat() if moment is not None else None
    return data


def _health_from_json(data: dict[str, Any]) -> IndexHealth:
    """The inverse of `_health_json`; a file from an older version lacks the newer keys (defaults)."""
    for key in _HEALTH_TIMES:
        if data.get(key) is not None:
            data[key] = datetime.fromisoformat(str(data[key]))
    if "state" in data:
        data["state"] = IndexState(data["state"])  # ValueError: a state this version does not know
    return IndexHealth(**data)
