"""The lorebook editor's rows, its scoped filter and sort: plain Python, no Qt (the draft: app/ui/state).

A row is one entry of the draft (the book as being edited) with what the table shows beside it: its lint
marks, how often it fired lately. Its search texts are lowered once, when the row is made, so filtering
5,000 rows is a few list passes (bench/bench_lorebook.py, "editor filter at 5,000 entries").

The filter is words, all of which must match (case-insensitive): a bare word anywhere in the title,
the keys or the content; `title:`, `key:` (primary or secondary keys) and `content:` in that field only;
`is:enabled`, `is:disabled`, `is:constant`, `is:lint`; `"quoted words"` as one term (also `key:"a b"`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.runtime.api.views import LoreEntryView

SCOPES = ("title", "key", "content", "is")
_TERM = re.compile(r'(?:(\w+):)?(?:"([^"]*)"|(\S+))')


@dataclass(frozen=True, slots=True)
class LoreRow:
    position: int  # 0-based, in the draft
    entry: LoreEntryView
    lint: tuple[str, ...] = ()  # what lint says of it, in words
    fired: int = 0  # replies it went into in the last 7 days
    last_fired: datetime | None = None
    title_text: str = ""  # lowered, for the filter
    keys_text: str = ""
    content_text: str = ""


def make_row(
    position: int,
    entry: LoreEntryView,
    lint: tuple[str, ...] = (),
    fired: int = 0,
    last_fired: datetime | None = None,
) -> LoreRow:
    keys = "\n".join((*entry.keys, *entry.secondary_keys)).lower()
    return LoreRow(position, entry, lint, fired, last_fired, entry.title.lower(), keys, entry.content.lower())


@dataclass(frozen=True, slots=True)
class Term:
    scope: str | None  # None: anywhere
    text: str


def parse_query(query: str) -> list[Term]:
    terms: list[Term] = []
    for match in _TERM.finditer(query):
        scope, quoted, bare = match.group(1), match.group(2), match.group(3)
        text = quoted if quoted is not None else bare
        if scope is not None and scope.lower() not in SCOPES:
            text, scope = f"{scope}:{text}", None  # "10:30" or a colon in a word: a plain term
        if text:
            terms.append(Term(scope.lower() if scope else None, text.lower()))
    return terms


def _is(flag: str) -> Callable[[LoreRow], bool]:
    checks: dict[str, Callable[[LoreRow], bool]] = {
        "enabled": lambda r: r.entry.enabled,
        "disabled": lambda r: not r.entry.enabled,
        "constant": lambda r: r.entry.constant,
        "lint": lambda r: bool(r.lint),
        "new": lambda r: r.entry.ref is None,
    }
    return checks.get(flag, lambda _r: False)


def filter_rows(rows: Sequence[LoreRow], query: str) -> list[LoreRow]:
    """The rows matching every term of `query` (see the module docstring), in their order."""
    kept = list(rows)
    for term in parse_query(query):
        text = term.text
        if term.scope == "title":
            kept = [r for r in kept if text in r.title_text]
        elif term.scope == "key":
            kept = [r for r in kept if text in r.keys_text]
        elif term.scope == "content":
            kept = [r for r in kept if text in r.content_text]
        elif term.scope == "is":
            check = _is(text)
            kept = [r for r in kept if check(r)]
        else:
            kept = [r for r in kept if text in r.title_text or text in r.keys_text or text in r.content_text]
        if not kept:
            break
    return kept


def _never(_row: LoreRow) -> Any:
    return 0


SORT_KEYS: dict[str, Callable[[LoreRow], Any]] = {
    "lint": lambda r: len(r.lint),
    "on": lambda r: r.entry.enabled,
    "#": lambda r: r.position,
    "title": lambda r: r.title_text,
    "keys": lambda r: r.keys_text,
    "logic": lambda r: r.entry.logic,
    "secondary": lambda r: len(r.entry.secondary_keys),
    "priority": lambda r: r.entry.priority,
    "constant": lambda r: r.entry.constant,
    "depth": lambda r: -1 if r.entry.scan_depth is None else r.entry.scan_depth,
    "tokens": lambda r: r.entry.tokens,
    "fired": lambda r: r.fired,
    "last": lambda r: r.last_fired.timestamp() if r.last_fired is not None else 0.0,
}


def sort_rows(rows: Sequence[LoreRow], key: str, descending: bool) -> list[LoreRow]:
    """Stable, so equal rows keep the book's order."""
    return sorted(rows, key=SORT_KEYS.get(key, _never), reverse=descending)
