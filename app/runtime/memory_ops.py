"""The owner's memory operations, as the CLI and the window call them: facts, forget, tombstones,
recall, export and import, index status and rebuild. Store errors become one-line FamiliarErrors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from app.memory.committer import PreparedRebuild
from app.memory.errors import IndexUnavailableError, StoreError
from app.memory.errors import RebuildCancelledError as IndexRebuildCancelledError
from app.memory.export import export_records, import_records
from app.memory.facts import Fact, FactChain, ForgetReceipt, NewFact, Tombstone
from app.memory.history import History
from app.memory.records import IndexHealth, Turn
from app.runtime.errors import FamiliarError

OWNER_KEY = "local:owner"


@asynccontextmanager
async def _explained() -> AsyncIterator[None]:
    try:
        yield
    except (StoreError, ValueError) as exc:
        raise FamiliarError(str(exc)) from exc


@dataclass(frozen=True, slots=True)
class FactDetail:
    chain: FactChain
    sources: tuple[Turn, ...]
    related: tuple[Fact, ...]  # current facts of the same subjects and scope it may duplicate or supersede


@dataclass(frozen=True, slots=True)
class PendingQueue:
    """The owner's pending queue: pending facts, oldest first, with their sources."""

    facts: tuple[Fact, ...]
    snoozed_hidden: int  # pending facts left out because their snooze has not ended (0 when included)


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
    an index, always sent, is exact with done == total. A cancelled rebuild ends with `cancelled`
    (of the index it was building) instead."""

    event: Literal["start", "progress", "cancelled"]
    index: str
    done: int
    total: int
    percent: float


class RebuildCancelledError(FamiliarError):
    """The rebuild was cancelled: every index answers exactly as it did before."""


@dataclass(frozen=True, slots=True)
class IndexPurge:
    """Where removed documents' words stand in one index's files after a forget: "purged" here,
    "running" (the familiar running elsewhere purges them within seconds) or "pending" (the index is
    locked: they leave its files once the lock is gone; search already leaves them out)."""

    status: Literal["purged", "running", "pending"]
    reason: str | None = None


class MemoryOps:
    def __init__(self, history: History, lorebook: Path) -> None:
        self._history = history
        self._lorebook = lorebook

    async def list_facts(
        self,
        *,
        status: str = "active",
        subject: str | None = None,
        world_at: datetime | None = None,
        recorded_at: datetime | None = None,
        limit: int = 200,
    ) -> list[Fact]:
        """Current truth, or the bi-temporal slice (FactBook.list_facts), each fact with its sources."""
        async with _explained():
            return await self._history.facts.list_facts(
                status=status, subject=subject, world_at=world_at, recorded_at=recorded_at, limit=limit
            )

    async def pending(
        self, *, include_snoozed: bool = False, subject: str | None = None, limit: int = 200
    ) -> PendingQueue:
        """The owner's queue (FactBook.pending): pending heads, oldest first, without the snoozed ones
        until their snooze ends, unless `include_snoozed`."""
        limit = max(1, min(limit, 10_000))
        book = self._history.facts
        async with _explained():
            shown = await book.pending(limit=limit, include_snoozed=include_snoozed, subject=subject)
            hidden = 0 if include_snoozed else await book.snoozed_count(subject=subject)
            return PendingQueue(facts=tuple(shown), snoozed_hidden=hidden)

    async def show(self, fact_id: int) -> FactDetail:
        async with _explained():
            chain = await self._history.facts.chain(fact_id)
            turn_ids = sorted({t for f in chain.facts for t in f.source_turn_ids})
            fact = next(f for f in chain.facts if f.id == fact_id)
            related = await self._history.facts.related_current(fact) if fact.status == "pending" else []
            return FactDetail(
                chain=chain,
                sources=tuple(await self._history.store.turns_by_ids(turn_ids)),
                related=tuple(related),
            )

    async def remember(
        self,
        text: str,
        where: str,
        *,
        subjects: tuple[str, ...] = (),
        fact_type: str = "semantic",
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
    ) -> tuple[str, Fact | None]:
        """The owner's explicit path: inserts active (unless it duplicates a current fact or is tombstoned)."""
        async with _explained():
            outcome = await self._history.insert_fact(
                NewFact(
                    content=text,
                    type=fact_type,
                    importance=7,
                    confidence=1.0,
                    subjects=subjects,
                    place=where,
                    speaker=OWNER_KEY,
                    valid_from=valid_from,
                    valid_to=valid_to,
                    origin="remember",
                    channel_scoped="/" in where,
                )
            )
            if outcome.outcome == "tombstoned":
                raise FamiliarError(
                    "that fact was forgotten before and is blocked by a tombstone; lift the tombstone first"
                )
            return outcome.outcome, outcome.fact

    async def accept(self, fact_id: int, revision: int) -> Fact:
        async with _explained():
            return await self._history.facts.accept(fact_id, revision)

    async def reject(self, fact_id: int, revision: int) -> Fact:
        async with _explained():
            return await self._history.facts.reject(fact_id, revision)

    async def snooze(self, fact_id: int, revision: int, until: datetime | None = None) -> Fact:
        async with _explained():
            return await self._history.facts.snooze(fact_id, revision, until or datetime.now(UTC) + timedelta(days=1))

    async def archive(self, fact_id: int, revision: int) -> Fact:
        """An active fact leaves current truth (it stays in the history slices); the revision seen is checked."""
        async with _explained():
            return await self._history.facts.archive(fact_id, revision)

    async def edit(self, fact_id: int, revision: int, text: str) -> Fact:
        async with _explained():
            return await self._history.edit_fact(fact_id, revision, text)

    async def forget(self, fact_id: int, *, revision: int | None = None, redact_sources: bool = False) -> ForgetReceipt:
        async with _explained():
            return await self._history.forget_fact(fact_id, revision=revision, redact_sources=redact_sources)

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
                    if committer.state == "locked":
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

    async def tombstones(self) -> list[Tombstone]:
        async with _explained():
            return await self._history.facts.tombstones()

    async def lift_tombstone(self, tombstone_id: int) -> Tombstone:
        async with _explained():
            return await self._history.facts.lift_tombstone(tombstone_id)

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
        await self._history.catch_up(300)  # a locked index catches up by itself once the lock is gone
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
