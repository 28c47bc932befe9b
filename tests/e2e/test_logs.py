"""Log files and terminal output of real `familiar` processes against the fake Discord and the fake LLM.

The log file keeps what happened (ids, lengths, states) and never what was said; terminal output is the
command's answer, each error once, worded for a terminal.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from tests.conftest import ALICE, GENERAL, GUILD_ID, write_character_toml
from tests.e2e.test_headless import _cli, _start
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

SECRET_WORDS = "the violet heron sleeps under bridge nine"
LIBRARY_MARKERS = ("httpx", "discord.client", "discord.gateway", "PyNaCl", "davey", "HTTP Request", " INFO app.")


@pytest_asyncio.fixture
async def home(tmp_path: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM) -> AsyncIterator[Path]:
    root = tmp_path / "home"
    write_character_toml(
        FamiliarPaths(root=root, name="default"),
        fake_discord.api_base,
        fake_discord.gateway_url,
        fake_llm.base_url,
        extra="\n[memory.learning]\ntick_seconds = 0.2\nbatch_turns = 1\n",
    )
    yield root


def _log_text(home: Path) -> str:
    folder = home / "logs"
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.glob("familiar.log*")))


async def test_the_log_file_has_ids_and_lengths_never_the_text_and_the_console_has_no_library_lines(
    home: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    process = await _start(home)
    await process.wait_for_line("is running")
    sent = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=SECRET_WORDS, mentions_bot=True
    )
    await fake_discord.wait_for_posted(1, timeout=20)
    await process.wait_for_line("INFO familiar: reply_out")
    await fake_discord.edit_message(sent, SECRET_WORDS + " again")
    await process.wait_for_line("INFO familiar: edit")
    await fake_llm.wait_for_requests(3, timeout=20)  # the start check, the reply, and memory work on the text
    process.process.send_signal(signal.SIGTERM)
    assert await process.wait() == 0

    log = _log_text(home)
    assert log, "no log file was written"
    words = SECRET_WORDS.split()
    assert not [w for w in words if len(w) > 4 and w in log], log  # not even a word of it
    assert f"message_in Lantern Club #general [message {sent}, {len('alice: ' + SECRET_WORDS)} chars]" in log
    assert f"reply_out Lantern Club #general [reply to {sent}, " in log
    assert f"edit Lantern Club #general [edit of {sent}, " in log
    assert "httpx" in log  # library lines go to the file...
    console = "\n".join(process.lines)
    for marker in LIBRARY_MARKERS:  # ...and not to the terminal
        assert marker not in console, (marker, console)
    assert SECRET_WORDS in console  # the owner watching headless mode sees what was said (escaped)


async def test_a_start_failure_is_printed_once(home: Path) -> None:
    process = await _start(home, token="wrong-token")
    assert await process.wait() == 1
    said = [line for line in process.lines if "Discord rejected the bot token" in line]
    assert said == [
        "error: Discord rejected the bot token. Copy a fresh token from the Developer Portal (Bot > Reset Token)."
    ]
    assert "rejected the bot token" in _log_text(home)  # the file has it


async def test_a_failure_while_running_is_printed_once(
    home: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    process = await _start(home)
    await process.wait_for_line("is running")
    await fake_llm.close()
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="hello?", mentions_bot=True
    )
    await process.wait_for_line("Cannot reach the LLM endpoint")
    process.process.send_signal(signal.SIGTERM)
    assert await process.wait() == 0
    said = [line for line in process.lines if "Cannot reach the LLM endpoint" in line]
    assert len(said) == 1, said
    assert "ERROR familiar:" in said[0]


async def test_headless_names_the_environment_and_character_toml_not_settings(home: Path) -> None:
    process = await _start(home, token="")
    assert await process.wait() == 1
    (line,) = [line for line in process.lines if line.startswith("error:")]
    assert line == "error: No bot token yet: set the DISCORD_TOKEN environment variable."

    toml = home / "familiars" / "default" / "character.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text.replace('model = "test-model"', 'model = ""'), encoding="utf-8")
    process = await _start(home)
    assert await process.wait() == 1
    (line,) = [line for line in process.lines if line.startswith("error:")]
    assert "Settings" not in line
    assert f"[llm] model in {toml} (or FAMILIAR_LLM_MODEL)" in line


async def test_commands_print_their_answer_only(home: Path, fake_llm: FakeLLM) -> None:
    for argv in (("turns", "search", "lantern"), ("index", "status"), ("facts", "list", "--json")):
        code, out, err = await _cli(home, *argv)
        assert code == 0, err
        assert err == "", (argv, err)
        assert " INFO " not in out
    code, out, err = await _cli(home, "index", "rebuild")
    assert code == 0
    assert all(line.startswith(("rebuilding ", "turns index", "facts index")) for line in err.splitlines()), err
    code, out, err = await _cli(home, "facts", "show", "99")
    assert (code, out) == (1, "")
    assert err == "error: there is no fact 99\n"


async def test_an_unwritable_log_folder_is_said_in_one_line_and_the_command_still_answers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "familiars" / "default").mkdir(parents=True)
    (home / "logs").write_text("a file where the log folder goes", encoding="utf-8")
    code, out, err = await _cli(home, "facts", "list")
    assert (code, out) == (0, "no facts\n"), err
    (line,) = err.splitlines()
    assert line.startswith(f"warning: cannot write the log file {home / 'logs' / 'familiar.log'} (")
