"""Why did it say that: what went into one reply, from its recorded explanation.

A token waterfall by layer (the parts add up to the total, with each layer's budget behind it), the
message it answered with the text that fired lorebook entries highlighted, the lore that fired and the
lore that matched but was left out (with why), the facts recalled with each signal's score and the
ones just below the cutoff, the older messages recalled, and what changed since the reply before in
the same place. From here: forget a fact (with its preview, undoable), pause recall in this place
(undoable), edit a lore entry (the Lorebook pane when there is one, else lorebook.toml).

Opened by turn id (the field above, or `familiar --pane explain`), from a reply in Chat ("Why did it say
that?"), from a reply in the Dashboard's activity log, or on the newest reply. `focus_on(target)`: an int is
a turn id, a str a place key (its newest reply), None the newest reply anywhere.
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Callable, Sequence

from PySide6.QtCore import QAbstractItemModel, QRegularExpression, Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence, QRegularExpressionValidator
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import (
    ExplainedLore,
    Explanation,
    FactView,
    PauseView,
    ScheduledForget,
    SourceMessage,
)
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind
from app.ui import control_actions
from app.ui.async_slot import async_slot
from app.ui.dialogs.forget_dialog import forget_with_preview
from app.ui.models.explain_models import (
    DiffRow,
    DroppedLoreModel,
    ExplanationDiffModel,
    FiredLore,
    FiredLoreModel,
    RecalledFactRow,
    RecalledFactsModel,
    RecalledTurnRow,
    RecalledTurnsModel,
    entry_name,
)
from app.ui.models.forgetting_models import short_time
from app.ui.models.roles import RecordRole
from app.ui.ops import Succeeded
from app.ui.panes.base import Pane, PaneContext
from app.ui.theme import section_label, small_label
from app.ui.widgets.lore_text import Span, highlighted_html, key_spans
from app.ui.widgets.record_table import RecordTableView
from app.ui.widgets.token_waterfall import TokenWaterfall

_log = logging.getLogger(__name__)

LOREBOOK_PANE = "lorebook"
LOREBOOK_FILE = "lorebook.toml"
MAX_VISIBLE_ROWS = 8
FORGOTTEN = "(forgotten)"
OWNER_KEY = "local:owner"  # the window's own user, in the local chat
Request = int | str | None  # a turn id, a place key (its newest reply), or None (the newest anywhere)


class ExplainPane(Pane):
    name = "explain"
    title = "Why did it say that"
    watches = frozenset({ChangeKind.FACTS, ChangeKind.FORGETS, ChangeKind.PAUSE})
    empty_text = "No replies yet. When the familiar answers, open a reply here to see what went into it."

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self._requested: Request = None
        self.explanation: Explanation | None = None
        self.previous: Explanation | None = None
        self.answered: SourceMessage | None = None
        self.messages: dict[int, SourceMessage] = {}  # the messages that fired lore, by turn id
        self.pause_view: PauseView | None = None
        self.lorebook_url: QUrl | None = None  # what Edit entry opened, without a Lorebook pane

        # The turn bar stays above the state pages: a wrong turn id can be corrected from the error state.
        self.turn_field = QLineEdit()
        self.turn_field.setPlaceholderText("Turn id")
        self.turn_field.setValidator(QRegularExpressionValidator(QRegularExpression(r"\d{1,18}"), self.turn_field))
        self.turn_field.setMaximumWidth(140)
        self.turn_field.setToolTip("The turn id of a reply (as `familiar explain` takes it); Enter opens it")
        self.turn_field.returnPressed.connect(self._on_open_triggered)
        self.open_button = QPushButton("Open")
        self.open_button.setToolTip("Open the reply with this turn id (Enter)")
        self.open_button.clicked.connect(self._on_open_triggered)
        self.newest_button = QPushButton("Newest reply")
        self.newest_button.setToolTip("Show the familiar's newest reply (Ctrl+Shift+N)")
        self.newest_button.clicked.connect(self._on_newest_triggered)
        self.newest_action = _pane_action(self, "Newest reply", "Ctrl+Shift+N", self._on_newest_triggered)
        bar = QHBoxLayout()
        bar.setSpacing(8)
        turn_label = QLabel("&Turn id")
        turn_label.setBuddy(self.turn_field)
        bar.addWidget(turn_label)
        bar.addWidget(self.turn_field)
        bar.addWidget(self.open_button)
        bar.addWidget(self.newest_button)
        bar.addStretch(1)
        self.page_layout.insertLayout(2, bar)

        self.header = QLabel()
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.pause_button = QPushButton("Pause recall here")
        self.pause_button.clicked.connect(self._on_pause_triggered)
        header_row = QHBoxLayout()
        header_row.addWidget(self.header, 1)
        header_row.addWidget(self.pause_button, 0, Qt.AlignmentFlag.AlignTop)

        self.waterfall = TokenWaterfall()
        self.left_out_label = small_label("")

        self.answered_label = QLabel()
        self.answered_label.setWordWrap(True)
        self.answered_label.setTextFormat(Qt.TextFormat.RichText)
        self.answered_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.answered_label.setFrameShape(QFrame.Shape.StyledPanel)
        self.answered_label.setMargin(8)

        self.lore_model = FiredLoreModel(self)
        self.lore_view = _table(self.lore_model, "No lore fired for this reply.", stretch=2)
        self.edit_lore_button = QPushButton("Edit entry…")
        self.edit_lore_button.setToolTip("Open the selected entry in the lorebook (Ctrl+E)")
        self.edit_lore_button.clicked.connect(self._on_edit_lore_triggered)
        self.edit_lore_action = _pane_action(self, "Edit entry…", "Ctrl+E", self._on_edit_lore_triggered)
        self.dropped_model = DroppedLoreModel(self)
        self.dropped_view = _table(self.dropped_model, "Nothing that matched was left out.")

        self.facts_model = RecalledFactsModel(self)
        self.facts_view = _table(self.facts_model, "No facts recalled (none matched, or recall was paused).", stretch=0)
        self.forget_button = QPushButton("Forget…")
        self.forget_button.setToolTip("Forget the selected fact, after a preview of what goes (Delete)")
        self.forget_button.clicked.connect(self._on_forget_triggered)
        self.forget_action = QAction("Forget…", self.facts_view)
        self.forget_action.setShortcut(QKeySequence.StandardKey.Delete)
        self.forget_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.forget_action.triggered.connect(self._on_forget_triggered)
        self.facts_view.addAction(self.forget_action)
        self.facts_view.selectionModel().currentRowChanged.connect(self._update_actions)
        self.lore_view.selectionModel().currentRowChanged.connect(self._update_actions)

        self.turns_model = RecalledTurnsModel(self)
        self.turns_view = _table(self.turns_model, "No older messages recalled.", stretch=2)

        self.diff_title = section_label("Compared with the reply before")
        self.diff_model = ExplanationDiffModel(self)
        self.diff_view = _table(self.diff_model, "")

        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(0, 0, 8, 0)
        layout.setSpacing(8)
        layout.addLayout(header_row)
        layout.addWidget(section_label("Tokens by layer"))
        layout.addWidget(self.waterfall)
        layout.addWidget(self.left_out_label)
        layout.addWidget(section_label("The message it answered"))
        layout.addWidget(self.answered_label)
        layout.addLayout(_titled_row(section_label("Lore that fired"), self.edit_lore_button))
        layout.addWidget(self.lore_view)
        layout.addWidget(section_label("Lore that matched but was left out"))
        layout.addWidget(self.dropped_view)
        layout.addLayout(_titled_row(section_label("Facts recalled"), self.forget_button))
        layout.addWidget(self.facts_view)
        layout.addWidget(section_label("Older messages recalled"))
        layout.addWidget(self.turns_view)
        layout.addWidget(self.diff_title)
        layout.addWidget(self.diff_view)
        layout.addWidget(small_label("Scores are 0-1 per signal; a fact or message is used from the top down"))
        layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(content)
        self.set_body(scroll)
        self._update_actions()

    # -- opening ----------------------------------------------------------------------------------------
    def focus_on(self, target: object) -> None:
        """Show a reply: a turn id (int), the newest in a place (its key, str), or the newest (None)."""
        self.open(target if isinstance(target, int | str) else None)

    def open(self, request: Request) -> None:
        self._requested = request
        if isinstance(request, int):
            self.turn_field.setText(str(request))
        self.refresh()

    def _on_open_triggered(self) -> None:
        text = self.turn_field.text().strip()
        if text:
            self.open(int(text))

    def _on_newest_triggered(self) -> None:
        self.open(None)

    # -- loading ----------------------------------------------------------------------------------------
    async def load(self) -> bool:
        requested = self._requested
        turn_id = requested if isinstance(requested, int) else await self.facade.newest_reply(requested)
        if turn_id is None:
            self.explanation = None
            return False
        explanation = await self.facade.explain(turn_id)
        previous, answered, pause = await asyncio.gather(
            self.facade.previous_explanation(turn_id),
            self.facade.answered_message(turn_id),
            self.facade.controls.state(),
        )
        fact_rows = await self._fact_rows(explanation, await self.facade.memory.scheduled_forgets())
        turn_rows, messages = await self._turn_rows(explanation, answered)
        self.explanation, self.previous, self.answered, self.pause_view = explanation, previous, answered, pause
        self.messages = messages
        self.turn_field.setText(str(turn_id))
        self._show_explanation(explanation, fact_rows, turn_rows)
        return True

    async def _fact_rows(self, explanation: Explanation, scheduled: Sequence[ScheduledForget]) -> list[RecalledFactRow]:
        """The facts recalled, then those just below the cutoff; a fact being forgotten (its Undo notice
        still up) shows as forgotten, as it has left every read."""
        going = {s.fact_id for s in scheduled}
        below = [d.details for d in explanation.dropped if d.layer == "memory" and "fact_id" in d.details]
        ids = [f.fact_id for f in explanation.facts] + [_int(d["fact_id"]) for d in below]
        found = await asyncio.gather(*(self._fact_view(i) for i in ids))
        views = {i: v for i, v in zip(ids, found, strict=True) if i not in going}
        rows = [
            RecalledFactRow(
                f.fact_id,
                f.content if f.fact_id in views else FORGOTTEN,
                f.score,
                f.signals,
                True,
                views.get(f.fact_id),
            )
            for f in explanation.facts
        ]
        for details in below:
            fact_id = _int(details["fact_id"])
            view = views.get(fact_id)
            rows.append(
                RecalledFactRow(
                    fact_id,
                    FORGOTTEN if view is None else view.content,
                    _float(details.get("score")),
                    _signals(details.get("signals")),
                    False,
                    view,
                )
            )
        return rows

    async def _fact_view(self, fact_id: int) -> FactView | None:
        try:
            view = (await self.facade.memory.fact(fact_id)).fact
        except FamiliarError:
            return None
        return None if view.status == "forgotten" else view

    async def _turn_rows(
        self, explanation: Explanation, answered: SourceMessage | None
    ) -> tuple[list[RecalledTurnRow], dict[int, SourceMessage]]:
        below = [d.details for d in explanation.dropped if d.layer == "memory" and "turn_id" in d.details]
        span_turns = {
            span.turn_id
            for span in (lore.span for lore in explanation.lore)
            if span is not None and span.turn_id is not None
        }
        wanted = {t.turn_id for t in explanation.turns} | {_int(d["turn_id"]) for d in below} | span_turns
        if answered is not None:
            wanted.discard(answered.turn_id)
        found = {m.turn_id: m for m in await self.facade.memory.sources(sorted(wanted))} if wanted else {}
        if answered is not None:
            found[answered.turn_id] = answered

        def row(turn_id: int, score: float, signals: object, used: bool) -> RecalledTurnRow:
            message = found.get(turn_id)
            if message is None or message.redacted:
                return RecalledTurnRow(turn_id, None, "(deleted)", None, score, _signals(signals), used)
            return RecalledTurnRow(
                turn_id, message.author, message.content, message.created_at, score, _signals(signals), used
            )

        rows = [row(t.turn_id, t.score, t.signals, True) for t in explanation.turns]
        rows += [row(_int(d["turn_id"]), _float(d.get("score")), d.get("signals"), False) for d in below]
        return rows, {t: m for t, m in found.items() if t in span_turns or t == getattr(answered, "turn_id", None)}

    # -- showing ----------------------------------------------------------------------------------------
    def _show_explanation(
        self, explanation: Explanation, fact_rows: Sequence[RecalledFactRow], turn_rows: Sequence[RecalledTurnRow]
    ) -> None:
        parts = [
            f"<b>Reply in {_escape(explanation.place.name)}</b>",
            short_time(explanation.created_at),
            f"{_escape(explanation.tier)} budgets",
            f"assembled in {explanation.assembly_ms:.0f} ms",
            f"turn {explanation.turn_id}",
        ]
        if explanation.recall_paused:
            parts.append("<b>recall was paused here</b> (no facts or older messages)")
        self.header.setText(" · ".join(parts))
        self.waterfall.set_layers(explanation.layers)
        left_out = left_out_text(explanation)
        self.left_out_label.setText(left_out)
        self.left_out_label.setVisible(bool(left_out))
        self.answered_label.setText(self._answered_html(explanation))
        self.lore_model.set_records(FiredLore(lore, self._matched_in(lore)) for lore in explanation.lore)
        self.dropped_model.set_records(explanation.lore_dropped)
        self.facts_model.set_records(fact_rows)
        self.turns_model.set_records(turn_rows)
        previous = self.previous
        if previous is None:
            self.diff_title.setText("Compared with the reply before")
            self.diff_view.set_placeholder("This is the first reply kept for this place: nothing to compare with.")
            self.diff_model.set_records(())
        else:
            self.diff_title.setText(
                f"Compared with the reply before here ({short_time(previous.created_at)}, turn {previous.turn_id})"
            )
            self.diff_view.set_placeholder("The same layers, lore and facts as the reply before.")
            self.diff_model.set_records(explanation_diff(explanation, previous))
        for view in (self.lore_view, self.dropped_view, self.facts_view, self.turns_view, self.diff_view):
            _fit(view)
        if self.lore_model.rowCount() and not self.lore_view.currentIndex().isValid():
            self.lore_view.setCurrentIndex(self.lore_model.index(0, 0))  # Edit entry works at once
        self._update_pause_button()
        self._update_actions()

    def _spans_in(self, message: SourceMessage, lore: Sequence[ExplainedLore]) -> list[Span]:
        """What fired lore in `message`: recorded spans where there are some, else the keys' occurrences."""
        spans: list[Span] = []
        for entry in lore:
            span = entry.span
            if span is not None:
                if span.source == "message" and span.turn_id == message.turn_id:
                    spans.append((span.start, span.end))
            elif entry.via == "key":
                spans += key_spans(message.content, entry.key)
        return spans

    def highlighted_spans(self) -> list[Span]:
        """The highlighted parts of the answered message (for tests and the accessible description)."""
        if self.explanation is None or self.answered is None:
            return []
        return self._spans_in(self.answered, self.explanation.lore)

    def _answered_html(self, explanation: Explanation) -> str:
        answered = self.answered
        if answered is None:
            return "<i>The message it answered is no longer stored.</i>"
        blocks = [self._message_html(answered, explanation.lore)]
        for turn_id, message in sorted(self.messages.items()):
            if turn_id != answered.turn_id:
                blocks.append(f"<br><i>Earlier:</i> {self._message_html(message, explanation.lore)}")
        return "".join(blocks)

    def _message_html(self, message: SourceMessage, lore: Sequence[ExplainedLore]) -> str:
        head = f"<b>{_escape(message.author.name)}</b> · {short_time(message.created_at)}<br>"
        if message.redacted:
            return head + "<i>(deleted)</i>"
        return head + highlighted_html(message.content, self._spans_in(message, lore))

    def _matched_in(self, lore: ExplainedLore) -> str:
        if lore.via == "constant" or lore.key == "(constant)":
            return "always on (constant)"
        if lore.via == "sticky" or lore.key == "(sticky)":
            return "still active (sticky)"
        if lore.via == "decorator" or lore.key.startswith("(@@"):
            return "@@activate"
        span = lore.span
        answered = self.answered
        if span is not None:
            if span.source == "lore" and span.entry is not None:
                return f"entry {span.entry + 1}'s content (recursion)"
            message = self.messages.get(span.turn_id) if span.turn_id is not None else None
            where = "the name of " if span.source == "author" else ""
            if answered is not None and span.turn_id == answered.turn_id:
                return f"{where}the message it answered"
            if message is not None:
                whose = "your" if message.author.key == OWNER_KEY else f"{message.author.name}'s"
                return f"{where}{whose} message of {short_time(message.created_at)}"
            return "an earlier message"
        if answered is not None and key_spans(answered.content, lore.key):
            return "the message it answered"
        return "an earlier message in the conversation"

    def _update_pause_button(self) -> None:
        explanation, pause = self.explanation, self.pause_view
        if explanation is None or pause is None:
            self.pause_button.setEnabled(False)
            return
        switch = pause.switch("recall", explanation.place.key)
        if switch.paused and switch.source != "here":  # a resume here would not lift it
            by = "its server's switch" if switch.source == "server" else "the everywhere switch"
            self.pause_button.setEnabled(False)
            self.pause_button.setText("Recall paused from above")
            self.pause_button.setToolTip(f"Recall is paused here by {by}: change it in Memory controls")
            return
        paused = switch.paused
        self.pause_button.setEnabled(True)
        self.pause_button.setText("Resume recall here" if paused else "Pause recall here")
        self.pause_button.setToolTip(
            f"{'Let' if paused else 'Stop'} the familiar {'recall' if paused else 'recalling'} facts and older"
            f" messages in {explanation.place.name} (undo with Ctrl+Z)"
        )

    def _update_actions(self) -> None:
        self.forget_button.setEnabled(self.selected_fact() is not None)
        self.forget_action.setEnabled(self.selected_fact() is not None)
        self.edit_lore_button.setEnabled(self.selected_lore() is not None)

    def selected_fact(self) -> FactView | None:
        index = self.facts_view.currentIndex()
        row = index.data(RecordRole) if index.isValid() else None
        return row.fact if isinstance(row, RecalledFactRow) else None

    def selected_lore(self) -> ExplainedLore | None:
        index = self.lore_view.currentIndex()
        row = index.data(RecordRole) if index.isValid() else None
        if isinstance(row, FiredLore):
            return row.lore
        return None

    # -- actions ------------------------------------------------------------------------------------------
    @async_slot()
    async def _on_forget_triggered(self) -> None:
        fact = self.selected_fact()
        if fact is None:
            return
        # No initiator: the change it publishes reloads this pane (the fact shows as forgotten), and so
        # does its Undo.
        await forget_with_preview(self.facade.memory, self.context.undo, self.ops, fact, self.context.window)

    @async_slot()
    async def _on_pause_triggered(self) -> None:
        explanation, pause = self.explanation, self.pause_view
        if explanation is None or pause is None:
            return
        step = control_actions.SwitchStep(
            self.facade.controls,
            "recall",
            explanation.place.key,
            explanation.place.name,
            pause=not pause.paused("recall", explanation.place.key),
            initiator=self,
            settled=self._on_pause_settled,
        )
        outcome = await self.ops.run("change the recall switch", lambda: self.context.undo.perform(step))
        if not isinstance(outcome, Succeeded):
            _log.info("the recall switch was not changed")

    def _on_pause_settled(self, view: PauseView) -> None:
        self.pause_view = view
        self._update_pause_button()

    def _on_edit_lore_triggered(self) -> None:
        lore = self.selected_lore()
        if lore is None:
            return
        if LOREBOOK_PANE in self.context.panes:
            self.navigate_requested.emit(LOREBOOK_PANE, lore.index)
            return
        # No Lorebook pane in this window: the file itself.
        self.lorebook_url = QUrl.fromLocalFile(str(self.facade.home / LOREBOOK_FILE))
        if not QDesktopServices.openUrl(self.lorebook_url):
            self.error_banner.show_message(f"Could not open {self.lorebook_url.toLocalFile()}: open it yourself.")


