"""The facts timeline's models: the slice (a sparse snapshot of pages) and a diff between two points.

`TimelineModel` has `total` rows, the whole slice, but holds only the pages loaded so far: a painted
view asks for the rows it is about to show (`missing`), the pane loads that page through the facade
and hands it over (`add_rows`); `data()` never queries anything, an unloaded row is simply empty. Each
new slice bumps `generation`, so a page loaded for an earlier slice is dropped, not mixed in. The
loaded rows are capped (far pages are dropped), so scrolling through 100,000 facts keeps memory flat.

Forgotten facts are `ForgottenFact` records, which carry no text: every role shows them as
"forgotten fact (bob, Lantern Club, 3 Nov)".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont

from app.runtime.api.views import FactView, ForgottenFact, TimelineChange, TimelineRow, TimelineSlice
from app.ui.models.base import ROW_FLAGS, Column, RecordTableModel
from app.ui.models.roles import RecordRole
from app.ui.theme import colours
from app.ui.time_text import day, span, when

AnyIndex = QModelIndex | QPersistentModelIndex
ROOT = QModelIndex()
MAX_LOADED_ROWS: Final = 6_000
DiffRole: int = Qt.ItemDataRole.UserRole + 2
"""The word diff (a tuple of DiffPiece) of a changed fact's text, for the diff list's delegate."""

STATUS_WORDS: Final = {
    "pending": "pending",
    "active": "active",
    "rejected": "rejected",
    "archived": "archived",
    "forgotten": "forgotten",
}
TYPE_WORDS: Final = {"episodic": "event", "semantic": "fact", "procedural": "instruction"}


def forgotten_label(marker: ForgottenFact) -> str:
    """ "forgotten fact (bob, Lantern Club, 3 Nov)": who, where and when, never what."""
    when_forgotten = marker.forgotten_at or marker.created_at
    parts = [", ".join(p.name for p in marker.subjects)] if marker.subjects else []
    return f"forgotten fact ({', '.join([*parts, marker.scope.name, day(when_forgotten)])})"


def row_text(record: TimelineRow) -> str:
    """The row's one line: the fact's text, or a forgotten fact's content-free label."""
    if isinstance(record, ForgottenFact):
        return forgotten_label(record)
    return " ".join(record.content.split())


def about(record: TimelineRow) -> str:
    return ", ".join(p.name for p in record.subjects) or "—"


def held(record: TimelineRow) -> str:
    """World time: when it held."""
    return span(record.valid_from, record.valid_to)


def recorded(record: TimelineRow) -> str:
    """Recorded time: from when it was believed until it was replaced (if it was)."""
    end = "" if record.superseded_at is None else f" → {when(record.superseded_at)}"
    return f"{when(record.created_at)}{end}"


def tooltip(record: TimelineRow) -> str:
    lines = [row_text(record)]
    if isinstance(record, ForgottenFact):
        lines.append("Its text was erased everywhere; only who, where and when remain.")
    lines.append(f"{STATUS_WORDS.get(record.status, record.status)} · {record.scope.name} · about {about(record)}")
    lines.append(f"Held (world time): {held(record)}")
    lines.append(f"Believed (recorded time): {recorded(record)}")
    return "\n".join(lines)


_COLUMNS: Final = ("Fact", "Status", "About", "Place", "Held (world time)", "Believed (recorded time)")
FACT, STATUS, ABOUT, PLACE, HELD, RECORDED = range(len(_COLUMNS))
_RENDER: Final = (
    row_text,
    lambda r: STATUS_WORDS.get(r.status, r.status),
    about,
    lambda r: r.scope.name,
    held,
    recorded,
)
_DISPLAY = Qt.ItemDataRole.DisplayRole
_TOOLTIP = Qt.ItemDataRole.ToolTipRole
_FOREGROUND = Qt.ItemDataRole.ForegroundRole
_FONT = Qt.ItemDataRole.FontRole


