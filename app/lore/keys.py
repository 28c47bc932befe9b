"""Lorebook keys: a key written `/pattern/flags` is a regular expression, any other is literal text.

Regex flags i, m, s, x map to Python's; u, g, y, d, v are ignored. JavaScript's spelling of named groups
(`(?<name>...)`, `\\k<name>`) is accepted. What makes a key unusable (empty, a NUL, a regex that does not
compile or is longer than MAX_REGEX_LENGTH) is said by `key_problem`.
"""

from __future__ import annotations

import functools
import re

MAX_REGEX_LENGTH = 200

_REGEX_KEY = re.compile(r"/(.+)/([A-Za-z]*)", re.DOTALL)
# JS flags: i, m, s map to Python's; u is Python's default; g, y, d, v do not apply; x is Python's VERBOSE.
_FLAGS = {
    "i": re.IGNORECASE,
    "m": re.MULTILINE,
    "s": re.DOTALL,
    "x": re.VERBOSE,
    "u": 0,
    "g": 0,
    "y": 0,
    "d": 0,
    "v": 0,
}
_JS_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<(?=[A-Za-z_])")
_JS_NAMED_REF = re.compile(r"\\k<([A-Za-z_]\w*)>")


def split_regex_key(key: str) -> tuple[str, str] | None:
    """(pattern, flags) when the key is written `/pattern/flags`, else None (a literal key)."""
    found = _REGEX_KEY.fullmatch(key.strip())
    if found is None or any(flag not in _FLAGS for flag in found.group(2)):
        return None
    return found.group(1), found.group(2)


@functools.lru_cache(maxsize=4096)
def compile_regex_key(key: str) -> re.Pattern[str] | str | None:
    """The compiled regex of a `/pattern/flags` key, an error message, or None for a literal key."""
    parts = split_regex_key(key)
    if parts is None:
        return None
    pattern, letters = parts
    if len(pattern) > MAX_REGEX_LENGTH:
        return f"regex longer than {MAX_REGEX_LENGTH} characters"
    flags = 0
    for letter in letters:
        flags |= _FLAGS[letter]
    pattern = _JS_NAMED_REF.sub(r"(?P=\1)", _JS_NAMED_GROUP.sub("(?P<", pattern))  # JS spellings of named groups
    try:
        return re.compile(pattern, flags)
    except (re.error, ValueError, OverflowError, RecursionError) as exc:
        return f"invalid regex: {exc}"


def key_problem(key: str) -> str | None:
    """Why a key can never match, or None when it is fine."""
    if not key.strip():
        return "an empty key never matches"
    if "\x00" in key:
        return "a key may not contain a NUL character"
    compiled = compile_regex_key(key)
    return compiled if isinstance(compiled, str) else None


__all__ = ["MAX_REGEX_LENGTH", "compile_regex_key", "key_problem", "split_regex_key"]
