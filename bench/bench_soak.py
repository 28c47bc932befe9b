"""Memory over a long run: the RSS of `familiar run --headless` under a steady message feed (target: flat
within 10% after the first 30 minutes, and under 250 MB with embeddings off).

The real headless familiar runs in a subprocess against the wire-level fake Discord and the fake
OpenAI-compatible server (both in this process), with embeddings off and learning on (the default
projectors, answered like a well-behaved model). Messages arrive at `--rate` a minute, spread over
several guilds and channels and users; `--mentions` of them mention the bot and get a reply, the rest
are ordinary messages it stores and learns from. Every `--sample` seconds the bot's VmRSS is read from
/proc/<pid>/status and printed. With `--tracemalloc` the bot traces allocations (app/memtrace.py,
FAMILIAR_TRACEMALLOC) and the top growth since its first snapshot is printed at the end. Tracing
inflates the RSS itself (130 -> 240 MB, measured): `--tracemalloc --frames 0` only counts the live
objects by type, which leaves the RSS as it is.

    python -m bench.bench_soak [--minutes N] [--rate PER_MINUTE] [--mentions SHARE] [--tracemalloc]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repo root

import argparse
import asyncio
import os
import random
import re
import signal
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from app.config.paths import FamiliarPaths
from app.runtime.projectors import dossier, reflection, rich_note, summary, supersede
from bench.bench_projector import Answers
from tests.conftest import TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM, echo_reply

REPO = Path(__file__).resolve().parents[1]
GUILDS = 3
CHANNELS_PER_GUILD = 3
USERS = 8
WORDS = [
    "lantern",
    "moss",
    "river",
    "tea",
    "kettle",
    "garden",
    "owl",
    "map",
    "harbour",
    "violin",
    "pebble",
    "storm",
    "bread",
    "comet",
    "ferry",
    "clock",
    "orchard",
    "candle",
    "thread",
    "mirror",
    "fox",
    "meadow",
    "ink",
    "bell",
]


def rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) / 1024 if found else None


def model(rng: random.Random) -> Callable[[list[dict[str, Any]]], str]:
    """Each projector's prompt answered validly (bench_projector's answers); a reply echoes."""
    answers = Answers(seed=rng.randrange(1 << 30))
    by_system = [
        (rich_note.SYSTEM[:40], answers.extraction),
        (summary.SYSTEM[:40], answers.summary),
        (reflection.SYSTEM[:40], answers.reflection),
        (dossier.SYSTEM[:40], answers.dossier),
        (supersede.SYSTEM[:40], answers.supersede),
    ]

    def reply(messages: list[dict[str, Any]]) -> str:
        system = str(messages[0].get("content", "")) if messages else ""
        for prefix, answer in by_system:
            if system.startswith(prefix):
                try:
                    return answer(messages)
                except (IndexError, ValueError):
                    return '{"facts": []}'
        return echo_reply(messages)

    return reply


class Bot:
    """The headless process: counts its event lines and keeps the last few for a failure message."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.tail: deque[str] = deque(maxlen=40)
        self.counts = {"message_in": 0, "reply_out": 0, "errors": 0}
        self.running = asyncio.Event()
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stderr is not None
        while raw := await self.process.stderr.readline():
            line = raw.decode("utf-8", "replace").rstrip()
            self.tail.append(line)
            for kind in ("message_in", "reply_out"):
                if f"familiar: {kind}" in line:
                    self.counts[kind] += 1
            if " ERROR " in line or "Traceback" in line:
                self.counts["errors"] += 1
            if "is running" in line:
                self.running.set()


