"""Facts: their fields, supersede-only content, bi-temporal reads, the insert path and the pending queue.

Real SQLite and tantivy files under tmp_path, never mocks. Events are placed at chosen times with the
`now=` parameters of FactBook, so every slice is checked at known (world, recorded) points.
"""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from app.memory.errors import RevisionConflictError, StoreError
from app.memory.facts import MAX_FACT_CHARS, Fact, FactError, NewFact
from app.memory.history import History
from app.memory.policy import looks_directive
from tests.memory.helpers import PLACE, T0, turn

pytestmark = pytest.mark.asyncio

ALICE = "discord:7001"
BOB = "discord:7002"
DM = "dm:7001"
OTHER_DM = "dm:7002"
FLUSH = 15.0
WAIT = 5.0


def new_fact(content: str = "Alice adopted a grey cat named Ash", **overrides: Any) -> NewFact:
    fields: dict[str, Any] = {
        "type": "episodic",
        "importance": 5,
        "confidence": 0.9,
        "subjects": (ALICE,),
        "place": DM,
    }
    fields.update(overrides)
    return NewFact(content=content, **fields)


def year(value: float) -> datetime:
    """2023.5 -> the middle of 2023 (UTC)."""
    whole = int(value)
    start = datetime(whole, 1, 1, tzinfo=UTC)
    return start + (datetime(whole + 1, 1, 1, tzinfo=UTC) - start) * (value - whole)


@pytest_asyncio.fixture
async def history(tmp_path: Path) -> AsyncIterator[History]:
    opened = await History.open(tmp_path / "history.db", tmp_path / "fts", tmp_path / "backups")
    yield opened
    await opened.close()


async def inserted(history: History, new: NewFact, now: datetime | None = None) -> Fact:
    outcome, changes = await history.intake.insert(new, now=now)
    assert outcome.outcome == "inserted", outcome
    assert outcome.fact is not None
    assert changes.fact_ids == [outcome.fact.id]
    return outcome.fact


async def fact_rows(history: History) -> int:
    row = await history.store.read_one("SELECT COUNT(*) FROM facts")
    assert row is not None
    return int(row[0])


async def fetch(history: History, fact_id: int) -> Fact:
    fact = await history.facts.get(fact_id)
    assert fact is not None
    return fact


async def sliced(history: History, world: float, recorded: float, status: str = "active") -> list[int]:
    facts = await history.facts.list_facts(status=status, world_at=year(world), recorded_at=year(recorded))
    return [f.id for f in facts]


# -- 1. what a fact carries ---------------------------------------------------------------------------


async def test_a_fact_carries_every_field(history: History) -> None:
    sources = await history.append_turns(
        [turn("I adopted a cat last week", message_id=1), turn("her name is Ash", message_id=2)]
    )
    plus_two = timezone(timedelta(hours=2))
    fact = await inserted(
        history,
        new_fact(
            "  Alice adopted a grey   cat named Ash ",
            importance=7,
            confidence=0.85,
            subjects=(BOB, ALICE, ALICE),
            speaker=ALICE,
            source_turn_ids=(sources[1], sources[0], sources[1]),
            place=PLACE,
            channel_scoped=True,
            valid_from=datetime(2024, 4, 20, 12, 0, tzinfo=plus_two),
            valid_to=datetime(2034, 4, 20, tzinfo=UTC),
        ),
        now=T0,
    )
    assert fact.content == "Alice adopted a grey cat named Ash"  # whitespace collapsed, text otherwise kept
    assert fact.type == "episodic"
    assert fact.importance == 7
    assert fact.confidence == 0.85
    assert fact.subjects == (ALICE, BOB)  # canonical keys, sorted, no repeats
    assert fact.speaker == ALICE
    assert fact.source_turn_ids == tuple(sorted(sources))
    assert fact.scope == PLACE  # the guild keeps facts per channel
    assert fact.status == "active"
    assert fact.revision == 0
    assert fact.origin == "extraction"
    assert fact.created_at == T0
    assert fact.superseded_at is None
    assert fact.superseded_by is None
    assert fact.is_head
    assert fact.valid_from == datetime(2024, 4, 20, 10, 0, tzinfo=UTC)
    assert fact.valid_from.utcoffset() == timedelta(0)  # stored as UTC
    assert fact.valid_to == datetime(2034, 4, 20, tzinfo=UTC)
    assert fact.snoozed_until is None
    assert await fetch(history, fact.id) == fact
    log = await history.store.read_all("SELECT status, at FROM fact_status_log WHERE fact_id = ?", (fact.id,))
    assert log == [("active", T0.isoformat())]
    subjects = await history.store.read_all(
        "SELECT subject FROM fact_subjects WHERE fact_id = ? ORDER BY 1", (fact.id,)
    )
    assert subjects == [(ALICE,), (BOB,)]


