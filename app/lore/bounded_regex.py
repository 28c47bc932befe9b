"""Regex keys of the lorebook, matched in bounded time whatever the pattern.

A lorebook comes from anywhere (a World Info file off the internet, a character card), and Python's `re`
backtracks: `/(a|a)*$/` against a message of thirty "a" and a "!" runs for minutes, holding the GIL, so
nothing else in the process (replies, signals) runs meanwhile. Measured on the project's machine
(2 cores, Python 3.11), for that pattern and n = 20 "a": `re` 190 ms and doubling with each extra "a";
RE2 0.02-0.2 ms for any n; the `regex` module 500 ms when cut by its timeout.

So a key is matched by one of two engines, chosen per key and per text:

- RE2 (google-re2), linear in the text for every pattern it can express. A pattern written for `re`
  is translated to RE2 syntax (`translate`) so that its results stay those of `re`: `\\w`, `\\d`, `\\s`
  become the exact character sets `re` uses (picked out of all of Unicode by the running `re` itself,
  since RE2's own are ASCII-only), `$` keeps its meaning, `{,n}` and `\\Z` are spelled RE2's way, and
  in an empty text `\\B` fails as in `re`. Under IGNORECASE the two engines agree on every character
  but the Turkish i's (checked over all of Unicode): `re` makes `i`, `I`, `ı` and `İ` one class, RE2
  keeps `ı` and `İ` apart, so those two are read as `i` in both the text and the pattern. All the RE2
  keys of a book go into RE2 sets, which say in one pass over a text which keys match it: a scan costs
  one pass per recent text, not one per key.
- The `regex` module, with a time limit, for what RE2 cannot express (look-arounds, back-references,
  atomic groups, possessive quantifiers, scoped flags, `(?a)`), and for the texts on which an RE2
  translation would answer differently: `\\b` is ASCII-only in RE2, so a key using it goes to `regex` for
  a text with other characters; `$` outside MULTILINE also matches before a final newline in `re`, so a
  text ending in one does too; a text RE2 cannot take (a lone surrogate) too. `regex` follows `re`'s
  syntax and results (version 0), apart from `ı` against `i` under IGNORECASE in such a pattern.
  The time limit is `KEY_BUDGET` of searching per key and per scan: a key that exceeds it is disabled
  (the scanner reports it with its entry); and a scan spends at most `SCAN_BUDGET` in `regex` in all,
  after which the remaining fallback searches of that scan count as no match.

Costs, measured: 500 entries over 20 turns scan in about the time they did with `re` (bench_lorebook);
compiling is dearer: 0.5 to 2 ms per regex key using `\\w` (its set has some 700 ranges), once per
change of the file (a book of 2,000 such keys: about 1 s).

A key just under its limit still costs up to `SCAN_BUDGET` a scan, so the reply path runs its scans on a
thread of their own (app/runtime/context/lore_layer.py), and the `regex` engine searches with
`concurrent=True`: it lets go of the GIL while it searches, and the event loop goes on meanwhile (RE2 is
linear: its passes are short).

Rejected: `regex` for every key (each search of a slow pattern costs its whole budget until it is
disabled, and a busy machine could disable a sound key); searching with `re` in a thread with a deadline
(`re` holds the GIL while it runs, so the thread cannot be abandoned and the loop starves anyway); a
subprocess per search (milliseconds per scan).
"""

from __future__ import annotations

import array
import functools
import logging
import re
import sys
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# re2 and regex are imported where a key is compiled: a familiar whose lore has no regex key, and every
# command that reads no lore, never loads them (9 ms of a command's start).

_log = logging.getLogger(__name__)

KEY_BUDGET = 0.1  # seconds of `regex` searching one key may take in one scan before it is disabled
SCAN_BUDGET = 0.5  # seconds of `regex` searching one scan may spend in all
RE2_MAX_REPEAT = 1000  # RE2 refuses counted repetitions above this
SET_SIZE = 32  # patterns per RE2 set

IGNORECASE, MULTILINE, DOTALL, VERBOSE = re.IGNORECASE, re.MULTILINE, re.DOTALL, re.VERBOSE
_DOTLESS = {0x130: "i", 0x131: "i"}  # İ and ı: one class with i and I under re's IGNORECASE, not RE2's
_VERBOSE_SPACE = " \t\n\r\v\f"
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"
_SIMPLE_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_MAX_CODE = 0x10FFFF


