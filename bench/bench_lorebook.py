"""Lorebook activation scan: 500 entries over a recent window of 20 turns (target: p95 <= 2 ms).

The book mixes what real lorebooks hold: single-word and multi-word keys, a tenth matched as substrings,
one entry in twenty with a regex key, a fifth with secondary keys under each logic, a few constant entries
and per-entry scan depths. Each run scans a different window of a long conversation.

    python -m bench.bench_lorebook [--runs N] [--entries N] [--turns N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from app.runtime.context.lorebook import LoreScanner, parse_lorebook

SYLLABLES = ("ka", "ri", "mo", "then", "dor", "el", "wyn", "sha", "lo", "vex", "ar", "um", "bri", "tal", "os")
WORDS = (
    "the", "a", "and", "to", "of", "we", "it", "is", "was", "you", "that", "in", "on", "with", "for", "but",
    "tea", "lantern", "river", "ember", "moon", "owl", "map", "harbor", "quill", "storm", "gate", "tower",
    "sword", "bread", "market", "song", "shadow", "garden", "bridge", "coin", "letter", "candle", "winter",
)  # fmt: skip
SPEAKERS = ("Alice", "Bob", "Carol", "Wisp", "Dmitri", "Eve")
LOGICS = ("and_any", "and_all", "not_any", "not_all")


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


def book_text(count: int, rng: random.Random) -> tuple[str, list[str]]:
    names = sorted({_name(rng) for _ in range(count * 3)})
    rng.shuffle(names)
    lines = ["scan_depth = 20", ""]
    for i in range(count):
        title = names[i]
        keys = [title, *(f"{rng.choice(WORDS)} {names[(i + j) % len(names)]}" for j in range(rng.randint(0, 2)))]
        if i % 20 == 7:
            keys.append(f"/{title[:3]}\\w*(?:s|es)?/i")
        lines += ["[[entries]]", f'title = "{title}"', f"keys = {keys!r}".replace("'", '"').replace("\\", "\\\\")]
        if i % 5 == 3:
            lines += [f'secondary_keys = ["{rng.choice(WORDS[16:])}", "{rng.choice(WORDS[16:])}"]']
            lines += [f'logic = "{LOGICS[i % 4]}"']
        if i % 10 == 1:
            lines.append("whole_words = false")
        if i % 7 == 2:
            lines.append(f"scan_depth = {rng.randint(2, 20)}")
        if i % 100 == 0:
            lines.append("constant = true")
        lines += [f"priority = {rng.randint(1, 200)}", f'content = "{title} is part of the lore. " ', ""]
    return "\n".join(lines), names


def conversation(length: int, names: list[str], rng: random.Random) -> list[str]:
    turns = []
    for _ in range(length):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 40))]
        for _ in range(rng.randint(0, 2)):  # most turns mention a name or two of the lore, some unknown ones
            words.insert(rng.randrange(len(words) + 1), rng.choice(names))
        turns.append(f"{rng.choice(SPEAKERS)}: {' '.join(words).capitalize()}.")
    return turns


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--entries", type=int, default=500)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(7)
    text, names = book_text(args.entries, rng)
    started = time.perf_counter()
    book = parse_lorebook(text, Path("lorebook.toml"))
    parsed = time.perf_counter()
    scanner = LoreScanner(book)
    compiled = time.perf_counter()
    talk = conversation(args.runs + args.turns, names, rng)
    fired = 0
    for start in range(200):  # warm up
        scanner.activate(talk[start : start + args.turns])
    samples: list[float] = []
    cpu: list[float] = []  # this thread's CPU time: what the scan costs when a busy machine preempts it
    for start in range(args.runs):
        window = talk[start : start + args.turns]
        began, began_cpu = time.perf_counter(), time.thread_time()
        matches = scanner.activate(window)
        cpu.append((time.thread_time() - began_cpu) * 1000)
        samples.append((time.perf_counter() - began) * 1000)
        fired += len(matches)
    keys = sum(len(e.keys) + len(e.secondary_keys) for e in book.entries)
    print(
        f"lorebook: {len(book.entries)} entries, {keys} keys; parse {(parsed - started) * 1000:.1f} ms,"
        f" compile {(compiled - parsed) * 1000:.1f} ms; {fired / args.runs:.1f} entries fire per scan"
    )
    print(
        f"activation over {args.turns} turns: p50 {_pct(samples, 0.5):.3f} ms  p95 {_pct(samples, 0.95):.3f} ms"
        f"  mean {statistics.fmean(samples):.3f} ms  max {max(samples):.3f} ms  (target p95 <= 2 ms)"
    )
    print(f"  the same scans in CPU time: p50 {_pct(cpu, 0.5):.3f} ms  p95 {_pct(cpu, 0.95):.3f} ms")


if __name__ == "__main__":
    main()
