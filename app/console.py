"""What the `familiar` command writes to the terminal: results on stdout, one-line errors on stderr,
and the log lines of headless mode.

Text from Discord (any user's message, display name or server name), from an imported lorebook or
from an LLM reaches these outputs. A terminal obeys control characters, so such text could clear the
owner's screen (ESC [2J), plant a link (OSC 8), ring the bell, rewrite a line (CR) or reverse what
follows it (U+202E). Everything written here therefore goes through `escape`, which shows those
characters as visible escapes instead of sending them:

- C0 controls, DEL and C1 controls: `\\x1b`, `\\x07`, `\\x7f`, `\\x9b`; tab, carriage return and
  newline as `\\t`, `\\r`, `\\n`;
- bidirectional controls (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069) and the line and paragraph
  separators U+2028/U+2029: `\\u202e` and so on.

Newlines: a result is several lines (one per hit, fact, index...), so `output` keeps the newlines of
the text it is given and escapes everything else; each field that carries outside text into a line
is escaped whole by the caller with `escape(field)`, newlines included, so a message can never start
a line of its own (forge a `#12 ...` hit or a log line). Errors and log records are always one line:
their newlines are escaped too (a traceback attached to a log record keeps its own line breaks).
JSON output escapes the same characters the JSON way (`\\u001b`), so it stays valid JSON.
A backslash is shown as it is: a message containing the four characters `\\x1b` looks like an escaped
ESC, which is harmless.
"""

from __future__ import annotations

import logging
import re
import sys

from app.config.redaction import redact_urls

# C0 controls, DEL, C1 controls, bidi controls, line and paragraph separators (regex escapes).
_OTHERS = r"\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ANY = re.compile(rf"[\x00-\x1f{_OTHERS}]")
_BUT_NEWLINE = re.compile(rf"[\x00-\x09\x0b-\x1f{_OTHERS}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _shown(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    return _NAMED.get(ch) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def _json_shown(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every terminal control character shown as a visible escape (see the module doc);
    newlines too unless `keep_newlines`."""
    return (_BUT_NEWLINE if keep_newlines else _ANY).sub(_shown, text)


def output(text: str) -> None:
    """A command's result, on stdout: its lines as given, any control character in them escaped."""
    sys.stdout.write(escape(text, keep_newlines=True) + "\n")
    sys.stdout.flush()


def output_json(text: str) -> None:
    """One JSON document (or JSON line) on stdout. json.dumps(ensure_ascii=False) leaves DEL, C1
    controls, bidi controls and U+2028/9 raw inside strings; they are written as \\u escapes (still
    the same JSON value)."""
    sys.stdout.write(_ANY.sub(_json_shown, text) + "\n")
    sys.stdout.flush()


def error(message: str) -> None:
    """A one-line error, on stderr; a web address in it without its user:password (app.config.redaction)."""
    sys.stderr.write(f"error: {escape(redact_urls(message))}\n")
    sys.stderr.flush()


class EscapingFormatter(logging.Formatter):
    """Log lines for a terminal: each record's line (message and arguments, which may carry Discord
    text) has its control characters and newlines escaped, so a record is always one line and never
    drives the terminal. A traceback keeps its line breaks; its other control characters are escaped."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's API
        return escape(super().formatMessage(record))

    def formatException(self, ei: logging._SysExcInfoType) -> str:  # noqa: N802 - logging's API
        return escape(super().formatException(ei), keep_newlines=True)

    def formatStack(self, stack_info: str) -> str:  # noqa: N802 - logging's API
        return escape(super().formatStack(stack_info), keep_newlines=True)
