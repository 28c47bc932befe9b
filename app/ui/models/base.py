"""`RecordTableModel[T]`: a table model declared as data, over an immutable snapshot of records.

A model is a list of `Column[T]` specs (header, how to render a record, alignment, colours, tooltip,
font) plus, optionally, a key function for an id -> row map. It holds a tuple of frozen records and
never queries anything from `data()`: a presenter awaits the facade, then replaces, appends or updates
rows here. `RecordRole` returns the row's record. A list view shows column 0.

    class GuildsModel(RecordTableModel[GuildInfo]):
        def __init__(self, parent: QObject | None = None) -> None:
            super().__init__(
                (
                    Column("Name", lambda g: g.name),
                    Column("Members", lambda g: f"{g.member_count:,}", align=RIGHT),
                ),
                key=lambda g: g.id,
                parent=parent,
            )
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QColor, QFont

from app.ui.models.roles import RecordRole

T = TypeVar("T")
AnyIndex = QModelIndex | QPersistentModelIndex
ROOT = QModelIndex()
LEFT = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
CENTRE = Qt.AlignmentFlag.AlignCenter

_DISPLAY = Qt.ItemDataRole.DisplayRole
_TOOLTIP = Qt.ItemDataRole.ToolTipRole
_FOREGROUND = Qt.ItemDataRole.ForegroundRole
_BACKGROUND = Qt.ItemDataRole.BackgroundRole
_ALIGNMENT = Qt.ItemDataRole.TextAlignmentRole
_FONT = Qt.ItemDataRole.FontRole
ROW_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren
"""A plain row's flags, made once: a view asks for them at every row it paints."""
ALL_ROLES = [int(r) for r in (_DISPLAY, _TOOLTIP, _FOREGROUND, _BACKGROUND, _ALIGNMENT, _FONT)] + [RecordRole]


def native_rows(model: QAbstractItemModel, parent: QObject | None = None) -> QSortFilterProxyModel:
    """`model`'s rows, row for row, through a C++ proxy (no sorting, no filter) for a long list view.

    A QListView lays every row out again when one is inserted or removed, and on the way asks the model
    for each row's index; asked of a Python model that is two calls into Python per row (`rowCount` and
    `columnCount`, behind `QAbstractItemModel::hasIndex`): about 6 us a row, 2 ms over 300 rows at each
    decision in the pending queue. The proxy keeps its row map in C++ and answers those itself (0.1 ms);
    data, flags and edits still go to `model`, and a row number is the same in both.
    """
    proxy = QSortFilterProxyModel(parent)
    proxy.setDynamicSortFilter(False)
    proxy.setSourceModel(model)
    return proxy


@dataclass(frozen=True, slots=True)
class Column(Generic[T]):
    """One column: its header and how each role is drawn from a record (None: the view's default)."""

    header: str
    render: Callable[[T], str]
    align: Qt.AlignmentFlag | None = None
    foreground: Callable[[T], QColor | None] | None = None
    background: Callable[[T], QColor | None] | None = None
    tooltip: Callable[[T], str | None] | None = None
    font: Callable[[T], QFont | None] | None = None


