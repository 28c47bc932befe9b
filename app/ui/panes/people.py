"""People: everyone the familiar has heard, by name, and what it knows of each, place by place.

On the left the people (most recently seen first; type to filter). On the right the chosen person: one
tab per place ("Lantern Club", "DM with bob") with the dossier the familiar wrote about them there, the
facts behind it (the current ones, then those still waiting in the pending queue), and the messages the
chosen fact came from. A fact can be forgotten from here (the preview, then an undoable forget) and a
pending one opened in the pending queue.

Keys: Ctrl+F or / filter, D or Delete forget the chosen fact, O open it in the pending queue.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QAction, QKeySequence, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabBar,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import PersonView
from app.runtime.events import ChangeKind
from app.ui.async_slot import async_slot
from app.ui.dialogs.forget_dialog import forget_with_preview
from app.ui.dialogs.shortcut_sheet import keys_text
from app.ui.local_time import short_day, short_when
from app.ui.models import dossier_facts_model, people_model
from app.ui.models.dossier_facts_model import DossierFactsModel, FactRow, ScopeFacts, kind_text, scopes_of
from app.ui.models.people_model import PeopleModel, person_name
from app.ui.models.roles import RecordRole
from app.ui.panes.base import Pane, PaneContext
from app.ui.theme import scaled_font, section_label, small_label
from app.ui.widgets.record_table import RecordTableView

_log = logging.getLogger(__name__)

MAX_PENDING = 500
NO_ONE_MATCHES = "No one by that name."
NOTHING_YET = "Nothing learned about {name} yet. What they say becomes facts and a dossier here."
NO_DOSSIER = "No dossier written for {name} in {place} yet: the facts below are what it will be written from."
NO_FACT_CHOSEN = "Choose a fact to see the messages it came from."


class PeoplePane(Pane):
    name = "people"
    title = "People"
    watches = frozenset(
        {ChangeKind.FACTS, ChangeKind.DOSSIERS, ChangeKind.TURNS, ChangeKind.PLACES, ChangeKind.FORGETS}
    )
    empty_text = (
        "Nobody yet. People appear here once they talk where the familiar can read: a server channel it is "
        "in, a DM, or the local chat."
    )

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self.people_model = PeopleModel(self)
        self.facts_model = DossierFactsModel(self)
        self._scopes: tuple[ScopeFacts, ...] = ()
        self._person: PersonView | None = None
        self._asked = 0  # which person load is the latest (a quicker click wins)

        # -- the people ----------------------------------------------------------------------------------
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by name (Ctrl+F)")
        self.filter.setClearButtonEnabled(True)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.people_model)
        self.proxy.setFilterKeyColumn(people_model.NAME)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.filter.textChanged.connect(self._on_filter_text_changed)
        self.people_view = RecordTableView(
            NO_ONE_MATCHES,
            self.proxy,
            grid=False,
            wrap=True,
            row_height=24,
            stretch=people_model.NAME,
            left_headers=True,
        )
        self.people_view.setObjectName("people-list")
        header = self.people_view.horizontalHeader()
        header.setSectionResizeMode(people_model.FACTS, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(people_model.LAST_SEEN, QHeaderView.ResizeMode.ResizeToContents)
        self.people_view.selectionModel().currentRowChanged.connect(self._on_people_current_row_changed)

        # -- the chosen person ---------------------------------------------------------------------------
        self.person_name = QLabel()
        self.person_name.setFont(scaled_font(self.font(), 1.3, bold=True))
        self.person_name.setTextFormat(Qt.TextFormat.PlainText)
        self.person_line = small_label("")
        self.scope_tabs = QTabBar()
        self.scope_tabs.setObjectName("people-scopes")
        self.scope_tabs.setExpanding(False)
        self.scope_tabs.setDocumentMode(True)
        self.scope_tabs.currentChanged.connect(self._on_scope_tabs_current_changed)
        self.dossier = QLabel()
        self.dossier.setObjectName("people-dossier")
        self.dossier.setWordWrap(True)
        self.dossier.setTextFormat(Qt.TextFormat.PlainText)
        self.dossier.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.dossier.setFont(scaled_font(self.font(), 1.1))
        self.dossier.setFrameShape(QFrame.Shape.StyledPanel)
        self.dossier.setMargin(8)
        self.dossier_line = small_label("")
        self.facts_heading = section_label("What it is based on")
        self.facts_view = RecordTableView(
            "No facts about them here.",
            self.facts_model,
            grid=False,
            row_height=24,
            stretch=dossier_facts_model.FACT,
            left_headers=True,
        )
        self.facts_view.setObjectName("people-facts")
        facts_header = self.facts_view.horizontalHeader()
        for column in range(1, self.facts_model.columnCount()):
            facts_header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.facts_view.selectionModel().currentRowChanged.connect(self._on_facts_current_row_changed)
        self.sources = QTextBrowser()
        self.sources.setObjectName("people-sources")
        self.sources.setOpenLinks(False)
        self.sources.setMinimumHeight(90)

        def action(text: str, keys: Sequence[str], tip: str, slot: Callable[[], object]) -> QAction:
            made = QAction(text, self)
            made.setShortcuts([QKeySequence(k) for k in keys])
            made.setShortcutContext(Qt.ShortcutContext.WindowShortcut)  # while this pane is shown
            made.setToolTip(f"{tip} ({keys_text(made)})")
            made.setStatusTip(tip)
            made.triggered.connect(slot)
            self.addAction(made)
            return made

        self.filter_action = action("Filter", ["Ctrl+F", "/"], "Filter the people by name", self._focus_filter)
        self.forget_action = action(
            "&Forget…", ["D", "Del"], "Forget the chosen fact: a preview of what goes, then an undoable forget",
            self.forget,
        )  # fmt: skip
        self.open_action = action(
            "&Open in Pending queue", ["O"], "Open the chosen pending fact in the pending queue", self.open_in_pending
        )
        self.forget_button = QPushButton("Forget…")
        self.forget_button.setToolTip(self.forget_action.toolTip())
        self.forget_button.clicked.connect(self.forget)
        self.open_button = QPushButton("Open in Pending queue")
        self.open_button.setToolTip(self.open_action.toolTip())
        self.open_button.clicked.connect(self.open_in_pending)
        for view in (self.facts_view,):
            view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
            view.addAction(self.forget_action)
            view.addAction(self.open_action)

        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.facts_heading)
        buttons.addStretch(1)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.forget_button)

        person = QWidget()
        person_layout = QVBoxLayout(person)
        person_layout.setContentsMargins(12, 0, 0, 0)
        person_layout.setSpacing(6)
        person_layout.addWidget(self.person_name)
        person_layout.addWidget(self.person_line)
        person_layout.addWidget(self.scope_tabs)
        person_layout.addWidget(self.dossier)
        person_layout.addWidget(self.dossier_line)
        person_layout.addLayout(buttons)
        facts_split = QSplitter(Qt.Orientation.Vertical)
        facts_split.setChildrenCollapsible(False)
        facts_split.addWidget(self.facts_view)
        sources_box = QWidget()
        sources_layout = QVBoxLayout(sources_box)
        sources_layout.setContentsMargins(0, 4, 0, 0)
        sources_layout.setSpacing(4)
        sources_layout.addWidget(section_label("Where the chosen fact came from"))
        sources_layout.addWidget(self.sources, 1)
        facts_split.addWidget(sources_box)
        facts_split.setStretchFactor(0, 3)
        facts_split.setStretchFactor(1, 2)
        person_layout.addWidget(facts_split, 1)

        self.nothing = small_label("")
        self.nothing.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.detail = QStackedWidget()
        self.detail.addWidget(person)
        self.detail.addWidget(self.nothing)

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.filter)
        left_layout.addWidget(self.people_view, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(left)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 3)
        # Wide enough for a name as long as "Wisp (this familiar)" beside its counts, at 900 px too.
        left.setMinimumWidth(self.fontMetrics().horizontalAdvance("Wisp (this familiar)  Facts  Last seen") + 24)
        splitter.setSizes([270, 730])
        self.set_body(splitter)
        for first, second in (
            (self.filter, self.people_view),
            (self.people_view, self.scope_tabs),
            (self.scope_tabs, self.facts_view),
            (self.facts_view, self.open_button),
            (self.open_button, self.forget_button),
            (self.forget_button, self.sources),
        ):
            QWidget.setTabOrder(first, second)
        self._sync_actions()

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def person(self) -> PersonView | None:
        return self._person

    @property
    def scopes(self) -> tuple[ScopeFacts, ...]:
        return self._scopes

    def chosen_fact(self) -> FactRow | None:
        index = self.facts_view.currentIndex()
        row = index.data(RecordRole) if index.isValid() else None
        return row if isinstance(row, FactRow) else None

    def choose_person(self, name_or_key: str) -> bool:
        """Select a person by name or key (as a click would); returns whether they are listed."""
        for row in range(self.proxy.rowCount()):
            person = self.proxy.index(row, 0).data(RecordRole)
            if isinstance(person, PersonView) and name_or_key in (person.person.name, person.person.key):
                self.people_view.setCurrentIndex(self.proxy.index(row, 0))
                return True
        return False

    def focus_widget(self) -> QWidget:
        return self.people_view

    async def load(self) -> bool:
        people = await self.facade.memory.people()
        keep = self._person.person.key if self._person is not None else None
        self.people_model.set_records(people)
        if not people:
            self._person = None
            return False
        rows = [self.proxy.mapToSource(self.proxy.index(r, 0)).row() for r in range(self.proxy.rowCount())]
        chosen = next((people[r] for r in rows if people[r].person.key == keep), None)
        chosen = chosen or next((people[r] for r in rows if not people[r].is_self), None)
        chosen = chosen or (people[rows[0]] if rows else None)
        if chosen is not None:
            self._select_person_row(chosen)
            await self._load_person(chosen)
        else:
            self._show_nothing(NO_ONE_MATCHES)
        return True

    def _select_person_row(self, person: PersonView) -> None:
        source_row = self.people_model.row_of(person.person.key)
        if source_row is None:
            return
        index = self.proxy.mapFromSource(self.people_model.index(source_row, 0))
        selection = self.people_view.selectionModel()
        selection.blockSignals(True)  # the load that follows is this one's, not a click's
        try:
            selection.setCurrentIndex(
                index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
            )
        finally:
            selection.blockSignals(False)
        self.people_view.viewport().update()

    async def _load_person(self, person: PersonView) -> None:
        """Read the person's dossiers, their pending facts and every fact's sources; show them."""
        self._asked += 1
        asked = self._asked
        memory = self.facade.memory
        key = person.person.key
        dossiers = await memory.dossiers(key)
        pending = await memory.pending(include_snoozed=True, subject=key, limit=MAX_PENDING, with_related=False)
        facts = [*(f for d in dossiers.dossiers for f in d.facts), *(i.fact for i in pending.items)]
        sources = await memory.sources(sorted({t for f in facts for t in f.source_turn_ids}))
        if asked != self._asked:
            return  # another person was chosen meanwhile
        self._person = person
        self._show_person(person, scopes_of(dossiers, [i.fact for i in pending.items], sources))

    # -- showing ----------------------------------------------------------------------------------------
    def _show_nothing(self, text: str) -> None:
        self.nothing.setText(text)
        self.detail.setCurrentWidget(self.nothing)
        self.facts_model.clear()
        self._sync_actions()

    def _show_person(self, person: PersonView, scopes: tuple[ScopeFacts, ...]) -> None:
        current = self._current_scope()
        keep_scope = current.scope.key if current is not None else None
        self._scopes = scopes
        name = person_name(person)
        if not scopes:
            self._show_nothing(NOTHING_YET.format(name=person.person.name))
            return
        self.detail.setCurrentIndex(0)
        self.person_name.setText(name)
        facts = sum(1 for s in scopes for r in s.rows if not r.is_pending)
        waiting = sum(1 for s in scopes for r in s.rows if r.is_pending)
        self.person_line.setText(
            f"first seen {short_day(person.first_seen)} · last seen {short_when(person.last_seen)} · "
            f"{facts} current fact{'s' if facts != 1 else ''}"
            + (f" · {waiting} waiting in the pending queue" if waiting else "")
        )
        self.scope_tabs.blockSignals(True)
        try:
            while self.scope_tabs.count():
                self.scope_tabs.removeTab(0)
            for scope in scopes:
                self.scope_tabs.addTab(scope.scope.name)
                self.scope_tabs.setTabToolTip(self.scope_tabs.count() - 1, scope.scope.key)
            index = next((i for i, s in enumerate(scopes) if s.scope.key == keep_scope), 0)
            self.scope_tabs.setCurrentIndex(index)
        finally:
            self.scope_tabs.blockSignals(False)
        self._show_scope(index)

    def _current_scope(self) -> ScopeFacts | None:
        index = self.scope_tabs.currentIndex()
        return self._scopes[index] if 0 <= index < len(self._scopes) else None

    def _show_scope(self, index: int) -> None:
        if not 0 <= index < len(self._scopes):
            return
        scope = self._scopes[index]
        person = self._person.person.name if self._person is not None else "them"
        if scope.dossier:
            self.dossier.setText(scope.dossier)
            self.dossier_line.setText(
                f"The familiar's dossier on {person} in {scope.scope.name}"
                + (f", updated {short_when(scope.updated_at)}" if scope.updated_at else "")
                + ". It is recalled only there."
            )
        else:
            self.dossier.setText(NO_DOSSIER.format(name=person, place=scope.scope.name))
            self.dossier_line.setText("")
        keep = self.chosen_fact()
        self.facts_model.set_records(scope.rows)
        self.facts_heading.setText(f"What it is based on ({len(scope.rows)})")
        row = self.facts_model.row_of(keep.fact.id) if keep is not None else None
        self.facts_view.setCurrentIndex(self.facts_model.index(row or 0, 0))
        self._show_sources()

    def _show_sources(self) -> None:
        chosen = self.chosen_fact()
        self._sync_actions()
        if chosen is None:
            self.sources.setPlainText(NO_FACT_CHOSEN)
            return
        muted = self.palette().color(QPalette.ColorRole.PlaceholderText).name()
        now = datetime.now(UTC)
        parts = [
            f"<p><b>{html.escape(chosen.fact.content)}</b><br>"
            f'<span style="color:{muted}">{html.escape(kind_text(chosen))} · learned '
            f"{short_when(chosen.fact.created_at, now=now)}</span></p>"
        ]
        if not chosen.sources:
            parts.append(f'<p style="color:{muted}">No source message: it was typed in, imported or dreamt up.</p>')
        for source in chosen.sources:
            text = (
                html.escape(" ".join(source.content.split()))
                if not source.redacted and source.content.strip()
                else f'<i style="color:{muted}">(the message was erased)</i>'
            )
            parts.append(
                f'<p><b>{html.escape(source.author.name)}</b> <span style="color:{muted}">in '
                f"{html.escape(source.place.name)} · {short_when(source.created_at, now=now)}</span></p>"
                f'<p style="margin-left:16px; margin-top:2px">{text}</p>'
            )
        self.sources.setHtml("".join(parts))

    def _sync_actions(self) -> None:
        chosen = self.chosen_fact() if self.detail.currentIndex() == 0 else None
        self.forget_action.setEnabled(chosen is not None)
        self.forget_button.setEnabled(chosen is not None)
        can_open = chosen is not None and chosen.is_pending
        self.open_action.setEnabled(can_open)
        self.open_button.setEnabled(can_open)

    # -- acting -----------------------------------------------------------------------------------------
    @async_slot()
    async def forget(self) -> None:
        chosen = self.chosen_fact()
        if chosen is None:
            return
        # initiator None: the change the forget publishes (and its undo's) reloads this pane.
        await forget_with_preview(
            self.facade.memory, self.context.undo, self.ops, chosen.fact, self.context.window, initiator=None
        )

    def open_in_pending(self) -> None:
        chosen = self.chosen_fact()
        if chosen is not None and chosen.is_pending:
            self.navigate_requested.emit("pending", chosen.fact.id)

    def _focus_filter(self) -> None:
        self.filter.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter.selectAll()

    # -- signals -----------------------------------------------------------------------------------------
    def _on_filter_text_changed(self, text: str) -> None:
        self.proxy.setFilterFixedString(text.strip())

    def _on_people_current_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        person = current.data(RecordRole) if current.isValid() else None
        if isinstance(person, PersonView):
            self._choose(person)

    @async_slot()
    async def _choose(self, person: PersonView) -> None:
        await self.ops.run(f"read what it knows about {person.person.name}", lambda: self._load_person(person))

    def _on_scope_tabs_current_changed(self, index: int) -> None:
        self._show_scope(index)

    def _on_facts_current_row_changed(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        self._show_sources()
