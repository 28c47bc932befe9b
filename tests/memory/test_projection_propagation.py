"""A deleted or redacted message takes with it the projections that may quote it: the summary that
covered it and the reflections citing it (their projectors rebuild from what is left)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import pytest_asyncio

from app.memory.derived import Projections
from app.memory.facts import NewFact
from app.memory.history import History
from tests.memory.helpers import OTHER_PLACE, PLACE, turn

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def history(tmp_path: Path) -> AsyncIterator[History]:
    opened = await History.open(tmp_path / "history.db", tmp_path / "fts", tmp_path / "backups")
    yield opened
    await opened.close()


async def test_a_discord_deletion_drops_the_summary_and_reflections_that_may_quote_it(history: History) -> None:
    ids = await history.append_turns(
        [
            turn("my locker code is 4417", message_id=21),
            turn("lantern chatter", message_id=22),
            turn("elsewhere", message_id=23, place=OTHER_PLACE),
        ]
    )
    projections = Projections(history.store)
    await projections.save_summary(
        PLACE, "Alice shared her locker code 4417.", ids[1], watermark_name="rolling_summary"
    )
    await projections.save_summary(OTHER_PLACE, "Someone was elsewhere.", ids[2], watermark_name="rolling_summary")
    await projections.add_reflections(
        PLACE,
        [("Alice overshares codes.", [ids[0]], []), ("The lantern is a theme.", [ids[1]], [])],
        last_turn_id=ids[1],
        last_fact_id=0,
        watermark_name="reflection",
    )

    await history.redact_message("discord", 21, datetime.now(UTC))

    assert await projections.summary(PLACE) is None
    kept = await projections.summary(OTHER_PLACE)
    assert kept is not None
    assert kept.text == "Someone was elsewhere."
    assert [r.text for r in await projections.reflections([PLACE], 10)] == ["The lantern is a theme."]


async def test_forget_with_redacted_sources_lists_the_dropped_projections(history: History) -> None:
    ids = await history.append_turns([turn("Bob said his locker code is 4417", message_id=31)])
    outcome, _changes = await history.intake.insert(
        NewFact("Bob's locker code is 4417", "episodic", 5, 0.9, ("discord:7002",), PLACE, source_turn_ids=(ids[0],))
    )
    assert outcome.fact is not None
    projections = Projections(history.store)
    await projections.save_summary(PLACE, "Bob's locker code came up.", ids[0], watermark_name="rolling_summary")

    receipt = await history.forget_fact(outcome.fact.id, redact_sources=True)

    stores = dict(receipt.stores)
    assert stores["summaries"] == 1
    assert stores["reflections"] == 0
    assert await projections.summary(PLACE) is None


async def test_a_plain_forget_drops_every_projection_that_may_quote_the_fact(history: History) -> None:
    """Without --redact-sources the message stays, but nothing derived from the fact may keep its words."""
    ids = await history.append_turns(
        [
            turn("small talk", message_id=51),
            turn("Bob said his locker code is 4417", message_id=52),
            turn("later chatter", message_id=53),
            turn("elsewhere", message_id=54, place=OTHER_PLACE),
        ]
    )
    outcome, _changes = await history.intake.insert(
        NewFact("Bob's locker code is 4417", "episodic", 5, 0.9, ("discord:7002",), PLACE, source_turn_ids=(ids[1],))
    )
    assert outcome.fact is not None
    fact_id = outcome.fact.id
    projections = Projections(history.store)
    await projections.save_summary(PLACE, "Bob shared his locker code 4417.", ids[2], watermark_name="rolling_summary")
    await projections.save_summary(OTHER_PLACE, "Someone was elsewhere.", ids[3], watermark_name="rolling_summary")
    await projections.add_reflections(
        PLACE,
        [
            ("Bob trusts the channel with codes.", [], [fact_id]),  # cites the fact
            ("Bob overshares.", [ids[1]], []),  # cites the message the fact came from
            ("Small talk is rare here.", [ids[0]], []),  # cites neither
        ],
        last_turn_id=ids[2],
        last_fact_id=fact_id,
        watermark_name="reflection",
    )

    receipt = await history.forget_fact(fact_id)

    stores = dict(receipt.stores)
    assert stores["summaries"] == 1
    assert stores["reflections"] == 2
    assert await projections.summary(PLACE) is None
    other = await projections.summary(OTHER_PLACE)
    assert other is not None
    assert other.text == "Someone was elsewhere."
    assert [r.text for r in await projections.reflections([PLACE], 10)] == ["Small talk is rare here."]
    # The message itself stays (the owner did not ask to redact it).
    (row,) = await history.store.read_all("SELECT content FROM turns WHERE id = ?", (ids[1],))
    assert row == ("Bob said his locker code is 4417",)
    assert [name for name, _n in receipt.stores].count("summaries") == 1


async def test_a_learnt_fact_needs_a_source_still_standing_checked_in_its_insert(history: History) -> None:
    ids = await history.append_turns([turn("I keep bees", message_id=41), turn("and goats", message_id=42)])
    await history.redact_message("discord", 41, datetime.now(UTC))

    def learnt(text: str, sources: tuple[int, ...], origin: str = "extraction") -> NewFact:
        return NewFact(text, "episodic", 5, 0.9, ("discord:7001",), PLACE, source_turn_ids=sources, origin=origin)

    outcomes = await history.insert_facts(
        [
            learnt("Alice keeps bees.", (ids[0],)),  # its only source was deleted meanwhile
            learnt("Alice keeps goats.", (ids[1],)),
            learnt("Alice keeps bees and goats.", (ids[0], ids[1])),  # one source still stands
            learnt("Alice keeps bees, she said.", (ids[0],), origin="remember"),  # the owner's word needs none
        ]
    )
    assert [o.outcome for o in outcomes] == ["sources_gone", "inserted", "inserted", "inserted"]


async def test_a_deletion_cut_short_by_a_crash_is_finished_at_the_next_start(tmp_path: Path) -> None:
    """What a crash right after the redaction leaves behind (the turn redacted, its fact and summary still
    there) is finished when the familiar opens its memory again."""
    paths = (tmp_path / "history.db", tmp_path / "fts", tmp_path / "backups")
    history = await History.open(*paths)
    try:
        ids = await history.append_turns([turn("my locker code is 4417", message_id=61), turn("ok", message_id=62)])
        outcome, _changes = await history.intake.insert(
            NewFact(
                "Alice's locker code is 4417", "episodic", 5, 0.9, ("discord:7001",), PLACE, source_turn_ids=(ids[0],)
            )
        )
        assert outcome.fact is not None
        await Projections(history.store).save_summary(
            PLACE, "Alice shared a code.", ids[1], watermark_name="rolling_summary"
        )
        # The first step of handling the deletion commits; then the process dies.
        await history.store.redact_message("discord", 61, datetime.now(UTC))
        assert (await history.facts.get(outcome.fact.id)).status == "active"  # type: ignore[union-attr]
    finally:
        await history.close()

    reopened = await History.open(*paths)
    try:
        fact = await reopened.facts.get(outcome.fact.id)
        assert fact is not None
        assert fact.status == "forgotten"
        assert fact.content == ""
        assert await Projections(reopened.store).summary(PLACE) is None
        assert await reopened.store.read_all("SELECT propagated FROM deleted_sources") == [(1,)]
        assert await reopened.erasure.finish_interrupted_deletions() == 0  # nothing left to finish
    finally:
        await reopened.close()
