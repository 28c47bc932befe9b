"""The pending queue's decisions without a window: where the focus goes after one, what a read from the
store keeps while decisions are in flight, the counter as steps are done and undone, and a decision's steps
when some of them are refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.runtime.api.views import FactView, PendingItem, PendingQueue, PlaceRef
from app.runtime.errors import FamiliarError, StaleRevisionError
from app.ui.fact_actions import FactStep
from app.ui.state.pending_queue import QueueDecision, QueueState, focus_after_decision, is_open

NOW = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)


def fact(fact_id: int, status: Any = "pending", **fields: Any) -> FactView:
    made = FactView(
        id=fact_id,
        content=f"fact {fact_id}",
        type="semantic",
        importance=5,
        confidence=0.9,
        subjects=(),
        speaker=None,
        scope=PlaceRef("local", "Local chat"),
        status=status,
        revision=1,
        origin="extraction",
        created_at=NOW - timedelta(days=1),
        superseded_at=None,
        superseded_by=None,
        valid_from=None,
        valid_to=None,
        snoozed_until=None,
    )
    return dataclasses.replace(made, **fields)


def item(fact_id: int, **fields: Any) -> PendingItem:
    return PendingItem(fact(fact_id, **fields), (), ())


def done(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that never waits on anything (the fake steps below) to its end."""
    with pytest.raises(StopIteration):
        coroutine.send(None)


# -- the focus after a decision ------------------------------------------------------------------------------
ROWS = {10: 0, 11: 1, 12: 2, 13: 3, 14: 4}  # fact id -> row, before the decision


def after(*taken: int) -> dict[int, int]:
    """The rows once the facts `taken` are out of the list."""
    left = [f for f in ROWS if f not in taken]
    return {f: row for row, f in enumerate(left)}


def test_deciding_the_focused_item_focuses_the_next_one_never_the_top() -> None:
    rows = after(12)
    assert focus_after_decision(12, [12], [2], 2, rows.get) == 2  # fact 13, now in row 2


def test_deciding_the_last_item_focuses_the_one_before() -> None:
    rows = after(14)
    assert focus_after_decision(14, [14], [4], 4, rows.get) == 4  # past the end: the pane clamps it to row 3


def test_deciding_selected_items_leaves_the_focus_where_it_is() -> None:
    rows = after(10, 11)
    assert focus_after_decision(13, [10, 11], [0, 1], 3, rows.get) == rows[13] == 1


def test_deciding_a_batch_with_the_focus_in_it_goes_past_the_last_one_decided() -> None:
    rows = after(11, 12)
    assert focus_after_decision(12, [11, 12], [1, 2], 2, rows.get) == rows[13] == 1
    rows = after(10, 11)
    assert focus_after_decision(11, [10, 11], [0, 1], 1, rows.get) == rows[12] == 0
    rows = after(11, 13)
    assert focus_after_decision(11, [11, 13], [1, 3], 1, rows.get) == rows[14] == 2  # past the last one decided


def test_nothing_taken_leaves_the_row() -> None:
    assert focus_after_decision(None, [99], [], 3, after().get) == 3


# -- in flight, touched, read --------------------------------------------------------------------------------
def test_a_read_beside_decisions_does_not_bring_them_back() -> None:
    state = QueueState()
    state.note_conflict(10, "changed meanwhile")
    since = state.generation  # a read begins ...
    state.take_out([10, 11])  # ... two decisions are taken out ...
    assert state.deciding
    assert state.in_flight(10)
    assert state.conflict(10) is None, "a new decision: the old note goes"
    state.landed([10])
    state.settled([10])  # ... one of them settles
    read = PendingQueue(tuple(item(i) for i in (10, 11, 12)), pending=3, snoozed=1)
    fresh, recent = state.read(read, since)
    assert [i.fact.id for i in fresh] == [12], "in flight (11) or settled since the read began (10): not the read's"
    assert recent == {10}
    assert (state.pending, state.snoozed) == (3, 1)
    # A read begun after the decision settled takes the fact as the store has it.
    fresh, recent = state.read(read, state.generation)
    assert ([i.fact.id for i in fresh], recent) == ([10, 12], set())


