"""Turn search (BM25 hit -> SQL row) latency at 10k and 100k turns (target: p50 <= 2 ms at 100k).

python -m bench.bench_search [--queries N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from app.memory.history import History
from bench.bench_ingest import WORDS, turn


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(folder: Path, size: int, queries: int) -> tuple[float, float, float]:
    history = await History.open(folder / f"s{size}.db", folder / f"s{size}-fts", folder / "backups")
    try:
        turns = [turn(i) for i in range(size)]
        for start in range(0, size, 10_000):
            await history.append_turns(turns[start : start + 10_000])
        await history.turns_index.flush(300)
        terms = [*WORDS, *(f"number {i}" for i in range(0, size, max(1, size // 50)))]
        for term in terms[:20]:  # warm caches
            await history.search_turns(term, 10)
        samples: list[float] = []
        for q in range(queries):
            term = terms[q % len(terms)]
            started = time.perf_counter()
            hits = await history.search_turns(term, 10)
            samples.append((time.perf_counter() - started) * 1000)
            assert hits
    finally:
        await history.close()
    return _pct(samples, 0.5), _pct(samples, 0.95), statistics.fmean(samples)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for size in (10_000, 100_000):
            p50, p95, mean = await measure(Path(tmp), size, args.queries)
            print(
                f"turn search at {size:>7,} turns: p50 {p50:.3f} ms  p95 {p95:.3f} ms  mean {mean:.3f} ms"
                "  (target p50 <= 2 ms at 100k)"
            )


if __name__ == "__main__":
    asyncio.run(main())
