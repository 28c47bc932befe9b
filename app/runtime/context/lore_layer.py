"""The lorebook layer: the entries of lorebook.toml a reply uses, within the lorebook's budget.

`LoreFile` is lorebook.toml as the familiar uses it: re-read when its size or modification time changes;
a file that does not read (a typo, a save in progress) keeps the last good book in use and says why
(`status`), naming the file, the line, the entry and the key. It is refreshed on the reply path and by the
lore API's watcher (on a worker thread: a big book takes a while to parse), hence its lock.

`LorebookLayer` activates the book with SillyTavern's rules (app/lore/activation.py) over the recent
conversation, at the place's message clock, with the place's timed effects (app/memory/lore_state.py) and
an RNG seeded per reply from the place and the message answered (recorded in the explanation, so the same
reply can be tried again). The name macros are expanded, then the entries are packed into the budget,
highest priority first. The timed effects an activation leaves are kept only once the prompt is used for a
reply (`commit`): assembling a prompt to look at it changes nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.config.settings import BudgetTier
from app.lore.activation import Activation, Dropped, Fired, Span, TimedEffect, activate
from app.lore.book import Lorebook, LorebookError, LoreProblem, describe_problem, empty_lorebook, load_lorebook
from app.lore.macros import expand
from app.lore.scanner import LoreScanner, ScannerCache, describe_disabled
from app.memory.lore_state import LoreState, TimedEffectRow
from app.memory.records import Turn
from app.runtime.context.budget import Packed, count_tokens, pack
from app.runtime.context.layers import LayerOutput, ReplyContext

LORE_HEADER = "## Lorebook\n"
PENDING_REPLIES = 64  # activations waiting for their reply (a few channels answering at once)


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

    def adopt(self, book: Lorebook) -> None:
        """The book just written to the file by the editor: in use at once, without reading the file again."""
        try:
            stat = self.path.stat()
        except OSError:
            return  # refresh() reads it, whatever happened
        with self._lock:
            self._book, self._stamp, self._error = book, (stat.st_mtime_ns, stat.st_size), None

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


def reply_seed(place: str, turn_id: int) -> int:
    """The seed of a reply's lore activation: fixed by the place and the message answered."""
    return int.from_bytes(hashlib.sha256(f"{place}/{turn_id}".encode()).digest()[:4], "big")


def to_effects(rows: Sequence[TimedEffectRow]) -> list[TimedEffect]:
    return [TimedEffect(r.entry, "sticky" if r.kind == "sticky" else "cooldown", r.start, r.end) for r in rows]


def to_rows(place: str, effects: Sequence[TimedEffect]) -> list[TimedEffectRow]:
    return [TimedEffectRow(place, e.entry, e.kind, e.start, e.end) for e in effects]


@dataclass(frozen=True, slots=True)
class Selection:
    """What a lorebook activation puts in a prompt: the block, and what is in and out, for the explanation."""

    packed: Packed
    budget: int
    items: tuple[dict[str, Any], ...]
    dropped: tuple[dict[str, Any], ...]


def lore_budget(book: Lorebook, tier: BudgetTier) -> tuple[int, int]:
    """The lorebook's token budget and entry cap: the tier's, lowered by the book's own."""
    budget = tier.lorebook_tokens if book.token_budget is None else min(book.token_budget, tier.lorebook_tokens)
    cap = tier.max_lorebook_entries if book.max_entries is None else min(tier.max_lorebook_entries, book.max_entries)
    return budget, cap


