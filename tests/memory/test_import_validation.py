"""`familiar import` is strict and all-or-nothing.

Every bad line is refused with its line number, its kind and the field, and the familiar is left
exactly as it was (every table compared through a full dump) and still takes a good file. A real
export (turns with revisions and deletions, facts in every status, supersede chains, tombstones,
lore) still imports and reproduces every as-of answer. Real SQLite and tantivy files under tmp_path.
"""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from app.memory.errors import StoreError
from app.memory.export import _SCHEMAS, _TABLES, export_records, import_records
from app.memory.facts import Fact, NewFact
from app.memory.history import History
from app.memory.policy import dedup_key
from tests.memory.helpers import PLACE, T0, turn

pytestmark = pytest.mark.asyncio

ALICE = "discord:7001"
BOB = "discord:7002"
OWNER = "local:owner"
FLUSH = 15.0


def at(hours: float = 0) -> str:
    return (T0 + timedelta(hours=hours)).isoformat()


# -- a small valid export, written by hand: one record of every kind ---------------------------------
HEADER = {"kind": "header", "format": "familiar-memory", "version": 1}
KEY = {"kind": "tombstone_key", "value": "ab" * 32}
TURN = {
    "kind": "turn", "id": 1, "platform": "discord", "place": PLACE, "guild_id": 500, "channel_id": 501,
    "message_id": 9001, "author_key": ALICE, "author_name": "alice", "content": "I moved to Lisbon",
    "mode": "text", "created_at": at(0), "revision": 0, "redacted": 0, "reply_to": None, "superseded": 0,
    "origin_id": None,
}  # fmt: skip
DELETED = {"kind": "deleted_source", "platform": "discord", "message_id": 9002, "deleted_at": at(1)}
FACT = {
    "kind": "fact", "id": 1, "content": "Alice lives in Lisbon",
    "dedup_key": dedup_key("Alice lives in Lisbon", (ALICE, f"@scope={PLACE}")), "type": "semantic",
    "importance": 7, "confidence": 1.0, "subjects": [ALICE], "sources": [1], "speaker": OWNER, "scope": PLACE,
    "status": "active", "revision": 0, "origin": "remember", "created_at": at(2), "superseded_at": None,
    "superseded_by": None, "valid_from": None, "valid_to": None, "snoozed_until": None,
    "status_log": [{"status": "active", "at": at(2)}],
}  # fmt: skip
TOMBSTONE = {
    "kind": "tombstone", "id": 1, "hash": "cd" * 32, "reason": "forgotten by the owner", "created_at": at(3),
    "lifted_at": None,
}  # fmt: skip
LORE = {"kind": "lore", "file": "lorebook.toml", "text": '[[entries]]\nkeys = ["lisbon"]\ncontent = "A city."\n'}
GOOD = [HEADER, KEY, TURN, DELETED, FACT, TOMBSTONE, LORE]
# 0-based positions in GOOD (the line number is one more)
I_HEADER, I_KEY, I_TURN, I_DELETED, I_FACT, I_TOMBSTONE, I_LORE = range(7)

Edit = Callable[[list[Any]], None]


def text_of(records: list[Any]) -> list[str]:
    return [r if isinstance(r, str) else json.dumps(r) for r in records]


def put(index: int, **changes: Any) -> Edit:
    def edit(records: list[Any]) -> None:
        records[index] = {**records[index], **changes}

    return edit


def drop(index: int, name: str) -> Edit:
    def edit(records: list[Any]) -> None:
        records[index] = {k: v for k, v in records[index].items() if k != name}

    return edit


def replace(index: int, raw: Any) -> Edit:
    def edit(records: list[Any]) -> None:
        records[index] = raw

    return edit


def remove(index: int) -> Edit:
    def edit(records: list[Any]) -> None:
        del records[index]

    return edit


def append(item: Any) -> Edit:
    def edit(records: list[Any]) -> None:
        records.append(item)

    return edit


def both(*edits: Edit) -> Edit:
    def edit(records: list[Any]) -> None:
        for each in edits:
            each(records)

    return edit


