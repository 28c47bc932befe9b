"""Activation with SillyTavern's rules: which entries a reply uses, and why each one that matched is not.

Pure: the caller passes the recent texts, the place's message clock, its timed effects and a seed, and
gets the activated entries, the dropped ones with their reasons, and the timed effects as they stand
after this activation (for the caller to keep: the runtime saves them per place). Same inputs, same
result: the seeded RNG is the only randomness.

The clock is the number of the message being answered in its place (1 = the first message there, the
familiar's own included), the unit of sticky, cooldown and delay, as SillyTavern counts chat messages.

One activation, as SillyTavern's checkWorldInfo:
1. Step 0 looks at the recent conversation. Entries activate when their keys fire (scanner.py), when they
   are constant (or @@activate), or when a sticky effect holds them (then keys, cooldown and probability do
   not matter). An entry whose keys fired is dropped, with its reason, when it is disabled, its place has
   fewer messages than its `delay` (or @@activate_only_after), it is not an @@activate_only_every message,
   it is cooling down, or @@dont_activate says never. An entry with `delay_until_recursion` waits for a
   recursion step of its level.
2. Inclusion groups: of the entries activated in one step that share a group, one stays: a sticky one if
   any; with group scoring, only those with the most keys found take part; then the highest priority among
   `group_override` entries, else one drawn by `group_weight`. A group already represented by an earlier
   step takes none. The others are dropped (reason "group").
3. Probability: each remaining entry with `use_probability` and a probability under 100 rolls 0-100; over
   its probability it is dropped (reason "probability") and not tried again in later steps.
4. Recursion (`recursive_scanning`, at most `max_recursion_steps` further steps): the content of the entries
   just activated (but those with `prevent_recursion`) is looked at, with the conversation, for entries not
   yet activated (but those with `exclude_recursion`). When a step activates nothing new and entries wait
   for a higher recursion level, the next level's step runs. Entries still waiting at the end are dropped
   (reason "recursion").
5. Timed effects: an entry activated (not held by sticky) with `sticky` N stays active for the next N
   messages; with `cooldown` N it cannot activate for N messages after that (after its sticky ends);
   @@keep_activate_after_match / @@dont_activate_after_match make those without an end. Effects that ended
   and those of entries no longer in the book (or edited: an effect is tied to the entry's title, keys and
   content, as SillyTavern ties it to the entry) are dropped.
Budget and entry cap come after, in the lorebook layer, which adds their drops.
"""

from __future__ import annotations

import hashlib
import random
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from app.lore.book import LoreEntry
from app.lore.scanner import CONSTANT_KEY, KeyHit, LoreScanner, Scan

FOREVER = 2**62  # the end of a timed effect that never ends
STICKY_KEY = "(sticky)"
ACTIVATE_KEY = "(@@activate)"

TimedKind = Literal["sticky", "cooldown"]
Via = Literal["key", "constant", "sticky", "decorator"]
DropReason = Literal["disabled", "delay", "cooldown", "decorator", "group", "probability", "recursion"]


@dataclass(frozen=True, slots=True)
class TimedEffect:
    """A sticky or cooldown effect of one entry in one place: active at clocks start < clock <= end."""

    entry: str  # entry_key() of the entry
    kind: TimedKind
    start: int
    end: int

    def active(self, clock: int) -> bool:
        return self.start < clock <= self.end


@dataclass(frozen=True, slots=True)
class Span:
    """Where a key fired: in recent text `text` (0 = the oldest text passed in), or, for a recursion step,
    in the content of the entry at index `entry`; start and end offsets in that text."""

    text: int | None
    entry: int | None
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Fired:
    entry: LoreEntry
    key: str  # the key that fired, or "(constant)", "(sticky)", "(@@activate)"
    secondary: str | None
    via: Via
    step: int  # 0: the conversation; 1...: recursion steps
    span: Span | None = None
    roll: float | None = None  # the probability roll, when there was one


@dataclass(frozen=True, slots=True)
class Dropped:
    entry: LoreEntry
    key: str  # what matched, as in Fired
    reason: DropReason
    detail: str  # in words: "rolled 73 against 50%", "group 'weather' chose \"Rain\"", ...
    step: int
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class Activation:
    fired: tuple[Fired, ...]  # highest priority first (@@ignore_on_max_context last), then file order
    dropped: tuple[Dropped, ...]  # in the order decided
    steps: tuple[tuple[int, ...], ...]  # entry indexes activated by each step: the recursion chain
    effects: tuple[TimedEffect, ...]  # the place's timed effects after this activation
    seed: int
    clock: int
    started: tuple[TimedEffect, ...] = ()  # the effects this activation began


