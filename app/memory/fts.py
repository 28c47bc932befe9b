"""tantivy side-indexes: blocking index access (executor only) and an async group committer.

SQL commits first and is canonical. The committer reads what SQL has past the index's persisted
watermark, stages many documents, and commits them together. A commit that fails with a transient
lock (the Windows antivirus race: PermissionDenied / Access is denied / os error 5, or LockBusy) is
rolled back and the batch is replayed as upserts with backoff; if it still cannot land, the watermark
does not move, so the next round (the reconciler) indexes what SQL has and the index lacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import tantivy

from app.memory.records import IndexHealth
from app.memory.waiting import wait_set

_log = logging.getLogger(__name__)

_TRANSIENT = re.compile(
    r"PermissionDenied|Access is denied|os error 5\b|os error 32\b|LockBusy|lock busy"
    r"|Operation not permitted|os error 1\b",
    re.IGNORECASE,
)
_META = "familiar-index.json"
INLINE_SEARCH_LIMIT = 32
"""Searches for at most this many hits run on the event loop (see `IndexCommitter.search`)."""


def is_transient(error: BaseException) -> bool:
    """tantivy raises plain ValueError; a transient file lock is recognised by its message."""
    return isinstance(error, ValueError) and bool(_TRANSIENT.search(str(error)))


@dataclass(frozen=True, slots=True)
class IndexSpec:
    name: str
    schema_version: int
    build_schema: Callable[[], tantivy.Schema]
    search_fields: tuple[str, ...]


def _turn_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("id", stored=True, indexed=True, fast=True)
    builder.add_text_field("place", stored=False, tokenizer_name="raw")
    builder.add_text_field("author", stored=False, tokenizer_name="default")
    builder.add_text_field("content", stored=False, tokenizer_name="default")
    return builder.build()


TURNS = IndexSpec(name="turns", schema_version=1, build_schema=_turn_schema, search_fields=("content", "author"))


def _fact_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("id", stored=True, indexed=True, fast=True)
    builder.add_text_field("place", stored=False, tokenizer_name="raw")  # the fact's scope
    builder.add_text_field("content", stored=False, tokenizer_name="default")
    return builder.build()


FACTS = IndexSpec(name="facts", schema_version=1, build_schema=_fact_schema, search_fields=("content",))


class FtsIndex:
    """One tantivy index directory. Every method blocks: call them from an executor thread."""

    def __init__(self, path: Path, spec: IndexSpec) -> None:
        self.path = path
        self.spec = spec
        self._schema = spec.build_schema()
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._owner = _OwnerLock(path.with_name(path.name + ".owner.lock"))
        self.writable = False

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, *, writable: bool = True) -> bool:
        """Open (or create) the index. Returns True when it had to be created afresh.

        An index of another schema version, or one tantivy cannot read, is wiped and recreated:
        it is a projection, and SQL still has everything.
        """
        created = False
        meta = self.path / _META
        compatible = False
        if writable and not self._owner.acquire():
            # Another process (the running familiar) owns this index: read it, never wipe or write it.
            writable = False
        if self.path.is_dir() and (self.path / "meta.json").exists():
            try:
                recorded = json.loads(meta.read_text(encoding="utf-8")).get("schema_version")
                compatible = recorded == self.spec.schema_version
            except (OSError, ValueError):
                compatible = False
        if compatible:
            try:
                self._index = tantivy.Index(self._schema, path=str(self.path), reuse=True)
            except ValueError as exc:
                _log.warning("index %s is unreadable (%s); rebuilding it from SQL", self.path, exc)
                compatible = False
        if not compatible:
            if not writable:
                self._index = None
                return False
            self.wipe()
            self.path.mkdir(parents=True, exist_ok=True)
            self._index = tantivy.Index(self._schema, path=str(self.path), reuse=False)
            meta.write_text(json.dumps({"schema_version": self.spec.schema_version}), encoding="utf-8")
            created = True
        if writable:
            try:
                assert self._index is not None
                self._writer = self._index.writer(heap_size=64_000_000, num_threads=1)
                self.writable = True
            except ValueError as exc:
                if "LockBusy" not in str(exc):
                    raise
                _log.info("index %s is being written by another process; opening it read-only", self.path)
                self.writable = False
        return created

    def wipe(self) -> None:
        self._close_index()
        if self.path.is_dir():
            shutil.rmtree(self.path)
        elif self.path.exists():  # a stray file where the folder should be
            self.path.unlink()

    def close(self) -> None:
        self._close_index()
        self._owner.release()

    def _close_index(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(ValueError):
                self._writer.wait_merging_threads()
        self._writer = None
        self._index = None
        self.writable = False

    # -- writing -----------------------------------------------------------------------------
    def _require_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            raise ValueError(f"index {self.spec.name} is not open for writing")
        return self._writer

    def stage(self, docs: Sequence[dict[str, Any]], delete_ids: Sequence[int], *, upsert: bool) -> None:
        writer = self._require_writer()
        for doc_id in delete_ids:
            writer.delete_documents_by_term("id", doc_id)
        for doc in docs:
            if upsert:
                writer.delete_documents_by_term("id", doc["id"])
            writer.add_document(tantivy.Document(**doc))

    def commit(self) -> None:
        self._commit_writer(self._require_writer())
        assert self._index is not None
        self._index.reload()

    def stage_compaction(self) -> None:
        """Start rewriting the whole index: every document is dropped, and the caller stages the live ones.

        A deleted document's words stay in its segment's files until tantivy merges that segment; tantivy-py
        cannot ask for a merge, so a compaction rewrites the index in one commit, after which the old
        segments (and every word of the deleted documents) are gone. A rollback undoes it whole.
        """
        self._require_writer().delete_all_documents()

    def collect_garbage(self) -> None:
        with contextlib.suppress(ValueError):  # a file still locked is collected next time
            self._require_writer().garbage_collect_files()

    def deleted_docs(self) -> int:
        """Documents deleted but still in their segments' files (tantivy records them in meta.json)."""
        try:
            meta = json.loads((self.path / "meta.json").read_text(encoding="utf-8"))
            return sum(int((seg.get("deletes") or {}).get("num_deleted_docs", 0)) for seg in meta.get("segments", []))
        except (OSError, ValueError, TypeError, AttributeError):
            return 0

    def doc_freq(self, field_name: str, word: str) -> int:
        """How many documents the index files still hold with `word` (deleted ones included until merged)."""
        if self._index is None:
            return 0
        self._index.reload()
        return int(self._index.searcher().doc_freq(field_name, word))

    def _commit_writer(self, writer: tantivy.IndexWriter) -> None:
        """The one call that touches the files; a seam for fault-injection tests."""
        writer.commit()

    def rollback(self) -> None:
        if self._writer is not None:
            self._writer.rollback()

    # -- reading -----------------------------------------------------------------------------
    def search(self, text: str, limit: int, place: str | tuple[str, ...] | None = None) -> list[tuple[int, float]]:
        """BM25 hits (id, score), best first; `place` keeps documents of that place (or of any of several)."""
        if self._index is None:
            raise ValueError(
                f"the {self.spec.name} search index is being rebuilt by another Familiar process; try again shortly"
            )
        if limit <= 0:  # tantivy panics (PanicException, a BaseException) on a limit of 0
            return []
        query, _errors = self._index.parse_query_lenient(text, list(self.spec.search_fields))
        if place is not None:
            places = (place,) if isinstance(place, str) else place
            where = tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "place", p)) for p in places]
            )
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), (tantivy.Occur.Must, where)])
        searcher = self._index.searcher()
        result = searcher.search(query, limit, count=False)
        hits = result.hits
        ids = searcher.fast_field_values("id", [address for _score, address in hits])
        return [(int(i), float(score)) for (score, _a), i in zip(hits, ids, strict=True) if i is not None]

    def num_docs(self) -> int:
        if self._index is None:
            return 0
        self._index.reload()
        return int(self._index.searcher().num_docs)

    def all_ids(self) -> set[int]:
        """Every document id in the index (for the reconciler)."""
        if self._index is None:
            return set()
        self._index.reload()
        searcher = self._index.searcher()
        total = int(searcher.num_docs)
        if total == 0:
            return set()
        hits = searcher.search(tantivy.Query.all_query(), total, count=False).hits
        return {int(i) for i in searcher.fast_field_values("id", [a for _s, a in hits]) if i is not None}


