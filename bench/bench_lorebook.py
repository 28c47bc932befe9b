"""The lorebook: activation over a recent window of 20 turns (target: p95 <= 2 ms at 500 entries, with every
SillyTavern parity feature on), and saving one edited entry (target: <= 50 ms at 5,000 entries).

The book mixes what real lorebooks hold: single-word and multi-word keys, a tenth matched as substrings,
one entry in twenty with a regex key, a fifth with secondary keys under each logic, a few constant entries
and per-entry scan depths. Each run scans a different window of a long conversation.

Regex keys are matched in bounded time (RE2 sets, a time-limited engine for the rest: app/lore/bounded_regex.py). The
baseline, measured in the same run on the same windows (alternating with the bounded scans), is the same
scanner searching regex keys with Python's `re`, text by text and without a time limit, as before.
Then the same book with catastrophic keys added (`(a|a)*$` and kin, which `re` would backtrack on for
ages, so no baseline there) scans a window whose newest message is "aaaa...a!".

Parity: the same entries with SillyTavern's activation fields on (activation.py): a tenth with a
probability, a fifth in inclusion groups (some with group scoring or override), sticky and cooldown
entries whose timed effects are carried from one scan to the next (as the runtime keeps them per place),
delays, recursion on (entries' content activating other entries, up to 3 steps, some entries delayed
until recursion or excluded from it) and CCv3 decorators; a new seed per scan. Its baseline, in the same
run on the same windows: the plain key scan of the same book (what activation cost before parity).

Save: one entry's priority and content changed, then saved (document.py), at 500 and 5,000 entries; the
baseline, in the same run, is how the editor saved before: the whole file through tomlkit (parse, edit,
dump), a full validation, an atomic write. At 5,000 entries the baseline is run once (it takes seconds).
The facade's save (LoreService.save: revision check, the edit, the write, the view records back) is
measured at 5,000 entries on a real familiar folder.

    python -m bench.bench_lorebook [--runs N] [--entries N] [--turns N] [--saves N] [--only PART]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import random
import statistics
import tempfile
import time
from pathlib import Path

import tomlkit

from app.config.paths import FamiliarPaths, ensure_familiar
from app.config.secrets import SecretStore
from app.lore import scanner as lorebook
from app.lore.activation import TimedEffect, activate
from app.lore.book import load_lorebook, parse_lorebook
from app.lore.document import LorebookDocument, write_atomically
from app.lore.scanner import LoreScanner
from app.runtime.service import Familiar

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


def book_text(count: int, rng: random.Random, *, parity: bool = False) -> tuple[str, list[str]]:
    names = sorted({_name(rng) for _ in range(count * 3)})
    while len(names) < count * 2:  # bigger books: names of more syllables
        names = sorted({*names, *(_name(rng) + rng.choice(SYLLABLES) for _ in range(count))})
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
        if parity:
            lines += _parity_fields(i, names, rng)
        lines += [f"priority = {rng.randint(1, 200)}", f'content = "{_content(i, title, names, parity)}"', ""]
        if parity and i % 25 == 11:
            decorators = ['"@@activate_only_every 2"', f'"@@additional_keys {names[(i + 5) % len(names)]}"']
            lines += ["[entries.extensions]", f"decorators = [{', '.join(decorators)}]", ""]
    return "\n".join(lines), names


def _content(i: int, title: str, names: list[str], parity: bool) -> str:
    """Content; with recursion on, a third of the entries name another entry's key."""
    if parity and i % 3 == 0:
        return f"{title} is part of the lore, and knows {names[(i * 7 + 3) % len(names)]}. "
    return f"{title} is part of the lore. "


def _parity_fields(i: int, names: list[str], rng: random.Random) -> list[str]:
    del names
    lines = []
    if i % 10 == 5:
        lines.append(f"probability = {rng.choice((25, 50, 75))}")
    if i % 5 == 2:
        lines.append(f'group = "group{i % 40}"')
        lines.append(f"group_weight = {rng.randint(1, 200)}")
        if i % 3 == 0:
            lines.append("use_group_scoring = true")
        if i % 7 == 0:
            lines.append("group_override = true")
    if i % 12 == 4:
        lines.append(f"sticky = {rng.randint(1, 4)}")
    if i % 15 == 7:
        lines.append(f"cooldown = {rng.randint(1, 5)}")
    if i % 30 == 9:
        lines.append(f"delay = {rng.randint(1, 50)}")
    if i % 40 == 13:
        lines.append("delay_until_recursion = true")
    if i % 35 == 17:
        lines.append("exclude_recursion = true")
    if i % 45 == 19:
        lines.append("prevent_recursion = true")
    return lines


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
    parser.add_argument("--saves", type=int, default=40)
    parser.add_argument(
        "--only",
        choices=("scans", "parity", "saves"),
        help="run one part (the machine is shared: a part alone is quicker)",
    )
    args = parser.parse_args()
    for name, part in (("scans", scans), ("parity", parity), ("saves", saves)):
        if args.only in (None, name):
            part(args)


def scans(args: argparse.Namespace) -> None:
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


