"""`facade.indexes`: the search indexes' health, their rebuild, and the embeddings' coverage and re-embed,
with progress and cancel.

A rebuild or a re-embed is cancelled by cancelling the task awaiting it (the window's Cancel does that).
Both build beside what answers now and swap only once complete, so a cancel leaves every search
answering exactly as before: the tantivy indexes are rebuilt in a sibling folder (the committer's
business, app/memory/committer.py), and a re-embed writes its vectors under a model name reads never
use (app/memory/embeddings.py `reembed_staging`), then swaps them in with one transaction.

The state of each index is a traffic light (app/runtime/index_health.py): "ok" (green), "catching_up"
(amber: locked and retrying, being rebuilt, or behind for longer than a moment) and "failing" (red:
commits fail with an error that is not a lock; for embeddings, vectors nothing will make).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from app.memory.embeddings import REEMBED_SUFFIX, Embedder, EmbeddingError, EmbeddingIndex, reembed_staging
from app.memory.errors import StoreError
from app.memory.history import History
from app.memory.liveness import LoopHealth
from app.runtime.api.memory_ops import IndexStatus, MemoryOps, RebuildProgress
from app.runtime.api.views import (
    BackgroundTaskView,
    EmbeddingModelView,
    EmbeddingState,
    EmbeddingStatusView,
    IndexStatusView,
    Progress,
)
from app.runtime.changes import ChangeBroadcaster
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind
from app.runtime.index_health import state_line, traffic_light

INDEX_WORDS = {"turns": "messages", "facts": "facts"}
TASK_WORDS = {
    "index-committer-turns": "the messages index committer",
    "index-committer-facts": "the facts index committer",
    "memory-projectors": "the memory workers",
    "memory-change-poll": "the change poll",  # what the command line and the workers write reaches the window
    "lorebook-watch": "the lorebook watcher",  # a change to lorebook.toml on disk is read
    "deferred-forgets": "the deferred forgets",  # a forget is applied when its undo window ends
}
EMBEDDING_WORKER = "fact_embedding"
REEMBED_BATCH = 64  # facts per embedder call: a cancel waits for at most one batch

REBUILD_ELSEWHERE = (
    "another Familiar process writes the search indexes: if it is the window, rebuild them there"
    " (Index health, then Rebuild indexes); if it is `familiar run --headless`, stop it and rebuild again"
)


def _now() -> datetime:
    return datetime.now(UTC)


def index_view(status: IndexStatus, now: datetime | None = None) -> IndexStatusView:
    health = status.health
    return IndexStatusView(
        name=health.name,
        state=traffic_light(
            state=health.state,
            live_attempt=health.live_attempt,
            failures=health.failures,
            last_error=health.last_error,
            pending=health.pending,
            lag=health.lag,
            backlog_since=health.backlog_since,
            now=now or _now(),
        ),
        commits=health.commits,
        documents_committed=health.documents_committed,
        retries=health.retries,
        live_attempt=health.live_attempt,
        failures=health.failures,
        last_error=health.last_error,
        pending=health.pending,
        lag=health.lag,
        watermark=health.watermark,
        rebuilt_at_start=health.rebuilt_at_start,
        awaiting_purge=health.awaiting_purge,
        to_add=status.to_add,
        to_remove=status.to_remove,
        health_state=health.state,
        locked_attempts=health.locked_attempts,
        state_line=state_line(health.state, health.locked_attempts, health.last_error),
        indexed=status.indexed,
        source_rows=status.source_rows,
        backlog_since=health.backlog_since if health.pending else None,
        last_commit_at=health.last_commit_at,
        size_bytes=status.size_bytes,
        recovered_after=health.recovered_after,
        recovered_at=health.recovered_at,
        written_here=status.written_here,
        disk_full=health.disk_full,
    )


def rebuild_progress(step: RebuildProgress, position: int = 0, count: int = 0) -> Progress:
    """A rebuild step as the window's one progress type (`position` of `count` indexes, when known)."""
    what = INDEX_WORDS.get(step.index, step.index)
    of = f" ({position} of {count})" if count > 1 and position else ""
    return Progress(label=f"Rebuilding the {what} index{of}", done=step.done, total=step.total)


def embedding_view(
    backend: str,
    model: str | None,
    worker_enabled: bool,
    stats_current: int,
    stats_missing: int,
    oldest_missing_at: datetime | None,
    models: Sequence[EmbeddingModelView],
) -> EmbeddingStatusView:
    """The embeddings' status from what the store counted (see EmbeddingStatusView)."""
    active = next((m for m in models if m.active), None)
    unused = sum(m.vectors for m in models if not m.active and not m.reembedding)
    covered = stats_current - stats_missing if model is not None else 0
    state: EmbeddingState
    if model is None:
        state = "off"
        line = "off (set [providers.embedding] backend in character.toml to hash or fastembed)"
        if unused:
            line += f"; {unused:,} vectors of an earlier model are not used"
    elif any(m.reembedding for m in models):
        state, line = "catching_up", "re-embedding (or a re-embed was interrupted: the next one clears it)"
    elif stats_missing == 0:
        state, line = "ok", f"every current fact has a vector of {model}"
    elif worker_enabled:
        state, line = "catching_up", f"{stats_missing:,} facts still to embed with {model}"
    else:
        state = "failing"
        line = (
            f"{stats_missing:,} facts have no vector of {model}, and the {EMBEDDING_WORKER} worker that makes them"
            " is not in [providers.memory] projectors"
        )
    return EmbeddingStatusView(
        backend=backend,
        model=model,
        state=state,
        state_line=line,
        worker_enabled=worker_enabled,
        facts=stats_current,
        covered=covered,
        oldest_missing_at=oldest_missing_at if model is not None and stats_missing else None,
        last_written_at=active.last_written_at if active is not None else None,
        size_bytes=sum(m.size_bytes for m in models),
        unused_vectors=unused,
        models=tuple(models),
    )


