"""app/logs.py and app/runtime/event_log.py: what reaches the log file and what reaches the terminal."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config.logs import Private, log_folder
from app.logs import configure_logging, redact_known
from app.runtime.event_log import EventLog
from app.runtime.events import (
    Activity,
    ActivityKind,
    ConnectionChanged,
    ConnectionState,
    DiskFullChanged,
    FailureReported,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("FAMILIAR_HOME", str(tmp_path))
    yield tmp_path
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "familiar", False)]:
        root.removeHandler(handler)
        handler.close()


def _file(home: Path) -> str:
    return (home / "logs" / "familiar.log").read_text(encoding="utf-8")


def test_the_log_folder_follows_familiar_home(tmp_path: Path) -> None:
    assert log_folder({"FAMILIAR_HOME": str(tmp_path)}) == tmp_path / "logs"
    assert log_folder({}) != tmp_path / "logs"  # the platform's user log folder


@pytest.mark.logs_errors("familiar: the endpoint is down")
def test_private_text_reaches_the_console_but_only_its_length_reaches_the_file(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("headless")
    events = EventLog()
    events(Activity(ActivityKind.MESSAGE_IN, "Lantern Club #general", "alice: my secret plan", message_id=42))
    events(FailureReported("the endpoint is down"))

    text = _file(home)
    assert "secret" not in text
    assert "message_in Lantern Club #general [message 42, 21 chars]" in text
    assert "ERROR familiar: the endpoint is down" in text
    err = capsys.readouterr().err
    assert "INFO familiar: message_in Lantern Club #general alice: my secret plan" in err


@pytest.mark.logs_errors("bad token", "the endpoint is down")
def test_the_console_says_a_failure_once_and_never_while_starting(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = configure_logging("headless")
    events = EventLog(starting=True)
    events(ConnectionChanged(ConnectionState.FAILED, "bad token"))
    events(FailureReported("bad token"))
    assert capsys.readouterr().err == ""  # the command prints it as its error line
    assert not logs.shown("bad token")

    events.starting = False
    events(ConnectionChanged(ConnectionState.FAILED, "the endpoint is down"))
    events(Activity(ActivityKind.ERROR, "discord", "the endpoint is down"))
    events(FailureReported("the endpoint is down"))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("INFO familiar: connection: failed: the endpoint is down")
    assert logs.shown("the endpoint is down")
    assert _file(home).count("the endpoint is down") == 3  # the file keeps each record


def test_a_command_shows_our_warnings_once_and_no_library_line(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("command")
    logging.getLogger("httpx").info("HTTP Request: POST http://127.0.0.1/v1/chat/completions")
    logging.getLogger("discord.client").warning("PyNaCl is not installed, voice will NOT be supported")
    logging.getLogger("app.memory.committer").info("index turns: compacted 3 documents")
    logging.getLogger("familiar").info("connection: connecting")
    for _ in range(2):
        logging.getLogger("app.runtime.api.memory_ops").warning("finishing the import of %s", "x.jsonl")
    logging.getLogger("app.runtime.discord.client").warning("said elsewhere", extra={"console": False})

    assert capsys.readouterr().err == "warning: finishing the import of x.jsonl\n"
    text = _file(home)
    for line in ("HTTP Request", "PyNaCl", "compacted 3", "connection: connecting", "said elsewhere"):
        assert line in text


@pytest.mark.logs_errors("familiar: The LLM endpoint", "app.runtime.llm: request failed")
def test_no_line_carries_a_credential_in_the_file_or_on_the_console(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 19, item 4: the password of an endpoint's address reached the log 63 times in a short run
    (the start line, error lines, an httpx line per request) and the console."""
    configure_logging("headless")
    redact_known(lambda: ["sk-KNOWNKEY1", "bot.TOKEN.value"])
    url = "http://user:S3CRETPASS@127.0.0.1:8080/v1"
    logging.getLogger("httpx2").info('HTTP Request: POST %s/chat/completions "HTTP/1.1 200 OK"', url)
    logging.getLogger("familiar").info("LLM endpoint: OK: model 'tiny' at %s answered in 5 ms", url)
    logging.getLogger("familiar").error("The LLM endpoint %s answered with an error 500.", url)
    logging.getLogger("app.runtime.llm").warning("the key sk-KNOWNKEY1 and bot.TOKEN.value were refused")
    key = "AIza" + "QUERYKEY"  # not as one word in this file: the traceback shows the line that raised
    try:
        raise ValueError(f"cannot reach {url}?key={key}")
    except ValueError:
        logging.getLogger("app.runtime.llm").exception("request failed")

    text, console = _file(home), capsys.readouterr().err
    for secret in ("S3CRETPASS", "sk-KNOWNKEY1", "bot.TOKEN.value", "AIzaQUERYKEY"):
        assert secret not in text
        assert secret not in console
    assert "POST http://[redacted]@127.0.0.1:8080/v1/chat/completions" in text
    assert "at http://[redacted]@127.0.0.1:8080/v1 answered" in console
    assert "the key [redacted] and [redacted] were refused" in console
    assert "ValueError: cannot reach http://[redacted]@127.0.0.1:8080/v1?key=[redacted]" in text


@pytest.mark.asyncio
@pytest.mark.logs_errors("familiar: disk full: ", "a message was not stored yet")
async def test_a_full_disk_is_said_once_then_how_many_messages_wait_then_when_it_clears(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 19, item 5: the console said "disk full" once, then nothing for 29 more messages it kept out."""
    configure_logging("headless")
    events = EventLog(count_every=0.3)
    problem = "the disk holding /f is full (database or disk is full)"
    events(DiskFullChanged(full=True, folder="/f", detail="database or disk is full", waiting=1, places=1))
    kept_out = f"a message was not stored yet: {problem}"
    for waiting in range(2, 31):
        events(Activity(ActivityKind.ERROR, "Lantern Club #general", kept_out, message_id=waiting, disk_full=True))
        events(DiskFullChanged(full=True, folder="/f", detail="database or disk is full", waiting=waiting, places=1))
    await asyncio.sleep(0.6)  # the count is said at most every count_every seconds, the latest last
    events(DiskFullChanged(full=False, folder="/f"))

    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3, lines
    assert "ERROR familiar: disk full: 1 message in 1 channel not stored yet" in lines[0]
    said = "WARNING familiar: disk full: 30 messages in 1 channel wait for room (fetched from Discord and stored"
    assert lines[1].endswith(f"{said} once there is room)")
    assert lines[2].endswith("WARNING familiar: disk full no more: /f takes writes again")
    assert _file(home).count("a message was not stored yet") == 29  # each one is in the file


def test_configuring_again_replaces_the_handlers(home: Path) -> None:
    configure_logging("command")
    configure_logging("headless")
    ours = [h for h in logging.getLogger().handlers if getattr(h, "familiar", False)]
    assert len(ours) == 2  # one file, one console


def test_private_describes_itself() -> None:
    assert str(Private("hello", "message", 7)) == "hello"
    assert Private("hello", "message", 7).described() == "[message 7, 5 chars]"
    assert Private("hé").described() == "[text, 2 chars]"