def parity(args: argparse.Namespace) -> None:
    rng = random.Random(11)
    text, names = book_text(args.entries, rng, parity=True)
    book = parse_lorebook("recursive_scanning = true\nmax_recursion_steps = 3\n" + text, Path("lorebook.toml"))
    scanner = LoreScanner(book)
    talk = conversation(args.runs + args.turns, names, rng)
    effects: tuple[TimedEffect, ...] = ()
    for start in range(200):  # warm up
        effects = activate(scanner, talk[start : start + args.turns], clock=start + args.turns, effects=effects).effects
    samples: list[float] = []
    cpu: list[float] = []
    base_samples: list[float] = []
    base_cpu: list[float] = []
    fired = dropped = recursed = 0
    for start in range(args.runs):
        window = talk[start : start + args.turns]
        began, began_cpu = time.perf_counter(), time.thread_time()
        result = activate(scanner, window, clock=start + args.turns, effects=effects, seed=start)
        cpu.append((time.thread_time() - began_cpu) * 1000)
        samples.append((time.perf_counter() - began) * 1000)
        began, began_cpu = time.perf_counter(), time.thread_time()
        scanner.activate(window)
        base_cpu.append((time.thread_time() - began_cpu) * 1000)
        base_samples.append((time.perf_counter() - began) * 1000)
        effects = result.effects
        fired += len(result.fired)
        dropped += len(result.dropped)
        recursed += sum(f.step > 0 for f in result.fired)
    print(
        f"parity: {len(book.entries)} entries with SillyTavern's activation fields; per scan {fired / args.runs:.1f}"
        f" activated ({recursed / args.runs:.1f} by recursion), {dropped / args.runs:.1f} matched and dropped,"
        f" {len(effects)} timed effects held at the end"
    )
    print(f"activation with every parity feature, over {args.turns} turns (target p95 <= 2 ms):")
    print("  " + _line("parity activation         ", samples))
    print("  " + _line("baseline: keys only       ", base_samples))
    print(f"  p95 ratio parity / keys only: {_pct(samples, 0.95) / _pct(base_samples, 0.95):.2f}")
    print("  " + _line("parity, CPU time          ", cpu))
    print("  " + _line("keys only, CPU time       ", base_cpu))


def _baseline_save(path: Path, index: int, value: int) -> None:
    """How the editor saved before: the whole document through tomlkit, validated whole, written atomically."""
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    table = document["entries"][index]
    table["priority"] = value
    table["content"] = f"Changed {value}."
    text = tomlkit.dumps(document)
    parse_lorebook(text, path)
    write_atomically(path, text.encode("utf-8"))


def saves(args: argparse.Namespace) -> None:
    print(f"saving one edited entry (target <= 50 ms at 5,000 entries), {args.saves} saves each:")
    with tempfile.TemporaryDirectory() as folder:
        for count in (500, 5000):
            text, _names = book_text(count, random.Random(count), parity=True)
            path = Path(folder) / f"lorebook-{count}.toml"
            path.write_text(text, encoding="utf-8")
            began = time.perf_counter()
            document = LorebookDocument.load(path)
            loaded = (time.perf_counter() - began) * 1000
            samples: list[float] = []
            for n in range(args.saves):
                began = time.perf_counter()
                document.update_entry((n * 37) % count, {"priority": n + 1, "content": f"Changed {n}."})
                document.save()
                samples.append((time.perf_counter() - began) * 1000)
            assert len(load_lorebook(path).entries) == count
            path.write_text(text, encoding="utf-8")
            base: list[float] = []
            for n in range(max(1, args.saves // 10) if count <= 500 else 1):
                began = time.perf_counter()
                _baseline_save(path, (n * 37) % count, n + 1)
                base.append((time.perf_counter() - began) * 1000)
            print(f"  {count} entries ({len(text) // 1024} KiB; the document loads in {loaded:.0f} ms, once):")
            print("    " + _line("one-entry save            ", samples))
            print("    " + _line(f"baseline, whole file ({len(base)}x)  ", base))
            print(f"    p50 ratio save / baseline: {_pct(samples, 0.5) / _pct(base, 0.5):.4f}")
        asyncio.run(facade_save(Path(folder), args.saves))


async def facade_save(folder: Path, runs: int) -> None:
    """LoreService.save on a real familiar: check the revision, edit, write, the view records back."""
    paths = FamiliarPaths(root=folder / "home", name="bench")
    ensure_familiar(paths)
    text, _names = book_text(5000, random.Random(5000), parity=True)
    paths.lorebook_toml.write_text(text, encoding="utf-8")
    familiar = await Familiar.open(paths, SecretStore(paths.name, paths.secrets_file, use_keyring=False), env={})
    try:
        began = time.perf_counter()
        book = await familiar.lore.load()
        loaded = (time.perf_counter() - began) * 1000
        samples: list[float] = []
        cpu: list[float] = []
        for n in range(runs):
            edited = list(book.entries)
            edited[(n * 37) % len(edited)] = dataclasses.replace(edited[(n * 37) % len(edited)], priority=n + 1)
            began, began_cpu = time.perf_counter(), time.process_time()
            book = await familiar.lore.save(edited, book.revision)
            samples.append((time.perf_counter() - began) * 1000)
            cpu.append((time.process_time() - began_cpu) * 1000)
    finally:
        await familiar.close()
    print(f"  facade.lore.save at 5000 entries (load: {loaded:.0f} ms, once):")
    print("    " + _line("one-entry save, end to end", samples))
    # The wall time holds the fsync of the atomic write and, on a shared machine, the waits for a core.
    print("    " + _line("the same, CPU time         ", cpu))


if __name__ == "__main__":
    main()
