"""Import and export of lorebooks in the formats of the field (notes/lorebook-formats.md).

Read: SillyTavern World Info JSON (`{"entries": {"<uid>": {...}}}`), a Character Card V2 (`chara_card_v2`)
or V3 (`chara_card_v3`) card's `data.character_book`, a bare `character_book` object, and a standalone
`{"spec": "lorebook_v3", "data": {...}}`. Only the lorebook of a card is read; the character is not.
Write: `st` (World Info JSON), `ccv2` (a bare V2 `character_book` object) and `ccv3` (a `lorebook_v3` file).

Mapping (the same one SillyTavern uses between its books and cards):

| lorebook.toml | ST World Info | card entry (V2 / V3) |
|---|---|---|
| title | comment | comment (else name) |
| keys / secondary_keys | key / keysecondary | keys / secondary_keys |
| logic | selectiveLogic (0 and_any, 1 not_all, 2 not_any, 3 and_all) | extensions.selectiveLogic |
| priority | order | insertion_order |
| enabled | not disable | enabled |
| constant, content, id | constant, content, uid | constant, content, id |
| case_sensitive | caseSensitive | case_sensitive (V3) and extensions.case_sensitive |
| whole_words / scan_depth | matchWholeWords / scanDepth | extensions.match_whole_words / extensions.scan_depth |
| probability, use_probability | probability, useProbability | extensions.probability, .useProbability |
| group, group_override | group, groupOverride | extensions.group, .group_override |
| group_weight, use_group_scoring | groupWeight, useGroupScoring | extensions.group_weight, .use_group_scoring |
| sticky, cooldown, delay | sticky, cooldown, delay | extensions.sticky, .cooldown, .delay |
| exclude_recursion, prevent_recursion | excludeRecursion, preventRecursion | extensions.exclude_recursion, ... |
| delay_until_recursion | delayUntilRecursion | extensions.delay_until_recursion |
| recursive_scanning (the book) | (a SillyTavern setting, not in the file) | recursive_scanning |

An activation field is taken into lorebook.toml when its value is one the engine acts on and differs from
the engine's default (sticky 0 or null, a null weight, a default value... stay with the foreign fields,
as written, and come back on export; the engine reads them as its default, which they mean).

`priority` is ST's `order` and the card's `insertion_order`: higher wins the budget and is placed later
(closer to the reply), which is what "renders first" means in our budgeted layer. The card's own optional
`priority` field is kept, not used. Secondary keys count only when `selective` is true (as in SillyTavern);
otherwise they stay with the foreign fields. Keys written `/pattern/flags` are regexes in every format
(V3 `use_regex` is kept as it was: SillyTavern writes `true` for every book).

Everything else is kept, verbatim, under the entry's `extensions`: `extensions.st` (World Info fields such as
position, depth, probability, group, sticky, and ST's own `extensions`) or `extensions.card` (card fields such
as position, name, priority, use_regex and the card entry's `extensions` object). V3 decorators (the `@@`
lines at the top of `content`) go to `extensions.decorators` and are put back in front of the content on
export. Book-level fields other than name, description, scan_depth and token_budget go to the top-level
`[extensions.st]` / `[extensions.card]`. Exporting to the format a book came from gives those fields back;
exporting to the other format translates SillyTavern's fields to and from the card's `extensions` names.

TOML has no null and its integers are 64-bit, so such JSON values are stored as `{ "$json" = "null" }`
(a one-key table holding the JSON text) and decoded on export.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.config.files import UnreadableFileError, read_limited
from app.lore.book import (
    DEFAULT_PRIORITY,
    MAX_ENTRIES,
    MAX_RECURSION_STEPS,
    MAX_SCAN_DEPTH,
    MAX_TIMED,
    parse_lorebook,
    read_lorebook_text,
)
from app.lore.errors import LoreError
from app.lore.keys import split_regex_key

FORMATS = ("st", "ccv2", "ccv3")
MAX_IMPORT_BYTES = 32 * 1024 * 1024
MAX_NESTING = 64
JSON_MARKER = "$json"
ST_LOGIC = {0: "and_any", 1: "not_all", 2: "not_any", 3: "and_all"}
LOGIC_ST = {name: code for code, name in ST_LOGIC.items()}

# SillyTavern's World Info field -> the name it has in a card entry's `extensions` (convertCharacterBook).
ST_CARD_NAMES = {
    "position": "position",
    "excludeRecursion": "exclude_recursion",
    "preventRecursion": "prevent_recursion",
    "delayUntilRecursion": "delay_until_recursion",
    "displayIndex": "display_index",
    "probability": "probability",
    "useProbability": "useProbability",
    "depth": "depth",
    "selectiveLogic": "selectiveLogic",
    "outletName": "outlet_name",
    "group": "group",
    "groupOverride": "group_override",
    "groupWeight": "group_weight",
    "scanDepth": "scan_depth",
    "caseSensitive": "case_sensitive",
    "matchWholeWords": "match_whole_words",
    "useGroupScoring": "use_group_scoring",
    "automationId": "automation_id",
    "role": "role",
    "vectorized": "vectorized",
    "sticky": "sticky",
    "cooldown": "cooldown",
    "delay": "delay",
    "matchPersonaDescription": "match_persona_description",
    "matchCharacterDescription": "match_character_description",
    "matchCharacterPersonality": "match_character_personality",
    "matchCharacterDepthPrompt": "match_character_depth_prompt",
    "matchScenario": "match_scenario",
    "matchCreatorNotes": "match_creator_notes",
    "triggers": "triggers",
    "ignoreBudget": "ignore_budget",
}
# A new World Info entry as SillyTavern writes it (newWorldInfoEntryTemplate): the base of an ST export.
ST_DEFAULTS: dict[str, Any] = {
    "key": [],
    "keysecondary": [],
    "comment": "",
    "content": "",
    "constant": False,
    "vectorized": False,
    "selective": True,
    "selectiveLogic": 0,
    "addMemo": True,
    "order": DEFAULT_PRIORITY,
    "position": 0,
    "disable": False,
    "ignoreBudget": False,
    "excludeRecursion": False,
    "preventRecursion": False,
    "matchPersonaDescription": False,
    "matchCharacterDescription": False,
    "matchCharacterPersonality": False,
    "matchCharacterDepthPrompt": False,
    "matchScenario": False,
    "matchCreatorNotes": False,
    "delayUntilRecursion": False,
    "probability": 100,
    "useProbability": True,
    "depth": 4,
    "outletName": "",
    "group": "",
    "groupOverride": False,
    "groupWeight": 100,
    "scanDepth": None,
    "caseSensitive": None,
    "matchWholeWords": None,
    "useGroupScoring": None,
    "automationId": "",
    "role": 0,
    "sticky": None,
    "cooldown": None,
    "delay": None,
    "triggers": [],
}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _percent(value: Any) -> bool:
    return _is_int(value, 0, 100)


def _weight(value: Any) -> bool:
    return _is_int(value, 0, 1_000_000)


def _timed(value: Any) -> bool:
    return _is_int(value, 1, MAX_TIMED)


def _level(value: Any) -> bool:
    return value is True or _is_int(value, 1, MAX_RECURSION_STEPS)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _text(value: Any) -> bool:
    return isinstance(value, str)


# The activation fields the engine acts on: (lorebook.toml, World Info, card extensions, accepted, default).
ACTIVATION_FIELDS: tuple[tuple[str, str, str, Callable[[Any], bool], Any], ...] = (
    ("probability", "probability", "probability", _percent, 100),
    ("use_probability", "useProbability", "useProbability", _flag, True),
    ("group", "group", "group", _text, ""),
    ("group_override", "groupOverride", "group_override", _flag, False),
    ("group_weight", "groupWeight", "group_weight", _weight, 100),
    ("use_group_scoring", "useGroupScoring", "use_group_scoring", _flag, None),
    ("sticky", "sticky", "sticky", _timed, 0),
    ("cooldown", "cooldown", "cooldown", _timed, 0),
    ("delay", "delay", "delay", _timed, 0),
    ("exclude_recursion", "excludeRecursion", "exclude_recursion", _flag, False),
    ("prevent_recursion", "preventRecursion", "prevent_recursion", _flag, False),
    ("delay_until_recursion", "delayUntilRecursion", "delay_until_recursion", _level, 0),
)


def _take_activation(source: dict[str, Any], out: dict[str, Any], space: str) -> None:
    """Move the activation fields the engine acts on from a foreign entry (or its card extensions) to ours."""
    for ours, st_name, card_name, accepted, default in ACTIVATION_FIELDS:
        theirs = st_name if space == "st" else card_name
        value = source.get(theirs)
        if theirs in source and accepted(value) and not _same(value, default):
            out[ours] = _clean(source.pop(theirs)) if isinstance(value, str) else source.pop(theirs)


def _put_activation(entry: Mapping[str, Any], out: dict[str, Any], space: str) -> None:
    """Write our activation fields that differ from the engine's defaults under their foreign names."""
    for ours, st_name, card_name, _accepted, default in ACTIVATION_FIELDS:
        if ours in entry and not _same(entry[ours], default):
            out[st_name if space == "st" else card_name] = entry[ours]


