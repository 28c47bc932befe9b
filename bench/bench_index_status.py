"""What the index health pane's reload costs (it reads once a second while the pane shows and memory
changes): `facade.indexes.status()` (each index's documents, source rows, backlog, size on disk) and
`facade.indexes.embeddings()` (coverage per model), at 100k turns and 10k facts, hash vectors for every
current fact plus some of an earlier model.

Baseline, in the same process: a reply's history read (`recent_turns(place, 50)`, on the same SQLite
reader connection) alone; then the same read while the pane reloads back to back, to show how much a
reload delays what a reply reads (ratio of p50 and p95).

    python bench/bench_index_status.py [--runs N] [--turns N] [--facts N]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repo root

import argparse
import asyncio
import contextlib
import tempfile

from app.runtime.service import Familiar
from bench._familiar_data import Samples, build, open_familiar, pct, write_character

EMBEDDINGS = '\n[providers.embedding]\nbackend = "hash"\n'


def line(name: str, samples: Samples) -> str:
    wall = samples.wall
    return f"{name:<44} p50 {pct(wall, 0.5):8.2f} ms  p95 {pct(wall, 0.95):8.2f} ms  max {max(wall):8.2f} ms"


async def reads(familiar: Familiar, places: list[str], runs: int) -> Samples:
    samples = Samples()
    for n in range(runs):
        with samples.measure():
            await familiar.history.recent_turns(places[n % len(places)], 50)
    return samples


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--facts", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="familiar-bench-index-") as tmp:
        built = await build(Path(tmp), turns=args.turns, facts=args.facts, lore_entries=10)
        write_character(built.paths, "http://127.0.0.1:9/v1", EMBEDDINGS)
        familiar = await open_familiar(built.paths)
        try:
            await familiar.indexes.catch_up(600)
            await familiar.indexes.reembed()
            facts = await familiar.memory.list_facts(limit=2000)
            await familiar.embeddings.put("fastembed:an-earlier-model", 4, [(f.id, [1.0, 0, 0, 0]) for f in facts])
            print(
                f"{args.turns:,} turns, {built.facts:,} facts (built in {built.seconds:.0f} s); {args.runs} runs each"
            )
            status, embeddings = Samples(), Samples()
            for _ in range(args.runs):
                with status.measure():
                    await familiar.indexes.status()
                with embeddings.measure():
                    await familiar.indexes.embeddings()
            print(line("indexes.status()", status))
            print(line("indexes.embeddings()", embeddings))

            places = list(built.turn_ids)
            alone = await reads(familiar, places, args.runs * 4)

            async def reload_forever() -> None:
                while True:
                    await familiar.indexes.status()
                    await familiar.indexes.embeddings()

            reloading = asyncio.create_task(reload_forever())
            try:
                beside = await reads(familiar, places, args.runs * 4)
            finally:
                reloading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reloading
            print(line("baseline: recent_turns(place, 50) alone", alone))
            print(line("recent_turns(place, 50) beside reloads", beside))
            p50 = pct(beside.wall, 0.5) / pct(alone.wall, 0.5)
            p95 = pct(beside.wall, 0.95) / pct(alone.wall, 0.95)
            print(
                f"{'ratio, beside back-to-back reloads / alone':<44} p50 {p50:8.2f} x   p95 {p95:8.2f} x"
                "  (the pane reloads at most once a second)"
            )
        finally:
            await familiar.close()


if __name__ == "__main__":
    asyncio.run(main())
