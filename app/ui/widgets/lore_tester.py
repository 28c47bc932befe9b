"""The lorebook's tester: text pasted, or the last messages of a place, run through the lorebook as the bot
would (the pane runs it); the report shows each matched key in the text, what fired step by step, and what
matched but the budget left out, with why."""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import LoreTrial
from app.ui.theme import LORE_HIGHLIGHT, LORE_HIGHLIGHT_TEXT, colours

PASTED = "Text pasted below"


class LoreTester(QWidget):
    """`tried` asks for a try (Try, or Ctrl+Enter in the text); `place()` says what to try it on."""

    tried = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._places: list[tuple[str, str]] = []  # (name, key)
        self.source = QComboBox()
        self.source.addItem(PASTED)
        self.source.setToolTip("Try pasted text, or the last messages of a place")
        self.source.currentIndexChanged.connect(self._on_source_current_index_changed)
        self.last = QSpinBox()
        self.last.setRange(1, 1000)
        self.last.setValue(20)
        self.last.setPrefix("last ")
        self.last.setSuffix(" messages")
        self.last.setEnabled(False)
        self.text = QPlainTextEdit()
        self.text.setPlaceholderText("Paste a conversation here, one message per line, then Try (Ctrl+Enter)")
        self.text.setTabChangesFocus(True)
        self.button = QPushButton("Try")
        self.button.setToolTip("Run it through the lorebook as the bot would (Ctrl+Enter)")
        self.button.clicked.connect(lambda _checked=False: self.tried.emit())
        QShortcut(QKeySequence("Ctrl+Return"), self.text, self.tried.emit).setContext(Qt.ShortcutContext.WidgetShortcut)
        self.result = QTextBrowser()
        self.result.setPlaceholderText("What fires, why, and what the budget leaves out shows here.")
        layout = QVBoxLayout(self)
        # The source on a row of its own: a place's name ("Lantern Club #familiar-home") is long.
        layout.addWidget(self.source)
        row = QHBoxLayout()
        row.addWidget(self.last)
        row.addStretch(1)
        row.addWidget(self.button)
        layout.addLayout(row)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.result, 2)

    def set_places(self, places: list[tuple[str, str]]) -> None:
        """The places to try the last messages of, (name, key) each; the choice stays where it was."""
        if places == self._places:
            return
        self._places = places
        current = self.source.currentIndex()
        self.source.blockSignals(True)
        self.source.clear()
        self.source.addItem(PASTED)
        for name, _key in places:
            self.source.addItem(name)
        self.source.setCurrentIndex(min(max(current, 0), self.source.count() - 1))
        self.source.blockSignals(False)

    def place(self) -> str | None:
        """The key of the place chosen; None: the text pasted."""
        index = self.source.currentIndex()
        return self._places[index - 1][1] if index > 0 else None

    def lines(self) -> list[str]:
        """The pasted text's messages, one a line (blank lines are none)."""
        return [line for line in self.text.toPlainText().splitlines() if line.strip()]

    def show_trial(self, trial: LoreTrial) -> None:
        self.result.setHtml(trial_html(trial))

    def _on_source_current_index_changed(self, index: int) -> None:
        self.last.setEnabled(index > 0)
        self.text.setEnabled(index == 0)


def _highlight(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    out: list[str] = []
    at = 0
    for start, end, title in sorted(spans):
        if start < at or end > len(text):
            continue
        out.append(html.escape(text[at:start]))
        out.append(
            f'<b style="background:{LORE_HIGHLIGHT}; color:{LORE_HIGHLIGHT_TEXT}" title="{html.escape(title)}">'
            f"{html.escape(text[start:end])}</b>"
        )  # its own text colour with its background: it reads in the dark theme too
        at = end
    out.append(html.escape(text[at:]))
    return "".join(out)


def trial_html(trial: LoreTrial) -> str:
    """The tester's report: the texts with each matched key highlighted, what fired step by step (the
    recursion chain), and what matched but was left out, with why."""
    spans: dict[int, list[tuple[int, int, str]]] = {}
    for fired in trial.fired:
        span = fired.span
        if span is None or span.position is None or span.source == "lore":
            continue
        text = trial.texts[span.position] if span.position < len(trial.texts) else ""
        offset = 0
        if span.source == "message":
            colon = text.find(": ")
            offset = colon + 2 if colon >= 0 else 0
        spans.setdefault(span.position, []).append((span.start + offset, span.end + offset, fired.title))
    parts = [f"<h3>{len(trial.fired)} fired · {trial.tokens:,} of {trial.budget:,} tokens</h3>"]
    parts.append("<p>" + "<br>".join(_highlight(t, spans.get(i, [])) for i, t in enumerate(trial.texts)) + "</p>")
    if trial.fired:
        parts.append("<h4>Fired</h4><ol>")
        for fired in trial.fired:
            via = {
                "key": f"key “{html.escape(fired.key)}”",
                "constant": "constant",
                "sticky": "still sticky",
                "decorator": "@@activate",
            }[fired.via]
            step = f", step {fired.step} (activated by an entry)" if fired.step else ""
            roll = f", rolled {fired.roll:.0f}" if fired.roll is not None else ""
            parts.append(
                f"<li><b>{html.escape(fired.title or 'untitled')}</b> (entry {fired.index + 1}): {via}{step}{roll},"
                f" {fired.tokens:,} tokens</li>"
            )
        parts.append("</ol>")
    if len(trial.steps) > 1:
        titles = {f.index: f.title for f in trial.fired}
        chain = " → ".join(
            ", ".join(html.escape(titles.get(i, f"entry {i + 1}")) for i in step) or "nothing" for step in trial.steps
        )
        parts.append(f"<p><b>Recursion:</b> {chain}</p>")
    if trial.dropped:
        parts.append("<h4>Matched but left out</h4><ul>")
        for dropped in trial.dropped:
            parts.append(
                f"<li><b>{html.escape(dropped.title or 'untitled')}</b> (entry {dropped.index + 1}, key "
                f"“{html.escape(dropped.key)}”): {html.escape(dropped.reason)} — {html.escape(dropped.detail)}</li>"
            )
        parts.append("</ul>")
    if not trial.fired and not trial.dropped:
        parts.append("<p>Nothing matched: no key of an enabled entry is in these messages.</p>")
    for problem in trial.problems:
        parts.append(f'<p style="color:{colours().error}">{html.escape(problem)}</p>')
    return "".join(parts)
