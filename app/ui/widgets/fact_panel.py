"""A side panel for one fact: its text, where and when it held, its version chain ("believed X from T1;
corrected to Y at T2 by you") with its status history, the messages it came from, and its actions.

`show_fact(detail, as_shown)` takes the FactDetail (every version, every status change) and the row as
the timeline shows it (its status at the slice's recorded time); `show_forgotten(marker)` shows a
forgotten fact by who, where and when only. Facts' texts are escaped before they reach rich text.
The buttons only emit signals (`edit_requested`, `archive_requested`, `forget_requested`): the pane acts.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import DiffPiece, FactDetail, FactView, ForgottenFact, StatusChange
from app.ui.theme import (
    colours,
    section_label,
    small_label,
    status_chip_style,
)
from app.ui.time_text import span, when
from app.ui.widgets.word_diff import diff_html

# Who made a version, by its origin.
ORIGIN_WORDS = {
    "extraction": "learned from the conversation",
    "remember": "remembered at your request",
    "edit": "written by you",
    "import": "imported",
    "dreaming": "worked out by the familiar while idle",
    "supersede": "worked out by the familiar",
}
CORRECTED_BY = {"edit": "by you", "remember": "by you", "import": "on import"}
STATUS_MOVES = {
    ("pending", "active"): "accepted",
    ("pending", "rejected"): "rejected",
    ("active", "archived"): "archived",
    ("archived", "active"): "taken back from the archive",
    ("active", "pending"): "sent back to the queue",
    ("rejected", "pending"): "sent back to the queue",
    ("pending", "pending"): "snoozed or woken",
}


def quoted(text: str) -> str:
    return f"“{' '.join(text.split())}”"


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    at: datetime
    text: str  # plain text (the pane's tests read it); shown escaped


def history(detail: FactDetail) -> list[HistoryEvent]:
    """Every version's birth and every status change, oldest first, in the owner's words."""
    events: list[HistoryEvent] = []
    versions = detail.versions
    for n, version in enumerate(versions):
        if n == 0:
            origin = ORIGIN_WORDS.get(version.origin, version.origin)
            events.append(HistoryEvent(version.created_at, f"Believed {quoted(version.content)} ({origin})"))
        else:
            who = CORRECTED_BY.get(version.origin, "by the familiar")
            events.append(HistoryEvent(version.created_at, f"Corrected to {quoted(version.content)} {who}"))
        back_to = _undone_to(version, versions[:n])
        changes: Sequence[StatusChange] = detail.status_history.get(version.id, ())
        for before, after in itertools.pairwise(changes):
            if after.status == before.status or (back_to is not None and after.at == version.superseded_at):
                continue
            move = STATUS_MOVES.get((before.status, after.status), after.status)
            events.append(HistoryEvent(after.at, f"{move.capitalize()}"))
        successor = next((v for v in versions[n + 1 :] if v.id == version.superseded_by), None)
        if back_to is not None and version.superseded_at is not None:
            events.append(HistoryEvent(version.superseded_at, f"Correction undone: back to {quoted(back_to.content)}"))
        elif version.superseded_at is not None and successor is None and version.superseded_by is None:
            events.append(HistoryEvent(version.superseded_at, "Set aside: the message it came from was edited"))
    return sorted(events, key=lambda e: e.at)


def _undone_to(version: FactView, earlier: Sequence[FactView]) -> FactView | None:
    """The earlier version an undone correction gave way back to (None: it was not undone)."""
    if version.superseded_by is None:
        return None
    return next((v for v in earlier if v.id == version.superseded_by), None)


def chain_sentence(detail: FactDetail) -> str:
    """ "Believed “X” from 3 Nov 14:05; corrected to “Y” at 10 Nov 09:00 by you." (one version: its first line)."""
    versions = detail.versions
    parts = [f"Believed {quoted(versions[0].content)} from {when(versions[0].created_at)}"]
    for n, version in enumerate(versions[1:], 1):
        who = CORRECTED_BY.get(version.origin, "by the familiar")
        part = f"corrected to {quoted(version.content)} at {when(version.created_at)} {who}"
        if version.superseded_at is not None and _undone_to(version, versions[:n]) is not None:
            part += f", undone at {when(version.superseded_at)}"
        parts.append(part)
    return "; ".join(parts) + "."


def _rich(text: str) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _plain(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)  # facts are quoted text: never rendered as HTML
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class FactPanel(QScrollArea):
    edit_requested = Signal()
    archive_requested = Signal()
    forget_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setMinimumWidth(280)
        self._body = body = QWidget()
        self.setWidget(body)
        self._layout = QVBoxLayout(body)
        self._layout.setContentsMargins(10, 2, 6, 8)
        self._layout.setSpacing(8)

        self.title = _plain()
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.15)
        font.setBold(True)
        self.title.setFont(font)
        self.chips = QHBoxLayout()
        self.status_then = QLabel()
        self.status_now = QLabel()
        for chip in (self.status_then, self.status_now):
            chip.setTextFormat(Qt.TextFormat.PlainText)
            self.chips.addWidget(chip)
        self.chips.addStretch(1)
        self.change = _rich("")
        self.change.setObjectName("fact-change")
        self.facts_form = QFormLayout()
        self.facts_form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.facts_form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.about = _plain()
        self.place = _plain()
        self.kind = _plain()
        self.speaker = _plain()
        self.held = _plain()
        self.believed = _plain()
        for name, field in (
            ("About", self.about),
            ("Kept for", self.place),
            ("Kind", self.kind),
            ("Said by", self.speaker),
            ("Held", self.held),
            ("Believed", self.believed),
        ):
            self.facts_form.addRow(name, field)
        self.chain = _plain()
        self.chain.setObjectName("fact-chain")
        self.events = _rich("")
        self.sources_heading = section_label("Where it came from")
        self.sources = _rich("")
        self.note = small_label("")

        self.edit_button = QPushButton("Edit…")
        self.edit_button.setToolTip("Correct its text: a new version, which you can undo (e or F2)")
        self.archive_button = QPushButton("Archive")
        self.archive_button.setToolTip("Take it out of what the familiar believes now; undoable (a)")
        self.forget_button = QPushButton("Forget…")
        self.forget_button.setToolTip("Erase it everywhere, after a preview; undoable for a few seconds (Delete)")
        self.edit_button.clicked.connect(self.edit_requested)
        self.archive_button.clicked.connect(self.archive_requested)
        self.forget_button.clicked.connect(self.forget_requested)
        buttons = QHBoxLayout()
        buttons.setSpacing(4)
        for button in (self.edit_button, self.archive_button, self.forget_button):
            button.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
            button.setMinimumWidth(60)
            buttons.addWidget(button)
        buttons.addStretch(1)

        self._layout.addWidget(self.title)
        self._layout.addLayout(self.chips)
        self._layout.addWidget(self.change)
        self._layout.addLayout(buttons)
        self._layout.addLayout(self.facts_form)
        self._layout.addWidget(section_label("Its history"))
        self._layout.addWidget(self.chain)
        self._layout.addWidget(self.events)
        self._layout.addWidget(self.sources_heading)
        self._layout.addWidget(self.sources)
        self._layout.addWidget(self.note)
        self._layout.addStretch(1)
        self.detail: FactDetail | None = None
        self.marker: ForgottenFact | None = None
        self.show_nothing()

    # -- what it shows -----------------------------------------------------------------------------------
    def _set_chips(self, then: str, now: str | None) -> None:
        self.status_then.setText(then if now is None else f"{then} then")
        self.status_then.setStyleSheet(status_chip_style(then))
        self.status_now.setVisible(now is not None)
        if now is not None:
            self.status_now.setText(f"{now} now")
            self.status_now.setStyleSheet(status_chip_style(now))

    def _set_actions(self, *, edit: bool, archive: bool, forget: bool) -> None:
        self.edit_button.setEnabled(edit)
        self.archive_button.setEnabled(archive)
        self.forget_button.setEnabled(forget)

    def show_nothing(self, text: str = "Choose a fact to see its history.") -> None:
        self.detail, self.marker = None, None
        self.title.setText(text)
        for widget in (self.status_then, self.status_now, self.change, self.chain, self.events, self.sources):
            widget.setVisible(False)
        self.sources_heading.setVisible(False)
        self._show_form(False)
        self.note.setText("")
        self._set_actions(edit=False, archive=False, forget=False)

    def _show_form(self, visible: bool) -> None:
        for row in range(self.facts_form.rowCount()):
            self.facts_form.setRowVisible(row, visible)

    def show_fact(self, detail: FactDetail, as_shown: FactView, *, change: Sequence[DiffPiece] = ()) -> None:
        """A fact with its chain; `as_shown` is the row on the timeline (its status at that point)."""
        self.detail, self.marker = detail, None
        now = detail.fact
        head = next((v for v in detail.versions if v.id == detail.head_id), now)
        self.title.setText(" ".join(as_shown.content.split()))
        self._set_chips(as_shown.status, now.status if now.status != as_shown.status else None)
        self.status_then.setVisible(True)
        self.change.setVisible(bool(change))
        self.change.setText(f"Changed: {diff_html(change)}" if change else "")
        self._show_form(True)
        self.about.setText(", ".join(p.name for p in as_shown.subjects) or "nobody in particular")
        self.place.setText(as_shown.scope.name)
        self.kind.setText(f"{as_shown.type} · importance {as_shown.importance}/10 · {as_shown.confidence:.0%} sure")
        self.speaker.setText(as_shown.speaker.name if as_shown.speaker else "unknown")
        self.held.setText(span(as_shown.valid_from, as_shown.valid_to))
        replaced = "" if as_shown.superseded_at is None else f" until {when(as_shown.superseded_at)}"
        self.believed.setText(f"from {when(as_shown.created_at)}{replaced}")
        self.chain.setVisible(len(detail.versions) > 1)
        self.chain.setText(chain_sentence(detail))
        events = history(detail)
        self.events.setVisible(bool(events))
        muted = colours().muted
        self.events.setText(
            "<table cellspacing='0' cellpadding='2'>"
            + "".join(
                f"<tr><td style='color:{muted}; white-space:nowrap'>{html.escape(when(e.at))}</td>"
                f"<td>{html.escape(e.text)}</td></tr>"
                for e in events
            )
            + "</table>"
        )
        self.sources_heading.setVisible(True)
        self.sources.setVisible(True)
        self.sources.setText(
            "<br>".join(
                f"<span style='color:{muted}'>{html.escape(s.author.name)} in {html.escape(s.place.name)},"
                f" {html.escape(when(s.created_at))}</span><br>"
                + ("<i>(the message was erased)</i>" if s.redacted else html.escape(s.content))
                for s in detail.sources
            )
            or "<i>No message: it was written or remembered directly.</i>"
        )
        is_head = head.id == now.id and now.superseded_at is None
        notes = []
        if not is_head or as_shown.id != head.id:
            notes.append("This is an earlier version; Edit and Archive act on the current one.")
        self.note.setText(" ".join(notes))
        self._set_actions(
            edit=head.status in ("pending", "active"),
            archive=head.status == "active",
            forget=head.status != "forgotten",
        )

    def show_forgotten(self, marker: ForgottenFact) -> None:
        """A forgotten fact: who, where and when, never what."""
        self.detail, self.marker = None, marker
        self.title.setText("Forgotten fact")
        self._set_chips(marker.status, "forgotten" if marker.status != "forgotten" else None)
        self.status_then.setVisible(True)
        self.change.setVisible(False)
        self._show_form(True)
        self.about.setText(", ".join(p.name for p in marker.subjects) or "not recorded")
        self.place.setText(marker.scope.name)
        self.kind.setText("—")
        self.speaker.setText("—")
        self.held.setText(span(marker.valid_from, marker.valid_to))
        self.believed.setText(f"from {when(marker.created_at)}")
        self.chain.setVisible(True)
        forgotten = f" on {when(marker.forgotten_at)}" if marker.forgotten_at else ""
        receipt = f" (receipt #{marker.receipt_id})" if marker.receipt_id else ""
        self.chain.setText(
            f"Forgotten{forgotten}{receipt}. Its text was erased everywhere the familiar kept it; only who it"
            " was about, where and when remain, so you can see that something was there."
        )
        for widget in (self.events, self.sources, self.sources_heading):
            widget.setVisible(False)
        self.note.setText("The forget receipts and tombstones are under Memory controls.")
        self._set_actions(edit=False, archive=False, forget=False)

    def texts(self) -> str:
        """Everything the panel shows, as plain text (for tests: what a person could read here)."""
        labels = self._body.findChildren(QLabel)
        return "\n".join(label.text() for label in labels if not label.isHidden())
