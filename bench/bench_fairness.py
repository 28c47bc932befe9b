"""Reply latency in an idle channel while the model stalls on two other channels' prompts (target:
within 2x of the same latency with nothing stalled, measured in the same run).

The real familiar runs against the wire-level fake Discord and the fake OpenAI-compatible server in
this process, with the default concurrency cap ([llm] max_concurrency = 2) and a 60 s model timeout.
First a mention in an idle channel is answered `--samples` times with nothing stalled; then two
mentions in two other channels are accepted by the endpoint and never answered, and the idle
channel's mentions are answered again while both are held. Each latency is from the message being
said to the reply being posted to the fake Discord; the ratio is of the mean latencies, so a single
reply held back for a model timeout shows in it.

    python -m bench.bench_fairness [--samples N] [--llm-timeout SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from tests.conftest import ALICE, GUILD_ID, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM

IDLE = GUILD_ID + 1
STALLED = (GUILD_ID + 2, GUILD_ID + 3)
NEVER = "never answered"


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _replies(discord_fake: FakeDiscord, samples: int, wait: float, label: str) -> list[float]:
    """Latencies (ms) of `samples` mentions answered one after another in the idle channel."""
    out: list[float] = []
    for n in range(samples):
        posted = len(discord_fake.posted)
        sent = time.perf_counter()
        await discord_fake.send_message(
            channel_id=IDLE, guild_id=GUILD_ID, author_id=ALICE, content=f"{label} {n}", mentions_bot=True
        )
        await discord_fake.wait_for_posted(posted + 1, timeout=wait)
        out.append((time.perf_counter() - sent) * 1000)
    return out


def _line(name: str, samples: list[float]) -> str:
    return (
        f"  {name:<22} mean {statistics.fmean(samples):8.2f} ms  median {statistics.median(samples):7.2f} ms"
        f"  p95 {_pct(samples, 0.95):8.2f} ms  max {max(samples):9.2f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--llm-timeout", type=float, default=60.0)
    args = parser.parse_args()
    discord_fake = FakeDiscord(token=TOKEN)
    discord_fake.add_user(ALICE, "alice")
    discord_fake.add_guild(GUILD_ID, "Bench", {IDLE: "idle", STALLED[0]: "stalled-1", STALLED[1]: "stalled-2"})
    llm = FakeLLM()
    await discord_fake.start()
    await llm.start()
    wait = args.llm_timeout + 30.0  # the old pool made a reply wait a whole model timeout: let it show
    with tempfile.TemporaryDirectory() as tmp:
        paths = FamiliarPaths(root=Path(tmp), name="bench")
        write_character_toml(paths, discord_fake.api_base, discord_fake.gateway_url, llm.base_url)
        toml = paths.character_toml.read_text(encoding="utf-8")
        paths.character_toml.write_text(
            toml.replace("timeout = 5.0\n", f"timeout = {args.llm_timeout}\n", 1), encoding="utf-8"
        )
        familiar = await Familiar.open(
            paths, SecretStore("bench", paths.secrets_file, use_keyring=False), env={"DISCORD_TOKEN": TOKEN}
        )
        await familiar.start()
        # Warm up every channel's path (the first request loads the openai package), unmeasured.
        for channel in (IDLE, *STALLED):
            posted = len(discord_fake.posted)
            await discord_fake.send_message(
                channel_id=channel, guild_id=GUILD_ID, author_id=ALICE, content="warm up", mentions_bot=True
            )
            await discord_fake.wait_for_posted(posted + 1, timeout=wait)
        none_stalled = await _replies(discord_fake, args.samples, wait, "calm")
        llm.stall(NEVER)
        for channel in STALLED:
            await discord_fake.send_message(
                channel_id=channel, guild_id=GUILD_ID, author_id=ALICE, content=f"a question {NEVER}", mentions_bot=True
            )
        await llm.wait_for_stalled(len(STALLED), timeout=wait)
        started = time.perf_counter()
        two_stalled = await _replies(discord_fake, args.samples, wait, "busy")
        stalled_for = time.perf_counter() - started
        await familiar.close()
    await llm.close()
    await discord_fake.close()
    # The mean counts every reply's wait: one reply held for a whole model timeout shows in it.
    ratio = statistics.fmean(two_stalled) / statistics.fmean(none_stalled)
    median_ratio = statistics.median(two_stalled) / statistics.median(none_stalled)
    print(f"reply latency in an idle channel over {args.samples} replies each (llm timeout {args.llm_timeout:g} s):")
    print(_line("nothing stalled", none_stalled))
    print(_line(f"{len(STALLED)} requests stalled", two_stalled))
    print(f"  ratio {ratio:.2f}x of the means (target <= 2x); {median_ratio:.2f}x of the medians")
    if stalled_for >= args.llm_timeout:
        print(
            f"  note: the stalled samples took {stalled_for:.1f} s, past the model timeout: the stalled"
            " requests gave up during them, and the samples after that ran with nothing stalled"
        )


if __name__ == "__main__":
    asyncio.run(main())