async def test_every_type_is_accepted_and_the_schema_checks_its_enums(history: History) -> None:
    for kind in ("episodic", "semantic", "procedural"):
        fact = await inserted(history, new_fact(f"Alice has a {kind} fact", type=kind))
        assert fact.type == kind
    for column, value in (("type", "opinion"), ("status", "maybe"), ("importance", 11), ("confidence", 1.5)):
        row = {"type": "episodic", "status": "active", "importance": 5, "confidence": 0.5, column: value}
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            await history.store.write(
                [
                    (
                        "INSERT INTO facts (content, dedup_key, type, importance, confidence, subjects, scope, status,"
                        " origin, created_at) VALUES ('x', 'k', ?, ?, ?, '[]', 'local', ?, 'import', ?)",
                        (row["type"], row["importance"], row["confidence"], row["status"], T0.isoformat()),
                    )
                ]
            )
    assert await fact_rows(history) == 3


# -- 2. supersede-only content, chains, bi-temporal reads ------------------------------------------------


async def test_an_edit_supersedes_and_the_old_row_is_kept_unchanged(history: History) -> None:
    source = await history.append_turn(turn("Alice works at the bakery", message_id=3))
    assert source is not None
    old = await inserted(
        history, new_fact("Alice works at the bakery", source_turn_ids=(source.id,), importance=6), now=year(2023)
    )
    new, changes = await history.corrections.edit(old.id, old.revision, "Alice works at the bookshop", now=year(2024))
    assert changes.facts_index
    assert set(changes.fact_ids) == {old.id, new.id}
    assert new.id != old.id
    assert new.content == "Alice works at the bookshop"
    assert (new.status, new.origin, new.created_at) == ("active", "edit", year(2024))
    assert (new.type, new.importance, new.subjects, new.scope) == (old.type, old.importance, old.subjects, old.scope)
    assert new.source_turn_ids == (source.id,)
    assert new.is_head
    retired = await fetch(history, old.id)
    assert retired.content == "Alice works at the bakery"  # content rows are immutable
    assert retired.superseded_by == new.id
    assert retired.superseded_at == year(2024)
    assert retired.revision == old.revision + 1
    assert not retired.is_head
    # reads return heads
    assert [f.id for f in await history.facts.list_facts()] == [new.id]
    assert [f.id for f in await history.facts.list_facts(subject=ALICE)] == [new.id]
    # the chain, from either end
    for start in (old.id, new.id):
        chain = await asyncio.wait_for(history.facts.chain(start), WAIT)
        assert [f.id for f in chain.facts] == [old.id, new.id]
        assert chain.head_id == new.id
    newest, _changes = await history.corrections.edit(new.id, new.revision, "Alice runs the bookshop", now=year(2025))
    for start in (old.id, new.id, newest.id):  # from the middle too: the walk back goes on through it
        chain = await asyncio.wait_for(history.facts.chain(start), WAIT)
        assert [f.id for f in chain.facts] == [old.id, new.id, newest.id]
        assert chain.head_id == newest.id
    assert [f.id for f in await history.facts.list_facts()] == [newest.id]


async def test_a_supersede_cycle_is_detected_instead_of_looping(history: History) -> None:
    first = await inserted(history, new_fact("Alice plays the cello"), now=year(2023))
    second, _c = await history.corrections.edit(first.id, first.revision, "Alice plays the viola", now=year(2024))
    third, _c = await history.corrections.edit(second.id, second.revision, "Alice plays the violin", now=year(2025))
    lone = await inserted(history, new_fact("Bob collects stamps", subjects=(BOB,)))
    await history.store.write(
        [
            (
                "UPDATE facts SET superseded_by = ?, superseded_at = ? WHERE id = ?",
                (first.id, year(2026).isoformat(), third.id),
            ),
            ("UPDATE facts SET superseded_by = id, superseded_at = ? WHERE id = ?", (year(2026).isoformat(), lone.id)),
        ]
    )
    for start in (first.id, second.id, third.id, lone.id):
        with pytest.raises(StoreError, match="cycle"):
            await asyncio.wait_for(history.facts.chain(start), WAIT)
    # forgetting walks the chain too: it refuses rather than loops, and erases nothing
    with pytest.raises(StoreError, match="cycle"):
        await asyncio.wait_for(history.erasure.forget(first.id), WAIT)
    assert (await fetch(history, first.id)).content == "Alice plays the cello"
    with pytest.raises(FactError, match="no fact"):
        await history.facts.chain(9999)


