"""Memory controls: the learning and recall switches (everywhere, per server, per channel, by name,
with what each place inherits), and what forgetting left: tombstones (with Lift), receipts, and the
forgets still in their undo window.

Keys: in the switches, arrows move, Space / Enter (or a click) flips the switch under the cursor, L and
R flip learning and recall of the row. A switch paused by its server's or the everywhere switch is
not flipped: the cursor goes to the switch that rules it. Del lifts the selected tombstone, or keeps
the selected fact from its forget. Everything is undoable (Ctrl+Z, or the notice's Undo).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TypeVar

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from app.runtime.api.views import ForgetReceipt, PauseKind, PauseView, StoreCount
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind
from app.ui.async_slot import async_slot
from app.ui.control_actions import KeepStep, LiftStep, SwitchStep
from app.ui.dialogs.forget_dialog import store_line
from app.ui.fact_actions import quoted
from app.ui.models.base import RecordTableModel
from app.ui.models.forgetting_models import (
    ReceiptsModel,
    TombstonesModel,
    WaitingForget,
    WaitingForgetsModel,
    short_time,
)
from app.ui.models.switches_model import EVERYWHERE, KIND_OF_COLUMN, LEARNING, PLACE, RECALL, SwitchesModel, switch_rows
from app.ui.panes.base import Pane, PaneContext
from app.ui.theme import SWITCH_HINT_STYLE, section_label, small_label
from app.ui.widgets.placeholder_table import PlaceholderTableView
from app.ui.widgets.record_table import RecordTableView

_log = logging.getLogger(__name__)
T = TypeVar("T")

SWITCHES_HELP = (
    "Learning: the familiar reads what is said and proposes what to remember. Recall: it draws on what it "
    "remembers when it replies. A server's switch covers its channels. Nothing is lost while learning is "
    "paused: it catches up once resumed."
)
TOMBSTONES_HELP = (
    "A tombstone keeps a forgotten fact from being learned again. It holds no words, only who it was about, "
    "where and when. Lift one to let the familiar learn it again."
)
NO_PLACES = (
    "Servers, channels and DMs appear here once the familiar has heard something there; until then the"
    " everywhere switches are the ones that count."
)
NO_TOMBSTONES = "Nothing forgotten yet. Forget a fact from any pane that shows it; its tombstone appears here."
NO_RECEIPTS = "No forgets yet. Each forget leaves a receipt here listing everywhere it was erased."
NOTHING_WAITING = (
    "Nothing is being forgotten right now. A forget waits here while it can still be undone, then is applied."
)
COUNTDOWN_MS = 1000


def describe(receipt: ForgetReceipt) -> str:
    """What a forget erased, in the forget dialog's words: "1 version of the fact; 1 entry in ..."."""
    lines = [store_line(StoreCount(store, count)) for store, count in receipt.stores if count]
    return "; ".join(lines) or "nothing left to erase"


class SwitchTable(RecordTableView):
    """Emits `toggle_requested(column)` for Space / Enter (the current cell's column), L and R."""

    toggle_requested = Signal(int)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        plain = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier == Qt.KeyboardModifier.NoModifier
        key = event.key()
        if plain and key in (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.toggle_requested.emit(self.currentIndex().column())
        elif plain and key == Qt.Key.Key_L:
            self.toggle_requested.emit(LEARNING)
        elif plain and key == Qt.Key.Key_R:
            self.toggle_requested.emit(RECALL)
        else:
            super().keyPressEvent(event)
            return
        event.accept()


def _table(placeholder: str, model: QAbstractItemModel) -> RecordTableView:
    """A table of the pane's records: its columns as wide as their contents, the last one the rest."""
    table = RecordTableView(
        placeholder, model, columns=QHeaderView.ResizeMode.ResizeToContents, stretch="last", min_column=90
    )
    _room_for_a_line(table)
    return table


def _room_for_a_line(table: RecordTableView) -> None:
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 10)


