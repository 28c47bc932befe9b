"""Notices: small dark boxes stacked at the bottom right of the window (moved aside, to the left or above,
when the owner types in a field there), each with an optional action button ("Undo") and a close button,
each going away by itself after its duration. A notice can be told
again (`NoticeArea.retell`): new words and a new duration in the same box, so a run of actions shows one
notice, not a stack that shifts at every key; its action button can be hidden meanwhile (and shown again).

`NoticeArea` overlays its parent (the window's central widget) and follows its size; it lets clicks
through everywhere but on the notices themselves.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from app.ui.error_text import single_line
from app.ui.theme import NOTICE_MARGINS, SPACE_S, SPACE_SM, notice_style

UNDO_NOTICE_MS = 8_000
"""An Undo notice stays at least this long (longer when the action's undo window is longer)."""
MESSAGE_NOTICE_MS = 6_000
NOTICE_WIDTH = 380
MARGIN = 16
BOTTOM_MARGIN = 60  # above a pane's bottom row of buttons
MAX_NOTICES = 5


class Notice(QFrame):
    """Emits `action_clicked` when its button is pressed and `dismissed` once it has gone."""

    action_clicked = Signal()
    dismissed = Signal()

    def __init__(self, text: str, *, action_text: str | None, duration_ms: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notice")  # styled by the area's stylesheet (one sheet, not one per notice)
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setFixedWidth(NOTICE_WIDTH)
        self.label = QLabel(single_line(text))
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # texts quote facts: never render them as HTML
        self.label.setWordWrap(True)
        self.action_button: QPushButton | None = None
        layout = QHBoxLayout(self)
        layout.setContentsMargins(*NOTICE_MARGINS)
        layout.setSpacing(SPACE_S)
        layout.addWidget(self.label, 1)
        if action_text:
            self.action_button = QPushButton(action_text)
            self.action_button.setCursor(Qt.CursorShape.PointingHandCursor)
            self.action_button.clicked.connect(self._on_action)
            layout.addWidget(self.action_button)
        self.close_button = QPushButton("×")
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.dismiss)
        layout.addWidget(self.close_button)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(duration_ms)
        self._timer.timeout.connect(self.dismiss)
        self._timer.start()
        self._gone = False

    @property
    def text(self) -> str:
        return self.label.text()

    def retell(self, text: str, duration_ms: int, *, offer: bool | None = None) -> None:
        """New words and a new duration, from now (see NoticeArea.retell); `offer` shows or hides its action
        button (None: as it is)."""
        self.label.setText(single_line(text))
        self._timer.start(duration_ms)
        if offer is not None and self.action_button is not None:
            self.action_button.setVisible(offer)

    @property
    def offers_action(self) -> bool:
        """It has an action button, shown."""
        return self.action_button is not None and not self.action_button.isHidden()

    @property
    def remaining_ms(self) -> int:
        return self._timer.remainingTime() if not self._gone else 0

    @property
    def is_gone(self) -> bool:
        return self._gone

    def _on_action(self) -> None:
        if not self._gone:
            self.action_clicked.emit()
            self.dismiss()

    def dismiss(self) -> None:
        if self._gone:
            return
        self._gone = True
        self._timer.stop()
        self.hide()
        self.dismissed.emit()
        self.deleteLater()


def _height(notice: Notice) -> int:
    """As tall as its wrapped text needs at the notices' width."""
    return max(notice.heightForWidth(NOTICE_WIDTH), notice.sizeHint().height())


def _typing_in(parent: QWidget) -> QRect | None:
    """Where, in `parent`, the field the owner types in is (a text box or a number field with the focus)."""
    focused = QApplication.focusWidget()
    if focused is None or not parent.isAncestorOf(focused):
        return None
    if isinstance(focused, QLineEdit | QPlainTextEdit | QTextEdit):
        if focused.isReadOnly():
            return None
    elif not isinstance(focused, QAbstractSpinBox):
        return None
    return QRect(focused.mapTo(parent, QPoint(0, 0)), focused.size())


def _aside(where: QRect, field: QRect, room: QSize) -> QRect:
    """`where` moved off `field`: to its left, else above it, else below it, else to the window's left edge."""
    left = where.translated(field.left() - MARGIN - where.right() - 1, 0)
    above = where.translated(0, field.top() - MARGIN - where.bottom() - 1)
    below = where.translated(0, field.bottom() + MARGIN + 1 - where.top())
    for candidate in (left, above, below):
        if candidate.left() >= 0 and candidate.top() >= 0 and candidate.bottom() < room.height():
            return candidate
    return where.translated(MARGIN - where.left(), 0)


class NoticeArea(QWidget):
    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, False)
        # Set once here for every notice: a stylesheet per notice costs its parsing and polish each time
        # one is shown (measured: most of the window's stalls while deciding the pending queue by keys).
        self.setStyleSheet(notice_style())
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(SPACE_SM)
        self._notices: list[Notice] = []
        self._heights: dict[Notice, int] = {}  # a notice's text does not change: measured once
        self._adding = False
        parent.installEventFilter(self)
        # Never over the field the owner types in: notices move aside when the focus goes into one under them.
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._on_app_focus_changed)
        self._place()
        self.hide()

    def notices(self) -> list[Notice]:
        """The notices showing now, oldest first."""
        return [n for n in self._notices if not n.is_gone]

    def show_notice(
        self,
        text: str,
        *,
        action: Callable[[], object] | None = None,
        action_text: str = "Undo",
        duration_ms: int = UNDO_NOTICE_MS,
    ) -> Notice:
        notice = Notice(text, action_text=action_text if action is not None else None, duration_ms=duration_ms)
        if action is not None:
            notice.action_clicked.connect(action)
        notice.dismissed.connect(lambda: self._forget(notice))
        self._notices.append(notice)
        self._layout.addWidget(notice)
        self._adding = True  # one placing for the whole change, below
        try:
            while len(self.notices()) > MAX_NOTICES:  # the oldest make room; their actions stay on Ctrl+Z
                self.notices()[0].dismiss()
        finally:
            self._adding = False
        self.show()
        self.raise_()
        self._place()
        return notice

    def retell(self, notice: Notice, text: str, duration_ms: int, *, offer: bool | None = None) -> None:
        """Say `text` in `notice` (still showing), for `duration_ms` from now; it stays where it is. `offer`:
        show or hide its action button (an Undo that would do nothing any more is hidden)."""
        notice.retell(text, duration_ms, offer=offer)
        height = _height(notice)
        if self._heights.get(notice) != height:
            self._heights[notice] = height
            notice.setFixedHeight(height)
            self._place()

    def show_message(self, text: str) -> Notice:
        """A notice without an action (an undo that could not be done, say)."""
        return self.show_notice(text, action=None, duration_ms=MESSAGE_NOTICE_MS)

    def _forget(self, notice: Notice) -> None:
        if notice in self._notices:
            self._notices.remove(notice)
            self._layout.removeWidget(notice)
        if not self._notices:
            self.hide()
        elif not self._adding:
            self._place()

    def _place(self) -> None:
        """Bottom right of the parent, each notice as tall as its wrapped text needs."""
        parent = self.parentWidget()
        if parent is None:
            return
        heights = []
        showing = self.notices()
        self._heights = {n: h for n, h in self._heights.items() if n in showing}
        for notice in showing:
            height = self._heights.get(notice)
            if height is None:
                height = self._heights[notice] = _height(notice)
                notice.setFixedHeight(height)
            heights.append(height)
        total = sum(heights) + self._layout.spacing() * max(0, len(heights) - 1)
        # A fixed size: a notice coming or going then re-lays out this area only, not the whole window
        # (Qt passes a size change of a child up to its parent's layout unless the child's size is fixed).
        self.setFixedSize(NOTICE_WIDTH, max(1, total))
        where = QRect(
            max(0, parent.width() - NOTICE_WIDTH - MARGIN), max(0, parent.height() - total - BOTTOM_MARGIN),
            NOTICE_WIDTH, max(1, total),
        )  # fmt: skip
        field = _typing_in(parent)
        if field is not None and field.intersects(where):
            where = _aside(where, field, parent.size())
        self.move(where.topLeft())

    def _on_app_focus_changed(self, _old: QWidget | None, _new: QWidget | None) -> None:
        if self._notices and isValid(self):
            self._place()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.parentWidget() and event.type() == QEvent.Type.Resize:
            self._place()
        return False
