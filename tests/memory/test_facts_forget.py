"""Forgetting facts, and what Discord deletions and edits do to them.

Real SQLite and tantivy files under tmp_path. The erased text is looked for in the database's bytes,
in the indexes and in every table that could hold it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from app.memory.errors import RevisionConflictError
from app.memory.facts import Fact, FactError, NewFact
from app.memory.fts import IndexTiming
from app.memory.history import History
from app.memory.records import NewTurn
from app.memory.tombstones import TombstoneError
from tests.memory.helpers import PLACE, T0, turn

pytestmark = pytest.mark.asyncio

ALICE = "discord:7001"
BOB = "discord:7002"
CAROL = "discord:7003"
DANA = "discord:7004"
DM = "dm:7001"
FLUSH = 15.0


def new_fact(content: str, **overrides: Any) -> NewFact:
    fields: dict[str, Any] = {
        "type": "episodic",
        "importance": 5,
        "confidence": 0.9,
        "subjects": (ALICE,),
        "place": DM,
    }
    fields.update(overrides)
    return NewFact(content=content, **fields)


def paths(root: Path) -> tuple[Path, Path, Path]:
    return (root / "history.db", root / "fts", root / "backups")


@pytest_asyncio.fixture
async def history(tmp_path: Path) -> AsyncIterator[History]:
    opened = await History.open(*paths(tmp_path))
    yield opened
    await opened.close()


async def inserted(history: History, new: NewFact, now: datetime | None = None) -> Fact:
    outcome, _changes = await history.intake.insert(new, now=now)
    assert outcome.outcome == "inserted", outcome
    assert outcome.fact is not None
    return outcome.fact


async def fetch(history: History, fact_id: int) -> Fact:
    fact = await history.facts.get(fact_id)
    assert fact is not None
    return fact


async def fact_hits(history: History, query: str) -> list[int]:
    return sorted(f.id for f, _s in await history.search_facts(query, limit=100))


async def raw_index_ids(history: History, which: str, query: str) -> list[int]:
    committer = history.facts_index if which == "facts" else history.turns_index
    return sorted(i for i, _s in await committer.search(query, 100))


async def all_index_ids(history: History, which: str) -> set[int]:
    committer = history.facts_index if which == "facts" else history.turns_index
    return await asyncio.to_thread(committer.index.all_ids)


async def work(history: History) -> dict[int, tuple[int, str]]:
    rows = await history.store.read_all("SELECT id, turn_id, status FROM memory_work ORDER BY id")
    return {int(r[0]): (int(r[1]), str(r[2])) for r in rows}


async def queue_work(history: History, turn_id: int, status: str = "queued") -> None:
    await history.store.write(
        [
            (
                "INSERT INTO memory_work (kind, turn_id, status, created_at) VALUES ('extract', ?, ?, ?)",
                (turn_id, status, T0.isoformat()),
            )
        ]
    )


def database_bytes(root: Path) -> bytes:
    """history.db and any -wal / -shm beside it, as they are on disk."""
    files = [p for p in root.iterdir() if p.is_file() and p.name.startswith("history.db")]
    assert root / "history.db" in files
    return b"".join(p.read_bytes() for p in files)


# -- 6. forget ----------------------------------------------------------------------------------------

SECRET = "Alice keeps the spare key under the blue heron flowerpot"


async def test_forget_erases_the_text_everywhere_and_leaves_a_hash(tmp_path: Path) -> None:
    history = await History.open(*paths(tmp_path))
    try:
        # Builds of SQLite without SQLITE_SECURE_DELETE (python.org's Windows and macOS builds) leave
        # freed bytes in the file; this Linux build has it on by default, so turn it off to see them.
        async with history.store.transaction() as conn:
            await conn.execute("PRAGMA secure_delete = OFF")
        source = await history.append_turn(turn("we talked about the garden", message_id=1, place=PLACE))
        assert source is not None
        for i in range(25):
            await inserted(history, new_fact(f"filler fact {i} about lanterns and moths"))
        target = await inserted(history, new_fact(SECRET, source_turn_ids=(source.id,), speaker=ALICE))
        for i in range(25):
            await inserted(history, new_fact(f"more filler fact {i} about candles"))
        for fact_id in (target.id, 1):
            await history.store.write(
                [
                    (
                        "INSERT INTO fact_embeddings (fact_id, model, dim, vector, created_at)"
                        " VALUES (?, 'test-embed', 3, x'000102', ?)",
                        (fact_id, T0.isoformat()),
                    )
                ]
            )
        await history.facts_index.flush(FLUSH)
        assert await fact_hits(history, "flowerpot") == [target.id]

        receipt = await history.forget_fact(target.id, revision=target.revision)

        assert receipt.fact_ids == (target.id,)
        assert receipt.redacted_turn_ids == ()
        stores = dict(receipt.stores)
        assert stores["facts"] == 1
        assert stores["fts/facts"] == 1
        assert stores["fact_embeddings"] == 1
        assert "turns" not in stores
        # facts: the row is kept, the text is gone
        gone = await fetch(history, target.id)
        assert (gone.content, gone.status, gone.subjects, gone.speaker) == ("", "forgotten", (), None)
        assert gone.revision == target.revision + 1
        assert await history.store.read_all("SELECT * FROM fact_subjects WHERE fact_id = ?", (target.id,)) == []
        # the index (returned only once it no longer holds the text: no flush needed here)
        assert await fact_hits(history, "flowerpot") == []
        assert await raw_index_ids(history, "facts", "flowerpot") == []
        assert await raw_index_ids(history, "facts", "heron") == []
        assert target.id not in await all_index_ids(history, "facts")
        # embeddings: its own gone, others kept
        embeddings = await history.store.read_all("SELECT fact_id FROM fact_embeddings ORDER BY fact_id")
        assert embeddings == [(1,)]
        # the tombstone: a keyed hash, not the text
        (tombstone,) = await history.tombstones.fetch_all()
        assert tombstone.id == receipt.tombstone_id
        assert re.fullmatch(r"[0-9a-f]{64}", tombstone.hash)
        assert tombstone.lifted_at is None
        tombstone_row = await history.store.read_one("SELECT * FROM tombstones WHERE id = ?", (tombstone.id,))
        assert "flowerpot" not in repr(tombstone_row).lower()
        # reads never show it; the source turn was not asked to be redacted
        assert target.id not in {f.id for f in await history.facts.list_facts(status="all", limit=1000)}
        assert await history.recall("flowerpot", DM) == []
        (kept,) = await history.store.turns_by_ids([source.id])
        assert (kept.content, kept.redacted) == ("we talked about the garden", False)
        with pytest.raises(FactError, match="already forgotten"):
            await history.forget_fact(target.id)
    finally:
        await history.close()
    blob = database_bytes(tmp_path)
    assert b"filler fact 3 about lanterns" in blob  # the check can see text that is still there
    assert SECRET.encode() not in blob
    assert b"flowerpot" not in blob.lower()


async def test_forget_can_redact_the_source_turns(history: History) -> None:
    ids = await history.append_turns(
        [
            turn("Bob said his locker code is 4417", message_id=11),
            turn("and that it never changes", message_id=12),
            turn("unrelated lantern chatter", message_id=13),
        ]
    )
    fact = await inserted(
        history, new_fact("Bob's locker code is 4417", subjects=(BOB,), place=PLACE, source_turn_ids=(ids[1], ids[0]))
    )
    await history.turns_index.flush(FLUSH)
    await history.facts_index.flush(FLUSH)
    assert await raw_index_ids(history, "turns", "locker") == [ids[0]]
    assert await raw_index_ids(history, "turns", "changes") == [ids[1]]

    receipt = await history.forget_fact(fact.id, redact_sources=True)

    assert receipt.redacted_turn_ids == (ids[0], ids[1])
    stores = dict(receipt.stores)
    assert (stores["turns"], stores["fts/turns"], stores["facts"], stores["fts/facts"]) == (2, 2, 1, 1)
    redacted = await history.store.turns_by_ids(ids)
    assert [(t.content, t.redacted) for t in redacted] == [
        ("", True),
        ("", True),
        ("unrelated lantern chatter", False),
    ]
    # the turn index no longer finds them (checked at the index itself, not only through SQL)
    assert await raw_index_ids(history, "turns", "locker") == []
    assert await raw_index_ids(history, "turns", "changes") == []
    assert not {ids[0], ids[1]} & await all_index_ids(history, "turns")
    assert await history.search_turns("locker") == []
    assert [h.turn.id for h in await history.search_turns("lantern")] == [ids[2]]
    assert await fact_hits(history, "locker") == []
    # a backfill of the redacted messages is not refused by forget alone, but the text stays gone
    assert (await history.store.turns_by_ids([ids[0]]))[0].content == ""


def reply(content: str, *, message_id: int, reply_to: int | None, place: str = PLACE, minutes: float = 1) -> NewTurn:
    """A reply of the familiar, as the Discord adapter stores it once sent."""
    said = turn(content, message_id=message_id, place=place, minutes=minutes)
    return replace(said, author_key="familiar:self", author_name="Wisp", reply_to=reply_to)


async def test_redacting_the_sources_also_redacts_the_familiars_replies_that_quoted_them(tmp_path: Path) -> None:
    """Before, the familiar's own replies kept the redacted words in history.db and in search."""
    timing = IndexTiming(poll_interval=0.05, compact_after=0.2)
    history = await History.open(*paths(tmp_path), index_timing=timing)
    try:
        other_channel = "guild:500/777"
        ids = await history.append_turns(
            [
                turn("Bob said his locker code is 4417, keep it quiet", message_id=11),
                reply("Got it: code is 4417.", message_id=12, reply_to=11),  # the reply to it: two words do
                reply("Reminder, his locker code is 4417!", message_id=13, reply_to=None, minutes=5),
                reply("Lanterns are lit at dusk", message_id=14, reply_to=11, minutes=6),  # quotes nothing
                reply("Bob's locker code is 4417", message_id=15, reply_to=None, place=other_channel, minutes=7),
                reply("The locker code is 4417", message_id=16, reply_to=None, place="guild:600/601", minutes=8),
                turn("the locker code is 4417?", message_id=17, minutes=9),  # not the familiar: not a reply
            ]
        )
        source, direct, later, unrelated, elsewhere, other_server, by_alice = ids
        fact = await inserted(
            history, new_fact("Bob's locker code is 4417", subjects=(BOB,), place=PLACE, source_turn_ids=(source,))
        )
        await history.turns_index.flush(FLUSH)
        index = history.turns_index.index
        assert await asyncio.to_thread(index.doc_freq, "content", "4417") == 6

        receipt = await history.forget_fact(fact.id, redact_sources=True)

        assert receipt.redacted_turn_ids == (source,)
        assert receipt.redacted_reply_ids == (direct, later, elsewhere)
        stores = dict(receipt.stores)
        assert (stores["turns"], stores["turns (replies quoting them)"], stores["fts/turns"]) == (1, 3, 4)
        rows = {t.id: (t.content, t.redacted) for t in await history.store.turns_by_ids(ids)}
        assert {i for i, (content, gone) in rows.items() if gone and content == ""} == {
            source,
            direct,
            later,
            elsewhere,
        }
        assert rows[unrelated] == ("Lanterns are lit at dusk", False)
        assert rows[other_server] == ("The locker code is 4417", False)  # another server never saw it
        assert rows[by_alice] == ("the locker code is 4417?", False)
        # out of search at once, and out of the index files once compacted
        assert sorted(h.turn.id for h in await history.search_turns("4417")) == [other_server, by_alice]
        assert not {source, direct, later, elsewhere} & await all_index_ids(history, "turns")
        await history.turns_index.purge(FLUSH)
        assert await asyncio.to_thread(index.doc_freq, "content", "4417") == 2
    finally:
        await history.close()


