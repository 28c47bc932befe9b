"""The event loop while lorebook regex keys near their time limit are scanned (issue 19 item 8).

A key the time-limited engine (`regex`) searches in just under its limit (bounded_regex.KEY_BUDGET, 100 ms)
is never switched off, and a scan spends up to bounded_regex.SCAN_BUDGET (0.5 s) on such keys. The real
familiar runs against the wire-level fake Discord and the fake OpenAI-compatible server in this process,
with a lorebook of `--keys` such keys (each a look-ahead RE2 cannot express, scanning the newest message
only, on a message calibrated so that one search takes as long as it can under `--search-ms`); a burst of
`--messages` mentions over five channels is sent at once, and a task ticking every 10 ms measures how long
the event loop went without running it.

Two runs in the same process: the scans on the event loop's thread (as before the fix: the layer's
executor swapped for one that runs each scan where it is called), then on the scan thread. Printed: the
longest and the total stall of the loop, the time until every reply was posted, and the ratios.

    python -m bench.bench_lore_stall [--keys N] [--messages N] [--search-ms MS]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

from app.cli import main as cli_main
from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.lore import bounded_regex
from app.runtime.context import lore_layer
from app.runtime.service import Familiar
from tests.conftest import ALICE, GUILD_ID, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM

CHANNELS = tuple(GUILD_ID + n for n in range(1, 6))
TICK = 0.010


class _OnTheLoop(Executor):
    """Runs each call where it is submitted: the scans back on the event loop's thread (the old path)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 (handed to the awaiting reply, as a thread's would be)
            future.set_exception(exc)
        return future


def _calibrate(search_ms: float) -> int:
    """How many "a" make one search of a slow key take longest while under `search_ms` (it doubles with each)."""
    compiled = bounded_regex.compile_fallback("(a|a)*(?=b)b{0,1}", 0)
    assert compiled is not None
    n = 8
    while n < 40:
        started = time.perf_counter()
        compiled.search("a" * (n + 1) + "!")
        if (time.perf_counter() - started) * 1000 >= search_ms:
            return n
        n += 1
    return n


def _book(path: Path, keys: int, run: str) -> Path:
    entries = {
        str(n): {
            "uid": n,
            "key": [f"/(a|a)*(?=b)b{{0,{n + 1}}}/"],
            "comment": f"Slow {n}",
            "scanDepth": 1,
            "content": "slow lore.",
        }
        for n in range(keys)
    }
    entries[str(keys)] = {"uid": keys, "key": ["owl"], "comment": "Owl", "content": f"Owl lore ({run})."}
    path.write_text(json.dumps({"entries": entries}), encoding="utf-8")
    return path


async def _burst(discord_fake: FakeDiscord, messages: int, text: str) -> tuple[float, float, float]:
    """(longest stall of the loop, total stall over the ticks, seconds until every reply was posted)."""
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            gaps.append(now - last - TICK)
            last = now

    posted = len(discord_fake.posted)
    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    for n in range(messages):
        await discord_fake.send_message(
            channel_id=CHANNELS[n % len(CHANNELS)],
            guild_id=GUILD_ID,
            author_id=ALICE,
            content=f"{text} owl {n}",
            mentions_bot=True,
        )
    await discord_fake.wait_for_posted(posted + messages, timeout=600)
    took = time.perf_counter() - started
    stop.set()
    await task
    return max(gaps), sum(g for g in gaps if g > TICK), took


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--search-ms", type=float, default=40.0)
    args = parser.parse_args()
    n = _calibrate(args.search_ms)
    text = "a" * n + "!"
    discord_fake = FakeDiscord(token=TOKEN)
    discord_fake.add_user(ALICE, "alice")
    discord_fake.add_guild(GUILD_ID, "Bench", {c: f"room-{i}" for i, c in enumerate(CHANNELS)})
    llm = FakeLLM()
    await discord_fake.start()
    await llm.start()
    results: dict[str, tuple[float, float, float]] = {}
    disabled: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = FamiliarPaths(root=Path(tmp), name="bench")
        write_character_toml(paths, discord_fake.api_base, discord_fake.gateway_url, llm.base_url)
        os.environ["FAMILIAR_HOME"] = tmp
        familiar = await Familiar.open(
            paths, SecretStore("bench", paths.secrets_file, use_keyring=False), env={"DISCORD_TOKEN": TOKEN}
        )
        await familiar.start()
        posted = len(discord_fake.posted)
        await discord_fake.send_message(  # warm up: the openai package, the scanner's compile
            channel_id=CHANNELS[0], guild_id=GUILD_ID, author_id=ALICE, content="warm up", mentions_bot=True
        )
        await discord_fake.wait_for_posted(posted + 1, timeout=60)
        thread = lore_layer._scan_thread()
        for name, executor in (("on the loop (before)", _OnTheLoop()), ("scan thread", thread)):
            # a book of its own for each run: a key one run switched off is on again in the next
            book = _book(Path(tmp) / "w.json", args.keys, name)
            assert cli_main(["--familiar", "bench", "lore", "import", str(book), "--replace"]) == 0
            for _ in range(200):  # until the lorebook watcher has taken the new file
                if any(name in e.content for e in familiar.lorebook_layer.book().entries):
                    break
                await asyncio.sleep(0.05)
            lore_layer._scans = executor  # type: ignore[assignment]
            results[name] = await _burst(discord_fake, args.messages, text)
            disabled[name] = len(familiar.lorebook_layer.scanner(familiar.lorebook_layer.book()).disabled)
        lore_layer._scans = thread
        await familiar.close()
    await llm.close()
    await discord_fake.close()
    probe = bounded_regex.compile_fallback("(a|a)*(?=b)b{0,1}", 0)
    assert probe is not None
    started = time.perf_counter()
    probe.search(text)
    one = (time.perf_counter() - started) * 1000
    print(
        f"{args.keys} regex keys of about {one:.0f} ms a search (key limit {bounded_regex.KEY_BUDGET * 1000:.0f} ms,"
        f" scan limit {bounded_regex.SCAN_BUDGET * 1000:.0f} ms), a burst of {args.messages} mentions over"
        f" {len(CHANNELS)} channels:"
    )
    for name, (longest, total, took) in results.items():
        print(
            f"  {name:<22} longest loop stall {longest * 1000:8.1f} ms  stalled {total:6.2f} s"
            f"  all replies in {took:6.2f} s  ({disabled[name]} keys switched off)"
        )
    before, after = results["on the loop (before)"], results["scan thread"]
    print(
        f"  longest stall {before[0] / max(after[0], 1e-6):.1f}x shorter on the scan thread;"
        f" all replies {after[2] / before[2]:.2f}x the time"
    )


if __name__ == "__main__":
    asyncio.run(main())