class TimelineModel(QAbstractTableModel):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._total = 0
        self._rows: dict[int, TimelineRow] = {}
        self._by_id: dict[int, int] = {}
        self.generation = 0
        self.slice: TimelineSlice | None = None

    # -- the snapshot ------------------------------------------------------------------------------------
    @property
    def total(self) -> int:
        return self._total

    @property
    def loaded(self) -> int:
        return len(self._rows)

    def record(self, row: int) -> TimelineRow | None:
        return self._rows.get(row)

    def records(self) -> list[TimelineRow]:
        """The loaded rows' records, in row order."""
        return [self._rows[r] for r in sorted(self._rows)]

    def row_of(self, fact_id: int) -> int | None:
        return self._by_id.get(fact_id)

    def set_slice(self, sliced: TimelineSlice) -> int:
        """A new slice (its first loaded page); returns its generation."""
        self.beginResetModel()
        self.generation += 1
        self.slice = sliced
        self._total = sliced.total
        self._rows = {}
        self._by_id = {}
        self._put(sliced.offset, sliced.rows)
        self.endResetModel()
        return self.generation

    def clear(self) -> None:
        self.beginResetModel()
        self.generation += 1
        self.slice = None
        self._total = 0
        self._rows, self._by_id = {}, {}
        self.endResetModel()

    def add_rows(self, offset: int, rows: Sequence[TimelineRow], generation: int) -> bool:
        """A page loaded for slice `generation` (dropped if the slice changed since); returns whether kept."""
        if generation != self.generation or not rows:
            return False
        rows = rows[: max(0, self._total - offset)]
        if not rows:
            return False
        self._put(offset, rows)
        self._trim(offset, offset + len(rows))
        last = len(_COLUMNS) - 1
        self.dataChanged.emit(self.index(offset, 0), self.index(offset + len(rows) - 1, last), [])
        return True

    def _put(self, offset: int, rows: Sequence[TimelineRow]) -> None:
        for n, record in enumerate(rows, start=offset):
            old = self._rows.get(n)
            if old is not None:
                self._by_id.pop(old.id, None)
            self._rows[n] = record
            self._by_id[record.id] = n

    def _trim(self, first: int, last: int) -> None:
        """Drop the rows farthest from [first, last) while more than MAX_LOADED_ROWS are loaded."""
        excess = len(self._rows) - MAX_LOADED_ROWS
        if excess <= 0:
            return
        centre = (first + last) / 2
        for row in sorted(self._rows, key=lambda r: -abs(r - centre))[:excess]:
            self._by_id.pop(self._rows.pop(row).id, None)

    def missing(self, first: int, last: int) -> tuple[int, int] | None:
        """The first run of unloaded rows within [first, last] as (offset, count), or None."""
        last = min(last, self._total - 1)
        start = next((r for r in range(max(0, first), last + 1) if r not in self._rows), None)
        if start is None:
            return None
        end = start
        while end + 1 <= last and end + 1 not in self._rows:
            end += 1
        return start, end - start + 1

    def replace_record(self, record: TimelineRow) -> bool:
        """A newer version of a loaded row's record (same id); returns whether it was loaded."""
        row = self._by_id.get(record.id)
        if row is None:
            return False
        self._rows[row] = record
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(_COLUMNS) - 1), [])
        return True

    # -- Qt (memory only) ---------------------------------------------------------------------------------
    def rowCount(self, parent: AnyIndex = ROOT) -> int:
        return 0 if parent.isValid() else self._total

    def columnCount(self, parent: AnyIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(_COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == _DISPLAY and 0 <= section < len(_COLUMNS):
            return _COLUMNS[section]
        return None

    def data(self, index: AnyIndex, role: int = _DISPLAY) -> Any:
        if not index.isValid() or not 0 <= index.column() < len(_COLUMNS):
            return None
        record = self._rows.get(index.row())
        if record is None:
            return None
        if role == _DISPLAY:
            return _RENDER[index.column()](record)
        if role == RecordRole:
            return record
        if role == _TOOLTIP:
            return tooltip(record)
        if role == _FOREGROUND:
            if isinstance(record, ForgottenFact):
                return QColor(colours().muted)
            return None  # the statuses' colours are for bars and dots: as text they do not read on white
        if role == _FONT and isinstance(record, ForgottenFact):
            font = QFont()
            font.setItalic(True)
            return font
        return None

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return ROW_FLAGS


# -- the diff between two points ------------------------------------------------------------------------------
CHANGE_WORDS: Final = {"added": "Added", "removed": "Removed", "changed": "Changed"}


def shown(change: TimelineChange) -> TimelineRow:
    """The record a change is about: the later row, or the earlier one when it was removed."""
    record = change.after or change.before
    assert record is not None  # a change has at least one side
    return record


def change_text(change: TimelineChange) -> str:
    """One line: the text (old → new for a changed text; the status move for a status change)."""
    if change.diff:
        before = "".join(p.text for p in change.diff if p.op != "added").strip()
        after = "".join(p.text for p in change.diff if p.op != "removed").strip()
        return f"{before} → {after}"
    return row_text(shown(change))


def change_status(change: TimelineChange) -> str:
    if change.before is not None and change.after is not None and change.before.status != change.after.status:
        return f"{change.before.status} → {change.after.status}"
    return shown(change).status


def _change_colour(change: TimelineChange) -> QColor | None:
    p = colours()  # words on the view's own background: the theme's green and red
    return QColor({"added": p.ok, "removed": p.error}.get(change.kind, p.muted))


class TimelineDiffModel(RecordTableModel[TimelineChange]):
    """What changed between two points, one change a row; `DiffRole` gives a text change's word diff."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column("Change", lambda c: CHANGE_WORDS[c.kind], foreground=_change_colour),
                Column("Fact", change_text, tooltip=lambda c: tooltip(shown(c))),
                Column("Status", change_status),
                Column("Place", lambda c: shown(c).scope.name),
            ),
            key=lambda c: (c.kind, c.before.id if c.before else None, c.after.id if c.after else None),
            parent=parent,
        )

    def data(self, index: AnyIndex, role: int = _DISPLAY) -> Any:
        if role == DiffRole and index.isValid() and 0 <= index.row() < len(self.records):
            return self.records[index.row()].diff
        return super().data(index, role)


def is_fact(record: TimelineRow | None) -> bool:
    """A row with a text (not a forgotten marker, not an unloaded row)."""
    return isinstance(record, FactView)