async def test_redacting_a_source_covers_every_revision_of_the_message(history: History) -> None:
    (first,) = await history.append_turns([turn("my locker code is 4417", message_id=21)])
    edited = await history.edit_message("discord", 21, "my locker code is 4418", T0 + timedelta(minutes=1))
    assert edited is not None
    (answer,) = await history.append_turns([reply("So the locker code is 4417", message_id=22, reply_to=None)])
    fact = await inserted(history, new_fact("Alice's locker code is 4418", place=PLACE, source_turn_ids=(edited.id,)))

    receipt = await history.forget_fact(fact.id, redact_sources=True)

    assert receipt.redacted_turn_ids == (first, edited.id)  # the old revision kept the old text
    assert receipt.redacted_reply_ids == (answer,)
    assert [t.content for t in await history.store.turns_by_ids([first, edited.id, answer])] == ["", "", ""]


async def test_a_forgotten_fact_is_refused_until_its_tombstone_is_lifted(history: History) -> None:
    fact = await inserted(history, new_fact("Alice once failed her driving test"))
    receipt = await history.forget_fact(fact.id)
    rows = await history.store.read_one("SELECT COUNT(*) FROM facts")
    for attempt in (
        new_fact("Alice once failed her driving test"),
        new_fact("  alice once FAILED her driving test.  "),  # normalized the same way
        new_fact("Alice once failed her driving test", place="dm:7002"),  # the tombstone has no scope
        new_fact("Alice once failed her driving test", type="semantic", origin="remember"),
    ):
        outcome, changes = await history.intake.insert(attempt)
        assert (outcome.outcome, outcome.fact) == ("tombstoned", None)
        assert not changes.facts_index
        assert (await history.insert_fact(attempt)).outcome == "tombstoned"
    assert await history.store.read_one("SELECT COUNT(*) FROM facts") == rows
    # another subject set is another fact
    other = await inserted(history, new_fact("Alice once failed her driving test", subjects=(ALICE, BOB)))
    assert other.status == "active"

    (listed,) = await history.tombstones.fetch_all()
    assert listed.id == receipt.tombstone_id
    assert listed.reason == "forgotten by the owner"
    lifted = await history.tombstones.lift(listed.id, now=T0)
    assert lifted.lifted_at == T0
    assert (lifted.id, lifted.hash) == (listed.id, listed.hash)
    assert await history.tombstones.fetch_all() == []
    assert await history.tombstones.fetch_all(include_lifted=True) == [lifted]
    with pytest.raises(TombstoneError, match="no tombstone"):
        await history.tombstones.lift(listed.id)

    again = await history.insert_fact(new_fact("Alice once failed her driving test"))
    assert again.outcome == "inserted"
    assert again.fact is not None
    assert (again.fact.content, again.fact.status) == ("Alice once failed her driving test", "active")
    # forgetting it again tombstones it again
    await history.forget_fact(again.fact.id)
    assert len(await history.tombstones.fetch_all()) == 1
    assert (await history.insert_fact(new_fact("Alice once failed her driving test"))).outcome == "tombstoned"


