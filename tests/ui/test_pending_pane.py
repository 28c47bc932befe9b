"""The pending queue pane, driven by keys in the real window over the real runtime and a real store (the demo
familiar): triage (j / k / a / r / s / e / x / Shift+A / z), focus to the next item, the snooze menu, edit in
place, a revision conflict shown as such, all caught up, forget with the preview."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel, QWidget
from pytestqt.qtbot import QtBot

from app.memory.facts import NewFact
from app.runtime.api.views import FactView
from app.runtime.service import Familiar
from app.ui.dialogs.forget_dialog import ForgetDialog
from app.ui.dialogs.shortcut_sheet import ShortcutSheet
from app.ui.main_window import MainWindow
from app.ui.panes import pending as pending_module
from app.ui.panes.pending import PendingPane
from app.ui.widgets.pending_item_delegate import PendingItemDelegate
from app.ui.widgets.word_diff import ADDED_STYLE, REMOVED_STYLE
from tests.demo_familiar import DemoFacts, seed_demo
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import WAIT_MS, Run, settle

pytestmark = [
    pytest.mark.timeout(60),  # seeding the demo takes a few seconds
    pytest.mark.qt_log_level_fail("WARNING"),
    # The offscreen platform plugin says these when a window is shown or raised, or a menu pops up.
    pytest.mark.qt_log_ignore(
        r"This plugin does not support (propagateSizeHints|raise)\(\)",
        r"This plugin does not support grabbing the keyboard",
    ),
]

SEED_MS = 30_000
PLACE = "guild:500/501"
ALICE = "discord:7001"


def seeded(qtbot: QtBot, familiar: Familiar) -> DemoFacts:
    """The demo world (outside the 3 s UI waits: seeding takes a second or two)."""
    task = asyncio.ensure_future(seed_demo(familiar))
    qtbot.waitUntil(task.done, timeout=SEED_MS)
    return task.result()


class Windows:
    """Opens the window on the pending pane once the store is ready (so nothing the seeding published
    arrives late), and shuts it down after the test."""

    def __init__(self, qtbot: QtBot, facade: FakeFacade) -> None:
        self.qtbot = qtbot
        self.facade = facade
        self.opened: list[MainWindow] = []

    def open(self) -> PendingPane:
        window = MainWindow(self.facade)
        # Shut down (cancel what its handlers still run) before pytest-qt closes and deletes it.
        self.qtbot.addWidget(window, before_close_func=self._shut)
        window.resize(1100, 700)
        self.opened.append(window)
        with self.qtbot.waitActive(window, timeout=WAIT_MS):
            window.show()
            window.activateWindow()
        pane = window.show_pane("pending")
        assert isinstance(pane, PendingPane)
        self.qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
        pane.list_view.setFocus()
        return pane

    @property
    def window(self) -> MainWindow:
        return self.opened[-1]

    def _shut(self, window: QWidget) -> None:
        assert isinstance(window, MainWindow)
        task = asyncio.ensure_future(window.shutdown())
        self.qtbot.waitUntil(task.done, timeout=WAIT_MS)


@pytest.fixture
def windows(qtbot: QtBot, memory_facade: FakeFacade) -> Windows:
    return Windows(qtbot, memory_facade)


def press(
    qtbot: QtBot, pane: PendingPane, key: Qt.Key, modifier: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier
) -> None:
    """A key as the owner presses it: to whatever has the focus, then wait for the pane to settle."""
    target = QApplication.focusWidget() or pane.list_view
    qtbot.keyClick(target, key, modifier)
    idle(qtbot, pane)


def idle(qtbot: QtBot, pane: PendingPane) -> None:
    qtbot.waitUntil(lambda: not pane.settling and pane.is_loaded, timeout=WAIT_MS)
    settle(qtbot)


def texts(pane: PendingPane) -> list[str]:
    return [item.fact.content for item in pane.model.records]


def current_text(pane: PendingPane) -> str:
    item = pane.current_item()
    assert item is not None
    return item.fact.content


def stored(run: Run[Any], familiar: Familiar, fact_id: int) -> FactView:
    return run(familiar.memory.fact(fact_id)).fact


def test_keys_decide_and_focus_moves_to_the_next_item_never_the_top(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    window = windows.window
    queue = texts(pane)
    assert queue[:2] == ["bob is planning a surprise party for carol on the 14th.", "carol is learning the cello."]
    assert pane.counter.text() == "6 pending, 1 snoozed"
    assert pane.current_row() == 0

    press(qtbot, pane, Qt.Key.Key_J)
    press(qtbot, pane, Qt.Key.Key_J)
    press(qtbot, pane, Qt.Key.Key_K)
    assert current_text(pane) == queue[1]
    press(qtbot, pane, Qt.Key.Key_J)  # the third item: "Always call bob 'Captain Bob' ..."
    assert current_text(pane) == queue[2]

    press(qtbot, pane, Qt.Key.Key_A)
    assert stored(run, real_familiar, demo.pending["captain"]).status == "active"
    assert current_text(pane) == queue[3]  # the next one, in the same place
    assert pane.current_row() == 2
    assert pane.counter.text() == "5 pending, 1 snoozed"

    press(qtbot, pane, Qt.Key.Key_R)
    assert stored(run, real_familiar, demo.pending["tea"]).status == "rejected"
    assert current_text(pane) == queue[4]
    assert pane.current_row() == 2
    assert texts(pane) == [queue[0], queue[1], queue[4], queue[5]]

    # The last item decided: focus goes to the one above it (now the last), not to the top.
    press(qtbot, pane, Qt.Key.Key_J)
    assert current_text(pane) == queue[5]
    press(qtbot, pane, Qt.Key.Key_A)
    assert current_text(pane) == queue[4]
    assert pane.current_row() == 2

    # z undoes the last decision: the item comes back where it was, focused.
    press(qtbot, pane, Qt.Key.Key_Z)
    assert stored(run, real_familiar, demo.pending["vet"]).status == "pending"
    assert texts(pane) == [queue[0], queue[1], queue[4], queue[5]]
    assert current_text(pane) == queue[5]
    assert pane.counter.text() == "4 pending, 1 snoozed"
    press(qtbot, pane, Qt.Key.Key_Z)
    assert stored(run, real_familiar, demo.pending["tea"]).status == "pending"
    assert texts(pane) == [queue[0], queue[1], queue[3], queue[4], queue[5]]
    assert window.undo.stack.canUndo()  # the accept of "captain" is still there to undo
    assert pane.error_banner.isHidden()


def test_the_detail_shows_sources_and_what_it_would_replace_with_a_coloured_word_diff(
    qtbot: QtBot, real_familiar: Familiar, windows: Windows
) -> None:
    seeded(qtbot, real_familiar)
    pane = windows.open()
    press(qtbot, pane, Qt.Key.Key_J)  # "carol is learning the cello."
    detail = pane.detail
    assert detail.text_label.text() == "carol is learning the cello."
    assert detail.kind_label.text() == "Semantic · 90% sure · importance 5 of 10"
    assert detail.about.text() == "carol"
    assert detail.said_in.text() == "Lantern Club #general"
    assert detail.recalled_in.text() == "Lantern Club"
    qtbot.waitUntil(lambda: not detail.context_pending, timeout=WAIT_MS)  # laid out on the next turn of the loop
    page = detail.browser.toHtml()
    assert "I started learning the cello this week." in page
    # carol's other current fact is about something else: accepting this replaces nothing, so none is offered.
    assert "carol is vegetarian." not in page
    assert "Nothing current it would duplicate or replace." in page
    for _ in range(5):  # on down the queue to bob's
        if detail.text_label.text().startswith("bob's cat"):
            break
        press(qtbot, pane, Qt.Key.Key_J)
    assert detail.text_label.text() == "bob's cat Pepper is 14 and climbs curtains."
    qtbot.waitUntil(lambda: not detail.context_pending, timeout=WAIT_MS)
    assert "bob's cat Pepper is fourteen years old." in detail.browser.toHtml()
    html = detail.context_html(pane.current_item())  # type: ignore[arg-type]
    assert "Could replace (both mention “cat”)" in html
    assert f'<span style="{REMOVED_STYLE}">fourteen years old.</span>' in html
    assert f'<span style="{ADDED_STYLE}">14 and climbs curtains.</span>' in html


def test_hostile_text_is_shown_as_text(qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows) -> None:
    hostile = "<b>alice</b> says <img src=x onerror=alert(1)> & keeps bees"
    outcome = run(
        real_familiar.history.insert_fact(NewFact(hostile, "semantic", 5, 0.9, (ALICE,), PLACE, speaker=ALICE))
    )
    assert outcome.fact is not None
    pane = windows.open()
    assert pane.detail.text_label.text() == hostile
    html = pane.detail.context_html(pane.current_item())  # type: ignore[arg-type]
    assert "<img" not in html
    assert "<b>alice" not in html


def test_snooze_menu_puts_it_away_and_z_brings_it_back(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    queue = texts(pane)
    press(qtbot, pane, Qt.Key.Key_J)
    press(qtbot, pane, Qt.Key.Key_S)
    qtbot.waitUntil(pane.snooze_menu.isVisible, timeout=WAIT_MS)
    assert [a.text() for a in pane.snooze_menu.actions() if a.text()] == [
        "1 &hour", "1 &day", "1 &week", "&Pick a date…"
    ]  # fmt: skip
    started = datetime.now(UTC)
    qtbot.keyClick(pane.snooze_menu, Qt.Key.Key_W)  # 1 week
    idle(qtbot, pane)
    snoozed = stored(run, real_familiar, demo.pending["cello"])
    assert snoozed.status == "pending"
    assert snoozed.snoozed_until is not None
    assert timedelta(days=6, hours=23) < snoozed.snoozed_until - started < timedelta(days=7, minutes=1)
    assert current_text(pane) == queue[2]
    assert pane.counter.text() == "5 pending, 2 snoozed"

    press(qtbot, pane, Qt.Key.Key_Z)
    assert stored(run, real_familiar, demo.pending["cello"]).snoozed_until is None
    assert texts(pane) == queue
    assert current_text(pane) == queue[1]
    assert pane.counter.text() == "6 pending, 1 snoozed"


def test_pick_a_date_snoozes_until_then(qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows) -> None:
    from app.ui.dialogs.snooze_dialog import SnoozeDialog

    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    window = windows.window
    press(qtbot, pane, Qt.Key.Key_S)
    qtbot.waitUntil(pane.snooze_menu.isVisible, timeout=WAIT_MS)
    pane.pick_date_action.trigger()
    dialogs: list[SnoozeDialog] = []
    qtbot.waitUntil(lambda: bool(dialogs.extend(window.findChildren(SnoozeDialog)) or dialogs), timeout=WAIT_MS)
    chosen = dialogs[0].until()
    assert chosen > datetime.now(UTC) + timedelta(hours=1)  # tomorrow 09:00 by default
    dialogs[0].accept()
    idle(qtbot, pane)
    fact = stored(run, real_familiar, demo.pending["surprise"])
    assert fact.snoozed_until == chosen


def test_edit_in_place_enter_saves_and_accepts_as_one_undoable_step(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    window = windows.window
    queue = texts(pane)
    press(qtbot, pane, Qt.Key.Key_J)
    press(qtbot, pane, Qt.Key.Key_E)
    editor = pane.detail.editor
    assert editor.isVisible()
    assert editor.hasFocus()
    assert editor.toPlainText() == "carol is learning the cello."
    # Letters typed in the editor are text, not triage keys.
    qtbot.keyClicks(editor, "carol is learning the cello and the harp.")
    assert stored(run, real_familiar, demo.pending["cello"]).status == "pending"
    press(qtbot, pane, Qt.Key.Key_Return)
    assert not editor.isVisible()
    old = stored(run, real_familiar, demo.pending["cello"])
    assert old.superseded_by is not None
    new = stored(run, real_familiar, old.superseded_by)
    assert (new.content, new.status) == ("carol is learning the cello and the harp.", "active")
    assert current_text(pane) == queue[2]
    assert window.undo.stack.undoText() == "Edited “carol is learning the cello.”"

    press(qtbot, pane, Qt.Key.Key_Z)  # the item itself comes back, pending, in its old place
    assert texts(pane) == queue
    back = pane.current_item()
    assert back is not None
    assert back.fact.content == "carol is learning the cello."
    assert back.fact.status == "pending"
    assert (back.fact.id, back.fact.created_at) == (old.id, old.created_at)  # its own id and date, not a copy's
    assert back.fact.is_head
    assert stored(run, real_familiar, new.id).superseded_by == back.fact.id


def test_esc_cancels_an_edit(qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    press(qtbot, pane, Qt.Key.Key_E)
    qtbot.keyClicks(pane.detail.editor, "something else")
    press(qtbot, pane, Qt.Key.Key_Escape)
    assert not pane.detail.editor.isVisible()
    assert pane.list_view.hasFocus()
    fact = stored(run, real_familiar, demo.pending["surprise"])
    assert (fact.status, fact.superseded_by) == ("pending", None)


def test_x_selects_and_shift_a_accepts_the_selection_as_one_step(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    window = windows.window
    queue = texts(pane)
    press(qtbot, pane, Qt.Key.Key_X)
    press(qtbot, pane, Qt.Key.Key_J)
    press(qtbot, pane, Qt.Key.Key_J)
    press(qtbot, pane, Qt.Key.Key_X)
    press(qtbot, pane, Qt.Key.Key_J)
    press(qtbot, pane, Qt.Key.Key_X)
    press(qtbot, pane, Qt.Key.Key_X)  # toggled off again
    assert pane.counter.text() == "6 pending, 1 snoozed · 2 selected"
    assert pane.selection_bar.isVisible()
    assert current_text(pane) == queue[3]

    press(qtbot, pane, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    assert stored(run, real_familiar, demo.pending["surprise"]).status == "active"
    assert stored(run, real_familiar, demo.pending["captain"]).status == "active"
    assert stored(run, real_familiar, demo.pending["cello"]).status == "pending"
    assert texts(pane) == [queue[1], queue[3], queue[4], queue[5]]
    assert current_text(pane) == queue[3]  # focus stays where it was
    assert window.undo.stack.undoText() == "Accepted 2 facts"
    assert not pane.selection_bar.isVisible()

    press(qtbot, pane, Qt.Key.Key_Z)
    assert texts(pane) == queue
    assert stored(run, real_familiar, demo.pending["surprise"]).status == "pending"
    assert stored(run, real_familiar, demo.pending["captain"]).status == "pending"

    press(qtbot, pane, Qt.Key.Key_X)
    press(qtbot, pane, Qt.Key.Key_R, Qt.KeyboardModifier.ShiftModifier)
    assert stored(run, real_familiar, demo.pending["surprise"]).status == "rejected"


def test_shift_a_on_a_selection_lands_on_the_item_after_the_last_decided_one(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    """Selected with x while moving down, the focus ends on the last selected item: deciding the selection
    moves it to the item after that one, not as many items further as there were selected."""
    seeded(qtbot, real_familiar)
    pane = windows.open()
    queue = texts(pane)
    for key in (Qt.Key.Key_X, Qt.Key.Key_J, Qt.Key.Key_X, Qt.Key.Key_J, Qt.Key.Key_X):
        press(qtbot, pane, key)
    assert current_text(pane) == queue[2]
    press(qtbot, pane, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    assert texts(pane) == queue[3:]
    assert current_text(pane) == queue[3]  # the one after the last decided
    assert pane.current_row() == 0

    # The same with the last items of the queue: the focus goes to the one left above them.
    press(qtbot, pane, Qt.Key.Key_Z)
    assert texts(pane) == queue
    pane.move_focus(len(queue))
    for key in (Qt.Key.Key_X, Qt.Key.Key_K, Qt.Key.Key_X):
        press(qtbot, pane, key)
    press(qtbot, pane, Qt.Key.Key_R, Qt.KeyboardModifier.ShiftModifier)
    assert texts(pane) == queue[:-2]
    assert current_text(pane) == queue[-3]


@pytest.mark.parametrize("size", [(1100, 700), (760, 480)])  # the default size, and the smallest
def test_the_list_keeps_its_width_while_items_are_selected_and_decided(
    qtbot: QtBot, real_familiar: Familiar, windows: Windows, size: tuple[int, int]
) -> None:
    """The queue and the item beside it share the pane as they did at first: a selection (its bar of
    buttons), an edit, the snoozed items shown, a decision, all caught up and back never shift the split."""
    seeded(qtbot, real_familiar)
    pane = windows.open()
    windows.window.resize(*size)
    idle(qtbot, pane)
    qtbot.waitUntil(lambda: pane.splitter.width() < size[0] - 150, timeout=WAIT_MS)
    width = pane.list_view.width()
    seen = {width}

    def look() -> None:
        idle(qtbot, pane)
        if not pane.is_caught_up:
            seen.add(pane.list_view.width())

    for key in (Qt.Key.Key_X, Qt.Key.Key_J, Qt.Key.Key_J, Qt.Key.Key_J, Qt.Key.Key_J, Qt.Key.Key_X, Qt.Key.Key_K):
        press(qtbot, pane, key)
        look()
    assert pane.selection_bar.isVisible()
    press(qtbot, pane, Qt.Key.Key_E)
    look()
    press(qtbot, pane, Qt.Key.Key_Escape)
    pane.show_snoozed_box.setChecked(True)
    look()
    press(qtbot, pane, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    look()
    while not pane.is_caught_up:
        press(qtbot, pane, Qt.Key.Key_A)
        look()
    press(qtbot, pane, Qt.Key.Key_Z)
    look()
    assert seen == {width}
    if size != (1100, 700):
        return  # at the smallest size both sides are as narrow as they go
    # the owner's drag is what moves it, and it stays where they put it
    pane.splitter.moveSplitter(width + 40, 1)
    dragged = pane.list_view.width()
    assert dragged > width
    pane.move_focus(1)
    press(qtbot, pane, Qt.Key.Key_X)
    windows.window.resize(size[0] + 1, size[1])
    idle(qtbot, pane)
    assert abs(pane.list_view.width() - dragged) <= 1


def test_a_fact_changed_meanwhile_is_shown_as_it_is_now_not_as_an_error(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    seen = pane.current_item()
    assert seen is not None
    # Another process (the CLI) edits it after the pane loaded, before the change reaches the window.
    run(
        real_familiar.history.corrections.edit(
            seen.fact.id, seen.fact.revision, "bob plans a surprise party for carol on the 15th."
        )
    )
    new_head = stored(run, real_familiar, seen.fact.id).superseded_by
    assert new_head is not None
    run(
        real_familiar.history.decisions.decide(new_head, stored(run, real_familiar, new_head).revision, "reopen")
    )  # pending again, say

    press(qtbot, pane, Qt.Key.Key_A)

    assert pane.error_banner.isHidden()
    now = pane.current_item()
    assert now is not None
    assert now.fact.id == new_head
    assert now.fact.content == "bob plans a surprise party for carol on the 15th."
    assert pane.detail.text_label.text() == now.fact.content
    assert pane.detail.conflict.isVisible()
    assert "changed since the queue was loaded" in pane.detail.conflict_label.text()
    assert "Decide again" in pane.detail.conflict_label.text()
    assert pane.model.is_changed(new_head)
    assert stored(run, real_familiar, new_head).status == "pending"  # nothing was decided on the old version

    press(qtbot, pane, Qt.Key.Key_A)  # decided again, on the version as it is now
    assert stored(run, real_familiar, new_head).status == "active"
    assert demo.pending["cello"] == pane.current_item().fact.id  # type: ignore[union-attr]


def test_a_fact_decided_elsewhere_meanwhile_says_so_and_offers_nothing_to_decide(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    fact = stored(run, real_familiar, demo.pending["surprise"])
    run(real_familiar.history.decisions.decide(fact.id, fact.revision, "accept"))  # accepted by the CLI, unnoticed yet

    press(qtbot, pane, Qt.Key.Key_R)

    assert pane.error_banner.isHidden()
    assert stored(run, real_familiar, fact.id).status == "active"  # the reject did not land
    assert pane.detail.conflict.isVisible()
    assert "accepted now" in pane.detail.conflict_label.text()
    press(qtbot, pane, Qt.Key.Key_R)  # nothing to decide: left alone
    assert stored(run, real_familiar, fact.id).status == "active"


def test_all_caught_up_and_back(qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows) -> None:
    outcome = run(
        real_familiar.history.insert_fact(
            NewFact("alice keeps bees", "semantic", 5, 0.9, (ALICE,), PLACE, speaker=ALICE)
        )
    )
    assert outcome.fact is not None
    pane = windows.open()
    assert pane.counter.text() == "1 pending, 0 snoozed"
    assert not pane.is_caught_up
    press(qtbot, pane, Qt.Key.Key_A)
    assert pane.is_caught_up
    assert pane.caught_up.isVisible()
    assert pane.caught_up_title.text() == "All caught up"
    assert pane.counter.text() == "0 pending, 0 snoozed"
    press(qtbot, pane, Qt.Key.Key_Z)  # z still works from the caught-up page
    assert not pane.is_caught_up
    assert texts(pane) == ["alice keeps bees"]


def test_an_empty_queue_is_all_caught_up_and_mentions_the_snoozed(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    outcome = run(real_familiar.history.insert_fact(NewFact("alice keeps bees", "semantic", 5, 0.9, (ALICE,), PLACE)))
    assert outcome.fact is not None
    fact = outcome.fact
    run(
        real_familiar.history.decisions.decide(
            fact.id, fact.revision, "snooze", until=datetime.now(UTC) + timedelta(days=1)
        )
    )
    pane = windows.open()
    assert pane.is_caught_up
    assert pane.counter.text() == "0 pending, 1 snoozed"
    assert "1 snoozed item comes back" in pane.caught_up_text.text()
    pane.show_snoozed_box.setChecked(True)
    qtbot.waitUntil(lambda: not pane.is_caught_up, timeout=WAIT_MS)
    assert "snoozed until" in pane.model.index(0, 0).data(Qt.ItemDataRole.ToolTipRole)


def test_forget_from_the_queue_goes_through_the_preview_and_can_be_undone(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    window = windows.window
    queue = texts(pane)
    qtbot.keyClick(pane.list_view, Qt.Key.Key_D)
    found: list[ForgetDialog] = []
    qtbot.waitUntil(lambda: bool(found.extend(window.findChildren(ForgetDialog)) or found), timeout=WAIT_MS)
    qtbot.waitUntil(found[0].forget_button.isEnabled, timeout=WAIT_MS)
    found[0].forget_button.click()
    idle(qtbot, pane)
    qtbot.waitUntil(lambda: texts(pane) == queue[1:], timeout=WAIT_MS)
    assert len(run(real_familiar.memory.scheduled_forgets())) == 1
    assert current_text(pane) == queue[1]
    press(qtbot, pane, Qt.Key.Key_Z)
    qtbot.waitUntil(lambda: texts(pane) == queue, timeout=WAIT_MS)
    assert run(real_familiar.memory.scheduled_forgets()) == []
    assert stored(run, real_familiar, demo.pending["surprise"]).status == "pending"


def test_new_items_arriving_keep_the_focus_where_it_is(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    seeded(qtbot, real_familiar)
    pane = windows.open()
    press(qtbot, pane, Qt.Key.Key_J)
    press(qtbot, pane, Qt.Key.Key_J)
    focused = current_text(pane)
    # A memory worker learns something new: the tick's change (no initiator) reloads the queue.
    outcome = run(real_familiar.history.insert_fact(NewFact("alice keeps bees", "semantic", 5, 0.9, (ALICE,), PLACE)))
    assert outcome.fact is not None
    run(real_familiar.changes.check())
    qtbot.waitUntil(lambda: "alice keeps bees" in texts(pane), timeout=WAIT_MS)
    assert texts(pane)[-1] == "alice keeps bees"
    assert current_text(pane) == focused
    assert pane.counter.text() == "7 pending, 1 snoozed"


def test_a_long_queue_is_fetched_in_pages_as_it_runs_low(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pending_module, "PAGE", 6)
    monkeypatch.setattr(pending_module, "LOW_WATER", 3)
    for n in range(10):
        run(
            real_familiar.history.insert_fact(NewFact(f"alice keeps {n + 2} bees", "semantic", 5, 0.9, (ALICE,), PLACE))
        )
    pane = windows.open()
    assert pane.model.rowCount() == 6
    assert pane.counter.text() == "10 pending, 0 snoozed"
    for _ in range(4):
        press(qtbot, pane, Qt.Key.Key_A)
    qtbot.waitUntil(lambda: pane.model.rowCount() == 6, timeout=WAIT_MS)
    assert texts(pane)[0] == "alice keeps 6 bees"
    assert pane.counter.text() == "6 pending, 0 snoozed"


def test_the_rows_a_decision_brings_into_view_are_drawn_between_keys(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    """Between keys the pane draws ahead the row that moves up into the selection and the one that comes
    into view at the bottom, so the repaint right after a decision (or a move) only copies images
    (bench/bench_ui_stall.py --scenario triage)."""
    for n in range(30):
        run(
            real_familiar.history.insert_fact(
                NewFact(f"alice keeps {n + 2} bees behind the mill", "semantic", 5, 0.9, (ALICE,), PLACE)
            )
        )
    pane = windows.open()
    idle(qtbot, pane)
    qtbot.waitUntil(lambda: pane.list_view.hasFocus() and not pane.drawing_ahead, timeout=WAIT_MS)
    delegate = pane.list_view.itemDelegate()
    assert isinstance(delegate, PendingItemDelegate)
    last = pane.list_view.indexAt(pane.list_view.viewport().rect().bottomLeft()).row()
    assert 0 < last < pane.model.rowCount() - 1  # the list runs on below its bottom edge
    for key in (Qt.Key.Key_A, Qt.Key.Key_R, Qt.Key.Key_J, Qt.Key.Key_A):
        drawn = delegate.drawn
        qtbot.keyClick(pane.list_view, key)
        pane.list_view.viewport().repaint()
        assert delegate.drawn == drawn, key
        idle(qtbot, pane)
        qtbot.waitUntil(lambda: not pane.drawing_ahead, timeout=WAIT_MS)


def test_question_mark_shows_every_key(qtbot: QtBot, real_familiar: Familiar, windows: Windows) -> None:
    pane = windows.open()
    qtbot.keyClick(pane.list_view, Qt.Key.Key_Question)
    qtbot.waitUntil(lambda: pane.sheet is not None and pane.sheet.isVisible(), timeout=WAIT_MS)
    sheet = pane.sheet
    assert isinstance(sheet, ShortcutSheet)
    keys = dict(sheet.rows)
    # plain keys as they are pressed (a capital "A" reads as Shift+A), shifted ones as such
    assert set(keys) >= {"j", "k", "a", "r", "s", "e", "x", "Shift+A", "Shift+R", "z", "d or Shift+Del", "? or F1"}
    assert "accept" in keys["a"].lower()
    assert "selected" in keys["Shift+A"].lower()
    shown = [label.text() for label in sheet.findChildren(QLabel)]
    assert "a" in shown
    assert "A" not in shown
    assert all(f"({k.split(' or ')[0]}" in a.toolTip() for k, a in zip(keys, pane.triage_actions, strict=False))
    sheet.close()


def test_buttons_do_what_the_keys_do(qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    qtbot.mouseClick(pane.buttons["reject"], Qt.MouseButton.LeftButton)
    idle(qtbot, pane)
    assert stored(run, real_familiar, demo.pending["surprise"]).status == "rejected"
    qtbot.mouseClick(pane.buttons["undo"], Qt.MouseButton.LeftButton)
    idle(qtbot, pane)
    assert stored(run, real_familiar, demo.pending["surprise"]).status == "pending"


def test_the_focused_fact_edited_elsewhere_comes_back_as_its_new_version_in_place(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    seeded(qtbot, real_familiar)
    pane = windows.open()
    queue = texts(pane)
    seen = pane.current_item()
    assert seen is not None
    run(
        real_familiar.history.corrections.edit(
            seen.fact.id, seen.fact.revision, "bob plans a surprise party for carol on the 15th."
        )
    )
    new_head = stored(run, real_familiar, seen.fact.id).superseded_by
    assert new_head is not None
    run(real_familiar.history.decisions.decide(new_head, stored(run, real_familiar, new_head).revision, "reopen"))
    run(real_familiar.changes.check())  # the window notices (as it does for the CLI within a second)

    qtbot.waitUntil(
        lambda: pane.current_item() is not None and pane.current_item().fact.id == new_head, timeout=WAIT_MS
    )  # type: ignore[union-attr]
    idle(qtbot, pane)
    assert texts(pane) == ["bob plans a surprise party for carol on the 15th.", *queue[1:]]
    assert pane.current_row() == 0
    assert "changed since the queue was loaded" in pane.detail.conflict_label.text()
    assert pane.detail.conflict.isVisible()


def test_the_focused_fact_decided_elsewhere_leaves_with_a_notice(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    seeded(qtbot, real_familiar)
    pane = windows.open()
    queue = texts(pane)
    seen = pane.current_item()
    assert seen is not None
    run(real_familiar.history.decisions.decide(seen.fact.id, seen.fact.revision, "reject"))
    run(real_familiar.changes.check())

    notice = f"“{queue[0]}” left the queue: rejected meanwhile, elsewhere."
    qtbot.waitUntil(lambda: notice in [n.text for n in windows.window.notices.notices()], timeout=WAIT_MS)
    assert texts(pane) == queue[1:]
    assert current_text(pane) == queue[1]
    assert pane.counter.text() == "5 pending, 1 snoozed"


def test_a_reload_running_beside_decisions_does_not_bring_them_back(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    seeded(qtbot, real_familiar)
    pane = windows.open()
    queue = texts(pane)
    # A reload reads the queue (as for a change from elsewhere) ...
    since = pane._generation
    read = run(real_familiar.memory.pending())
    # ... three decisions land while it reads ...
    for _ in range(3):
        press(qtbot, pane, Qt.Key.Key_A)
    assert texts(pane) == queue[3:]
    # ... then it is applied: what the decisions changed stays as the pane has it.
    pane._apply(read, since)
    idle(qtbot, pane)
    assert texts(pane) == queue[3:]
    assert current_text(pane) == queue[3]
    assert pane.counter.text() == "3 pending, 1 snoozed"  # recounted: the read counted them as pending
