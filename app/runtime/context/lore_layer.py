"""The lorebook layer: the entries of lorebook.toml that fire for the recent conversation, within budget.

`LoreFile` is lorebook.toml as the familiar uses it: re-read when its size or modification time changes;
a file that does not read (a typo, a save in progress) keeps the last good book in use and says why
(`status`), naming the file, the line, the entry and the key. It is refreshed on the reply path and by the
lore API's watcher (on a worker thread: a big book takes a while to parse), hence its lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.lore.book import Lorebook, LorebookError, LoreProblem, describe_problem, empty_lorebook, load_lorebook
from app.lore.scanner import ScannerCache, describe_disabled
from app.runtime.context.budget import count_tokens, pack
from app.runtime.context.layers import LayerOutput, ReplyContext


@dataclass(frozen=True, slots=True)
class LoreFileStatus:
    problem: str | None  # why the file on disk is not the book in use (None: it is)
    line: int | None
    warnings: tuple[str, ...]  # keys that never match


class LoreFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._book: Lorebook | None = None
        self._error: LorebookError | None = None

    def book(self) -> Lorebook:
        """The book in use, the file re-read first if it changed."""
        self.refresh()
        assert self._book is not None
        return self._book

    def refresh(self) -> None:
        try:
            stat = self.path.stat()
            stamp: tuple[int, int] = (stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            stamp = (0, 0)
        except OSError:
            stamp = (-1, -1)  # unreadable: load_lorebook says why
        with self._lock:
            if self._book is not None and stamp == self._stamp:
                return
            try:
                book = load_lorebook(self.path)
                error = None
            except LorebookError as exc:
                # A typo (or a save in progress) must not stop every reply: keep the last good book.
                book, error = self._book or empty_lorebook(), exc
            self._book, self._stamp, self._error = book, stamp, error

    @property
    def status(self) -> LoreFileStatus:
        with self._lock:
            book, error = self._book, self._error
        warnings = tuple(describe_problem(p) for p in book.problems) if book is not None else ()
        if error is None:
            return LoreFileStatus(None, None, warnings)
        return LoreFileStatus(str(error), error.line, warnings)

    @property
    def error(self) -> str:
        """Why the file on disk is not the one in use, in one line ("" when it is)."""
        problem = self.status.problem
        return "" if problem is None else f"lorebook.toml not used: {problem}"


class LorebookLayer:
    name = "lorebook"

    def __init__(self, lore: LoreFile, on_disabled: Callable[[list[LoreProblem]], None] | None = None) -> None:
        """`on_disabled` hears of each regex key switched off for running over its time limit."""
        self.file = lore
        self._scanners = ScannerCache(size=2, on_disabled=on_disabled)
        self._matches_for: tuple[Hashable, Any] | None = None

    def book(self) -> Lorebook:
        return self.file.book()

    @property
    def error(self) -> str:
        return self.file.error

    def _activate(self, ctx: ReplyContext) -> list[Any]:
        book = self.book()
        texts = ctx.scan_texts()
        key = (book.digest, tuple(texts))
        if self._matches_for is not None and self._matches_for[0] == key:
            return list(self._matches_for[1])
        matches = self._scanners.scanner(book).activate(texts)
        self._matches_for = (key, matches)
        return list(matches)

    def invalidation_key(self, ctx: ReplyContext) -> Hashable:
        book = self.book()
        fired = tuple((m.entry.index, m.key, m.secondary) for m in self._activate(ctx))
        return (book.digest, fired, ctx.budget.lorebook_tokens, ctx.budget.max_lorebook_entries, self.error)

    async def build(self, ctx: ReplyContext) -> LayerOutput:
        book = self.book()
        matches = self._activate(ctx)
        budget = (
            ctx.budget.lorebook_tokens
            if book.token_budget is None
            else min(book.token_budget, ctx.budget.lorebook_tokens)
        )
        cap = ctx.budget.max_lorebook_entries
        if book.max_entries is not None:
            cap = min(cap, book.max_entries)
        contents = [m.entry.content.strip() for m in matches]
        packed = pack(
            contents, budget, lambda kept: ("## Lorebook\n" + "\n\n".join(kept)) if kept else "", max_items=cap
        )
        items = tuple(
            {
                "index": matches[i].entry.index,
                "title": matches[i].entry.title,
                "key": matches[i].key,
                "secondary": matches[i].secondary,
                "priority": matches[i].entry.priority,
                "tokens": count_tokens(contents[i]),
            }
            for i in packed.included
        )
        capped = {i for i in packed.dropped if len(packed.included) >= cap}
        dropped = tuple(
            {
                "index": matches[i].entry.index,
                "title": matches[i].entry.title,
                "key": matches[i].key,
                "reason": "entry cap" if i in capped else "budget",
            }
            for i in packed.dropped
        )
        problems = "; ".join(
            [
                *([self.error] if self.error else []),
                *(describe_problem(p) for p in book.problems),
                *(describe_disabled(p) for p in self._scanners.scanner(book).disabled),
            ]
        )
        return LayerOutput(
            self.name, text=packed.text, cost=packed.cost, budget=budget, items=items, dropped=dropped, note=problems
        )
