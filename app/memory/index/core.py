"""What the committer's jobs share: the index, SQL (the canonical store, as an `IndexSource`), the one worker
thread every blocking index call runs on, the numbers IndexHealth publishes, and the state.

SQL commits first and is canonical: the index follows it from a watermark (the highest SQL id it holds),
which SQL records too, so a restart goes on from there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from app.memory.fts import FtsIndex
from app.memory.index import COMMITTER_LOG
from app.memory.index.health_file import HealthFile
from app.memory.records import IndexHealth, IndexState

_log = logging.getLogger(COMMITTER_LOG)


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
class Counters:
    """The numbers IndexHealth publishes, kept by the jobs that change them."""

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


def utc_now() -> datetime:
    return datetime.now(UTC)


class IndexCore:
    """One index's shared state. Each job reads and moves what its docstring says; none owns all of it."""

    def __init__(
        self,
        index: FtsIndex,
        source: IndexSource,
        executor: ThreadPoolExecutor,
        health_file: HealthFile,
        *,
        batch_size: int,
        on_health: Callable[[IndexHealth], None] | None,
    ) -> None:
        self.index = index
        self.source = source
        self.executor = executor
        self.health_file = health_file
        self.batch = batch_size
        self._on_health = on_health
        self.c = Counters()
        self.watermark = 0
        self.state = IndexState.STARTING
        self.upsert = True  # the first round after opening replays as upserts (crash recovery)
        self.needs_reconcile = True  # once after start-up: the last run may have lost a batch silently
        self.rebuild_reason: str | None = None  # the live index must be rebuilt (beside it) before use
        self.closing = False
        self.wake = asyncio.Event()

    @property
    def name(self) -> str:
        return self.index.spec.name

    async def run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` on the index's one worker thread (tantivy calls block)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def setup_needed(self) -> bool:
        """The index must be opened (it was locked) or rebuilt beside before a round can run."""
        return not self.index.is_open or self.rebuild_reason is not None

    def set_state(self, state: IndexState) -> None:
        changed = state != self.state
        self.state = state
        if changed:
            self.share_health(force=True)
        self.publish()

    def health(self) -> IndexHealth:
        c = self.c
        return IndexHealth(
            name=self.name,
            commits=c.commits,
            documents_committed=c.documents,
            retries=c.retries,
            live_attempt=c.live_attempt,
            failures=c.failures,
            last_error=c.last_error,
            pending=c.pending,
            lag=c.lag,
            watermark=self.watermark,
            rebuilt_at_start=c.rebuilt_at_start,
            awaiting_purge=c.awaiting_purge,
            state=self.state,
            locked_attempts=c.locked_attempts,
            last_commit_at=c.last_commit_at,
            backlog_since=c.backlog_since,
            recovered_after=c.recovered_after,
            recovered_at=c.recovered_at,
            disk_full=c.disk_full,
        )

    def publish(self) -> None:
        """Tell the health listener (the window) and, throttled, the shared health file."""
        self.share_health()
        if self._on_health is not None:
            try:
                self._on_health(self.health())
            except Exception:  # noqa: BLE001 - a listener must never stop indexing
                _log.exception("index health listener failed")

    def share_health(self, *, force: bool = False) -> None:
        """The writer shares its health with other processes (`familiar index status` beside the window)."""
        if not self.index.owned:
            return
        self.health_file.share(self.health, force=force, retrying=bool(self.c.live_attempt))

    def rollback(self) -> None:
        """Drop what was staged (blocking: on the worker thread); a rollback that fails is only logged."""
        try:
            self.index.rollback()
        except ValueError as exc:
            _log.warning("index %s: rollback failed: %s", self.name, exc)
