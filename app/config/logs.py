"""Where Familiar's log files live, and the one way to put private text into a log record.

Log files keep what happened (ids, lengths, states, errors), never what was said: a message, a reply
or a fact's text goes into a record only wrapped in `Private`. The file formatter (app/logs.py) writes
a `Private` as its description (`message 1234, 57 chars`); the headless console, which the owner reads
live, shows the text itself (escaped). So a forget leaves nothing behind in the log files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

LOG_FILE_NAME = "familiar.log"


def log_folder(env: dict[str, str] | None = None) -> Path:
    """`<FAMILIAR_HOME>/logs` when FAMILIAR_HOME is set (so a test or a second setup keeps its own logs),
    else the platform's user log folder (platformdirs)."""
    environ = os.environ if env is None else env
    override = environ.get("FAMILIAR_HOME", "").strip()
    if override:
        return Path(override).expanduser() / "logs"
    return Path(platformdirs.user_log_dir("familiar", appauthor=False))


def log_file(env: dict[str, str] | None = None) -> Path:
    return log_folder(env) / LOG_FILE_NAME


@dataclass(frozen=True, slots=True)
class Private:
    """Text someone wrote (a message, a reply, a fact) as a log-record argument: shown on a console,
    described by its id and length in a log file."""

    text: str
    what: str = "text"  # "message", "reply", "edit"...
    ref: int | None = None  # its id, when it has one

    def __str__(self) -> str:
        return self.text

    def described(self) -> str:
        ref = f" {self.ref}" if self.ref is not None else ""
        return f"[{self.what}{ref}, {len(self.text)} chars]"
