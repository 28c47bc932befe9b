"""The owner's undo in the store: honest reversals (each a logged state, checked against the revision
seen), deferred forgets held out of every read until applied or cancelled, receipts, and the catalog
of names. Real SQLite and tantivy under tmp_path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from app.memory.catalog import Catalog
from app.memory.errors import RevisionConflictError
from app.memory.facts import Fact, FactError, NewFact
from app.memory.forgets import ForgetQueue
from app.memory.history import History
from tests.memory.helpers import PLACE, turn

pytestmark = pytest.mark.asyncio

ALICE = "discord:7001"
BOB = "discord:7002"
DM = "dm:7001"
T = datetime(2025, 1, 1, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T + timedelta(hours=hours)


def new_fact(content: str, **overrides: Any) -> NewFact:
    fields: dict[str, Any] = {"type": "semantic", "importance": 5, "confidence": 0.9, "subjects": (ALICE,)}
    fields["place"] = DM
    fields.update(overrides)
    return NewFact(content=content, **fields)


@pytest_asyncio.fixture
async def history(tmp_path: Path) -> AsyncIterator[History]:
    opened = await History.open(tmp_path / "history.db", tmp_path / "fts", tmp_path / "backups")
    yield opened
    await opened.close()


async def inserted(history: History, new: NewFact, now: datetime = T) -> Fact:
    outcome, _changes = await history.intake.insert(new, now=now)
    assert outcome.outcome == "inserted", outcome
    assert outcome.fact is not None
    return outcome.fact


async def status_at(history: History, fact_id: int, hours: float) -> str | None:
    found = await history.facts.list_facts(status="all", world_at=at(hours), recorded_at=at(hours))
    return next((f.status for f in found if f.id == fact_id), None)


# -- reversals ----------------------------------------------------------------------------------------


async def test_undoing_an_accept_or_a_reject_reopens_the_fact_and_the_log_keeps_both(history: History) -> None:
    fact = await inserted(history, new_fact("Alice's favourite colour is teal"))
    assert fact.status == "pending"
    accepted = await history.decisions.decide(fact.id, fact.revision, "accept", now=at(1))
    reopened = await history.decisions.decide(accepted.id, accepted.revision, "reopen", now=at(2))
    assert reopened.status == "pending"
    assert reopened.revision == accepted.revision + 1
    assert [f.id for f in await history.facts.pending()] == [fact.id]
    assert await status_at(history, fact.id, 1.5) == "active"  # what was believed in between is kept
    assert await status_at(history, fact.id, 2.5) == "pending"

    rejected = await history.decisions.decide(reopened.id, reopened.revision, "reject", now=at(3))
    back = await history.decisions.decide(rejected.id, rejected.revision, "reopen", now=at(4))
    assert back.status == "pending"
    assert await status_at(history, fact.id, 3.5) == "rejected"
    with pytest.raises(RevisionConflictError, match="changed since you saw it"):
        await history.decisions.decide(back.id, rejected.revision, "reopen")
    with pytest.raises(FactError, match="only an accepted or rejected fact"):
        await history.decisions.decide(back.id, back.revision, "reopen")


async def test_undoing_an_archive_and_a_snooze(history: History) -> None:
    fact = await inserted(history, new_fact("Alice lives by the harbour", type="episodic"))
    assert fact.status == "active"
    archived = await history.decisions.decide(fact.id, fact.revision, "archive", now=at(1))
    restored = await history.decisions.decide(archived.id, archived.revision, "unarchive", now=at(2))
    assert restored.status == "active"
    assert [f.id for f in await history.facts.list_facts()] == [fact.id]
    assert await status_at(history, fact.id, 1.5) == "archived"
    with pytest.raises(FactError, match="not archived"):
        await history.decisions.decide(restored.id, restored.revision, "unarchive")

    pending = await inserted(history, new_fact("Alice prefers tea to coffee"))
    snoozed = await history.decisions.decide(
        pending.id, pending.revision, "snooze", until=datetime.now(UTC) + timedelta(days=1)
    )
    assert await history.facts.pending() == []
    unsnoozed = await history.decisions.decide(snoozed.id, snoozed.revision, "restore_snooze", until=None)
    assert unsnoozed.snoozed_until is None
    assert [f.id for f in await history.facts.pending()] == [pending.id]
    with pytest.raises(RevisionConflictError):
        await history.decisions.decide(snoozed.id, snoozed.revision, "restore_snooze", until=None)


async def test_undoing_an_edit_reopens_the_version_before_with_its_own_id_dates_and_status(history: History) -> None:
    fact = await inserted(history, new_fact("Alice plays the cello", valid_from=at(-48)))
    assert fact.status == "pending"
    edited, _changes = await history.corrections.edit(fact.id, fact.revision, "Alice plays the viola", now=at(1))
    assert edited.status == "active"
    reverted, changes = await history.corrections.revert_edit(edited.id, edited.revision, now=at(2))
    # the very version from before, as it was: its id, its dates, back in the queue with its status
    assert reverted.id == fact.id
    assert (reverted.created_at, reverted.valid_from) == (fact.created_at, fact.valid_from)
    assert (reverted.content, reverted.status) == ("Alice plays the cello", "pending")
    assert reverted.is_head
    assert reverted.superseded_by is None
    assert reverted.revision > fact.revision  # a stale view of it is refused
    assert changes.facts_index
    assert [f.id for f in await history.facts.pending()] == [fact.id]
    assert await history.facts.get(edited.id + 1) is None  # no copy was written
    # the edit's version gave way back to it, and stays in the history
    undone = await history.facts.get(edited.id)
    assert undone is not None
    assert (undone.superseded_by, undone.superseded_at, undone.status) == (fact.id, at(2), "archived")
    chain = await history.facts.chain(edited.id)
    assert [f.id for f in chain.facts] == [fact.id, edited.id]
    assert chain.head_id == fact.id
    assert (await history.facts.chain(fact.id)).head_id == fact.id
    # The edit stood for an hour: the slice recorded then still shows it (beside the version it replaced,
    # whose row, reopened in place, no longer says when it was retired), and after the undo only that one.
    between = await history.facts.list_facts(status="all", world_at=at(1.5), recorded_at=at(1.5))
    assert ("Alice plays the viola", "active") in [(f.content, f.status) for f in between]
    after = await history.facts.list_facts(status="all", world_at=at(2.5), recorded_at=at(2.5))
    assert [(f.id, f.status) for f in after] == [(fact.id, "pending")]
    with pytest.raises(RevisionConflictError, match="superseded"):
        await history.corrections.revert_edit(edited.id, undone.revision)
    # the undone edit is not an edit to undo again; a new edit of the reopened version is, once
    with pytest.raises(FactError, match="no edit to undo"):
        await history.corrections.revert_edit(reverted.id, reverted.revision)
    again, _c = await history.corrections.edit(reverted.id, reverted.revision, "Alice plays the harp", now=at(3))
    assert again.id not in (fact.id, edited.id)
    back, _c = await history.corrections.revert_edit(again.id, again.revision, now=at(4))
    assert back.id == fact.id
    assert [f.id for f in (await history.facts.chain(fact.id)).facts] == [fact.id, edited.id, again.id]
    unedited = await inserted(history, new_fact("Bob whistles", subjects=(BOB,)))
    with pytest.raises(FactError, match="no edit to undo"):
        await history.corrections.revert_edit(unedited.id, unedited.revision)


async def test_undoing_an_edit_that_found_its_text_known_leaves_that_fact_as_it_was(history: History) -> None:
    """An edit whose text is a fact already (a twin) links to it and accepts it: its undo reopens the version
    before and puts the twin back in the queue, never retiring a fact that stood on its own."""
    twin = await inserted(history, new_fact("Alice plays the viola"), now=at(-1))
    fact = await inserted(history, new_fact("Alice plays the cello"))
    linked, _c = await history.corrections.edit(fact.id, fact.revision, "Alice plays the viola", now=at(1))
    assert (linked.id, linked.status) == (twin.id, "active")
    reverted, _c = await history.corrections.revert_edit(linked.id, linked.revision, now=at(2))
    assert (reverted.id, reverted.status, reverted.is_head) == (fact.id, "pending", True)
    still = await history.facts.get(twin.id)
    assert still is not None
    assert (still.is_head, still.status, still.created_at) == (True, "pending", twin.created_at)
    assert sorted(f.id for f in await history.facts.pending()) == sorted([fact.id, twin.id])


# -- deferred forgets -----------------------------------------------------------------------------------


async def test_a_scheduled_forget_hides_the_whole_chain_at_once_and_cancel_brings_it_back(history: History) -> None:
    queue = ForgetQueue(history.store, history.facts)
    first = await inserted(history, new_fact("Alice's locker is number 12", type="episodic"))
    head, _c = await history.corrections.edit(first.id, first.revision, "Alice's locker is number 21")
    pending = await inserted(history, new_fact("Alice's locker code is 4242"))
    await history.facts_index.flush()
    before_recall = [f.id for f, _s in await history.recall("locker", DM)]
    assert before_recall == [head.id]

    scheduled = await queue.schedule(head.id, head.revision, due_at=datetime.now(UTC) + timedelta(seconds=10))
    assert set(scheduled.held_ids) == {first.id, head.id}
    assert await history.facts.list_facts() == []
    sliced = await history.facts.list_facts(status="all", recorded_at=datetime.now(UTC))
    assert [f.id for f in sliced] == [pending.id]
    assert await history.recall("locker", DM) == []
    assert await history.facts.related_current(pending) == []
    with pytest.raises(FactError, match="already being forgotten"):
        await queue.schedule(first.id, (await history.facts.get(first.id) or first).revision, due_at=at(1))

    hold = await queue.schedule(pending.id, pending.revision, due_at=datetime.now(UTC) + timedelta(seconds=10))
    assert await history.facts.pending() == []
    assert await history.facts.snoozed_count() == 0

    cancelled = await queue.cancel(scheduled.id)
    assert cancelled.fact_id == head.id
    assert [f.id for f, _s in await history.recall("locker", DM)] == [head.id]
    assert (await history.facts.get(head.id)) == head  # nothing about the fact changed
    await queue.cancel(hold.id)
    assert [f.id for f in await history.facts.pending()] == [pending.id]
    with pytest.raises(FactError, match="already applied"):
        await queue.cancel(hold.id)


async def test_scheduling_checks_the_revision_seen(history: History) -> None:
    queue = ForgetQueue(history.store, history.facts)
    fact = await inserted(history, new_fact("Alice owns a red bicycle", type="episodic"))
    with pytest.raises(RevisionConflictError, match="changed since you saw it"):
        await queue.schedule(fact.id, fact.revision + 1, due_at=at(1))
    assert await queue.scheduled() == []


async def test_due_forgets_complete_with_a_receipt_that_labels_the_tombstone(history: History) -> None:
    queue = ForgetQueue(history.store, history.facts)
    fact = await inserted(history, new_fact("Alice's cat is called Ash", type="episodic"))
    later = await inserted(history, new_fact("Alice's dog is called Birch", type="episodic"))
    now = datetime.now(UTC)
    soon = await queue.schedule(fact.id, fact.revision, due_at=now - timedelta(seconds=1))
    await queue.schedule(later.id, later.revision, due_at=now + timedelta(hours=1))
    assert [s.id for s in await queue.scheduled(due_by=now)] == [soon.id]

    receipt = await history.forget_fact(fact.id)
    stored = await queue.complete(soon.id, receipt, subjects=fact.subjects, scope=fact.scope)
    assert stored is not None
    assert stored.fact_ids == (fact.id,)
    assert stored.subjects == (ALICE,)
    assert stored.scope == DM
    assert [s.fact_id for s in await queue.scheduled()] == [later.id]
    labelled = await queue.receipts_for_tombstones([receipt.tombstone_id])
    assert labelled[receipt.tombstone_id].id == stored.id
    assert [r.id for r in await queue.receipts()] == [stored.id]
    assert "Ash" not in repr(stored)


async def test_the_preview_counts_what_the_forget_then_erases(history: History) -> None:
    (source,) = await history.append_turns([turn("my cat is called Ash", message_id=1)])
    fact = await inserted(history, new_fact("Alice's cat is called Ash", source_turn_ids=(source,), place=PLACE))
    await history.store.write(
        [
            (
                "INSERT INTO fact_embeddings (fact_id, model, dim, vector, created_at) VALUES (?, 'm', 1, x'00', ?)",
                (fact.id, T.isoformat()),
            ),
            (
                "INSERT INTO people_dossiers (canonical_key, scope, text, last_fact_id, updated_at)"
                " VALUES (?, ?, 'a cat person', ?, ?)",
                (ALICE, PLACE, fact.id, T.isoformat()),
            ),
        ]
    )
    preview = await history.erasure.preview(fact.id, redact_sources=True)
    assert preview.fact_ids == (fact.id,)
    assert preview.source_turn_ids == (source,)
    receipt = await history.forget_fact(fact.id, redact_sources=True)
    assert dict(preview.stores) == dict(receipt.stores)
    with pytest.raises(FactError, match="already forgotten"):
        await history.erasure.preview(fact.id)


async def test_the_preview_counts_every_revision_and_what_quoted_the_replies(history: History) -> None:
    """An edited source message has two revisions holding its text, and a reply quoting it sits in a
    summary: the preview counts what the forget then really erases, not what the facts point at."""
    (source,) = await history.append_turns([turn("my cat is called Ash and she bites", message_id=1, minutes=1)])
    fact = await inserted(history, new_fact("Alice's cat is called Ash", source_turn_ids=(source,), place=PLACE))
    await history.edit_message("discord", 1, "my cat is called Ash and she bites hard", at(1))
    (reply,) = await history.append_turns(
        [
            turn(
                "Ash! my cat is called Ash and she bites, you said",
                message_id=2,
                author=0,
                minutes=2,
                platform="discord",
            )
        ]
    )
    await history.store.write(
        [
            ("UPDATE turns SET author_key = 'familiar:self', reply_to = 1 WHERE id = ?", (reply,)),
            (
                "INSERT INTO summaries (place, text, last_turn_id, updated_at) VALUES (?, 'cats', ?, ?)",
                (PLACE, reply, T.isoformat()),
            ),
        ]
    )
    preview = await history.erasure.preview(fact.id, redact_sources=True)
    receipt = await history.forget_fact(fact.id, redact_sources=True)
    assert len(receipt.redacted_turn_ids) == 2  # both revisions of the message
    assert receipt.redacted_reply_ids == (reply,)
    assert dict(preview.stores) == dict(receipt.stores)
    assert dict(receipt.stores)["turns"] == 2


# -- the catalog of names ---------------------------------------------------------------------------------


async def test_places_are_known_from_turns_and_named_when_seen(history: History) -> None:
    catalog = Catalog(history.store)
    await history.append_turns([turn("hello", message_id=1, name="alice"), turn("hi", message_id=2, place=DM)])
    assert await catalog.known_places() == {PLACE: "", DM: ""}
    assert await catalog.place_names([PLACE]) == {}
    written = await catalog.name_places({"guild:500": "Lantern Club", PLACE: "general"})
    assert written == 2
    assert await catalog.name_places({"guild:500": "Lantern Club", PLACE: "general"}) == 0  # unchanged: no write
    assert await catalog.place_names([PLACE, "guild:500", DM]) == {PLACE: "general", "guild:500": "Lantern Club"}
    assert await catalog.display_names(["discord:7001", "discord:9"]) == {"discord:7001": "alice"}
    (person,) = await catalog.people()
    assert (person.participant.display_name, person.current_facts) == ("alice", 0)


async def test_a_fact_waiting_to_be_forgotten_is_not_superseded_meanwhile(history: History) -> None:
    """Linking it to a newer fact would carry the forget over to that one (a chain is forgotten whole)."""
    queue = ForgetQueue(history.store, history.facts)
    old = await inserted(history, new_fact("Alice lives in Lisbon", type="episodic"))
    new = await inserted(history, new_fact("Alice lives in Porto", type="episodic"))
    scheduled = await queue.schedule(old.id, old.revision, due_at=datetime.now(UTC) + timedelta(seconds=10))
    assert await history.corrections.supersede(old.id, new.id) == "skipped"
    assert await history.corrections.supersede(new.id, old.id) == "skipped"
    await queue.cancel(scheduled.id)
    assert await history.corrections.supersede(old.id, new.id) == "superseded"
