"""The Dashboard's live activity log: a capped, append-only table of Activity records."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from app.runtime.events import Activity, ActivityKind
from app.ui.models.roles import RecordRole
from app.ui.theme import ERROR_RED, MUTED_GREY

AnyIndex = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()

COLUMNS: Final = ("Time", "Kind", "Where", "What")
TIME, KIND, WHERE, WHAT = range(len(COLUMNS))
DEFAULT_CAPACITY: Final = 1_000

KIND_WORDS: Final[dict[ActivityKind, str]] = {
    ActivityKind.MESSAGE_IN: "Message",
    ActivityKind.REPLY_OUT: "Reply",
    ActivityKind.EDIT: "Edit",
    ActivityKind.DELETE: "Delete",
    ActivityKind.ERROR: "Error",
    ActivityKind.INFO: "Info",
}


class ActivityLogModel(QAbstractTableModel):
    """Holds an immutable tuple snapshot; appends at the bottom and drops the oldest rows beyond `capacity`."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, parent: QObject | None = None) -> None:
        super().__init__(parent)
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._records: tuple[Activity, ...] = ()

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def records(self) -> tuple[Activity, ...]:
        return self._records

    def append(self, record: Activity) -> None:
        overflow = len(self._records) + 1 - self._capacity
        if overflow > 0:
            self.beginRemoveRows(_ROOT, 0, overflow - 1)
            self._records = self._records[overflow:]
            self.endRemoveRows()
        row = len(self._records)
        self.beginInsertRows(_ROOT, row, row)
        self._records = (*self._records, record)
        self.endInsertRows()

    def extend(self, records: Iterable[Activity]) -> None:
        for record in records:
            self.append(record)

    def clear(self) -> None:
        self.beginResetModel()
        self._records = ()
        self.endResetModel()

    # Qt overrides

    def rowCount(self, parent: AnyIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._records)

    def columnCount(self, parent: AnyIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.DisplayRole
            and 0 <= section < len(COLUMNS)
        ):
            return COLUMNS[section]
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._records):
            return None
        record = self._records[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return _display(record, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{record.at.astimezone():%Y-%m-%d %H:%M:%S}  {record.where}\n{record.summary}"
        if role == Qt.ItemDataRole.ForegroundRole:
            if record.kind is ActivityKind.ERROR:
                return QColor(ERROR_RED)
            if column == TIME:
                return QColor(MUTED_GREY)
            return None
        if role == RecordRole:
            return record
        return None


def _display(record: Activity, column: int) -> str | None:
    if column == TIME:
        return f"{record.at.astimezone():%H:%M:%S}"
    if column == KIND:
        return KIND_WORDS.get(record.kind, str(record.kind))
    if column == WHERE:
        return record.where
    if column == WHAT:
        return record.summary
    return None