def select(
    activation: Activation, budget: int, cap: int, *, char: str, user: str, turns: Sequence[Turn | None]
) -> Selection:
    """Pack the activated entries (macros expanded) into the budget; every entry left out says why.

    `turns` are the recent messages the activation scanned (oldest first; None for a text not stored), so
    spans can name their message."""
    fired = activation.fired
    contents = [expand(f.entry.content.strip(), char, user) for f in fired]
    packed = pack(contents, budget, lambda kept: (LORE_HEADER + "\n\n".join(kept)) if kept else "", max_items=cap)
    items = tuple({**_fired(fired[i], turns), "tokens": count_tokens(contents[i])} for i in packed.included)
    capped = {i for i in packed.dropped if len(packed.included) >= cap}
    over = tuple(
        {
            **_identity(fired[i].entry, fired[i].key),
            "reason": "entry cap" if i in capped else "budget",
            "detail": (
                f"the lorebook takes at most {cap} entries"
                if i in capped
                else f"{count_tokens(contents[i])} tokens do not fit in what is left of {budget}"
            ),
            "step": fired[i].step,
            "span": _span(fired[i].span, turns),
        }
        for i in packed.dropped
    )
    dropped = tuple(_dropped(d, turns) for d in activation.dropped) + over
    return Selection(packed, budget, items, dropped)


def _identity(entry: Any, key: str) -> dict[str, Any]:
    return {"index": entry.index, "title": entry.title, "key": key}


def _fired(fired: Fired, turns: Sequence[Turn | None]) -> dict[str, Any]:
    return {
        **_identity(fired.entry, fired.key),
        "secondary": fired.secondary,
        "priority": fired.entry.priority,
        "via": fired.via,
        "step": fired.step,
        "span": _span(fired.span, turns),
        "roll": None if fired.roll is None else round(fired.roll, 2),
    }


def _dropped(dropped: Dropped, turns: Sequence[Turn | None]) -> dict[str, Any]:
    return {
        **_identity(dropped.entry, dropped.key),
        "reason": dropped.reason,
        "detail": dropped.detail,
        "step": dropped.step,
        "span": _span(dropped.span, turns),
    }


def _span(span: Span | None, turns: Sequence[Turn | None]) -> dict[str, Any] | None:
    """A span as the explanation keeps it: offsets only, never text. In a message's content, or in its
    author's name (the scanned line is "name: content"), or in an activated entry's content."""
    if span is None:
        return None
    if span.entry is not None or span.text is None:
        return {"source": "lore", "entry": span.entry, "start": span.start, "end": span.end}
    turn = turns[span.text] if span.text < len(turns) else None
    if turn is None:  # a text tried in the editor: no author to tell apart
        return {"source": "text", "position": span.text, "start": span.start, "end": span.end}
    prefix = len(turn.author_name) + 2
    turn_id = turn.id
    if span.start >= prefix:
        found = {"source": "message", "turn_id": turn_id, "start": span.start - prefix, "end": span.end - prefix}
    else:
        found = {"source": "author", "turn_id": turn_id, "start": span.start, "end": min(span.end, prefix - 2)}
    return {**found, "position": span.text}


# The reply path's scans run on a thread of their own, one at a time (a scanner is not shared between
# threads): a regex key near its time limit costs a reply up to bounded_regex.SCAN_BUDGET a scan, and on the
# event loop that was a stall of every place, every heartbeat and the window. One thread for the process,
# made when first needed; it ends with the process.
_scans: ThreadPoolExecutor | None = None
_scans_lock = threading.Lock()
_reporting = threading.local()  # on the scan thread: the event loop a disabled key is reported on


def _scan_thread() -> ThreadPoolExecutor:
    global _scans
    with _scans_lock:
        if _scans is None:
            _scans = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lore-scan")
        return _scans


def _on_loop(callback: Callable[[list[LoreProblem]], None]) -> Callable[[list[LoreProblem]], None]:
    """`callback`, called on the event loop's thread when a scan thread calls it."""

    def report(problems: list[LoreProblem]) -> None:
        loop = getattr(_reporting, "loop", None)
        if loop is None:
            callback(problems)
        else:
            loop.call_soon_threadsafe(callback, problems)

    return report


