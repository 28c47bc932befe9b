"""The activation scan: which entries of a lorebook fire for the recent conversation, and on which key.

Matching rules:
- A key written `/pattern/flags` is a regular expression (keys.py). Regex keys obey only their own flags:
  neither case_sensitive nor whole_words applies.
- Any other key is literal text; a run of whitespace in it matches any run of whitespace.
- Whole words: the key may not continue a word of the text at an end where the key itself has a word
  character. Scripts written without spaces (CJK, Hangul, Thai, Lao, Khmer, Myanmar) never need a boundary,
  so "東京" is found in "私は東京に住んでいる" and "C++" in "I like C++!".
- Only the first 6000 characters of each scanned text are looked at (a Discord message has at most 4000).
- A key with a problem (book.py) never matches.
- Regex keys are written for Python's `re` and mean what they mean there, but are matched in bounded time
  (bounded_regex.py): any pattern RE2 can express runs in linear time; the rest have a time limit, and a key
  that runs over it is disabled for as long as the scanner lives (until lorebook.toml changes), reported to
  the scanner's `on_disabled` and logged with its entry, and the scan goes on without it.
"""

from __future__ import annotations

import bisect
import functools
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.lore import bounded_regex
from app.lore.book import Lorebook, LoreEntry, LoreProblem
from app.lore.keys import compile_regex_key, key_problem

_log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 6000  # of each scanned text (a Discord message is at most 4000)
CONTENT_SCANS = 4096  # entries' contents kept scanned per book, for recursion
SPAN_BUDGET = 0.02  # seconds the time-limited engine may spend locating where a regex key matched
CONSTANT_KEY = "(constant)"


@dataclass(frozen=True, slots=True)
class LoreMatch:
    entry: LoreEntry
    key: str  # the key that fired, as written, or "(constant)"
    secondary: str | None  # and_any: the secondary found; and_all: the first; not_all: the first absent one


# Scripts written without spaces between words: a key never needs a word boundary next to them.
_NO_SPACE = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul Jamo
    "\u1780-\u17ff"  # Khmer
    "\u3005-\u3007\u3040-\u30ff\u31f0-\u31ff"  # CJK marks, Hiragana, Katakana
    "\u3130-\u318f\uac00-\ud7af"  # Hangul
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003ffff"  # Han extensions
)
_WORD_CHAR = f"[^\\W{_NO_SPACE}]"
_TOKEN = re.compile(f"{_WORD_CHAR}+")
_ASCII_TOKEN = re.compile(r"\w+", re.ASCII)  # the same words in ASCII text, found faster
_UNICODE_TOKEN = re.compile(r"\w+")  # ... and in text without any of the scripts above
_HAS_NO_SPACE = re.compile(f"[{_NO_SPACE}]")
_IS_WORD_CHAR = re.compile(_WORD_CHAR)


# -- activation ----------------------------------------------------------------------------------------
# How it stays fast (500 entries over 20 turns in well under 2 ms): every key is compiled once per book and
# interned, so a key shared by several entries is looked for once per scan. The window's words are
# collected once into word -> distance maps (distance 0 = the newest text); a whole-word key of one word is a
# dictionary hit, and an entry is examined only when one of its primary keys was seen. Other literal keys
# first require their inner words in that map, then look in the texts joined by NUL (str.find runs in C).
# Regex keys that RE2 can take are all put in RE2 sets, which tell in one pass over a text which of them
# match it; the other regex keys are searched text by text, newest first, only as deep as their entries scan.
_UNKNOWN = -1
_NEVER = 1 << 30


@dataclass(frozen=True, slots=True)
class _Token:
    """A whole-word key that is one word: a dictionary lookup in the window's words."""

    word: str
    case_sensitive: bool


@dataclass(frozen=True, slots=True)
class _Literal:
    """Any other literal key (several words, punctuation at an end, CJK, or substring matching)."""

    text: str  # whitespace runs as one space; lower-cased unless case-sensitive
    words: tuple[str, ...]  # words any match has whole in the text: a cheap test against the word map
    case_sensitive: bool
    before: bool  # no word character may precede a match
    after: bool  # no word character may follow a match