class _UntranslatableError(Exception):
    """The pattern uses something RE2 cannot say with re's meaning."""


@dataclass(frozen=True, slots=True)
class Translation:
    """A `re` pattern in RE2 syntax, and the texts on which RE2's answer is not `re`'s."""

    pattern: str
    word_boundary: bool  # \b or \B: right on ASCII texts only
    end_anchor: bool  # $ outside MULTILINE: right on texts that do not end with a newline
    folds: bool  # IGNORECASE: search the text with İ and ı read as i


# -- character sets of re, for RE2 -----------------------------------------------------------------------
@functools.cache
def _every_character() -> str:
    """Every code point but the surrogates, in order (built in ~50 ms, once)."""
    codes = array.array("I", range(0xD800))
    codes.extend(range(0xE000, _MAX_CODE + 1))
    return codes.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")


def _code_at(index: int) -> int:
    return index if index < 0xD800 else index + 0x800


@functools.cache
def _category(letter: str) -> str:
    """The body of an RE2 character class equal to re's own \\w, \\W, \\d, \\D, \\s or \\S.

    Found by letting `re` itself pick the characters out of all of Unicode, once per process.
    """
    ranges: list[tuple[int, int]] = []
    for found in re.finditer(f"\\{letter}+", _every_character()):
        low, high = _code_at(found.start()), _code_at(found.end() - 1)
        if low < 0xD800 < high:  # a run across the surrogates, which are not in the string
            ranges += [(low, 0xD7FF), (0xE000, high)]
        else:
            ranges.append((low, high))
    return _class_body(ranges)


def _class_body(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in ranges)


def _char(code: int) -> str:
    """One character as an RE2 atom that means only itself."""
    char = chr(code)
    return char if char.isascii() and char.isalnum() else f"\\x{{{code:x}}}"


# -- the translation -------------------------------------------------------------------------------------
def translate(pattern: str, flags: int) -> Translation | None:
    """`pattern` (already accepted by `re.compile(pattern, flags)`) in RE2 syntax, or None if RE2 cannot
    express it with `re`'s meaning."""
    try:
        return _Translator(pattern, flags).run()
    except _UntranslatableError:
        return None


