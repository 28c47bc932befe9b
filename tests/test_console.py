"""app/console.py: what reaches the owner's terminal never drives it."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from app.console import EscapingFormatter, error, escape, output, output_json


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2J", "\\x1b[2J"),  # clear screen
        ("\x1b]8;;https://x/\x07link\x1b]8;;\x07", "\\x1b]8;;https://x/\\x07link\\x1b]8;;\\x07"),  # OSC 8 hyperlink
        ("\x07", "\\x07"),
        ("\x00\x08\x7f", "\\x00\\x08\\x7f"),
        ("a\rb\tc\nd", "a\\rb\\tc\\nd"),
        ("\x9b31m\x85", "\\x9b31m\\x85"),  # C1: 8-bit CSI, NEL
        ("\u202eevil\u202c \u2066x\u2069 \u200f\u061c", "\\u202eevil\\u202c \\u2066x\\u2069 \\u200f\\u061c"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        ("plain 東京 café 👩\u200d🚀 \\x1b", "plain 東京 café 👩\u200d🚀 \\x1b"),  # text, emoji joiners: untouched
    ],
)
def test_escape_shows_every_control_character(raw: str, shown: str) -> None:
    assert escape(raw) == shown


def test_output_keeps_its_lines_and_escapes_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    output("first \x1b[2J\nsecond \u202e\r")
    assert capsys.readouterr().out == "first \\x1b[2J\nsecond \\u202e\\r\n"


def test_an_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    error("bad\nerror: forged \x1b[31m")
    assert capsys.readouterr().err == "error: bad\\nerror: forged \\x1b[31m\n"


def test_json_output_escapes_what_json_dumps_leaves_raw_and_stays_the_same_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    value = {"content": "a\x1b\x7f\x9b\u202e\u2028\n東京"}
    output_json(json.dumps(value, ensure_ascii=False))
    out = capsys.readouterr().out
    assert all(ch not in out for ch in "\x1b\x7f\x9b\u202e\u2028")
    assert "東京" in out
    assert json.loads(out) == value


def test_log_records_are_one_line_and_tracebacks_keep_their_lines() -> None:
    formatter = EscapingFormatter("%(levelname)s %(name)s: %(message)s")
    record = logging.LogRecord("familiar", logging.INFO, __file__, 1, "message_in %s", ("x\x1b[2J\nINFO forged",), None)
    assert formatter.format(record) == "INFO familiar: message_in x\\x1b[2J\\nINFO forged"
    try:
        raise ValueError("boom \x1b[2J")
    except ValueError:
        info = sys.exc_info()
    failed = logging.LogRecord("familiar", logging.ERROR, __file__, 1, "failed", (), info)
    text = formatter.format(failed)
    assert text.startswith("ERROR familiar: failed\nTraceback (most recent call last):\n")
    assert "ValueError: boom \\x1b[2J" in text
    assert "\x1b" not in text
