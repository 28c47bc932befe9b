"""The pending queue as a table model: one row per `PendingItem`, oldest first, keyed by fact id.

A snapshot like every model here (`data()` reads memory only), updated in place by the pane rather than
reset, so triage keeps its place: `take` removes decided rows, `put` puts an item back where it belongs
(its order key: the fact id it had when it entered the queue, so an item whose edit was undone, which
comes back as a new version with a new id, returns to its old place), `merge` brings a fresh queue in
with the fewest row signals. Rows can be marked (the check box; `x` in the pane) to act on several at
once, and flagged as changed meanwhile (a revision conflict, with the fact as it is now).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from PySide6.QtCore import QObject, Qt

from app.runtime.api.views import PendingItem
from app.ui.local_time import age, short_when
from app.ui.models.base import CENTRE, ROOT, ROW_FLAGS, AnyIndex, Column, RecordTableModel
from app.ui.models.roles import RecordRole

FACT, TYPE, CONFIDENCE, IMPORTANCE, ABOUT, SAID_IN, LEARNED = range(7)

ChangedRole: int = RecordRole + 20
"""True when the row's fact changed since it was loaded (a revision conflict); the row shows the fact as it is now."""

_CHECK = Qt.ItemDataRole.CheckStateRole
_FACT_FLAGS = ROW_FLAGS | Qt.ItemFlag.ItemIsUserCheckable


def subjects_text(item: PendingItem) -> str:
    return ", ".join(s.name for s in item.fact.subjects) or "no one in particular"


def said_in_text(item: PendingItem) -> str:
    """Where it was said: the channels of its source messages ("Lantern Club #general"), else its scope."""
    places = list(dict.fromkeys(s.place.name for s in item.sources))
    return ", ".join(places) if places else item.fact.scope.name


def confidence_text(item: PendingItem) -> str:
    return f"{item.fact.confidence:.0%}"


def meta_line(item: PendingItem, *, now: datetime | None = None) -> str:
    """The line under a row's text: who it is about, where it was said, how long ago, type, confidence,
    importance (and its snooze, if snoozed)."""
    fact = item.fact
    parts = [
        subjects_text(item),
        said_in_text(item),
        age(fact.created_at, now=now),
        fact.type,
        f"{confidence_text(item)} sure",
        f"importance {fact.importance}",
    ]
    moment = now or datetime.now(UTC)
    if fact.snoozed(moment) and fact.snoozed_until is not None:
        parts.append(f"snoozed until {short_when(fact.snoozed_until, now=moment)}")
    return " · ".join(parts)