async def test_forgetting_any_version_erases_the_whole_chain(history: History) -> None:
    texts = [
        "Alice works at the bakery on Elm Street",
        "Alice works at the bakery on Oak Street",
        "Alice manages the bakery on Oak Street",
    ]
    first = await inserted(history, new_fact(texts[0]))
    second = await history.edit_fact(first.id, first.revision, texts[1])
    third = await history.edit_fact(second.id, second.revision, texts[2])
    unrelated = await inserted(history, new_fact("Alice bakes rye bread at home"))
    await history.facts_index.flush(FLUSH)
    assert await fact_hits(history, "bakery") == [first.id, second.id, third.id]

    receipt = await history.forget_fact(first.id)  # the oldest, long superseded

    assert sorted(receipt.fact_ids) == [first.id, second.id, third.id]
    assert dict(receipt.stores)["facts"] == 3
    for fact_id in receipt.fact_ids:
        gone = await fetch(history, fact_id)
        assert (gone.content, gone.status) == ("", "forgotten")
    assert await fact_hits(history, "bakery") == []
    assert await raw_index_ids(history, "facts", "bakery") == []
    assert [f.id for f in await history.facts.list_facts()] == [unrelated.id]
    assert await fact_hits(history, "bread") == [unrelated.id]
    assert len(await history.tombstones.fetch_all()) == 3  # one hash per distinct version
    for text in texts:
        assert (await history.insert_fact(new_fact(text))).outcome == "tombstoned"
    assert (await fetch(history, unrelated.id)).content == "Alice bakes rye bread at home"
    for fact_id in (first.id, third.id):
        with pytest.raises(FactError, match="already forgotten"):
            await history.forget_fact(fact_id)