class RecordTableModel(QAbstractTableModel, Generic[T]):
    """An immutable tuple of records shown through column specs (see the module docstring).

    With `capacity`, appending beyond it drops the oldest rows. With `key`, rows can be found,
    replaced and removed by key.
    """

    def __init__(
        self,
        columns: Sequence[Column[T]],
        *,
        key: Callable[[T], Hashable] | None = None,
        capacity: int | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        if not columns:
            raise ValueError("a table needs at least one column")
        if capacity is not None and capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._columns = tuple(columns)
        self._key = key
        self._capacity = capacity
        self._records: tuple[T, ...] = ()
        self._rows: dict[Hashable, int] = {}

    # -- the snapshot ------------------------------------------------------------------------------
    @property
    def columns(self) -> tuple[Column[T], ...]:
        return self._columns

    @property
    def capacity(self) -> int | None:
        return self._capacity

    @property
    def records(self) -> tuple[T, ...]:
        return self._records

    def record(self, row: int) -> T:
        return self._records[row]

    def key_of(self, row: int) -> Hashable:
        """The key of the record on `row` (needs `key`)."""
        if self._key is None:
            raise TypeError("key_of needs a model with a key")
        return self._key(self._records[row])

    def row_of(self, key: Hashable) -> int | None:
        """The row of the record with this key (needs `key`), or None."""
        return self._rows.get(key)

    def _reindex(self) -> None:
        if self._key is not None:
            key = self._key
            self._rows = {key(r): row for row, r in enumerate(self._records)}

    def set_records(self, records: Iterable[T]) -> None:
        """Replace every row (a fresh snapshot from the facade)."""
        self.beginResetModel()
        self._records = tuple(records)
        if self._capacity is not None and len(self._records) > self._capacity:
            self._records = self._records[-self._capacity :]
        self._reindex()
        self.endResetModel()

    def clear(self) -> None:
        self.set_records(())

    def append(self, record: T) -> None:
        self.extend((record,))

    def extend(self, records: Iterable[T]) -> None:
        """Add rows at the bottom (dropping the oldest beyond `capacity`)."""
        new = tuple(records)
        if not new:
            return
        if self._capacity is not None:
            new = new[-self._capacity :]
            overflow = len(self._records) + len(new) - self._capacity
            if overflow > 0:
                self.beginRemoveRows(ROOT, 0, overflow - 1)
                self._records = self._records[overflow:]
                self._reindex()
                self.endRemoveRows()
        first = len(self._records)
        self.beginInsertRows(ROOT, first, first + len(new) - 1)
        self._records = (*self._records, *new)
        self._reindex()
        self.endInsertRows()

    def prepend(self, records: Iterable[T]) -> None:
        """Put older rows (e.g. loaded history) above what is there."""
        older = tuple(records)
        if not older:
            return
        self.beginInsertRows(ROOT, 0, len(older) - 1)
        self._records = (*older, *self._records)
        self._reindex()
        self.endInsertRows()

    def replace_record(self, record: T) -> bool:
        """Put a newer version of a record in its row (found by key); returns whether it was there."""
        if self._key is None:
            raise TypeError("replace_record needs a model with a key")
        row = self._rows.get(self._key(record))
        if row is None:
            return False
        self._records = (*self._records[:row], record, *self._records[row + 1 :])
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(self._columns) - 1), ALL_ROLES)
        return True

    def remove_keys(self, keys: Iterable[Hashable]) -> int:
        """Remove the rows with these keys (contiguous runs at once); returns how many."""
        rows = sorted({r for k in keys if (r := self._rows.get(k)) is not None}, reverse=True)
        for row in rows:  # bottom up, so the rows above keep their numbers
            self.beginRemoveRows(ROOT, row, row)
            self._records = (*self._records[:row], *self._records[row + 1 :])
            self.endRemoveRows()
        if rows:
            self._reindex()
        return len(rows)

    # -- Qt overrides (memory only) -------------------------------------------------------------------
    def rowCount(self, parent: AnyIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self._records)

    def columnCount(self, parent: AnyIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self._columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(self._columns):
            return None
        column = self._columns[section]
        if role == _DISPLAY:
            return column.header
        if role == _ALIGNMENT and column.align is not None:
            return int(column.align)
        return None

    def data(self, index: AnyIndex, role: int = _DISPLAY) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._records):
            return None
        if not 0 <= index.column() < len(self._columns):
            return None
        record = self._records[index.row()]
        column = self._columns[index.column()]
        if role == _DISPLAY:
            return column.render(record)
        if role == RecordRole:
            return record
        if role == _ALIGNMENT:
            return int(column.align) if column.align is not None else None
        if role == _TOOLTIP:
            return column.tooltip(record) if column.tooltip is not None else None
        if role == _FOREGROUND:
            return column.foreground(record) if column.foreground is not None else None
        if role == _BACKGROUND:
            return column.background(record) if column.background is not None else None
        if role == _FONT:
            return column.font(record) if column.font is not None else None
        return None

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return ROW_FLAGS