class PendingModel(RecordTableModel[PendingItem]):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column("Fact", lambda i: i.fact.content, tooltip=lambda i: f"{i.fact.content}\n{meta_line(i)}"),
                Column("Type", lambda i: i.fact.type),
                Column("Confidence", confidence_text, align=CENTRE),
                Column("Importance", lambda i: str(i.fact.importance), align=CENTRE),
                Column("About", subjects_text),
                Column("Said in", said_in_text),
                Column("Learned", lambda i: short_when(i.fact.created_at)),
            ),
            key=lambda i: i.fact.id,
            parent=parent,
        )
        self._marked: set[int] = set()
        self._changed: set[int] = set()
        self._order: dict[int, int] = {}  # fact id -> the id it entered the queue with (see module docstring)

    # -- looking up -------------------------------------------------------------------------------
    def item(self, row: int) -> PendingItem:
        return self.record(row)

    def row_look(self, row: int) -> tuple[PendingItem, bool, bool]:
        """What a row's drawing depends on: its item, whether it changed meanwhile, whether it is marked
        (the delegate reads this directly, not role by role through Qt)."""
        item = self._records[row]
        fact_id = item.fact.id
        return item, fact_id in self._changed, fact_id in self._marked

    def ids(self) -> list[int]:
        return [r.fact.id for r in self.records]

    def order_key(self, fact_id: int) -> int:
        return self._order.get(fact_id, fact_id)

    def set_order_key(self, fact_id: int, key: int) -> None:
        if key != fact_id:
            self._order[fact_id] = key

    # -- marks (the selection to act on) -------------------------------------------------------------
    def marked_ids(self) -> list[int]:
        """Marked rows' fact ids, in queue order."""
        return [i for i in self.ids() if i in self._marked]

    def is_marked(self, fact_id: int) -> bool:
        return fact_id in self._marked

    def toggle_mark(self, row: int) -> bool:
        """Mark or unmark a row; returns whether it is marked now."""
        fact_id = self.record(row).fact.id
        marked = fact_id not in self._marked
        if marked:
            self._marked.add(fact_id)
        else:
            self._marked.discard(fact_id)
        self._row_changed(row, [int(_CHECK)])
        return marked

    def clear_marks(self) -> None:
        rows = [row for row, r in enumerate(self.records) if r.fact.id in self._marked]
        self._marked.clear()
        for row in rows:
            self._row_changed(row, [int(_CHECK)])

    # -- conflicts --------------------------------------------------------------------------------------
    def is_changed(self, fact_id: int) -> bool:
        return fact_id in self._changed

    def set_changed(self, fact_id: int, changed: bool) -> None:
        if changed == (fact_id in self._changed):
            return
        if changed:
            self._changed.add(fact_id)
        else:
            self._changed.discard(fact_id)
        row = self.row_of(fact_id)
        if row is not None:
            self._row_changed(row, [ChangedRole])

    # -- updating in place ----------------------------------------------------------------------------
    def take(self, fact_ids: Iterable[int]) -> list[tuple[int, PendingItem]]:
        """Remove these rows; returns (row it had, item) for each, top first."""
        wanted = set(fact_ids)
        taken = [(row, r) for row, r in enumerate(self.records) if r.fact.id in wanted]
        self.remove_keys(wanted)
        self._marked -= wanted  # decided: if it comes back (undo), it comes back unselected
        self._changed -= wanted
        return taken

    def put(self, item: PendingItem, *, order_key: int | None = None) -> int:
        """Insert `item` at its place in queue order (or replace the row holding its id); returns its row."""
        fact_id = item.fact.id
        if order_key is not None:
            self.set_order_key(fact_id, order_key)
        if self.replace_record(item):
            row = self.row_of(fact_id)
            assert row is not None
            return row
        key = self.order_key(fact_id)
        row = next((n for n, r in enumerate(self.records) if self.order_key(r.fact.id) > key), len(self.records))
        self._insert(row, (item,))
        return row

    def merge(self, items: Sequence[PendingItem]) -> None:
        """Bring the rows to `items` (a fresh queue) with removals, in-place updates and insertions only,
        so the view keeps its current row; the result is in queue order."""
        desired = sorted(items, key=lambda i: self.order_key(i.fact.id))
        wanted = {i.fact.id for i in desired}
        gone = [i for i in self.ids() if i not in wanted]
        if gone:
            self.remove_keys(gone)
        current = self.ids()
        kept = [i.fact.id for i in desired if self.row_of(i.fact.id) is not None]
        if kept != current:  # an order this model did not make: start over
            self.set_records(desired)
        else:
            for item in desired:
                row = self.row_of(item.fact.id)
                if row is None:
                    continue
                if self.record(row) != item:
                    self.replace_record(item)
            run: list[PendingItem] = []  # new items at consecutive places go in with one signal
            for position, item in enumerate(desired):
                if self.row_of(item.fact.id) is None:
                    run.append(item)
                    continue
                if run:
                    self._insert(position - len(run), run)
                    run = []
            if run:
                self._insert(len(desired) - len(run), run)
        live = set(self.ids())
        self._marked &= live
        self._changed &= live
        self._order = {k: v for k, v in self._order.items() if k in live}

    def set_records(self, records: Iterable[PendingItem]) -> None:
        super().set_records(records)
        live = set(self.ids())
        self._marked &= live
        self._changed &= live

    def _insert(self, row: int, items: Sequence[PendingItem]) -> None:
        self.beginInsertRows(ROOT, row, row + len(items) - 1)
        records = self.records
        self._records = (*records[:row], *items, *records[row:])
        self._reindex()
        self.endInsertRows()

    def _row_changed(self, row: int, roles: list[int]) -> None:
        self.dataChanged.emit(self.index(row, 0), self.index(row, self.columnCount() - 1), roles)

    def remove_keys(self, keys: Iterable[Hashable]) -> int:
        """As the base, in one signal per contiguous run (a batch decision removes many rows at once)."""
        rows = sorted({r for k in keys if (r := self.row_of(k)) is not None})
        if not rows:
            return 0
        runs: list[tuple[int, int]] = []
        for row in rows:
            if runs and runs[-1][1] == row - 1:
                runs[-1] = (runs[-1][0], row)
            else:
                runs.append((row, row))
        for first, last in reversed(runs):  # bottom up, so the rows above keep their numbers
            self.beginRemoveRows(ROOT, first, last)
            self._records = (*self._records[:first], *self._records[last + 1 :])
            self.endRemoveRows()
        self._reindex()
        return len(rows)

    # -- Qt overrides (memory only) ------------------------------------------------------------------
    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == _CHECK:
            if not index.isValid() or index.column() != FACT or not 0 <= index.row() < self.rowCount():
                return None
            marked = self.record(index.row()).fact.id in self._marked
            return Qt.CheckState.Checked if marked else Qt.CheckState.Unchecked
        if role == ChangedRole:
            if not index.isValid() or not 0 <= index.row() < self.rowCount():
                return None
            return self.record(index.row()).fact.id in self._changed
        return super().data(index, role)

    def setData(self, index: AnyIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != _CHECK or not index.isValid() or index.column() != FACT:
            return False
        if not 0 <= index.row() < self.rowCount():
            return False
        want = value in (Qt.CheckState.Checked, Qt.CheckState.Checked.value, 2)
        if want != (self.record(index.row()).fact.id in self._marked):
            self.toggle_mark(index.row())
        return True

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return _FACT_FLAGS if index.column() == FACT else ROW_FLAGS
