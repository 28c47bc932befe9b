"""Lorebook activation scan: 500 entries over a recent window of 20 turns (target: p95 <= 2 ms).

The book mixes what real lorebooks hold: single-word and multi-word keys, a tenth matched as substrings,
one entry in twenty with a regex key, a fifth with secondary keys under each logic, a few constant entries
and per-entry scan depths. Each run scans a different window of a long conversation.

Regex keys are matched in bounded time (RE2 sets, a time-limited engine for the rest: app/lore/bounded_regex.py). The
baseline, measured in the same run on the same windows (alternating with the bounded scans), is the same
scanner searching regex keys with Python's `re`, text by text and without a time limit, as before.
Then the same book with catastrophic keys added (`(a|a)*$` and kin, which `re` would backtrack on for
ages, so no baseline there) scans a window whose newest message is "aaaa...a!".

    python -m bench.bench_lorebook [--runs N] [--entries N] [--turns N]
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import time
from pathlib import Path

from app.lore import scanner as lorebook
from app.lore.book import parse_lorebook
from app.lore.scanner import LoreScanner

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


# Keys that backtrack exponentially in Python's re on "aaaa...a!": the first five in RE2, the rest (look-arounds)
# in the time-limited engine, where each runs over its limit once and is disabled.
CATASTROPHIC = (
    "/(a|a)*$/", "/^(a+)+$/", "/(a|aa)+$/", "/(\\w+\\s?)+$/", "/(x+x+)+y/",
    "/(a|a)*(?=b)/", "/(a|a)*(?=c)/", "/(?<=x)(a|aa)*(?=b)/", "/(a|a)*(?!a)b/", "/(a|a)*(?=d)/",
)  # fmt: skip


def hostile_text(text: str) -> str:
    lines = [text, ""]
    for i, key in enumerate(CATASTROPHIC):
        lines += ["[[entries]]", f'title = "Hostile {i}"', f"keys = ['{key}']", 'content = "x"', ""]
    return "\n".join(lines)


class UnboundedScanner(LoreScanner):
    """The baseline: regex keys searched with Python's re, newest text first, with no time limit."""

    def _search(self, matcher_id: int, matcher: lorebook._Regex, window: lorebook._Window) -> int:
        search = matcher.pattern.search
        for distance, text in enumerate(window.texts[: self._limits[matcher_id]]):
            if search(text) is not None:
                return distance
        return lorebook._NEVER


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


def _line(name: str, samples: list[float]) -> str:
    return (
        f"{name}: p50 {_pct(samples, 0.5):.3f} ms  p95 {_pct(samples, 0.95):.3f} ms"
        f"  mean {statistics.fmean(samples):.3f} ms  max {max(samples):.3f} ms"
    )


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
    baseline = UnboundedScanner(book)
    talk = conversation(args.runs + args.turns, names, rng)
    fired = 0
    for start in range(200):  # warm up
        scanner.activate(talk[start : start + args.turns])
        baseline.activate(talk[start : start + args.turns])
    samples: list[float] = []
    cpu: list[float] = []  # this thread's CPU time: what the scan costs when a busy machine preempts it
    base_samples: list[float] = []
    base_cpu: list[float] = []
    for start in range(args.runs):
        window = talk[start : start + args.turns]
        began, began_cpu = time.perf_counter(), time.thread_time()
        matches = scanner.activate(window)
        cpu.append((time.thread_time() - began_cpu) * 1000)
        samples.append((time.perf_counter() - began) * 1000)
        began, began_cpu = time.perf_counter(), time.thread_time()
        expected = baseline.activate(window)
        base_cpu.append((time.thread_time() - began_cpu) * 1000)
        base_samples.append((time.perf_counter() - began) * 1000)
        assert [m.entry.index for m in matches] == [m.entry.index for m in expected]
        fired += len(matches)
    keys = sum(len(e.keys) + len(e.secondary_keys) for e in book.entries)
    print(
        f"lorebook: {len(book.entries)} entries, {keys} keys; parse {(parsed - started) * 1000:.1f} ms,"
        f" compile {(compiled - parsed) * 1000:.1f} ms; {fired / args.runs:.1f} entries fire per scan"
    )
    print(f"activation over {args.turns} turns (target p95 <= 2 ms):")
    print("  " + _line("bounded matching          ", samples))
    print("  " + _line("baseline re, no limit     ", base_samples))
    print(f"  p50 ratio bounded / baseline: {_pct(samples, 0.5) / _pct(base_samples, 0.5):.2f}")
    print("  " + _line("bounded, CPU time         ", cpu))
    print("  " + _line("baseline, CPU time        ", base_cpu))

    logging.getLogger("app.lore.scanner").setLevel(logging.ERROR)  # the disabled keys, counted below
    hostile = LoreScanner(parse_lorebook(hostile_text(text), Path("lorebook.toml")))
    trigger = "Mallory: " + "a" * 60 + "!"
    began = time.perf_counter()
    hostile.activate([*talk[: args.turns - 1], trigger])
    first = (time.perf_counter() - began) * 1000
    after: list[float] = []
    for start in range(min(args.runs, 1000)):
        window = [*talk[start : start + args.turns - 1], trigger]
        began = time.perf_counter()
        hostile.activate(window)
        after.append((time.perf_counter() - began) * 1000)
    print(
        f"with {len(CATASTROPHIC)} catastrophic keys and the message that triggers them"
        f" (baseline re: exponential, not run):"
    )
    print(f"  first scan {first:.1f} ms ({len(hostile.disabled)} keys over their time limit disabled in it)")
    print("  " + _line("the scans after it        ", after))
    print(f"  keys disabled in all: {len(hostile.disabled)} (the rest finish within their limit)")


if __name__ == "__main__":
    main()