async def test_as_of_reads_return_the_bitemporal_slice(history: History) -> None:
    # valid 2020-2022 in the world, recorded in 2023, corrected in 2024
    old = await inserted(
        history, new_fact("Alice lived in Lisbon", valid_from=year(2020), valid_to=year(2022)), now=year(2023)
    )
    new, _changes = await history.corrections.edit(
        old.id, old.revision, "Alice lived in Lisbon, in Alfama", now=year(2024)
    )
    assert (new.valid_from, new.valid_to) == (year(2020), year(2022))  # world time is carried over

    assert await sliced(history, world=2021, recorded=2023.5) == [old.id]
    assert await sliced(history, world=2021, recorded=2024.5) == [new.id]
    assert await sliced(history, world=2021, recorded=2024) == [new.id]  # the edit instant belongs to the successor
    assert await sliced(history, world=2019, recorded=2023.5) == []
    assert await sliced(history, world=2019, recorded=2024.5) == []
    assert await sliced(history, world=2021, recorded=2022.5) == []  # not yet recorded
    assert await sliced(history, world=2022.5, recorded=2023.5) == []  # no longer held in the world
    assert await sliced(history, world=2020, recorded=2023.5) == [old.id]  # valid_from is inclusive
    assert await sliced(history, world=2022, recorded=2023.5) == []  # valid_to is exclusive
    # the retired row comes back as it is stored now: retired, linked to its successor
    (as_then,) = await history.facts.list_facts(world_at=year(2021), recorded_at=year(2023.5))
    assert as_then.superseded_by == new.id
    assert as_then.content == "Alice lived in Lisbon"
    # one axis alone: the other is "now"
    assert [f.id for f in await history.facts.list_facts(world_at=year(2021))] == [new.id]
    assert await history.facts.list_facts(recorded_at=year(2023.5)) == []  # it no longer holds in the world now
    # current truth: neither (the world-time window is over)
    assert await history.facts.list_facts() == []
    assert await history.facts.list_facts(status="all") == []

    # a fact with no world time: current truth is the head, as-of reads follow the record
    current = await inserted(history, new_fact("Alice has a bicycle"), now=year(2023))
    successor, _c = await history.corrections.edit(
        current.id, current.revision, "Alice has two bicycles", now=year(2024)
    )
    assert [f.id for f in await history.facts.list_facts()] == [successor.id]
    assert set(await sliced(history, world=2021, recorded=2023.5)) == {old.id, current.id}
    assert set(await sliced(history, world=2021, recorded=2024.5)) == {new.id, successor.id}
    assert await sliced(history, world=2030, recorded=2023.5) == [current.id]


async def test_a_status_change_is_reflected_by_recorded_time(history: History) -> None:
    fact = await inserted(history, new_fact("Alice's favourite tea is genmaicha", type="semantic"), now=year(2023))
    assert fact.status == "pending"
    accepted = await history.decisions.decide(fact.id, fact.revision, "accept", now=year(2023.5))
    archived = await history.decisions.decide(accepted.id, accepted.revision, "archive", now=year(2024))
    assert archived.status == "archived"

    assert await sliced(history, 2023.25, 2023.25, status="pending") == [fact.id]
    assert await sliced(history, 2023.25, 2023.25, status="active") == []
    assert await sliced(history, 2023.75, 2023.75, status="pending") == []
    assert await sliced(history, 2023.75, 2023.75, status="active") == [fact.id]
    assert await sliced(history, 2024.5, 2024.5, status="active") == []
    assert await sliced(history, 2024.5, 2024.5, status="archived") == [fact.id]
    assert await sliced(history, 2024.5, 2022, status="all") == []  # not recorded yet
    assert await sliced(history, 2024.5, 2023.25, status="all") == [fact.id]
    # the world axis does not move the status: only the recorded axis does
    assert await sliced(history, 2030, 2023.75, status="active") == [fact.id]
    # current truth
    assert [f.id for f in await history.facts.list_facts(status="archived")] == [fact.id]
    assert await history.facts.list_facts(status="active") == []
    with pytest.raises(FactError, match="status"):
        await history.facts.list_facts(status="forgotten")


