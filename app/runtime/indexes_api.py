"""`facade.indexes`: the search indexes' health and their rebuild, with progress and cancel.

A rebuild is cancelled by cancelling the task awaiting `rebuild()` (the window's Cancel does that).
What a cancelled rebuild leaves behind is the committer's business (app/memory/fts.py): building the
new index beside the old one and swapping only once it is complete keeps the old one answering.
"""

from __future__ import annotations

from collections.abc import Callable

from app.memory.errors import StoreError
from app.memory.history import History
from app.runtime.errors import FamiliarError
from app.runtime.memory_ops import IndexStatus, MemoryOps, RebuildProgress
from app.runtime.views import IndexState, IndexStatusView, Progress

INDEX_WORDS = {"turns": "messages", "facts": "facts"}


def index_view(status: IndexStatus) -> IndexStatusView:
    health = status.health
    if health.failures and health.last_error and health.pending and not health.live_attempt:
        state: IndexState = "failing"
    elif health.live_attempt or health.pending or health.lag or health.state in ("locked", "rebuilding"):
        state = "catching_up"
    else:
        state = "ok"
    return IndexStatusView(
        name=health.name,
        state=state,
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
        state_line=health.state_line(),
    )


def rebuild_progress(step: RebuildProgress) -> Progress:
    """A rebuild step as the window's one progress type."""
    what = INDEX_WORDS.get(step.index, step.index)
    return Progress(label=f"Rebuilding the {what} index", done=step.done, total=step.total)


class IndexesService:
    def __init__(self, ops: MemoryOps, history: History) -> None:
        self._ops = ops
        self._history = history

    async def status(self) -> list[IndexStatusView]:
        """Each index's health, with its backlog counted in SQL now."""
        return [index_view(s) for s in await self._ops.index_status()]

    async def rebuild(
        self,
        progress: Callable[[Progress], None] | None = None,
        *,
        steps: Callable[[RebuildProgress], None] | None = None,
    ) -> dict[str, int]:
        """Rebuild every index from the store; returns the documents indexed per index. `progress` gets
        the window's progress type, `steps` the detailed events (start, then one per commit, always a
        last exact one). Cancel it by cancelling the awaiting task."""

        def report(step: RebuildProgress) -> None:
            if steps is not None:
                steps(step)
            if progress is not None:
                progress(rebuild_progress(step))

        return await self._ops.rebuild_indexes(report)

    async def catch_up(self, timeout: float = 60.0) -> None:
        """When this process writes the indexes: wait until they hold everything the store has (a
        one-shot command, before it searches)."""
        try:
            await self._history.catch_up(timeout)
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