class _Regex:
    """A `/pattern/flags` key, matched with the engines of bounded_regex (anchors keep their meaning per text)."""

    __slots__ = ("_fallback", "_single", "empty", "folds", "key", "pattern", "translation")

    def __init__(self, key: str, pattern: re.Pattern[str]) -> None:
        self.key = key
        self.pattern = pattern
        self.translation = bounded_regex.translate(pattern.pattern, pattern.flags)
        self.folds = bool(pattern.flags & re.IGNORECASE)
        self._single: Any = None
        self._fallback: Any = None
        # In re, \B never matches in an empty text (in RE2 and regex it does): that text gets this variant.
        variant = bounded_regex.without_non_boundary(pattern.pattern)
        self.empty = None if variant is None else _Regex(key, re.compile(variant, pattern.flags))

    def single(self) -> Any:
        """RE2's compiled form of the key alone (built on first need: most keys are searched through sets),
        or None when RE2 refuses it."""
        if self._single is None:
            found = None if self.translation is None else bounded_regex.compile_re2(self.translation)
            self._single = found if found is not None else False
        return self._single or None

    def fallback(self) -> Any:
        """The time-limited engine's compiled form (built on first need), or None if it cannot take it."""
        if self._fallback is None:
            self._fallback = bounded_regex.compile_fallback(self.pattern.pattern, self.pattern.flags) or False
        return self._fallback or None

    def span(self, text: str) -> tuple[int, int] | None:
        """Where the key matches in one text, by RE2 when it answers as `re` would there, else by the
        time-limited engine (SPAN_BUDGET); None when neither says."""
        view = _TextView(text)
        translation = self.translation
        matcher = self.empty if not text and self.empty is not None else self
        if (
            translation is not None
            and view.data is not None
            and not (translation.word_boundary and not (view.folded_ascii if self.folds else view.is_ascii))
            and not (translation.end_anchor and view.newline_end)
        ):
            single = matcher.single()
            if single is not None:
                found = single.search(view.folded if self.folds else text)
                return None if found is None else (found.start(), found.end())
        compiled = matcher.fallback()
        return None if compiled is None else bounded_regex.span_with_budget(compiled, text, SPAN_BUDGET)


_Matcher = _Token | _Literal | _Regex | None  # None never matches


def spaceless(text: str) -> bool:
    """Whether the text has a script written without spaces (CJK, Thai...): no word boundary applies there."""
    return _HAS_NO_SPACE.search(text) is not None


def _normal(text: str, case_sensitive: bool) -> str:
    """Whitespace runs become one space, and the text is lower-cased unless case-sensitive."""
    text = " ".join(text.split())
    return text if case_sensitive else text.lower()


@functools.lru_cache(maxsize=4096)
def _literal_pattern(key: str, case_sensitive: bool) -> re.Pattern[str]:
    """A literal key as a `re` pattern that finds it in the text as written (whitespace runs and case as the
    scan treats them; the word rule is checked on each find, as _find does). Escaped text: linear, and
    quick to compile (a look-around over the word class takes some 40 ms to compile)."""
    body = r"\s+".join(re.escape(part) for part in key.split())
    return re.compile(body, 0 if case_sensitive else re.IGNORECASE)


def _literal_span(key: str, case_sensitive: bool, whole_words: bool, text: str) -> tuple[int, int] | None:
    normal = " ".join(key.split())
    before = whole_words and _IS_WORD_CHAR.match(normal[:1]) is not None
    after = whole_words and _IS_WORD_CHAR.match(normal[-1:]) is not None
    for found in _literal_pattern(normal, case_sensitive).finditer(text):
        start, end = found.span()
        if (before and start > 0 and _IS_WORD_CHAR.match(text, start - 1)) or (
            after and end < len(text) and _IS_WORD_CHAR.match(text, end)
        ):
            continue
        return start, end
    return None


def _literal_matcher(key: str, case_sensitive: bool, whole_words: bool) -> _Matcher:
    text = _normal(key, case_sensitive)
    if not text or "\x00" in text:
        return None
    if whole_words and _TOKEN.fullmatch(text):
        return _Token(text, case_sensitive)
    before = whole_words and _IS_WORD_CHAR.match(text[0]) is not None
    after = whole_words and _IS_WORD_CHAR.match(text[-1]) is not None
    # A word of the key is whole in the text when something other than a word character bounds it inside
    # the key, or the whole-word rule bounds it at an end of the key.
    words = tuple(
        found.group()
        for found in _TOKEN.finditer(text)
        if (found.start() > 0 or before) and (found.end() < len(text) or after)
    )
    return _Literal(text, words, case_sensitive, before, after)


