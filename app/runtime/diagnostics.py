"""About and Copy diagnostics: versions, settings without secrets, index status, the last errors.

What a user pastes into a bug report. It never carries a secret: settings are written without any key
that names a token, key, secret or password, web addresses lose their user:password and query, and
last of all every secret the familiar knows (the bot token, API keys) is cut out of the whole text,
wherever it might have come from (an error message, a log line).
"""

from __future__ import annotations

import dataclasses
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from app import __version__
from app.config.logs import log_file
from app.config.redaction import REDACTED, scrub, secret_name
from app.config.settings import Settings
from app.runtime.api.facade import IndexesApi, StatusSnapshot

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.IGNORECASE)
LOG_TAIL_BYTES = 128 * 1024
LAST_ERRORS = 12

# (what users call it, its distribution name(s)), in the order shown.
_DISTRIBUTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("PySide6", ("PySide6-Essentials", "PySide6")),
    ("discord.py", ("discord.py",)),
    ("openai", ("openai",)),
    ("tantivy", ("tantivy",)),
    ("qasync", ("qasync",)),
    ("aiosqlite", ("aiosqlite",)),
    ("fastembed", ("fastembed",)),
)


def versions(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Familiar's version, Python's, and those of the libraries it runs on (from their metadata: nothing is
    imported). `extra` adds what only the caller knows (the UI: Qt's own version)."""
    found = {"Familiar": __version__, "Python": f"{platform.python_version()} ({sys.implementation.name})"}
    for shown, names in _DISTRIBUTIONS:
        for name in names:
            try:
                found[shown] = metadata.version(name)
                break
            except metadata.PackageNotFoundError:
                continue
        else:
            found[shown] = "not installed"
    found.update(extra or {})
    return found


def clean_url(text: str) -> str:
    """A web address without its user:password and its query (either may carry a key)."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return REDACTED
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    query = REDACTED if parts.query else ""
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def _clean_text(text: str) -> str:
    return _URL.sub(lambda m: clean_url(m.group()), text)


def settings_lines(settings: Any, prefix: str = "") -> list[str]:
    """A settings dataclass as `section.key = value` lines, without secrets (see the module doc)."""
    lines: list[str] = []
    values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    for name, value in values.items():
        key = f"{prefix}{name}"
        if secret_name(name):
            lines.append(f"{key} = {REDACTED}")
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            lines += settings_lines(value, f"{key}.")
        elif isinstance(value, dict):
            for sub, item in value.items():
                if dataclasses.is_dataclass(item) and not isinstance(item, type):
                    lines += settings_lines(item, f"{key}.{sub}.")
                else:
                    lines.append(f"{key}.{sub} = {_clean_text(repr(item))}")
        else:
            lines.append(f"{key} = {_clean_text(repr(value))}")
    return lines


def last_log_problems(path: Path | None = None, limit: int = LAST_ERRORS) -> list[str]:
    """The last WARNING and ERROR lines of the log file (which holds no message text)."""
    path = path or log_file()
    lines: list[str] = []
    for candidate in (path.with_name(path.name + ".1"), path):
        try:
            with candidate.open("rb") as handle:
                handle.seek(0, 2)
                size = handle.tell()
                handle.seek(max(0, size - LOG_TAIL_BYTES))
                tail = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        lines += [line for line in tail.splitlines() if " WARNING " in line or " ERROR " in line]
    return lines[-limit:]


def report(
    *,
    name: str,
    folder: Path,
    found_versions: Mapping[str, str],
    settings: Any,
    secrets: Any,
    secrets_location: str,
    status_lines: Sequence[str],
    index_lines: Sequence[str],
    last_error: str | None,
    log: Path | None = None,
) -> str:
    """The diagnostics text (see the module doc)."""
    log = log or log_file()
    secret_values = [str(getattr(secrets, f.name)) for f in dataclasses.fields(secrets)]
    known = [
        f"{f.name.replace('_', ' ')}: {'set' if getattr(secrets, f.name) else 'not set'}"
        for f in dataclasses.fields(secrets)
    ]
    lines = [
        f"Familiar diagnostics for '{name}'",
        "",
        "Versions:",
        *(f"  {k}: {v}" for k, v in found_versions.items()),
        f"  platform: {platform.platform()}",
        "",
        f"Data folder: {folder}",
        f"Log file: {log}",
        f"Secrets kept in: {secrets_location} ({'; '.join(known)})",
        "",
        "Status:",
        *(f"  {line}" for line in status_lines),
        "",
        "Settings (character.toml and the environment; secrets left out):",
        *(f"  {line}" for line in settings_lines(settings)),
        "",
        "Search indexes:",
        *(f"  {line}" for line in index_lines),
        "",
        "Last errors:",
        *([f"  {_clean_text(last_error)}"] if last_error else []),
        *(f"  {_clean_text(line)}" for line in last_log_problems(log)),
    ]
    if not last_error and not last_log_problems(log):
        lines.append("  none")
    return scrub("\n".join(lines) + "\n", secret_values)


class Reported(Protocol):
    """What the report reads of an open familiar (app.runtime.service.Familiar)."""

    @property
    def familiar_name(self) -> str: ...

    @property
    def home(self) -> Path: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def secrets_location(self) -> str: ...

    @property
    def indexes(self) -> IndexesApi: ...

    def get_status(self) -> StatusSnapshot: ...


async def familiar_report(familiar: Reported, secrets: Any, extra_versions: Mapping[str, str] | None) -> str:
    """The diagnostics of an open familiar (Familiar.diagnostics)."""
    status = familiar.get_status()
    status_lines = [
        f"connection: {status.state.value}",
        f"servers: {len(status.guilds)}",
        f"set up: {'yes' if status.configured else 'no, missing ' + ', '.join(status.missing)}",
    ]
    index_lines = [
        f"{h.name}: {h.state_line}; {h.commits} commits, {h.retries} retries, {h.failures} failures,"
        f" pending {h.pending}, lag {h.lag}" + (f"; last error: {h.last_error}" if h.last_error else "")
        for h in await familiar.indexes.status()
    ]
    index_lines += [
        f"{t.name}: {t.problem or ('running' if t.running else 'not started here')}"
        for t in await familiar.indexes.tasks()
    ]
    return report(
        name=familiar.familiar_name,
        folder=familiar.home,
        found_versions=versions(extra_versions),
        settings=familiar.settings,
        secrets=secrets,
        secrets_location=familiar.secrets_location,
        status_lines=status_lines,
        index_lines=index_lines,
        last_error=status.last_error,
    )
