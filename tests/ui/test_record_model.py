"""RecordTableModel: column specs over a snapshot, checked by qtmodeltester through every kind of change."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from app.ui.models.base import RIGHT, Column, RecordTableModel
from app.ui.models.roles import RecordRole
from tests.ui.support import QT_STRICT

pytestmark = QT_STRICT

DISPLAY = Qt.ItemDataRole.DisplayRole


@dataclass(frozen=True, slots=True)
class Row:
    id: int
    text: str
    score: float = 0.0


COLUMNS: tuple[Column[Row], ...] = (
    Column("Id", lambda r: str(r.id), align=RIGHT, font=lambda _r: QFont("monospace")),
    Column(
        "Text",
        lambda r: r.text,
        tooltip=lambda r: f"row {r.id}",
        foreground=lambda r: QColor("red") if r.score < 0 else None,
        background=lambda r: QColor("yellow") if r.score > 1 else None,
    ),
)


def rows(*ids: int) -> list[Row]:
    return [Row(i, f"text {i}") for i in ids]


def ids(model: RecordTableModel[Row]) -> list[int]:
    return [model.index(r, 0).data(RecordRole).id for r in range(model.rowCount())]


def test_every_change_keeps_the_model_valid(qtmodeltester: ModelTester, qtbot: QtBot) -> None:
    model = RecordTableModel(COLUMNS, key=lambda r: r.id)
    qtmodeltester.check(model)
    model.set_records(rows(1, 2, 3))
    model.append(Row(4, "four"))
    model.extend(rows(5, 6))
    model.prepend(rows(-1, 0))
    assert ids(model) == [-1, 0, 1, 2, 3, 4, 5, 6]
    assert model.row_of(4) == 5

    with qtbot.waitSignal(model.dataChanged, timeout=1_000) as changed:
        assert model.replace_record(Row(4, "FOUR", score=2.0))
    assert changed.args[0].row() == 5
    assert Qt.ItemDataRole.DisplayRole in changed.args[2]
    assert model.index(5, 1).data(DISPLAY) == "FOUR"
    assert not model.replace_record(Row(99, "nowhere"))

    assert model.remove_keys([0, 2, 6, 77]) == 3
    assert ids(model) == [-1, 1, 3, 4, 5]
    assert model.row_of(5) == 4
    model.clear()
    assert model.rowCount() == 0


def test_roles_come_from_the_column_specs(qtmodeltester: ModelTester) -> None:
    model = RecordTableModel(COLUMNS)
    qtmodeltester.check(model)
    model.set_records([Row(1, "calm"), Row(2, "bad", score=-1.0)])

    assert [model.headerData(c, Qt.Orientation.Horizontal, DISPLAY) for c in range(2)] == ["Id", "Text"]
    assert model.headerData(0, Qt.Orientation.Horizontal, Qt.ItemDataRole.TextAlignmentRole) == int(RIGHT)
    assert model.headerData(1, Qt.Orientation.Horizontal, Qt.ItemDataRole.TextAlignmentRole) is None
    assert model.headerData(0, Qt.Orientation.Vertical, DISPLAY) is None
    assert model.index(0, 0).data(Qt.ItemDataRole.TextAlignmentRole) == int(RIGHT)
    assert isinstance(model.index(0, 0).data(Qt.ItemDataRole.FontRole), QFont)
    assert model.index(0, 1).data(Qt.ItemDataRole.ToolTipRole) == "row 1"
    assert model.index(0, 1).data(Qt.ItemDataRole.ForegroundRole) is None
    assert model.index(1, 1).data(Qt.ItemDataRole.ForegroundRole) == QColor("red")
    assert model.index(1, 0).data(Qt.ItemDataRole.ToolTipRole) is None
    assert model.index(1, 1).data(RecordRole) == Row(2, "bad", score=-1.0)
    assert model.index(1, 1).data(Qt.ItemDataRole.UserRole + 50) is None


def test_capacity_drops_the_oldest_rows(qtmodeltester: ModelTester) -> None:
    model = RecordTableModel(COLUMNS, key=lambda r: r.id, capacity=3)
    qtmodeltester.check(model)
    model.extend(rows(1, 2))
    model.extend(rows(3, 4, 5, 6, 7))
    assert ids(model) == [5, 6, 7]
    assert model.row_of(5) == 0
    model.set_records(rows(10, 11, 12, 13))
    assert ids(model) == [11, 12, 13]


def test_bad_specs_are_refused() -> None:
    with pytest.raises(ValueError, match="column"):
        RecordTableModel(())
    with pytest.raises(ValueError, match="capacity"):
        RecordTableModel(COLUMNS, capacity=0)
    with pytest.raises(TypeError, match="key"):
        RecordTableModel(COLUMNS).replace_record(Row(1, "x"))