def raw_with_repeat(record: dict[str, Any], name: str, value: Any) -> str:
    """A record whose JSON names one field twice (json.dumps cannot write that)."""
    return json.dumps(record)[:-1] + f", {json.dumps(name)}: {json.dumps(value)}}}"


FACT_2 = {
    **FACT,
    "id": 2,
    "content": "Alice lives in Porto",
    "dedup_key": dedup_key("Alice lives in Porto", (ALICE, f"@scope={PLACE}")),
}


@dataclass(frozen=True)
class Bad:
    name: str
    edit: Edit
    line: int
    kind: str | None  # the kind the message names, when the line got that far
    field: str | None  # the field the message names
    says: str  # and what it says is wrong


BAD = [
    # the audit's cases
    Bad("unknown field", put(I_FACT, colour="blue"), 5, "fact", "colour", "unknown field"),
    Bad(
        "a deleted message's text",
        put(I_DELETED, message_id=9001),  # the turn of message 9001 still holds its text
        3,
        "turn",
        "redacted",
        "message 9001 was deleted (line 4) but this turn still holds its text",
    ),
    Bad("unknown kind", append({"kind": "gossip", "text": "psst"}), 8, None, "kind", "'gossip' is not a kind"),
    Bad(
        "scope everywhere",
        put(I_FACT, scope="everywhere"),
        5,
        "fact",
        "scope",
        "'everywhere' is not a scope (dm:<user id>, guild:<guild id>, guild:<guild id>/<channel id>",
    ),
    Bad("subject not a key", put(I_FACT, subjects=["Alice"]), 5, "fact", "subjects[0]", "'Alice' is not a canonical"),
    Bad("5 MB of content", put(I_FACT, content="x" * 5_000_000), 5, "fact", "content", "too long (5000000 char"),
    Bad("created_at yesterday", put(I_FACT, created_at="yesterday"), 5, "fact", "created_at", "'yesterday' is not"),
    Bad("origin whatever", put(I_FACT, origin="whatever"), 5, "fact", "origin", "'whatever' is not one of"),
    Bad(
        "status log zzz",
        put(I_FACT, status_log=[{"status": "zzz", "at": at(2)}]),
        5,
        "fact",
        "status_log[0].status",
        "'zzz' is not one of",
    ),
    # numbers, enums and ranges
    Bad("fact status zzz", put(I_FACT, status="zzz"), 5, "fact", "status", "'zzz' is not one of"),
    Bad("negative fact id", put(I_FACT, id=-1), 5, "fact", "id", "-1 is not a whole number"),
    Bad("id beyond SQLite", put(I_FACT, id=2**64), 5, "fact", "id", "is not a whole number"),
    Bad("importance 11", put(I_FACT, importance=11), 5, "fact", "importance", "11 is not a whole number from 1 to 10"),
    Bad("importance 5.0", put(I_FACT, importance=5.0), 5, "fact", "importance", "5.0 is not a whole number"),
    Bad("confidence 1.5", put(I_FACT, confidence=1.5), 5, "fact", "confidence", "1.5 is not a number from 0 to 1"),
    Bad("confidence NaN", put(I_FACT, confidence=float("nan")), 5, "fact", "confidence", "nan is not a number"),
    Bad("type opinion", put(I_FACT, type="opinion"), 5, "fact", "type", "'opinion' is not one of"),
    Bad(
        "valid_to before valid_from",
        put(I_FACT, valid_from=at(5), valid_to=at(4)),
        5,
        "fact",
        "valid_to",
        "must be after valid_from",
    ),
    Bad("speaker not a key", put(I_FACT, speaker="Owner"), 5, "fact", "speaker", "'Owner' is not a canonical key"),
    Bad("sources not ids", put(I_FACT, sources=["1"]), 5, "fact", "sources[0]", "'1' is not a whole number"),
    Bad("subjects repeated", put(I_FACT, subjects=[ALICE, ALICE]), 5, "fact", "subjects", "twice"),
    Bad("empty status log", put(I_FACT, status_log=[]), 5, "fact", "status_log", "at least 1 entry"),
    Bad(
        "status log with extra field",
        put(I_FACT, status_log=[{"status": "active", "at": at(2), "by": "me"}]),
        5,
        "fact",
        "status_log[0].by",
        "unknown field",
    ),
    Bad("content null", put(I_FACT, content=None), 5, "fact", "content", "must not be null"),
    Bad("content blank", put(I_FACT, content="   "), 5, "fact", "content", "non-empty"),
    Bad("missing field", drop(I_FACT, "scope"), 5, "fact", "scope", "missing"),
    Bad("scope with a newline", put(I_FACT, scope="local\n"), 5, "fact", "scope", "is not a scope"),
    Bad("scope with a leading zero", put(I_FACT, scope="dm:07001"), 5, "fact", "scope", "is not a scope"),
    Bad("key with a newline", put(I_FACT, subjects=[ALICE + "\n"]), 5, "fact", "subjects[0]", "canonical key"),
    Bad(
        "forgotten fact with text",
        put(I_FACT, status="forgotten"),
        5,
        "fact",
        "content",
        "a forgotten fact keeps no text",
    ),
    Bad("active fact with a forgotten key", put(I_FACT, dedup_key="forgotten:1"), 5, "fact", "dedup_key", "forgotten"),
    Bad("dedup key not hex", put(I_FACT, dedup_key="abc"), 5, "fact", "dedup_key", "'abc' is not a dedup key"),
    # times
    Bad("naive time", put(I_TURN, created_at="2024-05-01T12:00:00"), 3, "turn", "created_at", "has no time zone"),
    Bad("time with a tail", put(I_FACT, created_at=at(2) + " or so"), 5, "fact", "created_at", "is not a time"),
    Bad("time a number", put(I_FACT, created_at=1714564800), 5, "fact", "created_at", "is not a time"),
    Bad("time out of range", put(I_FACT, created_at="9999-12-31T23:59:59-23:59"), 5, "fact", "created_at", "range"),
    Bad(
        "status log time",
        put(I_FACT, status_log=[{"status": "active", "at": "soon"}]),
        5,
        "fact",
        "status_log[0].at",
        "'soon' is not a time",
    ),
    Bad("tombstone lifted_at", put(I_TOMBSTONE, lifted_at="later"), 6, "tombstone", "lifted_at", "is not a time"),
    # links between lines
    Bad(
        "superseded by a missing fact",
        put(I_FACT, superseded_by=99, superseded_at=at(3)),
        5,
        "fact",
        "superseded_by",
        "there is no fact 99",
    ),
    Bad("superseding itself", put(I_FACT, superseded_by=1, superseded_at=at(3)), 5, "fact", "superseded_by", "itself"),
    Bad(
        "superseded_by without superseded_at",
        both(put(I_FACT, superseded_by=2), append(FACT_2)),
        5,
        "fact",
        "superseded_at",
        "must not be null when superseded_by is set",
    ),
    Bad(
        "supersede loop",
        both(
            put(I_FACT, superseded_by=2, superseded_at=at(3)),
            append({**FACT_2, "superseded_by": 1, "superseded_at": at(4)}),
        ),
        5,
        "fact",
        "superseded_by",
        "loops (1 -> 2 -> 1)",
    ),
    Bad("fact id used twice", append(FACT_2 | {"id": 1}), 8, "fact", "id", "1 is already used on line 5"),
    Bad("deletion listed twice", append(DELETED), 8, "deleted_source", "message_id", "already used on line 4"),
    Bad("turn revision twice", append(TURN | {"id": 2}), 8, "turn", "revision", "also on line 3"),
    Bad("tombstones without the key", remove(I_KEY), 5, "tombstone", "hash", "no tombstone_key"),
    Bad("second tombstone key", append(KEY), 8, "tombstone_key", "kind", "a second tombstone_key"),
    Bad("second lore", append(LORE), 8, "lore", "kind", "a second lore record"),
    Bad("second header", append(HEADER), 8, None, "kind", "a second header"),
    # turns
    Bad("turn channel_id text", put(I_TURN, channel_id="501"), 3, "turn", "channel_id", "'501' is not a whole number"),
    Bad("turn revision true", put(I_TURN, revision=True), 3, "turn", "revision", "True is not a whole number"),
    Bad("turn author not a key", put(I_TURN, author_key="Alice"), 3, "turn", "author_key", "canonical key"),
    Bad("turn place everywhere", put(I_TURN, place="everywhere"), 3, "turn", "place", "'everywhere' is not a place"),
    Bad("turn at the familiar's scope", put(I_TURN, place="familiar"), 3, "turn", "place", "is not a place"),
    Bad("turn place fullwidth id", put(I_TURN, place="guild:５00/501"), 3, "turn", "place", "is not a place"),
    Bad("turn place leading zero", put(I_TURN, place="guild:0500/501"), 3, "turn", "place", "is not a place"),
    Bad("turn platform irc", put(I_TURN, platform="irc"), 3, "turn", "platform", "'irc' is not one of"),
    Bad("turn redacted 2", put(I_TURN, redacted=2), 3, "turn", "redacted", "2 is not 0 or 1"),
    Bad("redacted turn with text", put(I_TURN, redacted=1), 3, "turn", "content", "a redacted turn keeps no text"),
    Bad("turn content too long", put(I_TURN, content="y" * 100_001), 3, "turn", "content", "too long (100001"),
    Bad("turn mode", put(I_TURN, mode="Shouting!"), 3, "turn", "mode", "is not a mode"),
    Bad("turn origin later", put(I_TURN, origin_id=5), 3, "turn", "origin_id", "not an earlier turn"),
    Bad("turn name too long", put(I_TURN, author_name="n" * 201), 3, "turn", "author_name", "too long"),
    # surrogates
    Bad("lone surrogate", put(I_TURN, content="bad \ud800 text"), 3, "turn", "content", "lone surrogate"),
    Bad("lone surrogate in a fact", put(I_FACT, content="bad \udc00"), 5, "fact", "content", "lone surrogate"),
    Bad("lone surrogate in a list", put(I_FACT, subjects=["\ud83d"]), 5, "fact", "subjects[0]", "lone surrogate"),
    Bad("lone surrogate in a name", put(I_TURN, **{"\ud800": 1}), 3, "turn", '"\\ud800"', "lone surrogate"),
    # tombstones, deletions, the key, lore
    Bad(
        "tombstone with content",
        put(I_TOMBSTONE, content="Alice's code is 1234"),
        6,
        "tombstone",
        "content",
        "unknown field",
    ),
    Bad(
        "tombstone hash not hex", put(I_TOMBSTONE, hash="not-a-hash"), 6, "tombstone", "hash", "is not a tombstone hash"
    ),
    Bad("tombstone reason too long", put(I_TOMBSTONE, reason="r" * 201), 6, "tombstone", "reason", "too long"),
    Bad("tombstone key not hex", put(I_KEY, value="zz"), 2, "tombstone_key", "value", "'zz' is not a key of 32 bytes"),
    Bad("deletion message id 0", put(I_DELETED, message_id=0), 4, "deleted_source", "message_id", "0 is not a whole"),
    Bad("lore elsewhere", put(I_LORE, file="../evil.toml"), 7, "lore", "file", "is not lorebook.toml"),
    Bad("lore not text", put(I_LORE, text=["a"]), 7, "lore", "text", "is not text"),
    # the shape of a line
    Bad("not a JSON object", replace(I_FACT, "[1, 2, 3]"), 5, None, None, "not a record"),
    Bad("not JSON", replace(I_FACT, "{kind: fact}"), 5, None, None, "not JSON"),
    Bad("field named twice", replace(I_TOMBSTONE, raw_with_repeat(TOMBSTONE, "id", 2)), 6, None, "id", "twice"),
    Bad("no kind", drop(I_TURN, "kind"), 3, None, "kind", "missing"),
    Bad("kind not text", put(I_TURN, kind=5), 3, None, "kind", "5 is not a kind"),
    # the header
    Bad("version 3", put(I_HEADER, version=3), 1, "header", "version", "3 is not supported"),
    Bad("version missing", drop(I_HEADER, "version"), 1, "header", "version", "missing"),
    Bad("version as text", put(I_HEADER, version="1"), 1, "header", "version", "'1' is not supported"),
    Bad("version true", put(I_HEADER, version=True), 1, "header", "version", "True is not supported"),
    Bad("another format", put(I_HEADER, format="other"), 1, "header", "format", "'other' is not familiar-memory"),
    Bad("header with extras", put(I_HEADER, exported_by="me"), 1, "header", "exported_by", "unknown field"),
    Bad("no header", remove(I_HEADER), 1, None, None, "not a Familiar memory export"),
]