class IndexesService:
    def __init__(
        self,
        ops: MemoryOps,
        history: History,
        *,
        embedder: Callable[[], Embedder | None] = lambda: None,
        embeddings: EmbeddingIndex | None = None,
        backend: Callable[[], str] = lambda: "off",
        workers: Callable[[], Sequence[str]] = lambda: (),
        changes: ChangeBroadcaster | None = None,
        loops: Callable[[], Sequence[LoopHealth]] = lambda: (),
    ) -> None:
        self._ops = ops
        self._history = history
        self._embedder = embedder
        self._embeddings = embeddings or EmbeddingIndex(history.store)
        self._backend = backend
        self._workers = workers
        self._changes = changes
        self._loops = loops

    async def status(self) -> list[IndexStatusView]:
        """Each index's health, with its backlog, documents and source rows counted now."""
        now = _now()
        return [index_view(s, now) for s in await self._ops.index_status()]

    async def tasks(self) -> list[BackgroundTaskView]:
        """The background loops of this process, each running or not, and why one stopped that should run."""
        return [
            BackgroundTaskView(loop.name, TASK_WORDS.get(loop.name, loop.name), loop.running, loop.problem)
            for loop in self._loops()
        ]

    async def rebuild(
        self,
        progress: Callable[[Progress], None] | None = None,
        *,
        steps: Callable[[RebuildProgress], None] | None = None,
    ) -> dict[str, int]:
        """Rebuild every index from the store; returns the documents indexed per index. `progress` gets
        the window's progress type, `steps` the detailed events (start, then one per commit, always a
        last exact one). Cancel it by cancelling the awaiting task."""
        committers = self._history.indexes()
        if not all(c.owns_index for c in committers):
            raise FamiliarError(REBUILD_ELSEWHERE)
        order = {c.index.spec.name: n for n, c in enumerate(committers, 1)}

        def report(step: RebuildProgress) -> None:
            if steps is not None:
                steps(step)
            if progress is not None:
                progress(rebuild_progress(step, order.get(step.index, 0), len(order)))

        return await self._ops.rebuild_indexes(report)

    async def catch_up(self, timeout: float = 60.0) -> None:
        """When this process writes the indexes: wait until they hold everything the store has (a
        one-shot command, before it searches)."""
        try:
            await self._history.catch_up(timeout)
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc

    # -- embeddings ------------------------------------------------------------------------------------
    async def embeddings(self) -> EmbeddingStatusView:
        """Coverage of the active embedding model, and the vectors every model left (a mismatch)."""
        embedder = self._embedder()
        model = embedder.name if embedder is not None else None
        try:
            stats = await self._embeddings.stats(model)
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        models = [
            EmbeddingModelView(
                model=m.model.removesuffix(REEMBED_SUFFIX),
                vectors=m.rows,
                current=m.current,
                size_bytes=m.bytes,
                last_written_at=m.last_written_at,
                active=m.model == model,
                reembedding=m.model.endswith(REEMBED_SUFFIX),
            )
            for m in stats.models
        ]
        return embedding_view(
            self._backend(),
            model,
            EMBEDDING_WORKER in self._workers(),
            stats.current_facts,
            stats.missing,
            stats.oldest_missing_at,
            models,
        )

    async def reembed(
        self, progress: Callable[[Progress], None] | None = None, *, initiator: object | None = None
    ) -> int:
        """Compute every current fact's vector again with the active model; returns how many. The
        old vectors answer until the new ones are all there; a cancel (of the awaiting task) or a
        failure leaves them exactly as they were."""
        embedder = self._embedder()
        if embedder is None:
            raise FamiliarError(
                "embeddings are off: set [providers.embedding] backend in character.toml to hash or fastembed first"
            )
        index = self._embeddings
        staging = reembed_staging(embedder.name)
        label = f"Re-embedding facts with {embedder.name}"
        try:
            dim = await asyncio.to_thread(lambda: embedder.dim)  # fastembed may import itself to tell
            await index.drop_model(staging)  # what an interrupted re-embed left
            total = await index.count_current()
            if progress is not None:
                progress(Progress(label, 0, total))
            done, after = 0, 0
            try:
                while batch := await index.current_facts(after, REEMBED_BATCH):
                    vectors = await asyncio.to_thread(embedder.embed, [text for _id, text in batch])
                    await index.put(staging, dim, [(i, v) for (i, _t), v in zip(batch, vectors, strict=True)])
                    after, done = batch[-1][0], done + len(batch)
                    if progress is not None:
                        progress(Progress(label, min(done, total), max(total, done)))
                swapped = await index.swap_in(staging, embedder.name)
            except BaseException:
                await asyncio.shield(index.drop_model(staging))
                raise
        except (StoreError, EmbeddingError) as exc:  # EmbeddingError is a StoreError; named for the reader
            raise FamiliarError(str(exc)) from exc
        if self._changes is not None:
            await self._changes.wrote({ChangeKind.EMBEDDINGS}, initiator)
        return swapped