@dataclass(frozen=True, slots=True)
class _Compiled:
    entry: LoreEntry
    depth: int
    keys: tuple[str, ...]  # the primary keys: entry.keys, then @@additional_keys
    primary: tuple[int, ...]  # matcher ids, parallel to keys
    secondary: tuple[int, ...]
    exclude: tuple[int, ...]  # @@exclude_keys: none of them may be there


@dataclass(frozen=True, slots=True)
class KeyHit:
    """Why an entry's keys fire: the first primary key found (its text: view 0 is the recent conversation,
    view 1 the content of entries already activated, for recursion; `distance` counts texts back from the
    newest), and the secondary key its logic names."""

    key: str
    secondary: str | None
    view: int
    distance: int


class Scan:
    """One window of texts looked at for a book: which entries' primary keys are there (`candidates`, positions
    in the scanner's compiled entries), and the distances found so far (filled lazily). A finished scan of one
    text keeps only the keys found there (`found`): what an entry's content, scanned once, is remembered by."""

    __slots__ = ("candidates", "distances", "found", "unbounded", "window")

    def __init__(
        self,
        window: _Window,
        distances: list[int],
        candidates: set[int],
        unbounded: bool,
        found: frozenset[int] | None = None,
    ) -> None:
        self.window = window
        self.distances = distances
        self.candidates = candidates
        self.unbounded = unbounded  # any text counts, whatever an entry's scan depth (recursion)
        self.found = found


class _Window:
    """One activate() call's view of the recent texts, newest first, with lazily built indexes."""

    __slots__ = (
        "_joined",
        "_normal",
        "_views",
        "_words",
        "fallback_spent",
        "first_set_hits",
        "key_spent",
        "oddities",
        "set_hits",
        "texts",
        "unbounded",
    )

    def __init__(self, texts: list[str], *, unbounded: bool = False) -> None:
        self.texts = texts  # newest first
        self.unbounded = unbounded  # a regex key searches every text, not only as deep as its entries scan
        self._normal: dict[bool, list[str]] = {}
        self._words: dict[bool, dict[str, int]] = {}
        self._joined: dict[bool, tuple[str, list[int]]] = {}
        self._views: dict[int, _TextView] = {}
        self.set_hits: dict[tuple[int, bool], set[int]] = {}  # (distance, folded) -> the RE2 keys matching
        self.key_spent: dict[int, float] = {}  # matcher id -> seconds of time-limited search in this scan
        self.fallback_spent = 0.0
        self.first_set_hits: dict[int, int] | None = None  # RE2 key -> the nearest text it matches
        self.oddities: _Oddities | None = None

    def view(self, distance: int) -> _TextView:
        found = self._views.get(distance)
        if found is None:
            found = self._views[distance] = _TextView(self.texts[distance])
        return found

    def normal(self, case_sensitive: bool) -> list[str]:
        found = self._normal.get(case_sensitive)
        if found is None:
            found = self._normal[case_sensitive] = [_normal(text, case_sensitive) for text in self.texts]
        return found

    def words(self, case_sensitive: bool) -> dict[str, int]:
        """Each word -> how many texts back it last appeared (0 = the newest text)."""
        found = self._words.get(case_sensitive)
        if found is None:
            found = {}
            texts = self.normal(case_sensitive)
            for distance in range(len(texts) - 1, -1, -1):  # oldest first, so newer distances win
                text = texts[distance]
                if text.isascii():
                    tokens = _ASCII_TOKEN.findall(text)
                elif _HAS_NO_SPACE.search(text) is None:
                    tokens = _UNICODE_TOKEN.findall(text)
                else:
                    tokens = _TOKEN.findall(text)
                found.update(dict.fromkeys(tokens, distance))
            self._words[case_sensitive] = found
        return found

    def joined(self, case_sensitive: bool) -> tuple[str, list[int]]:
        """The normalised texts joined by NUL (which no key contains), newest first, and where each starts."""
        cached = self._joined.get(case_sensitive)
        if cached is None:
            parts = self.normal(case_sensitive)
            starts: list[int] = []
            offset = 0
            for part in parts:
                starts.append(offset)
                offset += len(part) + 1
            cached = self._joined[case_sensitive] = ("\x00".join(parts), starts)
        return cached


