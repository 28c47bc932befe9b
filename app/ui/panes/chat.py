"""Chat: a local console to the familiar. Nothing typed here goes to Discord.

Each message shows who said it and when, its Markdown as Discord renders it (spoilers hidden until clicked),
and its actions: Copy; "Why did it say that?" on a reply; Regenerate on the last reply (the new one
replaces it); Retry when a reply failed. An empty chat opens with the familiar's greeting, as a character
card's first message opens a SillyTavern chat: ‹ › (or ← → in the empty message box) pick among the
card's alternate greetings until the first message is sent. "Clear local chat" starts the chat afresh,
after asking: only this chat (Discord history and memory are untouched, the messages stay in the
familiar's history) and Undo brings it back.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from PySide6.QtCore import QEvent, QObject, QPoint, Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.facade import ChatCleared, ChatLine
from app.runtime.errors import ReplyFailedError
from app.runtime.events import SettingsReloaded
from app.ui.async_slot import async_slot
from app.ui.dialogs.modal import ask_buttons
from app.ui.models.chat_model import ChatGreeting, ChatNotice, ChatTranscriptModel, TranscriptEntry, entry_text
from app.ui.ops import Failed, Succeeded
from app.ui.panes.base import Pane, PaneContext
from app.ui.theme import SPACE_M, SPACE_SM, small_label
from app.ui.widgets.chat_view import BUTTONS, ChatAction, ChatView

_log = logging.getLogger(__name__)

HISTORY_LIMIT = 50
USER_AUTHOR = "You"
UNSENT_TURN_ID = 0  # the user's line is shown before the runtime has stored it
WHY = "Why did it say that?"
WHY_SHORTCUT = "Ctrl+I"
REGENERATE = "Regenerate the last reply"
REGENERATE_SHORTCUT = "Ctrl+R"
CLEAR = "Clear local chat…"
CLEAR_TIP = (
    "Start this chat afresh. Clears the local chat only: Discord history and the familiar's memory are"
    " untouched, and Undo brings the messages back"
)


@dataclass(frozen=True, slots=True)
class _Retry:
    """What Retry does: answer the stored message `turn_id`, or send `text` again (it was never stored)."""

    turn_id: int | None = None
    text: str = ""


class ChatPane(Pane):
    name = "chat"
    title = "Chat"

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self._waiting = False
        self._had_focus = False
        self._retry: _Retry | None = None
        self._name = self.facade.display_name

        self.transcript_model = ChatTranscriptModel(self)
        self.chat_view = ChatView(self.transcript_model, self._actions_for)
        self.chat_view.action_requested.connect(self._on_chat_view_action_requested)
        self.chat_view.context_menu_requested.connect(self._on_chat_view_context_menu_requested)
        self.why_action = QAction(WHY, self)
        self.why_action.setShortcut(QKeySequence(WHY_SHORTCUT))
        self.why_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.why_action.setToolTip(f"What went into the current reply, or the last one ({WHY_SHORTCUT})")
        self.why_action.triggered.connect(self._on_why_triggered)
        self.addAction(self.why_action)
        self.regenerate_action = QAction(REGENERATE, self)
        self.regenerate_action.setShortcut(QKeySequence(REGENERATE_SHORTCUT))
        self.regenerate_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.regenerate_action.triggered.connect(self._on_regenerate_triggered)
        self.addAction(self.regenerate_action)

        self.intro = small_label("")
        self.intro.setTextFormat(Qt.TextFormat.PlainText)  # the name is a card's: never markup
        self.clear_button = QPushButton(CLEAR)
        self.clear_button.setToolTip(CLEAR_TIP)
        self.clear_button.clicked.connect(self._on_clear_clicked)
        top_row = QHBoxLayout()
        top_row.setSpacing(SPACE_SM)
        top_row.addWidget(self.intro, 1)
        top_row.addWidget(self.clear_button, 0, Qt.AlignmentFlag.AlignBottom)

        self.input = QLineEdit()
        self.input.setClearButtonEnabled(True)
        self.input.installEventFilter(self)
        self.send_button = QPushButton("Send")
        self.send_button.setDefault(True)
        self.input.returnPressed.connect(self._on_send_triggered)
        self.send_button.clicked.connect(self._on_send_triggered)
        self.waiting_label = QLabel()
        self.waiting_label.setTextFormat(Qt.TextFormat.PlainText)
        self.waiting_label.setVisible(False)
        input_row = QHBoxLayout()
        input_row.setSpacing(SPACE_SM)
        input_row.addWidget(self.input, 1)
        input_row.addWidget(self.send_button)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(SPACE_M)
        layout.addLayout(top_row)
        layout.addWidget(self.chat_view, 1)
        layout.addWidget(self.waiting_label)
        layout.addLayout(input_row)
        self.set_body(body)
        self._show_name(self._name)
        self.transcript_model.modelReset.connect(self._sync_buttons)
        self.transcript_model.rowsInserted.connect(self._sync_buttons)
        self.transcript_model.rowsRemoved.connect(self._sync_buttons)
        self.transcript_model.dataChanged.connect(self._sync_buttons)
        self._sync_buttons()
        context.bridge.settings_reloaded.connect(self._on_bridge_settings_reloaded)

    # -- the name it goes by -----------------------------------------------------------------------------
    def _show_name(self, name: str) -> None:
        self._name = name
        self.intro.setText(f"Talk to {name} here. Nothing you type in this pane is sent to Discord.")
        self.input.setPlaceholderText(f"Message {name}…")
        self.waiting_label.setText(f"{name} is thinking…")
        self.chat_view.set_empty_text(f"No messages yet. Say hello to {name}.")
        self.chat_view.refresh_actions()

    @async_slot(object)
    async def _on_bridge_settings_reloaded(self, event: SettingsReloaded) -> None:
        self._show_name(event.display_name)
        if self.is_loaded and not self._has_lines():
            await self._offer_greeting()  # its greetings (and their names) may have changed too

    # -- what each message offers ------------------------------------------------------------------------
    def _actions_for(self, row: int, entry: TranscriptEntry) -> frozenset[ChatAction]:
        actions = {ChatAction.COPY}
        last = row == self.transcript_model.rowCount() - 1
        if isinstance(entry, ChatGreeting):
            if len(entry.choices) > 1 and not self._waiting:
                actions |= {ChatAction.PREVIOUS, ChatAction.NEXT}
        elif isinstance(entry, ChatNotice):
            if last and entry.retry and self._retry is not None and not self._waiting:
                actions.add(ChatAction.RETRY)
        elif _is_reply(entry):
            actions.add(ChatAction.WHY)
            if last and not self._waiting:
                actions.add(ChatAction.REGENERATE)
        return frozenset(actions)

    def message_menu(self, row: int) -> QMenu | None:
        """The context menu of the transcript's message `row`: its actions (Copy; Why did it say that? on a
        reply; Regenerate on the last reply; Retry on what failed)."""
        if not 0 <= row < self.transcript_model.rowCount():
            return None
        actions = self._actions_for(row, self.transcript_model.record(row))
        menu = QMenu(self)
        for action in (ChatAction.COPY, ChatAction.WHY, ChatAction.REGENERATE, ChatAction.RETRY):
            if action in actions:
                text = {
                    ChatAction.WHY: f"{WHY}\t{WHY_SHORTCUT}",
                    ChatAction.REGENERATE: f"Regenerate\t{REGENERATE_SHORTCUT}",
                }
                item = QAction(text.get(action, BUTTONS[action][0]), menu)
                item.setToolTip(BUTTONS[action][1])
                item.triggered.connect(lambda _checked=False, chosen=action: self._do(chosen, row))
                menu.addAction(item)
        return menu if menu.actions() else None

    def _on_chat_view_context_menu_requested(self, row: int, position: QPoint) -> None:
        menu = self.message_menu(row)
        if menu is not None:
            menu.popup(position)

    def _on_chat_view_action_requested(self, action: str, row: int) -> None:
        self._do(ChatAction(action), row)

    def _do(self, action: ChatAction, row: int) -> None:
        if not 0 <= row < self.transcript_model.rowCount():
            return
        entry = self.transcript_model.record(row)
        if action is ChatAction.COPY:
            QGuiApplication.clipboard().setText(entry_text(entry))
        elif action is ChatAction.WHY and _is_reply(entry):
            assert isinstance(entry, ChatLine)
            self.navigate_requested.emit("explain", entry.turn_id)
        elif action is ChatAction.REGENERATE:
            self._on_regenerate_triggered()
        elif action is ChatAction.RETRY:
            self._on_retry_triggered()
        elif action in (ChatAction.PREVIOUS, ChatAction.NEXT):
            self.swipe_greeting(1 if action is ChatAction.NEXT else -1)

    def _sync_buttons(self) -> None:
        self.clear_button.setEnabled(not self._waiting and self._has_lines(notices=True))
        self.regenerate_action.setEnabled(not self._waiting)

    def _has_lines(self, *, notices: bool = False) -> bool:
        kinds = (ChatLine, ChatNotice) if notices else (ChatLine,)
        return any(isinstance(entry, kinds) for entry in self.transcript_model.entries)

    # -- the greeting ------------------------------------------------------------------------------------
    @property
    def greeting(self) -> ChatGreeting | None:
        """The greeting the chat opens with while it can still be changed (nothing sent yet)."""
        entries = self.transcript_model.entries
        return entries[0] if entries and isinstance(entries[0], ChatGreeting) else None

    def swipe_greeting(self, step: int) -> bool:
        """Show the next (1) or the previous (-1) greeting; False when there is none to change to."""
        greeting = self.greeting
        if greeting is None or len(greeting.choices) < 2 or self._waiting:
            return False
        self.transcript_model.set_entry(0, greeting.moved(step))
        return True

    async def _offer_greeting(self) -> None:
        """An empty chat opens with the familiar's greeting (its choices as the settings say now)."""
        outcome = await self.ops.run("read the greetings", self.facade.local_greetings)
        if not isinstance(outcome, Succeeded) or self._has_lines():
            return
        shown = self.greeting
        if not outcome.value:
            if shown is not None:
                self.transcript_model.remove_entry(0)
            return
        greeting = ChatGreeting(author=self._name, choices=tuple(outcome.value))
        if shown is not None:  # the settings changed: the same one if it is still there
            index = greeting.choices.index(shown.content) if shown.content in greeting.choices else 0
            self.transcript_model.set_entry(0, ChatGreeting(self._name, greeting.choices, index, shown.at))
        else:
            self.transcript_model.insert_entry(0, greeting)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """← and → in the empty message box pick the greeting, as in SillyTavern."""
        if watched is self.input and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            step = {Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1}.get(Qt.Key(event.key()))
            plain = event.modifiers() in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier)
            if step is not None and plain and not self.input.text() and self.swipe_greeting(step):
                return True
        return super().eventFilter(watched, event)

    # -- why did it say that -------------------------------------------------------------------------------
    def _reply_turn(self, row: int | None) -> int | None:
        if row is None or not 0 <= row < self.transcript_model.rowCount():
            return None
        entry = self.transcript_model.record(row)
        return entry.turn_id if isinstance(entry, ChatLine) and _is_reply(entry) else None

    def _on_why_triggered(self) -> None:
        """The focused message's reply, else the last reply in the transcript."""
        turn_id = self._reply_turn(self.chat_view.focused_row())
        rows = range(self.transcript_model.rowCount() - 1, -1, -1)
        turn_id = turn_id or next((t for t in map(self._reply_turn, rows) if t is not None), None)
        if turn_id is not None:
            self.navigate_requested.emit("explain", turn_id)

    # -- waiting for the familiar ------------------------------------------------------------------------
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
        self._sync_buttons()
        self.chat_view.refresh_actions()
        if not waiting and self._had_focus:
            self.input.setFocus()  # back to the field after an answer, unless the owner is elsewhere

    async def load(self) -> bool:
        """The earlier messages, once (the pane watches no memory change, so it is not reloaded); a
        failure is a line in the transcript, and the chat still works. An empty chat opens with the greeting."""
        self._set_waiting(True, thinking=False)
        try:
            self._show_name(self.facade.display_name)  # as the settings say, once the familiar is open
            outcome = await self.ops.run(
                "load earlier messages",
                lambda: self.facade.load_local_history(HISTORY_LIMIT),
                report=lambda message: self.transcript_model.append(ChatNotice(_history_problem(message))),
            )
            if isinstance(outcome, Succeeded):
                self.transcript_model.prepend(outcome.value)
                if not outcome.value:
                    await self._offer_greeting()
        finally:
            self._set_waiting(False)
        return True

    # -- sending, retrying, regenerating -------------------------------------------------------------------
    @async_slot()
    async def _on_send_triggered(self) -> None:
        text = self.input.text().strip()
        if not text or self._waiting:
            return
        self.input.clear()
        self._retry = None  # Retry is for the last message only
        self.transcript_model.append(
            ChatLine(
                turn_id=UNSENT_TURN_ID,
                author=USER_AUTHOR,
                content=text,
                from_familiar=False,
                created_at=datetime.now(UTC),
            )
        )
        await self._send(text)

    async def _send(self, text: str) -> None:
        greeting = self.greeting
        opening = greeting.content if greeting is not None else None
        await self._exchange(
            "send the message", lambda: self.facade.chat_local(text, greeting=opening), if_failed=_Retry(text=text)
        )

    async def _exchange(self, what: str, call: Callable[[], Awaitable[ChatLine]], *, if_failed: _Retry) -> None:
        """Wait for the reply `call()` gives; put it in the transcript, or the failure and what Retry does."""
        self._set_waiting(True)
        try:
            outcome = await self.ops.run(what, call, report=lambda _message: None)  # said in the transcript
        finally:
            self._set_waiting(False)
        if isinstance(outcome, Succeeded):
            self._greeting_sent(None)
            self.transcript_model.append(outcome.value)
        elif isinstance(outcome, Failed):
            retry = if_failed
            if isinstance(outcome.error, ReplyFailedError):  # the message is stored: Retry answers it
                self._greeting_sent(outcome.error.greeting)
                self._mark_stored(outcome.error.said)
                retry = _Retry(turn_id=outcome.error.said.turn_id)
            self._retry = retry
            self.transcript_model.append(ChatNotice(outcome.message, retry=True))
        self.chat_view.refresh_actions()

    def _greeting_sent(self, stored: ChatLine | None) -> None:
        """The greeting went with the first message: it is the chat's first line now, for good."""
        greeting = self.greeting
        if greeting is not None:
            self.transcript_model.set_entry(0, stored or greeting.line())

    def _mark_stored(self, said: ChatLine) -> None:
        entries = self.transcript_model.entries
        for row in range(len(entries) - 1, -1, -1):
            entry = entries[row]
            if isinstance(entry, ChatLine) and not entry.from_familiar and entry.turn_id == UNSENT_TURN_ID:
                self.transcript_model.set_entry(row, said)
                return

    @async_slot()
    async def _on_retry_triggered(self) -> None:
        retry = self._retry
        if retry is None or self._waiting:
            return
        self._retry = None
        last = self.transcript_model.rowCount() - 1
        if last >= 0 and isinstance(self.transcript_model.record(last), ChatNotice):
            self.transcript_model.remove_entry(last)  # its failure is being tried again
        if retry.turn_id is None:
            await self._send(retry.text)
            return
        turn_id = retry.turn_id
        await self._exchange("get a reply", lambda: self.facade.regenerate_local(turn_id), if_failed=retry)

    @async_slot()
    async def _on_regenerate_triggered(self) -> None:
        row = self.transcript_model.rowCount() - 1
        if (
            row < 0
            or self._waiting
            or ChatAction.REGENERATE not in self._actions_for(row, self.transcript_model.record(row))
        ):
            return
        reply = self.transcript_model.record(row)
        assert isinstance(reply, ChatLine)
        self._set_waiting(True)
        try:
            outcome = await self.ops.run("regenerate the reply", lambda: self.facade.regenerate_local(reply.turn_id))
        finally:
            self._set_waiting(False)
        if isinstance(outcome, Succeeded) and self.transcript_model.rowCount() - 1 == row:
            self.transcript_model.set_entry(row, outcome.value)  # the new reply takes the old one's place
        self.chat_view.refresh_actions()

    # -- clearing ------------------------------------------------------------------------------------------
    async def confirm_clear(self) -> bool:
        """Whether the owner wants the local chat cleared: asked, saying what it clears (Cancel by default)."""
        name = self._name
        answer = await ask_buttons(
            self.context.window,
            QMessageBox.Icon.Question,
            "Clear the local chat?",
            f"Everything said in this chat leaves it, and {name}'s recent conversation here starts afresh"
            + (" (with its greeting)." if self.greeting is not None or self._has_lines() else ".")
            + "\n\nOnly the local chat is cleared: Discord history and what"
            f" {name} remembers (facts, summaries, people) are untouched, and the messages stay in its"
            " history, where search still finds them.\n\nUndo (Ctrl+Z) brings them back.",
            QMessageBox.StandardButton.Ok | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
            labels={QMessageBox.StandardButton.Ok: "Clear local chat"},
        )
        return answer == QMessageBox.StandardButton.Ok

    @async_slot()
    async def _on_clear_clicked(self) -> None:
        if self._waiting or not await self.confirm_clear():
            return
        await self.ops.run("clear the local chat", lambda: self.context.undo.perform(ClearLocalChat(self)))

    async def after_clear(self) -> None:
        """The chat was cleared (or its undo undone): it starts empty, with the greeting."""
        self._retry = None
        self.transcript_model.replace([])
        await self._offer_greeting()

    async def reload(self) -> None:
        """The chat's messages again, from the familiar (a clear was undone); FamiliarError goes to the caller."""
        lines = await self.facade.load_local_history(HISTORY_LIMIT)
        self._retry = None
        self.transcript_model.replace(lines)
        if not lines:
            await self._offer_greeting()


class ClearLocalChat:
    """Clearing the local chat, undoably (app/ui/undo.py `Reversible`)."""

    undo_window: float | None = None

    def __init__(self, pane: ChatPane) -> None:
        self._pane = pane
        self._cleared: ChatCleared | None = None

    @property
    def label(self) -> str:
        count = self._cleared.messages if self._cleared is not None else 0
        return f"Cleared the local chat ({count} message{'s' if count != 1 else ''})"

    async def redo(self) -> None:
        self._cleared = await self._pane.facade.clear_local()
        await self._pane.after_clear()

    async def undo(self) -> None:
        if self._cleared is not None:
            await self._pane.facade.restore_local(self._cleared)
        await self._pane.reload()


def _is_reply(entry: TranscriptEntry) -> bool:
    return (
        isinstance(entry, ChatLine) and entry.from_familiar and not entry.greeting and entry.turn_id != UNSENT_TURN_ID
    )


def _history_problem(message: str) -> str:
    prefix = "Could not load earlier messages"
    return message if message.startswith(prefix) else f"{prefix}: {message}"
