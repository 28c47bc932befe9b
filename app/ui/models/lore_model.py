"""The lorebook editor's table: every entry of the draft, filtered (scoped search) and sorted in Python over
a snapshot of rows (app/ui/models/lore_rows.py), never querying anything from data()."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QColor

from app.ui.models.base import CENTRE, RIGHT, ROOT, Column, RecordTableModel
from app.ui.models.forgetting_models import short_time
from app.ui.models.lore_rows import LoreRow, filter_rows, sort_rows
from app.ui.theme import AMBER, MUTED_GREY, themed

LOGIC_NAMES = {"and_any": "AND any", "and_all": "AND all", "not_any": "NOT any", "not_all": "NOT all"}


def _keys(keys: Sequence[str]) -> str:
    return ", ".join(keys)


def _muted_if_disabled(row: LoreRow) -> QColor | None:
    return themed(MUTED_GREY) if not row.entry.enabled else None


def _lint_tip(row: LoreRow) -> str | None:
    return "\n".join(row.lint) if row.lint else None


COLUMNS: tuple[tuple[str, Column[LoreRow]], ...] = (
    (
        "lint",
        Column(
            "⚠", lambda r: "⚠" if r.lint else "", align=CENTRE, foreground=lambda _r: themed(AMBER), tooltip=_lint_tip
        ),
    ),
    (
        "on",
        Column(
            "On",
            lambda r: "✓" if r.entry.enabled else "–",
            align=CENTRE,
            tooltip=lambda r: "Enabled" if r.entry.enabled else "Disabled: never fires",
        ),
    ),
    ("#", Column("#", lambda r: "new" if r.entry.ref is None else str(r.position + 1), align=RIGHT)),
    ("title", Column("Title", lambda r: r.entry.title or "(untitled)", foreground=_muted_if_disabled)),
    ("keys", Column("Keys", lambda r: _keys(r.entry.keys), foreground=_muted_if_disabled, tooltip=_lint_tip)),
    (
        "logic",
        Column("Logic", lambda r: LOGIC_NAMES.get(r.entry.logic, r.entry.logic) if r.entry.secondary_keys else ""),
    ),
    ("secondary", Column("Secondary keys", lambda r: _keys(r.entry.secondary_keys), foreground=_muted_if_disabled)),
    ("priority", Column("Priority", lambda r: str(r.entry.priority), align=RIGHT)),
    ("constant", Column("Constant", lambda r: "always" if r.entry.constant else "", align=CENTRE)),
    (
        "depth",
        Column(
            "Depth",
            lambda r: "book" if r.entry.scan_depth is None else str(r.entry.scan_depth),
            align=RIGHT,
            tooltip=lambda _r: "How many recent messages it scans (book: the book's setting)",
        ),
    ),
    ("tokens", Column("Tokens", lambda r: f"{r.entry.tokens:,}", align=RIGHT)),
    ("fired", Column("Fired 7d", lambda r: str(r.fired) if r.fired else "", align=RIGHT)),
    ("last", Column("Last fired", lambda r: short_time(r.last_fired) if r.last_fired is not None else "")),
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)
TITLE_COLUMN = COLUMN_NAMES.index("title")


class LoreTableModel(RecordTableModel[LoreRow]):
    """All rows, of which those matching `query` show, in the chosen order."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(tuple(c for _, c in COLUMNS), key=lambda r: r.position, parent=parent)
        self._all: tuple[LoreRow, ...] = ()
        self._query = ""
        self._sort: tuple[str, bool] | None = None

    @property
    def all_rows(self) -> tuple[LoreRow, ...]:
        return self._all

    @property
    def query(self) -> str:
        return self._query

    def set_rows(self, rows: Sequence[LoreRow]) -> None:
        self._all = tuple(rows)
        self._show()

    def set_query(self, query: str) -> int:
        """Show the rows matching `query`; returns how many."""
        self._query = query
        self._show()
        return self.rowCount()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if not 0 <= column < len(COLUMN_NAMES):
            return
        self.layoutAboutToBeChanged.emit()
        self._sort = (COLUMN_NAMES[column], order == Qt.SortOrder.DescendingOrder)
        rows = self.records
        ordered = tuple(sort_rows(rows, *self._sort))
        before = self.persistentIndexList()
        self._records = ordered
        self._reindex()
        after = []
        for index in before:
            row = self.row_of(rows[index.row()].position)
            after.append(self.index(row, index.column()) if row is not None else ROOT)
        self.changePersistentIndexList(before, after)
        self.layoutChanged.emit()

    def _show(self) -> None:
        rows: Sequence[LoreRow] = filter_rows(self._all, self._query) if self._query.strip() else self._all
        if self._sort is not None:
            rows = sort_rows(rows, *self._sort)
        self.set_records(rows)