def explanation_diff(current: Explanation, previous: Explanation) -> list[DiffRow]:
    """What changed from `previous` to `current`: layers' token deltas, lore and facts added or removed,
    lore newly left out."""
    rows: list[DiffRow] = []
    before = {layer.name: layer.tokens for layer in previous.layers}
    for layer in current.layers:
        old = before.get(layer.name, 0)
        if layer.tokens != old:
            delta = layer.tokens - old
            rows.append(DiffRow("layer", layer.name, f"{delta:+,} tokens ({old:,} → {layer.tokens:,})", _sign(delta)))
    old_lore = {lore.index: lore for lore in previous.lore}
    new_lore = {lore.index: lore for lore in current.lore}
    rows += [DiffRow("lore", entry_name(i, e.title), "added", 1) for i, e in new_lore.items() if i not in old_lore]
    rows += [DiffRow("lore", entry_name(i, e.title), "removed", -1) for i, e in old_lore.items() if i not in new_lore]
    old_drops = {d.index for d in previous.lore_dropped}
    rows += [
        DiffRow("dropped", entry_name(d.index, d.title), f"now left out ({d.reason})", -1)
        for d in current.lore_dropped
        if d.index not in old_drops
    ]
    old_facts = {f.fact_id: f for f in previous.facts}
    new_facts = {f.fact_id: f for f in current.facts}
    rows += [DiffRow("fact", f.content, "added", 1) for i, f in new_facts.items() if i not in old_facts]
    rows += [DiffRow("fact", f.content, "removed", -1) for i, f in old_facts.items() if i not in new_facts]
    return rows