async def test_an_as_of_slice_shows_the_status_each_fact_had_then_not_todays(history: History) -> None:
    fact = await inserted(history, new_fact("Alice's favourite tea is sencha", type="semantic"), now=year(2023))
    accepted = await history.decisions.decide(fact.id, fact.revision, "accept", now=year(2023.5))
    await history.decisions.decide(accepted.id, accepted.revision, "archive", now=year(2024))
    other = await inserted(history, new_fact("Alice keeps a kettle", subjects=(BOB,)), now=year(2023))

    def statuses(facts: list[Fact]) -> dict[int, str]:
        return {f.id: f.status for f in facts}

    then = await history.facts.list_facts(status="all", world_at=year(2023.25), recorded_at=year(2023.25))
    assert statuses(then) == {fact.id: "pending", other.id: "active"}
    later = await history.facts.list_facts(status="all", world_at=year(2023.75), recorded_at=year(2023.75))
    assert statuses(later) == {fact.id: "active", other.id: "active"}
    (filtered,) = await history.facts.list_facts(status="pending", recorded_at=year(2023.25), world_at=year(2023.25))
    assert filtered.status == "pending"
    with_subject = await history.facts.list_facts(
        status="all", subject=ALICE, world_at=year(2023.75), recorded_at=year(2023.75)
    )
    assert statuses(with_subject) == {fact.id: "active"}
    # current truth still reads today's status
    assert statuses(await history.facts.list_facts(status="all")) == {fact.id: "archived", other.id: "active"}


async def test_an_edit_onto_a_pending_twin_is_logged_so_as_of_agrees_with_current_truth(history: History) -> None:
    """Editing a fact into the text of a pending one accepts that one; the status log must say so."""
    active = await inserted(history, new_fact("Alice keeps bees"), now=year(2023))
    pending = await inserted(history, new_fact("Alice keeps honeybees", type="semantic"), now=year(2023))
    assert pending.status == "pending"
    head, _c = await history.corrections.edit(active.id, active.revision, "Alice keeps honeybees", now=year(2024))
    assert head.id == pending.id
    assert head.status == "active"
    assert [f.id for f in await history.facts.list_facts()] == [pending.id]
    assert await sliced(history, 2024.5, 2024.5, status="active") == [pending.id]
    assert await sliced(history, 2024.5, 2024.5, status="pending") == []
    assert await sliced(history, 2023.5, 2023.5, status="pending") == [pending.id]  # before the edit it waited
    assert await sliced(history, 2023.5, 2023.5, status="active") == [active.id]


async def test_current_truth_holds_only_what_is_valid_now(history: History) -> None:
    now = datetime.now(UTC)
    ongoing = await inserted(history, new_fact("Alice lives in Porto", valid_from=now - timedelta(days=365)))
    await inserted(
        history,
        new_fact("Alice lived in Lisbon", valid_from=now - timedelta(days=900), valid_to=now - timedelta(days=365)),
    )
    future = await inserted(history, new_fact("Alice starts at the observatory", valid_from=now + timedelta(days=30)))
    assert [f.id for f in await history.facts.list_facts()] == [ongoing.id]
    later = await history.facts.list_facts(world_at=now + timedelta(days=60))
    assert {f.id for f in later} == {ongoing.id, future.id}
    await history.facts_index.flush(FLUSH)
    assert [f.id for f, _s in await history.recall("Alice", DM)] == [ongoing.id]


# -- 3. the insert path -------------------------------------------------------------------------------


async def test_near_duplicates_are_suppressed(history: History) -> None:
    base = await inserted(history, new_fact("Alice adopted a grey cat named Ash", subjects=(ALICE, BOB)))
    for variant in (
        "alice adopted a GREY cat named ash",
        "  Alice   adopted a grey\tcat\nnamed Ash  ",
        '"Alice adopted a grey cat named Ash."',
        "«Alice adopted a grey cat named Ash!»",
        "'alice adopted a grey cat named ash'...",
        "ALICE ADOPTED A GREY CAT NAMED ASH",
    ):
        for subjects in ((ALICE, BOB), (BOB, ALICE), (BOB, ALICE, BOB)):
            outcome, changes = await history.intake.insert(
                new_fact(variant, subjects=subjects, type="semantic", importance=9, confidence=0.2)
            )
            assert outcome.outcome == "duplicate", (variant, subjects)
            assert outcome.fact == base
            assert not changes.facts_index
            assert changes.fact_ids == []
    assert await fact_rows(history) == 1


async def test_other_subjects_scope_or_words_are_not_duplicates(history: History) -> None:
    text = "Alice adopted a grey cat named Ash"
    await inserted(history, new_fact(text))
    await inserted(history, new_fact(text, subjects=(ALICE, BOB)))  # another subject set
    await inserted(history, new_fact(text, subjects=(BOB,)))
    await inserted(history, new_fact(text, place=OTHER_DM))  # another scope
    await inserted(history, new_fact(text, place="guild:500/501", channel_scoped=True))
    await inserted(history, new_fact(text, place="guild:500/502", channel_scoped=True))  # another channel
    await inserted(history, new_fact(text, place="guild:500/501"))  # the guild's own scope
    await inserted(history, new_fact("Alice adopted a grey cat named Ashes"))  # other words
    await inserted(history, new_fact("Alice adopted a grey cat, named Ash"))  # inner punctuation counts
    # guild scope without channel scoping: two channels of one guild are one scope
    outcome, _c = await history.intake.insert(new_fact(text, place="guild:500/502"))
    assert outcome.outcome == "duplicate"
    assert outcome.fact is not None
    assert outcome.fact.scope == "guild:500"
    assert await fact_rows(history) == 9