def test_counts_read_beside_a_decision_are_counted_again() -> None:
    state = QueueState()
    counts = PendingQueue((), pending=4, snoozed=2)
    since = state.generation
    state.touch(10)
    assert not state.recount(counts, since), "a decision settled while it counted"
    since = state.generation
    state.take_out([11])
    assert not state.recount(counts, since), "a decision in flight"
    state.settled([11])
    assert state.recount(counts, state.generation)
    assert (state.pending, state.snoozed) == (4, 2)


def test_the_counter_follows_each_step_done_and_undone() -> None:
    state = QueueState()
    state.pending, state.snoozed = 5, 1
    pending, accepted = fact(1), fact(1, status="active")
    assert not state.settle_step(pending, accepted, NOW), "accepted: out of the list"
    assert (state.pending, state.snoozed) == (4, 1)
    assert state.settle_step(accepted, pending, NOW), "undone: back in the list"
    assert (state.pending, state.snoozed) == (5, 1)
    snoozed = fact(1, snoozed_until=NOW + timedelta(days=1))
    assert not state.settle_step(pending, snoozed, NOW)
    assert (state.pending, state.snoozed) == (4, 2)
    state.show_snoozed = True
    assert state.settle_step(pending, snoozed, NOW), "listed while snoozed ones are shown"
    edited = fact(2)  # an edit makes a new version (a new id) that is still to decide
    old = fact(1, superseded_at=NOW, superseded_by=2)
    since = state.generation
    assert state.settle_step(fact(1), edited, NOW)
    assert not is_open(old)
    _fresh, recent = state.read(PendingQueue((), 0, 0), since)
    assert recent == {1, 2}, "both versions touched"


def test_more_is_fetched_when_the_loaded_part_runs_low() -> None:
    state = QueueState()
    state.pending = 45
    assert not state.needs_more(45, 40)
    assert state.needs_more(39, 40)
    state.take_out(range(100, 106))
    assert not state.needs_more(39, 40), "those in flight are not left to load"


def test_conflict_notes_only_for_facts_still_listed() -> None:
    state = QueueState()
    state.note_conflict(1, "a")
    state.note_conflict(2, "b")
    state.keep_conflicts(lambda fact_id: fact_id == 2)
    assert (state.conflict(1), state.conflict(2)) == (None, "b")


# -- a decision ----------------------------------------------------------------------------------------------
def moves(refuse: set[int]) -> tuple[Any, Any]:
    async def forward(current: FactView) -> FactView:
        if current.id in refuse:
            raise StaleRevisionError("changed meanwhile", current.id, None)
        return dataclasses.replace(current, status="active")

    async def backward(current: FactView) -> FactView:
        return dataclasses.replace(current, status="pending")

    return forward, backward


def test_a_decision_undoes_only_the_steps_it_did() -> None:
    forward, backward = moves(refuse={2})
    steps = [(item(i), i * 10, FactStep(f"Accepted {i}", fact(i), forward, backward)) for i in (1, 2, 3)]
    seen: list[tuple[int, int, str, str, bool]] = []
    decision = QueueDecision(
        "accept", steps, lambda it, order, b, a, undoing: seen.append((it.fact.id, order, b.status, a.status, undoing))
    )
    assert decision.label == "Accepted 3 facts"
    done(decision.redo())
    assert [(it.fact.id, order) for it, order, _error in decision.failures] == [(2, 20)]
    assert [i.fact.id for i in decision.items] == [1, 3]
    assert decision.label == "Accepted 2 facts"
    done(decision.undo())
    done(decision.redo())  # redone: the steps it did, nothing refused counted twice
    assert seen == [
        (1, 10, "pending", "active", False),
        (3, 30, "pending", "active", False),
        (3, 30, "active", "pending", True),
        (1, 10, "active", "pending", True),
        (1, 10, "pending", "active", False),
        (3, 30, "pending", "active", False),
    ]
    assert len(decision.failures) == 1


def test_a_decision_every_step_of_which_is_refused_raises_the_first_error() -> None:
    forward, backward = moves(refuse={1, 2})
    steps = [(item(i), i, FactStep(f"Accepted {i}", fact(i), forward, backward)) for i in (1, 2)]
    decision = QueueDecision("reject", steps, lambda *_args: None)
    with pytest.raises(FamiliarError, match="changed meanwhile"):
        decision.redo().send(None)
    assert decision.undo_window is None
    assert QueueDecision("snooze", steps[:1], lambda *_args: None).label == "Accepted 1"
