"""The Character pane: the familiar's name, persona, greeting, where it answers and its model, edited
and saved to character.toml / character.md, in force from the next reply (no restart).

Every field is checked as it is typed with the settings loader's own message, shown under the field;
Save (Ctrl+S) stays disabled while a field is wrong or nothing changed. A save is one undoable step
(Ctrl+Z outside a text field, or the notice's Undo, puts the previous files back). While the pane
shows, the files are watched: an edit on disk is reloaded at once when nothing here is unsaved, and
otherwise offered as a reload. Home channels are ticked by name in the servers the bot sees.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import ClassVar

from PySide6.QtCore import Qt, QTimer, QUrl
from PySide6.QtGui import QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.facade import CharacterApi
from app.runtime.api.views import ChannelCatalog, CharacterDraft, CharacterFiles, CharacterView, FieldProblem
from app.runtime.errors import CharacterChangedError, FamiliarError
from app.runtime.events import ChangeKind, ConnectionChanged, ConnectionState
from app.ui.async_slot import async_slot
from app.ui.error_text import one_line
from app.ui.ops import Failed
from app.ui.panes.base import Pane, PaneContext
from app.ui.theme import (
    AMBER,
    ERROR_RED,
    HINT_BACKGROUND,
    HINT_BORDER,
    MUTED_GREY,
    OK_GREEN,
    caption,
    section_label,
    small_label,
    text_colour_style,
)

_log = logging.getLogger(__name__)

CHANNEL_ROLE = Qt.ItemDataRole.UserRole + 1
TIERS = ("text", "compact")
MOVED_WORDS = {
    "saved": "Saved: in use from the next reply",
    "undone": "Undone: the files as they were are in use from the next reply",
}


class SaveStep:
    """A save of the character as one undo step: undo puts the files it replaced back, redo puts the
    saved ones back; each against the revision the last move left (a file edited on disk meanwhile
    refuses the move). `moved(view, saved)` is told the files as they are after each move, and whether
    the move put the saved ones in (a save or a redo) or the earlier ones back (an undo)."""

    undo_window: float | None = None

    def __init__(
        self,
        character: CharacterApi,
        draft: CharacterDraft,
        revision: str,
        moved: Callable[[CharacterView, bool], None],
    ) -> None:
        self._character = character
        self._draft = draft
        self._revision = revision
        self._moved = moved
        self._files: tuple[CharacterFiles, CharacterFiles] | None = None  # before, after

    @property
    def label(self) -> str:
        return "Saved the character"

    async def redo(self) -> None:
        if self._files is None:
            saved = await self._character.save(self._draft, self._revision)
            self._files = (saved.before, saved.after)
            view = saved.view
        else:
            view = await self._character.restore(self._files[1], self._revision)
        self._revision = view.revision
        self._moved(view, True)

    async def undo(self) -> None:
        assert self._files is not None, "undo before the save was done"
        view = await self._character.restore(self._files[0], self._revision)
        self._revision = view.revision
        self._moved(view, False)


class _Problem(QLabel):
    """The loader's message for one field, under it; hidden while the field is fine."""

    def __init__(self) -> None:
        super().__init__()
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setStyleSheet(text_colour_style(ERROR_RED))
        self.setVisible(False)

    def show_problem(self, message: str) -> None:
        self.setText(message)
        self.setVisible(bool(message))