async def test_a_retired_or_rejected_fact_does_not_count_as_a_duplicate(history: History) -> None:
    rejected = await inserted(history, new_fact("Alice is allergic to hazelnuts", type="semantic"))
    await history.decisions.decide(rejected.id, rejected.revision, "reject")
    # A rejection is a durable owner decision: the familiar does not propose the fact again...
    proposed, _c = await history.intake.insert(new_fact("Alice is allergic to hazelnuts", type="semantic"))
    assert proposed.outcome == "rejected_before"
    assert proposed.fact is not None
    assert proposed.fact.id == rejected.id
    # ...but the owner may still remember it explicitly.
    again = await inserted(history, new_fact("Alice is allergic to hazelnuts", type="semantic", origin="remember"))
    assert again.status == "active"
    old = await inserted(history, new_fact("Alice drives a red van"))
    new, _c = await history.corrections.edit(old.id, old.revision, "Alice drives a blue van")
    outcome, _c = await history.intake.insert(new_fact("Alice drives a blue van"))
    assert (outcome.outcome, outcome.fact) == ("duplicate", new)


async def test_the_duplicate_check_goes_through_the_dedup_index(history: History) -> None:
    for i in range(30):
        await inserted(history, new_fact(f"Alice keeps lantern number {i}"))
    statements: list[str] = []
    async with history.store.transaction() as conn:
        await conn.set_trace_callback(statements.append)
    try:
        inserted_outcome, _c = await history.intake.insert(new_fact("Alice keeps a brand new lantern"))
        duplicate_outcome, _c = await history.intake.insert(new_fact("alice keeps lantern number 7."))
    finally:
        async with history.store.transaction() as conn:
            await conn.set_trace_callback(None)
    assert (inserted_outcome.outcome, duplicate_outcome.outcome) == ("inserted", "duplicate")
    # The check is part of the conditional INSERT (and of the follow-up read naming the duplicate).
    lookups = [s for s in statements if s.lstrip().upper().startswith(("SELECT", "INSERT")) and "dedup_key = " in s]
    assert len(lookups) >= 2, statements
    for sql in lookups:
        plan = [str(row[-1]) for row in await history.store.read_all("EXPLAIN QUERY PLAN " + sql)]
        assert any("USING INDEX facts_dedup" in step for step in plan), plan
        # No table is scanned (json_each over the fact's own few source ids is a virtual table).
        assert not any(
            step.startswith("SCAN") and "CONSTANT ROW" not in step and "VIRTUAL TABLE" not in step for step in plan
        ), plan
    tombstone_checks = [s for s in statements if "FROM tombstones" in s]
    assert tombstone_checks
    for sql in tombstone_checks:
        plan = [str(row[-1]) for row in await history.store.read_all("EXPLAIN QUERY PLAN " + sql)]
        assert any("tombstones_hash" in step for step in plan), plan


DISCORD_TOKEN_SHAPE = "MTA5ODc2NTQzMjEwOTg3NjU0Mw.GhIjKl.AbCdEfGhIjKlMnOpQrStUvWxYz0123"


@pytest.mark.parametrize(
    ("kind", "confidence", "content", "origin", "expected"),
    [
        ("episodic", 0.8, "Alice went to Paris in May", "extraction", "active"),
        ("episodic", 0.95, "Alice went to Paris in May", "extraction", "active"),
        ("episodic", 1.0, "Alice went to Paris in May", "dreaming", "active"),
        ("episodic", 0.79, "Alice went to Paris in May", "extraction", "pending"),
        ("episodic", 0.0, "Alice went to Paris in May", "extraction", "pending"),
        ("semantic", 1.0, "Alice is a nurse", "extraction", "pending"),
        ("procedural", 1.0, "Alice's build runs with make release", "extraction", "pending"),
        ("episodic", 0.95, "Alice always brings snacks to the meetup", "extraction", "pending"),
        ("episodic", 0.95, "Alice said the familiar must answer in French", "extraction", "pending"),
        ("episodic", 0.95, "From now on Alice wants to be called Al", "extraction", "pending"),
        ("episodic", 0.95, "Alice set a rule about spoilers", "extraction", "pending"),
        ("episodic", 0.95, "Alice pasted sk-abcdefghijklmnop1234 in chat", "extraction", "pending"),
        ("episodic", 0.95, f"Alice shared the bot token {DISCORD_TOKEN_SHAPE}", "extraction", "pending"),
        ("episodic", 0.95, "Alice said password: hunter2", "extraction", "pending"),
        ("semantic", 0.3, "Alice always drinks tea", "remember", "active"),
        ("procedural", 0.5, "From now on greet Alice in Welsh", "remember", "active"),
    ],
    ids=lambda value: str(value)[:24],
)
async def test_auto_promotion_policy(
    history: History, kind: str, confidence: float, content: str, origin: str, expected: str
) -> None:
    fact = await inserted(history, new_fact(content, type=kind, confidence=confidence, origin=origin))
    assert fact.status == expected
    assert fact.origin == origin
    pending_ids = [f.id for f in await history.facts.pending()]
    assert (fact.id in pending_ids) == (expected == "pending")