class LorebookFormatError(LoreError):
    """A file that is not a lorebook this module reads, explained in one line."""


@dataclass(frozen=True, slots=True)
class ImportedLorebook:
    format: str  # st | ccv2 | ccv3
    source: str  # what the file was, in words
    book: dict[str, Any]  # top-level fields for lorebook.toml (TOML-safe values)
    entries: list[dict[str, Any]]  # [[entries]] tables for lorebook.toml (TOML-safe values)


# -- JSON values in TOML -------------------------------------------------------------------------------
def to_toml(value: Any, depth: int = 0) -> Any:
    """A JSON value as a TOML-safe one: null and out-of-range integers become {"$json" = "<json>"}."""
    if depth > MAX_NESTING:
        raise LorebookFormatError(f"values are nested more than {MAX_NESTING} levels deep")
    if value is None:
        return {JSON_MARKER: "null"}
    if isinstance(value, bool | float):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else {JSON_MARKER: str(value)}
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, list):
        return [to_toml(item, depth + 1) for item in value]
    if isinstance(value, dict):
        if set(value) == {JSON_MARKER}:  # an object that looks like our marker is itself stored as JSON
            return {JSON_MARKER: json.dumps(value, ensure_ascii=False)}
        return {_clean(str(key)): to_toml(item, depth + 1) for key, item in value.items()}
    raise LorebookFormatError(f"unexpected value of type {type(value).__name__}")


