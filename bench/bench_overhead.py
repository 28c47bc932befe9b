"""Overhead from a Discord message arriving to the LLM request leaving (target: p95 <= 30 ms).

The real familiar runs against the wire-level fake Discord and the fake OpenAI-compatible server in
this process; both stamp time.perf_counter(), so the difference is the familiar's own work (gateway
decode, discord.py, storing the turn, reading history, building the prompt, the openai client).

    python -m bench.bench_overhead [--messages N]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from tests.conftest import ALICE, GENERAL, GUILD_ID, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=300)
    args = parser.parse_args()
    discord_fake = FakeDiscord(token=TOKEN)
    discord_fake.add_user(ALICE, "alice")
    discord_fake.add_guild(GUILD_ID, "Bench", {GENERAL: "general"})
    llm = FakeLLM()
    await discord_fake.start()
    await llm.start()
    with tempfile.TemporaryDirectory() as tmp:
        paths = FamiliarPaths(root=Path(tmp), name="bench")
        write_character_toml(paths, discord_fake.api_base, discord_fake.gateway_url, llm.base_url)
        familiar = await Familiar.open(
            paths, SecretStore("bench", paths.secrets_file, use_keyring=False), env={"DISCORD_TOKEN": TOKEN}
        )
        await familiar.start()
        samples: list[float] = []
        for i in range(args.messages):
            sent = time.perf_counter()
            await discord_fake.send_message(
                channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=f"hello {i}", mentions_bot=True
            )
            (request, *_rest) = (await llm.wait_for_requests(i + 1))[i:]
            samples.append((request.received_at - sent) * 1000)
            await discord_fake.wait_for_posted(i + 1)
        await familiar.close()
    await llm.close()
    await discord_fake.close()
    print(
        f"message in -> LLM request out over {len(samples)} messages:"
        f" p50 {_pct(samples, 0.5):.2f} ms  p95 {_pct(samples, 0.95):.2f} ms  max {max(samples):.2f} ms"
        " (target p95 <= 30 ms)"
    )


if __name__ == "__main__":
    asyncio.run(main())