async def test_the_credential_shapes_used_above_are_recognised() -> None:
    assert looks_directive(DISCORD_TOKEN_SHAPE)
    assert looks_directive("sk-abcdefghijklmnop1234")
    assert looks_directive("password: hunter2")
    assert not looks_directive("Alice went to Paris in May")


# -- 4. the pending queue -----------------------------------------------------------------------------


async def test_accept_reject_snooze_and_edit_carry_the_revision_they_saw(history: History) -> None:
    seat = await inserted(history, new_fact("Alice prefers window seats", type="semantic"), now=T0)
    assert [f.id for f in await history.facts.pending(now=T0)] == [seat.id]

    snoozed = await history.decisions.decide(seat.id, seat.revision, "snooze", until=T0 + timedelta(days=1), now=T0)
    assert snoozed.snoozed_until == T0 + timedelta(days=1)
    assert snoozed.revision == seat.revision + 1
    assert snoozed.status == "pending"
    assert await history.facts.pending(now=T0 + timedelta(hours=12)) == []
    assert [f.id for f in await history.facts.pending(now=T0 + timedelta(days=2))] == [seat.id]

    rows = await fact_rows(history)
    stale_actions: list[Callable[[], Awaitable[object]]] = [
        lambda: history.decisions.decide(seat.id, seat.revision, "accept"),
        lambda: history.decisions.decide(seat.id, seat.revision, "reject"),
        lambda: history.decisions.decide(seat.id, seat.revision, "snooze", until=T0 + timedelta(days=9), now=T0),
        lambda: history.corrections.edit(seat.id, seat.revision, "Alice prefers aisle seats"),
        lambda: history.erasure.forget(seat.id, revision=seat.revision),
    ]
    for stale in stale_actions:
        with pytest.raises(RevisionConflictError, match="changed since you saw it"):
            await stale()
    assert await fetch(history, seat.id) == snoozed  # nothing changed
    assert await fact_rows(history) == rows
    assert await history.tombstones.fetch_all() == []

    accepted = await history.decisions.decide(seat.id, snoozed.revision, "accept", now=T0 + timedelta(hours=1))
    assert (accepted.status, accepted.snoozed_until) == ("active", None)
    assert await history.facts.pending(now=T0 + timedelta(days=2)) == []
    with pytest.raises(FactError, match="not pending"):
        await history.decisions.decide(seat.id, accepted.revision, "accept")

    meal = await inserted(history, new_fact("Alice is vegetarian", type="semantic"), now=T0)
    rejected = await history.decisions.decide(meal.id, meal.revision, "reject", now=T0 + timedelta(hours=2))
    assert rejected.status == "rejected"
    assert await history.facts.pending(now=T0 + timedelta(days=2)) == []
    assert await history.facts.list_facts() == [accepted]
    assert [f.id for f in await history.facts.list_facts(status="rejected")] == [meal.id]
    with pytest.raises(FactError, match="only pending or active"):
        await history.corrections.edit(meal.id, rejected.revision, "Alice is vegan")

    drink = await inserted(history, new_fact("Alice drinks oat milk", type="procedural"), now=T0)
    edited, _changes = await history.corrections.edit(drink.id, drink.revision, "Alice drinks soy milk", now=T0)
    assert (edited.status, edited.origin) == ("active", "edit")
    retired = await fetch(history, drink.id)
    assert retired.superseded_by == edited.id
    assert await history.facts.pending(now=T0 + timedelta(days=2)) == []
    assert {f.id for f in await history.facts.list_facts()} == {seat.id, edited.id}


