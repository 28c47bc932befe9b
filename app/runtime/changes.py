"""One change broadcast: `MemoryChanged` after every write, worker tick and foreign write, and when a file
the owner edits (lorebook.toml, character.toml and character.md) changes on disk.

The store keeps trigger-maintained change counters per table (and turns have ever-growing ids), in
every process that writes. The broadcaster remembers the marks it last saw:
- after a facade write, `wrote(kinds, initiator)` publishes the kinds that write touched with the
  caller's initiator, and anything else that moved meanwhile separately, without one;
- after a memory-worker tick, and on a short poll (for the CLI writing beside the window, and the
  conversation's own turns), `check()` publishes whatever moved, without an initiator.
Reads are one small query; a burst of writes between two looks becomes one event. The files are looked at
on the same poll, by their size and modification time (a stat each): a pane editing one hears of a change
within about a second instead of reading the file again on a timer of its own.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from app.memory.derived import change_marks
from app.memory.errors import STORE_FAILURES
from app.memory.liveness import LoopHealth, LoopWatch, end_task
from app.memory.store import Store
from app.runtime.events import ChangeKind, MemoryChanged, RuntimeEvent

_log = logging.getLogger(__name__)

POLL_SECONDS = 0.5  # foreign writes reach the window within about a second

COUNTER_KINDS: dict[str, ChangeKind] = {
    "turns": ChangeKind.TURNS,
    "facts": ChangeKind.FACTS,
    "fact_embeddings": ChangeKind.EMBEDDINGS,
    "summaries": ChangeKind.SUMMARIES,
    "people_dossiers": ChangeKind.DOSSIERS,
    "reflections": ChangeKind.REFLECTIONS,
    "memory_pause": ChangeKind.PAUSE,
    "tombstones": ChangeKind.TOMBSTONES,
    "scheduled_forgets": ChangeKind.FORGETS,
    "forget_receipts": ChangeKind.FORGETS,
    "places": ChangeKind.PLACES,
    "lore_timed_effects": ChangeKind.LORE,
}


class ChangeBroadcaster:
    def __init__(
        self,
        store: Store,
        publish: Callable[[RuntimeEvent], None],
        *,
        poll_seconds: float = POLL_SECONDS,
        files: Mapping[ChangeKind, Sequence[Path]] | None = None,
    ) -> None:
        self._store = store
        self._publish = publish
        self._poll_seconds = poll_seconds
        self._marks: dict[str, int] | None = None
        self._files = dict(files or {})
        self._stamps: dict[ChangeKind, tuple[tuple[int, int] | None, ...]] | None = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._watch = LoopWatch("memory-change-poll")

    async def _moved(self) -> frozenset[ChangeKind]:
        """The kinds whose marks moved since the last look (the first look only sets the marks)."""
        files = self._files_moved()
        marks = await change_marks(self._store)
        before, self._marks = self._marks, marks
        if before is None:
            return files
        return files | frozenset(
            COUNTER_KINDS[n] for n, v in marks.items() if n in COUNTER_KINDS and before.get(n) != v
        )

    def _files_moved(self) -> frozenset[ChangeKind]:
        stamps = {kind: tuple(_stamp(path) for path in paths) for kind, paths in self._files.items()}
        before, self._stamps = self._stamps, stamps
        if before is None:
            return frozenset()
        return frozenset(kind for kind, stamp in stamps.items() if before.get(kind) != stamp)

    async def prime(self) -> None:
        async with self._lock:
            await self._moved()

    async def wrote(self, kinds: Iterable[ChangeKind], initiator: object | None = None) -> None:
        """A facade write finished: publish what it touched with its initiator, and whatever else moved
        since the last look without one (a side effect counts as someone else's change: at worst an
        extra refresh, never a missed one)."""
        declared = frozenset(kinds)
        async with self._lock:
            try:
                moved = await self._moved()
            except STORE_FAILURES as exc:  # the write itself succeeded: never fail it for the broadcast
                _log.warning("could not read the change counters: %s", exc)
                moved = frozenset()
        self._publish(MemoryChanged(kinds=declared, initiator=initiator))
        if moved - declared:
            self._publish(MemoryChanged(kinds=moved - declared))

    async def check(self) -> frozenset[ChangeKind]:
        """Publish whatever moved since the last look (a worker tick, another process); returns it."""
        async with self._lock:
            moved = await self._moved()
        if moved:
            self._publish(MemoryChanged(kinds=moved))
        return moved

    def start(self) -> None:
        """Poll for foreign writes until `close()`."""
        if self._task is None:
            self._task = asyncio.create_task(self._poll(), name="memory-change-poll")
            self._watch.started(self._task)

    def loop_health(self) -> LoopHealth:
        return self._watch.health()

    async def _poll(self) -> None:
        # The marks were taken at open (`prime`): a write between then and the first look is published too.
        while True:
            self._watch.waiting(self._poll_seconds)
            await asyncio.sleep(self._poll_seconds)
            self._watch.working()
            try:
                await self.check()
            except STORE_FAILURES as exc:
                _log.warning("could not read the change counters: %s", exc)
            except ValueError as exc:  # the store was closed under us: the familiar is closing
                _log.debug("change poll stopped: %s", exc)
                return

    async def close(self) -> None:
        self._watch.stopped()
        task, self._task = self._task, None
        await end_task(task)


def _stamp(path: Path) -> tuple[int, int] | None:
    """A file's size and modification time (None: not there, or not to be looked at now)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_size, found.st_mtime_ns)
