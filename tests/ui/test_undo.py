"""Undo on the real runtime (a real store in a tmp folder): every action on a fact is undone by Ctrl+Z
or its notice and redone by Ctrl+Shift+Z, each through an honest, revision-checked reversal; forgets
are deferred and applied when their undo window ends or when the familiar closes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from app.memory.facts import NewFact
from app.runtime.api.facade import MemoryApi
from app.runtime.api.views import FactView
from app.runtime.service import Familiar
from app.ui import fact_actions
from app.ui.main_window import MainWindow
from app.ui.undo import Reversible, UndoCentre
from app.ui.widgets.notices import UNDO_NOTICE_MS
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, Run, make_context, settle

pytestmark = QT_STRICT

PLACE = "guild:500/501"
ALICE = "discord:7001"


def pending_fact(run: Run[Any], familiar: Familiar, text: str) -> FactView:
    outcome = run(familiar.history.insert_fact(NewFact(text, "semantic", 6, 0.9, (ALICE,), PLACE, channel_scoped=True)))
    assert outcome.fact is not None
    return run(familiar.memory.fact(outcome.fact.id)).fact


def active_fact(run: Run[Any], familiar: Familiar, text: str) -> FactView:
    return run(familiar.memory.remember(text, PLACE, subjects=(ALICE,))).fact


def stored(run: Run[Any], familiar: Familiar, fact_id: int) -> FactView:
    return run(familiar.memory.fact(fact_id)).fact


def trigger(qtbot: QtBot, action: Any) -> None:
    action.trigger()
    settle(qtbot)


Case = tuple[
    Callable[[Run[Any], Familiar], FactView],  # make the fact
    Callable[[MemoryApi, FactView], Reversible],  # the action
    Callable[[FactView], bool],  # done?
    Callable[[FactView], bool],  # undone?
]
LATER = datetime.now(UTC) + timedelta(days=2)
CASES: dict[str, Case] = {
    "accept": (
        lambda run, f: pending_fact(run, f, "Alice's cat is called Ash"),
        lambda m, fact: fact_actions.accept(m, fact),
        lambda v: v.status == "active",
        lambda v: v.status == "pending",
    ),
    "reject": (
        lambda run, f: pending_fact(run, f, "Alice's cat is called Ash"),
        lambda m, fact: fact_actions.reject(m, fact),
        lambda v: v.status == "rejected",
        lambda v: v.status == "pending",
    ),
    "archive": (
        lambda run, f: active_fact(run, f, "Alice lives by the harbour"),
        lambda m, fact: fact_actions.archive(m, fact),
        lambda v: v.status == "archived",
        lambda v: v.status == "active",
    ),
    "snooze": (
        lambda run, f: pending_fact(run, f, "Alice's cat is called Ash"),
        lambda m, fact: fact_actions.snooze(m, fact, LATER),
        lambda v: v.snoozed_until is not None,
        lambda v: v.snoozed_until is None and v.status == "pending",
    ),
    "edit": (
        lambda run, f: active_fact(run, f, "Alice plays the cello"),
        lambda m, fact: fact_actions.edit(m, fact, "Alice plays the viola"),
        lambda v: v.content == "Alice plays the viola" and v.is_head,
        lambda v: v.content == "Alice plays the cello" and v.is_head,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_action_is_undone_and_redone_through_the_store(
    name: str, qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    make_fact, build, done, undone = CASES[name]
    undo = make_context(qtbot, memory_facade).undo
    fact = make_fact(run, real_familiar)
    step = build(memory_facade.memory, fact)

    run(undo.perform(step))
    current: FactView = step.current  # type: ignore[attr-defined]
    assert done(stored(run, real_familiar, current.id))
    (notice,) = undo.notices.notices()
    assert notice.text == step.label
    assert notice.action_button is not None
    assert notice.action_button.text() == "Undo"
    assert notice.remaining_ms > UNDO_NOTICE_MS - 1_000  # it stays at least 8 s
    assert undo.undo_action.text() == f"&Undo {step.label}"

    trigger(qtbot, undo.undo_action)
    current = step.current  # type: ignore[attr-defined]
    assert undone(stored(run, real_familiar, current.id))
    assert undo.redo_action.isEnabled()
    trigger(qtbot, undo.redo_action)
    current = step.current  # type: ignore[attr-defined]
    assert done(stored(run, real_familiar, current.id))
    # and once more back, from the notice
    qtbot.mouseClick(notice.action_button, Qt.MouseButton.LeftButton)
    settle(qtbot)
    assert undone(stored(run, real_familiar, step.current.id))  # type: ignore[attr-defined]


def test_ctrl_z_and_ctrl_shift_z_in_the_window(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    window = MainWindow(memory_facade)
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    qtbot.waitActive(window)
    fact = pending_fact(run, real_familiar, "Alice keeps bees")
    run(window.undo.perform(fact_actions.accept(memory_facade.memory, fact)))
    window.navigation.setFocus()
    qtbot.keyClick(window.navigation, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    settle(qtbot)
    assert stored(run, real_familiar, fact.id).status == "pending"
    qtbot.keyClick(
        window.navigation, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    )
    settle(qtbot)
    assert stored(run, real_familiar, fact.id).status == "active"
    run(window.shutdown())


def test_actions_in_a_row_share_one_notice_whose_undo_is_the_latest_and_ctrl_z_the_earlier_ones(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    undo = make_context(qtbot, memory_facade).undo
    facts = [pending_fact(run, real_familiar, f"Alice keeps {what}") for what in ("bees", "a kettle", "a diary")]
    for fact in facts:
        run(undo.perform(fact_actions.accept(memory_facade.memory, fact)))
    (notice,) = undo.notices.notices()  # one box said again, not a stack shifting at every key
    assert notice.text == "Accepted “Alice keeps a diary” · 2 earlier: Ctrl+Z"
    assert notice.remaining_ms > UNDO_NOTICE_MS - 1_000  # counted from the latest
    assert notice.action_button is not None

    qtbot.mouseClick(notice.action_button, Qt.MouseButton.LeftButton)
    settle(qtbot)
    assert [stored(run, real_familiar, f.id).status for f in facts] == ["active", "active", "pending"]
    assert notice.is_gone
    trigger(qtbot, undo.undo_action)
    assert [stored(run, real_familiar, f.id).status for f in facts] == ["active", "pending", "pending"]

    # A forget has a notice of its own (its undo window); what follows it starts a new shared one.
    kept = active_fact(run, real_familiar, "Alice's locker holds a secret")
    run(undo.perform(fact_actions.forget(memory_facade.memory, kept)))
    run(undo.perform(fact_actions.accept(memory_facade.memory, pending_fact(run, real_familiar, "Alice keeps owls"))))
    texts = [n.text for n in undo.notices.notices()]
    assert len(texts) == 2
    assert texts[0].startswith("Forgot")
    assert texts[1] == "Accepted “Alice keeps owls”"


def offered(notice: Any) -> bool:
    """The notice offers its action (a button one can press)."""
    return notice.action_button is not None and not notice.action_button.isHidden()


def test_a_notice_whose_action_ctrl_z_undid_no_longer_offers_to_undo_it(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    undo = make_context(qtbot, memory_facade).undo
    fact = pending_fact(run, real_familiar, "Alice keeps bees")
    step = fact_actions.accept(memory_facade.memory, fact)
    run(undo.perform(step))
    (notice,) = undo.notices.notices()
    assert offered(notice)

    trigger(qtbot, undo.undo_action)  # Ctrl+Z, not the notice

    assert stored(run, real_familiar, fact.id).status == "pending"
    assert notice.text == f"Undone: {step.label}", "the notice says what happened"
    assert not offered(notice), "and no longer offers an Undo that would do nothing"
    trigger(qtbot, undo.redo_action)  # Ctrl+Shift+Z: done again, so its Undo is offered again
    assert (notice.text, offered(notice)) == (step.label, True)
    qtbot.mouseClick(notice.action_button, Qt.MouseButton.LeftButton)
    settle(qtbot)
    assert stored(run, real_familiar, fact.id).status == "pending"

    # A forget's own notice (its undo window) likewise.
    kept = active_fact(run, real_familiar, "Alice's locker holds a secret")
    forget = fact_actions.forget(memory_facade.memory, kept)
    run(undo.perform(forget))
    own = undo.notices.notices()[-1]
    trigger(qtbot, undo.undo_action)
    assert kept.id in visible_ids(run, real_familiar)
    assert (own.text, offered(own)) == (f"Undone: {forget.label}", False)


def test_a_shared_notice_follows_ctrl_z_to_the_earlier_action_its_undo_now_undoes(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    undo = make_context(qtbot, memory_facade).undo
    facts = [pending_fact(run, real_familiar, f"Alice keeps {what}") for what in ("bees", "a kettle", "a diary")]
    for fact in facts:
        run(undo.perform(fact_actions.accept(memory_facade.memory, fact)))
    (notice,) = undo.notices.notices()

    trigger(qtbot, undo.undo_action)
    assert notice.text == "Accepted “Alice keeps a kettle” · 1 earlier: Ctrl+Z", "it names what its Undo undoes now"
    assert offered(notice)
    qtbot.mouseClick(notice.action_button, Qt.MouseButton.LeftButton)
    settle(qtbot)
    assert [stored(run, real_familiar, f.id).status for f in facts] == ["active", "pending", "pending"]

    owls = pending_fact(run, real_familiar, "Alice keeps owls")
    run(undo.perform(fact_actions.accept(memory_facade.memory, owls)))
    (notice,) = undo.notices.notices()  # a new run: the one before went with its click
    trigger(qtbot, undo.undo_action)
    assert (notice.text, offered(notice)) == ("Undone: Accepted “Alice keeps owls”", False), "nothing earlier in it"


def test_an_undo_the_store_refuses_is_said_and_leaves_the_stack(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    undo = make_context(qtbot, memory_facade).undo
    fact = pending_fact(run, real_familiar, "Alice keeps bees")
    step = fact_actions.accept(memory_facade.memory, fact)
    run(undo.perform(step))
    run(real_familiar.memory.edit(fact.id, step.current.revision, "Alice keeps honeybees"))  # someone else, meanwhile

    trigger(qtbot, undo.undo_action)
    message = undo.notices.notices()[-1]
    assert message.action_button is None
    assert message.text.startswith("Could not undo “Accepted “Alice keeps bees””: fact")
    assert "changed since you saw it" in message.text
    assert not undo.stack.canUndo()
    assert stored(run, real_familiar, fact.id).superseded_by is not None  # nothing was forced


# -- deferred forgets --------------------------------------------------------------------------------


def visible_ids(run: Run[Any], familiar: Familiar) -> set[int]:
    return {f.id for f in run(familiar.memory.list_facts())}


def test_several_forgets_in_a_row_are_each_undoable_and_the_rest_applied_at_close(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    undo = make_context(qtbot, memory_facade).undo
    facts = [active_fact(run, real_familiar, f"Alice's locker {n} holds a secret") for n in range(3)]
    for fact in facts:
        run(undo.perform(fact_actions.forget(memory_facade.memory, fact)))
    assert visible_ids(run, real_familiar) == set()  # out of every read at once
    assert [n.remaining_ms > UNDO_NOTICE_MS for n in undo.notices.notices()] == [True] * 3  # the forget window

    middle = undo.notices.notices()[1]
    assert middle.action_button is not None
    qtbot.mouseClick(middle.action_button, Qt.MouseButton.LeftButton)
    settle(qtbot)
    assert visible_ids(run, real_familiar) == {facts[1].id}
    trigger(qtbot, undo.undo_action)  # the last one
    assert visible_ids(run, real_familiar) == {facts[1].id, facts[2].id}
    assert len(run(real_familiar.memory.scheduled_forgets())) == 1

    run(real_familiar.close())  # the window closing ends the undo window of what is left
    reopened = run(Familiar.open(real_familiar.paths, real_familiar._secret_store, env={}))
    try:
        assert run(reopened.history.facts.get(facts[0].id)).status == "forgotten"  # type: ignore[union-attr]
        assert {f.id for f in run(reopened.memory.list_facts())} == {facts[1].id, facts[2].id}
    finally:
        run(reopened.close())


def test_a_forget_is_applied_when_its_undo_window_ends(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    real_familiar.start_watching()
    undo: UndoCentre = make_context(qtbot, memory_facade).undo
    fact = active_fact(run, real_familiar, "Alice's diary is behind the clock")
    run(undo.perform(fact_actions.forget(memory_facade.memory, fact, undo_seconds=0.3)))
    qtbot.waitUntil(
        lambda: run(real_familiar.history.facts.get(fact.id)).status == "forgotten",  # type: ignore[union-attr]
        timeout=WAIT_MS,
    )
    qtbot.waitUntil(lambda: bool(run(real_familiar.memory.receipts())), timeout=WAIT_MS)
    (stone,) = run(real_familiar.memory.tombstones())
    assert stone.label.startswith("user 7001 · server 500 #501 · forgotten ")  # never seen on Discord: ids
    assert not undo.undo_action.isEnabled()  # its undo window is over: nothing to undo any more
    assert run(undo.undo()) is False
