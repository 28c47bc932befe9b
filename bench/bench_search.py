"""Turn search (BM25 hit -> SQL row) latency at 10k and 100k turns (target: p50 <= 2 ms at 100k), and at
1,000,000 turns on request (--sizes 10000,100000,1000000; targets p50 <= 2 ms, p95 <= 5 ms).

Latin text as before; then Japanese text, searched by words of two to four characters (indexed as
character bigrams, app/memory/cjk.py); then the store scan that answers while an index is locked or
being rebuilt (the newest 100,000 rows at most).

python -m bench.bench_search [--queries N] [--no-cjk] [--sizes N,N,...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence, Sized
from datetime import UTC, datetime
from pathlib import Path

from app.memory.history import History
from app.memory.records import NewTurn
from bench.bench_ingest import WORDS, turn

# Japanese words (two to four characters) and particles, for sentences like "明日の会議は東京で始まります".
JA_WORDS = (
    "会議", "東京", "大阪", "京都", "新宿", "予定", "明日", "今日", "昨日", "週末", "電車", "駅前", "珈琲", "紅茶",
    "図書館", "映画館", "美術館", "誕生日", "提灯", "祭り", "花火", "桜", "月見", "散歩", "料理", "お弁当", "ラーメン",
    "サーバー", "チャンネル", "ゲーム", "アニメ", "ギター", "ピアノ", "ドラゴン", "魔法使い", "冒険", "地図", "宝箱",
)  # fmt: skip
JA_GLUE = ("の", "は", "で", "に", "を", "と", "が", "から", "まで", "です", "ました", "したい")


def ja_turn(i: int, rng: random.Random) -> NewTurn:
    words = [rng.choice(JA_WORDS) + rng.choice(JA_GLUE) for _ in range(6)]
    return NewTurn(
        platform="discord",
        place=f"guild:1/{i % 5}",
        guild_id=1,
        channel_id=i % 5,
        message_id=20_000_000 + i,
        author_key=f"discord:{i % 40}",
        author_name=f"user{i % 40}",
        content="".join(words) + f" {i}",
        created_at=datetime.now(UTC),
    )


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _turn_search(history: History, term: str) -> Sized:
    return await history.search_turns(term, 10)


def _disk(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


async def measure(
    folder: Path,
    name: str,
    size: int,
    make: Callable[[int], NewTurn],
    terms: Sequence[str],
    queries: int,
    search: Callable[[History, str], Awaitable[Sized]] | None = None,
) -> tuple[float, float, float]:
    """Search latency over `size` turns made by `make(i)`; the store is built through the bulk path
    (chunks of 10,000 in one transaction each, indexed by the committer) unless `folder` already holds
    a complete one (--keep)."""
    db, fts = folder / f"{name}{size}.db", folder / f"{name}{size}-fts"
    complete = folder / f"{name}{size}.complete"
    history = await History.open(db, fts, folder / "backups")
    try:
        if not complete.exists():
            started = time.perf_counter()
            for start in range(0, size, 10_000):
                await history.append_turns([make(i) for i in range(start, min(size, start + 10_000))])
            await history.turns_index.flush(3600)
            built = time.perf_counter() - started
            complete.write_text(f"{built:.1f}\n")
            print(f"  built {size:,} turns in {built:.1f} s ({size / built:,.0f} turns/s)", flush=True)
        run = search or _turn_search
        for term in terms[:20]:  # warm caches
            await run(history, term)
        samples: list[float] = []
        for q in range(queries):
            term = terms[q % len(terms)]
            started = time.perf_counter()
            hits = await run(history, term)
            samples.append((time.perf_counter() - started) * 1000)
            assert hits, term
    finally:
        await history.close()
    if size >= 1_000_000:
        print(f"  on disk: SQLite {_disk(db) / 1e6:,.0f} MB, index {_disk(fts) / 1e6:,.0f} MB", flush=True)
    return _pct(samples, 0.5), _pct(samples, 0.95), statistics.fmean(samples)


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part.replace("_", "")) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes takes numbers separated by commas, not {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError("--sizes takes positive numbers")
    return sizes


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--no-cjk", action="store_true", help="only the Latin figures")
    parser.add_argument(
        "--sizes", type=_sizes, default=(10_000, 100_000), help="Latin store sizes, e.g. 10000,100000,1000000"
    )
    parser.add_argument("--keep", type=Path, help="build the stores here and reuse them on the next run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) if args.keep is None else args.keep
        folder.mkdir(parents=True, exist_ok=True)
        for size in args.sizes:
            terms = [*WORDS, *(f"number {i}" for i in range(0, size, max(1, size // 50)))]
            p50, p95, mean = await measure(folder, "s", size, turn, terms, args.queries)
            print(
                f"turn search at {size:>9,} turns: p50 {p50:.3f} ms  p95 {p95:.3f} ms  mean {mean:.3f} ms"
                "  (targets p50 <= 2 ms at 100k; p50 <= 2 ms, p95 <= 5 ms at 1M)",
                flush=True,
            )
        if args.no_cjk:
            return
        for size in (10_000, 100_000):
            # One generator per store, drawn in order: the same sentences on every run.
            rng = random.Random(8)

            def make_ja(i: int, rng: random.Random = rng) -> NewTurn:
                return ja_turn(i, rng)

            p50, p95, mean = await measure(folder, "ja", size, make_ja, list(JA_WORDS), args.queries)
            print(
                f"Japanese search at {size:>7,} turns: p50 {p50:.3f} ms  p95 {p95:.3f} ms  mean {mean:.3f} ms"
                "  (words of 2-4 characters)"
            )
        from app.memory.scan import scan_turns

        terms = list(WORDS)
        p50, p95, mean = await measure(
            folder,
            "scan",
            100_000,
            turn,
            terms,
            max(20, args.queries // 20),
            lambda h, t: scan_turns(h.store, t, 10),
        )
        print(f"store scan (index locked) at 100,000 turns: p50 {p50:.1f} ms  p95 {p95:.1f} ms  mean {mean:.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
