"""The focused pending item in full, beside the queue: its text (large), what it is, who it is about, where
it was said, the messages it came from (author, place, time), and the facts already known that it would
duplicate or replace, each with a word diff. Also the in-place editor (Enter saves, Esc cancels) and the
"changed meanwhile" note of a revision conflict. Shows what it is given; no I/O."""

from __future__ import annotations

import html
from datetime import UTC, datetime

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QPalette
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QLabel,
    QPlainTextEdit,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import FactView, PendingItem, RelatedFact
from app.ui.local_time import short_when, weekday_when
from app.ui.models.pending_model import confidence_text, said_in_text, subjects_text
from app.ui.theme import CONFLICT_STYLE, scaled_font, small_label
from app.ui.widgets.word_diff import diff_html, legend_html

TEXT_SCALE = 1.35
EDIT_HINT = "Enter saves the new text and accepts it · Esc cancels"
RELATION_WORDS = {"duplicates": "Would duplicate", "may_supersede": "Could replace"}
STATUS_WORDS = {
    "pending": "still pending",
    "active": "accepted",
    "rejected": "rejected",
    "archived": "archived",
    "forgotten": "forgotten",
}


def conflict_text(current: FactView | None) -> str:
    """What a revision conflict says: the fact changed since the queue was loaded, and how it is now."""
    if current is None or current.status == "forgotten":
        return "This fact changed meanwhile and is gone now (forgotten or removed). Nothing left to decide."
    text = " ".join(current.content.split())
    if current.status == "pending" and current.is_head:
        return (
            f"This fact changed since the queue was loaded (now revision {current.revision}). What is shown is "
            f"the fact as it is now: “{text}”. Decide again."
        )
    state = STATUS_WORDS.get(current.status, current.status)
    if not current.is_head:
        state = f"replaced by a newer version (fact {current.superseded_by})"
    return f"This fact changed meanwhile: it is {state} now (“{text}”). Nothing left to decide here."


def left_text(fact: FactView, now: datetime) -> str:
    """Why a fact left the queue from elsewhere, in a few words ("accepted meanwhile, elsewhere")."""
    if fact.status == "pending" and fact.is_head and fact.snoozed(now) and fact.snoozed_until is not None:
        return f"snoozed until {weekday_when(fact.snoozed_until, now=now)} meanwhile, elsewhere"
    return f"{STATUS_WORDS.get(fact.status, fact.status)} meanwhile, elsewhere"


class FactEditor(QPlainTextEdit):
    """A fact's text being edited: Enter emits `submitted` with the text, Esc `cancelled`."""

    submitted = Signal(str)
    cancelled = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.submitted.emit(" ".join(self.toPlainText().split()))
            event.accept()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.cancelled.emit()
            event.accept()
            return
        super().keyPressEvent(event)


