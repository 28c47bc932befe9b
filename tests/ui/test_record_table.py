"""RecordTableView: the one table setup the panes share, and each difference a pane asks for."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView
from pytestqt.qtbot import QtBot

from app.ui.models.base import Column, RecordTableModel
from app.ui.widgets.record_table import RecordTableView
from tests.ui.support import QT_STRICT

pytestmark = QT_STRICT


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    note: str


def _model() -> RecordTableModel[Row]:
    model: RecordTableModel[Row] = RecordTableModel(
        (Column("Name", lambda r: r.name), Column("Note", lambda r: r.note), Column("More", lambda _r: ""))
    )
    model.set_records([Row("a", "one"), Row("b", "two")])
    return model


def test_a_record_table_selects_one_whole_row_and_never_edits(qtbot: QtBot) -> None:
    model = _model()
    view = RecordTableView("Nothing yet.", model)
    qtbot.addWidget(view)
    assert view.model() is model
    assert view.placeholder() == "Nothing yet."
    assert view.selectionBehavior() == QAbstractItemView.SelectionBehavior.SelectRows
    assert view.selectionMode() == QAbstractItemView.SelectionMode.SingleSelection
    assert view.editTriggers() == QAbstractItemView.EditTrigger.NoEditTriggers
    assert view.alternatingRowColors()
    assert view.showGrid()
    assert not view.wordWrap()
    assert view.textElideMode() == Qt.TextElideMode.ElideRight
    assert view.verticalHeader().isHidden()
    assert not view.horizontalHeader().stretchLastSection()
    assert view.verticalScrollMode() == QAbstractItemView.ScrollMode.ScrollPerItem


def test_each_difference_is_an_argument(qtbot: QtBot) -> None:
    view = RecordTableView(
        "",
        _model(),
        selection=QAbstractItemView.SelectionMode.ExtendedSelection,
        behavior=QAbstractItemView.SelectionBehavior.SelectItems,
        alternating=False,
        grid=False,
        wrap=True,
        row_height=31,
        columns=QHeaderView.ResizeMode.ResizeToContents,
        stretch=1,
        min_column=90,
        left_headers=True,
        per_pixel=True,
    )
    qtbot.addWidget(view)
    header = view.horizontalHeader()
    assert view.selectionMode() == QAbstractItemView.SelectionMode.ExtendedSelection
    assert view.selectionBehavior() == QAbstractItemView.SelectionBehavior.SelectItems
    assert (view.alternatingRowColors(), view.showGrid(), view.wordWrap()) == (False, False, True)
    assert view.verticalHeader().defaultSectionSize() == 31
    assert header.sectionResizeMode(0) == QHeaderView.ResizeMode.ResizeToContents
    assert header.sectionResizeMode(1) == QHeaderView.ResizeMode.Stretch  # the model was there first
    assert header.sectionResizeMode(2) == QHeaderView.ResizeMode.ResizeToContents
    assert header.minimumSectionSize() == 90
    assert header.defaultAlignment() == Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
    assert view.verticalScrollMode() == QAbstractItemView.ScrollMode.ScrollPerPixel


def test_the_last_column_can_take_the_width_left_over(qtbot: QtBot) -> None:
    view = RecordTableView("", stretch="last")
    qtbot.addWidget(view)
    view.setModel(_model())  # a model set later keeps it
    assert view.horizontalHeader().stretchLastSection()
