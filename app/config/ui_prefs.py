"""The window's own preferences, app-wide: `ui.toml` in the data root (beside familiars/, not in any
character.toml): theme, close to the tray, notifications, where the window was, and the familiars whose
owner chose to try them without Discord (the welcome does not open for those at every launch).

The window writes it when one of them changes (Settings, moving the window, closing it); the owner may
edit it while no window runs. A file that cannot be read or holds a wrong value is reported in one line
(file, key, what is wrong), the defaults stand in for what is wrong, and the file is left exactly as it
is for the rest of the session: nothing the owner wrote is overwritten.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.config.paths import data_root

_log = logging.getLogger(__name__)

UI_FILE_NAME = "ui.toml"
THEMES = ("system", "light", "dark")


@dataclass(frozen=True, slots=True)
class UiPreferences:
    theme: str = "system"  # system, light or dark
    close_to_tray: bool = True  # closing the window keeps the familiar running in the tray
    notify_pending: bool = True  # a desktop notification when new facts wait in the pending queue
    tray_notice_shown: bool = False  # the first close to the tray has said so
    geometry: str = ""  # the window's size and place (Qt's saveGeometry, base64)
    last_pane: str = ""  # the pane the window showed last
    without_discord: tuple[str, ...] = ()  # familiars tried without Discord: no welcome at launch for a missing token


DESCRIPTIONS: dict[str, str] = {
    "theme": 'the window\'s colours: "system" (follow the desktop), "light" or "dark"',
    "close_to_tray": "closing the window keeps the familiar running in the tray (Quit stops it)",
    "notify_pending": "a desktop notification when new facts wait for you in the pending queue",
    "tray_notice_shown": "the first close to the tray said so already",
    "geometry": "where the window was and its size (written by the window)",
    "last_pane": "the pane the window opens on (written by the window)",
    "without_discord": "familiars you chose to try without Discord: no welcome at launch for their missing bot token",
}

_HEADER = (
    "Familiar's window preferences, for every familiar. The window writes this file; you may edit it\n"
    'while no window is open. See the README, section "The window\'s preferences".'
)


def ui_file(env: dict[str, str] | None = None) -> Path:
    return data_root(env) / UI_FILE_NAME


def _check(key: str, value: object) -> str | None:
    """What is wrong with `value` for `key`, or None."""
    default = getattr(UiPreferences(), key)
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(default, tuple):
        ok = isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)
        return None if ok else "must be a list of names"
    if not isinstance(value, str):
        return "must be a string"
    if key == "theme" and value not in THEMES:
        return f"must be one of {', '.join(THEMES)} (not {value!r})"
    return None


class UiPreferencesFile:
    """ui.toml: `prefs` as read (defaults where missing or wrong), `update(...)` to change and save."""

    def __init__(self, path: Path | None) -> None:
        """`path` None: the defaults, kept in memory only (a screenshot, a test)."""
        self.path = path
        self.problem: str | None = None  # one line, when the file could not be used as it is
        self._prefs = self._load() if path is not None else UiPreferences()

    @property
    def prefs(self) -> UiPreferences:
        return self._prefs

    @property
    def writable(self) -> bool:
        """False for the rest of the session once the file had a problem: the owner's text stays as it is."""
        return self.problem is None

    def _load(self) -> UiPreferences:
        assert self.path is not None
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return UiPreferences()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return self._fail(f"{self.path}: cannot be read ({reason})")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            return self._fail(f"{self.path}: not valid TOML ({exc})")
        known = {f.name for f in dataclasses.fields(UiPreferences)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                return self._fail(f"{self.path}, key '{key}': unknown key (known: {', '.join(sorted(known))})")
            wrong = _check(key, value)
            if wrong is not None:
                return self._fail(f"{self.path}, key '{key}': {wrong}")
            values[key] = tuple(value) if isinstance(value, list) else value
        return UiPreferences(**values)

    def _fail(self, problem: str) -> UiPreferences:
        self.problem = f"{problem}; the defaults are used and the file is left as it is"
        _log.warning("%s", self.problem)
        return UiPreferences()

    def update(self, **changes: Any) -> UiPreferences:
        """Change some preferences (ValueError, naming the key, for a wrong one) and save the file."""
        for key, value in changes.items():
            if not hasattr(self._prefs, key):
                raise ValueError(f"unknown window preference '{key}'")
            wrong = _check(key, value)
            if wrong is not None:
                raise ValueError(f"window preference '{key}': {wrong}")
        changes = {key: tuple(value) if isinstance(value, list) else value for key, value in changes.items()}
        updated = dataclasses.replace(self._prefs, **changes)
        if updated == self._prefs:
            return updated
        self._prefs = updated
        if self.writable and self.path is not None:
            self._save(self.path, changes)
        return updated

    def _save(self, path: Path, changes: dict[str, Any]) -> None:
        import tomlkit  # only to write (it keeps the user's comments); reading at start needs tomllib only

        try:
            try:
                document = tomlkit.parse(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                document = tomlkit.document()
                for line in _HEADER.splitlines():
                    document.add(tomlkit.comment(line))
                document.add(tomlkit.nl())
                changes = dataclasses.asdict(self._prefs)  # a new file lists every preference
            for key, value in changes.items():
                written = list(value) if isinstance(value, tuple) else value  # a tuple is a TOML array
                if key not in document:
                    item = tomlkit.item(written)
                    item.comment(DESCRIPTIONS[key])
                    document[key] = item
                else:
                    document[key] = written
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".ui-", suffix=".toml")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(tomlkit.dumps(document))
                os.replace(temporary, path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary)
        except (OSError, tomlkit.exceptions.TOMLKitError) as exc:
            _log.warning("could not save the window preferences to %s: %s", path, exc)
