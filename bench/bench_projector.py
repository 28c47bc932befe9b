"""A projector tick on a 10-turn batch, outside the LLM call (target: < 5 ms), for every projector.

Builds the familiar of bench/_familiar_data.py (100k turns, 10k facts), starts the fake
OpenAI-compatible server (tests/fakes/llm_server.py) answering like a well-behaved model, and for each
projector in turn opens the familiar with `[providers.memory] projectors = [<that one>]` and
`[memory.learning] batch_turns = summary_turns = reflection_turns = 10`. Each run appends 10 new turns
in one place (people_dossier and fact_supersede also get the 3 active facts rich_note would have drawn
from them), waits for the indexes, then times `familiar.learn_now()`; a proxy around
`familiar.projector_deps.llm` adds up the time spent inside `complete(...)` (the HTTP round trip and
the fake's answer), which is subtracted. CPU columns are the process's CPU time (every thread) over
the tick minus the CPU time inside the LLM calls.

    python bench/bench_projector.py [--runs N] [--turns N] [--facts N]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repo root

import argparse
import asyncio
import json
import random
import re
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from app.memory.facts import NewFact
from app.memory.records import SELF_KEY
from app.runtime.llm import ChatMessage, LLMClient
from app.runtime.service import Familiar
from bench._familiar_data import (
    PROJECTORS,
    TOPICS,
    Samples,
    World,
    build,
    open_familiar,
    pct,
    settle_watermarks,
    write_character,
)
from tests.fakes.llm_server import FakeLLM

TARGET_MS = 5.0
BATCH = 10
FACTS_PER_BATCH = 3
_TURN_LINE = re.compile(r"^\[T(\d+)\] (.+?) \(([a-z][a-z0-9_]{0,15}:[^)\s]+)\):", re.MULTILINE)
_TURN_REF = re.compile(r"\[T#(\d+)\]")
_FACT_REF = re.compile(r"\[F#(\d+)\]")


def config(projector: str) -> str:
    return f"""
[providers.memory]
projectors = ["{projector}"]