def _find(matcher: _Literal, window: _Window) -> int:
    """How many texts back the literal key last appears, or _NEVER."""
    if matcher.words:
        seen = window.words(matcher.case_sensitive)
        if any(word not in seen for word in matcher.words):
            return _NEVER
    joined, starts = window.joined(matcher.case_sensitive)
    text = matcher.text
    start = joined.find(text)
    while start >= 0:
        end = start + len(text)
        if not (
            (matcher.before and start > 0 and _IS_WORD_CHAR.match(joined, start - 1))
            or (matcher.after and end < len(joined) and _IS_WORD_CHAR.match(joined, end))
        ):
            return bisect.bisect_right(starts, start) - 1
        start = joined.find(text, start + 1)
    return _NEVER


@dataclass(frozen=True, slots=True)
class _Oddities:
    """What in a window's texts makes some regex keys take them one by one (see LoreScanner._hit)."""

    non_ascii: bool
    newline_end: bool
    dotless: bool
    not_utf8: bool
    empty: bool

    @classmethod
    def of(cls, views: list[_TextView]) -> _Oddities:
        return cls(
            non_ascii=not all(v.is_ascii for v in views),
            newline_end=any(v.newline_end for v in views),
            dotless=any(v.folded is not v.text for v in views),
            not_utf8=any(v.data is None for v in views),
            empty=any(not v.text for v in views),
        )

    def affect(self, matcher: _Regex) -> bool:
        translation = matcher.translation
        assert translation is not None
        return (
            self.not_utf8
            or (translation.word_boundary and self.non_ascii)
            or (translation.end_anchor and self.newline_end)
            or (translation.folds and self.dotless)
            or (matcher.empty is not None and self.empty)
        )