class LorebookLayer:
    name = "lorebook"

    def __init__(
        self,
        lore: LoreFile,
        state: LoreState | None = None,
        on_disabled: Callable[[list[LoreProblem]], None] | None = None,
    ) -> None:
        """`state` keeps the timed effects and message clocks per place (None: none, every reply is message
        len(recent) with no effects); `on_disabled` hears of each regex key switched off for running over
        its time limit."""
        self.file = lore
        self._state = state
        self._scanners = ScannerCache(size=2, on_disabled=None if on_disabled is None else _on_loop(on_disabled))
        self._pending: OrderedDict[tuple[str, int], tuple[Activation, Lorebook]] = OrderedDict()

    def book(self) -> Lorebook:
        return self.file.book()

    def scanner(self, book: Lorebook | None = None) -> LoreScanner:
        return self._scanners.scanner(self.book() if book is None else book)

    @property
    def error(self) -> str:
        return self.file.error

    def invalidation_key(self, ctx: ReplyContext) -> Hashable:
        """What the output depends on: the book, the texts, the message answered (it fixes the clock and the
        seed), the place's timed effects (their change counter), the names and the budget."""
        book = self.book()
        answering = ctx.recent[-1].id if ctx.recent else 0
        return (
            book.digest,
            ctx.place,
            answering,
            tuple(ctx.scan_texts()),
            ctx.versions.get("lore_timed_effects"),
            ctx.display_name,
            ctx.speaker,
            ctx.budget.lorebook_tokens,
            ctx.budget.max_lorebook_entries,
            self.error,
            len(self._disabled(book)),
        )

    def _disabled(self, book: Lorebook) -> tuple[LoreProblem, ...]:
        built = self._scanners.built(book)  # a scanner not built yet has disabled nothing
        return () if built is None else built.disabled

    async def effects(self, place: str) -> list[TimedEffect]:
        return [] if self._state is None else to_effects(await self._state.effects(place))

    async def clock(self, place: str, recent: Sequence[Turn]) -> int:
        if self._state is None or not recent:
            return len(recent)
        return await self._state.clock(place, recent[-1].id)

    async def build(self, ctx: ReplyContext) -> LayerOutput:
        book = self.book()
        answering = ctx.recent[-1].id if ctx.recent else 0
        clock = await self.clock(ctx.place, ctx.recent)
        seed = reply_seed(ctx.place, answering)
        effects = await self.effects(ctx.place)
        texts = ctx.scan_texts()
        loop = asyncio.get_running_loop()
        scanner, activation = await loop.run_in_executor(
            _scan_thread(), self._activate, loop, book, texts, clock, effects, seed
        )
        if self._state is not None and ctx.recent:
            self._pending[(ctx.place, answering)] = (activation, book)
            while len(self._pending) > PENDING_REPLIES:
                self._pending.popitem(last=False)
        budget, cap = lore_budget(book, ctx.budget)
        chosen = select(activation, budget, cap, char=ctx.display_name, user=ctx.speaker, turns=ctx.recent)
        problems = "; ".join(
            [
                *([self.error] if self.error else []),
                *(describe_problem(p) for p in book.problems),
                *(describe_disabled(p) for p in scanner.disabled),
            ]
        )
        details = {"seed": seed, "clock": clock, "steps": [list(step) for step in activation.steps]}
        return LayerOutput(
            self.name,
            text=chosen.packed.text,
            cost=chosen.packed.cost,
            budget=budget,
            items=chosen.items,
            dropped=chosen.dropped,
            note=problems,
            details=details,
        )

    def _activate(
        self,
        loop: asyncio.AbstractEventLoop,
        book: Lorebook,
        texts: list[str],
        clock: int,
        effects: list[TimedEffect],
        seed: int,
    ) -> tuple[LoreScanner, Activation]:
        """On the scan thread: the book's scanner (compiled here the first time) and the activation. A key
        it disables is reported on the event loop's thread, where the familiar's events are published."""
        _reporting.loop = loop
        try:
            scanner = self.scanner(book)
            return scanner, activate(scanner, texts, clock=clock, effects=effects, seed=seed)
        finally:
            _reporting.loop = None

    async def commit(self, place: str, turn_id: int) -> None:
        """The prompt built for the reply to `turn_id` was used: keep the timed effects it left."""
        pending = self._pending.pop((place, turn_id), None)
        if pending is None or self._state is None:
            return
        activation, _book = pending
        await self._state.replace(place, to_rows(place, activation.effects))
