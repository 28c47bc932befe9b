"""Chat: a local console to the familiar. Nothing typed here goes to Discord."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QListView, QPushButton, QVBoxLayout, QWidget

from app.runtime.errors import FamiliarError
from app.runtime.facade import ChatLine, FamiliarFacade
from app.ui.async_slot import async_slot
from app.ui.error_text import one_line
from app.ui.models.chat_model import ChatNotice, ChatTranscriptModel
from app.ui.theme import small_label, title_label

_log = logging.getLogger(__name__)

HISTORY_LIMIT = 50
USER_AUTHOR = "You"
UNSENT_TURN_ID = 0  # the user's line is shown before the runtime has stored it


class ChatPane(QWidget):
    def __init__(self, facade: FamiliarFacade, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._facade = facade
        self._history_requested = False
        self._waiting = False
        name = facade.familiar_name

        self.transcript_model = ChatTranscriptModel(self)
        self.transcript_view = QListView()
        self.transcript_view.setModel(self.transcript_model)
        self.transcript_view.setWordWrap(True)
        self.transcript_view.setUniformItemSizes(False)
        self.transcript_view.setSpacing(3)
        self.transcript_view.setSelectionMode(QListView.SelectionMode.NoSelection)
        self.transcript_view.setEditTriggers(QListView.EditTrigger.NoEditTriggers)
        self.transcript_view.setResizeMode(QListView.ResizeMode.Adjust)
        self.transcript_model.rowsInserted.connect(self.transcript_view.scrollToBottom)
        self.transcript_model.modelReset.connect(self.transcript_view.scrollToBottom)

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
        input_row.setSpacing(8)
        input_row.addWidget(self.input, 1)
        input_row.addWidget(self.send_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        layout.setSpacing(10)
        layout.addWidget(title_label("Chat"))
        layout.addWidget(small_label(f"Talk to {name} here. Nothing you type in this pane is sent to Discord."))
        layout.addWidget(self.transcript_view, 1)
        layout.addWidget(self.waiting_label)
        layout.addLayout(input_row)

    @property
    def is_waiting(self) -> bool:
        return self._waiting

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._history_requested:
            self._history_requested = True
            self._load_history()

    def _set_waiting(self, waiting: bool, *, thinking: bool = True) -> None:
        self._waiting = waiting
        self.input.setEnabled(not waiting)
        self.send_button.setEnabled(not waiting)
        self.waiting_label.setVisible(waiting and thinking)
        if not waiting:
            self.input.setFocus()

    @async_slot()
    async def _load_history(self) -> None:
        self._set_waiting(True, thinking=False)
        try:
            history = await self._facade.load_local_history(HISTORY_LIMIT)
        except FamiliarError as error:
            self.transcript_model.append(ChatNotice(f"Could not load earlier messages: {one_line(error)}"))
        except Exception as error:  # noqa: BLE001 (a bug must not take the window down; logged with its traceback)
            _log.exception("loading the local chat history failed unexpectedly")
            self.transcript_model.append(ChatNotice(f"Could not load earlier messages: {one_line(error)}"))
        else:
            self.transcript_model.prepend(history)
        finally:
            self._set_waiting(False)

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
            reply = await self._facade.chat_local(text)
        except FamiliarError as error:
            self.transcript_model.append(ChatNotice(one_line(error)))
        except Exception as error:  # noqa: BLE001 (a bug must not take the window down; logged with its traceback)
            _log.exception("local chat failed unexpectedly")
            self.transcript_model.append(ChatNotice(f"No reply: {one_line(error)}"))
        else:
            self.transcript_model.append(reply)
        finally:
            self._set_waiting(False)
