"""Context assembly for one reply, every layer, LLM time excluded (target: p95 <= 20 ms at 100k turns,
10k facts and 500 lorebook entries).

Builds a familiar folder (bench/_familiar_data.py), opens it with Familiar.open and times
`familiar.replies.assemble(place)` across 20 places:
- fresh: a new user message was just appended in that place (and indexed), so the lorebook scan, the
  memory layer (a new recall cue) and the history layer really rebuild;
- warm: the same place again with no new turn (every layer a cache hit);
- per layer: each layer's invalidation_key + build on a fresh turn, uncached (plus the memory layer's
  two recalls on their own);
- embedding: fresh again with `[providers.embedding] backend = "hash"`, `[memory.retrieval]
  embedding_weight = 0.5` and a hash vector for every current fact.

    python bench/bench_context.py [--runs N] [--turns N] [--facts N] [--lore N]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repo root

import argparse
import asyncio
import statistics
import tempfile
from datetime import UTC, datetime, timedelta

from app.memory.embeddings import HashEmbedder
from app.runtime.context.layers import (
    CharacterLayer,
    DossiersLayer,
    HistoryLayer,
    Layer,
    MemoryLayer,
    ReflectionsLayer,
    SummaryLayer,
)
from app.runtime.service import Familiar
from bench._familiar_data import Built, Samples, World, build, open_familiar, pct, write_character

TARGET_MS = 20.0
EMBEDDING_EXTRA = """
[providers.embedding]
backend = "hash"

[memory.retrieval]
embedding_weight = 0.5
"""


def row(label: str, samples: Samples, note: str = "") -> str:
    return f"  {label:<38} {samples.cells()}  {note}".rstrip()


def header(title: str) -> str:
    return f"{title}\n  {'':<38} {Samples.HEADER}"


async def new_message(familiar: Familiar, world: World, place_index: int) -> str:
    """A fresh user message in a place, committed to SQL and the index (as by the time a reply starts)."""
    place = world.places[place_index % len(world.places)]
    await familiar.history.append_turns(world.turns(place, 1, datetime.now(UTC), timedelta(0), replies=0.0))
    await familiar.history.catch_up()
    return place.key


async def assemble_runs(familiar: Familiar, world: World, runs: int) -> tuple[Samples, Samples, dict[str, int]]:
    """(fresh-turn times, warm-cache times, how often each layer came from the cache on a fresh turn)."""
    fresh, warm = Samples(), Samples()
    reused: dict[str, int] = {}
    for n in range(runs):
        place = await new_message(familiar, world, n)
        with fresh.measure():
            assembly = await familiar.replies.assemble(place)
        for name in assembly.cached:
            reused[name] = reused.get(name, 0) + 1
        with warm.measure():
            again = await familiar.replies.assemble(place)
        assert len(again.cached) == len(again.outputs), again.cached
    return fresh, warm, reused


async def layer_runs(familiar: Familiar, world: World, persona: str, runs: int) -> dict[str, Samples]:
    """Each layer's invalidation_key + build on a fresh turn, outside the assembler (so never cached)."""
    layers: list[Layer] = [
        CharacterLayer(persona),
        familiar.lorebook_layer,
        SummaryLayer(familiar.projections),
        ReflectionsLayer(familiar.projections),
        DossiersLayer(familiar.projections),
        MemoryLayer(familiar.retriever),
        HistoryLayer(),
    ]
    times: dict[str, Samples] = {"context_for (3 SQL reads)": Samples()}
    for layer in layers:
        times[layer.name] = Samples()
    facts, turns = Samples(), Samples()
    times["  memory: facts recall"] = facts
    times["  memory: turns recall"] = turns
    for n in range(runs):
        place = await new_message(familiar, world, n)
        with times["context_for (3 SQL reads)"].measure():
            ctx = await familiar.replies.context_for(place)
        for layer in layers:
            with times[layer.name].measure():
                layer.invalidation_key(ctx)
                await layer.build(ctx)
        before = ctx.recent[0].id if ctx.recent else 2**62
        with facts.measure():
            await familiar.retriever.facts(ctx.query, ctx.place)
        with turns.measure():
            await familiar.retriever.turns(ctx.query, ctx.place, before)
    return times


async def warm_up(familiar: Familiar, world: World) -> None:
    """First assembly per place: the lorebook is read and compiled, SQLite and tantivy caches fill."""
    for place in world.places:
        await familiar.replies.assemble(place.key)


