"""`familiar run --headless` as a real process against the fake Discord and the fake LLM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from tests.conftest import ALICE, GENERAL, GUILD_ID, TOKEN, write_character_toml
from tests.fakes.discord_server import CORRUPT_ZLIB_FRAME, FakeDiscord
from tests.fakes.llm_server import FakeLLM

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def _env(home: Path, token: str = TOKEN) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
    env.update({"FAMILIAR_HOME": str(home), "DISCORD_TOKEN": token, "PYTHONPATH": str(REPO)})
    return env


class Headless:
    """A running `familiar run --headless` process and what it printed."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.raw = bytearray()  # stderr as the terminal would have received it
        self._reader = asyncio.create_task(self._read())
        self._changed = asyncio.Event()

    async def _read(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.raw += line
            self.lines.append(line.decode("utf-8", "replace").rstrip())
            self._changed.set()
        self._changed.set()  # the end too: a line still awaited will never come

    async def wait_for_line(self, needle: str, timeout: float = 20.0, count: int = 1) -> str:
        async def scan() -> str:
            while True:
                found = [line for line in self.lines if needle in line]
                if len(found) >= count:
                    return found[count - 1]
                if self._reader.done():
                    raise AssertionError(f"process ended before printing {needle!r}: {self.lines}")
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(scan(), timeout)

    async def wait(self, timeout: float = 20.0) -> int:
        code = await asyncio.wait_for(self.process.wait(), timeout)
        await asyncio.wait_for(self._reader, timeout)
        return code


async def _start(home: Path, token: str = TOKEN, extra: dict[str, str] | None = None) -> Headless:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app",
        "run",
        "--headless",
        env={**_env(home, token), **(extra or {})},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    return Headless(process)


async def _cli(home: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app",
        *args,
        env=_env(home),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest_asyncio.fixture
async def home(tmp_path: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM) -> AsyncIterator[Path]:
    root = tmp_path / "home"
    write_character_toml(
        FamiliarPaths(root=root, name="default"), fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url
    )
    yield root


async def test_version() -> None:
    code, out, _err = await _cli(Path("/nonexistent"), "--version")
    assert code == 0
    assert out.startswith("familiar 0.")


async def test_headless_answers_and_keeps_every_turn_across_a_kill(
    home: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    first = await _start(home)
    await first.wait_for_line("is running")
    for i in range(5):
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=f"lantern {i}", mentions_bot=True
        )
        await fake_discord.wait_for_posted(i + 1, timeout=20)
    # "reply_out" is logged once the reply is committed as a turn (after Discord accepted it).
    await first.wait_for_line("INFO familiar: reply_out", count=5)
    first.process.send_signal(signal.SIGKILL)
    assert await first.wait() == -signal.SIGKILL

    # Every committed turn is still there after a kill -9; the index catches up on the next open.
    code, out, err = await _cli(home, "turns", "search", "lantern", "--limit", "50", "--json")
    assert code == 0, err
    contents = sorted(hit["content"] for hit in json.loads(out)["hits"])
    assert contents == sorted([f"lantern {i}" for i in range(5)] + [f"echo: alice: lantern {i}" for i in range(5)])

    second = await _start(home)
    await second.wait_for_line("is running")
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="still there?", mentions_bot=True
    )
    await fake_discord.wait_for_posted(6, timeout=20)
    # The CLI reads the store while the familiar runs (WAL readers; the index opened read-only).
    code, out, err = await _cli(home, "turns", "search", "still", "--json")
    assert code == 0, err
    assert "still there?" in [hit["content"] for hit in json.loads(out)["hits"]]
    second.process.send_signal(signal.SIGTERM)
    assert await second.wait() == 0
    await second.wait_for_line("stopping")


async def test_the_first_headless_run_on_a_fresh_data_root_creates_default(
    tmp_path: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """Issue 20 item 11: a server set up with environment variables only. The first `run --headless` on an
    empty data root made no familiar ("no familiar named 'default'"): it creates 'default' from the template,
    as the window's first launch does, says so in one line, and answers."""
    home = tmp_path / "fresh"
    env = {
        "FAMILIAR_DISCORD_API_BASE": fake_discord.api_base,
        "FAMILIAR_DISCORD_GATEWAY_URL": fake_discord.gateway_url,
        "FAMILIAR_LLM_BASE_URL": fake_llm.base_url,
        "FAMILIAR_LLM_MODEL": "echo",
    }
    headless = await _start(home, extra=env)
    await headless.wait_for_line("is running")
    created = [line for line in headless.lines if "created 'default'" in line]
    assert len(created) == 1
    assert str(home / "familiars" / "default") in created[0]
    assert (home / "familiars" / "default" / "character.toml").is_file()
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="hello there", mentions_bot=True
    )
    await fake_discord.wait_for_posted(1, timeout=20)
    headless.process.send_signal(signal.SIGTERM)
    assert await headless.wait() == 0

    # the next run finds it: nothing is created again
    again = await _start(home, extra=env)
    await again.wait_for_line("is running")
    again.process.send_signal(signal.SIGTERM)
    assert await again.wait() == 0
    assert not [line for line in again.lines if "created" in line]
    # a command still asks for a familiar that does not exist, and creates nothing
    code, _out, err = await _cli(home, "--familiar", "other", "facts", "list")
    assert code != 0
    assert "no familiar named 'other'" in err
    assert sorted(p.name for p in (home / "familiars").iterdir()) == ["default"]


async def test_bad_token_exits_with_one_line(home: Path) -> None:
    process = await _start(home, token="wrong-token")
    assert await process.wait() == 1
    errors = [line for line in process.lines if line.startswith("error:")]
    assert errors == [
        "error: Discord rejected the bot token. Copy a fresh token from the Developer Portal (Bot > Reset Token)."
    ]


async def test_missing_intent_exits_with_the_switch_to_flip(home: Path, fake_discord: FakeDiscord) -> None:
    fake_discord.allowed_privileged = 0
    process = await _start(home)
    assert await process.wait() == 1
    assert any(line.startswith("error:") and "Message Content Intent" in line for line in process.lines)


async def test_malformed_config_names_file_line_and_key(home: Path) -> None:
    toml = home / "familiars" / "default" / "character.toml"
    original = toml.read_text(encoding="utf-8")
    toml.write_text(original.replace("max_retries = 0", "max_retries = 0\nmax_retrys = 3"), encoding="utf-8")
    process = await _start(home)
    assert await process.wait() == 2
    (line,) = [line for line in process.lines if line.startswith("error:")]
    expected_line = original.splitlines().index("max_retries = 0") + 2
    assert f"{toml}, line {expected_line}, key 'llm.max_retrys': unknown key" in line
    assert toml.read_text(encoding="utf-8").count("max_retrys") == 1  # nothing rewritten


async def test_unreachable_llm_at_start_exits_with_one_line(home: Path, fake_llm: FakeLLM) -> None:
    await fake_llm.close()
    process = await _start(home)
    assert await process.wait() == 1
    errors = [line for line in process.lines if line.startswith("error:")]
    assert len(errors) == 1
    assert "Cannot reach the LLM endpoint" in errors[0]


async def test_an_llm_lost_while_running_is_logged_and_the_familiar_keeps_going(
    home: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    process = await _start(home)
    await process.wait_for_line("is running")
    await fake_llm.close()
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="hello?", mentions_bot=True
    )
    line = await process.wait_for_line("ERROR familiar:")  # the FailureReported event, logged as an error
    assert "Cannot reach the LLM endpoint" in line
    process.process.send_signal(signal.SIGTERM)
    assert await process.wait() == 0


async def test_bad_gateway_frames_are_logged_and_headless_keeps_answering(
    home: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """Before, the first of these ended the process (rc 1, "Could not connect to Discord: JSONDecodeError")."""
    process = await _start(home)
    await process.wait_for_line("is running")
    await fake_discord.wait_for_delivered()
    await fake_discord.send_raw_frame("<html>502 Bad Gateway</html>", plain=True)
    await process.wait_for_line("Discord sent a frame that is not JSON")
    await fake_discord.dispatch_raw("MESSAGE_CREATE", {"id": "1", "content": "half a message"})
    await process.wait_for_line("Discord sent a MESSAGE_CREATE event that cannot be read (KeyError: 'channel_id')")
    await fake_discord.send_raw_frame(CORRUPT_ZLIB_FRAME)
    await process.wait_for_line("does not decompress")
    await fake_discord.wait_for_resume(timeout=20)
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="are you still there?", mentions_bot=True
    )
    [post] = await fake_discord.wait_for_posted(1, timeout=20)
    assert post.content == "echo: alice: are you still there?"
    await process.wait_for_line("INFO familiar: reply_out")
    assert process.process.returncode is None
    process.process.send_signal(signal.SIGTERM)
    assert await process.wait() == 0
    assert not any("Could not connect" in line for line in process.lines)
    assert not any("half a message" in line for line in process.lines)  # a frame's text is never logged
    for needle in ("not JSON", "cannot be read", "does not decompress"):
        assert len([line for line in process.lines if needle in line]) == 1, needle  # each said once


async def test_terminal_escapes_in_discord_text_reach_the_log_escaped(
    home: Path, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """A message (and a display name) full of terminal controls: the headless log shows them as
    escapes, one line per record; before, ESC [2J cleared the owner's terminal."""
    mallory = 7666
    fake_discord.add_user(mallory, "mal\x1b[8mlory\u202e")
    hostile = (  # the activity log keeps the first 120 characters of a message
        "lantern \x1b[2J\x1b[H\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07\x07 \u202eesrever \x9b31m"
        "\n2024-05-01 12:00:00,000 ERROR familiar: forged"
    )
    process = await _start(home)
    await process.wait_for_line("is running")
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=mallory, content=hostile, mentions_bot=True
    )
    await fake_discord.wait_for_posted(1, timeout=20)
    incoming = await process.wait_for_line("INFO familiar: message_in")
    await process.wait_for_line("INFO familiar: reply_out")
    process.process.send_signal(signal.SIGTERM)
    assert await process.wait() == 0
    log = bytes(process.raw).decode("utf-8")
    for raw in ("\x1b", "\x07", "\u202e", "\x9b"):
        assert raw not in log, repr(raw)
    assert (
        "mal\\x1b[8mlory\\u202e: lantern \\x1b[2J\\x1b[H\\x1b]8;;https://evil.example/\\x07click\\x1b]8;;\\x07\\x07"
        " \\u202eesrever \\x9b31m\\n2024-05-01 12:00:00,000 ERROR familiar: forged"
    ) in incoming
    assert not any(line.startswith("2024-05-01") for line in process.lines)  # no forged line


@pytest_asyncio.fixture
async def reaper() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """The processes a test started: any still running at its end (the test failed) is killed."""
    started: list[asyncio.subprocess.Process] = []
    yield started
    for process in started:
        if process.returncode is None:
            process.kill()
            await process.wait()


def write_world_info(path: Path, *entries: tuple[str, list[str]]) -> Path:
    """A SillyTavern World Info file, as a user would download one."""
    data = {
        "entries": {
            str(uid): {"uid": uid, "key": keys, "keysecondary": [], "comment": title, "content": f"{title} lore."}
            for uid, (title, keys) in enumerate(entries)
        }
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# /(a|a)*$/ backtracks exponentially in Python's re on "aaaa...a!" (it passed the old safety check); the second
# needs a look-ahead, which RE2 cannot express, and backtracks exponentially in the time-limited engine too.
CATASTROPHIC = "/(a|a)*$/"
CATASTROPHIC_FALLBACK = "/(a|a)*(?=b)/"
TRIGGER = "a" * 60 + "!"


async def test_sigterm_stops_headless_within_seconds_with_a_catastrophic_key_and_a_reply_in_flight(
    home: Path,
    tmp_path: Path,
    fake_discord: FakeDiscord,
    fake_llm: FakeLLM,
    reaper: list[asyncio.subprocess.Process],
) -> None:
    lore = write_world_info(
        tmp_path / "world.json", ("Echo", [CATASTROPHIC]), ("Trap", [CATASTROPHIC_FALLBACK]), ("Owl", ["owl"])
    )
    code, _out, err = await _cli(home, "lore", "import", str(lore), "--replace")
    assert code == 0, err
    process = await _start(home)
    reaper.append(process.process)
    await process.wait_for_line("is running")
    fake_llm.hang_next()  # the reply stays in flight: the LLM never answers
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=TRIGGER, mentions_bot=True
    )
    await fake_llm.wait_for_requests(2, timeout=20)  # (1: the start-up check) the lorebook was scanned
    assert "Echo lore." in fake_llm.requests[1].messages[0]["content"]
    await process.wait_for_line('lorebook.toml entry 2 "Trap": the regex key /(a|a)*(?=b)/ ran over its time limit')
    stopping = asyncio.get_running_loop().time()
    process.process.send_signal(signal.SIGTERM)
    assert await process.wait(timeout=20) == 0
    assert asyncio.get_running_loop().time() - stopping < 5.0
    await process.wait_for_line("stopping")


async def test_sigterm_stops_headless_while_it_is_still_starting(
    home: Path, fake_llm: FakeLLM, reaper: list[asyncio.subprocess.Process]
) -> None:
    fake_llm.hang_next()  # the start-up check of the LLM endpoint never gets an answer
    process = await _start(home)
    reaper.append(process.process)
    await fake_llm.wait_for_requests(1, timeout=20)
    stopping = asyncio.get_running_loop().time()
    process.process.send_signal(signal.SIGTERM)
    assert await process.wait(timeout=20) == 0
    assert asyncio.get_running_loop().time() - stopping < 5.0


# The window, as `familiar` starts it from a terminal; the harness only prints a line once it is shown.
_WINDOW = """
import app.ui.main_window as main_window
shown = main_window.MainWindow.show
def show(self):
    shown(self)
    print("window shown", flush=True)
main_window.MainWindow.show = show
from app.__main__ import main
main()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_ctrl_c_and_sigterm_stop_the_window_within_seconds(
    home: Path, signum: signal.Signals, reaper: list[asyncio.subprocess.Process]
) -> None:
    env = {**_env(home), "QT_QPA_PLATFORM": "offscreen"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _WINDOW, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    reaper.append(process)
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    assert line == b"window shown\n"
    stopping = asyncio.get_running_loop().time()
    process.send_signal(signum)  # what Ctrl-C in the launching terminal sends
    _out, err = await asyncio.wait_for(process.communicate(), 20)
    code = process.returncode
    assert (code, err.decode()) == (0, "")
    assert asyncio.get_running_loop().time() - stopping < 5.0
