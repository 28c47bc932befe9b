"""Lint of a lorebook: what likely does not do what its author meant (the editor shows it in its table).

- invalid_key: a key that never matches (empty, a NUL, a regex that does not compile or is too long) or a
  decorator line that cannot be read;
- inner_word: a literal key of one word matched without whole words, so it also fires inside other words
  ("AI" in "Maine");
- shared_key: a primary key used by SHARED_LIMIT or more enabled entries (they all fire together);
- never_fires: an enabled entry that cannot activate: no keys and not constant, none of its keys usable,
  probability 0, @@dont_activate, or a scan depth of 0 with no recursion to reach it.
Disabled entries are switched off on purpose and not linted as never firing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from app.lore.book import Lorebook, LoreEntry
from app.lore.keys import compile_regex_key, key_problem
from app.lore.scanner import spaceless

SHARED_LIMIT = 3

LintKind = Literal["invalid_key", "inner_word", "shared_key", "never_fires"]
_ONE_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Lint:
    entry: int  # 0-based
    kind: LintKind
    key: str | None
    message: str
    others: tuple[int, ...] = ()


def lint(book: Lorebook, *, shared_limit: int = SHARED_LIMIT) -> list[Lint]:
    """Every lint of the book, entry by entry (in file order), each kind in the order above."""
    found: dict[int, list[Lint]] = {}
    for problem in book.problems:
        found.setdefault(problem.index, []).append(Lint(problem.index, "invalid_key", problem.key, problem.message))
    users: dict[tuple[str, bool], list[int]] = {}
    for entry in book.entries:
        cs = book.case_sensitive if entry.case_sensitive is None else entry.case_sensitive
        ww = book.whole_words if entry.whole_words is None else entry.whole_words
        for key in dict.fromkeys((*entry.keys, *entry.decorators.additional_keys)):
            if compile_regex_key(key) is not None or key_problem(key) is not None:
                continue
            normal = " ".join(key.split())
            if not ww and _ONE_WORD.fullmatch(normal) and not spaceless(normal):
                found.setdefault(entry.index, []).append(
                    Lint(
                        entry.index,
                        "inner_word",
                        key,
                        f'"{key}" also matches inside other words (whole words is off): turn whole words on, '
                        "or write the key as a regex",
                    )
                )
            if entry.enabled:
                users.setdefault((normal if cs else normal.lower(), cs), []).append(entry.index)
    for (normal, _cs), indexes in users.items():
        shared = list(dict.fromkeys(indexes))
        if len(shared) < shared_limit:
            continue
        for index in shared:
            others = tuple(i for i in shared if i != index)
            message = f'the key "{normal}" is shared by {len(shared)} entries: they all fire together'
            found.setdefault(index, []).append(Lint(index, "shared_key", normal, message, others))
    for entry in book.entries:
        why = next(_never(book, entry), None)
        if why is not None:
            found.setdefault(entry.index, []).append(Lint(entry.index, "never_fires", None, why))
    order = {"invalid_key": 0, "inner_word": 1, "shared_key": 2, "never_fires": 3}
    return [item for index in sorted(found) for item in sorted(found[index], key=lambda lint: order[lint.kind])]


def _never(book: Lorebook, entry: LoreEntry) -> Iterator[str]:
    """Why an enabled entry can never activate (nothing when it can)."""
    if not entry.enabled:
        return
    d = entry.decorators
    if d.dont_activate:
        yield "@@dont_activate: it never activates"
    if entry.use_probability and entry.probability == 0:
        yield "probability 0: it never passes its roll"
    if entry.constant or d.activate:
        return
    keys = (*entry.keys, *d.additional_keys)
    if not keys:
        yield "no keys and not constant: nothing can activate it"
        return
    if all(key_problem(key) is not None for key in keys):
        yield "none of its keys can match"
        return
    depth = entry.scan_depth if entry.scan_depth is not None else d.scan_depth
    depth = book.scan_depth if depth is None else depth
    if depth == 0 and (not book.recursive_scanning or entry.exclude_recursion):
        yield "scan depth 0 and no recursion: no text is ever looked at for its keys"
    broken = [key_problem(key) is not None for key in entry.secondary_keys]
    if broken and entry.logic == "and_all" and any(broken):
        yield "a secondary key that can never match, under and_all: the entry can never fire"
    elif broken and entry.logic == "and_any" and all(broken):
        yield "none of its secondary keys can match, under and_any: the entry can never fire"


__all__ = ["SHARED_LIMIT", "Lint", "LintKind", "lint"]
