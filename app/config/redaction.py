"""Credentials out of every text Familiar writes: log lines, the console, errors, what it stores.

Some OpenAI-compatible proxies want a user name and password in the endpoint's address
(`http://user:PASSWORD@host/v1`), and some services take a key in the query (`?key=...`). Any text that
may name such an address (an error, a library's log line, a line of the diagnostics, a failed job's
error kept in history.db) goes through `redact_urls` before it is written: the user:password of every
web address in it becomes [redacted], and so does the value of each query parameter whose name says
it is a secret (key, token, password...). `scrub` cuts known secret values (the bot token, the API
keys, the password of an address) out of a text wherever they stand; a `Redactor` does both, with
the secrets its sources know at the moment it is asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import unquote

REDACTED = "[redacted]"
SECRET_WORDS = frozenset(
    {"token", "key", "secret", "password", "passwd", "pass", "pwd", "apikey", "auth", "sig", "signature"}
)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.IGNORECASE)
_QUERY_PAIR = re.compile(r"([^&=#]*)=([^&#]*)")
_MIN_SECRET = 4  # shorter values are not cut out of texts (they would cut ordinary words)


def secret_name(name: str) -> bool:
    """Whether a setting's or a query parameter's name says its value is a secret ("api_key", "x-token")."""
    return bool(SECRET_WORDS & set(re.split(r"[_\-.\s]+", name.lower())))


def split_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """(the address without its user:password, the user, the password); the user and the password are
    as written (percent-encoded, if they were), None when the address has none."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url, None, None
    end = len(rest)
    for stop in "/?#":
        found = rest.find(stop)
        if found != -1:
            end = min(end, found)
    authority = rest[:end]
    if "@" not in authority:
        return url, None, None
    userinfo, _at, host = authority.rpartition("@")
    user, colon, password = userinfo.partition(":")
    return f"{scheme}://{host}{rest[end:]}", user, password if colon else None


def redact_url(url: str) -> str:
    """One web address with its user:password and its secret query values replaced by [redacted]."""
    bare, user, password = split_userinfo(url)
    if user is not None or password is not None:
        scheme, _sep, rest = bare.partition("://")
        bare = f"{scheme}://{REDACTED}@{rest}"
    head, mark, query = bare.partition("?")
    if not mark:
        return bare
    query, hash_mark, fragment = query.partition("#")

    def pair(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        return f"{name}={REDACTED}" if value and secret_name(name) else match.group()

    return f"{head}?{_QUERY_PAIR.sub(pair, query)}{hash_mark}{fragment}"


def redact_urls(text: str) -> str:
    """`text` with every web address in it redacted (see `redact_url`); the rest as it is."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: redact_url(m.group()), text)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret value cut out (long ones first, so none leaves a part of another behind)."""
    for secret in sorted({s.strip() for s in secrets if s and len(s.strip()) >= _MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def url_secrets(url: str) -> tuple[str, ...]:
    """The password of an address (as written, and decoded), to cut out of texts that name it elsewhere."""
    _bare, _user, password = split_userinfo(url)
    if not password:
        return ()
    return tuple({password, unquote(password)})


SecretSource = Callable[[], Iterable[str]]


class Redactor:
    """Redacts web addresses, and cuts out the secrets its sources know (asked each time: a secret
    changed in Settings is cut out from then on)."""

    def __init__(self) -> None:
        self._sources: list[SecretSource] = []

    def know(self, source: SecretSource) -> None:
        self._sources.append(source)

    def __call__(self, text: str) -> str:
        text = redact_urls(text)
        known: list[str] = []
        for source in list(self._sources):
            try:
                known.extend(source())
            except Exception:  # noqa: BLE001 - a source that cannot answer now (closing) knows nothing
                continue
        return scrub(text, known) if known else text