_LEFT_OUT_WORDS = {
    "history": ("older message of the conversation", "older messages of the conversation"),
    "reflections": ("reflection", "reflections"),
    "dossiers": ("person's dossier", "people's dossiers"),
    "summary": ("the conversation's summary", "the conversation's summary"),
    "character": ("part of the persona (shortened)", "part of the persona (shortened)"),
}


def left_out_text(explanation: Explanation) -> str:
    """What the other layers' budgets left out, in words (lore and recalled facts have their own tables)."""
    counts: dict[str, int] = {}
    for drop in explanation.dropped:
        if drop.layer not in ("lorebook", "memory"):
            counts[drop.layer] = counts.get(drop.layer, 0) + 1
    parts = []
    for layer, count in counts.items():
        one, many = _LEFT_OUT_WORDS.get(layer, ("item", "items"))
        what = (
            (one if count == 1 else many)
            if one.startswith(("the ", "part "))
            else f"{count} {one if count == 1 else many}"
        )
        parts.append(f"{what} ({layer})")
    return ("Also left out for lack of room: " + "; ".join(parts) + ".") if parts else ""


def _sign(value: float) -> int:
    return 1 if value > 0 else -1


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float | str) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float | str) else 0.0


def _signals(raw: object) -> dict[str, float | None]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): None if v is None else _float(v) for k, v in raw.items()}


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _table(model: QAbstractItemModel, placeholder: str, stretch: int | None = None) -> RecordTableView:
    """A table of the explanation: its rows are of very different heights (it scrolls by pixels)."""
    return RecordTableView(
        placeholder,
        model,
        columns=QHeaderView.ResizeMode.Interactive,
        stretch="last" if stretch is None else stretch,
        per_pixel=True,
    )