async def test_forget_with_a_stale_revision_changes_nothing(history: History) -> None:
    fact = await inserted(history, new_fact("Alice is training for a marathon", type="semantic"))
    snoozed = await history.decisions.decide(
        fact.id, fact.revision, "snooze", until=datetime.now(UTC) + timedelta(days=1)
    )
    await history.facts_index.flush(FLUSH)
    with pytest.raises(RevisionConflictError):
        await history.forget_fact(fact.id, revision=fact.revision)
    assert await fetch(history, fact.id) == snoozed
    assert await history.tombstones.fetch_all() == []
    assert await fact_hits(history, "marathon") == [fact.id]
    receipt = await history.forget_fact(fact.id, revision=snoozed.revision)
    assert receipt.fact_ids == (fact.id,)


# -- 7. Discord deletions and edits -------------------------------------------------------------------


async def test_a_deleted_message_takes_its_facts_and_work_with_it(history: History) -> None:
    ids = await history.append_turns(
        [
            turn("Carol's birthday is on the ninth of June", message_id=21, author=7003, name="carol"),
            turn("she likes marzipan cake best", message_id=22, author=7003, name="carol"),
            turn("unrelated lantern chatter", message_id=23),
        ]
    )
    only = await inserted(
        history,
        new_fact("Carol's birthday is on the ninth of June", subjects=(CAROL,), place=PLACE, source_turn_ids=(ids[0],)),
    )
    both = await inserted(
        history,
        new_fact(
            "Carol wants marzipan cake on her birthday",
            subjects=(CAROL,),
            place=PLACE,
            source_turn_ids=(ids[0], ids[1]),
        ),
    )
    for status in ("queued", "running", "done"):
        await queue_work(history, ids[0], status)
    await queue_work(history, ids[2])
    await history.turns_index.flush(FLUSH)
    await history.facts_index.flush(FLUSH)
    assert await raw_index_ids(history, "turns", "ninth") == [ids[0]]
    turns_before = await history.store.count_turns()

    assert await history.redact_message("discord", 21, T0 + timedelta(hours=1)) == [ids[0]]

    (deleted,) = await history.store.turns_by_ids([ids[0]])
    assert (deleted.content, deleted.redacted) == ("", True)
    await history.turns_index.flush(FLUSH)
    await history.facts_index.flush(FLUSH)
    assert await raw_index_ids(history, "turns", "ninth") == []
    assert ids[0] not in await all_index_ids(history, "turns")
    assert await history.search_turns("birthday") == []
    # the fact that came only from it is forgotten and tombstoned; the one with another source survives
    gone = await fetch(history, only.id)
    assert (gone.content, gone.status) == ("", "forgotten")
    (tombstone,) = await history.tombstones.fetch_all()
    assert tombstone.reason == "its source message was deleted"
    assert await fetch(history, both.id) == both
    assert await fact_hits(history, "ninth") == []
    assert await fact_hits(history, "marzipan") == [both.id]
    refused = await history.insert_fact(new_fact("Carol's birthday is on the ninth of June", subjects=(CAROL,)))
    assert refused.outcome == "tombstoned"
    # queued and running work on it is cancelled; finished work and other turns' work are left alone
    assert list((await work(history)).values()) == [
        (ids[0], "cancelled"),
        (ids[0], "cancelled"),
        (ids[0], "done"),
        (ids[2], "queued"),
    ]
    # a later backfill cannot bring it back
    assert await history.append_turn(turn("Carol's birthday is on the ninth of June", message_id=21)) is None
    assert await history.append_turns([turn("Carol's birthday is on the ninth of June", message_id=21)]) == []
    assert await history.store.count_turns() == turns_before
    assert await history.edit_message("discord", 21, "Carol's birthday is in July", T0 + timedelta(hours=2)) is None

    # once its last source is deleted too, the surviving fact goes as well
    assert await history.redact_message("discord", 22, T0 + timedelta(hours=3)) == [ids[1]]
    assert (await fetch(history, both.id)).status == "forgotten"
    assert len(await history.tombstones.fetch_all()) == 2
    await history.facts_index.flush(FLUSH)
    assert await fact_hits(history, "marzipan") == []
    # deleting a message that was never seen records the marker and touches nothing else
    assert await history.redact_message("discord", 99, T0) == []
    assert await history.append_turn(turn("late arrival", message_id=99)) is None


