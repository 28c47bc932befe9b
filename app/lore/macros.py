"""SillyTavern's name macros in lore and persona text: `{{char}}` and `<BOT>` become the familiar's name,
`{{user}}` and `<USER>` the name of the person it answers (any case; spaces inside the braces allowed).

Only these are expanded; other macros (`{{random}}`, `{{pick}}`, `{{roll}}`, `{{// comment}}`...) stay as
written. Keys are not expanded: a key is matched as it is written.
"""

from __future__ import annotations

import re

_MACRO = re.compile(r"\{\{\s*(char|user)\s*\}\}|<(bot|user)>", re.IGNORECASE)


def has_macros(text: str) -> bool:
    return _MACRO.search(text) is not None


def has_user_macro(text: str) -> bool:
    return any((found.group(1) or found.group(2)).lower() == "user" for found in _MACRO.finditer(text))


def expand(text: str, char: str, user: str) -> str:
    """The text with the name macros replaced (the names are put in as they are)."""
    if "{{" not in text and "<" not in text:
        return text
    return _MACRO.sub(lambda found: user if (found.group(1) or found.group(2)).lower() == "user" else char, text)


__all__ = ["expand", "has_macros", "has_user_macro"]