class PendingDetail(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._item: PendingItem | None = None
        self._conflict: str | None = None
        self._context_timer = QTimer(self)
        self._context_timer.setSingleShot(True)
        self._context_timer.setInterval(0)
        self._context_timer.timeout.connect(self._on_context_timer_timeout)

        self.conflict = QFrame()
        self.conflict.setObjectName("conflict")
        self.conflict.setStyleSheet(CONFLICT_STYLE)
        self.conflict_label = QLabel()
        self.conflict_label.setWordWrap(True)
        self.conflict_label.setTextFormat(Qt.TextFormat.PlainText)
        conflict_layout = QVBoxLayout(self.conflict)
        conflict_layout.setContentsMargins(10, 8, 10, 8)
        conflict_layout.addWidget(self.conflict_label)
        self.conflict.hide()

        self.text_label = QLabel()
        self.text_label.setObjectName("pending-text")
        self.text_label.setWordWrap(True)
        self.text_label.setTextFormat(Qt.TextFormat.PlainText)  # a fact's text is never markup
        self.text_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text_label.setFont(scaled_font(self.font(), TEXT_SCALE))
        self.editor = FactEditor()
        self.editor.setFont(scaled_font(self.font(), TEXT_SCALE))
        self.editor.setTabChangesFocus(True)
        self.editor.setFixedHeight(self.editor.fontMetrics().lineSpacing() * 3 + 14)
        self.editor.hide()
        self.edit_hint = small_label(EDIT_HINT)
        self.edit_hint.hide()

        self.kind_label = QLabel()
        self.kind_label.setTextFormat(Qt.TextFormat.PlainText)
        self.about = self._value()
        self.said_by = self._value()
        self.said_in = self._value()
        self.recalled_in = self._value()
        self.learned = self._value()
        self.snoozed = self._value()
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        form.setHorizontalSpacing(14)
        form.setVerticalSpacing(3)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
        form.addRow("About", self.about)
        form.addRow("Said by", self.said_by)
        form.addRow("Said in", self.said_in)
        form.addRow("Recalled in", self.recalled_in)
        form.addRow("Learned", self.learned)
        form.addRow("Snoozed until", self.snoozed)
        self._form = form

        self.browser = QTextBrowser()
        self.browser.setObjectName("pending-context")
        self.browser.setOpenLinks(False)
        self.browser.setFrameShape(QFrame.Shape.NoFrame)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 4, 4, 4)
        layout.setSpacing(8)
        layout.addWidget(self.conflict)
        layout.addWidget(self.text_label)
        layout.addWidget(self.editor)
        layout.addWidget(self.edit_hint)
        layout.addWidget(self.kind_label)
        layout.addLayout(form)
        layout.addWidget(self.browser, 1)

    @staticmethod
    def _value() -> QLabel:
        label = QLabel()
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    # -- what it shows ----------------------------------------------------------------------------------
    @property
    def item(self) -> PendingItem | None:
        return self._item

    @property
    def editing(self) -> bool:
        return not self.editor.isHidden()

    def show_item(self, item: PendingItem | None, *, conflict: str | None = None) -> None:
        """Show `item` (None: nothing focused); `conflict` is the "changed meanwhile" note, if any."""
        if item == self._item and conflict == self._conflict and item is not None:
            return  # the same again (the focus moved back onto it): nothing to redraw
        if self.editing and (item is None or self._item is None or item.fact.id != self._item.fact.id):
            self.end_edit()
        self._item = item
        self._conflict = conflict
        self.conflict.setVisible(conflict is not None)
        self.conflict_label.setText(conflict or "")
        if item is None:
            self.text_label.setText("")
            self.kind_label.setText("")
            for label in (self.about, self.said_by, self.said_in, self.recalled_in, self.learned, self.snoozed):
                label.setText("")
            self._context_timer.stop()
            self.browser.clear()
            return
        fact = item.fact
        now = datetime.now(UTC)
        self.text_label.setText(fact.content)
        self.kind_label.setText(
            f"{fact.type.capitalize()} · {confidence_text(item)} sure · importance {fact.importance} of 10"
        )
        self.about.setText(subjects_text(item))
        self.said_by.setText(fact.speaker.name if fact.speaker else "unknown")
        self.said_in.setText(said_in_text(item))
        self.recalled_in.setText(fact.scope.name)
        self.learned.setText(short_when(fact.created_at, now=now))
        snoozed = fact.snoozed(now) and fact.snoozed_until is not None
        self.snoozed.setText(weekday_when(fact.snoozed_until, now=now) if fact.snoozed_until and snoozed else "")
        self._form.setRowVisible(self.snoozed, snoozed)
        # The sources and related facts (a rich-text layout, the costliest part) on the loop's next turn:
        # the list's repaint after a key goes first, and keys pressed in a row lay out only the last item.
        self._context_timer.start()

    @property
    def context_pending(self) -> bool:
        """The sources and related facts of the item shown are still to be laid out (next turn of the loop)."""
        return self._context_timer.isActive()

    def _on_context_timer_timeout(self) -> None:
        if self._item is not None:
            self.browser.setHtml(self.context_html(self._item))

    def context_html(self, item: PendingItem) -> str:
        """The sources and the related facts with their diffs, as rich text (every text escaped)."""
        muted = self.palette().color(QPalette.ColorRole.PlaceholderText).name()
        now = datetime.now(UTC)
        parts = [f"<h3>Where it came from ({len(item.sources)})</h3>"]
        if not item.sources:
            parts.append(f'<p style="color:{muted}">No source message: it was typed in, imported or dreamt up.</p>')
        for source in item.sources:
            when = short_when(source.created_at, now=now)
            where = html.escape(source.place.name)
            text = (
                html.escape(" ".join(source.content.split()))
                if not source.redacted and source.content.strip()
                else f'<i style="color:{muted}">(the message was erased)</i>'
            )
            parts.append(
                f"<p><b>{html.escape(source.author.name)}</b>"
                f' <span style="color:{muted}">in {where} · {when}</span></p>'
                f'<p style="margin-left:16px; margin-top:2px">{text}</p>'
            )
        parts.append(f"<h3>Already known ({len(item.related)})</h3>")
        if not item.related:
            parts.append(f'<p style="color:{muted}">Nothing current it would duplicate or replace.</p>')
        else:
            parts.append(f"<p>{legend_html()}</p>")
        for related in item.related:
            parts.append(self._related_html(related, muted, now))
        return "".join(parts)

    @staticmethod
    def _related_html(related: RelatedFact, muted: str, now: datetime) -> str:
        fact = related.fact
        words = RELATION_WORDS.get(related.relation, related.relation)
        if related.reason:
            words += f" ({html.escape(related.reason)})"
        since = short_when(fact.created_at, now=now)
        about = ", ".join(s.name for s in fact.subjects)
        detail = f"fact {fact.id} · known since {since}"
        if about:
            detail += f" · about {html.escape(about)}"
        return (
            f'<p><b>{words}</b> <span style="color:{muted}">{detail}</span></p>'
            f'<p style="margin-left:16px; margin-top:2px">{html.escape(fact.content)}<br>'
            f'<span style="color:{muted}">Changes:</span> {diff_html(related.diff)}</p>'
        )

    # -- editing in place ----------------------------------------------------------------------------------
    def begin_edit(self) -> None:
        if self._item is None:
            return
        self.editor.setPlainText(self._item.fact.content)
        self.text_label.hide()
        self.editor.show()
        self.edit_hint.show()
        self.editor.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.editor.selectAll()

    def end_edit(self) -> None:
        self.editor.hide()
        self.edit_hint.hide()
        self.text_label.show()
