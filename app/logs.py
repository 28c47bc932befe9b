"""Logging for every way Familiar runs: one rotating log file, and what (little) reaches the terminal.

- The log file (`familiar.log` in app.config.logs.log_folder(), rotated at 2 MB, three old files kept)
  gets every record at INFO and above: ours, discord.py's, the HTTP client's, index compaction, Python
  warnings. The window and headless mode write the same events there (app/runtime/event_log.py).
  Private text (app.config.logs.Private) is written as its id and length, never as the text.
- No line carries a credential, in the file or on the terminal: the user:password of every web address
  and its secret query values become [redacted] (an endpoint behind a proxy that wants a password, an
  httpx request line naming it), and so does every secret the open familiar knows (the bot token, the
  API keys) wherever it stands (app.config.redaction; `redact_known` tells the handlers what to cut).
- A command's terminal output is its answer: its result on stdout, its error once on stderr (through
  app.console.error), and on stderr a `warning:` line for a warning of Familiar's own modules (an
  interrupted import being finished, an index locked by another program). No library line, no INFO line.
- Headless mode shows its own event lines (the `familiar` logger) and those warnings on stderr, escaped,
  each said once: a failure that the connection state, the activity log and the failure event all carry is
  shown the first time only. Library lines stay in the file.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.config.logs import Private, log_file
from app.config.paths import private_file, private_folder
from app.config.redaction import Redactor, SecretSource
from app.console import EscapingFormatter

Mode = Literal["command", "headless", "window"]

MAX_BYTES = 2_000_000
BACKUPS = 3
REPEAT_SECONDS = 5.0  # the console shows the same text at most once within this time
EVENT_LOGGER = "familiar"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_FILE_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


class ConsoleFormatter(EscapingFormatter):
    """A terminal's line for a record: escaped (app.console), its credentials redacted (the whole
    line, traceback included)."""

    def __init__(self, fmt: str, redactor: Redactor | None = None) -> None:
        super().__init__(fmt)
        self.redactor = redactor or Redactor()

    def format(self, record: logging.LogRecord) -> str:
        return self.redactor(super().format(record))


class FileFormatter(ConsoleFormatter):
    """One escaped line per record, with every `Private` argument replaced by its description and its
    credentials redacted."""

    def format(self, record: logging.LogRecord) -> str:
        args = record.args
        if isinstance(args, tuple) and any(isinstance(a, Private) for a in args):
            record = logging.makeLogRecord(record.__dict__)  # the console formats the original
            record.args = tuple(a.described() if isinstance(a, Private) else a for a in args)
        elif isinstance(args, dict) and any(isinstance(a, Private) for a in args.values()):
            record = logging.makeLogRecord(record.__dict__)
            record.args = {k: a.described() if isinstance(a, Private) else a for k, a in args.items()}
        return super().format(record)


class _LogFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file that never complains on the terminal: a failed write or rollover (another
    process rotating the same file, a full disk) loses that record, not the command's output."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's API
        pass

    def _open(self) -> io.TextIOWrapper:
        private_file(Path(self.baseFilename), create=True)  # a rotated-in file is the owner's only, too
        return super()._open()


class ConsoleFilter(logging.Filter):
    """What reaches the terminal: in headless mode the `familiar` logger's event lines; in every mode the
    warnings and errors of Familiar's own modules (`app.*`: an interrupted import being finished, an index
    locked by another program). Never a library's lines, never a record marked `console=False`, and never a
    text shown within the last REPEAT_SECONDS again (a record's `said`, else its message)."""

    def __init__(self, *, events: bool) -> None:
        super().__init__()
        self._events = events
        self._said: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "console", True) is False:
            return False
        name = record.name
        if name == EVENT_LOGGER or name.startswith(EVENT_LOGGER + "."):
            if not self._events:
                return False
        elif not (name.startswith("app.") and record.levelno >= logging.WARNING):
            return False
        said = getattr(record, "said", None)
        if not isinstance(said, str) or not said:
            said = record.getMessage()
        if self.shown(said):
            return False
        self._said[said] = time.monotonic()
        return True

    def shown(self, text: str) -> bool:
        """Whether `text` was shown on the console within the last REPEAT_SECONDS."""
        now = time.monotonic()
        for old in [t for t, at in self._said.items() if now - at > REPEAT_SECONDS]:
            del self._said[old]
        return text in self._said


@dataclass(frozen=True, slots=True)
class LogSetup:
    file: Path | None  # None when the log folder cannot be written (said once on stderr)
    console: ConsoleFilter

    def shown(self, text: str) -> bool:
        """Whether the console already showed this text (so an exit error is not printed twice)."""
        return self.console.shown(text)


def configure_logging(mode: Mode, *, env: dict[str, str] | None = None) -> LogSetup:
    """Install Familiar's handlers on the root logger (replacing those of an earlier call)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "familiar", False)]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(logging.INFO)
    # Their DEBUG lines carry request bodies (message text); INFO and above only, whatever the root says.
    for noisy in ("discord", "httpx", "httpx2", "httpcore", "openai"):
        logging.getLogger(noisy).setLevel(logging.INFO)
    logging.captureWarnings(True)  # a library's warnings.warn goes to the file, not the terminal

    wanted = log_file(env)
    path: Path | None = wanted
    try:
        private_folder(wanted.parent)
        private_file(wanted, create=True)
        file_handler: logging.Handler | None = _LogFileHandler(
            wanted, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
        )
    except OSError as exc:
        sys.stderr.write(
            f"warning: cannot write the log file {wanted} ({exc.strerror or exc}); not logging to a file\n"
        )
        file_handler, path = None, None
    redactor = Redactor()  # one for both handlers: what it learns (redact_known) holds for each
    if file_handler is not None:
        file_handler.setFormatter(FileFormatter(_FILE_FORMAT, redactor))
        _install(root, file_handler)

    # Headless mode's lines carry a time (they are its running log); a command's are one-line notices.
    console = ConsoleFilter(events=mode == "headless")
    stream = logging.StreamHandler(sys.stderr)
    stream.setFormatter(ConsoleFormatter(_FORMAT if mode == "headless" else "warning: %(message)s", redactor))
    stream.addFilter(console)
    _install(root, stream)
    return LogSetup(file=path, console=console)


def redact_known(source: SecretSource) -> None:
    """From now on, the handlers configure_logging installed cut out the secrets `source` names (asked
    at each record: a key changed in Settings is cut out from then on)."""
    seen: set[int] = set()
    for handler in logging.getLogger().handlers:
        formatter = handler.formatter
        if not getattr(handler, "familiar", False) or not isinstance(formatter, ConsoleFormatter):
            continue
        if id(formatter.redactor) not in seen:
            seen.add(id(formatter.redactor))
            formatter.redactor.know(source)


def _install(root: logging.Logger, handler: logging.Handler) -> None:
    handler.familiar = True  # type: ignore[attr-defined]
    root.addHandler(handler)