[memory.learning]
batch_turns = {BATCH}
summary_turns = {BATCH}
reflection_turns = {BATCH}
"""


class TimedLLM:
    """Delegates to the real background client and adds up the time spent inside complete()."""

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner
        self.wall = 0.0
        self.cpu = 0.0
        self.calls = 0

    def reset(self) -> None:
        self.wall = self.cpu = 0.0
        self.calls = 0

    async def complete(self, messages: list[ChatMessage], **kwargs: Any) -> str:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return await self.inner.complete(messages, **kwargs)
        finally:
            self.wall += (time.perf_counter() - wall) * 1000
            self.cpu += (time.process_time() - cpu) * 1000
            self.calls += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


# -- the fake model's answers ----------------------------------------------------------------------------
class Answers:
    """Valid answers for each projector's prompt, drawn from what the prompt shows."""

    def __init__(self, seed: int = 11) -> None:
        self.rng = random.Random(seed)
        self.calls = 0

    def _words(self, count: int) -> str:
        return " ".join(self.rng.choice(TOPICS) for _ in range(count))

    def extraction(self, messages: list[dict[str, Any]]) -> str:
        user = str(messages[1]["content"])
        shown = [(int(i), name, key) for i, name, key in _TURN_LINE.findall(user) if key != SELF_KEY]
        picked = shown[:: max(1, len(shown) // FACTS_PER_BATCH)][:FACTS_PER_BATCH]
        facts = []
        for turn_id, name, key in picked:
            day = (datetime(2025, 1, 1, tzinfo=UTC) + timedelta(days=self.rng.randrange(300))).date().isoformat()
            facts.append(
                {
                    "content": f"{name} talked about the {self._words(1)} and the {self._words(1)} on {day}.",
                    "type": "episodic",
                    "kind": "fact",
                    "importance": self.rng.randint(3, 8),
                    "confidence": 0.9,
                    "subjects": [key],
                    "speaker": key,
                    "source_turn_ids": [turn_id],
                }
            )
        return json.dumps({"facts": facts})

    def summary(self, _messages: list[dict[str, Any]]) -> str:
        return f"The group talked about {self._words(40)}, then moved on to {self._words(50)}."

    def reflection(self, messages: list[dict[str, Any]]) -> str:
        user = str(messages[1]["content"])
        turns = [int(t) for t in _TURN_REF.findall(user)]
        facts = [int(f) for f in _FACT_REF.findall(user)]
        items = [
            {
                "text": f"A recurring theme is the {self._words(1)} and how it ties to the {self._words(1)}.",
                "cited_turn_ids": self.rng.sample(turns, min(2, len(turns))),
                "cited_fact_ids": self.rng.sample(facts, min(1, len(facts))),
            }
            for _ in range(2)
        ]
        return json.dumps({"reflections": items})

    def dossier(self, _messages: list[dict[str, Any]]) -> str:
        return f"Likes {self._words(12)}. Often mentions {self._words(20)}. Says the {self._words(25)} matters."

    def supersede(self, messages: list[dict[str, Any]]) -> str:
        user = str(messages[1]["content"])
        earlier = [int(f) for f in _FACT_REF.findall(user.split("Earlier facts:", 1)[-1])]
        self.calls += 1
        retire = [earlier[-1]] if earlier and self.calls % 2 == 0 else []  # every other new fact replaces one
        return json.dumps({"retire": retire})

    def for_projector(self, name: str) -> Callable[[list[dict[str, Any]]], str]:
        return {
            "rich_note": self.extraction,
            "rolling_summary": self.summary,
            "reflection": self.reflection,
            "people_dossier": self.dossier,
            "fact_supersede": self.supersede,
        }[name]


# -- runs ---------------------------------------------------------------------------------------------------
async def feed(familiar: Familiar, world: World, run: int, with_facts: bool) -> None:
    """10 new turns in one place (and the facts an extraction would draw from them), all indexed."""
    place = world.places[run % len(world.places)]
    new = world.turns(place, BATCH, datetime.now(UTC) - timedelta(seconds=BATCH), timedelta(seconds=1))
    ids = await familiar.history.append_turns(new)
    if with_facts:
        authored = [(turn_id, t) for turn_id, t in zip(ids, new, strict=True) if t.author_key != SELF_KEY]
        for turn_id, turn in authored[:FACTS_PER_BATCH]:
            await familiar.history.insert_fact(
                NewFact(
                    content=world.fact_text(turn.author_name),
                    type="episodic",
                    importance=world.rng.randint(3, 8),
                    confidence=0.9,
                    subjects=(turn.author_key,),
                    place=place.key,
                    speaker=turn.author_key,
                    source_turn_ids=(turn_id,),
                )
            )
    await familiar.history.catch_up()
    # The index committers finish their round a moment after the flush returns; let that settle so
    # the timed tick is the projector's own work, not the feeding's tail.
    await asyncio.sleep(0.05)


async def drain(familiar: Familiar, proxy: TimedLLM) -> int:
    """Tick until the projector has nothing left over from the build or earlier phases."""
    for ticks in range(1, 30):
        proxy.reset()
        await familiar.learn_now()
        if proxy.calls == 0:
            return ticks
    return 30


class Phase:
    """The figures of one projector."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.outside = Samples()  # tick - LLM
        self.tick = Samples()
        self.llm: list[float] = []
        self.calls: list[int] = []
        self.report = ""
        self.drained = 0


async def run_phase(familiar: Familiar, world: World, name: str, runs: int, warmup: int) -> Phase:
    phase = Phase(name)
    proxy = TimedLLM(familiar.projector_deps.llm)
    familiar.projector_deps.llm = proxy  # type: ignore[assignment]  # duck-typed: complete() is all they call
    await settle_watermarks(familiar)
    phase.drained = await drain(familiar, proxy)
    with_facts = name in ("people_dossier", "fact_supersede")
    for run in range(warmup + runs):
        await feed(familiar, world, run, with_facts)
        proxy.reset()
        wall, cpu = time.perf_counter(), time.process_time()
        reports = await familiar.learn_now()
        wall = (time.perf_counter() - wall) * 1000
        cpu = (time.process_time() - cpu) * 1000
        if run < warmup:
            continue
        phase.tick.add(wall, cpu)
        phase.outside.add(wall - proxy.wall, cpu - proxy.cpu)
        phase.llm.append(proxy.wall)
        phase.calls.append(proxy.calls)
        phase.report = reports.get(name, phase.report)
    return phase


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=60, help="timed ticks per projector")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--facts", type=int, default=10_000)
    args = parser.parse_args()
    fake = FakeLLM()
    await fake.start()
    answers = Answers()
    phases: list[Phase] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            built = await build(
                Path(tmp), turns=args.turns, facts=args.facts, llm_url=fake.base_url, extra=config(PROJECTORS[0])
            )
            print(
                f"built {args.turns:,} turns over {len(built.world.places)} places, {built.facts:,} facts"
                f" ({built.pending} pending), {built.dossiers} dossiers in {built.seconds:.1f} s"
            )
            for name in PROJECTORS:
                write_character(built.paths, fake.base_url, config(name))
                fake.default_reply = answers.for_projector(name)
                familiar = await open_familiar(built.paths)
                try:
                    phases.append(await run_phase(familiar, built.world, name, args.runs, args.warmup))
                finally:
                    await familiar.close()
    finally:
        await fake.close()
    assert not fake.unhandled, fake.unhandled

    print()
    print(f"projector tick on a {BATCH}-turn batch, {args.runs} ticks each; 'outside' = tick minus the LLM call")
    print(f"  {'':<16} {'outside LLM: ' + Samples.HEADER}")
    for phase in phases:
        print(f"  {phase.name:<16} {'':<13}{phase.outside.cells()}")
    print()
    print(f"  {'':<16} {'tick p50':>9} {'LLM p50':>9} {'LLM calls/tick':>15}  last report")
    for phase in phases:
        calls = sum(phase.calls) / len(phase.calls)
        print(
            f"  {phase.name:<16} {pct(phase.tick.wall, 0.5):9.2f} {pct(phase.llm, 0.5):9.2f} {calls:15.1f}"
            f"  {phase.report}"
        )
    print()
    for phase in phases:
        p50, p95 = pct(phase.outside.wall, 0.5), pct(phase.outside.wall, 0.95)
        met = "MET" if p95 < TARGET_MS else "MISSED"
        print(
            f"verdict {phase.name}: outside the LLM p50 {p50:.2f} ms, p95 {p95:.2f} ms"
            f" (cpu p95 {pct(phase.outside.cpu, 0.95):.2f} ms): target < {TARGET_MS:.0f} ms {met}"
        )


if __name__ == "__main__":
    asyncio.run(main())