class CharacterPane(Pane):
    name = "character"
    title = "Character"
    empty_text = "The character's files could not be read."
    disk_watches = frozenset({ChangeKind.CHARACTER_FILES})

    CHECK_DELAY_MS: ClassVar[int] = 120  # re-check and re-count this long after the last key

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self.view: CharacterView | None = None
        self.catalog: ChannelCatalog | None = None
        self.problems: dict[str, str] = {}
        self._clean: CharacterDraft | None = None
        self._filling = False
        self._saving = False
        # What this pane last did to the files (None: nothing since they were loaded): the bar says it while
        # nothing is edited, and says nothing before any save ("Saved" then would claim a save never made).
        self._last_move: str | None = None
        self.open_url: Callable[[QUrl], object] = QDesktopServices.openUrl  # tests look at the URL instead

        # -- the bar: state, Save, Revert, Open data folder, and an edit on disk offered as a reload
        self.state_label = QLabel()
        self.save_button = QPushButton("Save")
        self.save_button.setToolTip("Save to character.toml and character.md; used from the next reply (Ctrl+S)")
        self.save_button.clicked.connect(self.save)
        self.revert_button = QPushButton("Revert")
        self.revert_button.setToolTip("Throw away the unsaved changes")
        self.revert_button.clicked.connect(self.revert)
        self.folder_button = QPushButton("Open data folder")
        self.folder_button.setToolTip("Open the folder holding character.toml, character.md and lorebook.toml")
        self.folder_button.clicked.connect(self.open_data_folder)
        bar = QHBoxLayout()
        bar.addWidget(self.state_label, 1)
        bar.addWidget(self.folder_button)
        bar.addWidget(self.revert_button)
        bar.addWidget(self.save_button)

        self.disk_banner = QFrame()
        self.disk_banner.setObjectName("diskBanner")
        self.disk_banner.setStyleSheet(
            f"#diskBanner {{ background-color: {HINT_BACKGROUND}; border: 1px solid {HINT_BORDER};"
            " border-radius: 4px; }"
        )
        self.disk_label = QLabel()
        self.disk_label.setWordWrap(True)
        self.reload_button = QPushButton("Reload from disk")
        self.reload_button.setToolTip("Show the files as they are now; the unsaved changes here are lost")
        self.reload_button.clicked.connect(self.reload)
        banner_layout = QHBoxLayout(self.disk_banner)
        banner_layout.addWidget(self.disk_label, 1)
        banner_layout.addWidget(self.reload_button)
        self.disk_banner.setVisible(False)

        # -- the persona, with its token count against the budget
        self.persona = QPlainTextEdit()
        self.persona.setPlaceholderText("Who the familiar is, how it speaks, what it cares about…")
        self.persona.setTabChangesFocus(True)
        self.persona.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.persona_label = section_label("&Persona (character.md)")
        self.persona_label.setBuddy(self.persona)
        self.tokens_label = QLabel()
        self.persona_problem = _Problem()
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 6, 0)
        left_layout.addWidget(self.persona_label)
        left_layout.addWidget(self.persona, 1)
        left_layout.addWidget(self.tokens_label)
        left_layout.addWidget(self.persona_problem)

        # -- the settings
        self.display_name = QLineEdit()
        self.greeting = QPlainTextEdit()
        self.greeting.setTabChangesFocus(True)
        self.greeting.setPlaceholderText("Blank: no greeting")
        self.greeting.setFixedHeight(self.greeting.fontMetrics().lineSpacing() * 4 + 12)
        # Fixed, not expanding: the form's spare height would otherwise go to its row, with the box in
        # the middle of it, far below its label.
        self.greeting.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.channels = QTreeWidget()
        self.channels.setHeaderHidden(True)
        self.channels.setMinimumHeight(90)
        self.channels.setMaximumHeight(180)
        self.channels.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.channels.setToolTip("Tick the channels where it answers every message (Space ticks the selected one)")
        self.channels_note = small_label("")
        self.allow_dms = QCheckBox("Answer direct messages")
        self.respond_to_bots = QCheckBox("Answer other bots")
        self.respond_to_bots.setToolTip("Answer messages written by other bots (off: only people)")
        self.model = QLineEdit()
        self.model.setPlaceholderText("the model name the endpoint knows, e.g. llama3.1")
        self.model_note = small_label("")
        self.model_note.setVisible(False)
        self.temperature = QLineEdit()
        self.temperature.setToolTip("Sampling temperature for replies, 0 to 2")
        self.max_tokens = QLineEdit()
        self.max_tokens.setToolTip("Longest reply, in tokens")
        self.budget_tier = QComboBox()
        self.budget_tier.addItems(TIERS)
        self.budget_tier.setToolTip("text for roomy models; compact for small local models (about 4k of context)")

        self.field_problems: dict[str, _Problem] = {
            name: _Problem()
            for name in (
                "display_name",
                "greeting",
                "home_channels",
                "allow_dms",
                "respond_to_bots",
                "model",
                "temperature",
                "max_tokens",
                "budget_tier",
            )
        }
        self.field_problems["persona"] = self.persona_problem
        self._captions: dict[str, str] = {"persona": "Persona"}
        form_widget = QWidget()
        form = QFormLayout(form_widget)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)

        def row(label: str, widget: QWidget, field: str, *extra: QWidget) -> None:
            box = QWidget()
            layout = QVBoxLayout(box)
            layout.setContentsMargins(0, 0, 0, 0)
            layout.setSpacing(2)
            layout.addWidget(widget)
            for more in extra:
                layout.addWidget(more)
            layout.addWidget(self.field_problems[field])
            if label:
                name = caption(label)
                name.setBuddy(widget)
                form.addRow(name, box)
                self._captions[field] = label.replace("&", "")
            else:
                form.addRow("", box)

        form.addRow(section_label("Who"))
        row("&Name", self.display_name, "display_name")
        row("&Greeting", self.greeting, "greeting")
        form.addRow(section_label("Where it answers"))
        row("&Home channels", self.channels, "home_channels", self.channels_note)
        row("", self.allow_dms, "allow_dms")
        row("", self.respond_to_bots, "respond_to_bots")
        form.addRow(section_label("Model"))
        row("&Model", self.model, "model", self.model_note)
        row("&Temperature", self.temperature, "temperature")
        row("Ma&x reply tokens", self.max_tokens, "max_tokens")
        row("&Budget tier", self.budget_tier, "budget_tier")
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(form_widget)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(scroll)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        splitter.setChildrenCollapsible(False)

        body = QWidget()
        body_layout = QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.addLayout(bar)
        body_layout.addWidget(self.disk_banner)
        body_layout.addWidget(splitter, 1)
        self.set_body(body)
        QWidget.setTabOrder(self.persona, self.display_name)

        # -- as you type
        self._check_timer = QTimer(self)
        self._check_timer.setSingleShot(True)
        self._check_timer.setInterval(self.CHECK_DELAY_MS)
        self._check_timer.timeout.connect(self.check_now)
        for edit in (self.display_name, self.model, self.temperature, self.max_tokens):
            edit.textChanged.connect(self._edited)
        for text in (self.persona, self.greeting):
            text.textChanged.connect(self._edited)
        for box in (self.allow_dms, self.respond_to_bots):
            box.toggled.connect(self._edited)
        self.budget_tier.currentIndexChanged.connect(self._edited)
        self.channels.itemChanged.connect(self._edited)

        self.save_shortcut = QShortcut(QKeySequence.StandardKey.Save, self)
        self.save_shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.save_shortcut.activated.connect(self.save)

        self._looking = False
        context.bridge.connection_changed.connect(self._on_connection_changed)
        context.bridge.guilds_changed.connect(self._on_connection_changed)
        self._sync_bar()

    def focus_widget(self) -> QWidget:
        return self.persona

    # -- loading -------------------------------------------------------------------------------------
    async def load(self) -> bool:
        view = await self.facade.character.load()
        catalog = await self.facade.character.channels(view.draft.home_channels)
        self._last_move = None
        self._fill(view, catalog)
        return True

    def _fill(self, view: CharacterView, catalog: ChannelCatalog) -> None:
        """Show `view` in the fields (what is typed here is replaced)."""
        self.view = view
        self.catalog = catalog
        draft = view.draft
        self._filling = True
        try:
            self.display_name.setText(draft.display_name)
            if self.persona.toPlainText() != draft.persona:
                self.persona.setPlainText(draft.persona)
            if self.greeting.toPlainText() != draft.greeting:
                self.greeting.setPlainText(draft.greeting)
            self.allow_dms.setChecked(draft.allow_dms)
            self.respond_to_bots.setChecked(draft.respond_to_bots)
            self.model.setText(draft.model)
            self.temperature.setText(_number(draft.temperature))
            self.max_tokens.setText(_number(draft.max_tokens))
            if self.budget_tier.findText(draft.budget_tier) < 0:
                self.budget_tier.addItem(draft.budget_tier)
            self.budget_tier.setCurrentText(draft.budget_tier)
            self._fill_channels(catalog, draft.home_channels)
            overrides = [o for o in view.overrides if o.field == "model"]
            self.model_note.setText(
                "\n".join(f"{o.variable} overrides this: “{o.value}” is in use." for o in overrides)
            )
            self.model_note.setVisible(bool(overrides))
        finally:
            self._filling = False
        self._clean = self.draft()
        self.disk_banner.setVisible(False)
        self.check_now()

    def _fill_channels(self, catalog: ChannelCatalog, home: Sequence[int]) -> None:
        checked = set(home)
        tree = self.channels
        tree.clear()
        for server in catalog.servers:
            top = QTreeWidgetItem([server.server.name])
            top.setFlags(Qt.ItemFlag.ItemIsEnabled)
            top.setToolTip(0, f"{server.server.name} ({'connected' if server.live else 'heard before'})")
            for channel in server.channels:
                item = QTreeWidgetItem([channel.name])
                item.setFlags(
                    Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable
                )
                item.setData(0, CHANNEL_ROLE, channel.channel_id)
                item.setCheckState(
                    0, Qt.CheckState.Checked if channel.channel_id in checked else Qt.CheckState.Unchecked
                )
                item.setToolTip(0, f"{channel.place.name if channel.place else channel.name} (id {channel.channel_id})")
                top.addChild(item)
            tree.addTopLevelItem(top)
        if catalog.unseen:
            top = QTreeWidgetItem(["Not seen by the bot"])
            top.setFlags(Qt.ItemFlag.ItemIsEnabled)
            for channel in catalog.unseen:
                item = QTreeWidgetItem([channel.name])
                item.setFlags(
                    Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable
                )
                item.setData(0, CHANNEL_ROLE, channel.channel_id)
                item.setCheckState(0, Qt.CheckState.Checked)
                item.setToolTip(0, "In character.toml, but the bot has never seen this channel")
                top.addChild(item)
            tree.addTopLevelItem(top)
        tree.expandAll()
        tree.setVisible(tree.topLevelItemCount() > 0)  # nothing to tick: the note below says why
        if not catalog.servers:
            note = "No servers yet: start the bot (Dashboard) to list the channels it can see."
        elif not catalog.connected:
            note = "The bot is offline: these are the channels it has heard in before."
        else:
            note = "It always answers mentions and replies; in a ticked channel it answers every message."
        self.channels_note.setText(note)

    # -- the draft -----------------------------------------------------------------------------------
    def draft(self) -> CharacterDraft:
        """What the fields hold now (numbers as typed: the check reads them as the loader does)."""
        return CharacterDraft(
            display_name=self.display_name.text(),
            persona=self.persona.toPlainText(),
            greeting=self.greeting.toPlainText(),
            home_channels=self.home_channels(),
            allow_dms=self.allow_dms.isChecked(),
            respond_to_bots=self.respond_to_bots.isChecked(),
            model=self.model.text(),
            temperature=self.temperature.text(),
            max_tokens=self.max_tokens.text(),
            budget_tier=self.budget_tier.currentText(),
        )

    def home_channels(self) -> tuple[int, ...]:
        """The ticked channels: those already in the file in its order, then the newly ticked ones."""
        ticked = [
            int(item.data(0, CHANNEL_ROLE))
            for item in self.channel_items()
            if item.checkState(0) == Qt.CheckState.Checked
        ]
        before = self.view.draft.home_channels if self.view is not None else ()
        kept = [c for c in before if c in ticked]
        return tuple(dict.fromkeys([*kept, *ticked]))

    def channel_items(self) -> list[QTreeWidgetItem]:
        """Every channel of the tree (the servers are not items to tick)."""
        found: list[QTreeWidgetItem] = []
        tree = self.channels
        for i in range(tree.topLevelItemCount()):
            top = tree.topLevelItem(i)
            if top is None:
                continue
            found.extend(child for j in range(top.childCount()) if (child := top.child(j)) is not None)
        return found

    def unsaved_work(self) -> str | None:
        if self.view is None or not self.dirty:
            return None
        return "The character has unsaved changes (Save is Ctrl+S in the Character pane)."

    @property
    def dirty(self) -> bool:
        return self._clean is not None and _comparable(self.draft()) != _comparable(self._clean)

    def _edited(self) -> None:
        if self._filling:
            return
        self._sync_bar()
        self._check_timer.start()

    def check_now(self) -> None:
        """Check every field with the loader's rules and count the persona's tokens."""
        self._check_timer.stop()
        problems: tuple[FieldProblem, ...] = self.facade.character.check(self.draft())
        self.problems = {p.field: p.message for p in problems}
        for field, label in self.field_problems.items():
            label.show_problem(self.problems.get(field, ""))
        self._count_tokens()
        self._sync_bar()

    def _count_tokens(self) -> None:
        if self.view is None:
            return
        used = self.facade.character.count_tokens(self.persona.toPlainText())
        tier = self.budget_tier.currentText()
        budget = self.view.persona_budgets.get(tier)
        if budget is None:
            self.tokens_label.setText(f"{used:,} tokens")
            self.tokens_label.setStyleSheet(text_colour_style(MUTED_GREY))
            return
        over = used > budget
        self.tokens_label.setText(
            f"{used:,} of {budget:,} tokens for the persona ({tier} budget)"
            + (f": {used - budget:,} over, the end will be cut" if over else "")
        )
        self.tokens_label.setStyleSheet(text_colour_style(ERROR_RED if over else MUTED_GREY))

    def _sync_bar(self) -> None:
        dirty = self.dirty
        self.save_button.setEnabled(dirty and not self.problems and not self._saving and self.view is not None)
        self.revert_button.setEnabled(dirty and not self._saving)
        if self.problems:
            names = ", ".join(self._captions.get(field, field) for field in self.problems)
            self.state_label.setText(f"● Fix before saving: {names}")
            self.state_label.setStyleSheet(text_colour_style(ERROR_RED))
        elif dirty:
            self.state_label.setText("● Unsaved changes")
            self.state_label.setStyleSheet(text_colour_style(AMBER))
        else:
            self.state_label.setText(MOVED_WORDS.get(self._last_move or "", ""))
            self.state_label.setStyleSheet(text_colour_style(OK_GREEN))

    # -- actions -------------------------------------------------------------------------------------
    def revert(self) -> None:
        if self.view is not None and self.catalog is not None:
            self._fill(self.view, self.catalog)

    def data_folder_url(self) -> QUrl:
        folder = self.view.folder if self.view is not None else self.facade.home
        return QUrl.fromLocalFile(str(folder))

    def open_data_folder(self) -> None:
        self.open_url(self.data_folder_url())

    @async_slot()
    async def save(self) -> None:
        self.check_now()
        if not self.save_button.isEnabled() or self.view is None:
            return
        step = SaveStep(self.facade.character, self.draft(), self.view.revision, self._moved)
        self._saving = True
        self._sync_bar()
        try:
            outcome = await self.ops.run("save the character", lambda: self.context.undo.perform(step))
        finally:
            self._saving = False
        if isinstance(outcome, Failed) and isinstance(outcome.error, CharacterChangedError):
            self._offer_reload(one_line(outcome.error))
        self._sync_bar()

    def _moved(self, view: CharacterView, saved: bool) -> None:
        """A save, or its undo or redo, changed the files: show them as they are now."""
        self._last_move = "saved" if saved else "undone"
        if self.catalog is None:
            return
        home = set(view.draft.home_channels)
        known = {c.channel_id for s in self.catalog.servers for c in s.channels}
        unseen = tuple(c for c in self.catalog.unseen if c.channel_id in home)
        missing = home - known - {c.channel_id for c in unseen}
        if missing:
            self.mark_stale()  # a channel came back that this pane does not list: fetch the catalog again
        self._fill(view, dataclasses.replace(self.catalog, unseen=unseen))

    @async_slot()
    async def reload(self) -> None:
        self.refresh()

    # -- the files on disk ---------------------------------------------------------------------------
    def disk_changed(self) -> None:
        """character.toml or character.md changed on disk (the runtime's change broadcast says so)."""
        if not self._looking:
            self.look_at_disk()

    @async_slot()
    async def look_at_disk(self) -> None:
        """Reload when the files changed on disk and nothing is unsaved here; else offer a reload."""
        if self.view is None or self._saving or self.context.undo.busy or not self.is_loaded:
            return
        seen = self.view.revision
        self._looking = True
        try:
            now = await self.facade.character.revision()
        except FamiliarError as error:
            self.disk_label.setText(one_line(error))
            self.disk_banner.setVisible(True)
            return
        finally:
            self._looking = False
        if self.view is None or now == self.view.revision or seen != self.view.revision or self._saving:
            return
        if self.dirty:
            self._offer_reload("character.toml or character.md changed on disk since they were loaded.")
        else:
            self.refresh()

    def _offer_reload(self, message: str) -> None:
        self.disk_label.setText(f"{message} Reload to see them (your unsaved changes here are lost), or keep editing.")
        self.disk_banner.setVisible(True)

    def _on_connection_changed(self, event: object) -> None:
        """The bot connected, stopped or its servers changed: list the channels it sees again (unless
        something is unsaved here: a reload would replace it)."""
        if isinstance(event, ConnectionChanged) and event.state not in (
            ConnectionState.CONNECTED,
            ConnectionState.STOPPED,
        ):
            return
        if self.view is not None and not self.dirty:
            self.mark_stale()


def _number(value: float | int | str) -> str:
    return value if isinstance(value, str) else repr(value)


def _comparable(draft: CharacterDraft) -> tuple[object, ...]:
    """A draft with its numbers read (so "0.80" typed over 0.8 is no change)."""

    def number(value: float | int | str) -> object:
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                return value
        return float(value)

    return (
        draft.display_name,
        draft.persona,
        draft.greeting,
        tuple(sorted(draft.home_channels)),
        draft.allow_dms,
        draft.respond_to_bots,
        draft.model,
        number(draft.temperature),
        number(draft.max_tokens),
        draft.budget_tier,
    )