def dump(db: Path) -> list[str]:
    """Every table's schema and rows, through a separate connection (what is committed)."""
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def open_history(root: Path) -> Any:
    return History.open(root / "history.db", root / "fts", root / "backups")


async def settled(history: History) -> None:
    """Wait until the indexes' first start has cleared its rebuilding flags (a write of its own, in
    the background, that a dump taken before it would see as a change)."""
    for _ in range(int(FLUSH / 0.02)):
        if await history.store.read_one("SELECT COALESCE(SUM(rebuilding), 0) FROM index_state") == (0,):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the indexes did not finish their first start")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty familiar whose indexes have finished their first start, copied for each test: a copy
    opens without writing anything, so a dump before and after an import sees only the import."""
    root = tmp_path_factory.mktemp("template")

    async def make() -> None:
        history = await open_history(root)
        try:
            await settled(history)
        finally:
            await history.close()

    asyncio.run(make())
    return root


@pytest_asyncio.fixture
async def target(template: Path, tmp_path: Path) -> AsyncIterator[History]:
    shutil.copytree(template, tmp_path / "target")
    opened = await open_history(tmp_path / "target")
    yield opened
    await opened.close()


async def test_the_hand_written_export_is_valid(target: History) -> None:
    counts = await import_records(target.store, text_of(GOOD))
    assert counts == {
        "tombstone_key": 1,
        "turn": 1,
        "deleted_source": 1,
        "fact": 1,
        "tombstone": 1,
        "skipped:lore": 1,
    }
    fact = await target.facts.get(1)
    assert fact is not None
    assert fact.content == "Alice lives in Lisbon"
    assert fact.source_turn_ids == (1,)


@pytest.mark.parametrize("bad", BAD, ids=[b.name for b in BAD])
async def test_a_bad_line_names_line_kind_and_field_and_changes_nothing(
    bad: Bad, target: History, tmp_path: Path
) -> None:
    records = copy.deepcopy(GOOD)
    bad.edit(records)
    db = tmp_path / "target" / "history.db"
    before = dump(db)

    with pytest.raises(StoreError) as refused:
        await import_records(target.store, text_of(records))

    message = str(refused.value)
    where = f"line {bad.line}" + (f" ({bad.kind})" if bad.kind else "")
    assert message.startswith(where + ": "), message
    if bad.field is not None:
        assert f"field '{bad.field}': " in message, message
    assert bad.says in message, message
    assert message.endswith("nothing was imported"), message
    assert "\n" not in message
    assert len(message) < 400  # no 5 MB echo of the bad value
    message.encode("utf-8")  # printable: a lone surrogate is escaped, never echoed
    assert dump(db) == before
    # still empty, and still takes a good file
    assert await target.store.read_one("SELECT COUNT(*) FROM turns") == (0,)
    assert await target.store.read_one("SELECT COUNT(*) FROM facts") == (0,)
    assert (await import_records(target.store, text_of(GOOD)))["fact"] == 1


async def test_bad_lines_after_good_ones_change_nothing_either(target: History, tmp_path: Path) -> None:
    """The whole file is checked before anything is written: many good lines, then one bad one."""
    records: list[Any] = [HEADER, KEY]
    records += [TURN | {"id": i, "message_id": 9000 + i} for i in range(1, 1201)]
    records += [FACT | {"id": i, "sources": [i]} for i in range(1, 601)]
    records.append(FACT | {"id": 601, "created_at": "yesterday"})
    db = tmp_path / "target" / "history.db"
    before = dump(db)
    with pytest.raises(StoreError, match=r"^line 1803 \(fact\): field 'created_at': 'yesterday' is not a time"):
        await import_records(target.store, text_of(records))
    assert dump(db) == before


async def test_an_empty_file_and_a_non_empty_familiar_are_refused(target: History, tmp_path: Path) -> None:
    db = tmp_path / "target" / "history.db"
    before = dump(db)
    with pytest.raises(StoreError, match="the file is empty"):
        await import_records(target.store, ["", "  "])
    assert dump(db) == before
    await import_records(target.store, text_of(GOOD))
    filled = dump(db)
    with pytest.raises(StoreError, match="needs an empty familiar"):
        await import_records(target.store, text_of(GOOD))
    assert dump(db) == filled


async def test_a_header_alone_imports_nothing(target: History) -> None:
    assert await import_records(target.store, [json.dumps(HEADER)]) == {}


async def test_times_with_an_offset_are_stored_in_utc_so_as_of_reads_compare_them(target: History) -> None:
    """As-of reads compare times as text: an offset written as +02:00 is stored as the store writes it."""
    fact = FACT | {
        "created_at": "2024-05-01T14:00:00+02:00",
        "valid_from": "2020-01-01T02:00:00+02:00",
        "valid_to": "2023-01-01T00:00:00Z",
        "status_log": [{"status": "active", "at": "2024-05-01T14:00:00+02:00"}],
    }
    await import_records(target.store, text_of([HEADER, fact]))
    row = await target.store.read_one("SELECT created_at, valid_from, valid_to FROM facts WHERE id = 1")
    assert row == ("2024-05-01T12:00:00+00:00", "2020-01-01T00:00:00+00:00", "2023-01-01T00:00:00+00:00")
    assert await target.store.read_one("SELECT at FROM fact_status_log WHERE fact_id = 1") == (at(0),)
    past = await target.facts.list_facts(world_at=datetime(2021, 6, 1, tzinfo=UTC), recorded_at=T0)
    assert [f.id for f in past] == [1]


async def test_the_schema_covers_exactly_what_the_exporter_writes() -> None:
    for kind, (_table, columns) in _TABLES.items():
        names = {c.strip() for c in columns.split(",")}
        extra = {"status_log"} if kind == "fact" else set()
        assert set(_SCHEMAS[kind]) == names | extra, kind
    assert set(_SCHEMAS) == {"header", "tombstone_key", "lore", *_TABLES}


# -- a real export round-trips -----------------------------------------------------------------------
def new_fact(content: str, **overrides: Any) -> NewFact:
    fields: dict[str, Any] = {
        "type": "semantic",
        "importance": 6,
        "confidence": 1.0,
        "subjects": (ALICE,),
        "place": PLACE,
        "speaker": OWNER,
        "origin": "remember",
        "channel_scoped": True,
    }
    fields.update(overrides)
    return NewFact(content=content, **fields)


def learnt(content: str, source: int, **overrides: Any) -> NewFact:
    """A fact as extraction (or dreaming) proposes it, from one turn."""
    fields: dict[str, Any] = {"origin": "extraction", "speaker": ALICE, "source_turn_ids": (source,)}
    fields.update(overrides)
    return new_fact(content, **fields)


async def inserted(history: History, new: NewFact, hours: float) -> Fact:
    outcome, _changes = await history.intake.insert(new, now=T0 + timedelta(hours=hours))
    assert outcome.outcome == "inserted", outcome
    assert outcome.fact is not None
    return outcome.fact


async def fill(history: History) -> None:
    """Turns with a revision and a deletion; facts in every status, with chains and tombstones."""
    ids = await history.append_turns(
        [
            turn("I moved to Lisbon", message_id=9001),
            turn("I drink green tea", message_id=9002, minutes=1),
            turn("my locker code is 1234", message_id=9003, minutes=2),
            turn("hello from the window", place="local", platform="local", minutes=3),
            turn("a secret for you", message_id=9004, place="dm:7001", minutes=4),
        ]
    )
    lisbon, tea, locker, _local, secret = ids
    h = T0 + timedelta(hours=1)
    await inserted(
        history,
        new_fact(
            "Alice lives in Lisbon",
            source_turn_ids=(lisbon,),
            valid_from=datetime(2020, 1, 1, tzinfo=UTC),
            valid_to=datetime(2023, 1, 1, tzinfo=UTC),
        ),
        1,
    )
    # extraction: one active (episodic, confident), one pending then rejected, one pending and snoozed
    await inserted(history, learnt("Alice drinks green tea", tea, type="episodic", confidence=0.9), 2)
    rejected = await inserted(history, learnt("Alice dislikes rain", lisbon, confidence=0.7), 2.5)
    await history.decisions.decide(rejected.id, rejected.revision, "reject", now=h + timedelta(hours=2))
    chess = learnt("Alice plays chess", lisbon, confidence=0.6, origin="dreaming", speaker=None, channel_scoped=False)
    snoozed = await inserted(history, chess, 3.5)
    await history.decisions.decide(
        snoozed.id, snoozed.revision, "snooze", until=T0 + timedelta(days=30), now=h + timedelta(hours=3)
    )
    archived = await inserted(history, new_fact("Alice had a cold", subjects=(ALICE, BOB)), 4)
    await history.decisions.decide(archived.id, archived.revision, "archive", now=T0 + timedelta(hours=5))
    # an owner's edit chain of three versions, and a projector's supersede
    first = await inserted(history, new_fact("Alice likes mint"), 6)
    second, _ = await history.corrections.edit(
        first.id, first.revision, "Alice likes basil", now=T0 + timedelta(hours=7)
    )
    await history.corrections.edit(second.id, second.revision, "Alice likes thyme", now=T0 + timedelta(hours=8))
    old = await inserted(history, new_fact("Alice works at the bakery"), 8.5)
    new = await inserted(history, new_fact("Alice works at the library"), 9)
    assert await history.corrections.supersede(old.id, new.id, now=T0 + timedelta(hours=9.5)) == "superseded"
    # a DM fact, forgotten (tombstone), and one forgotten then its tombstone lifted
    dm = await inserted(
        history, new_fact("Alice's locker code is 1234", place="dm:7001", source_turn_ids=(secret,)), 10
    )
    await history.erasure.forget(dm.id, now=T0 + timedelta(hours=11))
    cat = await inserted(history, new_fact("Bob owns a cat", subjects=(BOB,)), 11.5)
    receipt, _ = await history.erasure.forget(cat.id, now=T0 + timedelta(hours=12))
    await history.tombstones.lift(receipt.tombstone_id, now=T0 + timedelta(hours=12.5))
    # Discord: an edit retires what came from the old revision; a deletion forgets what came only from it
    await inserted(history, learnt("Alice's locker is number 12", locker, type="episodic", confidence=0.95), 13)
    await history.edit_message("discord", 9002, "I drink black tea", T0 + timedelta(hours=14))
    await history.redact_message("discord", 9003, T0 + timedelta(hours=15))
    await history.redact_message("discord", 8888, T0 + timedelta(hours=15))  # deleted before it was seen


async def exported(history: History) -> list[str]:
    return [json.dumps(r, ensure_ascii=False) async for r in export_records(history.store, batch=3)]


async def answers(history: History) -> list[Any]:
    """What the familiar answers about its facts: every as-of slice, chains, tombstones, turns."""
    out: list[Any] = []
    moments = [None, *(T0 + timedelta(hours=h) for h in range(0, 17))]
    for status in ("pending", "active", "rejected", "archived", "all"):
        out.append(await history.facts.list_facts(status=status))
        for recorded in moments[1:]:
            for world in (datetime(2021, 6, 1, tzinfo=UTC), recorded, None):
                out.append(await history.facts.list_facts(status=status, world_at=world, recorded_at=recorded))
    ids = [int(r[0]) for r in await history.store.read_all("SELECT id FROM facts ORDER BY id")]
    out.append([await history.facts.get(i) for i in ids])
    out.append([await history.facts.chain(i) for i in ids])
    out.append(await history.tombstones.fetch_all(include_lifted=True))
    out.append(await history.store.turns_by_ids(list(range(1, 20))))
    for place in (PLACE, "local", "dm:7001"):
        out.append(await history.recent_turns(place, 50))
    for table, order in (
        ("participants", "canonical_key"),
        ("deleted_sources", "platform, message_id"),
        ("fact_subjects", "fact_id, subject"),
        ("fact_sources", "fact_id, turn_id"),
        ("fact_status_log", "fact_id, rowid"),
        ("store_meta", "key"),
    ):
        # (the target's store_meta also records the import itself: app.memory.export.ImportMarker)
        where = " WHERE key != 'import'" if table == "store_meta" else ""
        out.append(await history.store.read_all(f"SELECT * FROM {table}{where} ORDER BY {order}"))
    return out


async def test_a_real_export_imports_and_reproduces_every_answer(tmp_path: Path) -> None:
    source = await open_history(tmp_path / "source")
    try:
        await fill(source)
        lines = await exported(source)
        lore = {"kind": "lore", "file": "lorebook.toml", "text": "# the lorebook\n"}
        lines.append(json.dumps(lore))
        expected = await answers(source)
        await source.catch_up(FLUSH)
        lisbon = [f.id for f, _s in await source.search_facts("Lisbon")]
    finally:
        await source.close()
    kinds = [json.loads(line)["kind"] for line in lines]
    assert {"turn", "deleted_source", "fact", "tombstone", "tombstone_key", "lore"} <= set(kinds)
    statuses = {json.loads(line)["status"] for line in lines if json.loads(line)["kind"] == "fact"}
    assert statuses == {"pending", "active", "rejected", "archived", "forgotten"}

    target = await open_history(tmp_path / "target")
    try:
        counts = await import_records(target.store, lines)
        assert counts == {("skipped:lore" if k == "lore" else k): kinds.count(k) for k in set(kinds) if k != "header"}
        assert await answers(target) == expected
        assert await exported(target) == lines[:-1]  # and it exports the same file again
        await target.catch_up(FLUSH)  # the tantivy indexes pick the imported rows up
        assert [f.id for f, _s in await target.search_facts("Lisbon")] == lisbon
        assert [h.turn.content for h in await target.search_turns("Lisbon")] == ["I moved to Lisbon"]
        # the tombstone came along: the forgotten text cannot be learnt again
        outcome = await target.insert_fact(new_fact("Alice's locker code is 1234", place="dm:7001"))
        assert outcome.outcome == "tombstoned"
    finally:
        await target.close()


async def test_line_separators_inside_a_message_survive_the_file_round_trip(tmp_path: Path) -> None:
    """The file is JSON lines ending in "\\n": U+2028, U+2029 and U+0085 inside a message are text, not ends."""
    from app.runtime.api.memory_ops import MemoryOps

    text = "first\u2028second\u2029third\u0085fourth"
    source = await History.open(tmp_path / "a.db", tmp_path / "a-fts", tmp_path / "backups")
    try:
        await source.append_turns([turn(text, message_id=1)])
        await MemoryOps(source, tmp_path / "a-lore.toml").export(tmp_path / "memory.jsonl")
    finally:
        await source.close()
    target = await History.open(tmp_path / "b.db", tmp_path / "b-fts", tmp_path / "backups")
    try:
        counts = await MemoryOps(target, tmp_path / "b-lore.toml").import_(tmp_path / "memory.jsonl")
        assert counts["turn"] == 1
        assert await target.store.read_all("SELECT content FROM turns") == [(text,)]
    finally:
        await target.close()


async def test_a_fact_whose_sources_were_said_elsewhere_is_imported_quarantined(target: History) -> None:
    """The insert's rule holds on import: a fact scoped to one server citing a DM cannot say who may hear it."""
    dm_turn = {**TURN, "id": 2, "place": "dm:7001", "guild_id": None, "channel_id": 0, "message_id": 9003}
    leaky = {**FACT, "sources": [1, 2]}
    await import_records(target.store, text_of([HEADER, KEY, TURN, dm_turn, DELETED, leaky]))
    fact = await target.facts.get(1)
    assert fact is not None
    assert fact.scope == "quarantine"
    await target.facts_index.flush(15)
    assert await target.recall("Lisbon", PLACE) == []
    assert await target.recall("Lisbon", "dm:7001") == []