class _OwnerLock:
    """An OS file lock held by the one process that writes an index, for its whole life.

    It is taken before anything in the index folder is touched, so a second process (the CLI while
    the window runs, or another version of Familiar) can never wipe or rebuild a live index. The OS
    releases it when the process dies, even on kill -9.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if sys.platform == "win32":
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if sys.platform == "win32":
                import msvcrt

                with contextlib.suppress(OSError):
                    msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            else:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


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


@dataclass(frozen=True, slots=True)
class IndexTiming:
    """How often a committer looks at SQL for other processes' writes, compacts after removals, and
    compares itself with SQL (seconds)."""

    poll_interval: float = 1.0
    compact_after: float = 5.0
    reconcile_every: float = 300.0


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
    waiters: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)
    purge_waiters: list[asyncio.Future[None]] = field(default_factory=list)


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
    ) -> None:
        self.index = index
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
        self._watermark = 0
        self._upsert = True  # the first round after opening replays as upserts (crash recovery)
        self._rebuild_pending = False  # the rebuilding flag in SQL is cleared once the index caught up
        self._needs_reconcile = True  # once after start-up: the last run may have lost a batch silently
        self._health_file = index.path.with_name(index.path.name + ".health.json")
        self._health_written = 0.0
        self._c = _Counters()
        self._closing = False
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

    async def _run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def start(self) -> None:
        watermark, version, rebuilding = await self._source.load_state()
        created = await self._run_blocking(self.index.open)
        if not self.index.writable:
            # Another process (the running familiar) owns the writer: read what is there, touch nothing.
            self._watermark = watermark
            self._publish()
            return
        if created or version != self.index.spec.schema_version or rebuilding:
            if not created:
                await self._run_blocking(self._recreate)
            watermark = 0
            self._c.rebuilt_at_start = True
            self._rebuild_pending = True
            await self._source.save_state(
                watermark=0, schema_version=self.index.spec.schema_version, rebuilding=True, outbox_upto=None
            )
        self._watermark = watermark
        # Words of documents removed before a restart (the last run ended before compacting) still
        # sit in the files: compact them away soon.
        leftover = await self._run_blocking(self.index.deleted_docs)
        if leftover:
            self._schedule_compaction(leftover)
        self._task = asyncio.create_task(self._loop(), name=f"index-committer-{self.index.spec.name}")
        self.notify()

    def _recreate(self) -> None:
        self.index.wipe()
        self.index.open()

    async def close(self) -> None:
        self._closing = True
        self._write_health_file(force=True)
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
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
        self._wake.set()

    @property
    def watermark(self) -> int:
        return self._watermark

    async def flush(self, timeout: float = 30.0) -> None:
        """Wait until everything SQL has now is committed to the index."""
        target = await self._source.newest_id()
        if self._watermark >= target and not await self._source.removals(1):
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._c.waiters.append((target, fut))
        self._hurry.set()
        self.notify()
        await asyncio.wait_for(fut, timeout)

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
        )

    def _publish(self) -> None:
        self._write_health_file()
        if self._on_health is not None:
            try:
                self._on_health(self.health())
            except Exception:  # noqa: BLE001 - a listener must never stop indexing
                _log.exception("index health listener failed")

    def _write_health_file(self, *, force: bool = False) -> None:
        """The writer shares its health with other processes (`familiar index status` beside the window)."""
        if not self.index.writable:
            return
        now = time.monotonic()
        if not force and now - self._health_written < 0.5 and not self._c.live_attempt:
            return
        self._health_written = now
        health = self.health()
        data = {k: getattr(health, k) for k in health.__slots__}
        data["pid"] = os.getpid()
        tmp = self._health_file.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(data), encoding="utf-8")
            tmp.replace(self._health_file)
        except OSError as exc:  # a locked file must not stop indexing; the next publish retries
            _log.debug("could not write %s: %s", self._health_file, exc)

    def shared_health(self) -> IndexHealth | None:
        """The health the writing process last shared, when this process only reads the index."""
        try:
            data = json.loads(self._health_file.read_text(encoding="utf-8"))
            data.pop("pid", None)
            return IndexHealth(**data)
        except (OSError, ValueError, TypeError):
            return None

    def _seconds_to_next_chore(self) -> float:
        now = time.monotonic()
        waits = [self._poll_interval, self._reconciled_at + self._reconcile_every - now]
        if self._compact_due is not None:
            waits.append(self._compact_due - now)
        return max(0.0, min(waits))

    async def _loop(self) -> None:
        while not self._closing:
            # Not woken in time: look at SQL for another process's writes, or do a chore.
            woken = await wait_set(self._wake, self._seconds_to_next_chore())
            self._wake.clear()
            if woken and self._linger and not self._hurry.is_set():
                # Let a burst of appends gather into one commit, unless someone waits for a flush.
                await wait_set(self._hurry, self._linger)
            self._hurry.clear()
            try:
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
            except Exception as exc:  # noqa: BLE001 - keep the familiar running whatever the index does
                self._c.failures += 1
                self._c.last_error = _one_line(exc)
                self._c.live_attempt = 0
                _log.warning("index %s: round failed: %s", self.index.spec.name, self._c.last_error)
                self._needs_reconcile = True
                self._publish()
                await asyncio.sleep(self._failure_pause)
                self._wake.set()
                continue
            self._settle_waiters(idle=True)

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
            if self._rebuild_pending or self._upsert:
                await self._finish_rebuild()
            return False
        delete_ids = [doc_id for _oid, doc_id in removals]
        landed = await self._commit_with_retries(docs, delete_ids)
        if not landed:
            self._upsert = True
            self._publish()
            await asyncio.sleep(self._failure_pause)
            return True
        self._watermark = reached
        await self._source.save_state(
            watermark=reached,
            schema_version=self.index.spec.schema_version,
            rebuilding=self._rebuild_pending and reached < newest,
            outbox_upto=max((oid for oid, _d in removals), default=None),
        )
        self._c.commits += 1
        self._c.documents += len(docs)
        self._c.pending = 0
        self._c.lag = max(0, newest - reached)
        if delete_ids:
            self._schedule_compaction(len(delete_ids))
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
        except BaseException:
            await self._run_blocking(self._safe_rollback)
            raise
        await self._run_blocking(self.index.collect_garbage)
        self._c.commits += 1
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
        self.notify()
        await asyncio.wait_for(fut, timeout)

    async def _finish_rebuild(self) -> None:
        await self._source.save_state(
            watermark=self._watermark, schema_version=self.index.spec.schema_version, rebuilding=False, outbox_upto=None
        )
        self._upsert = False
        self._rebuild_pending = False

    async def _commit_with_retries(self, docs: list[dict[str, Any]], delete_ids: list[int]) -> bool:
        upsert = self._upsert
        for attempt in range(1, self._max_attempts + 1):
            try:
                await self._run_blocking(self._stage_and_commit, docs, delete_ids, upsert)
                if self._c.live_attempt:
                    self._c.live_attempt = 0
                    self._c.last_error = None
                return True
            except ValueError as exc:
                await self._run_blocking(self._safe_rollback)
                self._c.last_error = _one_line(exc)
                if not is_transient(exc):
                    _log.error("index %s: commit failed: %s", self.index.spec.name, self._c.last_error)
                    break
                upsert = True  # a failed commit may have lost part of the batch: replay as upserts
                if attempt == self._max_attempts:
                    break
                self._c.retries += 1
                self._c.live_attempt = attempt + 1
                self._publish()
                await asyncio.sleep(self._backoff * (2 ** (attempt - 1)))
        self._c.failures += 1
        self._c.live_attempt = 0
        self._needs_reconcile = True
        _log.warning(
            "index %s: %d documents could not be committed (%s); SQL keeps them and the index will catch up",
            self.index.spec.name,
            len(docs),
            self._c.last_error,
        )
        return False

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
        if not await self._commit_with_retries(docs, extra):
            raise ValueError(f"index {self.index.spec.name}: reconcile could not commit ({self._c.last_error})")
        self._c.commits += 1
        self._c.documents += len(docs)
        self._publish()
        return len(missing) + len(extra)

    async def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Drop the index and build it again from SQL; `progress(done, total)` after each commit."""
        if not self.index.writable:
            raise ValueError(
                f"another Familiar process is writing the {self.index.spec.name} index;"
                " rebuild it from that window, or stop it first"
            )
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._source.save_state(
            watermark=0, schema_version=self.index.spec.schema_version, rebuilding=True, outbox_upto=None
        )
        await self._run_blocking(self._recreate)
        self._watermark = 0
        self._upsert = False
        self._purged(self._c.awaiting_purge)  # a rebuilt index holds no removed document
        total = await self._source.newest_id()
        done = 0
        while True:
            docs, reached = await self._source.documents_after(self._watermark, self._batch)
            if reached <= self._watermark:
                break
            if not await self._commit_with_retries(docs, []):
                raise ValueError(f"index {self.index.spec.name}: rebuild could not commit ({self._c.last_error})")
            self._watermark = reached
            done += len(docs)
            await self._source.save_state(
                watermark=reached, schema_version=self.index.spec.schema_version, rebuilding=True, outbox_upto=None
            )
            if progress is not None:
                progress(reached, total)
        await self._source.save_state(
            watermark=self._watermark,
            schema_version=self.index.spec.schema_version,
            rebuilding=False,
            outbox_upto=None,
        )
        self._closing = False
        self._task = asyncio.create_task(self._loop(), name=f"index-committer-{self.index.spec.name}")
        self.notify()
        return done

    async def backlog(self, watermark: int | None = None) -> tuple[int, int]:
        """(documents to add, documents to remove) for this index, counted in SQL now; from the
        committer's own watermark unless another is given."""
        return await self._source.backlog(self._watermark if watermark is None else watermark)

    async def status(self) -> IndexHealth:
        """Health with lag measured from SQL now (meaningful in a process that is not the writer too)."""
        watermark, _version, _rebuilding = await self._source.load_state()
        newest = await self._source.newest_id()
        health = self.health()
        if not self.index.writable:
            shared: IndexHealth | None = await asyncio.to_thread(self.shared_health)
            health = shared or health
        return dataclasses.replace(health, lag=max(0, newest - watermark), watermark=watermark)

    async def search(
        self, text: str, limit: int, place: str | tuple[str, ...] | None = None
    ) -> list[tuple[int, float]]:
        started = time.perf_counter()
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


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__
