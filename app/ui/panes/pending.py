"""Pending queue: what the familiar wants to remember and waits for the owner to decide, triaged by keys.

The queue (oldest first) on the left, the focused item in full on the right: its text, type, confidence,
importance, who it is about, where it was said, its source messages, and the facts already known that it
would duplicate or replace, with a word diff.

Keys (also on the buttons' tooltips and the "?" sheet): j / k move, a accept, r reject, s snooze (a menu:
1 hour, 1 day, 1 week, pick a date), e edit in place (Enter saves the new text and accepts it: one step,
undone as one), x selects or unselects, Shift+A / Shift+R accept or reject the selected (the focused item
when none is selected), d or Shift+Delete forget (with the preview), z undo. After a decision the focus
moves to the next item, never to the top.

A decision takes its rows out at once, then runs through the window's undo (so z, Ctrl+Z and the notice's
Undo all work) in the order the keys were pressed; undone, the item comes back where it was. Nothing is
reloaded for it: the model is updated in place. A revision conflict (the fact changed since it was
loaded) puts the fact back as it is now, flagged "changed meanwhile", with a note saying so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QPoint, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListView,
    QMenu,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from app.runtime.api.views import FactView, PendingItem, PendingQueue
from app.runtime.errors import FamiliarError, StaleRevisionError
from app.runtime.events import ChangeKind
from app.ui import fact_actions
from app.ui.async_slot import async_slot
from app.ui.dialogs.forget_dialog import forget_with_preview
from app.ui.dialogs.shortcut_sheet import ShortcutSheet, keys_text
from app.ui.dialogs.snooze_dialog import ask_snooze_until
from app.ui.error_text import one_line
from app.ui.fact_actions import FactStep
from app.ui.models.base import native_rows
from app.ui.models.pending_model import PendingModel
from app.ui.ops import Failed, Succeeded
from app.ui.panes.base import Pane, PaneContext
from app.ui.state.pending_queue import VERBS, Kind, QueueDecision, QueueState, focus_after_decision, is_open
from app.ui.theme import CAUGHT_UP_STYLE, scaled_font, small_label
from app.ui.widgets.flow_layout import FlowLayout
from app.ui.widgets.pending_detail import PendingDetail, conflict_text, left_text
from app.ui.widgets.pending_item_delegate import PendingItemDelegate
from app.ui.widgets.stable_splitter import StableSplitter

_log = logging.getLogger(__name__)

PAGE = 200
"""Items loaded at a time; more are fetched when fewer than LOW_WATER are left and more wait."""
LOW_WATER = 40
PREPARE_DELAY_MS = 4
"""After a key, how soon the rows the next decision shows afresh are drawn ahead (PendingPane._prepare_timer)."""
RECOUNT_MS = 30
LIST_SHARES = (9, 11)
"""The queue's and the item's parts of the pane's width (until the owner drags the handle between them)."""
SNOOZES: tuple[tuple[str, timedelta], ...] = (
    ("1 &hour", timedelta(hours=1)),
    ("1 &day", timedelta(days=1)),
    ("1 &week", timedelta(weeks=1)),
)
HINT = (
    "j / k move · a accept · r reject · s snooze · e edit · x select · Shift+A / Shift+R the selected · "
    "d forget · z undo · ? all keys"
)
CAUGHT_UP = "All caught up"
NOTHING_WAITS = (
    "Nothing waits for your decision. New things the familiar wants to remember appear here.\n"
    "Decided one too many? z brings the last decision back."
)


def fixed_size_for(label: QLabel, longest: str) -> None:
    """Give a label that changes often a fixed size (room for `longest`), so a new text repaints it
    without re-laying out the window around it."""
    metrics = label.fontMetrics()
    label.setFixedSize(metrics.horizontalAdvance(longest) + 8, metrics.height() + 4)


def counter_text(pending: int, snoozed: int, selected: int = 0) -> str:
    text = f"{pending} pending, {snoozed} snoozed"
    return f"{text} · {selected} selected" if selected else text


