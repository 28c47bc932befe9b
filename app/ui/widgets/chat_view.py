"""The chat transcript drawn as messages: each with who said it and when, its Markdown as Discord renders it
(app/ui/discord_markdown.py) and its actions (Copy; Why did it say that; Regenerate the last reply; Retry
what failed; the greeting's previous / next).

A view over a ChatTranscriptModel: one MessageWidget per row, made, changed and dropped as the model's rows
are. Which actions a row offers is asked of `actions_for(row, entry)` (the pane knows what can be done now)
after every change of the model and on `refresh_actions()`. Messages sit at the bottom, as in Discord, and
the view follows new ones while it is scrolled to the bottom.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from PySide6.QtCore import QEvent, QModelIndex, QPersistentModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.facade import ChatLine
from app.ui.discord_markdown import SPOILER_LINK, MarkdownColours, render
from app.ui.models.chat_model import (
    ChatGreeting,
    ChatNotice,
    ChatTranscriptModel,
    TranscriptEntry,
    entry_text,
    entry_time,
)
from app.ui.theme import SMALL_SCALE, SPACE_S, SPACE_SM, SPACE_XS, Palette, colours, scaled_font
from app.ui.time_text import when

COPIED_MS = 1_500  # how long a Copy button says "Copied"


class ChatAction(enum.StrEnum):
    COPY = "copy"
    WHY = "why"
    REGENERATE = "regenerate"
    RETRY = "retry"
    PREVIOUS = "previous"  # the greeting before this one
    NEXT = "next"


ActionsFor = Callable[[int, TranscriptEntry], frozenset[ChatAction]]

# Each action's button: its text and what it does, in words.
BUTTONS: dict[ChatAction, tuple[str, str]] = {
    ChatAction.PREVIOUS: ("‹", "The previous greeting (← while the message box is empty)"),
    ChatAction.NEXT: ("›", "The next greeting (→ while the message box is empty)"),
    ChatAction.COPY: ("Copy", "Copy this message's text, as written"),
    ChatAction.WHY: ("Why?", "What went into this reply: its layers, lore and recalled facts (Ctrl+I)"),
    ChatAction.REGENERATE: ("Regenerate", "Answer your last message again: the new reply replaces this one (Ctrl+R)"),
    ChatAction.RETRY: ("Retry", "Try again to get a reply to your message"),
}


def markdown_colours(p: Palette) -> MarkdownColours:
    return MarkdownColours(
        code_background=p.code_background, spoiler=p.spoiler, spoiler_revealed=p.spoiler_revealed, quote_bar=p.quote_bar
    )


def transcript_style(p: Palette) -> str:
    """The messages' backgrounds (one sheet on the view's canvas: the theme re-colours it)."""
    return (
        f"QWidget#chatCanvas {{ background-color: {p.base}; }}"
        f" QFrame#familiarMessage {{ background-color: {p.familiar_line_background}; border-radius: 6px; }}"
        f" QFrame#ownerMessage, QFrame#noticeMessage {{ background-color: transparent; }}"
        f" QLabel#noticeText, QLabel#noticeMark {{ color: {p.error}; }}"
        f" QLabel#messageTime, QLabel#greetingPosition {{ color: {p.muted}; }}"
        f" QToolButton#messageAction {{ color: {p.muted}; border: none; padding: 0 4px; }}"
        f" QToolButton#messageAction:hover {{ color: {p.link}; }}"
        f" QToolButton#greetingStep {{ color: {p.text}; border: none; padding: 0 6px; font-weight: bold; }}"
        f" QToolButton#greetingStep:hover {{ color: {p.link}; }}"
    )


class MessageWidget(QFrame):
    """One transcript entry. Emits `action_requested(ChatAction)` when one of its buttons is pressed."""

    action_requested = Signal(str)

    def __init__(self, entry: TranscriptEntry, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)  # the chat's menu (the view passes it on)
        self._entry = entry
        self._revealed: set[int] = set()
        self._actions: frozenset[ChatAction] = frozenset()

        self.author = QLabel()
        self.author.setFont(scaled_font(self.author.font(), 1.0, bold=True))
        self.author.setTextFormat(Qt.TextFormat.PlainText)
        self.time = QLabel()
        self.time.setObjectName("messageTime")
        self.time.setFont(scaled_font(self.time.font(), SMALL_SCALE))
        self.position = QLabel()  # the greeting's "2 / 3"
        self.position.setObjectName("greetingPosition")
        self.position.setFont(self.time.font())
        self.buttons: dict[ChatAction, QToolButton] = {}
        for action, (text, tip) in BUTTONS.items():
            button = QToolButton()
            step = action in (ChatAction.PREVIOUS, ChatAction.NEXT)
            button.setObjectName("greetingStep" if step else "messageAction")
            button.setText(text)
            button.setToolTip(tip)
            button.setAutoRaise(True)
            button.setFont(self.author.font() if step else self.time.font())
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.setVisible(False)
            button.clicked.connect(lambda _checked=False, chosen=action: self._on_button_clicked(chosen))
            self.buttons[action] = button
        self.body = QLabel()
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.RichText)  # made by discord_markdown.render: the text is escaped
        self.body.setOpenExternalLinks(False)
        self.body.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByKeyboard
        )
        self.body.linkActivated.connect(self._on_body_link_activated)
        self.body.setContextMenuPolicy(Qt.ContextMenuPolicy.NoContextMenu)  # the message's menu, not the label's

        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.setSpacing(SPACE_SM)
        header.addWidget(self.author)
        header.addWidget(self.time)
        header.addWidget(self.buttons[ChatAction.PREVIOUS])
        header.addWidget(self.position)
        header.addWidget(self.buttons[ChatAction.NEXT])
        header.addStretch(1)
        for action in (ChatAction.COPY, ChatAction.WHY, ChatAction.REGENERATE, ChatAction.RETRY):
            header.addWidget(self.buttons[action])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SPACE_SM + 2, SPACE_S, SPACE_SM + 2, SPACE_SM)
        layout.setSpacing(SPACE_XS)
        layout.addLayout(header)
        layout.addWidget(self.body)
        self._show()

    @property
    def entry(self) -> TranscriptEntry:
        return self._entry

    def set_entry(self, entry: TranscriptEntry) -> None:
        if entry != self._entry:
            if entry_text(entry) != entry_text(self._entry):
                self._revealed.clear()  # other words in this row (a regenerated reply, another greeting)
            self._entry = entry
            self._show()

    def set_actions(self, actions: frozenset[ChatAction]) -> None:
        if actions == self._actions:
            return
        self._actions = actions
        for action, button in self.buttons.items():
            button.setVisible(action in actions)

    def reveal(self, number: int) -> None:
        """Show the spoiler `number` (what a click on it does)."""
        self._revealed.add(number)
        self._render_body()

    def _show(self) -> None:
        entry = self._entry
        if isinstance(entry, ChatNotice):
            self.setObjectName("noticeMessage")
            self.author.setObjectName("noticeMark")
            self.author.setText("⚠")
            self.body.setObjectName("noticeText")
        else:
            familiar = isinstance(entry, ChatGreeting) or entry.from_familiar
            self.setObjectName("familiarMessage" if familiar else "ownerMessage")
            self.author.setObjectName("")
            self.author.setText(entry.author)
            self.body.setObjectName("")
        moment = entry_time(entry)
        self.time.setText(when(moment) + (" · greeting" if _is_greeting(entry) else ""))
        self.time.setToolTip(f"{moment.astimezone():%A %d %B %Y, %H:%M:%S}")
        if isinstance(entry, ChatGreeting):
            self.position.setText(f"{entry.index + 1} / {len(entry.choices)}")
            self.position.setToolTip("Greetings to open the chat with: pick one before your first message")
        self.position.setVisible(isinstance(entry, ChatGreeting) and len(entry.choices) > 1)
        self.style().unpolish(self)  # its object name chose its style
        self.style().polish(self)
        for label in (self.author, self.body):
            label.style().unpolish(label)
            label.style().polish(label)
        self._render_body()

    def _render_body(self) -> None:
        entry = self._entry
        if isinstance(entry, ChatNotice):
            self.body.setTextFormat(Qt.TextFormat.PlainText)
            self.body.setText(entry.message)
            return
        self.body.setTextFormat(Qt.TextFormat.RichText)
        self.body.setText(render(entry.content, markdown_colours(colours()), revealed=self._revealed))

    def _on_body_link_activated(self, link: str) -> None:
        if link.startswith(SPOILER_LINK) and link[len(SPOILER_LINK) :].isdigit():
            self.reveal(int(link[len(SPOILER_LINK) :]))

    def _on_button_clicked(self, action: ChatAction) -> None:
        if action is ChatAction.COPY:
            button = self.buttons[action]
            button.setText("Copied")
            QTimer.singleShot(COPIED_MS, button, lambda: button.setText(BUTTONS[ChatAction.COPY][0]))
        self.action_requested.emit(action.value)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._render_body()  # the Markdown's colours are the theme's


def _is_greeting(entry: TranscriptEntry) -> bool:
    return isinstance(entry, ChatGreeting) or (isinstance(entry, ChatLine) and entry.greeting)


class ChatView(QScrollArea):
    """Emits `action_requested(action, row)` when a message's button is pressed, and
    `context_menu_requested(row, global position)` for a right click (or the menu key) on a message."""

    action_requested = Signal(str, int)
    context_menu_requested = Signal(int, QPoint)

    def __init__(
        self,
        model: ChatTranscriptModel,
        actions_for: ActionsFor,
        *,
        empty_text: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._model = model
        self._actions_for = actions_for
        self._messages: list[MessageWidget] = []
        self._follow = True  # scrolled to the bottom: new messages scroll into view
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.canvas = QWidget()
        self.canvas.setObjectName("chatCanvas")
        self.canvas.setStyleSheet(transcript_style(colours()))
        self._layout = QVBoxLayout(self.canvas)
        self._layout.setContentsMargins(SPACE_SM, SPACE_SM, SPACE_SM, SPACE_SM)
        self._layout.setSpacing(SPACE_S)
        self._layout.addStretch(1)  # above the messages: they sit at the bottom
        self.empty_label = QLabel(empty_text)
        self.empty_label.setTextFormat(Qt.TextFormat.PlainText)
        self.empty_label.setObjectName("messageTime")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self._layout.addWidget(self.empty_label)
        self.setWidget(self.canvas)
        self.verticalScrollBar().rangeChanged.connect(self._on_scroll_range_changed)
        self.verticalScrollBar().valueChanged.connect(self._on_scroll_value_changed)
        model.modelReset.connect(self._on_model_reset)
        model.rowsInserted.connect(self._on_model_rows_inserted)
        model.rowsRemoved.connect(self._on_model_rows_removed)
        model.dataChanged.connect(self._on_model_data_changed)
        self._on_model_reset()

    # -- what it shows -----------------------------------------------------------------------------
    @property
    def messages(self) -> tuple[MessageWidget, ...]:
        return tuple(self._messages)

    def message(self, row: int) -> MessageWidget:
        return self._messages[row]

    def set_empty_text(self, text: str) -> None:
        self.empty_label.setText(text)

    def refresh_actions(self) -> None:
        """Ask again which actions each message offers (the pane's state changed)."""
        for row, widget in enumerate(self._messages):
            widget.set_actions(self._actions_for(row, widget.entry))
        self.empty_label.setVisible(not self._messages and bool(self.empty_label.text()))

    def focused_row(self) -> int | None:
        """The row of the message that has the keyboard focus (its text or a button), if one has."""
        focused = QApplication.focusWidget()
        while focused is not None and not isinstance(focused, MessageWidget):
            focused = focused.parentWidget()
        return self._messages.index(focused) if focused in self._messages else None

    def scroll_to_bottom(self) -> None:
        self._follow = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    # -- following the model -----------------------------------------------------------------------------
    def _make(self, row: int) -> MessageWidget:
        widget = MessageWidget(self._model.record(row), self.canvas)
        widget.action_requested.connect(lambda action, w=widget: self._on_message_action(w, action))
        widget.customContextMenuRequested.connect(lambda at, w=widget: self._on_message_context_menu(w, at))
        return widget

    def _on_message_context_menu(self, widget: MessageWidget, at: QPoint) -> None:
        if widget in self._messages:
            self.context_menu_requested.emit(self._messages.index(widget), widget.mapToGlobal(at))

    def _on_message_action(self, widget: MessageWidget, action: str) -> None:
        if widget in self._messages:
            self.action_requested.emit(action, self._messages.index(widget))

    def _on_model_reset(self) -> None:
        for widget in self._messages:
            self._layout.removeWidget(widget)
            widget.deleteLater()
        self._messages = []
        for row in range(self._model.rowCount()):
            widget = self._make(row)
            self._messages.append(widget)
            self._layout.addWidget(widget)
        self.refresh_actions()
        self.scroll_to_bottom()

    def _on_model_rows_inserted(self, _parent: QModelIndex | QPersistentModelIndex, first: int, last: int) -> None:
        for row in range(first, last + 1):
            widget = self._make(row)
            self._messages.insert(row, widget)
            self._layout.insertWidget(row + 2, widget)  # after the stretch and the empty text
        if last == self._model.rowCount() - 1:
            self._follow = True  # a new message at the bottom: show it
        self.refresh_actions()

    def _on_model_rows_removed(self, _parent: QModelIndex | QPersistentModelIndex, first: int, last: int) -> None:
        for widget in self._messages[first : last + 1]:
            self._layout.removeWidget(widget)
            widget.deleteLater()
        del self._messages[first : last + 1]
        self.refresh_actions()

    def _on_model_data_changed(
        self, top_left: QModelIndex, bottom_right: QModelIndex, _roles: list[int] | None = None
    ) -> None:
        for row in range(top_left.row(), bottom_right.row() + 1):
            self._messages[row].set_entry(self._model.record(row))
        self.refresh_actions()

    def _on_scroll_range_changed(self, _low: int, high: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(high)

    def _on_scroll_value_changed(self, value: int) -> None:
        self._follow = value >= self.verticalScrollBar().maximum() - 4

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.canvas.setStyleSheet(transcript_style(colours()))
