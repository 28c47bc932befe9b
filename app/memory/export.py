"""Export and import of a whole memory as versioned JSON lines.

Line 1 is a header {"format": "familiar-memory", "version": 2}; every other line is one record with
a "kind": turn, deleted_source, fact (both time axes, status log, sources), tombstone (a hash, never
text, and the id of the key it was hashed with), tombstone_key (only when asked for), or lore (the
lorebook, which the runtime adds and reads back itself). Import goes into an empty familiar, keeping
ids, so every `as_of` answer is reproduced. Version 1 files (every tombstone hashed with the file's
tombstone_key, which they always carry) are read too.

The tombstone key travels only when asked for (`include_key`): whoever holds a file with both the
hashes and the key can test guesses of a forgotten text. Without it, an import makes the tombstones
block with a key this machine already holds (the familiar's own, another familiar's: see
tombstone_keys.adoptable) when their key id names one, and keeps the rest as foreign tombstones,
listed but unable to block (app.memory.tombstone_keys).

Import is strict: every line is checked against the schema of its kind (no unknown kinds or fields,
types, enums, ranges, lengths, timezone-aware times, canonical keys, scopes, no lone surrogates)
before anything is written, then everything is written in one transaction. A bad line is reported
as `line N (kind): field 'name': what is wrong` and changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiosqlite

from app.memory.errors import StoreError
from app.memory.facts import FactError, NewFact, is_canonical_key, validate
from app.memory.policy import FACT_TYPES, STATUSES, dedup_key, scope_reaches, valid_place, visible_scopes
from app.memory.store import MAX_CONTENT_CHARS, Store
from app.memory.tombstone_keys import StoreMetaKeys, TombstoneKeys, adoptable, key_id

FORMAT = "familiar-memory"
VERSION = 2
VERSIONS = (1, 2)  # what import reads
UNKNOWN_KEY = "unknown"  # tombstones.key_id of a tombstone whose key is not even named

_TURN = (
    "id, platform, place, guild_id, channel_id, message_id, author_key, author_name, content, mode, created_at,"
    " revision, redacted, reply_to, superseded, origin_id"
)
_FACT = (
    "id, content, dedup_key, type, importance, confidence, subjects, sources, speaker, scope, status, revision, origin,"
    " created_at, superseded_at, superseded_by, valid_from, valid_to, snoozed_until"
)
_TABLES: dict[str, tuple[str, str]] = {
    "turn": ("turns", _TURN),
    "deleted_source": ("deleted_sources", "platform, message_id, deleted_at"),
    "fact": ("facts", _FACT),
    "tombstone": ("tombstones", "id, hash, reason, created_at, lifted_at, key_id"),
}


def _names(columns: str) -> list[str]:
    return [c.strip() for c in columns.split(",")]


async def export_records(
    store: Store, batch: int = 5000, *, keys: TombstoneKeys | None = None, include_key: bool = True
) -> AsyncIterator[dict[str, Any]]:
    """Every record of the memory, header first, in an order import can replay. The tombstone key
    (from `keys`, by default the database's own store_meta) is written only with `include_key`."""
    yield {"kind": "header", "format": FORMAT, "version": VERSION}
    key = await (keys if keys is not None else StoreMetaKeys()).current(store)
    own_id = key_id(key) if key is not None else None
    if include_key and key is not None:
        yield {"kind": "tombstone_key", "value": key.hex()}
    for kind, (table, columns) in _TABLES.items():
        names = _names(columns)
        order = "rowid"
        last = -1
        while True:
            rows = await store.read_all(
                f"SELECT rowid, {columns} FROM {table} WHERE rowid > ? ORDER BY {order} LIMIT ?", (last, batch)
            )
            if not rows:
                break
            for row in rows:
                last = int(row[0])
                record: dict[str, Any] = {"kind": kind, **dict(zip(names, row[1:], strict=True))}
                if kind == "tombstone":
                    named = record["key_id"]
                    record["key_id"] = own_id if named is None else None if named == UNKNOWN_KEY else named
                elif kind == "fact":
                    record["subjects"] = json.loads(record["subjects"])
                    record["sources"] = json.loads(record["sources"])
                    log = await store.read_all(
                        "SELECT status, at FROM fact_status_log WHERE fact_id = ? ORDER BY rowid", (record["id"],)
                    )
                    record["status_log"] = [{"status": s, "at": a} for s, a in log]
                yield record


# -- import: every line is checked against its kind's schema before anything is written ------------

_MAX_INT = 2**63 - 1  # SQLite's INTEGER
_MAX_NAME_CHARS = 200  # the store keeps this much of a display name
_MAX_REASON_CHARS = 200  # FactBook.forget keeps this much of a tombstone's reason
_MAX_LORE_CHARS = 8 * 1024 * 1024  # lorebook.toml is at most 8 MiB (app.lore.book)
_MAX_TIME_CHARS = 64
_PLATFORMS = ("discord", "local")
_LORE_FILES = ("lorebook.toml",)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX16 = re.compile(r"[0-9a-f]{16}")
_DEDUP_KEY = re.compile(r"[0-9a-f]{64}|forgotten:[0-9]{1,19}")
_MODE = re.compile(r"[a-z][a-z0-9_]{0,31}")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]{1,40}")
_MAYBE_SURROGATE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_TIME_EXAMPLE = "2024-05-01T12:00:00+00:00"
_PLACES = "dm:<user id>, guild:<guild id>, guild:<guild id>/<channel id> or local"
_SCOPES = "dm:<user id>, guild:<guild id>, guild:<guild id>/<channel id>, local, familiar or quarantine"
_HEADER = json.dumps({"kind": "header", "format": FORMAT, "version": VERSION})
# facts.validate() names NewFact's fields; a fact record calls two of them differently.
_FACT_PROBLEM = re.compile(r"fact field '(?P<name>[a-z_]+)': (?P<problem>.*)", re.DOTALL)
_RECORD_FIELD = {"place": "scope", "source_turn_ids": "sources"}
_CHUNK = 500


