"""A kill -9 of `familiar run --headless` in the middle of a burst, then a restart: what was missed is
fetched from the channel history and stored exactly once, and nothing missed is answered."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from tests.conftest import ALICE, GENERAL, GUILD_ID, write_character_toml
from tests.e2e.test_headless import _start
from tests.fakes.discord_server import FakeDiscord, PostedMessage
from tests.fakes.llm_server import FakeLLM

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

BURST = 8
KILL_AT = 3  # the third reply: Discord accepts it, the familiar dies before it hears back


@pytest_asyncio.fixture
async def home(tmp_path: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM) -> AsyncIterator[Path]:
    root = tmp_path / "home"
    write_character_toml(
        FamiliarPaths(root=root, name="default"), fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url
    )
    yield root


def _turns(db: Path) -> list[tuple[int, str, str, int | None]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT message_id, author_key, content, reply_to FROM turns WHERE message_id IS NOT NULL ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    return [(int(r[0]), str(r[1]), str(r[2]), r[3]) for r in rows]


async def test_a_kill_in_a_burst_then_a_restart_stores_what_was_missed_exactly_once(
    home: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    first = await _start(home)
    await first.wait_for_line("is running")
    await first.wait_for_line("caught up: nothing missed")  # the first start's catch-up: an empty history

    killed = asyncio.Event()

    async def kill_at(post: PostedMessage) -> None:
        if len(fake_discord.posted) == KILL_AT and not killed.is_set():
            first.process.send_signal(signal.SIGKILL)
            await first.wait()
            killed.set()

    fake_discord.on_post = kill_at
    burst = await asyncio.gather(
        *(
            fake_discord.send_message(
                channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=f"burst {n}", mentions_bot=True
            )
            for n in range(BURST)
        )
    )
    async with asyncio.timeout(30):
        await killed.wait()
    assert first.process.returncode == -signal.SIGKILL
    fake_discord.on_post = None
    unconfirmed = fake_discord.posted[KILL_AT - 1]
    while_down = [
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=f"while down {n}", mentions_bot=True
        )
        for n in range(3)
    ]

    second = await _start(home)
    await second.wait_for_line("is running")
    line = await second.wait_for_line("backfilled")
    assert "Lantern Club #general backfilled" in line
    assert line.endswith("messages in #general")
    await second.wait_for_line("caught up:")
    fresh = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="are you back?", mentions_bot=True
    )
    posted = await fake_discord.wait_for_posted(KILL_AT + 1, timeout=20)
    await second.wait_for_line("INFO familiar: reply_out", count=1)
    second.process.send_signal(signal.SIGTERM)
    assert await second.wait() == 0

    # Nothing missed was answered: after the restart, only the new mention got a reply.
    assert len(posted) == KILL_AT + 1
    assert posted[-1].message_reference is not None
    assert int(posted[-1].message_reference["message_id"]) == fresh

    turns = await asyncio.to_thread(_turns, home / "familiars" / "default" / "history.db")
    ids = [t[0] for t in turns]
    assert len(ids) == len(set(ids)), "a message was stored twice"
    by_id = {t[0]: t for t in turns}
    # Every message of the burst and of the downtime is there, once, as alice said it.
    for n, message_id in enumerate(burst):
        assert by_id[message_id][1:3] == (f"discord:{ALICE}", f"burst {n}")
    for n, message_id in enumerate(while_down):
        assert by_id[message_id][1:3] == (f"discord:{ALICE}", f"while down {n}")
    # Every reply Discord accepted is stored as the familiar's, linked to the message it answers;
    # the one accepted at the kill was found in the history.
    for post in posted:
        assert post.message_reference is not None
        answered = int(post.message_reference["message_id"])
        assert by_id[post.message_id][1:] == ("familiar:self", post.content, answered)
    assert by_id[unconfirmed.message_id][3] == burst[KILL_AT - 1]
    assert set(by_id) == {*burst, *while_down, fresh, *(p.message_id for p in posted)}