def from_toml(value: Any) -> Any:
    """The JSON value a TOML-safe one stands for (the inverse of to_toml)."""
    if isinstance(value, dict):
        if set(value) == {JSON_MARKER} and isinstance(value[JSON_MARKER], str):
            try:
                return json.loads(value[JSON_MARKER])
            except (ValueError, RecursionError):
                return dict(value)
        return {key: from_toml(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_toml(item) for item in value]
    if isinstance(value, bool | int | float | str):
        return value
    return str(value) if not hasattr(value, "isoformat") else value.isoformat()  # TOML dates and times


def _clean(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)  # lone surrogates (legal in JSON) cannot be written as UTF-8


# -- reading -------------------------------------------------------------------------------------------
def read_lorebook_file(path: Path) -> ImportedLorebook:
    """Read and convert a lorebook file (any format above). Raises LorebookFormatError."""
    try:
        raw = read_limited(path, MAX_IMPORT_BYTES, "a lorebook")
    except UnreadableFileError as exc:
        raise LorebookFormatError(str(exc)) from None
    if raw.startswith(b"\x89PNG"):
        raise LorebookFormatError(f"{path}: PNG cards are not read; export the card as JSON first")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LorebookFormatError(f"{path}: not UTF-8 text, so not a JSON lorebook") from None
    try:
        return import_text(text)
    except LorebookFormatError as exc:
        raise LorebookFormatError(f"{path}: {exc}") from None


def import_text(text: str) -> ImportedLorebook:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LorebookFormatError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise LorebookFormatError("not readable JSON: values are nested too deeply") from None
    return import_lorebook(data)


def import_lorebook(data: Any) -> ImportedLorebook:
    """Convert parsed JSON (any supported format) to lorebook.toml fields and entries."""
    if not isinstance(data, dict):
        raise LorebookFormatError(f"expected a JSON object, found {_json_type(data)}")
    spec = data.get("spec")
    if spec is not None:
        return _import_spec(spec, data)
    entries = data.get("entries")
    if isinstance(entries, dict):
        return _import_st(data, entries)
    if isinstance(entries, list):
        return _import_card_book(data, "ccv2", "a character_book")
    if "character_book" in data or "data" in data:
        raise LorebookFormatError("looks like a character card without a 'spec' (chara_card_v2 or chara_card_v3)")
    if entries is not None:
        raise LorebookFormatError(f"'entries' must be an object (World Info) or a list, found {_json_type(entries)}")
    raise LorebookFormatError(
        "not a lorebook: expected SillyTavern World Info (an 'entries' object), a character card "
        "(spec chara_card_v2 or chara_card_v3), a lorebook_v3 file or a character_book"
    )


def _import_spec(spec: Any, data: dict[str, Any]) -> ImportedLorebook:
    inner = data.get("data")
    if spec in ("chara_card_v2", "chara_card_v3"):
        version = "V2" if spec == "chara_card_v2" else "V3"
        if not isinstance(inner, dict):
            raise LorebookFormatError(f"a {spec} card needs a 'data' object")
        book = inner.get("character_book")
        if book is None:
            raise LorebookFormatError(f"this Character Card {version} has no character_book (no lorebook)")
        if not isinstance(book, dict):
            raise LorebookFormatError(f"the card's character_book must be an object, found {_json_type(book)}")
        fmt = "ccv2" if spec == "chara_card_v2" else "ccv3"
        return _import_card_book(book, fmt, f"the character_book of a Character Card {version}")
    if spec == "lorebook_v3":
        if not isinstance(inner, dict):
            raise LorebookFormatError("a lorebook_v3 file needs a 'data' object")
        return _import_card_book(inner, "ccv3", "a lorebook_v3 file")
    raise LorebookFormatError(f"unknown spec {str(spec)[:40]!r} (expected chara_card_v2, chara_card_v3 or lorebook_v3)")


def _import_st(data: dict[str, Any], entries: dict[str, Any]) -> ImportedLorebook:
    if len(entries) > MAX_ENTRIES:
        raise LorebookFormatError(f"more than {MAX_ENTRIES} entries")
    converted = []
    for name, raw in entries.items():
        if not isinstance(raw, dict):
            raise LorebookFormatError(f"entry {str(name)[:40]!r} is not an object")
        converted.append(_from_st(raw, str(name)))
    rest = {key: value for key, value in data.items() if key != "entries"}
    book: dict[str, Any] = {"extensions": {"st": to_toml(rest)}} if rest else {}
    return ImportedLorebook("st", "SillyTavern World Info", book, converted)


def _import_card_book(data: dict[str, Any], fmt: str, source: str) -> ImportedLorebook:
    entries = data.get("entries")
    if entries is None:
        raise LorebookFormatError(f"{source} without 'entries'")
    if not isinstance(entries, list):
        raise LorebookFormatError(f"the 'entries' of {source} must be a list, found {_json_type(entries)}")
    if len(entries) > MAX_ENTRIES:
        raise LorebookFormatError(f"more than {MAX_ENTRIES} entries")
    converted = []
    for index, raw in enumerate(entries):
        if not isinstance(raw, dict):
            raise LorebookFormatError(f"entries[{index}] is not an object")
        converted.append(_from_card(raw, index))
    rest = {key: value for key, value in data.items() if key != "entries"}
    book: dict[str, Any] = {}
    for key in ("name", "description"):
        if isinstance(rest.get(key), str):
            book[key] = _clean(rest.pop(key))
    if _is_int(rest.get("scan_depth"), 0, MAX_SCAN_DEPTH):
        book["scan_depth"] = rest.pop("scan_depth")
    if _is_int(rest.get("token_budget"), 0, 10_000_000):
        book["token_budget"] = rest.pop("token_budget")
    if isinstance(rest.get("recursive_scanning"), bool):
        book["recursive_scanning"] = rest.pop("recursive_scanning")
    if rest:
        book["extensions"] = {"card": to_toml(rest)}
    return ImportedLorebook(fmt, source, book, converted)


def _from_st(raw: dict[str, Any], name: str) -> dict[str, Any]:
    where = f"entry {name[:40]!r}"
    rest = dict(raw)
    out: dict[str, Any] = {"title": _clean(rest.pop("comment")) if isinstance(raw.get("comment"), str) else ""}
    uid = raw.get("uid", _uid_from_name(name))
    if isinstance(uid, str) or _is_int(uid):
        out["id"] = _clean(uid) if isinstance(uid, str) else uid
        rest.pop("uid", None)
    out["keys"] = _strings(rest.pop("key", []), f"{where}: 'key'")
    secondary = _strings(raw.get("keysecondary", []), f"{where}: 'keysecondary'")
    if raw.get("selective") is not False or not secondary:  # unselective entries ignore their secondary keys
        rest.pop("keysecondary", None)
        if secondary:
            out["secondary_keys"] = secondary
    if raw.get("selectiveLogic") in ST_LOGIC and not isinstance(raw.get("selectiveLogic"), bool):
        logic = ST_LOGIC[rest.pop("selectiveLogic")]
        if logic != "and_any":
            out["logic"] = logic
    _take_bool(rest, "constant", out, "constant")
    if isinstance(raw.get("disable"), bool):
        out["enabled"] = not rest.pop("disable")
    if _is_int(raw.get("order")):
        out["priority"] = rest.pop("order")
    for theirs, ours in (("caseSensitive", "case_sensitive"), ("matchWholeWords", "whole_words")):
        _take_bool(rest, theirs, out, ours)
    if _is_int(raw.get("scanDepth"), 0, MAX_SCAN_DEPTH):
        out["scan_depth"] = rest.pop("scanDepth")
    _take_activation(rest, out, "st")
    content = rest.pop("content", "")
    # What SillyTavern writes for every entry (its template) comes back from ST_DEFAULTS on export.
    rest = {key: value for key, value in rest.items() if not _same(value, ST_DEFAULTS.get(key, _ABSENT))}
    return _finish(out, content, where, "st", rest)


def _from_card(raw: dict[str, Any], index: int) -> dict[str, Any]:
    where = f"entries[{index}]"
    rest = dict(raw)
    extensions = dict(raw["extensions"]) if isinstance(raw.get("extensions"), dict) else None
    if isinstance(raw.get("comment"), str):
        title = _clean(rest.pop("comment"))
    else:
        title = _clean(raw["name"]) if isinstance(raw.get("name"), str) else ""  # the name stays, as it was
    out: dict[str, Any] = {"title": title}
    if isinstance(raw.get("id"), str) or _is_int(raw.get("id")):
        out["id"] = _clean(rest.pop("id")) if isinstance(raw["id"], str) else rest.pop("id")
    out["keys"] = _strings(rest.pop("keys", []), f"{where}: 'keys'")
    secondary = _strings(raw.get("secondary_keys", []), f"{where}: 'secondary_keys'")
    if raw.get("selective") is True or not secondary:  # unselective entries ignore their secondary keys
        rest.pop("secondary_keys", None)
        if secondary:
            out["secondary_keys"] = secondary
    _take_bool(rest, "constant", out, "constant")
    _take_bool(rest, "enabled", out, "enabled")
    order = raw.get("insertion_order")
    if _is_int(order) or (isinstance(order, float) and order.is_integer() and abs(order) < 2**63):
        out["priority"] = int(rest.pop("insertion_order"))
    if not _take_bool(rest, "case_sensitive", out, "case_sensitive") and extensions is not None:
        _take_bool(extensions, "case_sensitive", out, "case_sensitive")
    if extensions is not None:
        _take_bool(extensions, "match_whole_words", out, "whole_words")
        if _is_int(extensions.get("scan_depth"), 0, MAX_SCAN_DEPTH):
            out["scan_depth"] = extensions.pop("scan_depth")
        code = extensions.get("selectiveLogic")
        if code in ST_LOGIC and not isinstance(code, bool):
            extensions.pop("selectiveLogic")
            if ST_LOGIC[code] != "and_any":
                out["logic"] = ST_LOGIC[code]
        _take_activation(extensions, out, "card")
        rest["extensions"] = extensions
    return _finish(out, rest.pop("content", ""), where, "card", rest)


def _finish(out: dict[str, Any], content: Any, where: str, space: str, rest: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(content, str):
        raise LorebookFormatError(f"{where}: 'content' must be a string, found {_json_type(content)}")
    decorators, body = split_decorators(_clean(content))
    out["content"] = body
    if out.get("constant") is False:  # the schema's defaults go without saying
        del out["constant"]
    if out.get("enabled") is True:
        del out["enabled"]
    if out.get("priority") == DEFAULT_PRIORITY:
        del out["priority"]
    extensions: dict[str, Any] = {}
    if decorators:
        extensions["decorators"] = decorators
    extensions[space] = to_toml(rest)  # even empty: it says where the entry came from
    out["extensions"] = extensions
    return out


_ABSENT = object()


def _same(value: Any, default: Any) -> bool:
    """Equal and of the same JSON type (0 is not false, 100.0 is not 100)."""
    return type(value) is type(default) and value == default


def _take_bool(source: dict[str, Any], theirs: str, out: dict[str, Any], ours: str) -> bool:
    if isinstance(source.get(theirs), bool):
        out[ours] = source.pop(theirs)
        return True
    return False


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise LorebookFormatError(f"{where} must be a list of strings")
    return [_clean(item) for item in value]


def _is_int(value: Any, low: int = -(2**63), high: int = 2**63 - 1) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _uid_from_name(name: str) -> int | str:
    return int(name) if name.isdigit() and len(name) < 18 else name


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number")


def split_decorators(content: str) -> tuple[list[str], str]:
    """V3 decorators: the `@@` lines at the top of content, and the content after them.

    join_decorators() puts them back exactly (a trailing empty line is kept with the decorators).
    """
    lines = content.split("\n")
    count = 0
    while count < len(lines) and lines[count].startswith("@@"):
        count += 1
    if count == 0:
        return [], content
    body = "\n".join(lines[count:])
    if body == "":
        return lines, ""
    return lines[:count], body


def join_decorators(decorators: list[str], content: str) -> str:
    if not decorators:
        return content
    return "\n".join(decorators) if content == "" else "\n".join([*decorators, content])


# -- writing -------------------------------------------------------------------------------------------
def export_lorebook(data: Mapping[str, Any], fmt: str) -> dict[str, Any]:
    """lorebook.toml (as parsed by tomllib, already validated) in the format `fmt` (st, ccv2 or ccv3)."""
    if fmt not in FORMATS:
        raise LorebookFormatError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    entries = [entry for entry in data.get("entries", []) if isinstance(entry, Mapping)]
    extensions = data.get("extensions") if isinstance(data.get("extensions"), Mapping) else {}
    assert isinstance(extensions, Mapping)
    if fmt == "st":
        book = _mapping(from_toml(extensions.get("st")))
        book["entries"] = _st_entries(entries)
        return book
    card = _mapping(from_toml(extensions.get("card")))
    for key in ("name", "description", "scan_depth", "token_budget", "recursive_scanning"):
        if key in data:
            card[key] = data[key]
    card.setdefault("extensions", {})
    card["entries"] = [_card_entry(entry, fmt) for entry in entries]
    if fmt == "ccv3":
        return {"spec": "lorebook_v3", "data": card}
    return card


def export_text(data: Mapping[str, Any], fmt: str) -> str:
    return json.dumps(export_lorebook(data, fmt), ensure_ascii=False, indent=4, allow_nan=True) + "\n"


@dataclass(frozen=True, slots=True)
class _Ours:
    """An entry's own fields as lorebook.toml holds them, with the schema's defaults."""

    title: str
    id: int | str | None
    keys: list[str]
    secondary_keys: list[str]
    logic: str
    content: str
    priority: int
    constant: bool
    enabled: bool
    case_sensitive: bool | None
    whole_words: bool | None
    scan_depth: int | None
    st: dict[str, Any] | None  # the World Info fields kept aside, when the entry came from World Info
    card: dict[str, Any] | None  # the card entry's fields kept aside, when it came from a card
    activation: dict[str, Any]  # the ACTIVATION_FIELDS the entry sets

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> _Ours:
        extensions = entry.get("extensions") if isinstance(entry.get("extensions"), Mapping) else {}
        assert isinstance(extensions, Mapping)
        decorators = extensions.get("decorators")
        if not isinstance(decorators, list) or not all(isinstance(line, str) for line in decorators):
            decorators = []
        return cls(
            title=entry.get("title", ""),
            id=entry.get("id"),
            keys=list(entry.get("keys", [])),
            secondary_keys=list(entry.get("secondary_keys", [])),
            logic=entry.get("logic", "and_any"),
            content=join_decorators(decorators, entry.get("content", "")),
            priority=entry.get("priority", DEFAULT_PRIORITY),
            constant=entry.get("constant", False),
            enabled=entry.get("enabled", True),
            case_sensitive=entry.get("case_sensitive"),
            whole_words=entry.get("whole_words"),
            scan_depth=entry.get("scan_depth"),
            st=_mapping(from_toml(extensions["st"])) if isinstance(extensions.get("st"), Mapping) else None,
            card=_mapping(from_toml(extensions["card"])) if isinstance(extensions.get("card"), Mapping) else None,
            activation={name: entry[name] for name, *_rest in ACTIVATION_FIELDS if name in entry},
        )


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _st_entries(entries: list[Mapping[str, Any]]) -> dict[str, Any]:
    ours = [_Ours.of(entry) for entry in entries]
    wanted = [_wanted_uid(o.id) for o in ours]
    taken = {uid for uid in wanted if uid is not None}
    used: set[int] = set()
    fresh = 0
    result: dict[str, Any] = {}
    for index, (entry, uid) in enumerate(zip(ours, wanted, strict=True)):
        if uid is None or uid in used:
            while fresh in taken or fresh in used:
                fresh += 1
            uid = fresh
        used.add(uid)
        result[str(uid)] = _st_entry(entry, uid, index)
    return result


def _wanted_uid(ident: int | str | None) -> int | None:
    """World Info keys entries by a whole-number uid: an id that is one (or spells one) is kept."""
    if _is_int(ident):
        assert isinstance(ident, int)
        return ident
    if isinstance(ident, str) and ident.isdigit() and len(ident) < 18:
        return int(ident)
    return None


def _st_entry(ours: _Ours, uid: int, index: int) -> dict[str, Any]:
    out = {"uid": uid, **ST_DEFAULTS, "displayIndex": index}
    kept = ours.st or {}
    if ours.st is None and ours.card is not None:
        out.update(_card_to_st(ours.card))
    out.update(kept)
    out["uid"] = uid
    out["key"] = ours.keys
    if ours.secondary_keys:
        out["keysecondary"] = ours.secondary_keys
        out["selective"] = True
    _put(out, "comment", ours.title, "", kept)
    out["content"] = ours.content
    _put(out, "constant", ours.constant, False, kept)
    _put(out, "disable", not ours.enabled, False, kept)
    if "order" not in kept or ours.priority != DEFAULT_PRIORITY:
        out["order"] = ours.priority
    if "selectiveLogic" not in kept or ours.logic != "and_any":
        out["selectiveLogic"] = LOGIC_ST[ours.logic]
    for theirs, value in (
        ("caseSensitive", ours.case_sensitive),
        ("matchWholeWords", ours.whole_words),
        ("scanDepth", ours.scan_depth),
    ):
        if value is not None:
            out[theirs] = value
    _put_activation(ours.activation, out, "st")
    return out


def _card_entry(entry: Mapping[str, Any], fmt: str) -> dict[str, Any]:
    ours = _Ours.of(entry)
    out: dict[str, Any] = {"position": "before_char", "selective": bool(ours.secondary_keys), "secondary_keys": []}
    kept = ours.card or {}
    if ours.card is None and ours.st is not None:
        out.update(_st_to_card({**ST_DEFAULTS, **ours.st}))
    out.update(kept)
    extensions = _mapping(out.get("extensions"))
    if ours.id is not None:
        out["id"] = ours.id
    out["keys"] = ours.keys
    if ours.secondary_keys:
        out["secondary_keys"] = ours.secondary_keys
        out["selective"] = True
    _put(out, "comment", ours.title, "", kept)
    out["content"] = ours.content
    _put(out, "constant", ours.constant, False, kept)
    _put(out, "enabled", ours.enabled, True, kept)
    if "insertion_order" not in kept or ours.priority != DEFAULT_PRIORITY:
        out["insertion_order"] = ours.priority
    if fmt == "ccv3" and "use_regex" not in out:
        out["use_regex"] = any(split_regex_key(key) is not None for key in ours.keys)
    if "selectiveLogic" not in extensions or ours.logic != "and_any":
        extensions["selectiveLogic"] = LOGIC_ST[ours.logic]
    if ours.case_sensitive is not None:
        out["case_sensitive"] = extensions["case_sensitive"] = ours.case_sensitive
    if ours.whole_words is not None:
        extensions["match_whole_words"] = ours.whole_words
    if ours.scan_depth is not None:
        extensions["scan_depth"] = ours.scan_depth
    _put_activation(ours.activation, extensions, "card")
    out["extensions"] = extensions
    return out


def _put(out: dict[str, Any], name: str, value: Any, default: Any, kept: dict[str, Any]) -> None:
    """Write a mapped field, unless the original's value could not be mapped (it was kept aside) and ours
    is still the default it gave way to."""
    if name not in kept or value != default:
        out[name] = value


def _card_to_st(card: dict[str, Any]) -> dict[str, Any]:
    """A card entry's foreign fields under their World Info names (as SillyTavern imports a card)."""
    extensions = _mapping(card.get("extensions"))
    out: dict[str, Any] = {}
    for theirs, name in ST_CARD_NAMES.items():
        if name in extensions:
            out[theirs] = extensions.pop(name)
    if "position" not in out and card.get("position") in ("before_char", "after_char"):
        out["position"] = 0 if card["position"] == "before_char" else 1
    if "selective" in card:
        out["selective"] = card["selective"]
    if "secondary_keys" in card:
        out["keysecondary"] = card["secondary_keys"]
    if extensions:
        out["extensions"] = extensions
    return out


def _st_to_card(st: dict[str, Any]) -> dict[str, Any]:
    """A World Info entry's foreign fields under their card names (as SillyTavern exports a card)."""
    extensions = _mapping(st.get("extensions"))
    for theirs, name in ST_CARD_NAMES.items():
        if theirs in st:
            extensions[name] = st[theirs]
    out: dict[str, Any] = {"extensions": extensions}
    position = st.get("position")
    if _is_int(position):
        out["position"] = "before_char" if position == 0 else "after_char"
    if "selective" in st:
        out["selective"] = st["selective"]
    if "keysecondary" in st:
        out["secondary_keys"] = st["keysecondary"]
    return out


# -- files ---------------------------------------------------------------------------------------------
def export_file(lorebook: Path, target: Path, fmt: str) -> int:
    """Write lorebook.toml to `target` in `fmt` (atomically); returns how many entries were written."""
    text = read_lorebook_text(lorebook)
    book = parse_lorebook(text, lorebook)  # a LorebookError names the line; nothing is written
    payload = export_text(tomllib.loads(text), fmt)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as tmp:
                tmp.write(payload)
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise LorebookFormatError(f"{target}: cannot be written: {exc.strerror or exc}") from None
    return len(book.entries)


__all__ = [
    "FORMATS",
    "JSON_MARKER",
    "ST_CARD_NAMES",
    "ST_DEFAULTS",
    "ImportedLorebook",
    "LorebookFormatError",
    "export_file",
    "export_lorebook",
    "export_text",
    "from_toml",
    "import_lorebook",
    "import_text",
    "join_decorators",
    "read_lorebook_file",
    "split_decorators",
    "to_toml",
]