class _Translator:
    def __init__(self, pattern: str, flags: int) -> None:
        self.p = pattern
        self.pos = 0
        self.flags = flags
        self.word_boundary = False
        self.end_anchor = False

    @property
    def ignore_case(self) -> bool:
        return bool(self.flags & IGNORECASE)

    def run(self) -> Translation:
        self._global_flags()
        body = self._alternation(0)
        if self.pos != len(self.p):
            raise _UntranslatableError  # an unbalanced ")": re refuses it too
        prefix = "".join(
            letter for flag, letter in ((IGNORECASE, "i"), (MULTILINE, "m"), (DOTALL, "s")) if self.flags & flag
        )
        return Translation(
            pattern=(f"(?{prefix})" if prefix else "") + body,
            word_boundary=self.word_boundary,
            end_anchor=self.end_anchor,
            folds=self.ignore_case,
        )

    def _global_flags(self) -> None:
        """Flags written `(?imsx)` at the start of the pattern apply to all of it."""
        while True:
            self._skip()
            end = self.p.find(")", self.pos)
            if not self.p.startswith("(?", self.pos) or end < 0:
                return
            letters = self.p[self.pos + 2 : end]
            if not letters or any(letter not in "imsxu" for letter in letters):
                return  # another kind of group (or flags RE2 has no equivalent for: a, L)
            for letter in letters:
                self.flags |= {"i": IGNORECASE, "m": MULTILINE, "s": DOTALL, "x": VERBOSE, "u": 0}[letter]
            self.pos = end + 1

    def _skip(self) -> None:
        """Past what re ignores between items: (?#comments), and in VERBOSE mode whitespace and # comments."""
        while self.pos < len(self.p):
            char = self.p[self.pos]
            if self.flags & VERBOSE and char in _VERBOSE_SPACE:
                self.pos += 1
            elif self.flags & VERBOSE and char == "#":
                end = self.p.find("\n", self.pos)
                self.pos = len(self.p) if end < 0 else end + 1
            elif self.p.startswith("(?#", self.pos):
                end = self.p.find(")", self.pos)
                if end < 0:
                    raise _UntranslatableError
                self.pos = end + 1
            else:
                return

    def _alternation(self, depth: int) -> str:
        if depth > 100:
            raise _UntranslatableError
        branches = [self._sequence(depth)]
        while self.pos < len(self.p) and self.p[self.pos] == "|":
            self.pos += 1
            branches.append(self._sequence(depth))
        return "|".join(branches)

    def _sequence(self, depth: int) -> str:
        out: list[str] = []
        while True:
            self._skip()
            if self.pos >= len(self.p) or self.p[self.pos] in "|)":
                return "".join(out)
            atom, repeatable = self._atom(depth)
            self._skip()
            if repeatable:
                atom += self._quantifier()
            elif self.pos < len(self.p) and self.p[self.pos] in "*+?":
                raise _UntranslatableError  # re refuses this too ("nothing to repeat")
            out.append(atom)

    def _atom(self, depth: int) -> tuple[str, bool]:
        char = self.p[self.pos]
        self.pos += 1
        if char == "\\":
            return self._escape()
        if char == "[":
            return self._class(), True
        if char == "(":
            return self._group(depth), True
        if char == ".":
            return ".", True
        if char == "^":
            return "^", False
        if char == "$":
            if self.flags & MULTILINE:
                return "$", False
            self.end_anchor = True
            return "\\z", False
        if char in "*+?":
            raise _UntranslatableError  # a repeat with nothing before it: refused by re
        return self._literal(ord(char)), True

    def _literal(self, code: int) -> str:
        if self.ignore_case and code in _DOTLESS:
            return "i"
        return _char(code)

    def _quantifier(self) -> str:
        if self.pos >= len(self.p):
            return ""
        char = self.p[self.pos]
        if char in "*+?":
            self.pos += 1
            quantifier = char
        elif char == "{":
            quantifier = self._braces()
            if not quantifier:
                return ""
        else:
            return ""
        if self.pos < len(self.p) and self.p[self.pos] == "?":
            self.pos += 1
            quantifier += "?"
        elif self.pos < len(self.p) and self.p[self.pos] == "+":
            raise _UntranslatableError  # possessive
        return quantifier

    def _braces(self) -> str:
        """A {m,n} repeat as re reads it, in RE2's spelling; "" when the brace is a literal."""
        at = self.pos + 1
        low = high = ""
        while at < len(self.p) and self.p[at].isascii() and self.p[at].isdigit():
            low += self.p[at]
            at += 1
        comma = at < len(self.p) and self.p[at] == ","
        if comma:
            at += 1
            while at < len(self.p) and self.p[at].isascii() and self.p[at].isdigit():
                high += self.p[at]
                at += 1
        else:
            high = low
        if at >= len(self.p) or self.p[at] != "}" or (not low and not comma):
            return ""  # re reads the { as a literal, and so will the caller
        self.pos = at + 1
        minimum = int(low) if low else 0
        if minimum > RE2_MAX_REPEAT or (high and int(high) > RE2_MAX_REPEAT):
            raise _UntranslatableError
        return f"{{{minimum},{high}}}" if comma else f"{{{minimum}}}"

    def _escape(self) -> tuple[str, bool]:
        if self.pos >= len(self.p):
            raise _UntranslatableError
        char = self.p[self.pos]
        self.pos += 1
        if char in "bB":
            self.word_boundary = True
            return f"\\{char}", False
        if char == "A":
            return "\\A", False
        if char == "Z":
            return "\\z", False
        if char in "wWdDsS":
            return f"[{_category(char)}]", True
        return self._literal(self._escaped_code(char)), True

    def _escaped_code(self, char: str, in_class: bool = False) -> int:
        """The character an escape stands for, as re reads it (char is what follows the backslash)."""
        if char in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[char]
        if char in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[char]
            digits = self.p[self.pos : self.pos + width]
            if len(digits) != width or any(d not in _HEX for d in digits):
                raise _UntranslatableError
            self.pos += width
            code = int(digits, 16)
            if code > _MAX_CODE or 0xD800 <= code <= 0xDFFF:
                raise _UntranslatableError
            return code
        if char == "N":
            end = self.p.find("}", self.pos)
            if not self.p.startswith("{", self.pos) or end < 0:
                raise _UntranslatableError
            try:
                named = unicodedata.lookup(self.p[self.pos + 1 : end])
            except KeyError:
                raise _UntranslatableError from None
            self.pos = end + 1
            return ord(named)
        if char in _OCTAL and (in_class or char == "0"):  # \0, \01, \012; in a set also \7, \12, \123
            digits = char
            while len(digits) < 3 and self.p[self.pos : self.pos + 1] in tuple(_OCTAL):
                digits += self.p[self.pos]
                self.pos += 1
            return int(digits, 8)
        three = char + self.p[self.pos : self.pos + 2]
        if len(three) == 3 and all(digit in _OCTAL for digit in three):  # \123 outside a set; \12 is a group
            self.pos += 2
            return int(three, 8)
        if char.isascii() and char.isalnum():
            raise _UntranslatableError  # a back-reference (\1) or an escape re refuses
        return ord(char)  # an escaped punctuation mark or other character: itself

    def _class(self) -> str:
        """A [...] set: its items become code points and ranges RE2 reads the same way."""
        negate = self.p.startswith("^", self.pos)
        if negate:
            self.pos += 1
        items: list[str] = []
        codes: list[tuple[int, int]] = []
        first = True
        while True:
            if self.pos >= len(self.p):
                raise _UntranslatableError
            char = self.p[self.pos]
            if char == "]" and not first:
                self.pos += 1
                break
            first = False
            self.pos += 1
            if char == "\\":
                if self.pos >= len(self.p):
                    raise _UntranslatableError
                letter = self.p[self.pos]
                if letter in "wWdDsS":
                    self.pos += 1
                    items.append(_category(letter))
                    continue
                self.pos += 1
                low = 8 if letter == "b" else self._escaped_code(letter, in_class=True)
            else:
                low = ord(char)
            high = low
            if self.p.startswith("-", self.pos) and self.pos + 1 < len(self.p) and self.p[self.pos + 1] != "]":
                self.pos += 1
                end_char = self.p[self.pos]
                self.pos += 1
                if end_char == "\\":
                    if self.pos >= len(self.p):
                        raise _UntranslatableError
                    letter = self.p[self.pos]
                    self.pos += 1
                    if letter in "wWdDsS":
                        raise _UntranslatableError  # re refuses a range ending in a class
                    high = 8 if letter == "b" else self._escaped_code(letter, in_class=True)
                else:
                    high = ord(end_char)
                if high < low:
                    raise _UntranslatableError
            codes.append((low, high))
        if self.ignore_case and any(low <= 0x131 and high >= 0x130 for low, high in codes):
            codes.append((ord("i"), ord("i")))  # re's İ and ı are i: the text holds i where they were
        body = "".join(items) + _class_body(_without_surrogates(codes))
        if not body:
            # Only surrogates: nothing RE2 can match. [^...] of them matches any character.
            return "[\\x{0}-\\x{10ffff}]" if negate else "[^\\x{0}-\\x{10ffff}]"
        return f"[{'^' if negate else ''}{body}]"

    def _group(self, depth: int) -> str:
        if not self.p.startswith("?", self.pos):
            inner = self._alternation(depth + 1)
            return self._close(f"(?:{inner})")
        rest = self.p[self.pos + 1 :]
        if rest.startswith(":"):
            self.pos += 2
        elif rest.startswith("P<"):
            end = self.p.find(">", self.pos)
            if end < 0:
                raise _UntranslatableError
            self.pos = end + 1  # a named group: the name does not change what matches
        else:
            raise _UntranslatableError  # look-arounds, back-references, atomic groups, conditions, scoped flags
        return self._close(f"(?:{self._alternation(depth + 1)})")

    def _close(self, group: str) -> str:
        if not self.p.startswith(")", self.pos):
            raise _UntranslatableError
        self.pos += 1
        return group


