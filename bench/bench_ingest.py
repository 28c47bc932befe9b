"""Turn ingest with the index: group commits vs the reference commit-per-document approach.

Prints live-append and bulk-import throughput and their ratios against a commit-per-document
baseline measured in the same process (targets: live >= 40x, bulk >= 20,000 turns/s), and the
process's peak memory before and after the bulk import (--bulk 1000000 for the figure at a million turns).

    python -m bench.bench_ingest [--baseline N] [--live N] [--bulk N]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import tantivy

from app.memory.fts import TURNS
from app.memory.history import History
from app.memory.records import NewTurn
from app.memory.store import Store

WORDS = [
    "lantern",
    "kettle",
    "map",
    "dragon",
    "tea",
    "river",
    "moon",
    "owl",
    "ember",
    "fern",
    "harbor",
    "quill",
    "raven",
    "salt",
    "thistle",
]


def turn(i: int) -> NewTurn:
    text = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12)) + f" number {i}"
    return NewTurn(
        platform="discord",
        place=f"guild:1/{i % 5}",
        guild_id=1,
        channel_id=i % 5,
        message_id=10_000_000 + i,
        author_key=f"discord:{i % 40}",
        author_name=f"user{i % 40}",
        content=text,
        created_at=datetime.now(UTC),
    )


async def baseline(folder: Path, count: int) -> float:
    """The reference approach: SQL append, then add + commit the one document, per turn."""
    store = await Store.open(folder / "baseline.db", folder / "backups")
    index = tantivy.Index(TURNS.build_schema(), path=str(_mk(folder / "baseline-fts")))
    writer = index.writer(heap_size=64_000_000, num_threads=1)
    started = time.perf_counter()
    for i in range(count):
        stored = await store.append_turn(turn(i))
        assert stored is not None
        writer.add_document(
            tantivy.Document(id=stored.id, place=stored.place, author=stored.author_name, content=stored.content)
        )
        await asyncio.to_thread(writer.commit)
    elapsed = time.perf_counter() - started
    writer.wait_merging_threads()
    await store.close()
    return count / elapsed


async def live(folder: Path, count: int) -> float:
    """Turns appended one at a time, as they arrive from Discord; the committer groups them."""
    history = await History.open(folder / "live.db", folder / "live-fts", folder / "backups")
    try:
        started = time.perf_counter()
        for i in range(count):
            await history.append_turn(turn(i))
        await history.turns_index.flush(120)
        elapsed = time.perf_counter() - started
        hits = await history.search_turns(f"number {count - 1}", 1)
        assert hits
        assert hits[0].turn.content.endswith(f"number {count - 1}")
    finally:
        await history.close()
    return count / elapsed


async def bulk(folder: Path, count: int, chunk: int = 10_000) -> float:
    """An import: turns appended in large transactions, indexed in batches. The turns are made a chunk
    at a time (outside the timing), so the process's peak memory is the ingest's, not the test data's."""
    history = await History.open(folder / "bulk.db", folder / "bulk-fts", folder / "backups")
    try:
        elapsed = 0.0
        for start in range(0, count, chunk):
            turns = [turn(i) for i in range(start, min(count, start + chunk))]
            started = time.perf_counter()
            await history.append_turns(turns)
            elapsed += time.perf_counter() - started
        started = time.perf_counter()
        await history.turns_index.flush(3600)
        elapsed += time.perf_counter() - started
        assert history.index_health().watermark == count
    finally:
        await history.close()
    return count / elapsed


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (ru_maxrss: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", type=int, default=300)
    parser.add_argument("--live", type=int, default=10_000)
    parser.add_argument("--bulk", type=int, default=100_000, help="turns in the bulk import (e.g. 1000000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = await baseline(folder, args.baseline)
        live_rate = await live(folder, args.live)
        before_bulk = peak_rss_mb()
        bulk_rate = await bulk(folder, args.bulk)
        after_bulk = peak_rss_mb()
    print(f"baseline commit-per-document: {base:10.0f} turns/s  ({args.baseline} turns)")
    print(
        f"live append, group commits:   {live_rate:10.0f} turns/s  ({args.live} turns)"
        f"  = {live_rate / base:6.1f}x baseline (target >= 40x)"
    )
    print(
        f"bulk import, group commits:   {bulk_rate:10.0f} turns/s  ({args.bulk} turns)"
        f"  = {bulk_rate / base:6.1f}x baseline (target >= 20,000 turns/s)"
    )
    print(f"peak memory: {before_bulk:,.0f} MB before the bulk import, {after_bulk:,.0f} MB after it")


if __name__ == "__main__":
    asyncio.run(main())