def entry_key(entry: LoreEntry) -> str:
    """What ties a timed effect to its entry: its title, keys and content (an edit ends its effects)."""
    parts = [entry.title, *entry.keys, "\x1e", *entry.secondary_keys, "\x1e", entry.content]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one activation needs to know of a book besides its keys, worked out once per scanner."""

    keys: dict[int, str]  # entry index -> entry_key, for the entries with timed effects
    activate: tuple[LoreEntry, ...]  # enabled, not constant, @@activate
    timed: tuple[LoreEntry, ...]  # enabled, not constant, with timed effects (they may be held by a sticky)
    levels: tuple[int, ...]  # the recursion levels entries wait for, lowest first
    delayed: tuple[LoreEntry, ...]  # the entries that wait for one
    groups: dict[int, tuple[str, ...]]  # entry index -> its inclusion groups (entries in none left out)


_plans: weakref.WeakKeyDictionary[LoreScanner, _Plan] = weakref.WeakKeyDictionary()


def _plan(scanner: LoreScanner) -> _Plan:
    plan = _plans.get(scanner)
    if plan is None:
        entries = scanner.book.entries
        live = [e for e in entries if e.enabled and not e.constant]
        plan = _Plan(
            keys={e.index: entry_key(e) for e in entries if e.timed},
            activate=tuple(e for e in live if e.decorators.activate),
            timed=tuple(e for e in live if e.timed and not e.decorators.activate),
            levels=tuple(sorted({e.delay_until_recursion for e in entries if e.delay_until_recursion})),
            delayed=tuple(e for e in entries if e.delay_until_recursion),
            groups={e.index: e.groups for e in entries if e.group},
        )
        _plans[scanner] = plan
    return plan


@dataclass(slots=True)
class _Candidate:
    entry: LoreEntry
    key: str
    secondary: str | None
    via: Via
    position: int | None  # in the scanner, for keys and scores
    hit: KeyHit | None


class _Run:
    def __init__(
        self, scanner: LoreScanner, texts: Sequence[str], clock: int, effects: Iterable[TimedEffect], seed: int
    ) -> None:
        self.scanner = scanner
        self.book = scanner.book
        self.texts = list(texts)
        self.clock = clock
        self.seed = seed
        self.rng = random.Random(seed)
        self.effects = tuple(effects)
        self.plan = _plan(scanner)
        self.timed = set(self.plan.keys.values())
        self.sticky = {e.entry for e in self.effects if e.kind == "sticky" and e.active(clock)}
        self.cooling = {e.entry: e for e in self.effects if e.kind == "cooldown" and e.active(clock)}
        self.activated: dict[int, Fired] = {}
        self.settled: set[int] = set()  # activated or dropped: decided for this activation
        self.dropped: list[Dropped] = []
        self.waiting: dict[int, _Candidate] = {}  # matched, delayed until a recursion level not reached yet
        self.groups_taken: dict[str, str] = {}  # group -> the title that took it in an earlier step
        # Views: the conversation (view 0), then the content of each entry activated, for the steps after it
        # (the entry of each view in `sources`); an entry's content is scanned once per book (content_scan).
        self.sources: list[int | None] = [None]
        self.scans: tuple[Scan, ...] = ()
        self.fresh: tuple[Scan, ...] = ()  # the scans of the text this step brings (none: a step of a new level)

    # -- gates ------------------------------------------------------------------------------------------
    def gate(self, candidate: _Candidate) -> tuple[DropReason, str] | None:
        """Why a candidate cannot activate now (None: it can)."""
        entry = candidate.entry
        d = entry.decorators
        if not entry.enabled:
            return "disabled", "the entry is switched off"
        if d.dont_activate:
            return "decorator", "@@dont_activate"
        after = max(entry.delay, d.activate_only_after)
        if self.clock < after:
            return "delay", f"waits for the place's message {after}; this is message {self.clock}"
        if d.activate_only_every and self.clock % d.activate_only_every:
            return "decorator", f"@@activate_only_every {d.activate_only_every}: not on message {self.clock}"
        if entry.timed:
            cooling = self.cooling.get(self.plan.keys[entry.index])
            if cooling is not None:
                until = "in this place" if cooling.end >= FOREVER else f"until message {cooling.end + 1}"
                return "cooldown", f"cooling down: it cannot activate again {until}"
        return None

    def admit(self, candidate: _Candidate, step: int) -> bool:
        """Whether the candidate passes the gates; a key match that does not is dropped with its reason
        (constant and @@activate entries are not reported: they "match" every time)."""
        if candidate.via == "sticky":
            return True
        gated = self.gate(candidate)
        if gated is None:
            return True
        self.settled.add(candidate.entry.index)
        if candidate.via == "key":
            self.dropped.append(Dropped(candidate.entry, candidate.key, *gated, step, self.span(candidate)))
        return False

    def drop(self, candidate: _Candidate, reason: DropReason, detail: str, step: int) -> None:
        self.settled.add(candidate.entry.index)
        self.dropped.append(Dropped(candidate.entry, candidate.key, reason, detail, step, self.span(candidate)))

    def span(self, candidate: _Candidate) -> Span | None:
        hit = candidate.hit
        if hit is None:
            return None
        if hit.view == 0:
            index = len(self.texts) - 1 - hit.distance
            found = self.scanner.span(hit.key, candidate.entry, self.texts[index])
            return None if found is None else Span(index, None, *found)
        source = self.sources[hit.view]
        assert source is not None
        found = self.scanner.span(hit.key, candidate.entry, self.book.entries[source].content)
        return None if found is None else Span(None, source, *found)

    # -- steps ------------------------------------------------------------------------------------------
    def run(self) -> Activation:
        scanner = self.scanner
        chat = scanner.scan(self.texts)
        self.scans = (chat,)
        self.fresh = (chat,)
        levels = list(self.plan.levels)
        level = levels.pop(0) if levels else 0
        steps: list[tuple[int, ...]] = []
        step = 0
        while True:
            chosen = self.choose(self.candidates(step, level), step)
            steps.append(tuple(f.entry.index for f in chosen))
            for item in chosen:
                self.activated[item.entry.index] = item
                self.settled.add(item.entry.index)
            if step >= self.book.max_recursion_steps:
                break
            fresh = [f.entry.index for f in chosen if not f.entry.prevent_recursion and f.entry.content.strip()]
            if self.book.recursive_scanning and fresh:
                self.fresh = tuple(scanner.content_scan(index) for index in fresh)
                self.scans = (*self.scans, *self.fresh)
                self.sources.extend(fresh)
            elif levels and any(
                e.delay_until_recursion > level and e.index not in self.settled for e in self.plan.delayed
            ):
                level = levels.pop(0)  # nothing new: the entries waiting for the next recursion level get a step
                self.fresh = ()
            else:
                break
            step += 1
        for candidate in self.waiting.values():
            if candidate.entry.index not in self.settled:
                needed = candidate.entry.delay_until_recursion
                self.drop(candidate, "recursion", f"waits for recursion level {needed}, not reached", step)
        fired = sorted(
            self.activated.values(),
            key=lambda f: (f.entry.decorators.ignore_on_max_context, -f.entry.priority, f.entry.index),
        )
        effects, started = self.next_effects(fired)
        while len(steps) > 1 and not steps[-1]:
            steps.pop()
        return Activation(tuple(fired), tuple(self.dropped), tuple(steps), effects, self.seed, self.clock, started)

    def candidates(self, step: int, level: int) -> list[_Candidate]:
        """The entries that may activate in this step, gates applied (drops recorded)."""
        scanner = self.scanner
        out: list[_Candidate] = []
        if step == 0:
            out += [_Candidate(entry, CONSTANT_KEY, None, "constant", None, None) for entry in scanner.constants]
            for entry in self.plan.activate:
                out.append(_Candidate(entry, ACTIVATE_KEY, None, "decorator", scanner.position_of(entry), None))
            if self.sticky:
                for entry in self.plan.timed:
                    if self.plan.keys[entry.index] in self.sticky:
                        out.append(_Candidate(entry, STICKY_KEY, None, "sticky", scanner.position_of(entry), None))
            out = [c for c in out if self.admit(c, step)]
        taken = {c.entry.index for c in out}
        # Step 0 looks at the conversation's candidates. A later step at those of the new content only, the
        # entries waiting for a recursion level, and those whose secondary or exclude keys the new content
        # could change: an entry whose key did not fire before does not fire now unless the new text has it.
        if step == 0:
            positions: set[int] = self.scans[0].candidates
        else:
            positions = set().union(*(scan.candidates for scan in self.fresh))
            positions.update(c.position for c in self.waiting.values() if c.position is not None)
            for scan in self.scans:
                positions.update(p for p in scan.candidates if scanner.conditional(p))
        for position in sorted(positions):
            entry = scanner.entry_at(position)
            if entry.index in self.settled or entry.index in taken or (entry.decorators.activate and entry.enabled):
                continue
            hit = scanner.hit(position, self.scans)
            if hit is None:
                continue
            candidate = _Candidate(entry, hit.key, hit.secondary, "key", position, hit)
            if entry.delay_until_recursion and (step == 0 or entry.delay_until_recursion > level):
                if self.gate(candidate) is None:  # it may still come, in a later step
                    self.waiting.setdefault(entry.index, candidate)
                    continue
            elif step > 0 and entry.exclude_recursion:
                if hit.view >= 1:
                    self.drop(candidate, "recursion", "never activated by other entries (exclude_recursion)", step)
                continue
            if self.admit(candidate, step):
                out.append(candidate)
        return out

    def choose(self, found: list[_Candidate], step: int) -> list[Fired]:
        """Inclusion groups, then probability: what this step activates."""
        found.sort(key=lambda c: (-c.entry.priority, c.entry.index))
        lost: set[int] = set()
        members: dict[str, list[_Candidate]] = {}
        groups = self.plan.groups
        for candidate in found:
            for group in groups.get(candidate.entry.index, ()):
                members.setdefault(group, []).append(candidate)
        for group, grouped in members.items():
            grouped = [c for c in grouped if c.entry.index not in lost]
            if group in self.groups_taken:
                for candidate in grouped:
                    lost.add(candidate.entry.index)
                    self.drop(candidate, "group", f"group '{group}' already has \"{self.groups_taken[group]}\"", step)
                continue
            if len(grouped) < 2:
                continue
            winner = self.winner(grouped)
            for candidate in grouped:
                if candidate is not winner:
                    lost.add(candidate.entry.index)
                    self.drop(candidate, "group", f"group '{group}' chose \"{_title(winner.entry)}\"", step)
        chosen: list[Fired] = []
        for candidate in found:
            entry = candidate.entry
            if entry.index in lost:
                continue
            roll = None
            if candidate.via != "sticky" and entry.use_probability and entry.probability < 100:
                roll = self.rng.random() * 100
                if roll > entry.probability:
                    self.drop(candidate, "probability", f"rolled {roll:.0f} against {entry.probability}%", step)
                    continue
            span = self.span(candidate) if candidate.via == "key" else None
            chosen.append(Fired(entry, candidate.key, candidate.secondary, candidate.via, step, span, roll))
        for fired in chosen:
            for group in groups.get(fired.entry.index, ()):
                self.groups_taken.setdefault(group, _title(fired.entry))
        return chosen

    def winner(self, grouped: list[_Candidate]) -> _Candidate:
        held = [c for c in grouped if c.via == "sticky"]
        if held:
            return held[0]
        if any(self.scoring(c.entry) for c in grouped):
            scores = [self.scanner.score(c.position, self.scans) if c.position is not None else 0 for c in grouped]
            best = max(scores)
            grouped = [c for c, score in zip(grouped, scores, strict=True) if score == best]
            if len(grouped) == 1:
                return grouped[0]
        override = [c for c in grouped if c.entry.group_override]
        if override:
            return override[0]  # the highest priority (they come sorted)
        total = sum(c.entry.group_weight for c in grouped)
        if total <= 0:
            return grouped[0]
        roll = self.rng.random() * total
        for candidate in grouped:
            roll -= candidate.entry.group_weight
            if roll < 0:
                return candidate
        return grouped[-1]

    def scoring(self, entry: LoreEntry) -> bool:
        return self.book.use_group_scoring if entry.use_group_scoring is None else entry.use_group_scoring

    # -- timed effects ----------------------------------------------------------------------------------
    def next_effects(self, fired: list[Fired]) -> tuple[tuple[TimedEffect, ...], tuple[TimedEffect, ...]]:
        clock = self.clock
        kept = [e for e in self.effects if e.end >= clock and e.entry in self.timed]
        started: list[TimedEffect] = []
        for item in fired:
            entry = item.entry
            if item.via == "sticky" or not entry.timed:
                continue
            key = self.plan.keys[entry.index]
            d = entry.decorators
            if key not in self.sticky:
                if d.keep_activate_after_match:
                    started.append(TimedEffect(key, "sticky", clock, FOREVER))
                elif entry.sticky:
                    started.append(TimedEffect(key, "sticky", clock, clock + entry.sticky))
            if d.dont_activate_after_match:
                started.append(TimedEffect(key, "cooldown", clock, FOREVER))
            elif entry.cooldown:
                begins = clock if d.keep_activate_after_match else clock + entry.sticky
                started.append(TimedEffect(key, "cooldown", begins, begins + entry.cooldown))
        replaced = {(e.entry, e.kind) for e in started}
        effects = [e for e in kept if (e.entry, e.kind) not in replaced] + started
        return tuple(effects), tuple(started)


def _title(entry: LoreEntry) -> str:
    return entry.title or f"entry {entry.index + 1}"


def activate(
    scanner: LoreScanner,
    texts: Sequence[str],
    *,
    clock: int = 0,
    effects: Iterable[TimedEffect] = (),
    seed: int = 0,
) -> Activation:
    """Activate the scanner's book for these recent texts (oldest first) at message `clock` of the place,
    with the place's timed effects, drawing from an RNG seeded with `seed`."""
    return _Run(scanner, texts, clock, effects, seed).run()


__all__ = [
    "ACTIVATE_KEY",
    "FOREVER",
    "STICKY_KEY",
    "Activation",
    "DropReason",
    "Dropped",
    "Fired",
    "Span",
    "TimedEffect",
    "TimedKind",
    "Via",
    "activate",
    "entry_key",
]