class _RecordError(Exception):
    """What is wrong with one record; `path` names the field (e.g. status_log[0].at) when there is one."""

    def __init__(self, problem: str, path: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.path = path

    def inside(self, prefix: str) -> _RecordError:
        return _RecordError(self.problem, prefix + self.path)


Check = Callable[[Any], Any]  # returns the value to store (times normalized to UTC), or raises _RecordError


@dataclass(frozen=True, slots=True)
class _Field:
    check: Check
    nullable: bool = False


def _show(value: Any, limit: int = 60) -> str:
    """A value for an error message: quoted, escaped (lone surrogates included) and cut short."""
    if isinstance(value, str):
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    text = json.dumps(value, ensure_ascii=True) if isinstance(value, dict | list) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _name(key: str) -> str:
    return key if _PLAIN_NAME.fullmatch(key) else json.dumps(key[:40], ensure_ascii=True)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _whole(low: int, high: int = _MAX_INT) -> Check:
    span = f"from {low} to {high}" if high < _MAX_INT else f"of at least {low}"

    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _RecordError(f"{_show(value)} is not a whole number {span}")
        return value

    return check


def _integer(value: Any) -> int:
    """Any whole number SQLite can hold (the range is a rule of the field, checked by facts.validate)."""
    if isinstance(value, bool) or not isinstance(value, int) or not -_MAX_INT - 1 <= value <= _MAX_INT:
        raise _RecordError(f"{_show(value)} is not a whole number")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _RecordError(f"{_show(value)} is not a number")
    return float(value)


def _text(max_chars: int, pattern: re.Pattern[str] | None = None, what: str = "") -> Check:
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise _RecordError(f"{_show(value)} is not text")
        if len(value) > max_chars:
            raise _RecordError(f"is too long ({len(value)} characters, at most {max_chars})")
        if pattern is not None and not pattern.fullmatch(value):
            raise _RecordError(f"{_show(value)} is not {what}")
        return value

    return check


def _choice(options: Sequence[str]) -> Check:
    allowed = options[0] if len(options) == 1 else "one of " + ", ".join(options)

    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in options:
            raise _RecordError(f"{_show(value)} is not {allowed}")
        return value

    return check


def _time(value: Any) -> str:
    """A timezone-aware ISO-8601 time, stored the way the store writes times (UTC, isoformat): as-of
    reads compare them as text."""
    problem = _RecordError(f"{_show(value)} is not a time (ISO-8601 with a time zone, like {_TIME_EXAMPLE})")
    if not isinstance(value, str) or len(value) > _MAX_TIME_CHARS:
        raise problem
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise problem from None
    if moment.utcoffset() is None:
        raise _RecordError(f"{_show(value)} has no time zone (write it like {_TIME_EXAMPLE})")
    try:
        return moment.astimezone(UTC).isoformat()
    except OverflowError:
        raise _RecordError(f"{_show(value)} is out of range") from None


def _key(value: Any) -> str:
    if not is_canonical_key(value):
        raise _RecordError(f"{_show(value)} is not a canonical key like discord:1234 or familiar:self")
    return value


def _is_place(value: str) -> bool:
    return valid_place(value) and not value.endswith("\n")  # the place pattern's `$` allows one


def _scope(value: Any) -> str:
    if isinstance(value, str) and (value == "quarantine" or _is_place(value)):
        return value
    raise _RecordError(f"{_show(value)} is not a scope ({_SCOPES})")


def _place(value: Any) -> str:
    """Where a turn was said: a place recall can be asked about (the familiar's own scope is not one)."""
    if isinstance(value, str) and _is_place(value):
        try:
            visible_scopes(value)
        except ValueError:
            pass
        else:
            return value
    raise _RecordError(f"{_show(value)} is not a place ({_PLACES})")


def _flag(value: Any) -> int:
    if isinstance(value, bool) or value not in (0, 1):
        raise _RecordError(f"{_show(value)} is not 0 or 1")
    return int(value)


def _version(value: Any) -> int:
    if isinstance(value, bool) or value not in VERSIONS:
        readable = " and ".join(str(v) for v in VERSIONS)
        raise _RecordError(f"{_show(value)} is not supported (this Familiar reads versions {readable})")
    return int(value)


def _list(item: Check, *, unique: bool = True, at_least: int = 0) -> Check:
    def check(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise _RecordError(f"{_show(value)} is not a list")
        if len(value) < at_least:
            raise _RecordError(f"must hold at least {at_least} entr{'y' if at_least == 1 else 'ies'}")
        out: list[Any] = []
        for index, entry in enumerate(value):
            try:
                out.append(item(entry))
            except _RecordError as exc:
                raise exc.inside(f"[{index}]") from None
        if unique and len(set(out)) != len(out):
            repeated = next(v for v in out if out.count(v) > 1)
            raise _RecordError(f"lists {_show(repeated)} twice")
        return out

    return check


def _object(schema: dict[str, _Field]) -> Check:
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _RecordError(f"{_show(value)} is not an object with {', '.join(schema)}")
        try:
            return _fields(value, schema, "an entry")
        except _RecordError as exc:
            raise exc.inside(".") from None

    return check


def _fields(record: dict[str, Any], schema: dict[str, _Field], what: str) -> dict[str, Any]:
    """The checked values of `record`, in the schema's order: no unknown, missing or invalid field."""
    for key in record:
        if key not in schema and not (key == "kind" and what.endswith("record")):
            raise _RecordError(f"unknown field ({what} has {', '.join(schema)})", _name(key))
    out: dict[str, Any] = {}
    for name, spec in schema.items():
        if name not in record:
            raise _RecordError("required, but missing", name)
        value = record[name]
        if value is None:
            if not spec.nullable:
                raise _RecordError("must not be null", name)
            out[name] = None
            continue
        try:
            out[name] = spec.check(value)
        except _RecordError as exc:
            raise exc.inside(name) from None
    return out


_LOG_ENTRY: dict[str, _Field] = {"status": _Field(_choice(STATUSES)), "at": _Field(_time)}

# One schema per kind the exporter writes (the lore record is written by the runtime's export).
_SCHEMAS: dict[str, dict[str, _Field]] = {
    "header": {"format": _Field(_choice((FORMAT,))), "version": _Field(_version)},
    "tombstone_key": {
        "value": _Field(_text(64, _HEX64, "a key of 32 bytes (64 lowercase hex digits)")),
    },
    "turn": {
        "id": _Field(_whole(1)),
        "platform": _Field(_choice(_PLATFORMS)),
        "place": _Field(_place),
        "guild_id": _Field(_whole(1), nullable=True),
        "channel_id": _Field(_whole(0)),
        "message_id": _Field(_whole(1), nullable=True),
        "author_key": _Field(_key),
        "author_name": _Field(_text(_MAX_NAME_CHARS)),
        "content": _Field(_text(MAX_CONTENT_CHARS)),
        "mode": _Field(_text(32, _MODE, "a mode (a lowercase word, such as text)")),
        "created_at": _Field(_time),
        "revision": _Field(_whole(0)),
        "redacted": _Field(_flag),
        "reply_to": _Field(_whole(1), nullable=True),
        "superseded": _Field(_flag),
        "origin_id": _Field(_whole(1), nullable=True),
    },
    "deleted_source": {
        "platform": _Field(_choice(_PLATFORMS)),
        "message_id": _Field(_whole(1)),
        "deleted_at": _Field(_time),
    },
    "fact": {
        "id": _Field(_whole(1)),
        "content": _Field(_text(_MAX_INT)),  # length and emptiness: facts.validate (or forgotten: empty)
        "dedup_key": _Field(_text(74, _DEDUP_KEY, "a dedup key (64 lowercase hex digits, or forgotten:<id>)")),
        "type": _Field(_choice(FACT_TYPES)),
        "importance": _Field(_integer),
        "confidence": _Field(_number),
        "subjects": _Field(_list(_key)),
        "sources": _Field(_list(_whole(1))),
        "speaker": _Field(_key, nullable=True),
        "scope": _Field(_scope),
        "status": _Field(_choice(STATUSES)),
        "revision": _Field(_whole(0)),
        "origin": _Field(_text(32)),  # the allowed origins: facts.validate
        "created_at": _Field(_time),
        "superseded_at": _Field(_time, nullable=True),
        "superseded_by": _Field(_whole(1), nullable=True),
        "valid_from": _Field(_time, nullable=True),
        "valid_to": _Field(_time, nullable=True),
        "snoozed_until": _Field(_time, nullable=True),
        "status_log": _Field(_list(_object(_LOG_ENTRY), unique=False, at_least=1)),
    },
    "tombstone": {
        "id": _Field(_whole(1)),
        "hash": _Field(_text(64, _HEX64, "a tombstone hash (64 lowercase hex digits)")),
        "reason": _Field(_text(_MAX_REASON_CHARS)),
        "created_at": _Field(_time),
        "lifted_at": _Field(_time, nullable=True),
        # the id of the key it was hashed with (tombstone_keys.key_id); null: not known
        "key_id": _Field(_text(16, _HEX16, "a key id (16 lowercase hex digits)"), nullable=True),
    },
    "lore": {"file": _Field(_choice(_LORE_FILES)), "text": _Field(_text(_MAX_LORE_CHARS))},
}
_KINDS = ", ".join(k for k in _SCHEMAS if k != "header")
# Version 1 tombstones name no key: each was hashed with the file's tombstone_key.
_V1_TOMBSTONE = {name: spec for name, spec in _SCHEMAS["tombstone"].items() if name != "key_id"}


def _check_turn(values: dict[str, Any]) -> None:
    if values["redacted"] and values["content"]:
        raise _RecordError("a redacted turn keeps no text (it must be empty)", "content")
    if values["origin_id"] is not None and values["origin_id"] >= values["id"]:
        raise _RecordError(f"{values['origin_id']} is not an earlier turn (the message's first revision)", "origin_id")


def _check_fact(values: dict[str, Any]) -> None:
    """The fact rules of facts.validate, plus what a stored row adds (forgotten rows, supersede links)."""
    forgotten = values["status"] == "forgotten"
    if forgotten:
        for name, empty in (("content", ""), ("subjects", []), ("speaker", None)):
            if values[name] != empty:
                raise _RecordError(
                    f"a forgotten fact keeps no text, subjects or speaker (must be {json.dumps(empty)})", name
                )
        if values["dedup_key"] != f"forgotten:{values['id']}":
            raise _RecordError(f"a forgotten fact's dedup key is forgotten:{values['id']}", "dedup_key")
    elif values["dedup_key"].startswith("forgotten:"):
        raise _RecordError(f"{_show(values['dedup_key'])} is only the dedup key of a forgotten fact", "dedup_key")

    def moment(name: str) -> datetime | None:
        text = values[name]
        return None if text is None else datetime.fromisoformat(text)

    try:
        validate(
            NewFact(
                content="(forgotten)" if forgotten else values["content"],
                type=values["type"],
                importance=values["importance"],
                confidence=values["confidence"],
                subjects=tuple(values["subjects"]),
                place="local" if values["scope"] == "quarantine" else values["scope"],
                speaker=values["speaker"],
                source_turn_ids=tuple(values["sources"]),
                valid_from=moment("valid_from"),
                valid_to=moment("valid_to"),
                origin=values["origin"],
            )
        )
    except FactError as exc:
        found = _FACT_PROBLEM.fullmatch(str(exc))
        if found is None:
            raise _RecordError(str(exc)) from None
        raise _RecordError(found["problem"], _RECORD_FIELD.get(found["name"], found["name"])) from None
    if values["superseded_by"] is not None:
        if values["superseded_by"] == values["id"]:
            raise _RecordError("a fact cannot supersede itself", "superseded_by")
        if values["superseded_at"] is None:
            raise _RecordError("must not be null when superseded_by is set", "superseded_at")


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RecordError("appears twice in the record", _name(key))
        out[key] = value
    return out


def _parse(text: str) -> dict[str, Any]:
    try:
        record = json.loads(text, object_pairs_hook=_no_repeats)
    except json.JSONDecodeError as exc:
        raise _RecordError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise _RecordError("not JSON this Familiar reads (nested too deeply)") from None
    if not isinstance(record, dict):
        raise _RecordError(f"not a record (a JSON object with a 'kind') but {_show(record)}")
    return record


def _lone_surrogate(record: dict[str, Any]) -> str | None:
    """The path of a string (or field name) holding a lone surrogate, which SQLite and tantivy refuse."""
    stack: list[tuple[str, Any]] = [("", record)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if not _encodable(value):
                return path
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, dict):
            for key, item in value.items():
                name = f"{path}.{_name(key)}" if path else _name(key)
                if not _encodable(key):
                    return name
                stack.append((name, item))
    return None


@dataclass(slots=True)
class _Plan:
    """A checked file, ready to write: rows per table kind with their line numbers."""

    rows: dict[str, list[tuple[int, tuple[Any, ...]]]] = field(default_factory=lambda: {k: [] for k in _TABLES})
    status_log: list[tuple[int, str, str]] = field(default_factory=list)
    key: bytes | None = None
    version: int = VERSION
    counts: dict[str, int] = field(default_factory=dict)
    lore: str | None = None  # the lorebook's text, for the caller to write


def _message(line: int, kind: str | None, problem: _RecordError) -> str:
    where = f"line {line}" + (f" ({kind})" if kind else "")
    what = f"field '{problem.path}': {problem.problem}" if problem.path else problem.problem
    return f"{where}: {what}; nothing was imported"


def _plan(lines: Iterable[str]) -> _Plan:
    """Check every line (and what lines say about each other) before anything is written."""
    plan = _Plan()
    header_seen = False
    seen: dict[tuple[Any, ...], int] = {}  # a unique key of a row -> the line that holds it
    single: dict[str, int] = {}  # tombstone_key and lore: at most one each
    supersedes: dict[int, tuple[int, int]] = {}  # fact id -> (its line, the fact superseding it)
    first_tombstone: int | None = None
    turn_places: dict[int, str] = {}  # turn id -> place
    live_turns: dict[tuple[str, int], int] = {}  # (platform, message id) of a turn still holding text -> line
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        label: str | None = None
        try:
            record = _parse(text)
            kind = record.get("kind")
            if not header_seen:
                if kind != "header":
                    raise _RecordError(f"not a Familiar memory export (the first line must be the header {_HEADER})")
            elif not isinstance(kind, str) or kind not in _SCHEMAS or kind == "header":
                if "kind" not in record:
                    raise _RecordError("required, but missing (every record names its kind)", "kind")
                if kind == "header":
                    raise _RecordError("a second header (only the first line is the header)", "kind")
                raise _RecordError(f"{_show(kind)} is not a kind of record this Familiar exports ({_KINDS})", "kind")
            label = kind
            if (not _encodable(text) or _MAYBE_SURROGATE.search(text)) and (path := _lone_surrogate(record)):
                raise _RecordError("contains invalid UTF-8 (a lone surrogate)", path)
            schema = _V1_TOMBSTONE if kind == "tombstone" and plan.version == 1 else _SCHEMAS[kind]
            values = _fields(record, schema, f"a {kind} record")
            if kind == "header":
                header_seen = True
                plan.version = values["version"]
                continue
            if kind in ("tombstone_key", "lore"):
                if kind in single:
                    raise _RecordError(f"a second {kind} record (the first is on line {single[kind]})", "kind")
                single[kind] = number
            unique: tuple[Any, ...] | None = None
            if kind == "turn":
                _check_turn(values)
                turn_places[values["id"]] = values["place"]
                if values["message_id"] is not None and not values["redacted"]:
                    live_turns.setdefault((values["platform"], values["message_id"]), number)
                if values["message_id"] is not None:
                    revision = (kind, values["platform"], values["message_id"], values["revision"])
                    if revision in seen:
                        raise _RecordError(
                            f"this revision of message {values['message_id']} is also on line {seen[revision]}",
                            "revision",
                        )
                    seen[revision] = number
                unique = (kind, values["id"])
            elif kind == "deleted_source":
                unique = (kind, values["platform"], values["message_id"])
            elif kind == "fact":
                _check_fact(values)
                unique = (kind, values["id"])
                if values["superseded_by"] is not None:
                    supersedes[values["id"]] = (number, values["superseded_by"])
            elif kind == "tombstone":
                unique = (kind, values["id"])
                first_tombstone = first_tombstone or number
            if unique is not None:
                if unique in seen:
                    name = "message_id" if kind == "deleted_source" else "id"
                    raise _RecordError(f"{_show(values[name])} is already used on line {seen[unique]}", name)
                seen[unique] = number
        except _RecordError as exc:
            raise StoreError(_message(number, label, exc)) from None
        counted = "skipped:lore" if kind == "lore" else kind  # the caller writes the lorebook itself
        plan.counts[counted] = plan.counts.get(counted, 0) + 1
        if kind == "tombstone_key":
            plan.key = bytes.fromhex(values["value"])
        elif kind == "lore":
            plan.lore = values["text"]
        elif kind == "fact":
            values["subjects"] = json.dumps(values["subjects"])
            values["sources"] = json.dumps(values["sources"])
            plan.status_log.extend((values["id"], e["status"], e["at"]) for e in values["status_log"])
        elif kind == "tombstone" and plan.version == 1:
            values["key_id"] = None  # the file's key: set once it is known
        if kind in _TABLES:
            plan.rows[kind].append((number, tuple(values[n] for n in _names(_TABLES[kind][1]))))
    if not header_seen:
        raise StoreError("the file is empty; nothing was imported")
    _check_links(supersedes, {k[1] for k in seen if k[0] == "fact"})
    for key, line in seen.items():  # a deleted message's text must not come back with an import
        if key[0] == "deleted_source" and (turn_line := live_turns.get((key[1], key[2]))) is not None:
            problem = _RecordError(f"message {key[2]} was deleted (line {line}) but this turn still holds its text")
            raise StoreError(_message(turn_line, "turn", problem.inside("redacted")))
    plan.rows["fact"] = [(line, _quarantined_if_unsure(row, turn_places)) for line, row in plan.rows["fact"]]
    if plan.version == 1:
        # Every version 1 tombstone was hashed with the file's key.
        named = key_id(plan.key) if plan.key is not None else None
        plan.rows["tombstone"] = [(line, (*row[:-1], named)) for line, row in plan.rows["tombstone"]]
    if first_tombstone is not None and plan.key is None and plan.version == 1:
        raise StoreError(
            _message(
                first_tombstone,
                "tombstone",
                _RecordError("can never match: the file has no tombstone_key record to hash with", "hash"),
            )
        )
    return plan


_FACT_COLUMNS = _names(_FACT)


def _quarantined_if_unsure(row: tuple[Any, ...], turn_places: dict[int, str]) -> tuple[Any, ...]:
    """The store's rule on import too: a fact whose source turns were said somewhere its scope does not
    reach (another server, a DM) cannot say who may hear it, so it is kept but never recalled."""
    values = dict(zip(_FACT_COLUMNS, row, strict=True))
    scope = str(values["scope"])
    places = [turn_places[t] for t in json.loads(values["sources"]) if t in turn_places]
    if scope == "quarantine" or values["status"] == "forgotten" or all(scope_reaches(scope, p) for p in places):
        return row
    subjects = tuple(json.loads(values["subjects"]))
    values["scope"] = "quarantine"
    values["dedup_key"] = dedup_key(str(values["content"]), (*subjects, "@scope=quarantine"))
    return tuple(values[c] for c in _FACT_COLUMNS)


def _check_links(supersedes: dict[int, tuple[int, int]], fact_ids: set[int]) -> None:
    """Every superseded_by names a fact of the file, and no supersede chain comes back to itself."""
    for line, newer in supersedes.values():
        if newer not in fact_ids:
            raise StoreError(
                _message(line, "fact", _RecordError(f"there is no fact {newer} in the file", "superseded_by"))
            )
    done: set[int] = set()
    for start in supersedes:
        path: list[int] = []
        current: int | None = start
        while current is not None and current not in done:
            if current in path:
                line = supersedes[current][0]
                loop = " -> ".join(str(i) for i in [*path[path.index(current) :], current])
                raise StoreError(
                    _message(line, "fact", _RecordError(f"the supersede chain loops ({loop})", "superseded_by"))
                )
            path.append(current)
            current = supersedes[current][1] if current in supersedes else None
        done.update(path)


async def _write(conn: aiosqlite.Connection, kind: str, rows: list[tuple[int, tuple[Any, ...]]]) -> None:
    table, columns = _TABLES[kind]
    marks = ",".join("?" * len(_names(columns)))
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        try:
            await conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", [v for _n, v in chunk])
        except sqlite3.Error as exc:  # checked before: only a conflict with the database itself is left
            raise StoreError(
                f"lines {chunk[0][0]}-{chunk[-1][0]} ({kind}): the database refused a record ({exc});"
                " nothing was imported"
            ) from exc


_HAS_DATA = "SELECT EXISTS (SELECT 1 FROM turns) OR EXISTS (SELECT 1 FROM facts)"
_NOT_EMPTY = "import needs an empty familiar (this one already has turns or facts); nothing was changed"


@dataclass(frozen=True, slots=True)
class ImportMarker:
    """The last import, as recorded in the import's own transaction (store_meta key `import`).

    `pending` means the database holds the import but the lorebook write and the index catch-up that
    follow may not have happened (the process died right after the commit): whoever opens the
    familiar next finishes them (app.runtime.api.memory_ops) and marks it done, dropping the lorebook
    text. `fingerprint` is the store as the import left it, so a re-run of the same file can tell
    whether the familiar is still exactly that import.
    """

    sha256: str  # of the file's bytes
    file: str  # its name, for messages
    counts: dict[str, int]  # what the import command reports (lore: 1 when the file has a lorebook)
    lore: str | None
    state: str  # "pending" or "done"
    fingerprint: str
    at: str


_MARKER_KEY = "import"
# Changes with any turn added or redacted, any fact added or changed (every change bumps a revision),
# any tombstone added or lifted.
_FINGERPRINT = (
    "SELECT (SELECT COUNT(*) || ':' || COALESCE(MAX(id), 0) || ':' || COALESCE(SUM(redacted), 0) FROM turns)"
    " || '/' || (SELECT COUNT(*) || ':' || COALESCE(MAX(id), 0) || ':' || COALESCE(SUM(revision), 0) FROM facts)"
    " || '/' || (SELECT COUNT(*) || ':' || COUNT(lifted_at) FROM tombstones)"
)


def _marker_json(marker: ImportMarker) -> str:
    return json.dumps(
        {
            "sha256": marker.sha256,
            "file": marker.file,
            "counts": marker.counts,
            "lore": marker.lore,
            "state": marker.state,
            "fingerprint": marker.fingerprint,
            "at": marker.at,
        },
        ensure_ascii=False,
    )


async def import_marker(store: Store) -> ImportMarker | None:
    """The last import's marker, or None when this familiar never imported (or the row is unreadable)."""
    row = await store.read_one("SELECT value FROM store_meta WHERE key = ?", (_MARKER_KEY,))
    if row is None:
        return None
    try:
        raw = row[0].decode("utf-8") if isinstance(row[0], bytes) else str(row[0])
        data = json.loads(raw)
        return ImportMarker(
            sha256=str(data["sha256"]),
            file=str(data["file"]),
            counts={str(k): int(v) for k, v in data["counts"].items()},
            lore=None if data["lore"] is None else str(data["lore"]),
            state=str(data["state"]),
            fingerprint=str(data["fingerprint"]),
            at=str(data["at"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StoreError(f"the record of the last import in {store.path} is damaged ({exc})") from exc


async def mark_import_done(store: Store, marker: ImportMarker) -> None:
    """The lorebook is written and the indexes told: the import is whole. The lorebook text is dropped."""
    done = ImportMarker(marker.sha256, marker.file, marker.counts, None, "done", marker.fingerprint, marker.at)
    await store.write(
        [
            (
                "UPDATE store_meta SET value = ? WHERE key = ?"
                " AND json_extract(value, '$.sha256') = ? AND json_extract(value, '$.at') = ?",
                (_marker_json(done), _MARKER_KEY, marker.sha256, marker.at),
            )
        ]
    )


async def unchanged_since(store: Store, marker: ImportMarker) -> bool:
    """Whether the store still holds exactly what that import wrote (nothing added or changed since)."""
    row = await store.read_one(_FINGERPRINT)
    return row is not None and str(row[0]) == marker.fingerprint


async def import_records(
    store: Store,
    lines: Iterable[str],
    *,
    sha256: str = "",
    file: str = "",
    keys: TombstoneKeys | None = None,
    local_keys: Sequence[bytes] = (),
) -> dict[str, int]:
    """Replay exported records into an empty store. Returns counts per kind (lore, which the caller
    writes itself, as `skipped:lore`); `import_marker` reads the marker written with them.

    The tombstones block with the file's tombstone key when it carries one (it becomes this store's
    key, kept by `keys`: by default the database's own store_meta); without it, with the key among
    this store's own and `local_keys` (other familiars' keys on this machine) that made most of them.
    The others are kept as foreign tombstones (app.memory.tombstone_keys), which cannot block.

    The whole file is checked first (each line against its kind's schema, then the links between
    lines); only then is it written, in one transaction, with a `pending` ImportMarker holding the
    lorebook text, so a process killed after the commit leaves what is needed to finish. Any problem
    raises StoreError naming the line, the kind and the field, and nothing is changed.
    """
    row = await store.read_one(_HAS_DATA)
    if row is not None and row[0]:
        raise StoreError(_NOT_EMPTY)
    plan = await asyncio.to_thread(_plan, list(lines))
    reported = {k: v for k, v in plan.counts.items() if k != "skipped:lore"}
    if plan.lore is not None:
        reported["lore"] = 1
    keys = keys if keys is not None else StoreMetaKeys()
    current = await keys.current(store)
    stones = plan.rows["tombstone"]
    chosen = adoptable(plan.key, [k for k in (current, *local_keys) if k is not None], (r[-1] for _n, r in stones))
    hashing = chosen if chosen is not None else current  # the key this store hashes with after the import
    own = key_id(hashing) if hashing is not None else None
    # NULL: hashed with this store's key (it blocks); otherwise the id of the key it needs (foreign).
    plan.rows["tombstone"] = [
        (line, (*row[:-1], None if own is not None and row[-1] == own else row[-1] or UNKNOWN_KEY))
        for line, row in stones
    ]
    adopting = chosen is not None and chosen != current
    if adopting:
        assert chosen is not None
        await keys.stage(chosen)
    committed = False
    try:
        async with store.transaction() as conn:
            async with conn.execute(_HAS_DATA) as cursor:
                found = await cursor.fetchone()
            if found is not None and found[0]:
                raise StoreError(_NOT_EMPTY)
            # A fact may point at a later fact (superseded_by): references are checked at commit.
            await conn.execute("PRAGMA defer_foreign_keys = ON")
            if adopting:
                assert chosen is not None
                await keys.record(conn, chosen)
            for kind in _TABLES:
                await _write(conn, kind, plan.rows[kind])
            # The insert trigger logged each fact's current status; the exported log replaces that
            # (the familiar had no facts before), so as-of reads see the real history.
            await conn.execute("DELETE FROM fact_status_log")
            await conn.executemany(
                "INSERT INTO fact_status_log (fact_id, status, at) VALUES (?, ?, ?)", plan.status_log
            )
            async with conn.execute(_FINGERPRINT) as cursor:
                printed = await cursor.fetchone()
            marker = ImportMarker(
                sha256=sha256,
                file=file,
                counts=reported,
                lore=plan.lore,
                state="pending",
                fingerprint=str(printed[0]) if printed else "",
                at=datetime.now(UTC).isoformat(),
            )
            await conn.execute(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", (_MARKER_KEY, _marker_json(marker))
            )
        committed = True
    except sqlite3.Error as exc:  # the commit itself (a deferred reference) was refused
        raise StoreError(f"the database refused the import ({exc}); nothing was imported") from exc
    finally:
        if adopting:
            await keys.settle(chosen, committed)
    return plan.counts