async def feed(discord_fake: FakeDiscord, args: argparse.Namespace, places: list[tuple[int, int]], stop: float) -> int:
    """Messages at a steady rate until `stop` (monotonic); returns how many were said."""
    rng = random.Random(19)
    interval = 60.0 / args.rate
    sent = 0
    next_at = time.monotonic()
    while time.monotonic() < stop:
        guild_id, channel_id = rng.choice(places)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 18)))
        await discord_fake.send_message(
            channel_id=channel_id,
            guild_id=guild_id,
            author_id=7000 + rng.randrange(USERS),
            content=f"{words} #{sent}",
            mentions_bot=rng.random() < args.mentions,
        )
        sent += 1
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    return sent


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=120.0)
    parser.add_argument("--rate", type=float, default=60.0, help="messages a minute")
    parser.add_argument("--mentions", type=float, default=0.25, help="share of messages that mention the bot")
    parser.add_argument("--sample", type=float, default=60.0, help="seconds between RSS samples")
    parser.add_argument("--tracemalloc", action="store_true", help="trace the bot's allocations (costs memory)")
    parser.add_argument(
        "--frames", type=int, default=1, help="stack frames tracemalloc keeps per allocation (0: object counts only)"
    )
    parser.add_argument("--snapshot", type=float, default=300.0, help="seconds between tracemalloc snapshots")
    args = parser.parse_args()

    discord_fake = FakeDiscord(token=TOKEN)
    for n in range(USERS):
        discord_fake.add_user(7000 + n, f"user{n}")
    places: list[tuple[int, int]] = []
    for g in range(GUILDS):
        guild_id = 600 + g * 10
        channels = {guild_id + 1 + c: f"chan-{c}" for c in range(CHANNELS_PER_GUILD)}
        discord_fake.add_guild(guild_id, f"Soak {g}", channels)
        places += [(guild_id, channel_id) for channel_id in channels]
    llm = FakeLLM()
    llm.default_reply = model(random.Random(7))
    await discord_fake.start()
    await llm.start()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        paths = FamiliarPaths(root=home, name="default")
        write_character_toml(paths, discord_fake.api_base, discord_fake.gateway_url, llm.base_url)
        trace_file = Path(tmp) / "tracemalloc.txt"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
        env.update({"FAMILIAR_HOME": str(home), "DISCORD_TOKEN": TOKEN, "PYTHONPATH": str(REPO)})
        if args.tracemalloc:
            env.update(
                {
                    "FAMILIAR_TRACEMALLOC": str(trace_file),
                    "FAMILIAR_TRACEMALLOC_SECONDS": str(args.snapshot),
                    "FAMILIAR_TRACEMALLOC_FRAMES": str(args.frames),
                }
            )
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "app",
            "run",
            "--headless",
            env=env,
            cwd=REPO,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        bot = Bot(process)
        # A stopped bench (Ctrl-C, SIGTERM) stops the bot too, not leaving it running.
        tracing = (f"{args.frames} frames" if args.frames else "objects only") if args.tracemalloc else "off"
        this = asyncio.current_task()
        assert this is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this.cancel)
        try:
            await asyncio.wait_for(bot.running.wait(), 120)
            started = time.monotonic()
            stop = started + args.minutes * 60
            start_rss = rss_mb(process.pid)
            print(
                f"soak: {args.minutes:g} min at {args.rate:g} messages/min ({args.mentions:.0%} mentions) over"
                f" {GUILDS} guilds x {CHANNELS_PER_GUILD} channels, {USERS} users; embeddings off, learning on;"
                f" tracemalloc {tracing};"
                f" pid {process.pid}",
                flush=True,
            )
            print(f"  t=   0.0 min  rss {start_rss:7.1f} MB", flush=True)
            feeding = asyncio.ensure_future(feed(discord_fake, args, places, stop))
            samples: list[tuple[float, float]] = [(0.0, start_rss or 0.0)]
            next_sample = started + args.sample
            llm_requests = 0
            while not feeding.done():
                await asyncio.wait({feeding}, timeout=max(0.0, next_sample - time.monotonic()))
                if process.returncode is not None:
                    raise SystemExit(f"the bot ended with {process.returncode}:\n" + "\n".join(bot.tail))
                if time.monotonic() >= next_sample:
                    next_sample += args.sample
                    minutes = (time.monotonic() - started) / 60
                    rss = rss_mb(process.pid) or 0.0
                    samples.append((minutes, rss))
                    llm_requests += len(llm.requests)
                    llm.requests.clear()  # the fake keeps every prompt: this process's memory, not the bot's
                    print(
                        f"  t={minutes:6.1f} min  rss {rss:7.1f} MB  in {bot.counts['message_in']:6d}"
                        f"  replies {bot.counts['reply_out']:5d}  llm requests {llm_requests:6d}"
                        f"  errors {bot.counts['errors']}",
                        flush=True,
                    )
            said = feeding.result()
            # Let the last replies land before the figures are taken.
            for _ in range(120):
                if bot.counts["message_in"] >= said:
                    break
                await asyncio.sleep(0.5)
            end_rss = rss_mb(process.pid) or 0.0
            trace = trace_file.read_text(encoding="utf-8") if trace_file.exists() else ""
            process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(process.wait(), 60)
            await asyncio.wait_for(bot.reader, 10)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    await llm.close()
    await discord_fake.close()

    at_30 = next((rss for minutes, rss in samples if minutes >= 30.0), None)
    after = [rss for minutes, rss in samples if minutes >= 30.0]
    print(
        f"messages said {said}, stored {bot.counts['message_in']}, replies {bot.counts['reply_out']},"
        f" llm requests {llm_requests + len(llm.requests)}, errors logged {bot.counts['errors']}, exit code {code}"
    )
    print(f"RSS start {start_rss:.1f} MB, end {end_rss:.1f} MB, max {max(r for _m, r in samples):.1f} MB")
    if at_30 is not None:
        print(
            f"RSS at 30 min {at_30:.1f} MB; after 30 min: end {(end_rss - at_30) / at_30:+.1%},"
            f" range {min(after):.1f}-{max(after):.1f} MB ({(max(after) - at_30) / at_30:+.1%} at most)"
            " (target: within 10%)"
        )
    else:
        first = samples[1][1] if len(samples) > 1 else start_rss or 0.0
        print(f"RSS growth from the first minute to the end: {end_rss - first:+.1f} MB over {samples[-1][0]:.1f} min")
    # Each trim (app/native_memory.py) and each index merge moves the RSS by several MB from one minute
    # to the next: the medians of 10-minute windows show the trend that single samples hide.
    print("RSS medians of 10-minute windows:")
    for window in range(0, int(samples[-1][0]) + 1, 10):
        inside = [rss for minutes, rss in samples if window <= minutes < window + 10]
        if inside:
            print(f"  {window:4d}-{window + 10:<4d} min  {statistics.median(inside):7.1f} MB  ({len(inside)} samples)")
    if trace:
        overhead = re.search(r"tracemalloc overhead: ([\d.]+) MiB", trace)
        if overhead:
            print(
                f"RSS at the end less tracemalloc's own memory: {end_rss - float(overhead.group(1)) * 1.048576:.1f} MB"
            )
        print("the bot's growth since its first snapshot (app/memtrace.py):")
        print(trace.rstrip())


if __name__ == "__main__":
    asyncio.run(main())
