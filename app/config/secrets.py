"""The bot token, the LLM API keys and the tombstone key: environment first, then the OS keyring.

When the OS has no usable keyring (a bare Linux session, CI) the secrets go to a file readable by
the owner only, and `SecretStore.backend_name` says so, so the window can tell the user.

The tombstone key (the key of the hashes that keep forgotten facts from being learned again) is
kept here rather than in history.db, so a copy of the database alone cannot be used to test guesses
of a forgotten text. It is read with `read`, which raises SecretsUnavailableError when the keyring
or the file cannot be read, instead of answering "none": a key taken for lost would be replaced.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys
import tomllib
from pathlib import Path

if sys.platform != "darwin":
    # keyring imports every backend it ships to choose one, and the module of its macOS backend looks for
    # the Security framework with ctypes.util.find_library, which off macOS runs ldconfig, gcc and ld for
    # each of three frameworks only to fail: 30-45 ms of every command's start. Off macOS that backend is
    # never chosen (its priority raises "macOS required"), so its module is marked absent and fails at once.
    sys.modules.setdefault("keyring.backends.macOS.api", None)  # type: ignore[arg-type]  # None: "not importable"

import keyring
import keyring.errors
from keyring.backends import fail as keyring_fail

from app.config.paths import private_file, private_folder
from app.config.settings import Secrets

_log = logging.getLogger(__name__)
_SERVICE = "familiar"
_KEYS = ("discord_token", "llm_api_key", "llm_background_api_key", "tombstone_key")
SECRET_ENVIRONMENT: dict[str, str] = {
    "discord_token": "DISCORD_TOKEN",
    "llm_api_key": "FAMILIAR_LLM_API_KEY",
    "llm_background_api_key": "FAMILIAR_LLM_BACKGROUND_API_KEY",
}
"""The environment variable that gives each secret (when set and not blank), before any saved one."""


def _keyring_usable() -> bool:
    backend = keyring.get_keyring()
    if isinstance(backend, keyring_fail.Keyring):
        return False
    priority = getattr(backend, "priority", 0)
    return bool(priority and priority > 0)


class SecretsUnavailableError(Exception):
    """The OS keyring or the secrets file could not be read; the message says which and why."""


class SecretStore:
    def __init__(self, familiar: str, fallback_file: Path, *, use_keyring: bool | None = None) -> None:
        self._familiar = familiar
        self._file = fallback_file
        self._use_keyring = _keyring_usable() if use_keyring is None else use_keyring

    @property
    def backend_name(self) -> str:
        return "OS keyring" if self._use_keyring else f"file {self._file} (no OS keyring found)"

    def _account(self, key: str) -> str:
        return f"{self._familiar}:{key}"

    def for_familiar(self, familiar: str) -> SecretStore:
        """The store of another familiar of the same data folder, with the same backend."""
        return SecretStore(familiar, self._file, use_keyring=self._use_keyring)

    def _read_file(self, *, strict: bool = False) -> dict[str, str]:
        try:
            data = tomllib.loads(self._file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            if strict:
                raise SecretsUnavailableError(f"{self._file} cannot be read ({exc}); repair or remove it") from exc
            _log.warning("ignoring unreadable secrets file %s", self._file)
            return {}
        except OSError as exc:
            if strict:
                raise SecretsUnavailableError(f"{self._file} cannot be read ({exc.strerror or exc})") from exc
            raise
        try:
            private_file(self._file)  # written by an older Familiar or by hand: owner-only from now on
        except OSError as exc:
            _log.warning("cannot make %s private: %s", self._file, exc.strerror or exc)
        section = data.get(self._familiar, {})
        return {k: str(v) for k, v in section.items() if k in _KEYS} if isinstance(section, dict) else {}

    def get(self, key: str) -> str:
        if key not in _KEYS:
            raise KeyError(key)
        if self._use_keyring:
            try:
                return keyring.get_password(_SERVICE, self._account(key)) or ""
            except keyring.errors.KeyringError as exc:
                _log.warning("keyring read failed (%s); falling back to %s", exc, self._file)
        return self._read_file().get(key, "")

    def read(self, key: str) -> str:
        """Like `get`, but a keyring or file that cannot be read raises SecretsUnavailableError
        instead of answering "" (for a secret whose absence changes what is written: the tombstone key)."""
        if key not in _KEYS:
            raise KeyError(key)
        if self._use_keyring:
            try:
                value = keyring.get_password(_SERVICE, self._account(key))
            except keyring.errors.KeyringError as exc:
                problem = f"the OS keyring could not be read ({exc}); unlock it and try again"
                raise SecretsUnavailableError(problem) from exc
            if value:
                return value
        # Also with a keyring: a write it refused went to the file (see `set`).
        return self._read_file(strict=True).get(key, "")

    def set(self, key: str, value: str) -> None:
        if key not in _KEYS:
            raise KeyError(key)
        if self._use_keyring:
            try:
                if value:
                    keyring.set_password(_SERVICE, self._account(key), value)
                else:
                    with contextlib.suppress(keyring.errors.PasswordDeleteError):
                        keyring.delete_password(_SERVICE, self._account(key))
                return
            except keyring.errors.KeyringError as exc:
                _log.warning("keyring write failed (%s); writing %s instead", exc, self._file)
        self._write_file(key, value)

    def _write_file(self, key: str, value: str) -> None:
        try:
            everything = tomllib.loads(self._file.read_text(encoding="utf-8"))
        except (FileNotFoundError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            everything = {}
        section = dict(everything.get(self._familiar, {}))
        if value:
            section[key] = value
        else:
            section.pop(key, None)
        everything[self._familiar] = section
        lines: list[str] = []
        for name, values in sorted(everything.items()):
            if not isinstance(values, dict):
                continue
            lines.append(f"[{_quote(name)}]")
            lines.extend(f"{k} = {_quote(str(v))}" for k, v in sorted(values.items()))
            lines.append("")
        private_folder(self._file.parent)
        tmp = self._file.with_suffix(".tmp")
        # A leftover temporary file (a crash, another tool) keeps its own mode if opened again, and the
        # rename would give it to secrets.toml: it is removed and created anew, owner-only, or not at all.
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IRUSR | stat.S_IWUSR)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines))
        tmp.replace(self._file)

    def load(self, env: dict[str, str] | None = None) -> Secrets:
        """Secrets with the environment (DISCORD_TOKEN, FAMILIAR_LLM_API_KEY,
        FAMILIAR_LLM_BACKGROUND_API_KEY) taking precedence."""
        environ = os.environ if env is None else env
        return Secrets(
            **{key: environ.get(variable, "").strip() or self.get(key) for key, variable in SECRET_ENVIRONMENT.items()}
        )

    def saved_in(self, key: str) -> str | None:
        """Where the saved value of `key` is: "keyring", "file" (the secrets file), or None when none is
        saved. Blocking (keyring calls). A keyring that cannot be read counts as holding nothing."""
        if key not in _KEYS:
            raise KeyError(key)
        if self._use_keyring:
            try:
                if keyring.get_password(_SERVICE, self._account(key)):
                    return "keyring"
            except keyring.errors.KeyringError as exc:
                _log.warning("keyring read failed (%s)", exc)
        return "file" if self._read_file().get(key) else None

    @property
    def fallback_file(self) -> Path:
        """The secrets file used when there is no OS keyring (or it refused a write)."""
        return self._file


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(ch if ch.isprintable() else _escape(ch) for ch in escaped)
    return f'"{escaped}"'


def _escape(ch: str) -> str:
    # TOML's \u takes exactly four hex digits; characters beyond the BMP need \U and eight.
    return f"\\U{ord(ch):08x}" if ord(ch) > 0xFFFF else f"\\u{ord(ch):04x}"