def _without_surrogates(codes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for low, high in codes:
        if high < 0xD800 or low > 0xDFFF:
            out.append((low, high))
            continue
        if low < 0xD800:
            out.append((low, 0xD7FF))
        if high > 0xDFFF:
            out.append((0xE000, high))
    return out


# -- matching --------------------------------------------------------------------------------------------
_NON_BOUNDARY = re.compile(r"(?<!\\)((?:\\\\)*)\\B")


def without_non_boundary(pattern: str) -> str | None:
    """The pattern with each \\B made a set that matches nothing, or None when it has no \\B.

    re's \\B never matches in an empty text, where RE2 and regex find a match; for that text, this
    variant answers as re does.
    """
    changed = _NON_BOUNDARY.sub(r"\1[^\\s\\S]", pattern)
    return None if changed == pattern else changed


def fold(text: str) -> str:
    """The text as an IGNORECASE key searches it: İ and ı read as i (see the module docstring)."""
    return text.translate(_DOTLESS)


def has_dotless(text: str) -> bool:
    return "\u0130" in text or "\u0131" in text


def compile_re2(translation: Translation) -> Any | None:
    """RE2's compiled form of a translation, or None when RE2 refuses it (a program too large)."""
    import re2

    try:
        return re2.compile(translation.pattern)
    except re2.error:
        return None


def compile_fallback(pattern: str, flags: int) -> Any | None:
    """The `regex` module's compiled form of a `re` pattern (version 0: re's behaviour), or None."""
    import regex

    regex_flags = regex.VERSION0
    for ours, theirs in ((IGNORECASE, regex.I), (MULTILINE, regex.M), (DOTALL, regex.S), (VERBOSE, regex.X)):
        if flags & ours:
            regex_flags |= theirs
    try:
        return regex.compile(pattern, regex_flags)
    except (regex.error, ValueError, OverflowError, RecursionError):
        return None


class SetGroup:
    """RE2 sets holding many translations: which of them match a text, in one pass per set.

    Sets hold up to SET_SIZE patterns (a set's compile time grows faster than its size). RE2 refuses a set
    whose program outgrows its memory limit, or holding a pattern it refuses alone; such a set is split in
    two until it builds, and a pattern in no set is left out (`left_out`) for the caller to search alone.
    """

    def __init__(self, patterns: list[tuple[int, str]]) -> None:
        self._sets: list[tuple[Any, list[int]]] = []
        self.left_out: list[int] = []
        for start in range(0, len(patterns), SET_SIZE):
            self._build(patterns[start : start + SET_SIZE])

    def _build(self, patterns: list[tuple[int, str]]) -> None:
        if not patterns:
            return
        built = _set_of([p for _, p in patterns])
        if built is not None:
            self._sets.append((built, [ident for ident, _ in patterns]))
        elif len(patterns) == 1:
            self.left_out.append(patterns[0][0])
        else:
            half = len(patterns) // 2
            self._build(patterns[:half])
            self._build(patterns[half:])

    def __bool__(self) -> bool:
        return bool(self._sets)

    def match(self, data: bytes) -> list[int]:
        """The ids of the patterns that match somewhere in `data` (UTF-8)."""
        found: list[int] = []
        for compiled, ids in self._sets:
            hits = compiled.Match(data)
            if hits:
                found.extend(ids[hit] for hit in hits)
        return found


def _set_of(patterns: list[str]) -> Any | None:
    import re2

    chunk = re2.Set.SearchSet(re2.Options())
    try:
        for pattern in patterns:
            chunk.Add(pattern)
        chunk.Compile()
    except re2.error:
        return None
    return chunk


def search_with_budget(compiled: Any, text: str, budget: float) -> tuple[bool | None, float]:
    """Search with the `regex` engine for at most `budget` seconds: (found, or None when cut off; seconds)."""
    started = time.perf_counter()
    try:
        found: bool | None = compiled.search(text, timeout=max(budget, 0.001), concurrent=True) is not None
    except TimeoutError:
        found = None
    return found, time.perf_counter() - started


def span_with_budget(compiled: Any, text: str, budget: float) -> tuple[int, int] | None:
    """Where the `regex` engine first matches, searching at most `budget` seconds (None: no match, or cut off)."""
    try:
        found = compiled.search(text, timeout=max(budget, 0.001), concurrent=True)
    except TimeoutError:
        return None
    return None if found is None else (found.start(), found.end())


__all__ = [
    "KEY_BUDGET",
    "SCAN_BUDGET",
    "SetGroup",
    "Translation",
    "compile_fallback",
    "compile_re2",
    "fold",
    "has_dotless",
    "search_with_budget",
    "span_with_budget",
    "translate",
    "without_non_boundary",
]