class MemoryPane(Pane):
    name = "memory"
    title = "Memory controls"
    watches = frozenset({ChangeKind.PAUSE, ChangeKind.TOMBSTONES, ChangeKind.FORGETS, ChangeKind.PLACES})

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        # -- the switches --
        self.switches = SwitchesModel(self)
        # One switch a cell: cells are chosen, not rows.
        self.switch_view = SwitchTable(
            "",
            self.switches,
            behavior=QAbstractItemView.SelectionBehavior.SelectItems,
            alternating=False,
            columns=QHeaderView.ResizeMode.ResizeToContents,
            stretch=PLACE,
            min_column=90,
        )
        _room_for_a_line(self.switch_view)
        self.switch_view.setToolTip("Space, Enter or a click flips the switch under the cursor; L and R flip a row's")
        header = self.switch_view.horizontalHeader()
        for column in (LEARNING, RECALL):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Fixed)
            self.switch_view.setColumnWidth(column, 230)
        self.switch_view.clicked.connect(self._on_switch_view_clicked)
        self.switch_view.toggle_requested.connect(self._on_switch_view_toggle_requested)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.hint.setTextFormat(Qt.TextFormat.PlainText)
        self.hint.setStyleSheet(SWITCH_HINT_STYLE)
        self.hint.setVisible(False)
        switches = QWidget()
        top = QVBoxLayout(switches)
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(section_label("Pause switches"))
        top.addWidget(small_label(SWITCHES_HELP))
        top.addWidget(self.switch_view, 1)
        self.no_places = small_label(NO_PLACES)
        self.no_places.setVisible(False)
        top.addWidget(self.no_places)
        top.addWidget(self.hint)

        # -- tombstones --
        self.tombstones = TombstonesModel(self)
        self.tombstone_view = _table(NO_TOMBSTONES, self.tombstones)
        self.lift_button = QPushButton("&Lift")
        self.lift_button.setToolTip("Let the familiar learn the selected fact again (Del). Ctrl+Z undoes it.")
        self.lift_button.clicked.connect(self.lift_selected)
        tombstones = _tab(self.tombstone_view, small_label(TOMBSTONES_HELP), self.lift_button)

        # -- receipts --
        self.receipts = ReceiptsModel(describe, self)
        self.receipt_view = _table(NO_RECEIPTS, self.receipts)
        self.receipt_detail = small_label("")
        self.receipt_detail.setTextFormat(Qt.TextFormat.PlainText)
        self.receipt_view.selectionModel().currentRowChanged.connect(self._on_receipt_view_current_row_changed)
        receipts = _tab(self.receipt_view, self.receipt_detail, None)

        # -- forgets in their undo window --
        self.waiting = WaitingForgetsModel(self)
        self.waiting_view = _table(NOTHING_WAITING, self.waiting)
        self.keep_button = QPushButton("&Keep it")
        self.keep_button.setToolTip("Call off the selected forget: the fact stays (Del). Ctrl+Z forgets it again.")
        self.keep_button.clicked.connect(self.keep_selected)
        waiting = _tab(self.waiting_view, None, self.keep_button)
        self._countdown = QTimer(self)
        self._countdown.setInterval(COUNTDOWN_MS)
        self._countdown.timeout.connect(self.waiting.tick)

        for view in (self.tombstone_view, self.waiting_view):
            view.selectionModel().currentRowChanged.connect(self._on_table_current_row_changed)
        self.tabs = QTabWidget()
        self.tabs.addTab(tombstones, "Tombstones")
        self.tabs.addTab(receipts, "Receipts")
        self.tabs.addTab(waiting, "Being forgotten")
        for view, slot in ((self.tombstone_view, self.lift_selected), (self.waiting_view, self.keep_selected)):
            shortcut = QShortcut(QKeySequence(Qt.Key.Key_Delete), view, context=Qt.ShortcutContext.WidgetShortcut)
            shortcut.activated.connect(slot)

        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(switches)
        splitter.addWidget(self.tabs)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        self.set_body(splitter)
        QWidget.setTabOrder(self.switch_view, self.tabs)
        self._sync_buttons()

    # -- loading ---------------------------------------------------------------------------------------
    async def load(self) -> bool:
        memory = self.facade.memory
        view = await self.facade.controls.state()
        stones = sorted(await memory.tombstones(), key=lambda t: (t.created_at, t.id), reverse=True)
        receipts = await memory.receipts()
        waiting = [WaitingForget(s, await self._quoted_fact(s.fact_id)) for s in await memory.scheduled_forgets()]
        self.show_switches(view)
        _keep_current(self.tombstone_view, self.tombstones, stones)
        _keep_current(self.receipt_view, self.receipts, receipts)
        _keep_current(self.waiting_view, self.waiting, waiting)
        self.tabs.setTabText(0, f"Tombstones ({len(stones)})")
        self.tabs.setTabText(1, f"Receipts ({len(receipts)})")
        self.tabs.setTabText(2, f"Being forgotten ({len(waiting)})")
        self._show_receipt_detail()
        if waiting:
            self._countdown.start()
        else:
            self._countdown.stop()
        self._sync_buttons()
        return True  # the switches always have something to show (at least "Everywhere")

    async def _quoted_fact(self, fact_id: int) -> str:
        try:
            return quoted((await self.facade.memory.fact(fact_id)).fact.content)
        except FamiliarError:
            return ""

    def show_switches(self, view: PauseView) -> None:
        """Show these switches, keeping the cursor on the same place and column."""
        if isValid(self.switch_view):
            _keep_current(self.switch_view, self.switches, switch_rows(view), LEARNING)
            self.no_places.setVisible(not view.places)

    def _sync_buttons(self) -> None:
        self.lift_button.setEnabled(self.tombstone_view.currentIndex().isValid())
        self.keep_button.setEnabled(self.waiting_view.currentIndex().isValid())

    # -- the switches ----------------------------------------------------------------------------------
    def _on_switch_view_clicked(self, index: QModelIndex) -> None:
        if index.column() in KIND_OF_COLUMN:
            self.flip(index.row(), KIND_OF_COLUMN[index.column()])

    def _on_switch_view_toggle_requested(self, column: int) -> None:
        row = self.switch_view.currentIndex().row()
        if row < 0:
            return
        if column not in KIND_OF_COLUMN:
            self._say("Choose the Learning or the Recall switch (→), or press L or R.")
            return
        self.switch_view.setCurrentIndex(self.switches.index(row, column))
        self.flip(row, KIND_OF_COLUMN[column])

    def flip(self, row: int, kind: PauseKind) -> None:
        """Flip the `kind` switch of the place on `row`; a switch paused from above sends the cursor to
        the switch that rules it (at once, so a key pressed next acts there)."""
        record = self.switches.record(row)
        switch = record.switch(kind)
        column = LEARNING if kind == "learning" else RECALL
        if switch.paused and switch.source in ("server", "everywhere"):
            ruler_key = record.key.split("/", 1)[0] if switch.source == "server" else EVERYWHERE
            ruler = self.switches.row_of(ruler_key)
            if ruler is not None:
                self.switch_view.setCurrentIndex(self.switches.index(ruler, column))
            whose = "its server's switch" if switch.source == "server" else "the everywhere switch"
            self._say(
                f"{kind.capitalize()} in {record.full_name} is paused by {whose}: the cursor is on it now"
                " (Space resumes it)."
            )
            return
        self._say("")
        self._perform(
            SwitchStep(
                self.facade.controls,
                kind,
                record.key,
                record.full_name,
                pause=not switch.paused,
                initiator=self,
                settled=self.show_switches,
            )
        )

    @async_slot()
    async def _perform(self, step: SwitchStep) -> None:
        what = f"change the {step.kind} switch {'everywhere' if step.where == EVERYWHERE else 'of ' + step.place_name}"
        await self.ops.run(what, lambda: self.context.undo.perform(step))

    def _say(self, text: str) -> None:
        self.hint.setText(text)
        self.hint.setVisible(bool(text))

    # -- tombstones, receipts, forgets in their undo window -------------------------------------------
    @async_slot()
    async def lift_selected(self) -> None:
        index = self.tombstone_view.currentIndex()
        if not index.isValid():
            return
        # initiator None: the change (and its undo's) reloads this pane like every other
        step = LiftStep(self.facade.memory, self.tombstones.record(index.row()))
        await self.ops.run("lift the tombstone", lambda: self.context.undo.perform(step), busy=[self.lift_button])

    @async_slot()
    async def keep_selected(self) -> None:
        index = self.waiting_view.currentIndex()
        if not index.isValid():
            return
        waiting = self.waiting.record(index.row())
        step = KeepStep(self.facade.memory, waiting.schedule, waiting.text)
        await self.ops.run("keep the fact", lambda: self.context.undo.perform(step), busy=[self.keep_button])

    def _on_table_current_row_changed(
        self, _current: QModelIndex | QPersistentModelIndex, _previous: QModelIndex | QPersistentModelIndex
    ) -> None:
        self._sync_buttons()

    def _on_receipt_view_current_row_changed(
        self, _current: QModelIndex | QPersistentModelIndex, _previous: QModelIndex | QPersistentModelIndex
    ) -> None:
        self._show_receipt_detail()

    def _show_receipt_detail(self) -> None:
        index = self.receipt_view.currentIndex()
        if not index.isValid():
            self.receipt_detail.setText("Select a receipt to see everywhere its forget erased.")
            return
        receipt = self.receipts.record(index.row())
        erased = "\n".join(f"  {line}" for line in describe(receipt).split("; "))
        about = ", ".join(p.name for p in receipt.subjects) or "no one in particular"
        self.receipt_detail.setText(
            f"Receipt #{receipt.id}: a fact about {about} in {receipt.scope.name}, forgotten"
            f" {short_time(receipt.created_at)}. Erased:\n{erased}"
        )


def _tab(view: QWidget, below: QWidget | None, button: QPushButton | None) -> QWidget:
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.setContentsMargins(6, 6, 6, 6)
    layout.addWidget(view, 1)
    row = QHBoxLayout()
    if below is not None:
        row.addWidget(below, 1)
    else:
        row.addStretch(1)
    if button is not None:
        row.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)
    layout.addLayout(row)
    return page


def _keep_current(
    view: PlaceholderTableView, model: RecordTableModel[T], records: Sequence[T], first_column: int = 0
) -> None:
    """Replace the rows, keeping the cursor on the same record (by key) and column, else the same row."""
    index = view.currentIndex()
    before = (model.key_of(index.row()), index.row(), index.column()) if index.isValid() else None
    model.set_records(records)
    if not model.rowCount():
        return
    if before is None:  # the cursor starts on the first row, so keys work at once
        view.setCurrentIndex(model.index(0, first_column))
        return
    key, row, column = before
    found = model.row_of(key)
    target = found if found is not None else min(row, model.rowCount() - 1)
    view.setCurrentIndex(model.index(target, column))
