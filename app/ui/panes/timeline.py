"""Facts timeline: what the familiar believed, when, and what held in the world then.

Each fact is a bar on a world-time axis (valid from / to; open ends run to now), coloured by the
status it had at the recorded time chosen. Two as-of controls, each a slider, a typed date and "Now":
world time (what held in the world then) and recorded time (as the familiar knew it then). Moving
either re-slices (debounced; a move during a slice is served right after it) through
`facade.memory.timeline(world_at=..., recorded_at=...)`: a page around the rows in view plus the
slice's size, so 100,000 facts stay smooth. "Compare" puts a second marker (B) on the recorded-time
axis and lists what was added, removed and changed between A and B, with a word diff.

Filters: text, person, place, kind and status. The side panel shows the chosen fact's version chain
and status history and its source messages; its actions (Edit E, Archive A, Forget Delete) go
through the window's undo. Forgotten facts are markers without any text: "forgotten fact (bob,
Lantern Club, 3 Nov)".
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from datetime import UTC, datetime
from typing import Final

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QHideEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import (
    FactDetail,
    FactStatus,
    FactType,
    FactView,
    ForgottenFact,
    TimelineChange,
    TimelineDiff,
    TimelineExtent,
    TimelineFilters,
    TimelineRow,
    TimelineSlice,
)
from app.runtime.errors import StaleRevisionError
from app.runtime.events import ChangeKind
from app.ui import fact_actions
from app.ui.async_slot import async_slot
from app.ui.dialogs.edit_fact_dialog import ask_for_text
from app.ui.dialogs.forget_dialog import forget_with_preview
from app.ui.models.roles import RecordRole
from app.ui.models.timeline_model import DiffRole, TimelineDiffModel, TimelineModel, shown
from app.ui.ops import Failed, Succeeded
from app.ui.panes.base import Pane, PaneContext
from app.ui.state.timeline_query import TimelineQuery, axes_for, filters_from, page_around
from app.ui.theme import TIMELINE_RECORDED_B, TIMELINE_WORLD_CURSOR
from app.ui.undo import Reversible
from app.ui.widgets.as_of_control import AsOfControl
from app.ui.widgets.diff_delegate import DiffDelegate
from app.ui.widgets.fact_panel import FactPanel
from app.ui.widgets.record_table import RecordTableView
from app.ui.widgets.timeline_view import PREFETCH_ROWS, TimelineView

_log = logging.getLogger(__name__)

# A move is sliced at the loop's next turn; the moves made while a slice is in flight become one slice after it.
# (A longer wait only added itself to every move's latency: a drag's moves come 16 ms apart, slices are faster.)
DEBOUNCE_MS: Final = 0
TEXT_DEBOUNCE_MS: Final = 250
DETAIL_DEBOUNCE_MS: Final = 120
FIRST_PAGE: Final = 120
RESLICE_MARGIN: Final = 8  # rows beyond the view in a re-slice's page (the view asks for more as it scrolls)
DIFF_LIMIT: Final = 500
TYPE_CHOICES: Final[tuple[tuple[str, FactType | None], ...]] = (
    ("Any kind", None),
    ("Events (episodic)", "episodic"),
    ("Facts (semantic)", "semantic"),
    ("Instructions (procedural)", "procedural"),
)
STATUS_CHOICES: Final[tuple[tuple[str, FactStatus | None], ...]] = (
    ("Any status", None),
    ("Active", "active"),
    ("Pending", "pending"),
    ("Archived", "archived"),
    ("Rejected", "rejected"),
    ("Forgotten", "forgotten"),
)


class TimelinePane(Pane):
    name = "timeline"
    title = "Facts timeline"
    watches = frozenset({ChangeKind.FACTS, ChangeKind.FORGETS, ChangeKind.PLACES})
    empty_text = (
        "Nothing remembered yet. Facts appear here, on a line of time, once the familiar learns something "
        "from a conversation, or once you remember one (Chat, or `familiar facts remember`)."
    )

    sliced = Signal()  # a slice (or diff) was shown

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self.query = TimelineQuery()
        self._extent: TimelineExtent | None = None
        self._selected: TimelineRow | None = None
        self._change: TimelineChange | None = None
        self._acting = False
        self._dates_due: set[tuple[AsOfControl, int]] = set()  # typed dates to bring up to the handles
        self._slicing: asyncio.Task[None] | None = None
        self._again = False
        self._moved_at: float | None = None
        self._rows_loading: asyncio.Task[None] | None = None
        self._rows_wanted: tuple[int, int] | None = None
        self.latencies: list[float] = []  # ms from a move of either time to its slice shown (the bench reads it)
        self.diff: TimelineDiff | None = None

        self.model = TimelineModel(self)
        self.diff_model = TimelineDiffModel(self)
        self.view = TimelineView(self.model)
        self.diff_view = RecordTableView("", self.diff_model, alternating=False, stretch=1)
        self.diff_view.setItemDelegateForColumn(1, DiffDelegate(DiffRole, self.diff_view))
        self.panel = FactPanel()

        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter by text (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.person = QComboBox()
        self.place = QComboBox()
        self.kind = QComboBox()
        self.status_filter = QComboBox()
        for combo, tip in (
            (self.person, "Only facts about this person"),
            (self.place, "Only facts kept for this place (a server takes in its channels)"),
            (self.kind, "Only facts of this kind"),
            (self.status_filter, "Only facts with this status at the recorded time"),
        ):
            combo.setToolTip(tip)
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for text, kind in TYPE_CHOICES:
            self.kind.addItem(text, kind)
        for text, status in STATUS_CHOICES:
            self.status_filter.addItem(text, status)
        self.clear_filters = QPushButton("Clear filters")
        self.compare = QCheckBox("&Compare two recorded times")
        self.compare.setToolTip("Put a second marker (B) on the recorded-time axis and list what changed from A to B")

        self.world = AsOfControl(
            "&World time",
            (TIMELINE_WORLD_CURSOR, TIMELINE_WORLD_CURSOR),
            "What held in the world at this time (Alt+W)",
        )
        self.recorded = AsOfControl(
            "&Recorded time",
            ("#3b6fd4", TIMELINE_RECORDED_B),
            "As the familiar knew it at this time (Alt+R)",
        )
        self.summary = QLabel()
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        # Its text changes at every slice: a size that does not depend on it keeps the layout still.
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

        filters = QHBoxLayout()
        filters.addWidget(self.search, 2)
        for widget in (self.person, self.place, self.kind, self.status_filter, self.clear_filters):
            filters.addWidget(widget)
        filters.addStretch(0)
        times = QGridLayout()
        times.setHorizontalSpacing(8)
        times.setVerticalSpacing(2)
        times.setColumnStretch(1, 1)
        for row, control in enumerate((self.world, self.recorded)):
            times.addWidget(control.label, row, 0)
            times.addWidget(control.slider, row, 1)
            times.addWidget(control.edits[0], row, 2)
            times.addWidget(control.now_buttons[0], row, 3)
        compare_row = QHBoxLayout()
        compare_row.addWidget(self.compare)
        compare_row.addStretch(1)
        compare_row.addWidget(self.recorded.to_label)
        times.addLayout(compare_row, 2, 0, 1, 2)
        times.addWidget(self.recorded.edits[1], 2, 2)
        times.addWidget(self.recorded.now_buttons[1], 2, 3)
        self.world.to_label.setVisible(False)
        self.world.edits[1].setVisible(False)
        self.world.now_buttons[1].setVisible(False)
        self._show_b(False)

        self.bodies = QStackedWidget()
        self.bodies.addWidget(self.view)
        self.bodies.addWidget(self.diff_view)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.bodies)
        self.splitter.addWidget(self.panel)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([680, 300])
        self.splitter.setChildrenCollapsible(False)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        layout.addLayout(filters)
        layout.addLayout(times)
        layout.addWidget(self.summary)
        layout.addWidget(self.splitter, 1)
        self.set_body(body)
        self._set_tab_order()

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._on_debounce_timeout)
        self._text_debounce = QTimer(self)
        self._text_debounce.setSingleShot(True)
        self._text_debounce.setInterval(TEXT_DEBOUNCE_MS)
        self._text_debounce.timeout.connect(self._on_filters_changed)
        self._detail_debounce = QTimer(self)
        self._detail_debounce.setSingleShot(True)
        self._detail_debounce.setInterval(DETAIL_DEBOUNCE_MS)
        self._detail_debounce.timeout.connect(self._on_detail_due)

        self.world.slider.moved.connect(self._on_world_moved)
        self.recorded.slider.moved.connect(self._on_recorded_moved)
        for handle in (0, 1):
            self.world.edits[handle].editingFinished.connect(lambda h=handle: self._on_edit_finished(self.world, h))
            self.recorded.edits[handle].editingFinished.connect(
                lambda h=handle: self._on_edit_finished(self.recorded, h)
            )
            self.world.now_buttons[handle].clicked.connect(lambda _c, h=handle: self._on_now_clicked(self.world, h))
            self.recorded.now_buttons[handle].clicked.connect(
                lambda _c, h=handle: self._on_now_clicked(self.recorded, h)
            )
        self.search.textChanged.connect(self._text_debounce.start)
        for combo in (self.person, self.place, self.kind, self.status_filter):
            combo.currentIndexChanged.connect(self._on_filters_changed)
        self.clear_filters.clicked.connect(self._on_clear_filters_clicked)
        self.compare.toggled.connect(self._on_compare_toggled)
        self.view.current_changed.connect(self._on_view_current_changed)
        self.view.rows_needed.connect(self._on_view_rows_needed)
        self.view.activated.connect(lambda _row: self.panel.setFocus())
        self.diff_view.selectionModel().currentRowChanged.connect(self._on_diff_current_changed)
        self.panel.edit_requested.connect(self._on_edit_requested)
        self.panel.archive_requested.connect(self._on_archive_requested)
        self.panel.forget_requested.connect(self._on_forget_requested)
        context.undo.changed.connect(self._on_undo_changed)

        for keys, slot in (
            (("A",), self._on_archive_requested),
            (("E", "F2"), self._on_edit_requested),
            ((QKeySequence.StandardKey.Delete,), self._on_forget_requested),
        ):
            for key in keys:
                for target in (self.view, self.diff_view):
                    shortcut = QShortcut(QKeySequence(key), target)
                    shortcut.setContext(Qt.ShortcutContext.WidgetShortcut)
                    shortcut.activated.connect(slot)
        find = QShortcut(QKeySequence.StandardKey.Find, self)
        find.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        find.activated.connect(self._on_find_triggered)
        self._set_times_shown()

    def _set_tab_order(self) -> None:
        chain: list[QWidget] = [
            self.search,
            self.person,
            self.place,
            self.kind,
            self.status_filter,
            self.clear_filters,
            self.world.slider,
            self.world.edits[0],
            self.world.now_buttons[0],
            self.compare,
            self.recorded.slider,
            self.recorded.edits[0],
            self.recorded.now_buttons[0],
            self.recorded.edits[1],
            self.recorded.now_buttons[1],
            self.view,
            self.diff_view,
            self.panel.edit_button,
            self.panel.archive_button,
            self.panel.forget_button,
        ]
        for first, second in itertools.pairwise(chain):
            QWidget.setTabOrder(first, second)

    # -- the points ------------------------------------------------------------------------------------------
    @property
    def world_at(self) -> datetime | None:
        return self.query.world

    @property
    def recorded_at(self) -> datetime | None:
        return self.query.recorded[0]

    @property
    def compare_at(self) -> datetime | None:
        return self.query.recorded[1]

    @property
    def comparing(self) -> bool:
        return self.query.comparing

    @property
    def filters(self) -> TimelineFilters:
        return self.query.filters

    def set_world_time(self, moment: datetime | None) -> None:
        """Move the world time (None: now), as the slider or the typed date does."""
        self.world.slider.set_value(0, moment)
        self._on_world_moved(0, self.world.slider.value(0))

    def set_recorded_time(self, moment: datetime | None, handle: int = 0) -> None:
        """Move recorded time A (or B when comparing)."""
        self.recorded.slider.set_value(handle, moment)
        self._on_recorded_moved(handle, self.recorded.slider.value(handle))

    def _show_b(self, visible: bool) -> None:
        for widget in (self.recorded.to_label, self.recorded.edits[1], self.recorded.now_buttons[1]):
            widget.setVisible(visible)

    def _set_times_shown(self, only: tuple[AsOfControl, int] | None = None) -> None:
        """The typed dates and Now buttons say where the handles are (`only` one of them, during a drag)."""
        now = datetime.now(UTC)
        for control, values in (
            (self.world, self.query.world_handles()),
            (self.recorded, self.query.recorded_handles()),
        ):
            for handle in (0, 1):
                if only is None or only == (control, handle):
                    control.show_time(handle, values[handle], now)

    def focus_widget(self) -> QWidget:
        return self.view

    # -- loading -----------------------------------------------------------------------------------------------
    async def load(self) -> bool:
        extent = await self.facade.memory.timeline_extent()
        self._apply_extent(extent)
        if not extent.facts:
            self.model.clear()
            return False
        if self.query.comparing:
            await self._show_diff(await self._fetch_diff())
        else:
            await self._show_slice(await self._fetch_slice(), first_load=self._selected is None)
        return True

    def _apply_extent(self, extent: TimelineExtent) -> None:
        self._extent = extent
        now = datetime.now(UTC)
        axes = axes_for(extent, now)
        self.world.slider.set_range(axes.world_start, axes.world_end, now)
        self.view.set_axis(axes.world_start, axes.world_end, now)
        self.recorded.slider.set_range(axes.recorded_start, now, now)
        self._fill_combo(self.person, "Anyone", [(p.name, p.key) for p in extent.people])
        self._fill_combo(self.place, "Anywhere", [(p.name, p.key) for p in extent.places])
        self._set_times_shown()

    @staticmethod
    def _fill_combo(combo: QComboBox, anything: str, choices: list[tuple[str, str]]) -> None:
        chosen = combo.currentData()
        combo.blockSignals(True)
        combo.clear()
        combo.addItem(anything, None)
        for text, key in choices:
            combo.addItem(text, key)
        found = combo.findData(chosen) if chosen is not None else 0
        combo.setCurrentIndex(max(0, found))
        combo.blockSignals(False)

    async def _fetch_slice(self, offset: int | None = None, limit: int | None = None) -> TimelineSlice:
        """A page of the slice: `limit` rows from `offset`, or (by default) the rows in view and a few
        around them (a first load: a longer page, so the first scroll finds its rows already there)."""
        if offset is None:
            first, last = self.view.visible_rows()
            margin = RESLICE_MARGIN if self.is_loaded else PREFETCH_ROWS
            offset, around = page_around(first, last, margin, 1 if self.is_loaded else FIRST_PAGE)
            limit = max(limit or 0, around)
        query = self.query
        return await self.facade.memory.timeline(
            world_at=query.world,
            recorded_at=query.recorded[0],
            offset=offset,
            limit=limit or FIRST_PAGE,
            filters=query.filters,
        )

    async def _fetch_diff(self) -> TimelineDiff:
        return await self.facade.memory.timeline_diff(
            self.query.point(0), self.query.point(1), filters=self.query.filters, limit=DIFF_LIMIT
        )

    async def _show_slice(self, sliced: TimelineSlice, *, first_load: bool = False) -> None:
        keep = self._selected.id if self._selected is not None else None
        self.model.set_slice(sliced)
        self.view.set_cursor(self.query.world)
        self.view.set_summary(f"{sliced.total:,} fact{'s' if sliced.total != 1 else ''}")
        self.summary.setText(self.query.summary_text(sliced.total))
        self.view.set_placeholder(self.query.empty_text())
        detail = self.panel.detail
        versions = detail.versions if detail is not None else None
        focus = self.query.focus_after_slice(keep, sliced, self.model.row_of, versions, first_load=first_load)
        if focus.kind == "kept":
            self.view.set_current_row(focus.row)
            record = self.model.record(focus.row)
            if record is not None and record != self._selected:
                self._select(record, at_once=True)
        elif focus.kind == "followed":
            self.view.set_current_row(focus.row)
            following = self.model.record(focus.row)
            if following is not None:
                self._select(following, at_once=True)
        elif focus.kind == "first":
            self.view.set_current_row(focus.row)
            await self._show_detail(sliced.rows[0])
            self._detail_debounce.stop()  # shown just now
        elif focus.kind == "clear":
            self._clear_selection()

    def _clear_selection(self) -> None:
        """No fact chosen: no row marked, and the side panel says so (rather than showing one that has gone)."""
        self._detail_debounce.stop()
        self._selected = None
        self._change = None
        self.view.set_current_row(-1)
        self.panel.show_nothing()

    # -- re-slicing as the times move ------------------------------------------------------------------------
    def _on_world_moved(self, _handle: int, moment: object) -> None:
        self.query.move_world(moment)
        self.view.set_cursor(self.query.world)
        self._dates_due.add((self.world, 0))
        self._schedule()

    def _on_recorded_moved(self, handle: int, moment: object) -> None:
        due = self.query.move_recorded(handle, moment)
        self._dates_due.add((self.recorded, handle))
        if not due:  # B moved while not comparing: nothing shown changes
            self._show_dates()
            return
        self._schedule()

    def _show_dates(self) -> None:
        """The typed dates of the handles that moved (once per slice, not at every move of a drag)."""
        due, self._dates_due = self._dates_due, set()
        for control, handle in due:
            self._set_times_shown((control, handle))

    def _schedule(self) -> None:
        """A slice is due. The timer is not restarted by later moves: a drag that never pauses (moves come
        every 16 ms) is still sliced as it goes, the latest move right after the slice in flight."""
        if self._moved_at is None:
            self._moved_at = time.perf_counter()
        if not self._debounce.isActive():
            self._debounce.start()

    def _on_debounce_timeout(self) -> None:
        if self._slicing is not None:
            self._again = True  # served right after the slice in flight, with the latest times
            return
        self._slicing = self._reslice_loop()

    @property
    def idle(self) -> bool:
        """Nothing is being fetched or is due: no slice, no page of rows, no fact's detail."""
        return (
            not self.slicing
            and self._rows_loading is None
            and not self._detail_debounce.isActive()
            and not self.view.asking
            and not self.ops.busy
        )

    def hideEvent(self, event: QHideEvent) -> None:
        """Work due for a pane no one sees is dropped; a slice that was due is made when it shows again."""
        super().hideEvent(event)
        if self._debounce.isActive():
            self._debounce.stop()
            self.mark_stale()
        self._detail_debounce.stop()
        self._text_debounce.stop()

    @property
    def slicing(self) -> bool:
        """A slice is being fetched or is due (a move not shown yet)."""
        return self._slicing is not None or self._debounce.isActive()

    @async_slot()
    async def _reslice_loop(self) -> None:
        try:
            while True:
                self._again = False
                self._show_dates()
                moved_at, self._moved_at = self._moved_at, None
                if self.query.comparing:
                    outcome_diff = await self.ops.run("compare the two times", self._fetch_diff)
                    if isinstance(outcome_diff, Succeeded):
                        await self._show_diff(outcome_diff.value)
                else:
                    outcome = await self.ops.run("slice the timeline", self._fetch_slice)
                    if isinstance(outcome, Succeeded):
                        await self._show_slice(outcome.value)
                if moved_at is not None:
                    self.latencies.append((time.perf_counter() - moved_at) * 1000)
                if not self._again:
                    break
        finally:
            self._slicing = None
            self.sliced.emit()

    def _on_edit_finished(self, control: AsOfControl, handle: int) -> None:
        moment = control.typed(handle)
        if moment is None:
            return  # left without typing anything: the handle stays where it is (at "now" too)
        slider = control.slider
        start, end = slider.range()
        if control is self.world and not start <= moment <= end:  # a typed date beyond the axis widens it
            slider.set_range(min(start, moment), max(end, moment))
            self.view.set_axis(min(start, moment), max(end, moment))
        slider.set_value(handle, moment, emit=True)

    def _on_now_clicked(self, control: AsOfControl, handle: int) -> None:
        control.slider.set_value(handle, None, emit=True)
        self._set_times_shown()

    # -- rows coming into view ------------------------------------------------------------------------------
    def _on_view_rows_needed(self, offset: int, count: int) -> None:
        self._rows_wanted = (offset, count)
        if self._rows_loading is None:
            self._rows_loading = self._load_rows()

    @async_slot()
    async def _load_rows(self) -> None:
        try:
            while self._rows_wanted is not None:
                (offset, count), self._rows_wanted = self._rows_wanted, None
                generation = self.model.generation

                async def fetch(first: int = offset, many: int = count) -> TimelineSlice:
                    return await self._fetch_slice(first, many)

                outcome = await self.ops.run("load more of the timeline", fetch, clear=False)
                if isinstance(outcome, Succeeded):
                    self.model.add_rows(offset, outcome.value.rows, generation)
        finally:
            self._rows_loading = None

    # -- filters -------------------------------------------------------------------------------------------------
    def _on_filters_changed(self) -> None:
        self.query.filters = filters_from(
            self.person.currentData(),
            self.place.currentData(),
            self.kind.currentData(),
            self.status_filter.currentData(),
            self.search.text(),
        )
        self.view.verticalScrollBar().setValue(0)
        self._schedule()

    def set_filters(self, filters: TimelineFilters) -> None:
        """Set every filter at once (as the controls do), then re-slice."""
        for combo, values in (
            (self.person, filters.subjects),
            (self.place, filters.places),
            (self.kind, filters.types),
            (self.status_filter, filters.statuses),
        ):
            combo.blockSignals(True)
            combo.setCurrentIndex(max(0, combo.findData(values[0])) if values else 0)
            combo.blockSignals(False)
        self.search.blockSignals(True)
        self.search.setText(filters.text)
        self.search.blockSignals(False)
        self._on_filters_changed()

    def _on_clear_filters_clicked(self) -> None:
        self.set_filters(TimelineFilters())

    def _on_find_triggered(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    # -- comparing -------------------------------------------------------------------------------------------------
    def _on_compare_toggled(self, on: bool) -> None:
        start, _end = self.recorded.slider.range()
        moved = self.query.compare(on, start, datetime.now(UTC))
        self.recorded.slider.set_handles(2 if on else 1)
        self._show_b(on)
        if on:
            if moved is not None:
                self.recorded.slider.set_value(0, moved)
            self.recorded.slider.set_value(1, None)
            self.bodies.setCurrentWidget(self.diff_view)
        else:
            self.bodies.setCurrentWidget(self.view)
            self.diff = None
        self._set_times_shown()
        self._schedule()

    async def _show_diff(self, diff: TimelineDiff) -> None:
        self.diff = diff
        self.diff_model.set_records(diff.changes)
        self.diff_view.resizeColumnToContents(0)
        self.view.set_cursor(self.query.world)
        self.summary.setText(self.query.diff_text(diff))
        if diff.changes:
            self.diff_view.selectRow(0)
        elif self._selected is not None:
            self._clear_selection()  # nothing changed between the two times: no change to show

    def _on_diff_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        row = current.row()
        if not 0 <= row < len(self.diff_model.records):
            return
        change = self.diff_model.records[row]
        self._change = change
        self._select(shown(change))

    # -- the chosen fact -----------------------------------------------------------------------------------------
    def _on_view_current_changed(self, row: int) -> None:
        record = self.model.record(row) if row >= 0 else None
        self._change = None
        if record is not None:
            self._select(record)

    def _select(self, record: TimelineRow, *, at_once: bool = False) -> None:
        self._selected = record
        if at_once:
            self._on_detail_due()
        else:
            self._detail_debounce.start()

    @property
    def selected(self) -> TimelineRow | None:
        return self._selected

    def _on_detail_due(self) -> None:
        record = self._selected
        if record is not None:
            self._show_detail_now(record)

    @async_slot()
    async def _show_detail_now(self, record: TimelineRow) -> None:
        await self._show_detail(record)

    async def _show_detail(self, record: TimelineRow) -> None:
        self._selected = record
        if isinstance(record, ForgottenFact):
            self.panel.show_forgotten(record)
            return
        outcome = await self.ops.run("show the fact", lambda: self.facade.memory.fact(record.id), clear=False)
        if not isinstance(outcome, Succeeded) or self._selected is not record:
            return
        change = self._change.diff if self._change is not None and shown(self._change) is record else ()
        self.panel.show_fact(outcome.value, record, change=change)

    @property
    def detail(self) -> FactDetail | None:
        return self.panel.detail

    # -- actions -----------------------------------------------------------------------------------------------------
    def _head(self) -> FactView | None:
        detail = self.panel.detail
        if detail is None:
            return None
        return next((v for v in detail.versions if v.id == detail.head_id), None)

    async def _perform(self, what: str, action: Reversible) -> bool:
        self._acting = True
        try:
            outcome = await self.ops.run(what, lambda: self.context.undo.perform(action))
        finally:
            self._acting = False
        if isinstance(outcome, Succeeded):
            await self._after_action()
            return True
        if isinstance(outcome, Failed) and isinstance(outcome.error, StaleRevisionError):
            await self._after_action()  # it changed meanwhile: show it as it is now (the banner says so)
        return False

    async def _after_action(self) -> None:
        if self._selected is not None:
            await self._show_detail(self._selected)
        self.refresh()

    @async_slot()
    async def _on_archive_requested(self) -> None:
        head = self._head()
        if head is None or head.status != "active" or not self.panel.archive_button.isEnabled():
            return
        await self._perform("archive the fact", fact_actions.archive(self.facade.memory, head, initiator=self))

    @async_slot()
    async def _on_edit_requested(self) -> None:
        head = self._head()
        if head is None or head.status not in ("pending", "active") or not self.panel.edit_button.isEnabled():
            return
        text = await ask_for_text(head.content, self.context.window)
        if text is None:
            return
        await self._perform("edit the fact", fact_actions.edit(self.facade.memory, head, text, initiator=self))

    @async_slot()
    async def _on_forget_requested(self) -> None:
        detail = self.panel.detail
        if detail is None or not self.panel.forget_button.isEnabled():
            return
        self._acting = True
        try:
            done = await forget_with_preview(
                self.facade.memory, self.context.undo, self.ops, detail.fact, self.context.window, initiator=self
            )
        finally:
            self._acting = False
        if done:
            # Out of every read at once: the row goes, and the fact after it takes its place and focus.
            self.panel.show_nothing("Forgotten. Undo brings it back within its few seconds.")
            self._selected = None
            self.query.follow_row = self.view.current_row()
            self.refresh()

    def _on_undo_changed(self) -> None:
        if not self._acting:
            self.mark_stale()  # an undo (or redo) from the notice or Ctrl+Z: what is shown may have changed

    def record_at(self, row: int) -> TimelineRow | None:
        """The loaded record of a row of the timeline (None when not loaded)."""
        index = self.model.index(row, 0)
        value = self.model.data(index, RecordRole)
        return value if isinstance(value, FactView | ForgottenFact) else None