class PendingPane(Pane):
    name = "pending"
    title = "Pending queue"
    watches = frozenset({ChangeKind.FACTS, ChangeKind.FORGETS, ChangeKind.PLACES, ChangeKind.TOMBSTONES})
    empty_text = NOTHING_WAITS

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self.model = PendingModel(self)
        self.queue = QueueState()
        self._serial = asyncio.Lock()  # decisions and undo run in the order their keys were pressed
        self._snooze_target: PendingItem | None = None
        self.sheet: ShortcutSheet | None = None
        # The counter moves with each decision; a load reads it from the store. A load that ran beside a
        # decision may have counted it already: then the counts are read again, once nothing overlaps.
        self._recount_timer = QTimer(self)
        self._recount_timer.setSingleShot(True)
        self._recount_timer.setInterval(RECOUNT_MS)
        self._recount_timer.timeout.connect(self._on_recount_timer_timeout)
        self._recount_task: asyncio.Task[None] | None = None

        # -- the queue ---------------------------------------------------------------------------------
        self.list_view = QListView()
        self.list_view.setObjectName("pending-list")
        self.list_view.setModel(native_rows(self.model, self))  # the same rows; a decision relays them out in C++
        self._delegate = PendingItemDelegate(self.list_view, self.model)
        self.list_view.setItemDelegate(self._delegate)
        # Between keys, the rows the next decision shows afresh are drawn ahead (see _on_prepare_timer_timeout).
        self._prepare_timer = QTimer(self)
        self._prepare_timer.setSingleShot(True)
        # Not 0: the rows are drawn in a turn of their own, after the repaint and the detail's context,
        # not in the same run of work as the key (the window's loop gets a turn in between).
        self._prepare_timer.setInterval(PREPARE_DELAY_MS)
        self._prepare_timer.timeout.connect(self._on_prepare_timer_timeout)
        self._delegate.look_changed.connect(self._prepare_timer.start)
        self.list_view.setUniformItemSizes(True)
        self.list_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list_view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list_view.setMinimumWidth(260)
        self.list_view.setAlternatingRowColors(True)
        self.list_view.selectionModel().currentChanged.connect(self._on_list_current_changed)
        self.list_view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

        self.detail = PendingDetail()
        self.detail.editor.submitted.connect(self._on_editor_submitted)
        self.detail.editor.cancelled.connect(self._on_editor_cancelled)

        # -- actions (keys) -------------------------------------------------------------------------------
        def action(text: str, keys: Sequence[str], tip: str, slot: Callable[[], object]) -> QAction:
            made = QAction(text, self)
            made.setShortcuts([QKeySequence(k) for k in keys])
            made.setShortcutContext(Qt.ShortcutContext.WindowShortcut)  # while this pane is shown
            made.setToolTip(f"{tip} ({keys_text(made)})")
            made.setStatusTip(tip)  # the shortcut sheet's words
            made.triggered.connect(slot)
            self.addAction(made)
            return made

        self.next_action = action("Next", ["J"], "Move to the next item", lambda: self.move_focus(1))
        self.previous_action = action("Previous", ["K"], "Move to the previous item", lambda: self.move_focus(-1))
        self.accept_action = action("&Accept", ["A"], "Accept: the familiar remembers it", self.accept_current)
        self.reject_action = action("&Reject", ["R"], "Reject: the familiar does not remember it", self.reject_current)
        self.snooze_action = action(
            "&Snooze", ["S"], "Snooze: out of the queue for 1 hour, 1 day, 1 week or until a date", self.open_snooze
        )
        self.edit_action = action(
            "&Edit", ["E"], "Edit the text in place; Enter saves it and accepts it, Esc cancels", self.begin_edit
        )
        self.mark_action = action("Select", ["X"], "Select or unselect this item", self.toggle_mark)
        self.accept_marked_action = action(
            "Accept selected", ["Shift+A"], "Accept the selected items (or this one)", self.accept_marked
        )
        self.reject_marked_action = action(
            "Reject selected", ["Shift+R"], "Reject the selected items (or this one)", self.reject_marked
        )
        self.forget_action = action(
            "&Forget…", ["D", "Shift+Del"], "Forget it: a preview of what goes, then an undoable forget", self.forget
        )
        self.undo_action = action("&Undo", ["Z"], "Undo the last decision", self.undo)
        self.keys_action = action("Keys", ["?", "F1"], "Show these keys", self.show_keys)
        self.triage_actions = (
            self.next_action,
            self.previous_action,
            self.accept_action,
            self.reject_action,
            self.snooze_action,
            self.edit_action,
            self.mark_action,
            self.accept_marked_action,
            self.reject_marked_action,
            self.forget_action,
            self.undo_action,
            self.keys_action,
        )
        for each in (self.accept_action, self.reject_action, self.snooze_action, self.edit_action):
            self.list_view.addAction(each)
        self.list_view.addAction(self.mark_action)
        self.list_view.addAction(self.forget_action)

        self.snooze_menu = QMenu(self)
        for text, delta in SNOOZES:
            choice = self.snooze_menu.addAction(text)
            choice.triggered.connect(lambda _checked=False, delta=delta: self._snooze_for(delta))
        self.snooze_menu.addSeparator()
        self.pick_date_action = self.snooze_menu.addAction("&Pick a date…")
        self.pick_date_action.triggered.connect(self._on_pick_date_triggered)
        self.snooze_menu.aboutToHide.connect(self._back_to_the_list)

        # -- layout ---------------------------------------------------------------------------------------
        self.counter = QLabel(counter_text(0, 0))
        self.counter.setObjectName("pending-counter")
        self.counter.setFont(scaled_font(self.font(), 1.1, bold=True))
        fixed_size_for(self.counter, counter_text(99_999, 99_999, 9_999))
        self.show_snoozed_box = QCheckBox("Sho&w snoozed")
        self.show_snoozed_box.setToolTip("Also list the snoozed items (their snooze shows on each)")
        self.show_snoozed_box.toggled.connect(self._on_show_snoozed_toggled)
        keys_button = QToolButton()
        keys_button.setDefaultAction(self.keys_action)
        keys_button.setText("Keys (?)")
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.counter)
        top.addStretch(1)
        top.addWidget(self.show_snoozed_box)
        top.addWidget(keys_button)

        self.buttons: dict[str, QToolButton] = {}
        bar = QHBoxLayout()
        bar.setContentsMargins(12, 0, 0, 0)
        bar.setSpacing(4)
        for key, each in (
            ("accept", self.accept_action),
            ("reject", self.reject_action),
            ("snooze", self.snooze_action),
            ("edit", self.edit_action),
            ("forget", self.forget_action),
            ("undo", self.undo_action),
        ):
            button = QToolButton()
            button.setDefaultAction(each)
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            self.buttons[key] = button
            bar.addWidget(button)
        # The snooze action drops snooze_menu down with popup(); setMenu would open it with exec(), a nested loop.
        bar.addStretch(1)

        self.selection_bar = QWidget()
        # Wraps when the queue is narrow: the bar never makes the queue wider than its share of the pane.
        selection_layout = FlowLayout(self.selection_bar, spacing=6)
        self.selection_label = QLabel()
        fixed_size_for(self.selection_label, "9,999 selected")
        self.accept_marked_button = QPushButton("Accept selected")
        self.accept_marked_button.clicked.connect(self.accept_marked)
        self.reject_marked_button = QPushButton("Reject selected")
        self.reject_marked_button.clicked.connect(self.reject_marked)
        self.clear_marks_button = QPushButton("Clear")
        self.clear_marks_button.clicked.connect(self._on_clear_marks_clicked)
        selection_layout.addWidget(self.selection_label)
        selection_layout.addWidget(self.accept_marked_button)
        selection_layout.addWidget(self.reject_marked_button)
        selection_layout.addWidget(self.clear_marks_button)
        self.selection_bar.hide()

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.list_view, 1)
        left_layout.addWidget(self.selection_bar)
        # In a scroll area: what changes from item to item is laid out there, not across the window, and a
        # long item scrolls.
        self.detail_scroll = QScrollArea()
        self.detail_scroll.setWidget(self.detail)
        self.detail_scroll.setWidgetResizable(True)
        self.detail_scroll.setFrameShape(QFrame.Shape.NoFrame)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addLayout(bar)
        right_layout.addWidget(self.detail_scroll, 1)
        # The queue keeps its share of the width whatever the item beside it shows (a selection's bar, an
        # editor, the pane shown again after "All caught up"): only a drag of the handle changes it.
        self.splitter = StableSplitter(Qt.Orientation.Horizontal, LIST_SHARES)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(left)
        self.splitter.addWidget(right)

        self.caught_up = QWidget()
        self.caught_up.setObjectName("caught-up")
        caught_layout = QVBoxLayout(self.caught_up)
        self.caught_up_title = QLabel(CAUGHT_UP)
        self.caught_up_title.setFont(scaled_font(self.font(), 1.8, bold=True))
        self.caught_up_title.setStyleSheet(CAUGHT_UP_STYLE)
        self.caught_up_text = small_label(NOTHING_WAITS)
        self.caught_up_text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        caught_layout.addStretch(1)
        caught_layout.addWidget(self.caught_up_title, 0, Qt.AlignmentFlag.AlignHCenter)
        caught_layout.addWidget(self.caught_up_text)
        caught_layout.addStretch(2)

        self.views = QStackedWidget()
        self.views.addWidget(self.splitter)
        self.views.addWidget(self.caught_up)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        layout.addLayout(top)
        layout.addWidget(self.views, 1)
        layout.addWidget(small_label(HINT))
        self.set_body(body)
        self._sync()

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def pending_count(self) -> int:
        return self.queue.pending

    @property
    def snoozed_count(self) -> int:
        return self.queue.snoozed

    @property
    def is_caught_up(self) -> bool:
        return self.views.currentWidget() is self.caught_up

    @property
    def deciding(self) -> bool:
        """Decisions taken out of the queue whose facade call has not finished yet."""
        return self.queue.deciding or self._serial.locked()

    @property
    def drawing_ahead(self) -> bool:
        """The rows the next decision shows afresh are still to be drawn ahead (next turn of the loop)."""
        return self._prepare_timer.isActive()

    @property
    def settling(self) -> bool:
        """Decisions taken out of the queue not finished yet, or the counter not recounted after them."""
        return (
            self.queue.deciding
            or self._serial.locked()
            or self._recount_timer.isActive()
            or self._recount_task is not None
        )

    def current_item(self) -> PendingItem | None:
        index = self.list_view.currentIndex()
        return self.model.item(index.row()) if index.isValid() else None

    def current_row(self) -> int:
        index = self.list_view.currentIndex()
        return index.row() if index.isValid() else -1

    def conflict_note(self, fact_id: int) -> str | None:
        return self.queue.conflict(fact_id)

    @property
    def _generation(self) -> int:
        """The queue's generation (a test stages a reload that ran beside decisions with it)."""
        return self.queue.generation

    async def load(self) -> bool:
        since = self.queue.generation
        queue = await self.facade.memory.pending(include_snoozed=self.queue.show_snoozed, limit=PAGE)
        self._apply(queue, since)
        return True

    def _apply(self, queue: PendingQueue, since: int) -> None:
        """Bring in a queue read from the store (begun at generation `since`), keeping what this pane's
        own decisions changed meanwhile as the model has it."""
        keep = self.current_item()
        row = self.current_row()
        order = self.model.order_key(keep.fact.id) if keep is not None else 0
        desired, recent = self.queue.read(queue, since)
        desired += [self.model.item(r) for fact_id in recent if (r := self.model.row_of(fact_id)) is not None]
        self.model.merge(desired)
        if recent:
            self._recount_timer.start()  # the counts were read before some of those decisions
        self.queue.keep_conflicts(lambda fact_id: self.model.row_of(fact_id) is not None)
        wanted = self.queue.wanted
        if wanted is not None and self.model.row_of(wanted) is not None:
            self.queue.wanted = None
            self._select(self.model.row_of(wanted) or 0)
            self.list_view.setFocus()
        elif keep is not None and (kept := self.model.row_of(keep.fact.id)) is not None:
            self._select(kept)
        else:
            self._select(max(row, 0))
            if keep is not None and not self.queue.in_flight(keep.fact.id):
                # What the owner was looking at left the queue from elsewhere (the CLI, a worker): say
                # what became of it, and show its newer version in its place if there is one to decide.
                self._vanished(keep, order)
        self._sync()

    # -- focus ------------------------------------------------------------------------------------------
    def move_focus(self, step: int) -> None:
        if self.model.rowCount() == 0:
            return
        self._select(min(max(self.current_row() + step, 0), self.model.rowCount() - 1))

    def _select(self, row: int) -> None:
        count = self.model.rowCount()
        if count == 0:
            self.detail.show_item(None)
            self._sync()
            return
        index = self.list_view.model().index(min(max(row, 0), count - 1), 0)
        self.list_view.selectionModel().setCurrentIndex(index, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        self.list_view.scrollTo(index)
        self._show_detail()
        self._prepare_timer.start()

    def _on_prepare_timer_timeout(self) -> None:
        """Draw ahead the two rows a decision on the focused row shows for the first time: the next one
        (it moves up into the selection) and the one just below the list's bottom edge (it moves into
        view). The repaint right after the key then only copies images (bench_ui_stall --scenario triage)."""
        row = self.current_row()
        if row < 0 or not self.isVisible():
            return
        shown = self.list_view.model()
        self._delegate.prepare(shown.index(row + 1, 0), selected=True)
        viewport = self.list_view.viewport()
        bottom = self.list_view.indexAt(QPoint(1, viewport.height() - 1))
        below = bottom.row() + 1 if bottom.isValid() else shown.rowCount()
        self._delegate.prepare(shown.index(below, 0), selected=False)

    def _show_detail(self) -> None:
        item = self.current_item()
        self.detail.show_item(item, conflict=self.queue.conflict(item.fact.id) if item else None)

    def focus_widget(self) -> QWidget:
        return self.list_view

    def focus_on(self, target: object) -> None:
        """Show the pending fact with this id (from another pane); snoozed ones too."""
        if not isinstance(target, int):
            return
        row = self.model.row_of(target)
        if row is not None:
            self._select(row)
            self.list_view.setFocus()
            return
        self.queue.wanted = target
        if not self.queue.show_snoozed:
            self.show_snoozed_box.setChecked(True)  # reloads
        else:
            self.refresh()

    def _on_list_current_changed(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        self._show_detail()

    def _sync(self) -> None:
        """The counter, the caught-up page, the selection bar: from the model and the counts."""
        marked = len(self.model.marked_ids())
        self.counter.setText(counter_text(self.queue.pending, self.queue.snoozed, marked))
        empty = self.model.rowCount() == 0
        if empty:
            snoozed = self.queue.snoozed
            self.caught_up_text.setText(
                NOTHING_WAITS
                + (
                    f"\n{snoozed} snoozed item{'s come' if snoozed != 1 else ' comes'} back when the snooze ends"
                    " (tick “Show snoozed” to see them now)."
                    if snoozed and not self.queue.show_snoozed
                    else ""
                )
            )
        self.views.setCurrentWidget(self.caught_up if empty else self.splitter)
        self.selection_bar.setVisible(marked > 0)
        self.selection_label.setText(f"{marked} selected")
        has_item = self.current_item() is not None
        for each in (self.accept_action, self.reject_action, self.snooze_action, self.edit_action):
            each.setEnabled(has_item)
        self.forget_action.setEnabled(has_item)

    def _refill(self) -> None:
        """Fetch more when the loaded part of a long queue runs low."""
        if self.queue.needs_more(self.model.rowCount(), LOW_WATER):
            self.refresh()

    # -- deciding -------------------------------------------------------------------------------------------
    def accept_current(self) -> None:
        self._decide("accept", self._targets(marked=False))

    def reject_current(self) -> None:
        self._decide("reject", self._targets(marked=False))

    def accept_marked(self) -> None:
        self._decide("accept", self._targets(marked=True))

    def reject_marked(self) -> None:
        self._decide("reject", self._targets(marked=True))

    def toggle_mark(self) -> None:
        row = self.current_row()
        if row >= 0:
            self.model.toggle_mark(row)
            self._sync()

    def _on_clear_marks_clicked(self) -> None:
        self.model.clear_marks()
        self._sync()

    def _targets(self, *, marked: bool) -> list[PendingItem]:
        """The selected items (marked=True and some are), else the focused one; only those still open."""
        ids = self.model.marked_ids() if marked else []
        items = [self.model.item(r) for i in ids if (r := self.model.row_of(i)) is not None]
        if not items:
            current = self.current_item()
            items = [current] if current is not None else []
        open_items = [i for i in items if is_open(i.fact)]
        if items and not open_items:
            self.context.undo.notices.show_message("Nothing left to decide on this one: it changed meanwhile.")
        return open_items

    def _decide(
        self, kind: Kind, items: Sequence[PendingItem], *, until: datetime | None = None, text: str | None = None
    ) -> None:
        """Take the items out now (focus to the next), then do the decision through the undo centre."""
        if not items:
            return
        ids = [i.fact.id for i in items]
        orders = {i: self.model.order_key(i) for i in ids}
        focused = self.current_item()
        row = self.current_row()
        taken = self.model.take(ids)
        self.queue.take_out(ids)
        focused_id = focused.fact.id if focused is not None else None
        self._select(focus_after_decision(focused_id, ids, [r for r, _item in taken], row, self.model.row_of))
        self._sync()
        self._run_decision(kind, [(item, row, orders[item.fact.id]) for row, item in taken], until, text)

    def _step(self, kind: Kind, fact: FactView, until: datetime | None, text: str | None) -> FactStep:
        memory = self.facade.memory
        if kind == "accept":
            return fact_actions.accept(memory, fact, initiator=self)
        if kind == "reject":
            return fact_actions.reject(memory, fact, initiator=self)
        if kind == "snooze":
            assert until is not None
            return fact_actions.snooze(memory, fact, until, initiator=self)
        assert text is not None
        return fact_actions.edit(memory, fact, text, initiator=self)

    @async_slot()
    async def _run_decision(
        self,
        kind: Kind,
        taken: list[tuple[PendingItem, int, int]],
        until: datetime | None,
        text: str | None,
    ) -> None:
        ids = {item.fact.id for item, _row, _order in taken}
        try:
            async with self._serial:
                decision = QueueDecision(
                    kind,
                    [(item, order, self._step(kind, item.fact, until, text)) for item, _row, order in taken],
                    self._settled,
                )
                what = VERBS[kind][0] + (" the selected facts" if len(taken) > 1 else " the fact")
                outcome = await self.ops.run(what, lambda: self.context.undo.perform(decision), report=_quiet)
                self.queue.landed(ids)
                failed = {item.fact.id for item, _order, _error in decision.failures}
                for item, order, error in decision.failures:
                    await self._failed(item, order, error)
                if not isinstance(outcome, Succeeded):
                    for item, _row, order in taken:  # not done (an unexpected error, or cancelled): back it goes
                        if item.fact.id not in failed:
                            self.model.put(item, order_key=order)
                    if isinstance(outcome, Failed) and not failed:
                        self.error_banner.show_message(outcome.message)
                    self._sync()
        finally:
            self.queue.settled(ids)
        self._refill()

    async def _failed(self, item: PendingItem, order: int, error: FamiliarError) -> None:
        """A step was refused: a revision conflict shows the fact as it is now; anything else puts the
        item back with the error in the banner."""
        if not isinstance(error, StaleRevisionError):
            self.model.put(item, order_key=order)
            self.error_banner.show_message(one_line(error))
            self._sync()
            return
        current = error.current
        if current is not None and not current.is_head:
            old_id = current.id
            outcome = await self.ops.run(
                "read the fact as it is now", lambda: self.facade.memory.fact(old_id), report=_quiet
            )
            if isinstance(outcome, Succeeded):
                head = next((v for v in outcome.value.versions if v.id == outcome.value.head_id), None)
                current = head or current
        note = conflict_text(current)
        if current is None:
            self.context.undo.notices.show_message(f"{fact_actions.quoted(item.fact.content)}: {note}")
            self._sync()
            return
        now_item = replace(item, fact=current)
        self.queue.touch(current.id)
        row = self.model.put(now_item, order_key=order)
        self.queue.note_conflict(current.id, note)
        self.model.set_changed(current.id, True)
        self._select(row)
        self._sync()

    @async_slot()
    async def _vanished(self, item: PendingItem, order: int) -> None:
        """The focused item left the queue from elsewhere: its newer version, if the queue has it, takes
        its place flagged "changed meanwhile"; a decision made elsewhere is said in a notice; a forget
        (or one being applied) is not repeated in words."""
        outcome = await self.ops.run(
            "read the fact as it is now", lambda: self.facade.memory.fact(item.fact.id), report=_quiet
        )
        if not isinstance(outcome, Succeeded):
            return
        detail = outcome.value
        head = next((v for v in detail.versions if v.id == detail.head_id), detail.fact)
        if head.status == "forgotten" or not head.content:
            return
        now = datetime.now(UTC)
        if is_open(head) and not head.snoozed(now):
            if self.model.row_of(head.id) is None or head.id == item.fact.id:
                return  # held by a forget waiting out its undo window (or beyond the page): not a decision
            self.model.take([head.id])  # the reload put the newer version at the end: it goes where the old one was
            self.queue.touch(head.id)
            self.model.put(replace(item, fact=head), order_key=order)
            self.queue.note_conflict(head.id, conflict_text(head))
            self.model.set_changed(head.id, True)
            self._select(self.model.row_of(head.id) or 0)
            self._sync()
            return
        quoted = fact_actions.quoted(item.fact.content)
        self.context.undo.notices.show_message(f"{quoted} left the queue: {left_text(head, now)}.")

    def _settled(self, item: PendingItem, order: int, before: FactView, after: FactView, undoing: bool) -> None:
        """A step was done or undone (from here, Ctrl+Z or a notice): the queue follows the fact."""
        belongs = self.queue.settle_step(before, after, datetime.now(UTC))
        row = self.current_row()
        if after.id != before.id:
            self.model.take([before.id])
        if belongs:
            put = self.model.put(replace(item, fact=after), order_key=order)
            if undoing:
                self._select(put)  # what came back is what the owner wants to look at again
        else:
            self.model.take([after.id])
            if not self.list_view.currentIndex().isValid():
                self._select(row)
        self._sync()

    def _on_recount_timer_timeout(self) -> None:
        if not isValid(self.counter):
            return
        if self._recount_task is None:
            self._recount_task = self._recount()
        else:
            self._recount_timer.start()  # one is running: count again after it

    @async_slot()
    async def _recount(self) -> None:
        since = self.queue.generation
        try:
            queue = await self.facade.memory.pending(limit=1, with_related=False)
        except FamiliarError as error:
            _log.warning("could not recount the pending queue: %s", one_line(error))
        else:
            if not isValid(self.counter):
                return  # the window closed meanwhile
            if self.queue.recount(queue, since):
                self._sync()
            else:
                self._recount_timer.start()  # a decision overlapped this count: count again after
        finally:
            self._recount_task = None

    # -- undo ------------------------------------------------------------------------------------------------
    @async_slot()
    async def undo(self) -> None:
        async with self._serial:
            if not await self.context.undo.undo():
                self.context.undo.notices.show_message("Nothing to undo.")

    # -- snooze -----------------------------------------------------------------------------------------------
    def open_snooze(self) -> None:
        targets = self._targets(marked=False)
        if not targets:
            return
        self._snooze_target = targets[0]
        index = self.list_view.currentIndex()
        rect = self.list_view.visualRect(index)
        where = self.list_view.viewport().mapToGlobal(rect.bottomLeft() + QPoint(24, 0))
        self.snooze_menu.popup(where)

    def _take_snooze_target(self) -> PendingItem | None:
        target = self._snooze_target or self.current_item()
        self._snooze_target = None
        if target is None or self.model.row_of(target.fact.id) is None:
            return None
        return self.model.item(self.model.row_of(target.fact.id) or 0)

    def _snooze_for(self, delta: timedelta) -> None:
        target = self._take_snooze_target()
        if target is not None:
            self._decide("snooze", [target], until=datetime.now(UTC) + delta)

    def _back_to_the_list(self) -> None:
        """After a menu or dialog: keys go to the queue again (the window active, the list focused)."""
        self.activateWindow()
        self.list_view.setFocus()

    def _on_pick_date_triggered(self) -> None:
        self._pick_date()

    @async_slot()
    async def _pick_date(self) -> None:
        target = self._take_snooze_target()
        if target is None:
            return
        until = await ask_snooze_until(fact_actions.quoted(target.fact.content), self.context.window)
        self._back_to_the_list()
        if until is not None and self.model.row_of(target.fact.id) is not None:
            self._decide("snooze", [target], until=until)

    # -- edit in place ----------------------------------------------------------------------------------------
    def begin_edit(self) -> None:
        if self._targets(marked=False):
            self.detail.begin_edit()

    def _on_editor_submitted(self, text: str) -> None:
        item = self.detail.item
        if not text:
            self.context.undo.notices.show_message("A fact needs some words: type the text, or Esc to cancel.")
            return
        self.detail.end_edit()
        self.list_view.setFocus()
        if item is None or self.model.row_of(item.fact.id) is None:
            return
        if text == " ".join(item.fact.content.split()):
            self._decide("accept", [item])  # nothing changed: Enter accepts it as it is
        else:
            self._decide("edit", [item], text=text)

    def _on_editor_cancelled(self) -> None:
        self.detail.end_edit()
        self.list_view.setFocus()

    # -- forget -------------------------------------------------------------------------------------------------
    @async_slot()
    async def forget(self) -> None:
        item = self.current_item()
        if item is None:
            return
        # initiator None: the change it publishes (and its undo's) reloads this pane, which takes the
        # item out and puts it back.
        await forget_with_preview(
            self.facade.memory, self.context.undo, self.ops, item.fact, self.context.window, initiator=None
        )
        self._back_to_the_list()

    # -- the rest -------------------------------------------------------------------------------------------------
    def show_keys(self) -> None:
        if self.sheet is None:
            self.sheet = ShortcutSheet(self.title, self.triage_actions, self.context.window)
        self.sheet.show()
        self.sheet.raise_()

    def _on_show_snoozed_toggled(self, checked: bool) -> None:
        self.queue.show_snoozed = checked
        self.refresh()


def _quiet(_message: str) -> None:
    """Failures are shown by the pane itself (a conflict as such, not as an error)."""
