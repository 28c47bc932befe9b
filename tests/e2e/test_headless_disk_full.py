"""`familiar run --headless` on a disk that fills up and is freed again (issue 18, item 18; issue 19,
item 5): its console says "disk full" once, then how many messages wait, then when it clears; commands
that only read (`index status`, `facts list`, `turns search`, `memory status`, `export`) answer beside
it and once it has stopped, a command that must write says "disk full" in one line (no traceback);
once there is room the messages said meanwhile are stored while it still runs; nothing stored is
lost, the database passes integrity_check, replies resume.

Real processes against the fake Discord and the fake LLM, the data folder on a small tmpfs that the
test fills with a filler file (skipped where mounting is not permitted).
"""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import pytest

from app.config.paths import FamiliarPaths
from tests.conftest import ALICE, BOB, GENERAL, GUILD_ID, write_character_toml
from tests.e2e.test_headless import _cli, _start
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM
from tests.small_disk import SmallDisk

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

SAID_WHILE_FULL = 30


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


async def _answers_while_full(home: Path, paths: FamiliarPaths, exported: Path, turns: int) -> None:
    """The commands that only read answer; one that must write says the disk is full, in one line."""
    code, out, err = await _cli(home, "index", "status")
    assert code == 0, err
    assert "Traceback" not in err
    line = next(line for line in out.splitlines() if line.startswith("turns: "))
    assert "the disk is full: it takes new documents once there is room" in line, out
    code, out, err = await _cli(home, "index", "status", "--json")
    assert code == 0, err
    assert {h["name"]: h["disk_full"] for h in json.loads(out)["indexes"]} == {"turns": True, "facts": True}
    code, out, err = await _cli(home, "facts", "list")
    assert (code, "Traceback" in err) == (0, False), err
    assert "Alice keeps a lantern" in out
    code, out, err = await _cli(home, "turns", "search", "stored", "--json")
    assert code == 0, err
    assert [h["content"] for h in json.loads(out)["hits"]] == ["stored before the disk filled"]
    code, out, err = await _cli(home, "memory", "status")
    assert (code, "Traceback" in err) == (0, False), err
    assert out.startswith("memory workers: ")
    code, out, err = await _cli(home, "export", str(exported))
    assert code == 0, err
    assert out.startswith(f"exported to {exported}: {turns} turn, 1 fact")
    assert "stored before the disk filled" in _text(exported)
    # A command that must write.
    code, out, err = await _cli(home, "facts", "remember", "Bob keeps bees", "--where", "guild:500/501")
    assert (code, out) == (1, ""), err
    assert err.count("\n") == 1, err
    assert err.startswith(f"error: the disk holding {paths.folder} is full ("), err
    assert "free some space" in err


async def test_headless_says_disk_full_once_then_its_count_reads_answer_and_what_was_said_is_stored_once_there_is_room(
    small_disk: SmallDisk, fake_discord: FakeDiscord, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    home = small_disk.path / "home"
    paths = FamiliarPaths(root=home, name="default")
    write_character_toml(paths, fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url)
    code, _out, err = await _cli(home, "facts", "remember", "Alice keeps a lantern", "--where", "guild:500/501")
    assert code == 0, err
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
        # Then how many messages wait (the count is said at most every few seconds, the latest last).
        await familiar.wait_for_line(f"disk full: {SAID_WHILE_FULL} messages in 1 channel wait for room", timeout=20)

        # Commands beside it while the disk is full.
        await _answers_while_full(home, paths, tmp_path / "while-running.jsonl", 1)

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

        # Full again with nothing running: SQLite cannot make its shared-memory file; the reads still answer.
        small_disk.fill()
        await _answers_while_full(home, paths, tmp_path / "while-stopped.jsonl", SAID_WHILE_FULL + 3)
    finally:
        small_disk.free()
        if familiar.process.returncode is None:
            familiar.process.kill()
            await familiar.wait()
    assert not [line for line in familiar.lines if "Traceback" in line], familiar.lines
    # "disk full" once, then its count; each message it kept out is not an error line of its own.
    assert len([line for line in familiar.lines if "ERROR familiar: disk full: " in line]) == 1, familiar.lines
    assert not [line for line in familiar.lines if "a message was not stored yet" in line], familiar.lines

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
