"""Turn search (BM25 hit -> SQL row) latency at 10k and 100k turns (target: p50 <= 2 ms at 100k).

Latin text as before; then Japanese text, searched by words of two to four characters (indexed as
character bigrams, app/memory/cjk.py); then the store scan that answers while an index is locked or
being rebuilt (the newest 100,000 rows at most).

python -m bench.bench_search [--queries N] [--no-cjk]
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


async def measure(
    folder: Path,
    name: str,
    turns: Sequence[NewTurn],
    terms: Sequence[str],
    queries: int,
    search: Callable[[History, str], Awaitable[Sized]] | None = None,
) -> tuple[float, float, float]:
    size = len(turns)
    history = await History.open(folder / f"{name}{size}.db", folder / f"{name}{size}-fts", folder / "backups")
    try:
        for start in range(0, size, 10_000):
            await history.append_turns(turns[start : start + 10_000])
        await history.turns_index.flush(300)
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
    return _pct(samples, 0.5), _pct(samples, 0.95), statistics.fmean(samples)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--no-cjk", action="store_true", help="only the Latin figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for size in (10_000, 100_000):
            terms = [*WORDS, *(f"number {i}" for i in range(0, size, max(1, size // 50)))]
            p50, p95, mean = await measure(Path(tmp), "s", [turn(i) for i in range(size)], terms, args.queries)
            print(
                f"turn search at {size:>7,} turns: p50 {p50:.3f} ms  p95 {p95:.3f} ms  mean {mean:.3f} ms"
                "  (target p50 <= 2 ms at 100k)"
            )
        if args.no_cjk:
            return
        rng = random.Random(8)
        for size in (10_000, 100_000):
            ja = [ja_turn(i, rng) for i in range(size)]
            p50, p95, mean = await measure(Path(tmp), "ja", ja, list(JA_WORDS), args.queries)
            print(
                f"Japanese search at {size:>7,} turns: p50 {p50:.3f} ms  p95 {p95:.3f} ms  mean {mean:.3f} ms"
                "  (words of 2-4 characters)"
            )
        from app.memory.scan import scan_turns

        terms = list(WORDS)
        p50, p95, mean = await measure(
            Path(tmp),
            "scan",
            [turn(i) for i in range(100_000)],
            terms,
            max(20, args.queries // 20),
            lambda h, t: scan_turns(h.store, t, 10),
        )
        print(f"store scan (index locked) at 100,000 turns: p50 {p50:.1f} ms  p95 {p95:.1f} ms  mean {mean:.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
