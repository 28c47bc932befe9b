"""The pending queue model: qtmodeltester through every in-place update (take, put, merge, marks), and the
rows it shows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QListView
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from app.runtime.api.views import FactView, PendingItem, PersonRef, PlaceRef, SourceMessage
from app.ui.models.base import native_rows
from app.ui.models.pending_model import ABOUT, SAID_IN, ChangedRole, PendingModel, meta_line
from app.ui.models.roles import RecordRole
from app.ui.widgets.pending_item_delegate import PendingItemDelegate
from tests.ui.support import QT_STRICT

pytestmark = QT_STRICT

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ALICE = PersonRef("discord:7001", "alice")
GENERAL = PlaceRef("guild:500/501", "Lantern Club #general")
CLUB = PlaceRef("guild:500", "Lantern Club")
CHECK = Qt.ItemDataRole.CheckStateRole


def item(fact_id: int, text: str | None = None, *, revision: int = 1, snoozed: bool = False) -> PendingItem:
    fact = FactView(
        id=fact_id, content=text or f"alice keeps {fact_id} bees", type="semantic", importance=5, confidence=0.8,
        subjects=(ALICE,), speaker=ALICE, scope=CLUB, status="pending", revision=revision, origin="extraction",
        created_at=NOW - timedelta(days=2), superseded_at=None, superseded_by=None, valid_from=None, valid_to=None,
        snoozed_until=NOW + timedelta(days=400) if snoozed else None, source_turn_ids=(fact_id * 10,),
    )  # fmt: skip
    source = SourceMessage(fact_id * 10, ALICE, GENERAL, "I keep bees", NOW - timedelta(days=2), redacted=False)
    return PendingItem(fact=fact, sources=(source,), related=())


def ids(model: PendingModel) -> list[int]:
    return model.ids()


def test_take_put_and_merge_keep_the_model_consistent(qtmodeltester: ModelTester) -> None:
    model = PendingModel()
    model.set_records([item(1), item(2), item(3), item(4)])
    qtmodeltester.check(model, force_py=True)  # and it keeps checking every change below

    taken = model.take([2, 3])
    assert [(row, i.fact.id) for row, i in taken] == [(1, 2), (2, 3)]
    assert ids(model) == [1, 4]
    model.put(taken[1][1])
    model.put(taken[0][1])
    assert ids(model) == [1, 2, 3, 4]  # back where they were (queue order)

    # A new version of 2 (an undone edit: a new id) comes back where 2 was.
    model.take([2])
    assert model.put(item(9, "alice keeps two bees"), order_key=2) == 1
    assert ids(model) == [1, 9, 3, 4]

    # A fresh queue: 1 decided elsewhere, 3 changed (a new revision), 5 new; 9 keeps its place.
    model.merge([item(3, revision=2), item(4), item(5), item(9, "alice keeps two bees")])
    assert ids(model) == [9, 3, 4, 5]
    row = model.row_of(3)
    assert row is not None
    assert model.item(row).fact.revision == 2

    model.merge([])
    assert model.rowCount() == 0


def test_marks_are_the_check_boxes_and_leave_with_their_rows(qtmodeltester: ModelTester) -> None:
    model = PendingModel()
    model.set_records([item(1), item(2), item(3)])
    qtmodeltester.check(model, force_py=True)
    assert model.toggle_mark(0)
    assert model.setData(model.index(2, 0), Qt.CheckState.Checked.value, CHECK)
    assert model.marked_ids() == [1, 3]
    assert model.index(0, 0).data(CHECK) == Qt.CheckState.Checked
    assert model.index(1, 0).data(CHECK) == Qt.CheckState.Unchecked
    assert model.index(0, ABOUT).data(CHECK) is None  # only the fact column has the box
    assert model.flags(model.index(0, 0)) & Qt.ItemFlag.ItemIsUserCheckable
    taken = model.take([1])
    model.put(taken[0][1])
    assert model.marked_ids() == [3]  # decided and back (undone): no longer selected
    model.clear_marks()
    assert model.marked_ids() == []


def test_rows_show_names_places_and_the_changed_flag() -> None:
    model = PendingModel()
    model.set_records([item(1), item(2, snoozed=True)])
    assert model.index(0, 0).data() == "alice keeps 1 bees"
    assert model.index(0, ABOUT).data() == "alice"
    assert model.index(0, SAID_IN).data() == "Lantern Club #general"
    assert model.index(0, 0).data(RecordRole) == item(1)
    line = meta_line(item(1), now=NOW)
    assert line == "alice · Lantern Club #general · 2 days ago · semantic · 80% sure · importance 5"
    assert "snoozed until" in meta_line(item(2, snoozed=True), now=NOW)
    assert model.index(0, 0).data(ChangedRole) is False
    model.set_changed(1, True)
    assert model.index(0, 0).data(ChangedRole) is True


@pytest.mark.parametrize("through_proxy", [False, True], ids=["model", "native_rows"])
def test_rows_are_drawn_once_then_copied_and_look_the_same(qtbot: QtBot, through_proxy: bool) -> None:
    """A decision moves every row below it up one: those rows are copied from their images, not drawn
    again (bench/bench_ui_stall.py --scenario triage), and a copy looks exactly like a fresh drawing, in
    either alternate shade. The pane shows the model through `native_rows` and lets the delegate read it
    by row; both ways draw the same."""
    model = PendingModel()
    model.set_records([item(i) for i in range(1, 41)])
    view = QListView()
    qtbot.addWidget(view)
    shown = native_rows(model, view) if through_proxy else model
    view.setModel(shown)
    rows = model if through_proxy else None
    delegate = PendingItemDelegate(view, rows)
    view.setItemDelegate(delegate)
    view.setUniformItemSizes(True)
    view.setAlternatingRowColors(True)
    view.resize(420, 400)
    view.show()
    qtbot.waitExposed(view)
    view.setCurrentIndex(shown.index(0, 0))

    first = view.viewport().grab().toImage()
    drawn = delegate.drawn
    assert drawn >= 5  # a screenful
    assert view.viewport().grab().toImage() == first
    assert delegate.drawn == drawn  # a repaint copies

    fresh = PendingItemDelegate(view, rows)
    view.setItemDelegate(fresh)
    assert view.viewport().grab().toImage() == first  # drawn afresh: the same pixels
    generic = PendingItemDelegate(view)  # reads every role through Qt (the model or the proxy)
    view.setItemDelegate(generic)
    assert view.viewport().grab().toImage() == first  # reading the row directly draws the same
    view.setItemDelegate(delegate)

    for _ in range(3):  # every row below moves up one, into the other shade
        model.take([model.item(0).fact.id])
        view.setCurrentIndex(shown.index(0, 0))
        before = delegate.drawn
        moved = view.viewport().grab().toImage()
        assert delegate.drawn - before <= 2  # the row now on top (selected) and the one coming into view
        view.setItemDelegate(fresh)
        assert view.viewport().grab().toImage() == moved  # the copies in their new shades, as if drawn afresh
        view.setItemDelegate(delegate)

    model.set_changed(model.item(1).fact.id, True)
    model.toggle_mark(2)
    before = delegate.drawn
    view.viewport().grab()
    assert delegate.drawn - before == 2  # "changed meanwhile" and the marked box: those two rows again


def test_a_new_palette_or_font_draws_the_rows_again(qtbot: QtBot) -> None:
    """The images are kept per look: a theme switch (a new palette) or a larger font is not served
    from images drawn in the old one."""
    model = PendingModel()
    model.set_records([item(i) for i in range(1, 11)])
    view = QListView()
    qtbot.addWidget(view)
    view.setModel(native_rows(model, view))
    delegate = PendingItemDelegate(view, model)
    view.setItemDelegate(delegate)
    view.resize(420, 400)
    view.show()
    qtbot.waitExposed(view)
    light = view.viewport().grab().toImage()
    drawn = delegate.drawn

    dark = QPalette(view.palette())
    dark.setColor(QPalette.ColorRole.Text, QColor("#f0f0f0"))
    dark.setColor(QPalette.ColorRole.Base, QColor("#202020"))
    view.setPalette(dark)
    assert view.viewport().grab().toImage() != light
    assert delegate.drawn > drawn
    drawn = delegate.drawn

    bigger = QFont(view.font())
    bigger.setPointSizeF(bigger.pointSizeF() * 1.5)
    view.setFont(bigger)
    view.viewport().grab()
    assert delegate.drawn > drawn
