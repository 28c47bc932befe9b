"""The lorebook: `lorebook.toml` (hand-written, the source of truth), its strict loader and the activation scan.

Schema (DESIGN.md "Lorebook"). Top level, all optional: `scan_depth` (recent turns scanned, default 10),
`case_sensitive` (default false), `whole_words` (default true), `token_budget`, `max_entries`, `name`,
`description`, `[extensions]`. Then `[[entries]]`: `title`, `keys`, `secondary_keys`, `logic` (and_any |
and_all | not_any | not_all; only with secondary keys), `content`, `priority` (default 100, higher first),
`constant`, `enabled`, per-entry `case_sensitive` / `whole_words` / `scan_depth`, `id`, `[entries.extensions]`.
Unknown keys are kept by the editor and ignored here.

Matching rules:
- A key written `/pattern/flags` is a regular expression (flags i, m, s, x map to Python's; u, g, y, d, v
  are ignored). Regex keys obey only their own flags: neither case_sensitive nor whole_words applies.
- Any other key is literal text; a run of whitespace in it matches any run of whitespace.
- Whole words: the key may not continue a word of the text at an end where the key itself has a word
  character. Scripts written without spaces (CJK, Hangul, Thai, Lao, Khmer, Myanmar) never need a boundary,
  so "東京" is found in "私は東京に住んでいる" and "C++" in "I like C++!".
- Only the first 6000 characters of each scanned text are looked at (a Discord message has at most 4000).
- Keys are stripped of surrounding whitespace. An empty key, or a regex that does not compile or is longer
  than 200 characters, is recorded in `Lorebook.problems` and never matches; the rest of the book still works.
- Regex keys are written for Python's `re` and mean what they mean there, but are matched in bounded time
  (lore_regex.py): any pattern RE2 can express runs in linear time; the rest have a time limit, and a key that
  runs over it is disabled for as long as the scanner lives (until lorebook.toml changes), reported to the
  scanner's `on_disabled` and logged with its entry, and the scan goes on without it.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import logging
import re
import tomllib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from app.config.errors import ConfigError
from app.runtime.context import lore_regex
from app.runtime.errors import FamiliarError

_log = logging.getLogger(__name__)

DEFAULT_SCAN_DEPTH = 10
DEFAULT_PRIORITY = 100
MAX_SCAN_DEPTH = 1000
MAX_REGEX_LENGTH = 200
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_ENTRIES = 10_000
MAX_TEXT_CHARS = 6000  # of each scanned text (a Discord message is at most 4000)
LOGICS = ("and_any", "and_all", "not_any", "not_all")
CONSTANT_KEY = "(constant)"


class LorebookError(ConfigError, FamiliarError):
    """lorebook.toml is unreadable or has a wrong type: names the file, the line and the key.

    A ConfigError (how every config file problem is reported) and a FamiliarError (the runtime's root).
    """


@dataclass(frozen=True, slots=True)
class LoreEntry:
    index: int  # position in the file's entries, from 0
    title: str
    keys: tuple[str, ...]
    secondary_keys: tuple[str, ...]
    logic: str
    content: str
    priority: int
    constant: bool
    enabled: bool
    case_sensitive: bool | None  # None: the book's setting
    whole_words: bool | None
    scan_depth: int | None


@dataclass(frozen=True, slots=True)
class LoreProblem:
    index: int
    title: str
    key: str
    message: str


@dataclass(frozen=True, slots=True)
class Lorebook:
    entries: tuple[LoreEntry, ...]
    scan_depth: int
    case_sensitive: bool
    whole_words: bool
    token_budget: int | None
    max_entries: int | None
    problems: tuple[LoreProblem, ...]
    digest: str  # sha256 of the file text, for cache keys


@dataclass(frozen=True, slots=True)
class LoreMatch:
    entry: LoreEntry
    key: str  # the key that fired, as written, or "(constant)"
    secondary: str | None  # and_any: the secondary found; and_all: the first; not_all: the first absent one


EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()


def empty_lorebook() -> Lorebook:
    return Lorebook((), DEFAULT_SCAN_DEPTH, False, True, None, None, (), EMPTY_DIGEST)


# -- loading -----------------------------------------------------------------------------------------
def load_lorebook(path: Path) -> Lorebook:
    """Read and parse lorebook.toml; a missing file is an empty book."""
    return parse_lorebook(read_lorebook_text(path), path)


def read_lorebook_text(path: Path) -> str:
    """The text of lorebook.toml ("" when there is none). Raises LorebookError if it cannot be read."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise LorebookError(path, None, None, f"too large (the limit is {MAX_FILE_BYTES // (1024 * 1024)} MB)")
        raw = path.read_bytes()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise LorebookError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")  # a BOM (Windows editors) is fine
    except UnicodeDecodeError as exc:
        raise LorebookError(path, raw[: exc.start].count(b"\n") + 1, None, "not valid UTF-8") from None


def parse_lorebook(text: str, path: Path) -> Lorebook:
    """Parse and validate lorebook.toml text. Raises LorebookError naming file, line and key."""
    if len(text) > MAX_FILE_BYTES:
        raise LorebookError(path, None, None, f"too large (the limit is {MAX_FILE_BYTES // (1024 * 1024)} MB)")
    try:
        data = tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError, and odd values tomllib rejects on its own
        found = re.search(r"\(at line (\d+)", str(exc))
        line = int(found.group(1)) if found else max(1, len(text.splitlines()))  # else: at the end
        message = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(exc))
        raise LorebookError(path, line, None, f"not valid TOML: {message}") from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise LorebookError(path, None, None, "not valid TOML: values are nested too deeply") from None
    check = _Checker(text, path)
    scan_depth = check.integer(data, "scan_depth", DEFAULT_SCAN_DEPTH, 0, MAX_SCAN_DEPTH)
    case_sensitive = check.boolean(data, "case_sensitive", False)
    whole_words = check.boolean(data, "whole_words", True)
    token_budget = check.optional_integer(data, "token_budget", 0, 10_000_000)
    max_entries = check.optional_integer(data, "max_entries", 0, MAX_ENTRIES)
    check.string(data, "name", "")
    check.string(data, "description", "")
    check.table(data, "extensions")
    raw_entries = data.get("entries", [])
    if not isinstance(raw_entries, list) or not all(isinstance(e, dict) for e in raw_entries):
        check.fail("entries", "expected [[entries]] tables")
    if len(raw_entries) > MAX_ENTRIES:
        check.fail("entries", f"more than {MAX_ENTRIES} entries")
    entries: list[LoreEntry] = []
    problems: list[LoreProblem] = []
    for index, raw in enumerate(raw_entries):
        entry = _entry(check, index, raw)
        entries.append(entry)
        problems.extend(_key_problems(entry))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return Lorebook(
        entries=tuple(entries),
        scan_depth=scan_depth,
        case_sensitive=case_sensitive,
        whole_words=whole_words,
        token_budget=token_budget,
        max_entries=max_entries,
        problems=tuple(problems),
        digest=digest,
    )


def validate_entry(raw: dict[str, Any], path: Path, index: int) -> LoreEntry:
    """Check one entry table (as an editor is about to write it); raises LorebookError without a line."""
    return _entry(_Checker("", path), index, raw)


def _entry(check: _Checker, index: int, raw: dict[str, Any]) -> LoreEntry:
    check.entry = index
    keys = check.strings(raw, "keys")
    secondary = check.strings(raw, "secondary_keys")
    logic = check.string(raw, "logic", "and_any")
    if logic not in LOGICS:
        check.fail("logic", f"expected one of {', '.join(LOGICS)}, got '{logic}'")
    if "id" in raw and (isinstance(raw["id"], bool) or not isinstance(raw["id"], int | str)):
        check.fail("id", f"expected a whole number or a string, got {_type_name(raw['id'])}")
    check.table(raw, "extensions")
    entry = LoreEntry(
        index=index,
        title=check.string(raw, "title", ""),
        keys=keys,
        secondary_keys=secondary,
        logic=logic,
        content=check.string(raw, "content", ""),
        priority=check.integer(raw, "priority", DEFAULT_PRIORITY, -(2**63), 2**63 - 1),
        constant=check.boolean(raw, "constant", False),
        enabled=check.boolean(raw, "enabled", True),
        case_sensitive=check.optional_boolean(raw, "case_sensitive"),
        whole_words=check.optional_boolean(raw, "whole_words"),
        scan_depth=check.optional_integer(raw, "scan_depth", 0, MAX_SCAN_DEPTH),
    )
    check.entry = None
    return entry


def _type_name(value: object) -> str:
    names = {bool: "true/false", int: "whole number", float: "number", str: "string", list: "list", dict: "table"}
    return names.get(type(value), type(value).__name__)


class _Checker:
    """Type checks of known keys; failures name the line and the key (entries[i].key)."""

    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        self.entry: int | None = None

    def fail(self, key: str, problem: str) -> NoReturn:
        dotted = key if self.entry is None else f"entries[{self.entry}].{key}"
        raise LorebookError(self.path, _line_of(self.text, self.entry, key), dotted, problem)

    def string(self, data: dict[str, Any], key: str, default: str) -> str:
        value = data.get(key, default)
        if not isinstance(value, str):
            self.fail(key, f"expected a string, got {_type_name(value)}")
        return value

    def strings(self, data: dict[str, Any], key: str) -> tuple[str, ...]:
        value = data.get(key, [])
        if not isinstance(value, list):
            self.fail(key, f"expected a list of strings, got {_type_name(value)}")
        for item in value:
            if not isinstance(item, str):
                self.fail(key, f"expected a list of strings, found a {_type_name(item)}")
        return tuple(value)

    def boolean(self, data: dict[str, Any], key: str, default: bool) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, got {_type_name(value)}")
        return value

    def optional_boolean(self, data: dict[str, Any], key: str) -> bool | None:
        return self.boolean(data, key, False) if key in data else None

    def integer(self, data: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"expected a whole number, got {_type_name(value)}")
        if not low <= value <= high:
            self.fail(key, f"{value} is out of range ({low} to {high})")
        return value

    def optional_integer(self, data: dict[str, Any], key: str, low: int, high: int) -> int | None:
        return self.integer(data, key, 0, low, high) if key in data else None

    def table(self, data: dict[str, Any], key: str) -> None:
        if key in data and not isinstance(data[key], dict):
            self.fail(key, f"expected a table, got {_type_name(data[key])}")


_HEADER = re.compile(r"^\s*\[(\[?)\s*([^\]]*?)\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*[.=]""")


def _line_of(text: str, entry: int | None, key: str) -> int | None:
    """Best-effort line of a top-level key, or of a key in the `entry`-th [[entries]] table."""
    table: str | None = ""  # the current table's name; "" is the top level
    seen = -1
    header_line = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            name = header.group(2).replace(" ", "").replace('"', "").replace("'", "")
            if name == "entries" and header.group(1):
                seen += 1
                table = "entries" if seen == entry else None
                if seen == entry:
                    header_line = number
            else:
                table = None
            continue
        assign = _ASSIGN.match(line)
        if assign is None:
            continue
        name = assign.group(1).strip("\"'")
        if entry is None and table == "" and name == key:
            return number
        if entry is not None and table == "entries" and name == key:
            return number
        if table == "" and name == "entries" and entry is not None:
            return number  # entries = [ {...}, ... ] written inline
    return header_line


# -- keys ----------------------------------------------------------------------------------------------
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
_NOT_AFTER_WORD = f"(?<!{_WORD_CHAR})"
_NOT_BEFORE_WORD = f"(?!{_WORD_CHAR})"
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


def _key_problems(entry: LoreEntry) -> Iterator[LoreProblem]:
    for key in (*entry.keys, *entry.secondary_keys):
        problem = key_problem(key)
        if problem is not None:
            yield LoreProblem(entry.index, entry.title, key, problem)


def key_problem(key: str) -> str | None:
    """Why a key can never match, or None when it is fine."""
    if not key.strip():
        return "an empty key never matches"
    if "\x00" in key:
        return "a key may not contain a NUL character"
    compiled = compile_regex_key(key)
    return compiled if isinstance(compiled, str) else None


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
    """A `/pattern/flags` key, matched with the engines of lore_regex (anchors keep their meaning per text)."""

    __slots__ = ("_fallback", "_single", "empty", "folds", "key", "pattern", "translation")

    def __init__(self, key: str, pattern: re.Pattern[str]) -> None:
        self.key = key
        self.pattern = pattern
        self.translation = lore_regex.translate(pattern.pattern, pattern.flags)
        self.folds = bool(pattern.flags & re.IGNORECASE)
        self._single: Any = None
        self._fallback: Any = None
        # In re, \B never matches in an empty text (in RE2 and regex it does): that text gets this variant.
        variant = lore_regex.without_non_boundary(pattern.pattern)
        self.empty = None if variant is None else _Regex(key, re.compile(variant, pattern.flags))

    def single(self) -> Any:
        """RE2's compiled form of the key alone (built on first need: most keys are searched through sets),
        or None when RE2 refuses it."""
        if self._single is None:
            found = None if self.translation is None else lore_regex.compile_re2(self.translation)
            self._single = found if found is not None else False
        return self._single or None

    def fallback(self) -> Any:
        """The time-limited engine's compiled form (built on first need), or None if it cannot take it."""
        if self._fallback is None:
            self._fallback = lore_regex.compile_fallback(self.pattern.pattern, self.pattern.flags) or False
        return self._fallback or None


_Matcher = _Token | _Literal | _Regex | None  # None never matches


def _normal(text: str, case_sensitive: bool) -> str:
    """Whitespace runs become one space, and the text is lower-cased unless case-sensitive."""
    text = " ".join(text.split())
    return text if case_sensitive else text.lower()


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
    primary: tuple[int, ...]  # matcher ids, parallel to entry.keys
    secondary: tuple[int, ...]


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
    )

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts  # newest first
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
    """One scanned text as the regex engines take it: UTF-8, and folded for IGNORECASE keys (lore_regex)."""

    __slots__ = ("data", "folded", "folded_ascii", "folded_data", "is_ascii", "newline_end", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.is_ascii = text.isascii()
        self.newline_end = text.endswith("\n")
        try:
            self.data: bytes | None = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8 only, so the time-limited engine searches
            self.data = None
        self.folded = lore_regex.fold(text) if lore_regex.has_dotless(text) else text
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
        for entry in book.entries:
            if not entry.enabled:
                continue
            if entry.constant:
                constants.append(entry)
                continue
            depth = book.scan_depth if entry.scan_depth is None else entry.scan_depth
            if depth == 0 or not entry.keys:
                continue
            cs = book.case_sensitive if entry.case_sensitive is None else entry.case_sensitive
            ww = book.whole_words if entry.whole_words is None else entry.whole_words
            primary = tuple(self._intern(key, cs, ww, depth) for key in entry.keys)
            secondary = tuple(self._intern(key, cs, ww, depth) for key in entry.secondary_keys)
            compiled.append(_Compiled(entry, depth, primary, secondary))
        self._constants = tuple(constants)
        self._compiled = tuple(compiled)
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
        self._sets = lore_regex.SetGroup([(n, m.translation.pattern) for n, m in regexes if m.translation])
        self._in_sets = {n for n, m in regexes if m.translation} - set(self._sets.left_out)
        self._regex_depth = max((self._limits[n] for n, _ in regexes), default=0)

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
        """The entries that fire for these recent texts (oldest first), highest priority first, then file order."""
        matches = [LoreMatch(entry, CONSTANT_KEY, None) for entry in self._constants]
        if self._compiled and self._depth and recent:
            texts = [text[:MAX_TEXT_CHARS] for text in reversed(recent[-self._depth :])]
            window = _Window(texts)
            distances = self._template.copy()
            candidates: set[int] = set()
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
            for position in candidates:
                match = self._check(self._compiled[position], distances, window)
                if match is not None:
                    matches.append(match)
        matches.sort(key=lambda m: (-m.entry.priority, m.entry.index))
        return matches

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

    # -- regex keys (lore_regex.py) --------------------------------------------------------------------
    def _search(self, matcher_id: int, matcher: _Regex, window: _Window) -> int:
        """How many texts back the regex key last matches (no deeper than its entries scan), or _NEVER."""
        limit = min(self._limits[matcher_id], len(window.texts))
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
            depth = min(self._regex_depth, len(window.texts))
            window.oddities = _Oddities.of([window.view(d) for d in range(depth)])
        return window.oddities

    def _first_set_hits(self, window: _Window) -> dict[int, int]:
        """Each RE2 key that matches a text of the window -> the nearest such text (one pass per text)."""
        if window.first_set_hits is None:
            first: dict[int, int] = {}
            for distance in range(min(self._regex_depth, len(window.texts))):
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
        key_left = lore_regex.KEY_BUDGET - window.key_spent.get(matcher_id, 0.0)
        scan_left = lore_regex.SCAN_BUDGET - window.fallback_spent
        if scan_left <= 0:
            return False  # this scan spent its time on other keys; this one is searched again next time
        text = view.folded if matcher.folds else view.text
        found, took = lore_regex.search_with_budget(compiled, text, min(key_left, scan_left))
        window.key_spent[matcher_id] = window.key_spent.get(matcher_id, 0.0) + took
        window.fallback_spent += took
        if found is None and key_left <= scan_left:
            limit = round(lore_regex.KEY_BUDGET * 1000)
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

    def _check(self, item: _Compiled, distances: list[int], window: _Window) -> LoreMatch | None:
        depth = item.depth
        entry = item.entry
        fired = next(
            (
                key
                for key, m in zip(entry.keys, item.primary, strict=True)
                if self._distance(m, distances, window) < depth
            ),
            None,
        )
        if fired is None:
            return None
        if not item.secondary:
            return LoreMatch(entry, fired, None)
        present = [self._distance(m, distances, window) < depth for m in item.secondary]
        if entry.logic == "and_any":
            return LoreMatch(entry, fired, entry.secondary_keys[present.index(True)]) if any(present) else None
        if entry.logic == "and_all":
            return LoreMatch(entry, fired, entry.secondary_keys[0]) if all(present) else None
        if entry.logic == "not_any":
            return None if any(present) else LoreMatch(entry, fired, None)
        return None if all(present) else LoreMatch(entry, fired, entry.secondary_keys[present.index(False)])


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

    def scanner(self, book: Lorebook) -> LoreScanner:
        scanner = self._scanners.get(book.digest)
        if scanner is None:
            scanner = LoreScanner(book, self._on_disabled)
            self._scanners[book.digest] = scanner
            while len(self._scanners) > self._size:
                self._scanners.popitem(last=False)
        else:
            self._scanners.move_to_end(book.digest)
        return scanner


__all__ = [
    "CONSTANT_KEY",
    "DEFAULT_PRIORITY",
    "DEFAULT_SCAN_DEPTH",
    "LOGICS",
    "LoreEntry",
    "LoreMatch",
    "LoreProblem",
    "LoreScanner",
    "Lorebook",
    "LorebookError",
    "ScannerCache",
    "compile_regex_key",
    "describe_disabled",
    "empty_lorebook",
    "key_problem",
    "load_lorebook",
    "parse_lorebook",
    "read_lorebook_text",
    "split_regex_key",
    "validate_entry",
]
