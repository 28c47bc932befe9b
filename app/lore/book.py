"""lorebook.toml (hand-written, the source of truth) and its strict loader.

Schema (DESIGN.md "Lorebook"). Top level, all optional: `scan_depth` (recent turns scanned, default 10),
`case_sensitive` (default false), `whole_words` (default true), `token_budget`, `max_entries`, `name`,
`description`, `recursive_scanning` (entries' content activates other entries, default true),
`max_recursion_steps` (1 to 10, default 3), `use_group_scoring` (default false), `[extensions]`.
Then `[[entries]]`: `title`, `keys`, `secondary_keys`, `logic` (and_any | and_all | not_any | not_all; only
with secondary keys), `content`, `priority` (default 100, higher first), `constant`, `enabled`, per-entry
`case_sensitive` / `whole_words` / `scan_depth`, `id`, and SillyTavern's activation fields (activation.py
says what they do): `probability` (0 to 100, default 100) with `use_probability` (default true); `group`
(inclusion groups, comma-separated), `group_override`, `group_weight` (default 100), `use_group_scoring`;
`sticky`, `cooldown`, `delay` (in messages, default 0: off); `exclude_recursion`, `prevent_recursion`,
`delay_until_recursion` (true or a recursion level); then `[entries.extensions]`. Character Card V3
decorators (the `@@` lines an imported card put at the top of an entry's content) are read from
`extensions.decorators` (see `Decorators`).

Any other key is an error naming the file, the line and the key (a misspelt `kyes` would otherwise leave the
entry silently unable to fire), with the known key it most resembles. What the familiar does not act on
(foreign fields of an imported book, notes of one's own) goes under an `[extensions]` table, where anything
is kept as written. Errors about an entry name it by its 1-based position and its title (`entry 4 "Ember"`).

Keys are stripped of surrounding whitespace. An empty key, or a regex that does not compile or is longer than
200 characters, is recorded in `Lorebook.problems` and never matches; the rest of the book still works (how
keys match: scanner.py).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import re
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from app.config.errors import ConfigError
from app.lore.errors import LoreError
from app.lore.keys import MAX_REGEX_LENGTH, key_problem

DEFAULT_SCAN_DEPTH = 10
DEFAULT_PRIORITY = 100
MAX_SCAN_DEPTH = 1000
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_ENTRIES = 10_000
LOGICS = ("and_any", "and_all", "not_any", "not_all")
DEFAULT_RECURSION_STEPS = 3
MAX_RECURSION_STEPS = 10
MAX_TIMED = 100_000  # messages of sticky, cooldown or delay
BOOK_KEYS = (
    "name", "description", "scan_depth", "case_sensitive", "whole_words", "token_budget", "max_entries",
    "recursive_scanning", "max_recursion_steps", "use_group_scoring", "extensions", "entries",
)  # fmt: skip
ENTRY_KEYS = (
    "title", "id", "keys", "secondary_keys", "logic", "content", "priority", "constant", "enabled",
    "case_sensitive", "whole_words", "scan_depth", "probability", "use_probability", "group", "group_override",
    "group_weight", "use_group_scoring", "sticky", "cooldown", "delay", "exclude_recursion", "prevent_recursion",
    "delay_until_recursion", "extensions",
)  # fmt: skip
# CCv3 decorators acted on (see Decorators); any other decorator is kept in the file and not acted on.
ACTED_DECORATORS = (
    "activate", "dont_activate", "activate_only_after", "activate_only_every", "keep_activate_after_match",
    "dont_activate_after_match", "scan_depth", "additional_keys", "exclude_keys", "ignore_on_max_context",
)  # fmt: skip


class LorebookError(ConfigError, LoreError):
    """lorebook.toml is unreadable or has a wrong type: names the file, the line, the entry and the key.

    A ConfigError (how every config file problem is reported) and a LoreError (the lore package's root).
    `entry` is the 0-based index of the entry at fault (None: the problem is not in one entry); the
    message counts entries from 1 and gives the entry's title, as a person reading the file would.
    """

    def __init__(
        self, path: Path, line: int | None, key: str | None, problem: str, *, entry: int | None = None, title: str = ""
    ) -> None:
        super().__init__(path, line, key, problem)
        self.entry = entry
        self.title = title
        if entry is not None:
            where = str(path) + ("" if line is None else f", line {line}") + f", {describe_entry(entry, title)}"
            self.args = (where + (f", key '{key}'" if key else "") + f": {problem}",)


def describe_entry(index: int, title: str) -> str:
    """`entry 4 "Ember"`: the 1-based position of an entry in the file, and its title when it has one."""
    title = " ".join(title.split())
    if len(title) > 60:
        title = title[:59] + "…"
    return f'entry {index + 1} "{title}"' if title else f"entry {index + 1}"


def describe_problem(problem: LoreProblem) -> str:
    """One line for a key that never matches, naming its entry as a person counts them."""
    return f'lorebook.toml {describe_entry(problem.index, problem.title)}: key "{problem.key}" never matches: ' + (
        problem.message
    )


@dataclass(frozen=True, slots=True)
class Decorators:
    """The CCv3 decorators of an entry (`extensions.decorators`, one `@@name value` line each) that map onto
    Familiar's one lorebook layer. A `@@@name` line is the fallback of the decorator line before it, used
    when that one is not among these.

    - `@@activate` / `@@dont_activate`: the entry is always / never activated;
    - `@@activate_only_after N`: not before the place's N-th message (as SillyTavern's delay);
    - `@@activate_only_every N`: only on every N-th message of the place;
    - `@@keep_activate_after_match` / `@@dont_activate_after_match`: once activated in a place, it stays
      active there for good / never activates there again (timed effects without an end);
    - `@@scan_depth N`: the entry's scan depth (when the entry sets none);
    - `@@additional_keys a,b` / `@@exclude_keys a,b`: more primary keys / keys that must not be there;
    - `@@ignore_on_max_context`: the first to give way when the lorebook's budget is short.
    Kept, not acted on (`kept`): @@depth, @@instruct_depth, @@reverse_depth, @@reverse_instruct_depth,
    @@role, @@position, @@instruct_scan_depth, @@is_greeting, @@is_user_icon, @@disable_ui_prompt (where
    in a prompt a block goes, and UI matters: Familiar has one lorebook block) and any unknown one.
    """

    activate: bool = False
    dont_activate: bool = False
    activate_only_after: int = 0
    activate_only_every: int = 0
    keep_activate_after_match: bool = False
    dont_activate_after_match: bool = False
    scan_depth: int | None = None
    additional_keys: tuple[str, ...] = ()
    exclude_keys: tuple[str, ...] = ()
    ignore_on_max_context: bool = False
    kept: tuple[str, ...] = ()  # the lines not acted on, as written
    problems: tuple[tuple[str, str], ...] = ()  # (line, why) of the lines that could not be read


NO_DECORATORS = Decorators()


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
    probability: int = 100  # percent, rolled when use_probability
    use_probability: bool = True
    group: str = ""  # inclusion groups, comma-separated
    group_override: bool = False
    group_weight: int = 100
    use_group_scoring: bool | None = None  # None: the book's setting
    sticky: int = 0  # messages it stays active after activating (0: off)
    cooldown: int = 0  # messages it cannot activate after activating (after its sticky ends)
    delay: int = 0  # the place's messages needed before it can activate
    exclude_recursion: bool = False  # never activated by another entry's content
    prevent_recursion: bool = False  # its content activates no other entry
    delay_until_recursion: int = 0  # only in recursion steps, from this level on (0: off)
    decorators: Decorators = NO_DECORATORS

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(name for name in (part.strip() for part in self.group.split(",")) if name)

    @property
    def timed(self) -> bool:
        """Whether activating it starts a timed effect (sticky or cooldown) in the place."""
        d = self.decorators
        return bool(self.sticky or self.cooldown or d.keep_activate_after_match or d.dont_activate_after_match)


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
    recursive_scanning: bool = True
    max_recursion_steps: int = DEFAULT_RECURSION_STEPS
    use_group_scoring: bool = False


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
    return parse_book(text, path)[0]


def parse_book(text: str, path: Path) -> tuple[Lorebook, dict[str, Any]]:
    """parse_lorebook, and the parsed TOML data it was read from (for an editor)."""
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
    check.known(data, BOOK_KEYS, "[extensions]")
    scan_depth = check.integer(data, "scan_depth", DEFAULT_SCAN_DEPTH, 0, MAX_SCAN_DEPTH)
    case_sensitive = check.boolean(data, "case_sensitive", False)
    whole_words = check.boolean(data, "whole_words", True)
    token_budget = check.optional_integer(data, "token_budget", 0, 10_000_000)
    max_entries = check.optional_integer(data, "max_entries", 0, MAX_ENTRIES)
    check.string(data, "name", "")
    check.string(data, "description", "")
    recursive = check.boolean(data, "recursive_scanning", True)
    steps = check.integer(data, "max_recursion_steps", DEFAULT_RECURSION_STEPS, 1, MAX_RECURSION_STEPS)
    scoring = check.boolean(data, "use_group_scoring", False)
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
        problems.extend(entry_problems(entry))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    book = Lorebook(
        entries=tuple(entries),
        scan_depth=scan_depth,
        case_sensitive=case_sensitive,
        whole_words=whole_words,
        token_budget=token_budget,
        max_entries=max_entries,
        problems=tuple(problems),
        digest=digest,
        recursive_scanning=recursive,
        max_recursion_steps=steps,
        use_group_scoring=scoring,
    )
    return book, data


def rebuilt(
    book: Lorebook,
    entries: Sequence[LoreEntry],
    digest: str,
    problems: Sequence[Sequence[LoreProblem]] | None = None,
) -> Lorebook:
    """The book with these entries (validated already; renumbered in order) and the problems they have
    (`problems`: each entry's, when known already; else they are worked out)."""
    numbered = [entry if entry.index == i else dataclasses.replace(entry, index=i) for i, entry in enumerate(entries)]
    if problems is None:
        found = tuple(problem for entry in numbered for problem in entry_problems(entry))
    else:
        found = tuple(
            problem if problem.index == i else dataclasses.replace(problem, index=i)
            for i, own in enumerate(problems)
            for problem in own
        )
    return dataclasses.replace(book, entries=tuple(numbered), problems=found, digest=digest)


# The book's own settings, as Lorebook holds them (and the editor's LoreBookSettings names them).
BOOK_SETTINGS: tuple[str, ...] = (
    "scan_depth", "case_sensitive", "whole_words", "token_budget", "max_entries", "recursive_scanning",
    "max_recursion_steps", "use_group_scoring",
)  # fmt: skip


def with_settings(book: Lorebook, settings: object) -> Lorebook:
    """`book` with the settings of `settings` (a Lorebook, or anything with the BOOK_SETTINGS attributes)."""
    return dataclasses.replace(book, **{name: getattr(settings, name) for name in BOOK_SETTINGS})


def validate_entry(raw: dict[str, Any], path: Path, index: int) -> LoreEntry:
    """Check one entry table (as an editor is about to write it); raises LorebookError without a line."""
    return _entry(_Checker("", path), index, raw)


def _entry(check: _Checker, index: int, raw: dict[str, Any]) -> LoreEntry:
    check.entry = index
    check.title = raw["title"] if isinstance(raw.get("title"), str) else ""
    check.known(raw, ENTRY_KEYS, "[entries.extensions]")
    keys = check.strings(raw, "keys")
    secondary = check.strings(raw, "secondary_keys")
    logic = check.string(raw, "logic", "and_any")
    if logic not in LOGICS:
        check.fail("logic", f"expected one of {', '.join(LOGICS)}, got '{logic}'")
    if "id" in raw and (isinstance(raw["id"], bool) or not isinstance(raw["id"], int | str)):
        check.fail("id", f"expected a whole number or a string, got {_type_name(raw['id'])}")
    check.table(raw, "extensions")
    title = check.string(raw, "title", "")
    decorators = _decorators(raw.get("extensions"))
    until = raw.get("delay_until_recursion", False)
    if until is True:
        until = 1
    elif until is False:
        until = 0
    else:
        until = check.integer(raw, "delay_until_recursion", 0, 0, MAX_RECURSION_STEPS)
    entry = LoreEntry(
        index=index,
        title=title,
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
        probability=check.integer(raw, "probability", 100, 0, 100),
        use_probability=check.boolean(raw, "use_probability", True),
        group=check.string(raw, "group", ""),
        group_override=check.boolean(raw, "group_override", False),
        group_weight=check.integer(raw, "group_weight", 100, 0, 1_000_000),
        use_group_scoring=check.optional_boolean(raw, "use_group_scoring"),
        sticky=check.integer(raw, "sticky", 0, 0, MAX_TIMED),
        cooldown=check.integer(raw, "cooldown", 0, 0, MAX_TIMED),
        delay=check.integer(raw, "delay", 0, 0, MAX_TIMED),
        exclude_recursion=check.boolean(raw, "exclude_recursion", False),
        prevent_recursion=check.boolean(raw, "prevent_recursion", False),
        delay_until_recursion=until,
        decorators=decorators,
    )
    check.entry = None
    check.title = ""
    return entry


def _type_name(value: object) -> str:
    names = {bool: "true/false", int: "whole number", float: "number", str: "string", list: "list", dict: "table"}
    return names.get(type(value), type(value).__name__)


class _Checker:
    """Type checks of known keys; failures name the line, the entry (1-based, with its title) and the key."""

    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        self.entry: int | None = None
        self.title = ""

    def fail(self, key: str, problem: str) -> NoReturn:
        line = _line_of(self.text, self.entry, key)
        raise LorebookError(self.path, line, key, problem, entry=self.entry, title=self.title)

    def known(self, data: dict[str, Any], known: tuple[str, ...], elsewhere: str) -> None:
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
                hint = f"did you mean '{close[0]}'?" if close else f"known keys here: {', '.join(sorted(known))}"
                self.fail(key, f"unknown key ({hint}); keep anything else under {elsewhere}")

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
    """Best-effort line of a top-level key, or of a key in the `entry`-th [[entries]] table (a key that is
    a table of its own, [key] or [entries.key], is found at its header)."""
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
                if entry is None and name.split(".")[0] == key:
                    return number
                if entry is not None and seen == entry and name.split(".")[:2] == ["entries", key]:
                    return number
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


def entry_problems(entry: LoreEntry) -> Iterator[LoreProblem]:
    """What in an entry can never work: keys that never match, decorator lines that cannot be read."""
    d = entry.decorators
    for key in (*entry.keys, *entry.secondary_keys, *d.additional_keys, *d.exclude_keys):
        problem = key_problem(key)
        if problem is not None:
            yield LoreProblem(entry.index, entry.title, key, problem)
    for line, why in d.problems:
        yield LoreProblem(entry.index, entry.title, line, f"decorator not used: {why}")


_DECORATOR = re.compile(r"(@@@?)([A-Za-z_]+)(?:[ \t]+(.*))?")


def parse_decorators(lines: Sequence[str]) -> tuple[Decorators, list[tuple[str, str]]]:
    """The decorators of these `@@` lines, and the problems of the lines that cannot be read: (line, why).

    A line's value is split on commas for key lists. A `@@@` line stands in for the decorator line before
    it when that one is not acted on here (CCv3 fallbacks); an acted-on line makes its fallbacks moot.
    """
    values: dict[str, Any] = {}
    kept: list[str] = []
    problems: list[tuple[str, str]] = []
    previous_acted = False  # whether the last @@ line (not a fallback) was acted on
    for line in lines:
        found = _DECORATOR.fullmatch(line.strip())
        if found is None:
            kept.append(line)
            continue
        marks, name, value = found.group(1), found.group(2), (found.group(3) or "").strip()
        fallback = marks == "@@@"
        if fallback and previous_acted:
            kept.append(line)
            continue
        if name not in ACTED_DECORATORS:
            kept.append(line)
            previous_acted = previous_acted if fallback else False
            continue
        problem = _decorator_value(name, value, values)
        if problem is not None:
            problems.append((line, problem))
            kept.append(line)
            previous_acted = previous_acted if fallback else False
            continue
        previous_acted = True
    return Decorators(**values, kept=tuple(kept), problems=tuple(problems)), problems


def _decorator_value(name: str, value: str, values: dict[str, Any]) -> str | None:
    if name in ("activate", "dont_activate", "keep_activate_after_match", "dont_activate_after_match",
                "ignore_on_max_context"):  # fmt: skip
        values[name] = True
        return None
    if name in ("additional_keys", "exclude_keys"):
        keys = tuple(key.strip() for key in value.split(",") if key.strip())
        if not keys:
            return "expected keys separated by commas"
        values[name] = values.get(name, ()) + keys
        return None
    low, high = (0, MAX_SCAN_DEPTH) if name == "scan_depth" else (1, MAX_TIMED)
    if not value.isdigit() or not low <= int(value) <= high:
        return f"expected a whole number from {low} to {high}"
    values[name] = int(value)
    return None


def _decorators(extensions: Any) -> Decorators:
    lines = extensions.get("decorators") if isinstance(extensions, dict) else None
    if not isinstance(lines, list) or not lines:
        return NO_DECORATORS
    return parse_decorators([line for line in lines if isinstance(line, str)])[0]


__all__ = [
    "ACTED_DECORATORS",
    "BOOK_KEYS",
    "BOOK_SETTINGS",
    "DEFAULT_PRIORITY",
    "DEFAULT_RECURSION_STEPS",
    "DEFAULT_SCAN_DEPTH",
    "ENTRY_KEYS",
    "LOGICS",
    "MAX_ENTRIES",
    "MAX_FILE_BYTES",
    "MAX_REGEX_LENGTH",
    "MAX_SCAN_DEPTH",
    "NO_DECORATORS",
    "Decorators",
    "LoreEntry",
    "LoreProblem",
    "Lorebook",
    "LorebookError",
    "describe_entry",
    "describe_problem",
    "empty_lorebook",
    "entry_problems",
    "load_lorebook",
    "parse_book",
    "parse_decorators",
    "parse_lorebook",
    "read_lorebook_text",
    "rebuilt",
    "validate_entry",
    "with_settings",
]
