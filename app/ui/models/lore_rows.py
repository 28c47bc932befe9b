"""The lorebook editor's rows, its scoped filter and sort, and the draft merge: plain Python, no Qt.

A row is one entry of the draft (the book as being edited) with what the table shows beside it: its lint
marks, how often it fired lately. Its search texts are lowered once, when the row is made, so filtering
5,000 rows is a few list passes (bench/bench_lorebook.py, "editor filter at 5,000 entries").

The filter is words, all of which must match (case-insensitive): a bare word anywhere in the title,
the keys or the content; `title:`, `key:` (primary or secondary keys) and `content:` in that field only;
`is:enabled`, `is:disabled`, `is:constant`, `is:lint`; `"quoted words"` as one term (also `key:"a b"`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.runtime.views import LoreEntryView

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


# -- the draft and its merge with the file ------------------------------------------------------------------
def same_entry(a: LoreEntryView, b: LoreEntryView) -> bool:
    """Equal in every field a save writes (not the derived token count, not the position)."""
    return a is b or dataclasses.replace(a, ref=None, tokens=0) == dataclasses.replace(b, ref=None, tokens=0)


def _identity(entry: LoreEntryView) -> tuple[str, tuple[str, ...]]:
    return (entry.title, entry.keys)


@dataclass(frozen=True, slots=True)
class Merged:
    entries: tuple[LoreEntryView, ...]  # refs into `theirs` (None: new)
    conflicts: tuple[str, ...]  # titles edited both here and on disk: this editor's version was kept


def merge(base: Sequence[LoreEntryView], mine: Sequence[LoreEntryView], theirs: Sequence[LoreEntryView]) -> Merged:
    """A three-way merge of the draft (`mine`, refs into `base`) with the book as it is on disk now
    (`theirs`). Entries are matched by position when the file kept its count, else by title and keys.
    Edited on one side only: that side wins; on both: the draft wins and the entry is named in
    `conflicts`; added on disk: appended; removed on disk: dropped unless the draft edited it."""
    if len(base) == len(theirs):
        mapping: dict[int, int | None] = {i: i for i in range(len(base))}
    else:
        found: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i, entry in enumerate(theirs):
            found.setdefault(_identity(entry), []).append(i)
        mapping = {}
        for i, entry in enumerate(base):
            candidates = found.get(_identity(entry), [])
            mapping[i] = candidates.pop(0) if candidates else None
    used: set[int] = set()
    out: list[LoreEntryView] = []
    conflicts: list[str] = []
    kept_refs = {e.ref for e in mine if e.ref is not None}
    for entry in mine:
        if entry.ref is None:
            out.append(entry)
            continue
        was = base[entry.ref]
        target = mapping.get(entry.ref)
        mine_changed = not same_entry(entry, was)
        if target is None:
            if mine_changed:
                out.append(dataclasses.replace(entry, ref=None))
            continue
        used.add(target)
        their = theirs[target]
        theirs_changed = not same_entry(their, was)
        if mine_changed and theirs_changed and not same_entry(entry, their):
            conflicts.append(entry.title or f"entry {target + 1}")
        out.append(dataclasses.replace(entry, ref=target) if mine_changed else their)
    for index, target in mapping.items():
        if index not in kept_refs and target is not None:
            used.add(target)  # removed here: stays removed (an edit on disk of it is lost, so say so)
            if not same_entry(theirs[target], base[index]):
                conflicts.append(theirs[target].title or f"entry {target + 1}")
    out.extend(entry for i, entry in enumerate(theirs) if i not in used)
    return Merged(tuple(out), tuple(conflicts))


def translate(entries: Sequence[LoreEntryView], mapping: dict[int, int | None]) -> tuple[LoreEntryView, ...]:
    """Entries whose refs point into a book as it was, pointed into the book a save made of it (`mapping`:
    old ref -> new, None for an entry the save removed: it becomes a new entry again)."""
    out: list[LoreEntryView] = []
    for entry in entries:
        if entry.ref is None:
            out.append(entry)
            continue
        target = mapping.get(entry.ref)
        out.append(entry if target == entry.ref else dataclasses.replace(entry, ref=target))
    return tuple(out)