async def fill_vectors(familiar: Familiar) -> int:
    embedder = familiar.embedder
    assert isinstance(embedder, HashEmbedder), "the embedding variant expects the hash backend"
    written = 0
    while True:
        batch = await familiar.embeddings.missing(embedder.name, 2000)
        if not batch:
            return written
        vectors = embedder.embed([text for _id, text in batch])
        written += await familiar.embeddings.put(
            embedder.name, embedder.dim, [(fact_id, v) for (fact_id, _t), v in zip(batch, vectors, strict=True)]
        )


def verdict(samples: Samples) -> str:
    p95 = pct(samples.wall, 0.95)
    return f"target p95 <= {TARGET_MS:.0f} ms: {'MET' if p95 <= TARGET_MS else 'MISSED'}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200, help="fresh-turn assemblies per variant")
    parser.add_argument("--layer-runs", type=int, default=100)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--lore", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        built: Built = await build(Path(tmp), turns=args.turns, facts=args.facts, lore_entries=args.lore)
        world = built.world
        print(
            f"built {args.turns:,} turns over {len(world.places)} places, {built.facts:,} facts"
            f" ({built.pending} pending), {args.lore} lorebook entries, {built.dossiers} dossiers,"
            f" summaries and reflections in {built.seconds:.1f} s"
        )
        persona = built.paths.character_md.read_text(encoding="utf-8")

        familiar = await open_familiar(built.paths)
        try:
            await warm_up(familiar, world)
            fresh, warm, reused = await assemble_runs(familiar, world, args.runs)
            layers = await layer_runs(familiar, world, persona, args.layer_runs)
            probe = await familiar.replies.assemble(world.places[0].key)
        finally:
            await familiar.close()

        write_character(built.paths, "http://127.0.0.1:9/v1", EMBEDDING_EXTRA)
        familiar = await open_familiar(built.paths)
        try:
            vectors = await fill_vectors(familiar)
            await warm_up(familiar, world)
            fresh_emb, warm_emb, _ = await assemble_runs(familiar, world, args.runs)
            emb_layers = await layer_runs(familiar, world, persona, max(20, args.layer_runs // 2))
            recalled = (await familiar.replies.assemble(world.places[0].key)).explanation["facts"]
            assert any(f["signals"]["embedding"] is not None for f in recalled), "the embedding signal is not in use"
        finally:
            await familiar.close()

    explained = probe.explanation
    print(
        f"one reply's prompt: {sum(o.cost for o in probe.outputs)} tokens; lorebook entries"
        f" {len(explained['lorebook'])}, facts {len(explained['facts'])}, older turns {len(explained['turns'])},"
        f" dropped {len(explained['dropped'])}"
    )
    print()
    print(header(f"familiar.replies.assemble(place), {args.runs} replies over {len(world.places)} places"))
    print(row("fresh user turn (layers rebuild)", fresh, verdict(fresh)))
    print(row("warm cache, no new turn (all hits)", warm))
    reuse = ", ".join(f"{name} {count * 100 // args.runs}%" for name, count in sorted(reused.items()))
    print(f"  (on a fresh turn, reused from the cache: {reuse or 'nothing'})")
    print()
    print(header(f"per layer on a fresh turn, uncached ({args.layer_runs} runs)"))
    for name, samples in layers.items():
        print(row(name, samples))
    total = sum(statistics.fmean(s.wall) for name, s in layers.items() if not name.startswith(" "))
    print(f"  {'sum of the means (context_for + layers)':<38} {'':>26} {total:8.2f}")
    print()
    print(header(f"embedding_weight = 0.5, hash backend, {vectors:,} fact vectors"))
    print(row("fresh user turn (layers rebuild)", fresh_emb, verdict(fresh_emb)))
    print(row("warm cache, no new turn (all hits)", warm_emb))
    for name in ("memory", "  memory: facts recall"):
        print(row(name, emb_layers[name]))
    print()
    print(
        f"verdict: fresh-turn assembly p95 {pct(fresh.wall, 0.95):.2f} ms (bm25 only),"
        f" {pct(fresh_emb.wall, 0.95):.2f} ms (with embeddings): target <= {TARGET_MS:.0f} ms"
        f" {'MET' if max(pct(fresh.wall, 0.95), pct(fresh_emb.wall, 0.95)) <= TARGET_MS else 'MISSED'}"
        f" (cpu p95 {pct(fresh.cpu, 0.95):.2f} / {pct(fresh_emb.cpu, 0.95):.2f} ms)"
    )


if __name__ == "__main__":
    asyncio.run(main())
