"""Index health: the messages and facts search indexes and the facts' embeddings, live.

A headline says in one sentence whether anything needs the user (green / amber / red). The measures
table has one column per index: its state, what it holds against history.db, what waits and for how
long, the last commit, commits, retries (a retry in progress shows its attempt), the last lock a file
refusal caused and how many tries it took, failed commits and the last error, removed documents
awaiting compaction, size on disk. The embeddings' vectors per model show which one reads use and what
a backend change left behind (a model mismatch). Below, what happened to the indexes while the window
was open.

Live: each IndexHealthReport from the bridge is folded into the last status at once (a lock's attempt
number, a retry); the counts history.db knows are read again a second after the last change. Rebuild
indexes and Re-embed facts run with determinate progress and Cancel; both build beside what answers now,
so searches keep answering from the old index until the new one is complete, and a cancel leaves it
exactly as it was. Neither changes what the familiar knows, so there is nothing to undo.

Keys: Ctrl+R rebuild, Ctrl+E re-embed, F5 refresh (while the pane shows, wherever the focus is).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Sequence
from datetime import UTC, datetime
from typing import Final, TypeVar

from PySide6.QtCore import QAbstractItemModel, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import BackgroundTaskView, EmbeddingStatusView, IndexStatusView
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind, IndexHealthReport, MemoryChanged
from app.runtime.index_health import with_report
from app.ui.async_slot import async_slot
from app.ui.models.base import RecordTableModel
from app.ui.models.index_health import (
    INDEX_ORDER,
    REBUILT_EVENT,
    EmbeddingModelsModel,
    IndexEvent,
    IndexEventsModel,
    IndexMetricsModel,
    Level,
    ago,
    clock,
    embedding_level,
    health_events,
    index_level,
    index_title,
    metric_rows,
    stopped_tasks,
)
from app.ui.ops import Cancelled, Failed, Succeeded
from app.ui.panes.base import Pane, PaneContext
from app.ui.theme import dot_style, section_label, small_label
from app.ui.widgets.record_table import RecordTableView, SelectionBehavior, Stretch

_log = logging.getLogger(__name__)

T = TypeVar("T")

REBUILD_TEXT: Final = "Rebuild indexes"
REEMBED_TEXT: Final = "Re-embed facts"
REFRESH_TEXT: Final = "Refresh"
REBUILD_KEY: Final = "Ctrl+R"
REEMBED_KEY: Final = "Ctrl+E"
REFRESH_KEY: Final = "F5"
RELOAD_DELAY_MS: Final = 1_000  # changes (a conversation, an import, a lock's retries) make one reload a second
LIVENESS_MS: Final = 3_000  # how often, while the pane shows, it looks whether a background loop has stopped
CLOCK_MS: Final = 30_000  # "3 min ago" is rewritten this often while the pane shows
DOT_SIZE: Final = 14
EVENTS_PLACEHOLDER: Final = (
    "Nothing has happened to the indexes since the window opened. Locks, retries and rebuilds appear here."
)
MODELS_PLACEHOLDER: Final = "No fact has a vector yet."
MODELS_PLACEHOLDER_OFF: Final = (
    "Embeddings are off. Set [providers.embedding] backend in character.toml to hash or fastembed (and add"
    ' "fact_embedding" to [providers.memory] projectors) to recall facts by meaning too.'
)
ROW_HEIGHT: Final = 22
REBUILD_TIP: Final = (
    "Build the messages and facts indexes again from history.db, beside the old ones: searches use the old ones"
    " until the new ones are complete, and Cancel leaves them as they were."
)
REBUILD_ELSEWHERE_TIP: Final = (
    "Another Familiar process writes these indexes: if it is a window, rebuild them there; if it is"
    " `familiar run --headless`, stop it first."
)
REBUILD_CANCELLED: Final = "Rebuild cancelled: the old indexes answer exactly as before."
REEMBED_CANCELLED: Final = "Re-embed cancelled: the old vectors are used exactly as before."
WORDS: Final = {"turns": "messages", "facts": "facts"}


def headline(
    views: Sequence[IndexStatusView],
    embeddings: EmbeddingStatusView | None,
    tasks: Sequence[BackgroundTaskView] = (),
) -> tuple[Level, str]:
    """The one sentence at the top: the worst thing, and what to do about it (if anything). A background
    loop that stopped is the worst: nothing else catches up while it is stopped."""
    stopped = list(stopped_tasks(tasks).values())
    if stopped:
        said = "; ".join(f"{task.what} ({(task.problem or '').removeprefix('stopped: ')})" for task in stopped)
        does = "what they do waits" if len(stopped) > 1 else "what it does waits"
        return (
            Level.FAILING,
            f"Stopped: {said}. Until Familiar is started again (quit it and open it again) {does};"
            " history.db keeps everything meanwhile.",
        )
    worst, what = Level.OK, "All indexes are up to date: searches and recall see everything in history.db."
    for view in views:
        level = index_level(view)
        if level.rank > worst.rank:
            worst, what = level, _index_sentence(view)
    if embeddings is not None:
        level = embedding_level(embeddings)
        if level.rank > worst.rank:
            worst, what = level, _embedding_sentence(embeddings)
    if worst is Level.OK and not all(v.written_here for v in views):
        what = "Another Familiar process writes these indexes; this window reads them and shows its health."
    return worst, what


def _index_sentence(view: IndexStatusView) -> str:
    title = index_title(view.name).lower()
    if view.health_state == "locked":
        return (
            f"The {title} index is locked: a file is refused (often an antivirus scan). Retrying"
            f" (attempt {view.locked_attempts}); searches read history.db meanwhile, and it catches up by itself."
        )
    if view.live_attempt:
        return f"A commit to the {title} index was refused ({view.last_error}); retrying (attempt {view.live_attempt})."
    if view.health_state == "rebuilding":
        return f"The {title} index is being rebuilt beside the old one, which answers until the new one is complete."
    if view.state == "failing":
        return (
            f"The {title} index cannot take commits: {view.last_error}. history.db keeps everything;"
            f" if this goes on, press {REBUILD_TEXT}."
        )
    waiting = f"The {title} index is catching up: {view.to_add + view.to_remove:,} documents waiting"
    if view.backlog_since is None:
        return waiting + "."
    return f"{waiting}, the oldest for {ago(view.backlog_since, datetime.now(UTC)).removesuffix(' ago')}."


def _embedding_sentence(view: EmbeddingStatusView) -> str:
    if any(m.reembedding for m in view.models):
        return "A re-embed is running, or was interrupted (the next one clears what it left)."
    if view.state == "failing":
        return (
            f"{view.missing:,} facts have no meaning vector and nothing makes them: press {REEMBED_TEXT},"
            ' or add "fact_embedding" to [providers.memory] projectors in character.toml.'
        )
    return f"Embedding new facts with {view.model}: {view.missing:,} to go."


def _mismatch_text(view: EmbeddingStatusView | None) -> str:
    if view is None or not view.unused_vectors:
        return ""
    if view.model is None:
        return (
            f"Embeddings are off; {view.unused_vectors:,} vectors of earlier models are kept but not used."
            " Set [providers.embedding] backend in character.toml to use embeddings again."
        )
    return (
        f"Model mismatch: {view.unused_vectors:,} vectors of earlier models are not used; reads use {view.model}"
        f" only, which covers {view.covered:,} of {view.facts:,} current facts."
        + (f" {REEMBED_TEXT} gives every fact a vector of it." if view.missing else "")
    )


def _update(model: RecordTableModel[T], records: Sequence[T], key: Callable[[T], Hashable]) -> None:
    """Refresh rows in place when the same rows are there (the selection and the scroll stay), else reset."""
    if [key(r) for r in model.records] != [key(r) for r in records]:
        model.set_records(records)
        return
    for old, new in zip(model.records, records, strict=True):
        if old != new:
            model.replace_record(new)


def _text_width(view: QWidget, sample: str) -> int:
    return view.fontMetrics().horizontalAdvance(sample) + 12


def _table(
    placeholder: str,
    model: QAbstractItemModel,
    stretch: Stretch = None,
    behavior: SelectionBehavior = SelectionBehavior.SelectRows,
) -> RecordTableView:
    """A table of figures: no stripes, no grid, rows of one size, headers at the left as the figures are."""
    return RecordTableView(
        placeholder,
        model,
        behavior=behavior,
        alternating=False,
        grid=False,
        row_height=ROW_HEIGHT,
        stretch=stretch,
        left_headers=True,
    )


class IndexPane(Pane):
    name = "index"
    title = "Index health"
    watches = frozenset({ChangeKind.TURNS, ChangeKind.FACTS, ChangeKind.EMBEDDINGS})
    empty_text = "No index to show."

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self._views: dict[str, IndexStatusView] = {}
        self._embeddings: EmbeddingStatusView | None = None
        self._tasks: tuple[BackgroundTaskView, ...] = ()
        self._liveness_task: asyncio.Task[None] | None = None
        self._reports: dict[str, IndexHealthReport] = {}  # the last health of each index, to tell what changed
        self._embeddings_stale = True  # facts or vectors changed since the embeddings were read
        # Indexes whose rebuild this pane listed itself (its live "ready" report may come after, held back by
        # the bridge): that report then lists it no second time.
        self._rebuilt_listed: set[str] = set()

        self.metrics_model = IndexMetricsModel(self)
        self.models_model = EmbeddingModelsModel(self)
        self.events_model = IndexEventsModel(parent=self)

        self.headline_dot = QLabel()
        self.headline_dot.setFixedSize(DOT_SIZE, DOT_SIZE)
        self.headline_label = QLabel()
        self.headline_label.setWordWrap(True)
        self.headline_label.setTextFormat(Qt.TextFormat.PlainText)
        self.headline_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        head = QHBoxLayout()
        head.setSpacing(8)
        head.addWidget(self.headline_dot, 0, Qt.AlignmentFlag.AlignTop)
        head.addWidget(self.headline_label, 1)

        self.rebuild_action = self._action(REBUILD_TEXT, REBUILD_KEY, self._on_rebuild_triggered)
        self.reembed_action = self._action(REEMBED_TEXT, REEMBED_KEY, self._on_reembed_triggered)
        self.refresh_action = self._action(REFRESH_TEXT, REFRESH_KEY, self.reload_all)
        self.rebuild_button = self._button(self.rebuild_action, REBUILD_TIP)
        self.reembed_button = self._button(self.reembed_action, "")
        self.refresh_button = self._button(self.refresh_action, "Read every figure again now.")
        buttons = QHBoxLayout()
        buttons.addWidget(self.rebuild_button)
        buttons.addWidget(self.reembed_button)
        buttons.addStretch(1)
        buttons.addWidget(self.refresh_button)
        self.result_label = small_label("")
        self.result_label.setVisible(False)

        self.metrics_view = _table("", self.metrics_model, behavior=SelectionBehavior.SelectItems)
        header = self.metrics_view.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        for column in range(1, self.metrics_model.columnCount()):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)

        self.models_view = _table(MODELS_PLACEHOLDER, self.models_model, stretch=0)
        models_header = self.models_view.horizontalHeader()
        for column, sample in ((1, "99,999 facts"), (2, "re-embedding")):
            models_header.setSectionResizeMode(column, QHeaderView.ResizeMode.Fixed)
            self.models_view.setColumnWidth(column, _text_width(self.models_view, sample))
        self.mismatch_label = small_label("")
        self.mismatch_label.setVisible(False)

        self.events_view = _table(EVENTS_PLACEHOLDER, self.events_model, stretch="last")
        self.events_view.setColumnWidth(0, _text_width(self.events_view, "23:59:59  "))
        self.events_view.setColumnWidth(1, _text_width(self.events_view, "Messages  "))
        self._stick_to_bottom = True
        self.events_model.rowsAboutToBeInserted.connect(self._on_events_rows_about_to_be_inserted)
        self.events_model.rowsInserted.connect(self._on_events_rows_inserted)

        models_section = _section(section_label("Embedding vectors by model"), self.mismatch_label, self.models_view)
        events_section = _section(section_label("What happened"), self.events_view)
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.setChildrenCollapsible(False)
        lower.addWidget(models_section)
        lower.addWidget(events_section)
        lower.setStretchFactor(0, 1)
        lower.setStretchFactor(1, 1)
        self.metrics_view.setFixedHeight(self._metrics_height())  # every measure, no scroll bar

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        layout.addLayout(head)
        layout.addLayout(buttons)
        layout.addWidget(self.result_label)
        layout.addWidget(_section(section_label("Per index"), self.metrics_view))
        layout.addWidget(lower, 1)
        self.set_body(body)
        for first, second in (
            (self.rebuild_button, self.reembed_button),
            (self.reembed_button, self.refresh_button),
            (self.refresh_button, self.metrics_view),
            (self.metrics_view, self.models_view),
            (self.models_view, self.events_view),
        ):
            QWidget.setTabOrder(first, second)

        self._reload_timer = QTimer(self)
        self._reload_timer.setSingleShot(True)
        self._reload_timer.setInterval(RELOAD_DELAY_MS)
        self._reload_timer.timeout.connect(self.refresh)
        self._clock = QTimer(self)
        self._clock.setInterval(CLOCK_MS)
        self._clock.timeout.connect(self._on_clock_timeout)
        self._clock.start()
        self._liveness = QTimer(self)
        self._liveness.setInterval(LIVENESS_MS)
        self._liveness.timeout.connect(self._on_liveness_timeout)
        self._liveness.start()
        context.bridge.index_health.connect(self._on_bridge_index_health)
        context.bridge.memory_changed.connect(self._on_bridge_memory_changed_kinds)
        self.ops.busy_changed.connect(self._on_ops_busy_changed)
        self._render()

    def _metrics_height(self) -> int:
        """Every measure without a scroll bar: the table needs no more than that."""
        frame = 2 * self.metrics_view.frameWidth()
        header = self.metrics_view.horizontalHeader().sizeHint().height()
        return header + frame + ROW_HEIGHT * self.metrics_model.rowCount() + 2

    def _action(self, text: str, key: str, slot: Callable[[], object]) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(key))
        # Active while the pane shows (Qt ignores the shortcuts of a hidden widget), wherever the focus is.
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    def _button(self, action: QAction, tooltip: str) -> QPushButton:
        button = QPushButton(action.text())
        button.clicked.connect(action.trigger)
        self._set_tip(button, action, tooltip)
        return button

    @staticmethod
    def _set_tip(button: QPushButton, action: QAction, tooltip: str) -> None:
        key = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
        button.setToolTip(f"{tooltip} ({key})" if tooltip else f"({key})")

    def focus_widget(self) -> QWidget:
        return self.metrics_view

    # -- loading ---------------------------------------------------------------------------------------
    async def load(self) -> bool:
        """Every index's status; the embeddings' too when facts or vectors changed (a conversation changes
        only messages, and the embeddings' figures cost more to read)."""
        if self._embeddings_stale or self._embeddings is None:
            self._embeddings_stale = False
            try:
                indexes, embeddings = await asyncio.gather(
                    self.facade.indexes.status(), self.facade.indexes.embeddings()
                )
            except BaseException:
                self._embeddings_stale = True
                raise
            self._embeddings = embeddings
        else:
            indexes = await self.facade.indexes.status()
        self._note_tasks(await self.facade.indexes.tasks())
        self._views = {v.name: v for v in indexes}
        for view in indexes:
            self._reports.setdefault(view.name, _report_of(view))
        self._render()
        return True

    def reload_all(self) -> None:
        """Read every figure again now (F5)."""
        self._embeddings_stale = True
        self.refresh()

    def _on_bridge_memory_changed_kinds(self, change: MemoryChanged) -> None:
        if change.kinds & {ChangeKind.FACTS, ChangeKind.EMBEDDINGS}:
            self._embeddings_stale = True

    def mark_stale(self) -> None:
        """A visible pane reloads a second after a change, once for all the changes of that second (a
        conversation, or a lock retried every few hundred milliseconds, is many changes)."""
        if not self.isVisible():
            super().mark_stale()
        elif not self._reload_timer.isActive():
            self._reload_timer.start()

    def _render(self) -> None:
        now = datetime.now(UTC)
        views = [self._views[name] for name in INDEX_ORDER if name in self._views]
        embeddings = self._embeddings
        if embeddings is not None:
            _update(self.metrics_model, metric_rows(views, embeddings, now, self._tasks), lambda r: r.key)
            _update(self.models_model, embeddings.models, lambda m: (m.model, m.reembedding))
            self.metrics_view.setFixedHeight(self._metrics_height())
            self.models_view.set_placeholder(MODELS_PLACEHOLDER if embeddings.model else MODELS_PLACEHOLDER_OFF)
        level, text = headline(views, embeddings, self._tasks)
        self.headline_dot.setStyleSheet(dot_style(level.colour, DOT_SIZE))
        self.headline_label.setText(text)
        mismatch = _mismatch_text(embeddings)
        self.mismatch_label.setText(mismatch)
        self.mismatch_label.setVisible(bool(mismatch))
        self._update_actions(views, embeddings)

    def _update_actions(self, views: Sequence[IndexStatusView], embeddings: EmbeddingStatusView | None) -> None:
        elsewhere = not all(v.written_here for v in views)
        self.rebuild_action.setEnabled(not elsewhere and not self.ops.busy)
        self.rebuild_button.setEnabled(self.rebuild_action.isEnabled())
        self._set_tip(self.rebuild_button, self.rebuild_action, REBUILD_ELSEWHERE_TIP if elsewhere else REBUILD_TIP)
        model = embeddings.model if embeddings is not None else None
        self.reembed_action.setEnabled(model is not None and not self.ops.busy)
        self.reembed_button.setEnabled(self.reembed_action.isEnabled())
        self._set_tip(
            self.reembed_button,
            self.reembed_action,
            (
                f"Compute every current fact's meaning vector again with {model}: the old vectors answer until"
                " the new ones are complete, and Cancel leaves them as they were."
            )
            if model is not None
            else "Embeddings are off: set [providers.embedding] backend in character.toml to hash or fastembed.",
        )

    def _on_ops_busy_changed(self, _busy: bool) -> None:
        self._update_actions([self._views[n] for n in INDEX_ORDER if n in self._views], self._embeddings)

    # -- live ------------------------------------------------------------------------------------------
    def _on_bridge_index_health(self, report: IndexHealthReport) -> None:
        before = self._reports.get(report.name)
        self._reports[report.name] = report
        found = health_events(before, report)
        if report.state == "rebuilding":
            self._rebuilt_listed.discard(report.name)  # a new rebuild: its end is listed when it comes
        elif report.name in self._rebuilt_listed and any(e.text == REBUILT_EVENT for e in found):
            self._rebuilt_listed.discard(report.name)
            found = [e for e in found if e.text != REBUILT_EVENT]  # listed already, when the rebuild returned
        self.events_model.extend(found)
        view = self._views.get(report.name)
        if view is not None:
            self._views[report.name] = with_report(view, report)
            self._render()
        self.mark_stale()  # the figures history.db knows follow a moment later

    def _on_clock_timeout(self) -> None:
        if self.isVisible() and self._views:
            self._render()

    def _on_liveness_timeout(self) -> None:
        if self.isVisible() and self.is_loaded and self._liveness_task is None:
            self._liveness_task = self._check_tasks()

    @async_slot()
    async def _check_tasks(self) -> None:
        """A stopped loop shows within LIVENESS_MS, without waiting for a change to make the pane reload."""
        try:
            tasks = await self.facade.indexes.tasks()
        except FamiliarError as error:
            _log.info("could not read the background loops: %s", error)
            return
        finally:
            self._liveness_task = None
        if self._note_tasks(tasks):
            self._render()

    def _note_tasks(self, tasks: Sequence[BackgroundTaskView]) -> bool:
        """Keep the loops' state; a loop newly stopped goes into "What happened". Whether anything changed."""
        before = stopped_tasks(self._tasks)
        now = datetime.now(UTC)
        self.events_model.extend(
            [
                IndexEvent(now, task.name, f"stopped: {task.what}", Level.FAILING, task.problem)
                for name, task in stopped_tasks(tasks).items()
                if name not in before
            ]
        )
        changed = tuple(tasks) != self._tasks
        self._tasks = tuple(tasks)
        return changed

    def _on_events_rows_about_to_be_inserted(self) -> None:
        scroll_bar = self.events_view.verticalScrollBar()
        self._stick_to_bottom = scroll_bar.value() >= scroll_bar.maximum()

    def _on_events_rows_inserted(self) -> None:
        if self._stick_to_bottom:
            self.events_view.scrollToBottom()

    # -- actions ---------------------------------------------------------------------------------------
    def _on_rebuild_triggered(self) -> None:
        if self.rebuild_action.isEnabled():
            self._rebuild()

    def _on_reembed_triggered(self) -> None:
        if self.reembed_action.isEnabled():
            self._reembed()

    @async_slot()
    async def _rebuild(self) -> None:
        seen = len(self.events_model.records)
        outcome = await self.ops.run_with_progress(
            "rebuild the indexes",
            lambda report: self.facade.indexes.rebuild(report),
            label="Rebuilding the indexes",
            blocking=True,
            busy=(self.rebuild_button, self.reembed_button),
        )
        if isinstance(outcome, Succeeded):
            counts = ", ".join(f"{n:,} {WORDS.get(name, name)}" for name, n in outcome.value.items())
            self._show_result(f"Rebuilt at {clock(datetime.now(UTC))}: {counts}.")
            # The live reports say it too, unless the bridge folded the rebuilding one into the next.
            said = {e.index for e in self.events_model.records[seen:] if e.text == REBUILT_EVENT}
            listed = [name for name in outcome.value if name in INDEX_ORDER and name not in said]
            self._rebuilt_listed.update(listed)
            self.events_model.extend([IndexEvent(datetime.now(UTC), name, REBUILT_EVENT, Level.OK) for name in listed])
        elif isinstance(outcome, Cancelled):
            self._show_result(REBUILD_CANCELLED)
        elif isinstance(outcome, Failed):
            self._show_result("The rebuild did not finish (see above); the old indexes answer as before.")
        self.reload_all()

    @async_slot()
    async def _reembed(self) -> None:
        outcome = await self.ops.run_with_progress(
            "re-embed the facts",
            lambda report: self.facade.indexes.reembed(report, initiator=self),
            label="Re-embedding facts",
            blocking=True,
            busy=(self.rebuild_button, self.reembed_button),
        )
        if isinstance(outcome, Succeeded):
            self._show_result(f"Re-embedded at {clock(datetime.now(UTC))}: {outcome.value:,} facts.")
        elif isinstance(outcome, Cancelled):
            self._show_result(REEMBED_CANCELLED)
        elif isinstance(outcome, Failed):
            self._show_result("The re-embed did not finish (see above); the old vectors are used as before.")
        self.reload_all()

    def _show_result(self, text: str) -> None:
        self.result_label.setText(text)
        self.result_label.setVisible(True)

    @property
    def views(self) -> dict[str, IndexStatusView]:
        """The last status of each search index shown (tests and the screenshot look at it)."""
        return dict(self._views)

    @property
    def embeddings(self) -> EmbeddingStatusView | None:
        return self._embeddings

    @property
    def tasks(self) -> tuple[BackgroundTaskView, ...]:
        """The background loops as last read."""
        return self._tasks


def _report_of(view: IndexStatusView) -> IndexHealthReport:
    """The health a status read shows, as a report: what the first live report is compared with."""
    return IndexHealthReport(
        name=view.name,
        commits=view.commits,
        documents_committed=view.documents_committed,
        retries=view.retries,
        live_attempt=view.live_attempt,
        failures=view.failures,
        last_error=view.last_error,
        pending=view.pending,
        lag=view.lag,
        awaiting_purge=view.awaiting_purge,
        state=view.health_state,
        locked_attempts=view.locked_attempts,
        last_commit_at=view.last_commit_at,
        backlog_since=view.backlog_since,
        recovered_after=view.recovered_after,
        recovered_at=view.recovered_at,
    )


def _section(heading: QLabel, *widgets: QWidget) -> QWidget:
    """A heading over a table (and what goes with it), as one splitter child."""
    section = QWidget()
    layout = QVBoxLayout(section)
    layout.setContentsMargins(0, 4, 0, 4)
    layout.setSpacing(4)
    layout.addWidget(heading)
    for widget in widgets[:-1]:
        layout.addWidget(widget)
    layout.addWidget(widgets[-1], 1)
    return section