class _TextView:
    """One scanned text as the regex engines take it: UTF-8, and folded for IGNORECASE keys (bounded_regex)."""

    __slots__ = ("data", "folded", "folded_ascii", "folded_data", "is_ascii", "newline_end", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.is_ascii = text.isascii()
        self.newline_end = text.endswith("\n")
        try:
            self.data: bytes | None = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8 only, so the time-limited engine searches
            self.data = None
        self.folded = bounded_regex.fold(text) if bounded_regex.has_dotless(text) else text
        self.folded_ascii = self.folded.isascii()
        self.folded_data = self.data if self.folded is text or self.data is None else self.folded.encode("utf-8")


class LoreScanner:
    """A book compiled for activation. Build it once per book (ScannerCache keys it on the digest)."""

    def __init__(self, book: Lorebook, on_disabled: Callable[[list[LoreProblem]], None] | None = None) -> None:
        self.book = book
        self._on_disabled = on_disabled
        self._disabled: dict[int, list[LoreProblem]] = {}  # matcher id -> what was reported when disabling it
        self._matchers: list[_Matcher] = []
        self._ids: dict[tuple[str, bool, bool], int] = {}
        self._limits: list[int] = []  # per matcher: the deepest scan of the entries using it
        compiled: list[_Compiled] = []
        constants: list[LoreEntry] = []
        # Disabled entries and those scanning no message (depth 0: only other entries' content, in recursion)
        # are compiled too: activation reports a disabled entry whose keys were there.
        for entry in book.entries:
            if entry.constant:
                if entry.enabled:
                    constants.append(entry)
                continue
            depth = self.depth_of(entry)
            keys = (*entry.keys, *entry.decorators.additional_keys)
            if not keys:
                continue
            cs = book.case_sensitive if entry.case_sensitive is None else entry.case_sensitive
            ww = book.whole_words if entry.whole_words is None else entry.whole_words
            primary = tuple(self._intern(key, cs, ww, depth) for key in keys)
            secondary = tuple(self._intern(key, cs, ww, depth) for key in entry.secondary_keys)
            exclude = tuple(self._intern(key, cs, ww, depth) for key in entry.decorators.exclude_keys)
            compiled.append(_Compiled(entry, depth, keys, primary, secondary, exclude))
        self._constants = tuple(constants)
        self._compiled = tuple(compiled)
        self._position = {item.entry.index: position for position, item in enumerate(compiled)}
        self._contents: OrderedDict[int, Scan] = OrderedDict()  # entry index -> its content, scanned (recursion)
        self._depth = max((c.depth for c in compiled), default=0)
        # Per scan, distances start from this template. Tokens, broken keys and literals with whole words are
        # settled through the window's words (a literal is looked for only when its longest word is there);
        # the rest (regexes, literals without a whole word) are searched on every scan.
        self._template: list[int] = []
        self._index: dict[bool, dict[str, list[int]]] = {True: {}, False: {}}
        for number, matcher in enumerate(self._matchers):
            if isinstance(matcher, _Token):
                self._index[matcher.case_sensitive].setdefault(matcher.word, []).append(number)
            elif isinstance(matcher, _Literal) and matcher.words:
                longest = max(matcher.words, key=len)
                self._index[matcher.case_sensitive].setdefault(longest, []).append(number)
            searched = isinstance(matcher, _Regex) or (isinstance(matcher, _Literal) and not matcher.words)
            self._template.append(_UNKNOWN if searched else _NEVER)
        self._users: dict[int, list[int]] = {}  # primary matcher id -> the compiled entries it can fire
        for position, item in enumerate(compiled):
            for matcher_id in dict.fromkeys(item.primary):
                self._users.setdefault(matcher_id, []).append(position)
        searched_primaries = [m for m in sorted(self._users) if self._template[m] == _UNKNOWN]
        # Plain substrings (no word rule at either end): the first str.find in the joined window settles them.
        self._substrings: dict[bool, list[tuple[int, str]]] = {True: [], False: []}
        self._searched: list[int] = []
        for matcher_id in searched_primaries:
            matcher = self._matchers[matcher_id]
            if isinstance(matcher, _Literal) and not (matcher.before or matcher.after):
                self._substrings[matcher.case_sensitive].append((matcher_id, matcher.text))
            else:
                self._searched.append(matcher_id)
        regexes = [(number, m) for number, m in enumerate(self._matchers) if isinstance(m, _Regex)]
        self._sets = bounded_regex.SetGroup([(n, m.translation.pattern) for n, m in regexes if m.translation])
        self._in_sets = {n for n, m in regexes if m.translation} - set(self._sets.left_out)
        self._regex_depth = max((self._limits[n] for n, _ in regexes), default=0)

    def depth_of(self, entry: LoreEntry) -> int:
        """How many recent texts the entry's keys look at."""
        if entry.scan_depth is not None:
            return entry.scan_depth
        if entry.decorators.scan_depth is not None:
            return entry.decorators.scan_depth
        return self.book.scan_depth

    @property
    def disabled(self) -> tuple[LoreProblem, ...]:
        """The regex keys switched off for running over their time limit, once per entry using them."""
        return tuple(problem for problems in self._disabled.values() for problem in problems)

    def _intern(self, key: str, case_sensitive: bool, whole_words: bool, depth: int) -> int:
        regex = compile_regex_key(key)
        if regex is not None:  # a regex (or a broken one) ignores the case and word settings
            case_sensitive, whole_words = True, False
        ident = (key.strip(), case_sensitive, whole_words)
        number = self._ids.get(ident)
        if number is not None:
            self._limits[number] = max(self._limits[number], depth)
            return number
        number = len(self._matchers)
        self._ids[ident] = number
        if isinstance(regex, re.Pattern):
            self._matchers.append(_Regex(key.strip(), regex))
        elif regex is not None or key_problem(key) is not None:
            self._matchers.append(None)
        else:
            self._matchers.append(_literal_matcher(key, case_sensitive, whole_words))
        self._limits.append(depth)
        return number

    def activate(self, recent: Sequence[str]) -> list[LoreMatch]:
        """The entries whose keys fire for these recent texts (oldest first), and the enabled constant ones,
        highest priority first, then file order. Keys only: activation.py adds what else decides."""
        matches = [LoreMatch(entry, CONSTANT_KEY, None) for entry in self._constants]
        chat = self.scan(recent)
        for position in chat.candidates:
            item = self._compiled[position]
            if not item.entry.enabled:
                continue
            hit = self.hit(position, (chat,))
            if hit is not None:
                matches.append(LoreMatch(item.entry, hit.key, hit.secondary))
        matches.sort(key=lambda m: (-m.entry.priority, m.entry.index))
        return matches

    @property
    def constants(self) -> tuple[LoreEntry, ...]:
        """The enabled constant entries (always activated: keys are not looked for)."""
        return self._constants

    def entry_at(self, position: int) -> LoreEntry:
        return self._compiled[position].entry

    def scan(self, recent: Sequence[str], *, unbounded: bool = False) -> Scan:
        """Look at these texts (oldest first): which compiled entries have a primary key there.

        Bounded (the recent conversation): only the last texts as deep as the deepest entry scans, and each
        entry's keys only as deep as it scans. Unbounded (activated entries' content, for recursion): all."""
        distances = self._template.copy()
        candidates: set[int] = set()
        if not self._compiled or not recent or not (self._depth or unbounded):
            return Scan(_Window([], unbounded=unbounded), distances, candidates, unbounded)
        kept = recent if unbounded else recent[-self._depth :]
        window = _Window([text[:MAX_TEXT_CHARS] for text in reversed(kept)], unbounded=unbounded)
        users = self._users
        matchers = self._matchers
        for case_sensitive, index in self._index.items():
            if not index:
                continue
            for word, distance in window.words(case_sensitive).items():
                for matcher_id in index.get(word, ()):
                    matcher = matchers[matcher_id]
                    found = _find(matcher, window) if isinstance(matcher, _Literal) else distance
                    distances[matcher_id] = found
                    if found != _NEVER and matcher_id in users:
                        candidates.update(users[matcher_id])
        for case_sensitive, substrings in self._substrings.items():
            if not substrings:
                continue
            joined, starts = window.joined(case_sensitive)
            find = joined.find
            for matcher_id, text in substrings:
                at = find(text)
                if at < 0:
                    distances[matcher_id] = _NEVER
                else:
                    distances[matcher_id] = bisect.bisect_right(starts, at) - 1
                    candidates.update(users[matcher_id])
        for matcher_id in self._searched:
            if self._distance(matcher_id, distances, window) != _NEVER:
                candidates.update(users[matcher_id])
        return Scan(window, distances, candidates, unbounded)

    def _distance(self, matcher_id: int, distances: list[int], window: _Window) -> int:
        found = distances[matcher_id]
        if found != _UNKNOWN:
            return found
        matcher = self._matchers[matcher_id]
        found = _NEVER
        if isinstance(matcher, _Literal):
            found = _find(matcher, window)
        elif isinstance(matcher, _Regex):
            found = self._search(matcher_id, matcher, window)
        distances[matcher_id] = found
        return found

    # -- regex keys (bounded_regex.py) --------------------------------------------------------------------
    def _search(self, matcher_id: int, matcher: _Regex, window: _Window) -> int:
        """How many texts back the regex key last matches (no deeper than its entries scan), or _NEVER."""
        limit = len(window.texts) if window.unbounded else min(self._limits[matcher_id], len(window.texts))
        if matcher_id in self._in_sets and not self._oddities(window).affect(matcher):
            found = self._first_set_hits(window).get(matcher_id, _NEVER)  # the usual case: one lookup
            return found if found < limit else _NEVER
        for distance in range(limit):
            if matcher_id in self._disabled:
                return _NEVER
            if self._hit(matcher_id, matcher, window, distance):
                return distance
        return _NEVER

    def _hit(self, matcher_id: int, matcher: _Regex, window: _Window, distance: int) -> bool:
        view = window.view(distance)
        if not view.text and matcher.empty is not None:
            matcher = matcher.empty
        translation = matcher.translation
        if translation is not None and view.data is not None:
            folded = translation.folds and view.folded is not view.text
            if not (
                (translation.word_boundary and not (view.folded_ascii if folded else view.is_ascii))
                or (translation.end_anchor and view.newline_end)
            ):
                if matcher_id in self._in_sets and matcher is self._matchers[matcher_id]:
                    return matcher_id in self._set_hits(window, distance, folded)
                single = matcher.single()
                if single is not None:
                    return single.search(view.folded_data if folded else view.data) is not None
        return self._bounded_hit(matcher_id, matcher, window, view)

    def _oddities(self, window: _Window) -> _Oddities:
        if window.oddities is None:
            depth = len(window.texts) if window.unbounded else min(self._regex_depth, len(window.texts))
            window.oddities = _Oddities.of([window.view(d) for d in range(depth)])
        return window.oddities

    def _first_set_hits(self, window: _Window) -> dict[int, int]:
        """Each RE2 key that matches a text of the window -> the nearest such text (one pass per text)."""
        if window.first_set_hits is None:
            first: dict[int, int] = {}
            depth = len(window.texts) if window.unbounded else min(self._regex_depth, len(window.texts))
            for distance in range(depth):
                for matcher_id in self._set_hits(window, distance, False):
                    first.setdefault(matcher_id, distance)
            window.first_set_hits = first
        return window.first_set_hits

    def _set_hits(self, window: _Window, distance: int, folded: bool) -> set[int]:
        hits = window.set_hits.get((distance, folded))
        if hits is None:
            view = window.view(distance)
            data = view.folded_data if folded else view.data
            hits = window.set_hits[(distance, folded)] = set(self._sets.match(data)) if data is not None else set()
        return hits

    def _bounded_hit(self, matcher_id: int, matcher: _Regex, window: _Window, view: _TextView) -> bool:
        """Search with the time-limited engine; a key over its budget is disabled, the scan goes on."""
        compiled = matcher.fallback()
        if compiled is None:
            self._disable(matcher_id, "the time-limited regex engine cannot run it")
            return False
        key_left = bounded_regex.KEY_BUDGET - window.key_spent.get(matcher_id, 0.0)
        scan_left = bounded_regex.SCAN_BUDGET - window.fallback_spent
        if scan_left <= 0:
            return False  # this scan spent its time on other keys; this one is searched again next time
        text = view.folded if matcher.folds else view.text
        found, took = bounded_regex.search_with_budget(compiled, text, min(key_left, scan_left))
        window.key_spent[matcher_id] = window.key_spent.get(matcher_id, 0.0) + took
        window.fallback_spent += took
        if found is None and key_left <= scan_left:
            limit = round(bounded_regex.KEY_BUDGET * 1000)
            self._disable(matcher_id, f"ran over its time limit ({limit} ms) on one message; it is off")
        elif found is None:
            _log.warning("lorebook: regex key %s not searched to the end: the scan ran out of time", matcher.key)
        return bool(found)

    def _disable(self, matcher_id: int, reason: str) -> None:
        key = self._matchers[matcher_id]
        assert isinstance(key, _Regex)
        problems = [
            LoreProblem(item.entry.index, item.entry.title, key.key, reason)
            for item in self._compiled
            if matcher_id in item.primary or matcher_id in item.secondary
        ]
        self._disabled[matcher_id] = problems
        for problem in problems:
            _log.warning("%s", describe_disabled(problem))
        if self._on_disabled is not None and problems:
            self._on_disabled(problems)

    # -- one entry's keys -------------------------------------------------------------------------------------
    def _found(self, matcher_id: int, depth: int, scans: Sequence[Scan]) -> tuple[int, int] | None:
        """(view, distance) of the first view where the key is, within the entry's depth where that applies."""
        for view, scan in enumerate(scans):
            if scan.found is not None:
                if matcher_id in scan.found:
                    return view, 0
                continue
            distance = self._distance(matcher_id, scan.distances, scan.window)
            if distance < (_NEVER if scan.unbounded else depth):
                return view, distance
        return None

    def hit(self, position: int, scans: Sequence[Scan]) -> KeyHit | None:
        """Whether the compiled entry at `position` fires on its keys in these views: its first primary key
        found, then its secondary logic, then no @@exclude_keys there."""
        item = self._compiled[position]
        depth = item.depth
        fired = None
        for key, matcher_id in zip(item.keys, item.primary, strict=True):
            found = self._found(matcher_id, depth, scans)
            if found is not None:
                fired = (key, found)
                break
        if fired is None:
            return None
        key, (view, distance) = fired
        if any(self._found(m, depth, scans) is not None for m in item.exclude):
            return None
        if not item.secondary:
            return KeyHit(key, None, view, distance)
        entry = item.entry
        present = [self._found(m, depth, scans) is not None for m in item.secondary]
        secondary: str | None = None
        if entry.logic == "and_any":
            if not any(present):
                return None
            secondary = entry.secondary_keys[present.index(True)]
        elif entry.logic == "and_all":
            if not all(present):
                return None
            secondary = entry.secondary_keys[0]
        elif entry.logic == "not_any":
            if any(present):
                return None
        elif all(present):
            return None
        else:
            secondary = entry.secondary_keys[present.index(False)]
        return KeyHit(key, secondary, view, distance)

    def score(self, position: int, scans: Sequence[Scan]) -> int:
        """Group scoring: how many of the entry's keys are there (primary, and secondary under and_any/and_all)."""
        item = self._compiled[position]
        found = sum(self._found(m, item.depth, scans) is not None for m in dict.fromkeys(item.primary))
        if item.entry.logic in ("and_any", "and_all"):
            found += sum(self._found(m, item.depth, scans) is not None for m in dict.fromkeys(item.secondary))
        return found

    def content_scan(self, index: int) -> Scan:
        """The content of entry `index` scanned for every key, as one text of a recursion step: done once per
        entry and kept (the few hundred entries a place keeps activating cost their scan once)."""
        found = self._contents.get(index)
        if found is not None:
            self._contents.move_to_end(index)
            return found
        scan = self.scan([self.book.entries[index].content], unbounded=True)
        distances = scan.distances
        for matcher_id, distance in enumerate(distances):
            if distance == _UNKNOWN:
                self._distance(matcher_id, distances, scan.window)
        keys = frozenset(matcher_id for matcher_id, distance in enumerate(distances) if distance == 0)
        found = Scan(_Window([], unbounded=True), [], scan.candidates, True, keys)
        self._contents[index] = found
        while len(self._contents) > CONTENT_SCANS:
            self._contents.popitem(last=False)
        return found

    def conditional(self, position: int) -> bool:
        """Whether the entry has keys that can stop it (secondary keys, @@exclude_keys) besides its own."""
        item = self._compiled[position]
        return bool(item.secondary or item.exclude)

    def position_of(self, entry: LoreEntry) -> int | None:
        """The compiled position of an entry with keys (None: a constant entry, or one without keys)."""
        return self._position.get(entry.index)

    def span(self, key: str, entry: LoreEntry, text: str) -> tuple[int, int] | None:
        """Where in `text` the key matches (start, end), as the scan found it; None if that cannot be said
        within a short time (a regex key only the time-limited engine takes, on a hostile text)."""
        text = text[:MAX_TEXT_CHARS]
        regex = compile_regex_key(key)
        if isinstance(regex, re.Pattern):
            number = self._ids.get((key.strip(), True, False))
            matcher = self._matchers[number] if number is not None else None
            return (matcher if isinstance(matcher, _Regex) else _Regex(key.strip(), regex)).span(text)
        if regex is not None:
            return None
        cs = self.book.case_sensitive if entry.case_sensitive is None else entry.case_sensitive
        ww = self.book.whole_words if entry.whole_words is None else entry.whole_words
        return _literal_span(key, cs, ww, text)


def describe_disabled(problem: LoreProblem) -> str:
    """One line naming a disabled key and its entry (1-based, as a person counts the entries of the file)."""
    title = f' "{problem.title}"' if problem.title else ""
    return (
        f"lorebook.toml entry {problem.index + 1}{title}: the regex key {problem.key} {problem.message} "
        "until lorebook.toml changes"
    )


class ScannerCache:
    """The compiled scanners of the last few books, keyed on the file digest (the context layer owns one).

    A scanner keeps the keys it disabled, so they stay off until the file changes.
    """

    def __init__(self, size: int = 4, on_disabled: Callable[[list[LoreProblem]], None] | None = None) -> None:
        self._size = size
        self._on_disabled = on_disabled
        self._scanners: OrderedDict[str, LoreScanner] = OrderedDict()
        self._lock = threading.Lock()  # scanners are built on one thread and looked at from another

    def scanner(self, book: Lorebook) -> LoreScanner:
        with self._lock:
            scanner = self._scanners.get(book.digest)
            if scanner is not None:
                self._scanners.move_to_end(book.digest)
                return scanner
        scanner = LoreScanner(book, self._on_disabled)  # compiling takes a while: not under the lock
        with self._lock:
            self._scanners[book.digest] = scanner
            while len(self._scanners) > self._size:
                self._scanners.popitem(last=False)
        return scanner

    def built(self, book: Lorebook) -> LoreScanner | None:
        """The book's scanner if it is built already (never builds one)."""
        with self._lock:
            return self._scanners.get(book.digest)


__all__ = [
    "CONSTANT_KEY",
    "MAX_TEXT_CHARS",
    "KeyHit",
    "LoreMatch",
    "LoreScanner",
    "Scan",
    "ScannerCache",
    "describe_disabled",
    "spaceless",
]