async def test_the_deletion_marker_survives_an_index_reset(tmp_path: Path) -> None:
    history = await History.open(*paths(tmp_path))
    try:
        stored = await history.append_turn(turn("the picnic spot is behind the old mill", message_id=31))
        assert stored is not None
        fact = await inserted(
            history, new_fact("The picnic spot is behind the old mill", place=PLACE, source_turn_ids=(stored.id,))
        )
        await history.turns_index.flush(FLUSH)
        await history.redact_message("discord", 31, T0 + timedelta(hours=1))
        await history.turns_index.flush(FLUSH)
        await history.facts_index.flush(FLUSH)
    finally:
        await history.close()
    shutil.rmtree(tmp_path / "fts")
    reopened = await History.open(*paths(tmp_path))
    try:
        await reopened.turns_index.flush(FLUSH)
        await reopened.facts_index.flush(FLUSH)
        assert reopened.turns_index.health().rebuilt_at_start
        assert await reopened.append_turn(turn("the picnic spot is behind the old mill", message_id=31)) is None
        assert await reopened.append_turns([turn("the picnic spot is behind the old mill", message_id=31)]) == []
        assert await reopened.store.count_turns() == 1
        assert await reopened.store.read_all("SELECT platform, message_id FROM deleted_sources") == [("discord", 31)]
        assert await reopened.search_turns("picnic") == []
        assert await raw_index_ids(reopened, "turns", "picnic") == []
        assert await raw_index_ids(reopened, "facts", "picnic") == []
        assert (await fetch(reopened, fact.id)).status == "forgotten"
        assert (await reopened.insert_fact(new_fact(fact.content, place=PLACE))).outcome == "tombstoned"
    finally:
        await reopened.close()