async def test_acting_on_a_superseded_row_is_refused(history: History) -> None:
    old = await inserted(history, new_fact("Alice studies geology", type="semantic"), now=T0)
    new, _c = await history.corrections.edit(old.id, old.revision, "Alice studies volcanology", now=T0)
    retired = await fetch(history, old.id)
    rows = await fact_rows(history)
    for revision in (old.revision, retired.revision):  # the one seen before, and the current one
        actions: list[Callable[[], Awaitable[object]]] = [
            lambda revision=revision: history.decisions.decide(old.id, revision, "accept"),
            lambda revision=revision: history.decisions.decide(old.id, revision, "reject"),
            lambda revision=revision: history.decisions.decide(
                old.id, revision, "snooze", until=T0 + timedelta(days=1), now=T0
            ),
            lambda revision=revision: history.decisions.decide(old.id, revision, "archive"),
            lambda revision=revision: history.corrections.edit(old.id, revision, "Alice studies seismology"),
        ]
        for action in actions:
            with pytest.raises(RevisionConflictError):
                await action()
    with pytest.raises(RevisionConflictError, match=f"superseded by fact {new.id}"):
        await history.decisions.decide(old.id, retired.revision, "accept")
    assert await fetch(history, old.id) == retired
    assert await fetch(history, new.id) == new
    assert await fact_rows(history) == rows
    with pytest.raises(FactError, match="no fact"):
        await history.decisions.decide(9999, 0, "accept")


async def test_related_current_shows_current_facts_of_the_same_subject_and_scope(history: History) -> None:
    same = await inserted(history, new_fact("Alice has a cat"))
    await inserted(history, new_fact("Bob has a dog", subjects=(BOB,)))  # another subject
    await inserted(history, new_fact("Alice has a cat", place=OTHER_DM))  # another scope
    await inserted(history, new_fact("Alice is a nurse", type="semantic"))  # pending, not current truth
    old = await inserted(history, new_fact("Alice lives on Elm Street"))
    head, _c = await history.corrections.edit(old.id, old.revision, "Alice lives on Oak Street")
    shared = await inserted(history, new_fact("Alice and Bob share a flat", subjects=(ALICE, BOB)))
    candidate = await inserted(history, new_fact("Alice has two cats now", type="semantic"))
    assert candidate.status == "pending"
    related = await history.facts.related_current(candidate)
    assert {f.id for f in related} == {same.id, head.id, shared.id}
    assert all(f.is_head and f.status == "active" and f.scope == DM for f in related)
    assert len(await history.facts.related_current(candidate, limit=1)) == 1
    lonely = await inserted(history, new_fact("Nobody in particular", subjects=(), type="semantic"))
    assert await history.facts.related_current(lonely) == []


async def test_a_facts_sources_point_at_turns(history: History) -> None:
    ids = await history.append_turns(
        [
            turn("I finally adopted the cat", message_id=11),
            turn("unrelated lantern chatter", message_id=12),
            turn("she is grey and called Ash", message_id=13),
        ]
    )
    fact = await inserted(
        history, new_fact("Alice adopted a grey cat named Ash", place=PLACE, source_turn_ids=(ids[2], ids[0]))
    )
    stored = await fetch(history, fact.id)
    assert stored.source_turn_ids == (ids[0], ids[2])
    turns = await history.store.turns_by_ids(list(stored.source_turn_ids))
    assert [t.content for t in turns] == ["I finally adopted the cat", "she is grey and called Ash"]
    assert [t.message_id for t in turns] == [11, 13]


# -- 8. bad input -------------------------------------------------------------------------------------

