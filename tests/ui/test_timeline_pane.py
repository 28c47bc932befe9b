"""The Facts timeline pane on the real runtime over the demo familiar (real SQLite and tantivy in tmp_path):
slider moves re-slice with the status at that point, a typed date, Now, a diff between two recorded times,
the filters, the version chain, forgotten facts as content-free markers (in the models, the paint and the
side panel), its actions with undo, the keyboard, rows loaded as they scroll into view, qtmodeltester."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from PySide6.QtCore import QDateTime, QPoint, Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.memory.facts import NewFact
from app.runtime.api.views import FactView, ForgottenFact, TimelineFilters, TimelineSlice
from app.runtime.errors import FamiliarError
from app.runtime.service import Familiar
from app.ui.async_slot import running_slots
from app.ui.dialogs.edit_fact_dialog import EditFactDialog
from app.ui.dialogs.forget_dialog import ForgetDialog
from app.ui.main_window import MainWindow
from app.ui.models.roles import RecordRole
from app.ui.models.timeline_model import DiffRole, TimelineModel
from app.ui.panes.timeline import TimelinePane
from app.ui.widgets.timeline_view import ROW_HEIGHT
from tests.demo_familiar import BOB, DemoFacts, seed_demo
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, make_context, settle

pytestmark = QT_STRICT

T = TypeVar("T")
NOW = datetime.now(UTC)
SECRET = "bob told Wisp a secret in a DM."
SEED_MS = 60_000  # seeding the demo is the test's set-up, not a UI wait
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def slow(qtbot: QtBot, work: Coroutine[Any, Any, T]) -> T:
    task = asyncio.ensure_future(work)
    qtbot.waitUntil(task.done, timeout=SEED_MS)
    return task.result()


@pytest.fixture
def demo(qtbot: QtBot, real_familiar: Familiar) -> DemoFacts:
    return slow(qtbot, seed_demo(real_familiar, now=NOW))


def open_pane(qtbot: QtBot, facade: FakeFacade, size: tuple[int, int] = (1100, 700)) -> TimelinePane:
    pane = TimelinePane(make_context(qtbot, facade))
    qtbot.addWidget(pane)
    qtbot.__dict__.setdefault("_kept_panes", []).append(pane)  # qtbot holds widgets weakly: keep it to the end
    pane.resize(*size)
    pane.show()
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    idle(qtbot, pane)
    return pane


def idle(qtbot: QtBot, pane: TimelinePane) -> None:
    """Until nothing is fetched or due (a slice, rows coming into view, a fact's detail)."""
    qtbot.waitUntil(lambda: pane.idle and not running_slots(), timeout=WAIT_MS)


def rows(qtbot: QtBot, pane: TimelinePane) -> dict[int, str]:
    """Every row of the slice as id -> status, scrolling through it as a person would (rows are loaded as
    they come into view), then back to where it was."""
    assert pane.model.total < 200
    bar = pane.view.verticalScrollBar()
    where = bar.value()
    seen: dict[int, str] = {}
    for value in range(0, bar.maximum() + bar.pageStep(), bar.pageStep()):
        bar.setValue(value)
        idle(qtbot, pane)
        first, last = pane.view.visible_rows()
        for row in range(first, last + 1):
            record = pane.model.record(row)
            assert record is not None, row
            seen[record.id] = record.status
    bar.setValue(where)
    idle(qtbot, pane)
    assert len(seen) == pane.model.total
    return seen


def moved(qtbot: QtBot, pane: TimelinePane) -> None:
    idle(qtbot, pane)


def select(qtbot: QtBot, pane: TimelinePane, fact_id: int) -> None:
    row = pane.model.row_of(fact_id)
    assert row is not None, fact_id
    pane.view.set_current_row(row)
    qtbot.waitUntil(lambda: pane.detail is not None and pane.detail.fact.id == fact_id, timeout=WAIT_MS)
    idle(qtbot, pane)


# -- the slice ------------------------------------------------------------------------------------------------


def test_it_shows_what_is_believed_now_with_names_and_statuses(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)

    shown = rows(qtbot, pane)
    assert shown[demo.active["lisbon"]] == "active"
    assert shown[demo.other["archived"]] == "archived"
    assert shown[demo.other["rejected"]] == "rejected"
    assert shown[demo.pending["cello"]] == "pending"
    assert shown[demo.other["forgotten"]] == "forgotten"
    assert demo.other["porto"] not in shown  # the older version of where alice lives
    assert pane.summary.text() == f"{len(shown)} facts held now, as the familiar knows them now."
    lisbon = pane.model.index(pane.model.row_of(demo.active["lisbon"]) or 0, 0)
    assert pane.model.data(lisbon.siblingAtColumn(2)) == "alice"
    assert pane.model.data(lisbon.siblingAtColumn(3)) == "Lantern Club"
    assert pane.detail is not None  # the first row is chosen and its history shown
    assert pane.view.current_row() == 0


def test_moving_the_recorded_time_shows_the_status_each_fact_had_then(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    vegetarian = demo.active["vegetarian"]  # proposed 20.4 days ago, accepted 19 days ago

    pane.recorded.slider.set_value(0, ago(19.5), emit=True)  # as a drag does, step by step
    moved(qtbot, pane)
    assert pane.recorded_at == ago(19.5)
    assert rows(qtbot, pane)[vegetarian] == "pending"
    assert demo.active["lisbon"] not in rows(qtbot, pane)  # not learned yet
    assert pane.summary.text().endswith(f"knew them on {ago(19.5).astimezone():%-d %b %H:%M}.")

    pane.recorded.slider.set_value(0, ago(18), emit=True)
    moved(qtbot, pane)
    assert rows(qtbot, pane)[vegetarian] == "active"
    assert rows(qtbot, pane)[demo.active["market"] if "market" in demo.active else demo.other["archived"]] == "active"
    assert len(pane.latencies) == 2  # each move re-sliced, and how long that took was measured


def test_the_world_slider_follows_the_mouse_and_the_keys(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    slider = pane.world.slider
    y = 14
    start = QPoint(int(slider.handle_x(0)), y)
    target = QPoint(int(slider.scale().x(ago(10))), y)
    qtbot.mousePress(slider, Qt.MouseButton.LeftButton, pos=start)
    qtbot.mouseMove(slider, target)
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=target)
    moved(qtbot, pane)

    assert pane.world_at is not None
    assert abs((pane.world_at - ago(10)).total_seconds()) < slider.scale().seconds / slider.scale().width * 2
    shown = rows(qtbot, pane)
    assert demo.other["porto"] not in shown  # recorded now: the correction is what is believed...
    assert demo.active["lisbon"] not in shown  # ...and Lisbon only held from 7 days ago
    pane.recorded.slider.set_value(0, ago(10), emit=True)
    moved(qtbot, pane)
    assert demo.other["porto"] in rows(qtbot, pane)  # 10 days ago it believed Porto, and it held then

    slider.setFocus()
    qtbot.keyClick(slider, Qt.Key.Key_Home)
    moved(qtbot, pane)
    assert pane.world_at == slider.range()[0]
    assert demo.active["vegetarian"] in rows(qtbot, pane)  # an open start held since ever
    qtbot.keyClick(slider, Qt.Key.Key_N)
    moved(qtbot, pane)
    assert pane.world_at is None
    assert pane.world.now_buttons[0].isChecked()


def test_a_typed_date_and_the_now_buttons(qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts) -> None:
    pane = open_pane(qtbot, memory_facade)
    edit = pane.recorded.edits[0]
    typed = ago(19.5).replace(second=0, microsecond=0)
    edit.setDateTime(QDateTime.fromSecsSinceEpoch(int(typed.timestamp())))
    edit.setFocus()
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    moved(qtbot, pane)
    assert pane.recorded_at == typed
    assert rows(qtbot, pane)[demo.active["vegetarian"]] == "pending"
    assert not pane.recorded.now_buttons[0].isChecked()

    world = pane.world.edits[0]
    far = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)  # beyond the axis: the axis widens to it
    world.setDateTime(QDateTime.fromSecsSinceEpoch(int(far.timestamp())))
    world.setFocus()
    qtbot.keyClick(world, Qt.Key.Key_Return)
    moved(qtbot, pane)
    assert pane.world_at == far
    assert pane.world.slider.range()[1] >= far

    qtbot.mouseClick(pane.recorded.now_buttons[0], Qt.MouseButton.LeftButton)
    qtbot.mouseClick(pane.world.now_buttons[0], Qt.MouseButton.LeftButton)
    moved(qtbot, pane)
    assert (pane.world_at, pane.recorded_at) == (None, None)
    assert rows(qtbot, pane)[demo.active["vegetarian"]] == "active"
    assert pane.recorded.now_buttons[0].isChecked()


def test_an_empty_slice_says_what_to_do(qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts) -> None:
    pane = open_pane(qtbot, memory_facade)
    pane.set_recorded_time(ago(40))
    moved(qtbot, pane)
    assert pane.model.total == 0
    assert pane.view.placeholder.startswith("No fact held at now as the familiar knew it at")
    assert pane.view.placeholder.endswith("Move either time.")


# -- diff between two points ------------------------------------------------------------------------------------


def test_compare_lists_what_changed_between_two_recorded_times(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    assert pane.compare.text() == "&Compare two recorded times"  # Alt+C
    pane.compare.setChecked(True)
    moved(qtbot, pane)
    assert pane.recorded.slider.handles == 2
    assert pane.compare_at is None
    pane.set_recorded_time(ago(8))
    moved(qtbot, pane)

    assert pane.diff is not None
    changes = {(c.kind, c.before.id if c.before else None, c.after.id if c.after else None) for c in pane.diff.changes}
    assert ("changed", demo.other["porto"], demo.active["lisbon"]) in changes
    assert ("changed", demo.other["archived"], demo.other["archived"]) in changes
    assert ("added", None, demo.active["pepper_age"]) in changes
    assert pane.summary.text().startswith("From A (")
    assert f"{pane.diff.added} added" in pane.summary.text()
    row = next(
        n for n, c in enumerate(pane.diff_model.records) if c.before is not None and c.before.id == demo.other["porto"]
    )
    index = pane.diff_model.index(row, 1)
    assert pane.diff_model.data(index) == "alice lives in Porto. → alice lives in Lisbon."
    assert [p.op for p in pane.diff_model.data(index, DiffRole) if p.op != "same"] == ["removed", "added"]
    pane.diff_view.selectRow(row)
    qtbot.waitUntil(lambda: pane.detail is not None and pane.detail.fact.id == demo.active["lisbon"], timeout=WAIT_MS)
    assert "line-through" in pane.panel.change.text()  # the word diff: Porto. struck out
    assert "Lisbon." in pane.panel.change.text()

    pane.compare.setChecked(False)
    moved(qtbot, pane)
    assert pane.bodies.currentWidget() is pane.view
    assert pane.recorded.slider.handles == 1


# -- filters -------------------------------------------------------------------------------------------------------


def test_filters_by_text_person_place_kind_and_status(qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts) -> None:
    pane = open_pane(qtbot, memory_facade)
    everything = set(rows(qtbot, pane))

    pane.view.setFocus()
    qtbot.keyClick(pane.view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert pane.search.hasFocus()
    qtbot.keyClicks(pane.search, "PEPPER")
    qtbot.waitUntil(lambda: pane.filters.text == "PEPPER", timeout=WAIT_MS)
    moved(qtbot, pane)
    assert set(rows(qtbot, pane)) == {
        demo.active["pepper"],
        demo.active["pepper_age"],
        demo.pending["pepper_dup"],
        demo.pending["vet"],
    }
    pane.set_filters(TimelineFilters())
    moved(qtbot, pane)
    assert set(rows(qtbot, pane)) == everything

    pane.person.setCurrentIndex(pane.person.findText("bob"))
    moved(qtbot, pane)
    assert demo.other["forgotten"] in rows(qtbot, pane)  # about bob, by its receipt: never by its text
    assert all(r.id == demo.other["forgotten"] or "bob" in [p.name for p in r.subjects] for r in pane.model.records())
    pane.place.setCurrentIndex(pane.place.findText("DM with bob"))
    moved(qtbot, pane)
    assert set(rows(qtbot, pane)) == {demo.other["forgotten"], demo.pending["surprise"]}  # both said in the DM
    qtbot.mouseClick(pane.clear_filters, Qt.MouseButton.LeftButton)
    moved(qtbot, pane)
    assert set(rows(qtbot, pane)) == everything

    pane.kind.setCurrentIndex(pane.kind.findData("procedural"))
    moved(qtbot, pane)
    assert set(rows(qtbot, pane)) == {demo.active["book_club"], demo.pending["captain"]}
    pane.set_filters(TimelineFilters(statuses=("archived",)))
    moved(qtbot, pane)
    assert set(rows(qtbot, pane)) == {demo.other["archived"]}
    assert pane.summary.text().endswith("Filtered: clear the filters to see every fact.")
    pane.set_filters(TimelineFilters(text="no such words anywhere"))
    moved(qtbot, pane)
    assert pane.view.placeholder.startswith("No fact matches these filters")


def test_the_detail_never_shows_a_fact_no_longer_in_the_rows(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    select(qtbot, pane, demo.active["lisbon"])
    assert pane.panel.detail is not None

    pane.set_filters(TimelineFilters(text="PEPPER"))  # Lisbon is not among these rows
    moved(qtbot, pane)

    assert demo.active["lisbon"] not in rows(qtbot, pane)
    assert pane.detail is None, "the side panel no longer shows a fact the rows do not hold"
    assert pane.selected is None
    assert pane.view.current_row() == -1, "and no row is marked as chosen"
    assert pane.panel.title.text() == "Choose a fact to see its history."

    select(qtbot, pane, demo.active["pepper"])  # a fact still in the rows stays shown as they change
    pane.set_filters(TimelineFilters(text="pepper"))
    moved(qtbot, pane)
    assert pane.detail is not None
    assert pane.detail.fact.id == demo.active["pepper"]
    assert pane.view.current_record() is not None
    assert pane.view.current_record().id == demo.active["pepper"]  # type: ignore[union-attr]

    pane.set_filters(TimelineFilters(text="no such words anywhere"))  # no rows at all
    moved(qtbot, pane)
    assert pane.detail is None

    pane.set_filters(TimelineFilters())
    pane.compare.setChecked(True)
    pane.set_recorded_time(ago(8))
    moved(qtbot, pane)
    assert pane.detail is not None, "comparing: the first change is shown"
    pane.set_recorded_time(None)  # A and B both now: nothing changed between them
    moved(qtbot, pane)
    assert pane.diff is not None
    assert pane.diff.changes == ()
    assert pane.detail is None, "no change listed: none is shown"


# -- the side panel: the version chain --------------------------------------------------------------------------


def test_the_side_panel_tells_the_version_chain_and_status_history(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    select(qtbot, pane, demo.active["lisbon"])
    chain = pane.panel.chain.text()
    assert chain.startswith("Believed “alice lives in Porto.” from ")
    assert "; corrected to “alice lives in Lisbon.” at " in chain
    assert chain.endswith(" by the familiar.")
    assert "alice: I finally moved to Porto" not in pane.panel.texts()
    assert "Big news: I am moving again, to Lisbon" in pane.panel.sources.text()

    select(qtbot, pane, demo.active["vegetarian"])
    assert "Accepted" in pane.panel.events.text()
    assert pane.panel.archive_button.isEnabled()
    select(qtbot, pane, demo.other["archived"])
    assert "Archived" in pane.panel.events.text()
    assert not pane.panel.archive_button.isEnabled()


def test_an_edit_by_the_owner_reads_as_corrected_by_you(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    select(qtbot, pane, demo.active["pepper"])
    before = next(r for r in pane.model.records() if isinstance(r, FactView) and r.id == demo.active["pepper"])
    pane.view.setFocus()
    qtbot.keyClick(pane.view, Qt.Key.Key_E)
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), EditFactDialog), timeout=WAIT_MS)
    dialog = QApplication.activeModalWidget()
    assert isinstance(dialog, EditFactDialog)
    dialog.editor.setText("bob has a tabby cat called Pepper.")
    qtbot.keyClick(dialog.editor, Qt.Key.Key_Return)
    settle(qtbot)
    qtbot.waitUntil(lambda: pane.detail is not None and len(pane.detail.versions) == 2, timeout=WAIT_MS)
    assert pane.panel.chain.text().endswith("corrected to “bob has a tabby cat called Pepper.” at " + _when_last(pane))
    moved(qtbot, pane)
    texts = {r.content for r in pane.model.records() if isinstance(r, FactView)}
    assert "bob has a tabby cat called Pepper." in texts
    assert "bob has a cat called Pepper." not in texts

    assert slow(qtbot, pane.context.undo.undo())  # Ctrl+Z: the fact itself comes back, as it was
    settle(qtbot)
    moved(qtbot, pane)
    rows = {r.content: r for r in pane.model.records() if isinstance(r, FactView)}
    assert "bob has a tabby cat called Pepper." not in rows
    back = rows["bob has a cat called Pepper."]
    assert back.id == demo.active["pepper"]  # its own id, its own dates: not a copy made today
    assert (back.created_at, back.valid_from) == (before.created_at, before.valid_from)
    qtbot.waitUntil(lambda: pane.detail is not None and pane.detail.head_id == back.id, timeout=WAIT_MS)
    assert pane.panel.chain.text().endswith(f", undone at {_when_undone(pane)}.")


def _when_undone(pane: TimelinePane) -> str:
    assert pane.detail is not None
    from app.ui.time_text import when

    undone = pane.detail.versions[-1].superseded_at
    assert undone is not None
    return when(undone)


def _when_last(pane: TimelinePane) -> str:
    assert pane.detail is not None
    from app.ui.time_text import when

    return f"{when(pane.detail.versions[-1].created_at)} by you."


# -- actions ---------------------------------------------------------------------------------------------------------


def test_archive_by_key_and_its_undo(qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts) -> None:
    pane = open_pane(qtbot, memory_facade)
    fact = demo.active["pepper_age"]
    select(qtbot, pane, fact)
    pane.view.setFocus()
    qtbot.keyClick(pane.view, Qt.Key.Key_A)
    qtbot.waitUntil(lambda: rows(qtbot, pane).get(fact) == "archived", timeout=WAIT_MS)
    settle(qtbot)
    assert pane.context.undo.stack.undoText().startswith("Archived “bob's cat Pepper is fourteen")

    assert slow(qtbot, pane.context.undo.undo())
    qtbot.waitUntil(lambda: rows(qtbot, pane).get(fact) == "active", timeout=WAIT_MS)
    settle(qtbot)


def test_forget_goes_through_the_preview_and_can_be_undone(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    fact = demo.active["pepper_age"]
    select(qtbot, pane, fact)
    pane.view.setFocus()
    qtbot.keyClick(pane.view, Qt.Key.Key_Delete)
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), ForgetDialog), timeout=WAIT_MS)
    dialog = QApplication.activeModalWidget()
    assert isinstance(dialog, ForgetDialog)
    qtbot.waitUntil(dialog.forget_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(dialog.forget_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: fact not in rows(qtbot, pane), timeout=WAIT_MS)  # out of every read at once
    settle(qtbot)
    assert pane.context.undo.stack.undoText() == "Forgot “bob's cat Pepper is fourteen years old.”"
    following = pane.view.current_record()  # the fact after it took its place
    assert following is not None
    qtbot.waitUntil(lambda: pane.detail is not None and pane.detail.fact.id == following.id, timeout=WAIT_MS)

    assert slow(qtbot, pane.context.undo.undo())
    qtbot.waitUntil(lambda: rows(qtbot, pane).get(fact) == "active", timeout=WAIT_MS)
    settle(qtbot)


# -- forgotten facts are content-free -------------------------------------------------------------------------------


def test_a_forgotten_fact_is_a_marker_whose_text_appears_nowhere(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    marker_id = demo.other["forgotten"]
    row = pane.model.row_of(marker_id)
    assert row is not None
    marker = pane.model.record(row)
    assert isinstance(marker, ForgottenFact)
    label = pane.model.data(pane.model.index(row, 0))
    assert label == f"forgotten fact (bob, DM with bob, {marker.forgotten_at.astimezone():%-d %b})"  # type: ignore[union-attr]

    pane.view.set_current_row(row)
    qtbot.waitUntil(lambda: pane.panel.marker is not None, timeout=WAIT_MS)
    settle(qtbot)
    pane.view.viewport().repaint()
    pane.view.scroll_to(row)
    pane.view.viewport().repaint()
    painted = pane.view.painted_texts()
    assert label in painted  # the marker is drawn, by who, where and when
    everything = [
        *painted,
        pane.panel.texts(),
        pane.summary.text(),
        *(
            str(pane.model.data(pane.model.index(r, c), role))
            for r in range(pane.model.total)
            for c in range(pane.model.columnCount())
            for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole, RecordRole)
        ),
    ]
    for words in (SECRET, "a secret in a DM", "told Wisp"):
        assert not [t for t in everything if words.casefold() in t.casefold()], words
    assert not pane.panel.edit_button.isEnabled()
    assert not pane.panel.forget_button.isEnabled()
    assert "Forgotten on " in pane.panel.chain.text()


# -- the keyboard, and rows loaded as they come into view --------------------------------------------------------


def test_the_keyboard_moves_through_the_rows_and_the_panel_follows(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    pane.view.setFocus()
    qtbot.keyClick(pane.view, Qt.Key.Key_Down)
    qtbot.keyClick(pane.view, Qt.Key.Key_Down)
    second = pane.model.record(2)
    assert second is not None
    qtbot.waitUntil(lambda: pane.panel.detail is not None and pane.panel.detail.fact.id == second.id, timeout=WAIT_MS)
    qtbot.keyClick(pane.view, Qt.Key.Key_End)
    assert pane.view.current_row() == pane.model.total - 1
    qtbot.keyClick(pane.view, Qt.Key.Key_Home)
    assert pane.view.current_row() == 0
    settle(qtbot)
    # Tab reaches the controls in order, then the rows.
    pane.search.setFocus()
    order = []
    for _ in range(14):
        order.append(QApplication.focusWidget())
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert order.index(pane.world.slider) < order.index(pane.recorded.slider) < order.index(pane.view)
    settle(qtbot)
    assert (pane.world_at, pane.recorded_at) == (None, None)  # tabbing through the dates moved no time
    assert "Left/Right" in pane.world.slider.toolTip()
    assert "(a)" in pane.panel.archive_button.toolTip()
    assert "(Delete)" in pane.panel.forget_button.toolTip()


def test_rows_are_loaded_as_they_scroll_into_view(
    qtbot: QtBot, memory_facade: FakeFacade, real_familiar: Familiar
) -> None:
    facts = [
        NewFact(f"The lantern number {n} was lit", "episodic", 5, 0.9, (f"discord:{BOB}",), "guild:500/501")
        for n in range(600)
    ]
    slow(qtbot, real_familiar.history.insert_facts(facts))
    pane = open_pane(qtbot, memory_facade, size=(1000, 600))
    assert pane.model.total == 600
    assert pane.model.loaded < 600  # only a page around what is in view

    pane.view.setFocus()
    qtbot.keyClick(pane.view, Qt.Key.Key_End)
    qtbot.waitUntil(lambda: pane.model.record(599) is not None, timeout=WAIT_MS)
    settle(qtbot)
    first, last = pane.view.visible_rows()
    assert all(pane.model.record(r) is not None for r in range(first, last + 1))
    assert pane.view.verticalScrollBar().maximum() == 600 * ROW_HEIGHT - pane.view.viewport().height()


# -- models ------------------------------------------------------------------------------------------------------------


def test_the_models_pass_qtmodeltester(
    qtbot: QtBot, qtmodeltester: Any, memory_facade: FakeFacade, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    qtmodeltester.check(pane.model, force_py=True)
    pane.compare.setChecked(True)
    pane.set_recorded_time(ago(8))
    moved(qtbot, pane)
    assert pane.diff_model.rowCount() > 0
    qtmodeltester.check(pane.diff_model, force_py=True)
    empty = TimelineModel()
    qtmodeltester.check(empty, force_py=True)
    partly = TimelineModel()  # 500 rows of which 10 are loaded, from row 100: the others are simply empty
    records = tuple(pane.model.records())[:10]
    partly.set_slice(TimelineSlice(None, None, (), total=500, offset=100, rows=records))
    qtmodeltester.check(partly, force_py=True)
    assert partly.data(partly.index(0, 0)) is None
    assert partly.data(partly.index(100, 0)) == pane.model.data(pane.model.index(0, 0))


def test_an_empty_familiar_says_how_facts_arrive(qtbot: QtBot, memory_facade: FakeFacade) -> None:
    pane = open_pane(qtbot, memory_facade)
    assert pane.state_text().startswith("Nothing remembered yet.")


def test_a_fact_changed_meanwhile_is_shown_as_it_is_now(
    qtbot: QtBot, memory_facade: FakeFacade, real_familiar: Familiar, demo: DemoFacts
) -> None:
    pane = open_pane(qtbot, memory_facade)
    fact = demo.active["pepper_age"]
    select(qtbot, pane, fact)
    seen = pane.detail
    assert seen is not None
    # Another process archives it first (straight in the store: this window hears of it only later).
    slow(qtbot, real_familiar.history.decisions.decide(fact, seen.fact.revision, "archive"))
    pane.view.setFocus()
    qtbot.keyClick(pane.view, Qt.Key.Key_A)
    qtbot.waitUntil(lambda: not pane.error_banner.isHidden(), timeout=WAIT_MS)
    settle(qtbot)
    assert "changed since you saw it" in pane.error_banner.text()
    assert pane.detail is not None
    assert pane.detail.fact.status == "archived"  # the new version, not the one the action saw
    assert not pane.panel.archive_button.isEnabled()
    assert rows(qtbot, pane)[fact] == "archived"
    assert pane.context.undo.stack.count() == 0  # nothing was done, so there is nothing to undo


# -- screenshots (saved to tests/artifacts/ for a human to look at) ------------------------------------------------


@pytest.mark.parametrize(("size", "comparing"), [((1100, 700), False), ((900, 600), False), ((1100, 700), True)])
def test_timeline_screenshots(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts, size: tuple[int, int], comparing: bool
) -> None:
    window = MainWindow(memory_facade, pane="timeline")
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    pane = window.pane_of(TimelinePane)
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    settle(qtbot)
    if comparing:
        pane.compare.setChecked(True)
        pane.set_recorded_time(ago(8))
        moved(qtbot, pane)
        row = next(n for n, c in enumerate(pane.diff_model.records) if c.diff)
        pane.diff_view.selectRow(row)
        qtbot.waitUntil(lambda: pane.panel.change.isVisible(), timeout=WAIT_MS)
    else:
        select(qtbot, pane, demo.active["lisbon"])
    settle(qtbot)
    qtbot.waitExposed(window)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = f"timeline_{'compare' if comparing else 'pane'}_{size[0]}x{size[1]}.png"
    path = ARTIFACTS / name
    assert window.grab().save(str(path))
    assert path.stat().st_size > 10_000
    run_shutdown = asyncio.ensure_future(window.shutdown())
    qtbot.waitUntil(run_shutdown.done, timeout=WAIT_MS)


def test_a_store_that_cannot_answer_shows_the_error_state_and_try_again(
    qtbot: QtBot, memory_facade: FakeFacade, demo: DemoFacts, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_facade.memory
    real_extent = memory.timeline_extent

    async def locked() -> Any:
        raise FamiliarError("history.db is locked by another program; close it and try again")

    monkeypatch.setattr(memory, "timeline_extent", locked)
    pane = TimelinePane(make_context(qtbot, memory_facade))
    qtbot.addWidget(pane)
    pane.show()
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    idle(qtbot, pane)
    assert pane.state.value == "error"
    assert pane.state_text().startswith("history.db is locked by another program; close it and try again")

    monkeypatch.setattr(memory, "timeline_extent", real_extent)
    pane.refresh()  # what "Try again" does
    qtbot.waitUntil(lambda: pane.state.value == "ready", timeout=WAIT_MS)
    idle(qtbot, pane)
    assert pane.model.total > 0