async def test_an_edited_message_retires_its_facts_and_queues_the_new_revision(history: History) -> None:
    original = await history.append_turn(turn("Dana moved to Porto last week", message_id=41, author=7004))
    elsewhere = await history.append_turn(turn("Dana also adopted a parrot", message_id=42, author=7004))
    assert original is not None
    assert elsewhere is not None
    derived = await inserted(
        history,
        new_fact("Dana moved to Porto", subjects=(DANA,), place=PLACE, source_turn_ids=(original.id,)),
        now=T0,
    )
    kept = await inserted(
        history,
        new_fact("Dana adopted a parrot", subjects=(DANA,), place=PLACE, source_turn_ids=(elsewhere.id,)),
        now=T0,
    )
    await queue_work(history, original.id)

    revised = await history.edit_message("discord", 41, "Dana moved to Braga last week", T0 + timedelta(hours=1))

    assert revised is not None
    assert (revised.revision, revised.content) == (1, "Dana moved to Braga last week")
    retired = await fetch(history, derived.id)
    assert retired.superseded_at is not None
    assert retired.revision == derived.revision + 1
    assert retired.content == derived.content  # retired, not rewritten
    assert [f.id for f in await history.facts.list_facts()] == [kept.id]
    assert await history.facts.pending() == []
    await history.facts_index.flush(FLUSH)
    assert [f.id for f, _s in await history.recall("Dana", PLACE)] == [kept.id]
    # the history still shows what was believed before the edit
    before = await history.facts.list_facts(recorded_at=T0 + timedelta(minutes=30))
    assert {f.id for f in before} == {derived.id, kept.id}
    # the old revision's queued work is cancelled, the new revision is queued for extraction
    assert list((await work(history)).values()) == [(original.id, "cancelled"), (revised.id, "queued")]
    kinds = await history.store.read_all("SELECT kind FROM memory_work WHERE turn_id = ?", (revised.id,))
    assert kinds == [("extract",)]
    # an owner action on the retired row is refused
    with pytest.raises(RevisionConflictError):
        await history.decisions.decide(derived.id, retired.revision, "archive")


async def test_forgotten_words_leave_the_facts_index_files(tmp_path: Path) -> None:
    """Out of search at once (the receipt), and out of the index files after the compaction that follows."""
    timing = IndexTiming(poll_interval=0.05, compact_after=0.2)
    history = await History.open(*paths(tmp_path), index_timing=timing)
    try:
        keep = await inserted(history, new_fact("Alice keeps a grey cat"))
        secret = await inserted(history, new_fact("Alice's locker holds a zeppelin model"))
        await history.facts_index.flush(15)
        index = history.facts_index.index
        assert await asyncio.to_thread(index.doc_freq, "content", "zeppelin") == 1
        receipt = await history.forget_fact(secret.id)
        assert ("fts/facts", 1) in receipt.stores
        assert await history.search_facts("zeppelin") == []
        await history.facts_index.purge(15)
        assert await asyncio.to_thread(index.doc_freq, "content", "zeppelin") == 0
        assert [f.id for f, _s in await history.search_facts("cat")] == [keep.id]
    finally:
        await history.close()
