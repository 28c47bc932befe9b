"""An OS keyring stand-in for tests: a real `keyring` backend that keeps passwords in memory.

Installed with `keyring.set_keyring(...)` (the library's own way to choose a backend) by the
`memory_keyring` fixture, which puts the previous backend back afterwards. keyring finds backends among
every subclass of KeyringBackend that has a priority: this one has none, so merely importing it never
makes it the default keyring of the process (a test without the fixture still sees the real one).
"""

from __future__ import annotations

from keyring.backend import KeyringBackend
from keyring.compat import properties
from keyring.errors import PasswordDeleteError


class MemoryKeyring(KeyringBackend):
    @properties.classproperty
    def priority(cls) -> float:  # noqa: N805 (a class property)
        raise AttributeError("only used when installed with keyring.set_keyring()")

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.passwords.pop((service, username), None) is None:
            raise PasswordDeleteError(username)
