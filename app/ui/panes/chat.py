"""Chat: a local console to the familiar. Nothing typed here goes to Discord."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.runtime.facade import ChatLine
from app.ui.async_slot import async_slot
from app.ui.models.chat_model import ChatNotice, ChatTranscriptModel
from app.ui.models.roles import RecordRole
from app.ui.ops import Succeeded
from app.ui.panes.base import Pane, PaneContext
from app.ui.theme import SPACE_M, SPACE_SM, SPACE_XS, small_label

_log = logging.getLogger(__name__)

HISTORY_LIMIT = 50
USER_AUTHOR = "You"
UNSENT_TURN_ID = 0  # the user's line is shown before the runtime has stored it
WHY = "Why did it say that?"
WHY_SHORTCUT = "Ctrl+I"


class ChatPane(Pane):
    name = "chat"
    title = "Chat"

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self._waiting = False
        self._had_focus = False
        name = self.facade.familiar_name

        self.transcript_model = ChatTranscriptModel(self)
        self.transcript_view = QListView()
        self.transcript_view.setModel(self.transcript_model)
        self.transcript_view.setWordWrap(True)
        self.transcript_view.setUniformItemSizes(False)
        self.transcript_view.setSpacing(SPACE_XS)
        self.transcript_view.setSelectionMode(QListView.SelectionMode.NoSelection)
        self.transcript_view.setEditTriggers(QListView.EditTrigger.NoEditTriggers)
        self.transcript_view.setResizeMode(QListView.ResizeMode.Adjust)
        self.transcript_model.rowsInserted.connect(self.transcript_view.scrollToBottom)
        self.transcript_model.modelReset.connect(self.transcript_view.scrollToBottom)
        # A reply's context menu opens what went into it in the "Why did it say that" pane.
        self.transcript_view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.transcript_view.customContextMenuRequested.connect(self._on_transcript_context_menu)
        self.why_action = QAction(WHY, self)
        self.why_action.setShortcut(QKeySequence(WHY_SHORTCUT))
        self.why_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.why_action.setToolTip(f"What went into the current reply, or the last one ({WHY_SHORTCUT})")
        self.why_action.triggered.connect(self._on_why_triggered)
        self.addAction(self.why_action)

        self.input = QLineEdit()
        self.input.setPlaceholderText(f"Message {name}…")
        self.input.setClearButtonEnabled(True)
        self.send_button = QPushButton("Send")
        self.send_button.setDefault(True)
        self.input.returnPressed.connect(self._on_send_triggered)
        self.send_button.clicked.connect(self._on_send_triggered)
        self.waiting_label = QLabel(f"{name} is thinking…")
        self.waiting_label.setVisible(False)
        input_row = QHBoxLayout()
        input_row.setSpacing(SPACE_SM)
        input_row.addWidget(self.input, 1)
        input_row.addWidget(self.send_button)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(SPACE_M)
        layout.addWidget(small_label(f"Talk to {name} here. Nothing you type in this pane is sent to Discord."))
        layout.addWidget(self.transcript_view, 1)
        layout.addWidget(self.waiting_label)
        layout.addLayout(input_row)
        self.set_body(body)

    def reply_menu(self, row: int) -> QMenu | None:
        """The context menu of the transcript's line `row`: "Why did it say that?" on the familiar's replies."""
        turn_id = self._reply_turn(row)
        if turn_id is None:
            return None
        menu = QMenu(self)
        why = QAction(f"{WHY}\t{WHY_SHORTCUT}", menu)
        why.setToolTip("What went into this reply: its layers, lore and recalled facts")
        why.triggered.connect(lambda: self.navigate_requested.emit("explain", turn_id))
        menu.addAction(why)
        return menu

    def _reply_turn(self, row: int) -> int | None:
        entry = self.transcript_model.index(row, 0).data(RecordRole) if row >= 0 else None
        if isinstance(entry, ChatLine) and entry.from_familiar and entry.turn_id != UNSENT_TURN_ID:
            return entry.turn_id
        return None

    def _on_why_triggered(self) -> None:
        """The current line's reply (arrows move it), else the last reply in the transcript."""
        turn_id = self._reply_turn(self.transcript_view.currentIndex().row())
        rows = range(self.transcript_model.rowCount() - 1, -1, -1)
        turn_id = turn_id or next((t for t in map(self._reply_turn, rows) if t is not None), None)
        if turn_id is not None:
            self.navigate_requested.emit("explain", turn_id)

    def _on_transcript_context_menu(self, position: QPoint) -> None:
        index = self.transcript_view.indexAt(position)
        menu = self.reply_menu(index.row()) if index.isValid() else None
        if menu is not None:
            menu.popup(self.transcript_view.viewport().mapToGlobal(position))

    @property
    def is_waiting(self) -> bool:
        return self._waiting

    def focus_widget(self) -> QWidget:
        return self.input

    def _set_waiting(self, waiting: bool, *, thinking: bool = True) -> None:
        if waiting:  # the field is disabled meanwhile (the focus leaves it): it takes it back after, if it was here
            focused = QApplication.focusWidget()
            self._had_focus = focused is not None and self.isAncestorOf(focused)
        self._waiting = waiting
        self.input.setEnabled(not waiting)
        self.send_button.setEnabled(not waiting)
        self.waiting_label.setVisible(waiting and thinking)
        if not waiting and self._had_focus:
            self.input.setFocus()  # back to the field after an answer, unless the owner is elsewhere

    async def load(self) -> bool:
        """The earlier messages, once (the pane watches no memory change, so it is not reloaded); a
        failure is a line in the transcript, and the chat still works."""
        self._set_waiting(True, thinking=False)
        try:
            outcome = await self.ops.run(
                "load earlier messages",
                lambda: self.facade.load_local_history(HISTORY_LIMIT),
                report=lambda message: self.transcript_model.append(ChatNotice(_history_problem(message))),
            )
        finally:
            self._set_waiting(False)
        if isinstance(outcome, Succeeded):
            self.transcript_model.prepend(outcome.value)
        return True

    @async_slot()
    async def _on_send_triggered(self) -> None:
        text = self.input.text().strip()
        if not text or self._waiting:
            return
        self.input.clear()
        self.transcript_model.append(
            ChatLine(
                turn_id=UNSENT_TURN_ID,
                author=USER_AUTHOR,
                content=text,
                from_familiar=False,
                created_at=datetime.now(UTC),
            )
        )
        self._set_waiting(True)
        try:
            outcome = await self.ops.run(
                "send the message",
                lambda: self.facade.chat_local(text),
                report=lambda message: self.transcript_model.append(ChatNotice(message)),
            )
        finally:
            self._set_waiting(False)
        if isinstance(outcome, Succeeded):
            self.transcript_model.append(outcome.value)


def _history_problem(message: str) -> str:
    prefix = "Could not load earlier messages"
    return message if message.startswith(prefix) else f"{prefix}: {message}"