NAIVE = datetime(2024, 5, 1, 12, 0)  # noqa: DTZ001 - deliberately naive


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"type": "opinion"}, "type"),
        ({"type": "Episodic"}, "type"),
        ({"importance": 0}, "importance"),
        ({"importance": 11}, "importance"),
        ({"importance": True}, "importance"),
        ({"importance": 5.5}, "importance"),
        ({"importance": "5"}, "importance"),
        ({"confidence": -0.1}, "confidence"),
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": math.nan}, "confidence"),
        ({"confidence": math.inf}, "confidence"),
        ({"confidence": True}, "confidence"),
        ({"content": ""}, "content"),
        ({"content": " \t\n "}, "content"),
        ({"content": "x" * (MAX_FACT_CHARS + 1)}, "content"),
        ({"content": "Alice \ud800 has a cat"}, "content"),
        ({"valid_from": NAIVE}, "valid_from"),
        ({"valid_to": NAIVE}, "valid_to"),
        ({"valid_from": NAIVE, "valid_to": datetime(2025, 1, 1, tzinfo=UTC)}, "valid_from"),
        ({"valid_from": year(2022), "valid_to": year(2021)}, "valid_to"),
        ({"valid_from": year(2022), "valid_to": year(2022)}, "valid_to"),
        ({"subjects": ("Alice",)}, "subjects"),
        ({"subjects": ("discord:",)}, "subjects"),
        ({"subjects": (ALICE, "discord:")}, "subjects"),
        ({"subjects": ("discord:7001 ",)}, "subjects"),
        ({"subjects": ("discord:7001\n",)}, "subjects"),  # a pattern's $ would let a trailing newline in
        ({"speaker": "discord:7001\n"}, "speaker"),
        ({"place": "local\n"}, "place"),
        ({"speaker": "Alice"}, "speaker"),
        ({"place": "nowhere"}, "place"),
        ({"place": ""}, "place"),
        ({"place": "dm:alice"}, "place"),
        ({"place": "guild:1/2/3"}, "place"),
        ({"place": "quarantine"}, "place"),
        ({"origin": "gossip"}, "origin"),
        ({"source_turn_ids": (0,)}, "source_turn_ids"),
        ({"source_turn_ids": (True,)}, "source_turn_ids"),
    ],
    ids=lambda value: repr(value)[:40],
)
async def test_bad_input_is_refused_naming_the_field(history: History, overrides: dict[str, Any], field: str) -> None:
    await inserted(history, new_fact("Alice has a cat"))
    before = await history.store.read_all("SELECT * FROM facts ORDER BY id")
    fields = {"content": "Bob plays chess on Sundays", **overrides}
    with pytest.raises(FactError, match=f"fact field '{field}'"):
        await history.intake.insert(new_fact(**fields))
    with pytest.raises(FactError, match=f"fact field '{field}'"):
        await history.insert_fact(new_fact(**fields))
    assert await history.store.read_all("SELECT * FROM facts ORDER BY id") == before


async def test_bounds_are_inclusive(history: History) -> None:
    for i, (importance, confidence) in enumerate(((1, 0.0), (10, 1.0), (10, 1))):
        fact = await inserted(
            history, new_fact(f"Alice has {i} cats", importance=importance, confidence=confidence, origin="remember")
        )
        assert (fact.importance, fact.confidence) == (importance, float(confidence))
    longest = await inserted(history, new_fact("y" * MAX_FACT_CHARS))
    assert len(longest.content) == MAX_FACT_CHARS


async def test_a_naive_now_is_refused_and_changes_nothing(history: History) -> None:
    with pytest.raises(FactError, match="time zone"):
        await history.intake.insert(new_fact(), now=NAIVE)
    assert await fact_rows(history) == 0
    fact = await inserted(history, new_fact(type="semantic"))
    with pytest.raises(FactError, match="time zone"):
        await history.decisions.decide(fact.id, fact.revision, "accept", now=NAIVE)
    with pytest.raises(FactError, match="time zone"):
        await history.corrections.edit(fact.id, fact.revision, "Alice adopted a black cat", now=NAIVE)
    assert await fetch(history, fact.id) == fact
    assert await fact_rows(history) == 1


async def test_a_refused_first_insert_does_not_lose_the_tombstone_key(tmp_path: Path) -> None:
    """The tombstone key is created lazily inside the first write transaction. When that transaction
    rolls back, the key must not live on in memory only: tombstones hashed with it would match nothing
    after a restart, and a forgotten fact could be learned again."""
    paths = (tmp_path / "history.db", tmp_path / "fts", tmp_path / "backups")
    history = await History.open(*paths)
    try:
        with pytest.raises(FactError):
            await history.intake.insert(new_fact("Alice's locker code is 4417"), now=NAIVE)
        fact = await inserted(history, new_fact("Alice's locker code is 4417"))
        await history.forget_fact(fact.id)
        outcome, _c = await history.intake.insert(new_fact("Alice's locker code is 4417"))
        assert outcome.outcome == "tombstoned"
    finally:
        await history.close()
    reopened = await History.open(*paths)
    try:
        outcome, _c = await reopened.intake.insert(new_fact("Alice's locker code is 4417"))
        assert outcome.outcome == "tombstoned"
        assert outcome.fact is None
        keys = await reopened.store.read_all("SELECT value FROM store_meta WHERE key = 'tombstone_key'")
        assert len(keys) == 1
        assert len(bytes(keys[0][0])) == 32
    finally:
        await reopened.close()


async def test_subjects_are_stored_as_json_and_in_the_subject_table(history: History) -> None:
    fact = await inserted(history, new_fact("Alice and Bob went hiking", subjects=(BOB, ALICE)))
    row = await history.store.read_one("SELECT subjects, dedup_key FROM facts WHERE id = ?", (fact.id,))
    assert row is not None
    assert json.loads(row[0]) == [ALICE, BOB]
    assert "hiking" not in row[1]  # the dedup key is a hash, not the text
    assert [f.id for f in await history.facts.list_facts(subject=BOB)] == [fact.id]
    assert await history.facts.list_facts(subject="discord:9999") == []
