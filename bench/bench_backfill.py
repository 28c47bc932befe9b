"""Catch-up after downtime: missed messages fetched through the fake Discord and stored, turns per second.

The messages are said while the familiar is stopped (the fake Discord keeps them, as Discord does);
the clock runs from Start until the catch-up reports it is done, so it covers the login, every
history page through the real discord.py client (100 messages a page), building the turns and
storing them (SQL, then the turn index through its group committer).

    python -m bench.bench_backfill [--messages N] [--channels N]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.events import Activity, ActivityKind, RuntimeEvent
from app.runtime.service import Familiar
from tests.conftest import ALICE, BOB, GUILD_ID, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM

WORDS = [
    "lantern",
    "kettle",
    "map",
    "dragon",
    "tea",
    "river",
    "moon",
    "owl",
    "ember",
    "fern",
    "harbor",
    "quill",
    "raven",
    "salt",
    "thistle",
]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--channels", type=int, default=1)
    args = parser.parse_args()
    channels = {GUILD_ID + 1 + n: f"channel-{n}" for n in range(args.channels)}
    per_channel = -(-args.messages // args.channels)
    discord_fake = FakeDiscord(token=TOKEN)
    discord_fake.add_user(ALICE, "alice")
    discord_fake.add_user(BOB, "bob")
    discord_fake.add_guild(GUILD_ID, "Bench", channels)
    for n in range(args.messages):
        text = " ".join(WORDS[(n * 7 + k) % len(WORDS)] for k in range(12)) + f" number {n}"
        await discord_fake.send_message(
            channel_id=list(channels)[n % args.channels],
            guild_id=GUILD_ID,
            author_id=(ALICE, BOB)[n % 2],
            content=text,
        )
    llm = FakeLLM()
    await discord_fake.start()
    await llm.start()
    with tempfile.TemporaryDirectory() as tmp:
        paths = FamiliarPaths(root=Path(tmp), name="bench")
        write_character_toml(paths, discord_fake.api_base, discord_fake.gateway_url, llm.base_url)
        toml = paths.character_toml.read_text(encoding="utf-8")
        paths.character_toml.write_text(
            toml.replace("[discord]\n", f"[discord]\nbackfill_messages = {per_channel}\n", 1), encoding="utf-8"
        )
        familiar = await Familiar.open(
            paths, SecretStore("bench", paths.secrets_file, use_keyring=False), env={"DISCORD_TOKEN": TOKEN}
        )
        done = asyncio.Event()

        def on_event(event: RuntimeEvent) -> None:
            if (
                isinstance(event, Activity)
                and event.kind is ActivityKind.INFO
                and event.summary.startswith("caught up")
            ):
                done.set()

        familiar.subscribe(on_event)
        started = time.perf_counter()
        await familiar.start()
        async with asyncio.timeout(600):
            await done.wait()
        caught_up = time.perf_counter() - started
        stored = await familiar.history.store.count_turns()
        await familiar.history.turns_index.flush(600)
        indexed = time.perf_counter() - started
        await familiar.close()
    await llm.close()
    await discord_fake.close()
    pages = len(discord_fake.history_queries)
    print(
        f"backfill of {args.messages} missed messages in {args.channels} channel(s), {pages} history pages:"
        f" {stored} turns stored in {caught_up:.2f} s = {stored / caught_up:,.0f} turns/s"
        f" (searchable after {indexed:.2f} s = {stored / indexed:,.0f} turns/s)"
    )
    if stored != args.messages:
        raise SystemExit(f"expected {args.messages} turns, stored {stored}")


if __name__ == "__main__":
    asyncio.run(main())
