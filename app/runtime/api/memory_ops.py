"""Whole-memory operations under the facade's sub-APIs: export and import, the index files' purge,
index status and rebuild. Store errors become one-line FamiliarErrors. (Facts, forgetting and people
are `facade.memory`: memory.py.)"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, TextIO

from app.config.paths import PRIVATE_FILE
from app.memory.committer import PreparedRebuild
from app.memory.errors import IndexUnavailableError, StoreError
from app.memory.errors import RebuildCancelledError as IndexRebuildCancelledError
from app.memory.export import (
    ImportMarker,
    export_records,
    import_marker,
    import_records,
    mark_import_done,
    unchanged_since,
)
from app.memory.history import History
from app.memory.records import IndexHealth, IndexState
from app.runtime.api.views import IndexPurge
from app.runtime.errors import FamiliarError, RebuildCancelledError

_log = logging.getLogger(__name__)


@asynccontextmanager
async def _explained() -> AsyncIterator[None]:
    try:
        yield
    except StoreError as exc:
        raise FamiliarError(str(exc)) from exc


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """An index's health with its backlog counted in SQL now, whichever process writes the index.

    `health.pending` is documents SQL has that the index does not yet (to add plus to remove);
    `health.lag` is how many rows (ids) the index's watermark is behind SQL's newest row.
    """

    health: IndexHealth
    to_add: int  # documents past the watermark still to be indexed
    to_remove: int  # documents waiting to be removed (forgotten or redacted)
    indexed: int | None = None  # documents the index holds now (None: it cannot be read now)
    source_rows: int | None = None  # documents SQL has for it
    size_bytes: int | None = None  # its files on disk
    written_here: bool = True  # this process writes the index (False: another Familiar process does)


@dataclass(frozen=True, slots=True)
class RebuildProgress:
    """One step of an index rebuild. `start` carries the documents to index; each `progress` follows
    a commit (done is estimated from how far the scan of SQL has got), and the last `progress` of
    an index, always sent, is exact with done == total. A cancelled rebuild ends with `cancelled`
    (of the index it was building) instead."""

    event: Literal["start", "progress", "cancelled"]
    index: str
    done: int
    total: int
    percent: float


class MemoryOps:
    def __init__(
        self, history: History, lorebook: Path, local_keys: Callable[[], Sequence[bytes]] | None = None
    ) -> None:
        """`local_keys`: the tombstone keys of the other familiars on this machine (read off the event
        loop), which an import without its key may find its tombstones' key among."""
        self._history = history
        self._lorebook = lorebook
        self._local_keys = local_keys
        self._finished_imports: set[str] = set()  # imports (file digests) an interruption left, finished here

    async def purge_index_files(self, timeout: float = 300.0) -> dict[str, IndexPurge]:
        """Compact now every index this process writes that holds removed documents' words, so they
        leave the files before a one-shot command exits (see IndexPurge for each index's outcome)."""
        out: dict[str, IndexPurge] = {}
        async with _explained():
            for committer in self._history.indexes():
                name = committer.index.spec.name
                if not committer.owns_index:
                    out[name] = IndexPurge("running")
                    continue
                try:
                    if committer.state is IndexState.LOCKED:
                        _to_add, to_remove = await committer.backlog()
                        if to_remove:  # removals wait in the outbox until the lock is gone
                            out[name] = IndexPurge("pending", committer.unavailable_reason())
                        continue
                    if committer.health().awaiting_purge:
                        await committer.purge(timeout)
                        out[name] = IndexPurge("purged")
                except IndexUnavailableError as exc:
                    out[name] = IndexPurge("pending", str(exc))
        return out

    async def export(self, target: Path, *, with_tombstone_key: bool = False) -> dict[str, int]:
        """Write the whole memory (and the lorebook) as JSON lines; atomically replaces `target`. The
        tombstone key goes in only `with_tombstone_key` (anyone holding the file could then test guesses
        of forgotten texts against its tombstones)."""
        counts: dict[str, int] = {}
        tmp = target.with_name(target.name + ".tmp")
        async with _explained():
            try:
                handle = await asyncio.to_thread(_private_text_file, tmp)
                try:
                    chunk: list[str] = []
                    records = export_records(
                        self._history.store, keys=self._history.tombstones.keys, include_key=with_tombstone_key
                    )
                    async for record in records:
                        chunk.append(json.dumps(record, ensure_ascii=False) + "\n")
                        counts[record["kind"]] = counts.get(record["kind"], 0) + 1
                        if len(chunk) >= 1000:
                            await asyncio.to_thread(handle.writelines, chunk)
                            chunk = []
                    lore_text = await asyncio.to_thread(_read_if_exists, self._lorebook)
                    if lore_text is not None:
                        lore = {"kind": "lore", "file": "lorebook.toml", "text": lore_text}
                        chunk.append(json.dumps(lore, ensure_ascii=False) + "\n")
                        counts["lore"] = 1
                    await asyncio.to_thread(handle.writelines, chunk)
                finally:
                    await asyncio.to_thread(handle.close)
                await asyncio.to_thread(tmp.replace, target)
            except OSError as exc:
                await asyncio.to_thread(tmp.unlink, missing_ok=True)
                raise FamiliarError(f"cannot write {target}: {exc.strerror or exc}") from exc
        counts.pop("header", None)
        return counts

    async def import_(self, source: Path) -> dict[str, int]:
        """Read an export into this (empty) familiar; the lorebook is replaced, the old one kept as .bak.

        All or nothing: the database rows and a marker holding the lorebook text commit together;
        the lorebook write and the index catch-up follow, then the marker is marked done. A process
        killed in between leaves the marker, and the next open (or this command run again) finishes
        the import. Re-running the command with the same file after such an interruption reports the
        import as an uninterrupted run would; otherwise a familiar that already holds that file says so.
        """
        try:
            data = await asyncio.to_thread(source.read_bytes)
            # JSON lines end in "\n" only: a message may hold U+2028 or U+0085, which splitlines() would cut at.
            lines = data.decode("utf-8").split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise FamiliarError(f"cannot read {source}: {exc}") from exc
        digest = hashlib.sha256(data).hexdigest()
        store = self._history.store
        await self.finish_interrupted_import(raise_errors=True)
        async with _explained():
            last = await import_marker(store)
            if last is not None and last.sha256 == digest and await unchanged_since(store, last):
                if digest in self._finished_imports:  # the retry of an import a crash cut short
                    await self._index_imported(wait=True)
                    return dict(last.counts)
                raise FamiliarError(
                    f"{source} is already imported into this familiar (on {last.at[:19].replace('T', ' ')} UTC);"
                    " import needs an empty familiar; nothing was changed"
                )
            local = await asyncio.to_thread(self._local_keys) if self._local_keys is not None else ()
            await import_records(
                store, lines, sha256=digest, file=source.name, keys=self._history.tombstones.keys, local_keys=local
            )
            marker = await import_marker(store)
        _crash_point("import-committed")
        await store.checkpoint()
        assert marker is not None
        await self._finish_import(marker, wait=True)
        return dict(marker.counts)

    async def finish_interrupted_import(self, *, raise_errors: bool = False) -> bool:
        """An import whose process died after its database commit: write its lorebook, let the indexes
        catch up, mark it done. Returns True when there was one. At start-up a failure is logged (the
        marker stays for the next time); `raise_errors` makes it a FamiliarError instead."""
        try:
            async with _explained():
                marker = await import_marker(self._history.store)
            if marker is None or marker.state != "pending":
                return False
            _log.warning("finishing the import of %s, which was interrupted after writing the database", marker.file)
            await self._finish_import(marker, wait=False)
            self._finished_imports.add(marker.sha256)
        except FamiliarError as exc:
            if raise_errors:
                raise
            _log.warning("%s", exc)
            return False
        return True

    async def _finish_import(self, marker: ImportMarker, *, wait: bool) -> None:
        """The steps after the commit: the lorebook, then the indexes (waited for by the import command;
        at start-up they catch up from SQL in the background, as after any crash), then done."""
        if marker.lore is not None:
            try:
                await asyncio.to_thread(_replace_lorebook, self._lorebook, marker.lore)
            except OSError as exc:
                raise FamiliarError(
                    f"the import of {marker.file} is in the database, but {self._lorebook} cannot be written"
                    f" ({exc.strerror or exc}); fix that and run any familiar command to finish it"
                ) from exc
        await self._index_imported(wait=wait)
        async with _explained():
            await mark_import_done(self._history.store, marker)

    async def _index_imported(self, *, wait: bool) -> None:
        for committer in self._history.indexes():
            committer.notify()
        if wait:
            await self._history.catch_up(300)  # a locked index catches up by itself once the lock is gone

    async def index_status(self) -> list[IndexStatus]:
        out: list[IndexStatus] = []
        async with _explained():
            for committer in self._history.indexes():
                health = await committer.status()
                to_add, to_remove = await committer.backlog(health.watermark)
                pending = max(health.pending, to_add + to_remove)
                committed = health.last_commit_at or await committer.last_commit_at()
                out.append(
                    IndexStatus(
                        replace(health, pending=pending, last_commit_at=committed),
                        to_add=to_add,
                        to_remove=to_remove,
                        indexed=await committer.document_count(),
                        source_rows=await committer.source_rows(),
                        size_bytes=await committer.disk_bytes(),
                        written_here=committer.owns_index,
                    )
                )
        return out

    async def rebuild_indexes(
        self,
        progress: Callable[[RebuildProgress], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> dict[str, int]:
        """Rebuild each index from SQL beside the live one; searches answer from the old indexes until
        every new one is complete, then all are swapped in. `progress` gets a start event, one event per
        commit, and a final exact event per index (also for an empty one).

        Cancelling (the task, or `cancelled()` returning True, asked between commits: RebuildCancelledError)
        leaves every index answering exactly as before."""
        out: dict[str, int] = {}
        prepared: list[tuple[str, PreparedRebuild]] = []
        current: list[RebuildProgress] = []

        def send(event: RebuildProgress) -> None:
            current[:] = [event]
            if progress is not None:
                progress(event)

        async with _explained():
            try:
                for committer in self._history.indexes():
                    name = committer.index.spec.name
                    total, _removals = await committer.backlog(0)
                    send(RebuildProgress("start", name, 0, total, 0.0 if total else 100.0))
                    last: list[int] = []

                    def report(
                        reached: int, newest: int, name: str = name, total: int = total, last: list[int] = last
                    ) -> None:
                        share = min(1.0, reached / newest) if newest > 0 else 1.0
                        done = min(total, round(total * share))
                        last[:] = [done]
                        send(RebuildProgress("progress", name, done, total, round(share * 100, 1)))

                    ready = await committer.prepare_rebuild(report, cancelled)
                    prepared.append((name, ready))
                    count = ready.documents
                    if last != [count] or count != total:
                        send(RebuildProgress("progress", name, count, count, 100.0))
            except BaseException as exc:
                for committer, (_name, ready) in zip(self._history.indexes(), prepared, strict=False):
                    await committer.abandon_rebuild(ready)
                if isinstance(exc, IndexRebuildCancelledError):
                    step = current[0] if current else RebuildProgress("start", "turns", 0, 0, 0.0)
                    send(RebuildProgress("cancelled", step.index, step.done, step.total, step.percent))
                    raise RebuildCancelledError(str(exc)) from exc
                raise
            pairs = list(zip(self._history.indexes(), prepared, strict=True))
            for n, (committer, (name, ready)) in enumerate(pairs):
                try:
                    out[name] = await committer.finish_rebuild(ready)
                except BaseException:
                    for later, (_name, waiting) in pairs[n + 1 :]:  # not swapped in: the old ones stay
                        await later.abandon_rebuild(waiting)
                    raise
        return out


def _replace_lorebook(path: Path, text: str) -> None:
    """Put the imported lorebook in place, the old one kept as lorebook.toml.bak; each file is written
    whole or not at all, and doing it again after it was done changes nothing."""
    current = _read_if_exists(path)
    if current == text:
        return
    if current is not None:
        _write_atomically(path.with_name("lorebook.toml.bak"), current)
    _write_atomically(path, text)


def _private_text_file(path: Path) -> TextIO:
    """A new file for writing, readable by the owner only (an export holds every message): a leftover
    file of that name, whatever its mode, is replaced, never reused."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    return os.fdopen(fd, "w", encoding="utf-8")


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _crash_point(name: str) -> None:
    """For tests only: FAMILIAR_TEST_CRASH_AT=<name> kills the process here the way kill -9 would, to
    prove what an interrupted operation leaves behind is finished later. Never set in normal use."""
    if os.environ.get("FAMILIAR_TEST_CRASH_AT") == name:
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))


def _read_if_exists(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
