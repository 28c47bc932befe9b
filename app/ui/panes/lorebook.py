"""The lorebook editor: every entry of lorebook.toml in a table, one entry in a side editor, a tester.

The pane edits a draft of the book (the entries as loaded, with the edits made since); every edit, bulk
or not, is one undo step (Ctrl+Z / Ctrl+Shift+Z) and Save (Ctrl+S) writes the draft against the revision
it was loaded at. A change to the file on disk made meanwhile (another editor, a text editor) is noticed
within about a second (the runtime's change broadcast, ChangeKind.LOREBOOK_FILE): with nothing unsaved the
book is simply read again; with unsaved edits a bar offers Reload (drop the edits) or Merge (keep both where
they do not touch the same entry), and a save never writes over it.

Keys: Ctrl+F filter (words, title:, key:, content:, is:disabled, is:lint...), Ctrl+N new entry, Del
delete the selected entries, Ctrl+E / Ctrl+D enable / disable them, Ctrl+S save, Ctrl+T the tester,
Ctrl+Enter in the tester runs it, F2 (or Enter in the table) edits the entry's title.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QItemSelectionModel, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.views import (
    ImportPreview,
    LoreBookSettings,
    LoreBookView,
    LoreEntryView,
    LoreFiredView,
    LoreTrial,
)
from app.runtime.errors import FamiliarError, LoreConflictError
from app.runtime.events import ChangeKind
from app.ui.async_slot import async_slot
from app.ui.dialogs.book_settings_dialog import BookSettingsDialog
from app.ui.dialogs.lore_import_dialog import ImportDialog
from app.ui.dialogs.modal import accepted, ask_int, ask_item, ask_text, choose_file_to_open, choose_file_to_save
from app.ui.models.lore_model import COLUMN_NAMES, TITLE_COLUMN, LoreTableModel
from app.ui.models.lore_rows import LoreRow, make_row
from app.ui.ops import Failed, Succeeded
from app.ui.panes.base import Pane, PaneContext
from app.ui.state.lore_draft import DraftStep, LoreDraft, Snapshot, to_import, with_key, without_key
from app.ui.theme import (
    HINT_BACKGROUND,
    HINT_BORDER,
    colours,
    small_label,
)
from app.ui.widgets.lore_entry_editor import LoreEntryEditor
from app.ui.widgets.lore_tester import LoreTester
from app.ui.widgets.menu_button import MenuButton
from app.ui.widgets.record_table import RecordTableView
from app.ui.widgets.timed_effects import TimedEffectsPanel

_log = logging.getLogger(__name__)

LINT_SETTLE_MS = 500
FILTER_HELP = (
    "Filter: words match the title, keys or content; title:, key:, content: look in one field; "
    'is:enabled, is:disabled, is:constant, is:lint, is:new; "quoted words" (Ctrl+F)'
)
EXPORT_FORMATS = (
    ("st", "SillyTavern World Info (*.json)"),
    ("ccv2", "Character Card V2 character book (*.json)"),
    ("ccv3", "Character Card V3 lorebook (*.json)"),
)
SET_FIELDS: tuple[tuple[str, str, str], ...] = (  # (field, label, kind)
    ("priority", "Priority", "int"),
    ("scan_depth", "Scan depth (-1: the book's)", "depth"),
    ("probability", "Probability (%)", "int"),
    ("group", "Inclusion group", "text"),
    ("sticky", "Sticky (messages)", "int"),
    ("cooldown", "Cooldown (messages)", "int"),
    ("delay", "Delay (messages)", "int"),
    ("constant", "Constant", "bool"),
    ("case_sensitive", "Match case", "tristate"),
    ("whole_words", "Whole words", "tristate"),
)
EMPTY_BOOK = "No entries yet. New entry (Ctrl+N) adds one; Import… brings in SillyTavern World Info or a card's book."
NO_MATCH = "No entries match the filter. Clear it (Esc in the filter) to see all."
BAR_STYLE = f"background: {HINT_BACKGROUND}; border: 1px solid {HINT_BORDER}; border-radius: 4px; padding: 6px;"


# -- the pane ---------------------------------------------------------------------------------------------
class LorebookPane(Pane):
    name = "lorebook"
    title = "Lorebook"
    watches = frozenset({ChangeKind.LORE})
    disk_watches = frozenset({ChangeKind.LOREBOOK_FILE})
    empty_text = "No lorebook yet."

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self.draft = LoreDraft()
        self._lint: dict[int, tuple[str, ...]] = {}
        self._fired: dict[int, LoreFiredView] = {}

        # toolbar
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter: words, title:, key:, content:, is:disabled…  (Ctrl+F)")
        self.filter.setToolTip(FILTER_HELP)
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._on_filter)
        self.count_label = small_label("")
        self.new_button = self._button("New entry", "Add an entry (Ctrl+N)", self.new_entry)
        self.delete_button = self._button("Delete", "Delete the selected entries (Del)", self.delete_selected)
        self.bulk_button = MenuButton("Selected ▾", "Bulk changes to the selected entries")
        bulk = self.bulk_button.popup_menu
        self.enable_action = self._action(bulk, "Enable", "Ctrl+E", lambda: self.set_enabled(True))
        self.disable_action = self._action(bulk, "Disable", "Ctrl+D", lambda: self.set_enabled(False))
        self._action(bulk, "Set a field…", None, self._ask_set_field)
        self._action(bulk, "Add a key…", None, self._ask_add_key)
        self._action(bulk, "Remove a key…", None, self._ask_remove_key)
        self.save_button = self._button("Save", "Write the book to lorebook.toml (Ctrl+S)", self._on_save)
        self.book_button = MenuButton("Book ▾", "The whole book: its settings, import and export")
        book_menu = self.book_button.popup_menu
        self._action(book_menu, "Book settings…", None, self._on_settings)
        self._action(book_menu, "Import…", None, self._on_import)
        self._action(book_menu, "Export…", None, self._on_export)
        self.filter.setMinimumWidth(180)
        toolbar = QHBoxLayout()
        toolbar.addWidget(self.filter, 1)
        toolbar.addWidget(self.count_label)
        for widget in (self.new_button, self.delete_button, self.bulk_button, self.save_button, self.book_button):
            toolbar.addWidget(widget)

        # the bar offering reload / merge when the file changed on disk under unsaved edits
        self.conflict_bar = QWidget()
        self.conflict_bar.setStyleSheet(BAR_STYLE)
        self.conflict_text = QLabel()
        self.conflict_text.setWordWrap(True)
        self.reload_button = self._button(
            "Reload", "Read the file again; your unsaved edits are dropped", self._on_reload
        )
        self.merge_button = self._button("Merge", "Keep your edits and the ones on disk", self._on_merge)
        bar = QHBoxLayout(self.conflict_bar)
        bar.setContentsMargins(6, 4, 6, 4)
        bar.addWidget(self.conflict_text, 1)
        bar.addWidget(self.merge_button)
        bar.addWidget(self.reload_button)
        self.conflict_bar.setVisible(False)

        # budget gauges
        self.status_label = small_label("")
        self.constant_gauge = self._gauge("Constant entries: what goes into every reply")
        self.all_gauge = self._gauge("Every enabled entry, as if all fired at once")
        # Each gauge's words beside it, not on it: on the bar's coloured part they did not read.
        self.constant_label = QLabel()
        self.all_label = QLabel()
        gauges = QHBoxLayout()
        gauges.addWidget(self.constant_label)
        gauges.addWidget(self.constant_gauge, 1)
        gauges.addSpacing(12)
        gauges.addWidget(self.all_label)
        gauges.addWidget(self.all_gauge, 1)
        gauges.addSpacing(12)
        gauges.addWidget(self.status_label)

        # looked up when used: a facade without a lorebook (a test's fake) still builds the window
        self.editor = LoreEntryEditor(
            lambda key: self.facade.lore.check_key(key), lambda text: self.facade.lore.count_tokens(text)
        )
        self.editor.edited.connect(self._on_entry_edited)

        # the table
        self.model = LoreTableModel(self)
        self._focus_after_load: int | None = None  # an entry another pane asked to show before the book loaded
        self.table = RecordTableView(
            NO_MATCH,
            self.model,
            selection=QAbstractItemView.SelectionMode.ExtendedSelection,
            row_height=22,
            columns=QHeaderView.ResizeMode.Interactive,
        )
        # The book's order first (sorted by "#"); a click on a header sorts by that column.
        self.table.horizontalHeader().setSortIndicator(COLUMN_NAMES.index("#"), Qt.SortOrder.AscendingOrder)
        self.table.setSortingEnabled(True)
        header = self.table.horizontalHeader()
        for column, width in enumerate((26, 32, 44, 170, 170, 70, 120, 60, 66, 52, 60, 62, 90)):
            header.resizeSection(column, width)
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        self.table.activated.connect(lambda _index: self.editor.focus_first())

        # the side: entry editor, tester, timed effects
        self.tester = LoreTester()
        self.tester.tried.connect(self._on_try)
        # The tester's parts by the names the pane's callers know them by.
        self.try_source = self.tester.source
        self.try_last = self.tester.last
        self.try_text = self.tester.text
        self.try_result = self.tester.result
        self.timed = TimedEffectsPanel()
        self.timed.clear_selected_requested.connect(self._on_clear_timed)
        self.timed.clear_all_requested.connect(self._on_clear_all_timed)
        self.timed_model = self.timed.model
        self.timed_table = self.timed.table
        self.side = QTabWidget()
        self.side.addTab(self.editor, "&Entry")
        self.side.addTab(self.tester, "T&ry")
        self.side.addTab(self.timed, "Timed effects")
        self.side.setMinimumWidth(300)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.table)
        splitter.addWidget(self.side)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setChildrenCollapsible(False)
        splitter.setSizes([3000, 2000])
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(toolbar)
        layout.addWidget(self.conflict_bar)
        layout.addLayout(gauges)
        layout.addWidget(splitter, 1)
        self.set_body(body)
        self.setTabOrder(self.filter, self.table)
        self.setTabOrder(self.table, self.side)

        for keys, slot in (
            ("Ctrl+F", self._focus_filter),
            ("Ctrl+N", self.new_entry),
            ("Ctrl+S", self._on_save),
            ("Ctrl+T", self._show_tester),
            ("F2", self.editor.focus_first),
        ):
            QShortcut(QKeySequence(keys), self, slot, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        delete = QShortcut(QKeySequence(Qt.Key.Key_Delete), self.table, self.delete_selected)
        delete.setContext(Qt.ShortcutContext.WidgetShortcut)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self.filter, self.filter.clear).setContext(
            Qt.ShortcutContext.WidgetShortcut
        )
        self._lint_timer = QTimer(self)
        self._lint_timer.setSingleShot(True)
        self._lint_timer.setInterval(LINT_SETTLE_MS)
        self._lint_timer.timeout.connect(self._run_lint)
        self._update_actions()

    # -- building helpers ------------------------------------------------------------------------------
    def _button(self, text: str, tip: str, slot: Callable[[], object]) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.clicked.connect(lambda _checked=False: slot())
        return button

    def _action(self, menu: QMenu, text: str, keys: str | None, slot: Callable[[], object]) -> QAction:
        action = QAction(text, self)
        if keys:
            action.setShortcut(QKeySequence(keys))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            self.addAction(action)
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _gauge(self, tip: str) -> QProgressBar:
        gauge = QProgressBar()
        gauge.setToolTip(tip)
        gauge.setTextVisible(False)
        gauge.setMaximumHeight(14)
        return gauge

    # -- loading ---------------------------------------------------------------------------------------
    async def load(self) -> bool:
        lore = self.facade.lore
        # A reply changes the timed effects (and what fired): the book itself is read again only when it is
        # not loaded yet or the file changed and nothing is unsaved (the watcher offers the rest).
        draft = self.draft
        if draft.book is None or (not draft.dirty and draft.differs_from(await lore.revision())):
            self._set_book(await lore.load())
        try:
            fired = await lore.fired(7.0)
        except FamiliarError as error:
            _log.info("no fired counts for the lorebook: %s", error)
            fired = []
        self._fired = {f.entry: f for f in fired}
        self._show_rows()
        if self._focus_after_load is not None and self.entries:
            self.select_positions([self._focus_after_load])
            self._focus_after_load = None
        elif self.entries and not self.selected_positions():
            self.select_positions([0], focus=False)
        await self._load_timed()
        await self._load_places()
        self._run_lint()
        return True

    async def _load_timed(self) -> None:
        try:
            self.timed_model.set_records(await self.facade.lore.timed())
        except FamiliarError as error:
            self.timed_table.set_placeholder(f"Timed effects could not be read: {error}")

    async def _load_places(self) -> None:
        try:
            state = await self.facade.controls.state()
        except FamiliarError:
            return
        places = [
            (p.place.name, p.place.key) for p in state.places if p.place.parent or not p.place.key.startswith("guild:")
        ]
        self.tester.set_places(places)

    # -- the draft -------------------------------------------------------------------------------------
    @property
    def book(self) -> LoreBookView | None:
        return self.draft.book

    @property
    def entries(self) -> tuple[LoreEntryView, ...]:
        return self.draft.entries

    @property
    def dirty(self) -> bool:
        return self.draft.dirty

    def _set_book(self, book: LoreBookView) -> None:
        """A book read from disk: the new base, the edits dropped."""
        self.draft.set_book(book, reset=True)
        self.conflict_bar.setVisible(False)

    def unsaved_work(self) -> str | None:
        if self.draft.book is None or not (self.draft.dirty or self.editor.pending):
            return None
        return "The lorebook has unsaved edits (Save is Ctrl+S in the Lorebook pane)."

    def restore(self, snapshot: Snapshot) -> None:
        """Put the draft back as a snapshot had it (an undo or redo) and show it."""
        self.draft.restore(snapshot)
        self._show_rows()
        self._schedule_lint()

    async def change(
        self,
        label: str,
        entries: Sequence[LoreEntryView],
        *,
        select: Sequence[int] = (),
        before: Snapshot | None = None,
        settings: LoreBookSettings | None = None,
    ) -> None:
        """One undoable edit of the draft (`before`: the draft it was made on, when not the one now)."""
        before = before or self.draft.snapshot()
        after = self.draft.after(entries, settings)
        outcome = await self.ops.run(
            "edit the lorebook", lambda: self.context.undo.perform(DraftStep(self.restore, label, before, after))
        )
        if isinstance(outcome, Succeeded) and select:
            self.select_positions(select)

    def _show_rows(self) -> None:
        chosen = self.selected_positions()
        fired = self._fired
        before = self.model.all_rows
        rows = []
        for position, entry in enumerate(self.draft.entries):
            hit = fired.get(entry.ref) if entry.ref is not None and self.draft.is_saved(entry) else None
            lint = self._lint.get(position, ())
            replies, last = (hit.replies, hit.last) if hit is not None else (0, None)
            old = before[position] if position < len(before) else None
            if (
                old is not None
                and old.entry is entry
                and old.lint == lint
                and (old.fired, old.last_fired) == (replies, last)
            ):
                rows.append(old)  # unchanged: its search texts are made already (an edit of one in 5,000)
            else:
                rows.append(make_row(position, entry, lint, replies, last))
        self.model.set_rows(rows)
        self._show_count()
        self._show_budget()
        self.select_positions(chosen, focus=False)
        self._show_editor()
        self._update_actions()

    def _show_count(self) -> None:
        total = len(self.draft.entries)
        shown = self.model.rowCount()
        self.table.set_placeholder(NO_MATCH if total else EMPTY_BOOK)
        self.count_label.setText(f"{total:,} entries" if shown == total else f"{shown:,} of {total:,}")

    def _show_budget(self) -> None:
        costs = self.draft.budget()
        budget = costs.budget
        for gauge, words, label, used in (
            (self.constant_gauge, self.constant_label, "Constant", costs.constant),
            (self.all_gauge, self.all_label, "All firing", costs.every),
        ):
            gauge.setRange(0, max(budget, 1))
            gauge.setValue(min(used, budget))
            gauge.setFormat(f"{label}: {used:,} / {budget:,} tokens")
            words.setText(gauge.format())
            words.setToolTip(gauge.toolTip())
            over = used > budget
            p = colours()
            colour = p.error if over else (p.amber if used > budget * 0.8 else p.ok)
            gauge.setStyleSheet(f"QProgressBar::chunk {{ background: {colour}; }}")
        state = "Unsaved changes" if self.draft.dirty else "Saved"
        self.status_label.setText(f"{state} · {costs.book:,} tokens in the book")

    def _update_actions(self) -> None:
        chosen = bool(self.selected_positions())
        for widget in (self.delete_button, self.bulk_button):
            widget.setEnabled(chosen)
        self.save_button.setEnabled(self.draft.book is not None and self.draft.dirty)

    # -- selection and the editor ----------------------------------------------------------------------
    def focus_widget(self) -> QWidget:
        return self.table

    def focus_on(self, target: object) -> None:
        """Show the entry at a 0-based position in the book (asked by the Explain pane's Edit entry)."""
        if not isinstance(target, int):
            return
        if self.draft.book is None:  # the first load selects it
            self._focus_after_load = target
            return
        self.select_positions([target])
        self.table.setFocus()

    def selected_positions(self) -> list[int]:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        records = self.model.records
        return sorted(records[i.row()].position for i in rows if 0 <= i.row() < len(records))

    def select_positions(self, positions: Sequence[int], *, focus: bool = True) -> None:
        selection = self.table.selectionModel()
        selection.blockSignals(True)
        try:
            selection.clearSelection()
            first = None
            for position in positions:
                row = self.model.row_of(position)
                if row is None:
                    continue
                index = self.model.index(row, TITLE_COLUMN)
                selection.select(
                    index, QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
                )
                first = index if first is None else first
            if first is not None:
                selection.setCurrentIndex(first, QItemSelectionModel.SelectionFlag.NoUpdate)
                if focus:
                    self.table.scrollTo(first)
        finally:
            selection.blockSignals(False)
        self.table.viewport().update()
        self._show_editor()
        self._update_actions()

    def _on_selection(self, *_args: object) -> None:
        self.editor.flush()
        self._show_editor()
        self._update_actions()

    def _show_editor(self) -> None:
        chosen = self.selected_positions()
        entries = self.draft.entries
        if len(chosen) == 1 and chosen[0] < len(entries):
            position = chosen[0]
            entry = entries[position]
            if self.editor.entry is not entry:
                where = "new, not saved yet" if entry.ref is None else f"entry {position + 1} of {len(entries)}"
                self.editor.set_entry(entry, f"{entry.title or '(untitled)'} — {where}")
        elif chosen:
            self.editor.set_entry(None, f"{len(chosen)} entries selected: use Selected ▾ for changes to all of them")
        else:
            self.editor.set_entry(None)

    def _on_entry_edited(self, before: LoreEntryView, after: LoreEntryView) -> None:
        """The side editor's change to `before`, found by identity: the selection may have moved on already
        (a change is emitted when another row is chosen), and the rows may be sorted or filtered."""
        done = self.draft.edited(before, after)
        if done is None:
            return  # the entry was deleted or replaced (an undo) meanwhile: the edit has nothing to go to
        # Applied now, not on a task: a save or a try right after a flush must see it.
        step = DraftStep(self.restore, f"Edited “{after.title or 'untitled'}”", self.draft.snapshot(), done)
        self.restore(done)
        # No Undo notice: it came at every pause in the typing, over the content box being typed in. Ctrl+Z
        # (outside the box, which undoes its own typing) and Edit > Undo take it back.
        self.context.undo.record(step, quietly=True)

    # -- edits -----------------------------------------------------------------------------------------
    @async_slot()
    async def new_entry(self) -> None:
        self.editor.flush()
        entry = LoreEntryView(title="New entry", tokens=0)
        position = len(self.draft.entries)
        self.filter.clear()
        await self.change("Added an entry", self.draft.added(entry), select=[position])
        self.editor.focus_first()
        self.editor.title.selectAll()

    @async_slot()
    async def delete_selected(self) -> None:
        await self.delete_positions(self.selected_positions())

    async def delete_positions(self, positions: Sequence[int]) -> None:
        chosen = set(positions)
        if not chosen:
            return
        kept = self.draft.without(chosen)
        what = self.draft.entries[min(chosen)].title if len(chosen) == 1 else f"{len(chosen)} entries"
        await self.change(f"Deleted “{what}”" if len(chosen) == 1 else f"Deleted {what}", kept)

    async def bulk(self, label: str, positions: Sequence[int], edit: Callable[[LoreEntryView], LoreEntryView]) -> None:
        """One undo step changing every entry at `positions`."""
        chosen = set(positions)
        if not chosen:
            return
        self.editor.flush()
        await self.change(label, self.draft.each_edited(chosen, edit), select=sorted(chosen))

    @async_slot()
    async def set_enabled(self, enabled: bool) -> None:
        chosen = self.selected_positions()
        word = "Enabled" if enabled else "Disabled"
        await self.bulk(f"{word} {len(chosen)} entries", chosen, lambda e: dataclasses.replace(e, enabled=enabled))

    async def set_field(self, positions: Sequence[int], field: str, value: Any) -> None:
        await self.bulk(
            f"Set {field.replace('_', ' ')} of {len(positions)} entries",
            positions,
            lambda e: dataclasses.replace(e, **{field: value}),
        )

    async def add_key(self, positions: Sequence[int], key: str) -> None:
        problem = self.facade.lore.check_key(key)
        if problem is not None:
            self.error_banner.show_message(f"The key “{key}” was not added: {problem}")
            return
        await self.bulk(
            f"Added the key “{key}” to {len(positions)} entries",
            positions,
            lambda e: with_key(e, key),
        )

    async def remove_key(self, positions: Sequence[int], key: str) -> None:
        await self.bulk(
            f"Removed the key “{key}” from {len(positions)} entries",
            positions,
            lambda e: without_key(e, key),
        )

    @async_slot()
    async def _ask_set_field(self) -> None:
        chosen = self.selected_positions()
        if not chosen:
            return
        labels = [label for _f, label, _k in SET_FIELDS]
        picked = await ask_item(self, "Set a field", f"Field to set in {len(chosen)} entries:", labels)
        if picked is None:
            return
        field, label, kind = SET_FIELDS[labels.index(picked)]
        value: Any
        if kind in ("int", "depth"):
            low, start = (-1, -1) if kind == "depth" else (-100_000, 0)
            number = await ask_int(self, "Set a field", f"{label}:", start, low, 100_000)
            if number is None:
                return
            value = None if kind == "depth" and number < 0 else number
        elif kind == "text":
            value = await ask_text(self, "Set a field", f"{label}:")
            if value is None:
                return
        else:
            choices = ["yes", "no"] if kind == "bool" else ["the book's setting", "yes", "no"]
            answer = await ask_item(self, "Set a field", f"{label}:", choices)
            if answer is None:
                return
            value = {"yes": True, "no": False}.get(answer)
        await self.set_field(chosen, field, value)

    @async_slot()
    async def _ask_add_key(self) -> None:
        chosen = self.selected_positions()
        key = await ask_text(self, "Add a key", f"Key to add to {len(chosen)} entries:")
        if key is not None and key.strip():
            await self.add_key(chosen, key.strip())

    @async_slot()
    async def _ask_remove_key(self) -> None:
        chosen = self.selected_positions()
        present = self.draft.keys_at(chosen)
        if not present:
            return
        key = await ask_item(self, "Remove a key", f"Key to remove from {len(chosen)} entries:", present)
        if key is not None:
            await self.remove_key(chosen, key)

    @async_slot()
    async def _on_settings(self) -> None:
        settings = self.draft.settings
        if settings is None:
            return
        dialog = BookSettingsDialog(settings, self.context.window)
        if await accepted(dialog):
            await self.set_settings(dialog.settings())

    async def set_settings(self, settings: LoreBookSettings) -> None:
        """The book-wide fields, one undo step (written by the next save)."""
        if settings != self.draft.settings:
            await self.change("Changed the book settings", self.draft.entries, settings=settings)

    # -- save, reload, merge ---------------------------------------------------------------------------
    @async_slot()
    async def _on_save(self) -> None:
        await self.save()

    async def save(self) -> bool:
        self.editor.flush()
        book = self.draft.book
        if book is None:
            return False
        entries = self.draft.entries
        settings = self.draft.settings or book.settings
        outcome = await self.ops.run(
            "save the lorebook", lambda: self.facade.lore.save(entries, book.revision, settings=settings)
        )
        if isinstance(outcome, Failed):
            if isinstance(outcome.error, LoreConflictError):
                self._offer_reload(outcome.error.current)
            return False
        if not isinstance(outcome, Succeeded):
            return False
        saved: LoreBookView = outcome.value
        chosen = self.selected_positions()
        self.draft.saved(book, entries, saved)
        self.conflict_bar.setVisible(False)
        self._show_rows()
        self.select_positions(chosen, focus=False)
        self._schedule_lint()
        self.context.undo.notices.show_message(f"Saved {len(saved.entries):,} entries to lorebook.toml")
        return True

    def disk_changed(self) -> None:
        """lorebook.toml changed on disk (the runtime's change broadcast says so)."""
        self._check_disk()

    @async_slot()
    async def _check_disk(self) -> None:
        if self.draft.book is None or self.ops.busy or not self.isVisible():
            return
        try:
            revision = await self.facade.lore.revision()
        except FamiliarError:
            return
        if not self.draft.changed_on_disk(revision):
            return
        if self.draft.dirty:
            self._offer_reload(revision)
        else:
            await self.reload()

    def _offer_reload(self, revision: str) -> None:
        self.draft.saw_on_disk(revision)
        self.conflict_text.setText(
            "lorebook.toml changed on disk since it was loaded, and this editor has unsaved edits: nothing was "
            "written. Merge keeps both (yours win where both changed an entry); Reload drops yours."
        )
        self.conflict_bar.setVisible(True)

    @async_slot()
    async def _on_reload(self) -> None:
        await self.reload()

    async def reload(self) -> None:
        outcome = await self.ops.run("read the lorebook again", self.facade.lore.load)
        if isinstance(outcome, Succeeded):
            self._set_book(outcome.value)
            self._show_rows()
            self._schedule_lint()

    @async_slot()
    async def _on_merge(self) -> None:
        await self.merge_with_disk()

    async def merge_with_disk(self) -> tuple[str, ...]:
        self.editor.flush()
        base = self.draft.book
        outcome = await self.ops.run("read the lorebook again", self.facade.lore.load)
        if base is None or not isinstance(outcome, Succeeded):
            return ()
        merged = self.draft.merge_with(base, outcome.value)
        self.conflict_bar.setVisible(False)
        self._show_rows()
        self._schedule_lint()
        if merged.conflicts:
            names = ", ".join(f"“{t}”" for t in merged.conflicts[:5])
            more = f" and {len(merged.conflicts) - 5} more" if len(merged.conflicts) > 5 else ""
            self.error_banner.show_message(
                f"Changed both here and on disk, your version kept: {names}{more}. Save to write."
            )
        else:
            self.context.undo.notices.show_message("Merged with the file on disk: save to write both")
        return merged.conflicts

    # -- lint --------------------------------------------------------------------------------------------
    def _schedule_lint(self) -> None:
        self._lint_timer.start()

    @async_slot()
    async def _run_lint(self) -> None:
        entries = self.draft.entries
        try:
            found = await self.facade.lore.lint(entries, settings=self.draft.engine_settings)
        except FamiliarError as error:
            self.status_label.setText(f"Lint could not run: {error}")
            return
        if entries is not self.draft.entries:
            return  # edited meanwhile: the next run says
        lint: dict[int, list[str]] = {}
        for item in found:
            lint.setdefault(item.entry, []).append(item.message)
        self._lint = {k: tuple(v) for k, v in lint.items()}
        self._show_rows()

    # -- tester ------------------------------------------------------------------------------------------
    def _show_tester(self) -> None:
        self.side.setCurrentWidget(self.tester)
        self.try_text.setFocus(Qt.FocusReason.ShortcutFocusReason)

    @async_slot()
    async def _on_try(self) -> None:
        await self.run_try()

    async def run_try(self) -> LoreTrial | None:
        self.editor.flush()
        lore = self.facade.lore
        entries = self.draft.entries
        settings = self.draft.engine_settings
        where = self.tester.place()
        if where is None:
            lines = self.tester.lines()
            if not lines:
                self.try_result.setHtml("<p>Paste some text to try first.</p>")
                return None
            call = lambda: lore.try_text(lines, entries=entries, settings=settings)  # noqa: E731
        else:
            last = self.try_last.value()
            call = lambda: lore.try_place(where, last, entries=entries, settings=settings)  # noqa: E731
        outcome = await self.ops.run("try the lorebook", call, busy=[self.tester.button])
        if not isinstance(outcome, Succeeded):
            return None
        self.tester.show_trial(outcome.value)
        return outcome.value

    # -- timed effects -----------------------------------------------------------------------------------
    @async_slot()
    async def _on_clear_timed(self) -> None:
        effects = self.timed.selected()

        async def clear() -> int:
            return sum([await self.facade.lore.clear_timed(e.place.key, e.key, initiator=self) for e in effects])

        await self.ops.run("clear the effects", clear)
        await self._load_timed()

    @async_slot()
    async def _on_clear_all_timed(self) -> None:
        await self.ops.run("clear the timed effects", lambda: self.facade.lore.clear_timed(initiator=self))
        await self._load_timed()

    # -- import and export -------------------------------------------------------------------------------
    @async_slot()
    async def _on_import(self) -> None:
        file = await choose_file_to_open(self, "Import a lorebook", "Lorebooks and cards (*.json *.png);;All files (*)")
        if file is not None:
            await self.import_file(file)

    async def import_file(
        self, file: Path, choose: Callable[[ImportPreview], Awaitable[frozenset[int] | None]] | None = None
    ) -> bool:
        """Put the entries of `file` the owner takes into the draft: one undo step, written by the next Save
        (the preview compares the file with the draft, unsaved edits and all)."""
        self.editor.flush()
        book = self.draft.book
        if book is None:
            return False
        entries = self.draft.entries
        outcome = await self.ops.run(
            "read the file to import",
            lambda: self.facade.lore.import_preview(file, entries, base_revision=book.revision),
        )
        if isinstance(outcome, Failed):
            if isinstance(outcome.error, LoreConflictError):
                self._offer_reload(outcome.error.current)  # changed on disk since it was loaded: merge or reload first
            return False
        if not isinstance(outcome, Succeeded):
            return False
        preview: ImportPreview = outcome.value
        take = await (choose or self._choose_imports)(preview)
        if take is None:
            return False
        chosen = to_import(preview, take)
        if not chosen:
            self.context.undo.notices.show_message("Nothing to import: every entry is in the book already")
            return False
        if entries is not self.draft.entries or book is not self.draft.book:
            self.error_banner.show_message("The lorebook changed while the import was open: import it again.")
            return False
        draft, touched = self.draft.imported(chosen)
        self.filter.clear()
        label = f"Imported {len(chosen)} {'entry' if len(chosen) == 1 else 'entries'} from {file.name}"
        await self.change(f"{label} (Ctrl+S saves)", draft, select=sorted(touched))
        return True

    async def _choose_imports(self, preview: ImportPreview) -> frozenset[int] | None:
        dialog = ImportDialog(preview, self.draft.entries, self.context.window)
        if not await accepted(dialog):
            return None
        return dialog.chosen()

    @async_slot()
    async def _on_export(self) -> None:
        filters = ";;".join(label for _f, label in EXPORT_FORMATS)
        picked = await choose_file_to_save(self, "Export the lorebook", "lorebook.json", filters)
        if picked is None:
            return
        target, chosen = picked
        fmt = next((f for f, label in EXPORT_FORMATS if label == chosen), "st")
        await self.export_to(target, fmt)

    async def export_to(self, target: Path, fmt: str) -> int | None:
        """Write the saved book to `target` as st, ccv2 or ccv3; how many entries (None: it failed)."""
        outcome = await self.ops.run("export the lorebook", lambda: self.facade.lore.export(target, fmt))
        if not isinstance(outcome, Succeeded):
            return None
        unsaved = " (the saved book: your unsaved edits are not in it)" if self.draft.dirty else ""
        self.context.undo.notices.show_message(f"Exported {outcome.value} entries to {target.name}{unsaved}")
        return outcome.value

    def _focus_filter(self) -> None:
        self.filter.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter.selectAll()

    def _on_filter(self, text: str) -> None:
        self.model.set_query(text)
        self._show_count()


__all__ = ["LoreRow", "LorebookPane"]
