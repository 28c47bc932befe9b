"""The facts timeline's slices, pages, filters, diffs and forgotten markers (app/memory/timeline.py).

Real SQLite and tantivy files under tmp_path. Every event is placed at a chosen time (the `now=`
parameters of FactBook), so each slice is checked at known (world, recorded) points; the slice is also
checked against the store's own SQL as-of read (`FactBook.list_facts`) over a grid of points.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from app.memory import timeline
from app.memory.errors import StoreError
from app.memory.facts import Fact, NewFact
from app.memory.forgets import ForgetQueue
from app.memory.history import History
from app.memory.timeline import Point, TimelineBook, TimelineFilter, micros, parse_times

pytestmark = pytest.mark.asyncio

T0 = datetime(2024, 1, 1, tzinfo=UTC)
ALICE, BOB, CAROL = "discord:7001", "discord:7002", "discord:7003"
GENERAL, HOME, OTHER_GUILD = "guild:500/501", "guild:500/502", "guild:600/601"
EVERYTHING = TimelineFilter()


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def new_fact(content: str, **overrides: Any) -> NewFact:
    fields: dict[str, Any] = {
        "type": "episodic",
        "importance": 5,
        "confidence": 0.9,
        "subjects": (ALICE,),
        "place": GENERAL,
        "origin": "remember",  # inserted active, as the owner's explicit path does
    }
    fields.update(overrides)
    return NewFact(content=content, **fields)


@pytest_asyncio.fixture
async def history(tmp_path: Path) -> AsyncIterator[History]:
    opened = await History.open(tmp_path / "history.db", tmp_path / "fts", tmp_path / "backups")
    yield opened
    await opened.close()


@pytest_asyncio.fixture
async def book(history: History) -> TimelineBook:
    return TimelineBook(history.store)


async def insert(history: History, content: str, at: float, **overrides: Any) -> Fact:
    outcome, _changes = await history.intake.insert(new_fact(content, **overrides), now=day(at))
    assert outcome.fact is not None, outcome
    return outcome.fact


async def current(history: History, fact_id: int) -> Fact:
    fact = await history.facts.get(fact_id)
    assert fact is not None
    return fact


async def everything_at(book: TimelineBook, world: float, recorded: float, **filters: Any) -> list[Fact]:
    page = await book.slice(Point(day(world), day(recorded)), TimelineFilter(**filters), limit=10_000)
    assert page.total == len(page.facts)
    return list(page.facts)


def statuses(facts: list[Fact]) -> dict[int, str]:
    return {f.id: f.status for f in facts}


# -- the slice ------------------------------------------------------------------------------------------


async def test_a_slice_shows_each_fact_with_the_status_it_had_at_the_recorded_time(
    history: History, book: TimelineBook
) -> None:
    proposed = await insert(history, "Alice keeps bees", 1, type="semantic", origin="extraction")
    assert proposed.status == "pending"
    accepted = await history.decisions.decide(proposed.id, proposed.revision, "accept", now=day(2))
    await history.decisions.decide(accepted.id, accepted.revision, "archive", now=day(3))

    assert statuses(await everything_at(book, 10, 0.5)) == {}
    assert statuses(await everything_at(book, 10, 1.5)) == {proposed.id: "pending"}
    assert statuses(await everything_at(book, 10, 2.5)) == {proposed.id: "active"}
    assert statuses(await everything_at(book, 10, 3.5)) == {proposed.id: "archived"}
    assert [f.id for f in await everything_at(book, 10, 2.5, statuses=("active",))] == [proposed.id]
    assert await everything_at(book, 10, 2.5, statuses=("pending", "archived")) == []
    assert [f.id for f in await everything_at(book, 10, 1.5, statuses=("pending",))] == [proposed.id]


async def test_world_time_keeps_what_held_then_with_open_ends_open(history: History, book: TimelineBook) -> None:
    always = await insert(history, "Alice is left-handed", 5)
    porto = await insert(history, "Alice lives in Porto", 5, valid_from=day(0), valid_to=day(30))
    lisbon = await insert(history, "Alice lives in Lisbon", 40, valid_from=day(30))

    assert {f.id for f in await everything_at(book, -100, 100)} == {always.id}  # before anything began
    assert {f.id for f in await everything_at(book, 10, 100)} == {always.id, porto.id}
    assert {f.id for f in await everything_at(book, 30, 100)} == {always.id, lisbon.id}  # valid_to is exclusive
    assert {f.id for f in await everything_at(book, 30, 20)} == {always.id}  # Lisbon was not recorded yet


async def test_a_corrected_fact_shows_the_version_believed_at_each_recorded_time(
    history: History, book: TimelineBook
) -> None:
    first = await insert(history, "Bob's cat is called Pepper", 1, subjects=(BOB,))
    edited, _changes = await history.corrections.edit(first.id, first.revision, "Bob's cat is called Salt", now=day(5))

    (before,) = await everything_at(book, 10, 3)
    (after,) = await everything_at(book, 10, 6)
    assert (before.id, before.content, before.superseded_by) == (first.id, "Bob's cat is called Pepper", edited.id)
    assert (after.id, after.content, after.status) == (edited.id, "Bob's cat is called Salt", "active")


async def test_as_recorded_reads_each_version_as_it_stood_then(history: History, book: TimelineBook) -> None:
    """What `facts list --recorded-at` and `facts show --recorded-at` print: the slice's rows (the window's
    slice keeps the later supersede, to draw the span), each with its status then and not superseded yet
    if it was superseded only later; a version not recorded yet is left out."""
    first = await insert(history, "Bob's cat is called Pepper", 1, subjects=(BOB,), type="semantic", origin="import")
    edited, _changes = await history.corrections.edit(first.id, first.revision, "Bob's cat is called Salt", now=day(5))
    await history.decisions.decide(edited.id, edited.revision, "archive", now=day(8))
    forgotten = await insert(history, "Bob's cat bites", 2, subjects=(BOB,))
    await history.erasure.forget(forgotten.id, now=day(9))

    (then,) = await book.as_recorded(Point(day(10), day(3)), EVERYTHING)
    assert (then.id, then.status, then.superseded_at, then.superseded_by) == (first.id, "active", None, None)
    assert [f.id for f in await everything_at(book, 10, 3)] == [forgotten.id, first.id]  # a marker there, later
    (later,) = await book.as_recorded(Point(day(10), day(7)), TimelineFilter(statuses=("active",)))
    assert (later.id, later.superseded_by) == (edited.id, None)
    assert await book.as_recorded(Point(day(10), day(7)), TimelineFilter(statuses=("archived",))) == ()

    chain = [first.id, edited.id]
    assert [(f.id, f.superseded_by) for f in await book.versions_at(chain, day(3))] == [(first.id, None)]
    at_six = await book.versions_at(chain, day(6))
    assert [(f.id, f.status, f.superseded_at, f.superseded_by) for f in at_six] == [
        (first.id, "active", day(5), edited.id),
        (edited.id, "active", None, None),
    ]
    assert [f.status for f in await book.versions_at(chain, day(9))] == ["active", "archived"]
    assert await book.versions_at(chain, day(0.5)) == ()


async def test_pages_follow_the_display_order_latest_start_first(history: History, book: TimelineBook) -> None:
    made = [await insert(history, f"Fact number {n}", n) for n in range(25)]
    dated = await insert(history, "Alice started a new job", 30, valid_from=day(12.5))

    first = await book.slice(Point(day(40), day(40)), EVERYTHING, offset=0, limit=10)
    rest = await book.slice(Point(day(40), day(40)), EVERYTHING, offset=10, limit=100)
    beyond = await book.slice(Point(day(40), day(40)), EVERYTHING, offset=500, limit=10)

    order = [f.id for f in (*first.facts, *rest.facts)]
    by_start = [m.id for m in reversed(made[13:])] + [dated.id] + [m.id for m in reversed(made[:13])]
    assert order == by_start
    assert (first.total, first.offset, rest.offset, len(rest.facts)) == (26, 0, 10, 16)
    assert (beyond.total, beyond.offset, beyond.facts) == (26, 26, ())


async def test_the_slice_agrees_with_the_stores_as_of_read_everywhere(history: History, book: TimelineBook) -> None:
    """The arrays against FactBook.list_facts (SQL) over a grid of points, after a random life of facts."""
    rng = random.Random(11)
    facts: list[Fact] = []
    for n in range(60):
        at = n * 0.5
        world_from = day(at - rng.choice([0, 3, 10])) if rng.random() < 0.6 else None
        world_to = (world_from or day(at)) + timedelta(days=rng.choice([2, 8, 40])) if rng.random() < 0.4 else None
        origin = rng.choice(["remember", "extraction"])
        fact = await insert(
            history,
            f"Fact {n} about the harbour",
            at,
            type=rng.choice(["episodic", "semantic", "procedural"]),
            origin=origin,
            valid_from=world_from,
            valid_to=world_to,
        )
        facts.append(fact)
        later = at + 0.25
        target = await current(history, rng.choice(facts).id)
        if target.superseded_at is not None:
            continue
        move = rng.choice(["accept", "reject", "archive", "edit", "nothing"])
        if move == "accept" and target.status == "pending":
            await history.decisions.decide(target.id, target.revision, "accept", now=day(later))
        elif move == "reject" and target.status == "pending":
            await history.decisions.decide(target.id, target.revision, "reject", now=day(later))
        elif move == "archive" and target.status == "active":
            await history.decisions.decide(target.id, target.revision, "archive", now=day(later))
        elif move == "edit" and target.status in ("pending", "active"):
            await history.corrections.edit(
                target.id, target.revision, f"{target.content}, corrected {n}", now=day(later)
            )
    checked = 0
    for world, recorded in itertools.product([-5, 0, 4.1, 9.9, 17, 25, 40], [0, 3.3, 8.75, 15, 22.2, 31]):
        for status in ("all", "pending", "active", "rejected", "archived"):
            expected = await history.facts.list_facts(
                status=status, world_at=day(world), recorded_at=day(recorded), limit=10_000
            )
            wanted = () if status == "all" else (status,)
            got = await everything_at(book, world, recorded, statuses=wanted)
            assert {f.id: f for f in got} == {f.id: f for f in expected}, (world, recorded, status)
            checked += len(got)
    assert checked > 500  # the grid really held facts


async def test_facts_added_since_grow_the_arrays_and_anything_else_rebuilds_them(
    history: History, book: TimelineBook
) -> None:
    """A memory worker adding facts is the usual change: only the new rows are read. Any other change
    (a decision on an older fact, a correction) reads everything again. Either way the slice stays right."""

    async def agrees(world: float, recorded: float) -> None:
        for status in ("all", "pending", "active", "archived"):
            expected = await history.facts.list_facts(
                status=status, world_at=day(world), recorded_at=day(recorded), limit=10_000
            )
            got = await everything_at(book, world, recorded, statuses=() if status == "all" else (status,))
            assert statuses(got) == statuses(expected), (world, recorded, status)

    first = await insert(
        history, "Alice keeps bees", 1, type="semantic", origin="extraction", place=HOME, channel_scoped=True
    )
    await agrees(10, 10)
    assert (book.builds, book.appends) == (1, 0)
    made = [await insert(history, f"Fact {n}", 2 + n, valid_from=day(n)) for n in range(3)]
    outcome = await history.insert_facts([new_fact(f"Batch fact {n}", place=OTHER_GUILD) for n in range(4)])
    assert all(o.fact is not None for o in outcome)
    await agrees(10, 10)
    await agrees(1.5, 10)
    assert (book.builds, book.appends) == (1, 1)
    assert len(await book.spans()) == 8
    order = [f.id for f in (await book.slice(Point(), EVERYTHING, limit=100)).facts]  # now, on both axes
    batch = sorted((o.fact.id for o in outcome if o.fact is not None), reverse=True)  # learned now: latest start
    # Latest start first (valid_from, else when learned), then the newest id: the order holds across an append.
    assert order == [*batch, made[2].id, made[1].id, first.id, made[0].id]
    assert set((await book.extent()).places) == {"guild:500", HOME, "guild:600"}

    await history.decisions.decide(first.id, first.revision, "accept", now=day(20))  # an older row changed: read again
    await agrees(25, 25)
    await agrees(25, 15)
    assert (book.builds, book.appends) == (2, 1)


# -- forgotten and held rows ------------------------------------------------------------------------------


async def test_a_forgotten_fact_stays_as_a_marker_without_its_text(history: History, book: TimelineBook) -> None:
    secret = await insert(history, "Bob told a secret about the party", 1, subjects=(BOB, CAROL))
    kept = await insert(history, "Bob has a cat", 2, subjects=(BOB,))
    receipt, _changes = await history.erasure.forget(secret.id, now=day(3))
    stored = await ForgetQueue(history.store, history.facts).record_receipt(
        receipt, subjects=(BOB, CAROL), scope=GENERAL, now=day(3)
    )

    page = await book.slice(Point(day(5), day(5)), EVERYTHING)
    marker = next(f for f in page.facts if f.id == secret.id)
    assert (marker.content, marker.subjects, marker.status) == ("", (), "forgotten")
    info = page.forgotten[secret.id]
    assert (info.subjects, info.receipt_id) == ((BOB, CAROL), stored.id)
    assert info.forgotten_at is not None
    assert set(page.forgotten) == {secret.id}
    # Before it was forgotten it was believed: the marker shows the status it had then, still without text.
    earlier = await book.slice(Point(day(5), day(1.5)), EVERYTHING)
    assert [(f.id, f.status, f.content) for f in earlier.facts] == [(secret.id, "active", "")]
    # Found by who it was about (through its receipt), never by its text.
    assert {f.id for f in await everything_at(book, 5, 5, subjects=(CAROL,))} == {secret.id}
    assert {f.id for f in await everything_at(book, 5, 5, subjects=(BOB,))} == {secret.id, kept.id}
    assert await everything_at(book, 5, 5, text="secret") == []
    assert [f.id for f in await everything_at(book, 5, 5, statuses=("forgotten",))] == [secret.id]


async def test_a_fact_waiting_to_be_forgotten_is_left_out_until_the_forget_is_undone(
    history: History, book: TimelineBook
) -> None:
    fact = await insert(history, "Alice's locker code is 4242", 1)
    queue = ForgetQueue(history.store, history.facts)
    built = await book.spans()
    assert await book.spans() is built  # nothing moved: the arrays are kept

    scheduled = await queue.schedule(fact.id, fact.revision, due_at=day(1000))
    assert await everything_at(book, 5, 5) == []
    await queue.cancel(scheduled.id)
    assert [f.id for f in await everything_at(book, 5, 5)] == [fact.id]
    assert await book.spans() is not built


# -- filters ---------------------------------------------------------------------------------------------


async def test_filters_by_type_place_subject_and_text(history: History, book: TimelineBook) -> None:
    bees = await insert(history, "Alice keeps 100% organic bees", 1, type="semantic")
    walk = await insert(
        history, "The lantern walk is on the 21st", 2, subjects=(), place=HOME, type="procedural", channel_scoped=True
    )
    bob = await insert(history, "Bob sails on Sundays", 3, subjects=(BOB,), place=OTHER_GUILD, channel_scoped=True)
    accent = await insert(history, "Carol loves the ÉCLAIRS at the bakery", 4, subjects=(CAROL,))

    async def ids(**filters: Any) -> set[int]:
        return {f.id for f in await everything_at(book, 10, 10, **filters)}

    assert await ids(types=("semantic", "procedural")) == {bees.id, walk.id}
    assert await ids(places=("guild:500",)) == {bees.id, walk.id, accent.id}  # a server takes in its channels
    assert await ids(places=(HOME, OTHER_GUILD)) == {walk.id, bob.id}
    assert await ids(subjects=(BOB, CAROL)) == {bob.id, accent.id}
    assert await ids(text="SUNDAY") == {bob.id}
    assert await ids(text="100%") == {bees.id}  # LIKE's wildcards are taken literally
    assert await ids(text="0_") == set()
    assert await ids(text="éclairs") == {accent.id}  # letters beyond ASCII fold too
    assert await ids(text="   ") == {bees.id, walk.id, bob.id, accent.id}
    assert await ids(types=("semantic",), text="bees", subjects=(ALICE,)) == {bees.id}
    with pytest.raises(ValueError, match="unknown status 'done'"):
        TimelineFilter(statuses=("done",))


# -- diffs -------------------------------------------------------------------------------------------------


async def test_a_diff_between_two_recorded_times_lists_what_was_added_removed_and_changed(
    history: History, book: TimelineBook
) -> None:
    stays = await insert(history, "Alice is left-handed", 1)
    corrected = await insert(history, "Alice lives in Porto", 1)
    archived = await insert(history, "Bob buys sardines on Saturdays", 1, subjects=(BOB,))
    new_fact_ = await history.corrections.edit(corrected.id, corrected.revision, "Alice lives in Lisbon", now=day(5))
    await history.decisions.decide(archived.id, archived.revision, "archive", now=day(6))
    added = await insert(history, "Carol is learning the cello", 7, subjects=(CAROL,))

    diff = await book.diff(Point(day(10), day(2)), Point(day(10), day(8)), EVERYTHING)

    kinds = {(r.kind, r.before.id if r.before else None, r.after.id if r.after else None) for r in diff.rows}
    assert kinds == {
        ("changed", corrected.id, new_fact_[0].id),
        ("changed", archived.id, archived.id),
        ("added", None, added.id),
    }
    assert (diff.added, diff.removed, diff.changed) == (1, 0, 2)
    status_change = next(r for r in diff.rows if r.before is not None and r.before.id == archived.id)
    assert status_change.before is not None
    assert status_change.after is not None
    assert (status_change.before.status, status_change.after.status) == ("active", "archived")
    assert stays.id not in {r.after.id for r in diff.rows if r.after is not None}
    # The other way round the new fact was removed, and the correction goes back.
    backwards = await book.diff(Point(day(10), day(8)), Point(day(10), day(2)), EVERYTHING)
    assert {(r.kind, r.before.id if r.before else None) for r in backwards.rows} == {
        ("changed", new_fact_[0].id),
        ("changed", archived.id),
        ("removed", added.id),
    }


async def test_a_diff_is_capped_but_counts_everything(history: History, book: TimelineBook) -> None:
    for n in range(12):
        await insert(history, f"Fact {n}", 5)
    diff = await book.diff(Point(day(10), day(1)), Point(day(10), day(10)), EVERYTHING, limit=5)
    assert (diff.added, len(diff.rows)) == (12, 5)


# -- the axes, and times ---------------------------------------------------------------------------------------


async def test_the_extent_spans_every_time_the_facts_name(history: History, book: TimelineBook) -> None:
    empty = await book.extent()
    assert (empty.rows, empty.first_recorded, empty.first_world) == (0, None, None)
    await insert(
        history, "Alice moved to Porto", 10, valid_from=day(-30), valid_to=day(200), place=HOME, channel_scoped=True
    )
    await insert(history, "Bob has a cat", 20, subjects=(BOB,))

    extent = await book.extent()
    assert (extent.rows, extent.first_recorded, extent.first_world, extent.last_world) == (
        2,
        day(10),
        day(-30),
        day(200),
    )
    assert (extent.subjects, extent.places) == ((ALICE, BOB), ("guild:500", HOME))


async def test_times_are_exact_to_the_microsecond() -> None:
    moment = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
    stored = [moment.isoformat(), "2024-05-01T14:00:00.000001+02:00", None, moment.replace(microsecond=0).isoformat()]
    parsed = parse_times(stored, missing=-1).tolist()
    assert parsed == [micros(moment), micros(moment) - 123455, -1, micros(moment) - 123456]
    joined = ",".join(v or "" for v in stored)  # as the arrays are read: one string per column
    assert parse_times(joined, missing=-1, count=4).tolist() == parsed
    assert parse_times("", missing=-1, count=1).tolist() == [-1]  # one row, NULL
    with pytest.raises(ValueError, match="time zone"):
        micros(datetime(2024, 5, 1))  # noqa: DTZ001 (the naive time is the point)


@pytest.mark.parametrize("piece_chars", [1, 7, 40, 65_536])
async def test_long_columns_are_read_in_pieces_with_the_same_values(
    monkeypatch: pytest.MonkeyPatch, piece_chars: int
) -> None:
    """A column comes as one joined text; it is cut into pieces at separators (so no str call holds the GIL
    over megabytes) and every value, empty or not, first or last, is read as if it had not been cut."""
    rng = random.Random(piece_chars)
    moment = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
    stored = [
        rng.choice(
            [
                "",
                (moment + timedelta(minutes=rng.randrange(10**6))).isoformat(),
                (moment + timedelta(seconds=rng.randrange(10**6)))
                .astimezone(timezone(timedelta(hours=-5)))
                .isoformat(),
            ]
        )
        for _ in range(300)
    ]
    stored[-1] = ""  # a last NULL: the text ends with its separator
    ids = [rng.randrange(1, 10**12) for _ in stored]
    places = [rng.choice(["guild:1/2", "guild:1", "dm:77", ""]) for _ in stored]
    whole = (parse_times(stored, missing=-1).tolist(), ids, places)

    monkeypatch.setattr(timeline, "_PIECE_CHARS", piece_chars)
    assert parse_times(",".join(stored), missing=-1, count=len(stored)).tolist() == whole[0]
    assert timeline._ints(",".join(map(str, ids)), len(ids)).tolist() == whole[1]
    names, codes = timeline._codes(chr(31).join(places), len(places))
    assert [names[c] for c in codes] == whole[2]
    assert len(set(names)) == len(names)
    with pytest.raises(StoreError, match="2 ids for 3 rows"):
        timeline._ints("1,2", 3)
