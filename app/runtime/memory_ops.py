"""Whole-memory operations under the facade's sub-APIs: export and import, the index files' purge,
index status and rebuild. Store errors become one-line FamiliarErrors. (Facts, forgetting and people
are `facade.memory`: memory_api.py.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from app.memory.errors import StoreError
from app.memory.export import export_records, import_records
from app.memory.history import History
from app.memory.records import IndexHealth
from app.runtime.errors import FamiliarError


@asynccontextmanager
async def _explained() -> AsyncIterator[None]:
    try:
        yield
    except (StoreError, ValueError) as exc:
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


@dataclass(frozen=True, slots=True)
class RebuildProgress:
    """One step of an index rebuild. `start` carries the documents to index; each `progress` follows
    a commit (done is estimated from how far the scan of SQL has got), and the last `progress` of
    an index, always sent, is exact with done == total."""

    event: Literal["start", "progress"]
    index: str
    done: int
    total: int
    percent: float


class MemoryOps:
    def __init__(self, history: History, lorebook: Path) -> None:
        self._history = history
        self._lorebook = lorebook

    async def purge_index_files(self, timeout: float = 300.0) -> dict[str, bool]:
        """Compact now every index this process writes that holds removed documents' words, so they
        leave the files before a one-shot command exits. Per index: True = purged here, False = the
        running familiar owns the index and compacts it within seconds by itself."""
        out: dict[str, bool] = {}
        async with _explained():
            for committer in self._history.indexes():
                name = committer.index.spec.name
                if not committer.index.writable:
                    out[name] = False
                elif committer.health().awaiting_purge:
                    await committer.purge(timeout)
                    out[name] = True
        return out

    async def export(self, target: Path) -> dict[str, int]:
        """Write the whole memory (and the lorebook) as JSON lines; atomically replaces `target`."""
        counts: dict[str, int] = {}
        tmp = target.with_name(target.name + ".tmp")
        async with _explained():
            try:
                handle = await asyncio.to_thread(tmp.open, "w", encoding="utf-8")
                try:
                    chunk: list[str] = []
                    async for record in export_records(self._history.store):
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
        """Read an export into this (empty) familiar; the lorebook is replaced, the old one kept as .bak."""
        try:
            # JSON lines end in "\n" only: a message may hold U+2028 or U+0085, which splitlines() would cut at.
            lines = (await asyncio.to_thread(source.read_text, encoding="utf-8")).split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise FamiliarError(f"cannot read {source}: {exc}") from exc
        lore = [r for r in _records(lines) if r.get("kind") == "lore"]
        async with _explained():
            counts = await import_records(self._history.store, lines)
            await self._history.store.checkpoint()
        counts.pop("skipped:lore", None)
        if lore:
            text = str(lore[-1].get("text", ""))
            await asyncio.to_thread(_replace_lorebook, self._lorebook, text)
            counts["lore"] = 1
        for committer in self._history.indexes():
            committer.notify()
            if committer.index.writable:
                await committer.flush(300)
        return counts

    async def index_status(self) -> list[IndexStatus]:
        out: list[IndexStatus] = []
        async with _explained():
            for committer in self._history.indexes():
                health = await committer.status()
                to_add, to_remove = await committer.backlog(health.watermark)
                pending = max(health.pending, to_add + to_remove)
                out.append(IndexStatus(replace(health, pending=pending), to_add=to_add, to_remove=to_remove))
        return out

    async def rebuild_indexes(self, progress: Callable[[RebuildProgress], None] | None = None) -> dict[str, int]:
        """Rebuild each index from SQL; `progress` gets a start event, one event per commit, and a
        final exact event per index (also for an empty one)."""
        out: dict[str, int] = {}

        def send(event: RebuildProgress) -> None:
            if progress is not None:
                progress(event)

        async with _explained():
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

                out[name] = count = await committer.rebuild(report)
                if last != [count] or count != total:
                    send(RebuildProgress("progress", name, count, count, 100.0))
        return out


def _replace_lorebook(path: Path, text: str) -> None:
    if path.exists():
        path.replace(path.with_name("lorebook.toml.bak"))
    path.write_text(text, encoding="utf-8")


def _read_if_exists(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _records(lines: list[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            yield record