def _fit(view: QTableView) -> None:
    """Tall enough for its rows (up to MAX_VISIBLE_ROWS, then it scrolls), or for its placeholder."""
    model = view.model()
    rows = model.rowCount() if model is not None else 0
    view.resizeColumnsToContents()
    header = view.horizontalHeader()
    for column in range(model.columnCount() if model is not None else 0):
        if header.sectionResizeMode(column) != QHeaderView.ResizeMode.Stretch:
            view.setColumnWidth(column, min(view.columnWidth(column), 420))
    height = view.horizontalHeader().sizeHint().height() + 2 * view.frameWidth()
    height += view.verticalHeader().defaultSectionSize() * max(1, min(rows, MAX_VISIBLE_ROWS)) + 4
    view.setFixedHeight(height if rows else height + view.fontMetrics().height() * 2)


def _pane_action(pane: QWidget, text: str, keys: str, slot: Callable[[], object]) -> QAction:
    """A key for the whole pane (wherever the focus is in it)."""
    action = QAction(text, pane)
    action.setShortcut(QKeySequence(keys))
    action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
    action.triggered.connect(slot)
    pane.addAction(action)
    return action


def _titled_row(title: QLabel, button: QPushButton) -> QHBoxLayout:
    row = QHBoxLayout()
    row.addWidget(title)
    row.addStretch(1)
    row.addWidget(button)
    return row
