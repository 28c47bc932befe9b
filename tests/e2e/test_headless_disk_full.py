"""`familiar run --headless` on a disk that fills up and is freed again (issue 18, item 18): its output
says "disk full" while it lasts, `familiar index status` meanwhile is a one-line error (no traceback),
and once there is room the messages said meanwhile are stored while it still runs; nothing stored is
lost, the database passes integrity_check, replies resume.

A real process against the fake Discord and the fake LLM, its data folder on a small tmpfs that the
test fills with a filler file (skipped where mounting is not permitted).
"""

from __future__ import annotations

import json
import signal
import sqlite3

import pytest

from app.config.paths import FamiliarPaths
from tests.conftest import ALICE, BOB, GENERAL, GUILD_ID, write_character_toml
from tests.e2e.test_headless import _cli, _start
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM
from tests.small_disk import SmallDisk

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

SAID_WHILE_FULL = 30


async def test_headless_says_disk_full_commands_say_one_line_and_what_was_said_is_stored_once_there_is_room(
    small_disk: SmallDisk, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    home = small_disk.path / "home"
    paths = FamiliarPaths(root=home, name="default")
    write_character_toml(paths, fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url)
    familiar = await _start(home)
    try:
        await familiar.wait_for_line("is running")
        await familiar.wait_for_line("caught up")
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=BOB, content="stored before the disk filled"
        )
        await familiar.wait_for_line("stored before the disk filled")

        small_disk.fill()
        for n in range(SAID_WHILE_FULL):
            await fake_discord.send_message(
                channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=f"said while full {n}"
            )
        full = await familiar.wait_for_line("disk full: ")
        assert "not stored yet" in full or "cannot be stored" in full
        assert str(paths.folder) in full

        # A command while the disk is full: one line naming the problem, not a traceback.
        for command in (("index", "status"), ("index", "status", "--json"), ("turns", "search", "full")):
            code, out, err = await _cli(home, *command)
            assert code == 1, (command, out, err)
            assert out == ""
            assert err.count("\n") == 1, err
            assert err.startswith(f"error: the disk holding {paths.folder} is full ("), err
            assert "free some space" in err
            assert "Traceback" not in err

        # Room again, and nobody says anything: the familiar finds it and catches up while it runs.
        small_disk.free()
        await familiar.wait_for_line("disk full no more", timeout=40)
        await familiar.wait_for_line(f"backfilled {SAID_WHILE_FULL} messages in #general", timeout=40)
        code, out, err = await _cli(home, "turns", "search", "said while full", "--limit", "100", "--json")
        assert code == 0, err
        found = sorted(h["content"] for h in json.loads(out)["hits"] if h["content"].startswith("said while full"))
        assert found == sorted(f"said while full {n}" for n in range(SAID_WHILE_FULL))

        # Replies resumed.
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="still with us?", mentions_bot=True
        )
        [reply] = await fake_discord.wait_for_posted(1, timeout=20)
        assert reply.content == "echo: alice: still with us?"
        await familiar.wait_for_line("INFO familiar: reply_out")
        familiar.process.send_signal(signal.SIGTERM)
        assert await familiar.wait() == 0
    finally:
        small_disk.free()
        if familiar.process.returncode is None:
            familiar.process.kill()
            await familiar.wait()
    assert not [line for line in familiar.lines if "Traceback" in line], familiar.lines

    # Nothing stored was lost, and the database is sound.
    db = sqlite3.connect(paths.history_db)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        contents = [r[0] for r in db.execute("SELECT content FROM turns ORDER BY id")]
    finally:
        db.close()
    assert contents[0] == "stored before the disk filled"
    assert contents[1 : 1 + SAID_WHILE_FULL] == [f"said while full {n}" for n in range(SAID_WHILE_FULL)]
    assert contents[-2:] == ["still with us?", "echo: alice: still with us?"]
