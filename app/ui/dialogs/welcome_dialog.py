"""The welcome flow: the first run's three steps, each of which can be skipped and run again from Settings.

1. Name the familiar, or make it a character card's character (`facade.setup.preview_card` / `apply_card`).
   A familiar made from a card (and still called by its name) has its name: the flow opens on step 2,
   and Back shows step 1 done.
2. Paste the bot token: Check asks Discord at once (`facade.setup.check_discord`) and shows the verdict
   (invalid token, Message Content intent off, OK as <bot name>) with the invite link. "Try it without
   Discord" goes on to step 3 without a token: Chat needs a language model too. Finishing (or skipping)
   step 3 then opens Chat (`chat_requested`; the window remembers the choice, so the welcome does not
   come back at every launch for the missing token).
3. Choose an LLM endpoint from the presets, list its models and test it (`facade.setup.list_models` /
   `test_endpoint`, on the endpoint that would really be used), pick the model.

Next saves the step's values (`facade.setup.save`, in force at once); Skip moves on saving nothing; Back
(disabled on step 1) goes back saving nothing. A value an environment variable sets is shown read-only,
"set by <VARIABLE>". Nothing here blocks: every facade call runs through `Operations` on the qasync loop.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import shiboken6
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.facade import FamiliarFacade
from app.runtime.api.setup_views import (
    PRESETS,
    CardPreview,
    DiscordCheck,
    SettingsUpdate,
    SettingsView,
    SettingValue,
    preset_for,
)
from app.ui.async_slot import async_slot
from app.ui.dialogs.fitting import FittingDialog
from app.ui.dialogs.modal import choose_file_to_open
from app.ui.ops import Operations, Succeeded
from app.ui.theme import ERROR_RED, MUTED_GREY, OK_GREEN, small_label, text_colour_style, title_label

_log = logging.getLogger(__name__)

STEPS = ("name", "discord", "llm")
NEXT_LABEL = "Next"
FINISH_LABEL = "Finish"
CHAT_LABEL = "Finish and open Chat"
SKIP_TOKEN_HINT = "Skip to go on without saving it."
CARD_FILTER = "Character cards (*.png *.json *.charx);;All files (*)"


def _result_label() -> QLabel:
    label = QLabel()
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _show(label: QLabel, text: str, *, ok: bool | None) -> None:
    colour = MUTED_GREY if ok is None else OK_GREEN if ok else ERROR_RED
    label.setStyleSheet(text_colour_style(colour))
    label.setText(text)


def lock_if_overridden(field: QLineEdit, value: SettingValue) -> None:
    """A value set by an environment variable cannot be changed here: read-only, saying which."""
    if value.from_environment:
        field.setReadOnly(True)
        field.setToolTip(f"set by {value.variable}: change or unset the environment variable")
        field.setPlaceholderText(f"set by {value.variable}")
        if not value.secret:
            field.setText(value.value)


class WelcomeDialog(FittingDialog):
    """Non-modal. `saved` after each step saved; `chat_requested` when a flow that went on "without Discord"
    ends (Chat is to be opened)."""

    saved = Signal()
    chat_requested = Signal()

    def __init__(self, facade: FamiliarFacade, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._facade = facade
        self._view: SettingsView | None = None
        self._card: Path | None = None
        self._last_check: tuple[str, DiscordCheck] | None = None
        self._without_discord = False  # "Try it without Discord": step 3, then Chat
        self._listing = False  # the model list is being filled in: not an edit that makes the result stale
        # Not a Qt child: a load still running when the dialog is deleted must not find its Operations gone.
        self.ops = Operations(show_error=self._show_error, clear_error=self._clear_error)
        self.setWindowTitle("Welcome to Familiar")
        self.setMinimumWidth(560)

        self.pages = QStackedWidget()
        self.pages.addWidget(self._name_page())
        self.pages.addWidget(self._discord_page())
        self.pages.addWidget(self._llm_page())

        self.step_label = small_label("")
        self.error_label = _result_label()
        self.error_label.setStyleSheet(text_colour_style(ERROR_RED))
        self.error_label.setVisible(False)

        self.back_button = QPushButton("Back")
        self.back_button.clicked.connect(self._on_back)
        self.skip_button = QPushButton("Skip")
        self.skip_button.setToolTip("Move on without saving this step: you can do it later from Settings.")
        self.skip_button.clicked.connect(self._on_skip)
        self.next_button = QPushButton(NEXT_LABEL)
        self.next_button.setDefault(True)
        self.next_button.clicked.connect(self._on_next)
        buttons = QHBoxLayout()
        buttons.addWidget(self.step_label, 1)
        buttons.addWidget(self.back_button)
        buttons.addWidget(self.skip_button)
        buttons.addWidget(self.next_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 16, 18, 16)
        layout.setSpacing(10)
        layout.addWidget(self.pages, 1)
        layout.addWidget(self.error_label)
        layout.addLayout(buttons)
        # Back is not among them: its enabled state also depends on the step, so it is set in `_sync_back`.
        self._busy_widgets: tuple[QWidget, ...] = (self.skip_button, self.next_button)
        self.ops.busy_changed.connect(self._sync_back)
        self._go(0)
        self.load()

    # -- the pages -------------------------------------------------------------------------------
    def _name_page(self) -> QWidget:
        page = QWidget()
        self.name_field = QLineEdit()
        self.name_field.setPlaceholderText("e.g. Wisp")
        self.card_button = QPushButton("Create from a character card…")
        self.card_button.clicked.connect(self._on_card_clicked)
        self.card_label = _result_label()
        form = QFormLayout()
        form.addRow("Name", self.name_field)
        layout = QVBoxLayout(page)
        layout.addWidget(title_label("Name your familiar"))
        layout.addWidget(small_label("The name it answers to. Or start from a character card (PNG, JSON or CHARX)."))
        layout.addLayout(form)
        row = QHBoxLayout()
        row.addWidget(self.card_button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.card_label)
        layout.addStretch(1)
        return page

    def _discord_page(self) -> QWidget:
        page = QWidget()
        self.token_field = QLineEdit()
        self.token_field.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_field.setPlaceholderText("Developer Portal > your application > Bot > Reset Token")
        self.token_field.textChanged.connect(self._on_token_edited)
        self.check_button = QPushButton("Check")
        self.check_button.clicked.connect(self._on_check_clicked)
        self.verdict_label = _result_label()
        self.invite_label = QLabel()
        self.invite_label.setTextFormat(Qt.TextFormat.RichText)
        self.invite_label.setOpenExternalLinks(True)
        self.invite_label.setWordWrap(True)
        self.invite_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.invite_label.setVisible(False)
        self.without_discord_button = QPushButton("Try it without Discord")
        self.without_discord_button.setToolTip(
            "Go on without a bot token: choose a language model, then talk to the familiar here, in Chat."
        )
        self.without_discord_button.setAutoDefault(False)  # Enter goes on with the token (Next), never past it
        self.without_discord_button.clicked.connect(self._on_without_discord)
        row = QHBoxLayout()
        row.addWidget(self.token_field, 1)
        row.addWidget(self.check_button)
        self.named_note = small_label("")  # the name step done by a card, said where the flow opens
        self.named_note.setVisible(False)
        layout = QVBoxLayout(page)
        layout.addWidget(title_label("Connect to Discord"))
        layout.addWidget(self.named_note)
        layout.addWidget(
            small_label(
                "Create an application at discord.com/developers, add a bot, switch on its Message Content"
                " Intent, and paste the bot's token here."
            )
        )
        layout.addLayout(row)
        layout.addWidget(self.verdict_label)
        layout.addWidget(self.invite_label)
        layout.addStretch(1)
        other = QHBoxLayout()
        other.addWidget(self.without_discord_button)
        other.addStretch(1)
        layout.addLayout(other)
        return page

    def _llm_page(self) -> QWidget:
        page = QWidget()
        self.preset_combo = QComboBox()
        for preset in PRESETS:
            self.preset_combo.addItem(preset.name)
        self.preset_combo.currentIndexChanged.connect(self._on_preset_changed)
        self.preset_hint = small_label(PRESETS[0].hint)
        self.url_field = QLineEdit()
        self.url_field.setPlaceholderText("http://127.0.0.1:11434/v1")
        self.key_field = QLineEdit()
        self.key_field.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_field.setPlaceholderText("only if the endpoint needs one")
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        self.model_combo.setMinimumContentsLength(24)
        line = self.model_combo.lineEdit()
        if line is not None:
            line.setPlaceholderText("list the models, or type one")
        self.models_button = QPushButton("List models && test")
        self.models_button.clicked.connect(self._on_models_clicked)
        self.llm_result = _result_label()
        for edited in (self.url_field.textChanged, self.key_field.textChanged, self.model_combo.currentTextChanged):
            edited.connect(self._on_llm_edited)
        self.chat_note = small_label(
            "Chat needs a language model to answer: choose one here, then Finish opens Chat."
            " Add the bot token later in Settings to take the familiar to Discord."
        )
        self.chat_note.setVisible(False)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Kind", self.preset_combo)
        form.addRow("", self.preset_hint)
        form.addRow("Address", self.url_field)
        form.addRow("API key", self.key_field)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_combo, 1)
        model_row.addWidget(self.models_button)
        form.addRow("Model", model_row)
        layout = QVBoxLayout(page)
        layout.addWidget(title_label("Choose a language model"))
        layout.addWidget(small_label("Any OpenAI-compatible endpoint: one on this computer, or a hosted one."))
        layout.addWidget(self.chat_note)
        layout.addLayout(form)
        layout.addWidget(self.llm_result)
        layout.addStretch(1)
        return page

    # -- state -----------------------------------------------------------------------------------
    @property
    def step(self) -> str:
        return STEPS[self.pages.currentIndex()]

    @property
    def without_discord(self) -> bool:
        """The owner chose "Try it without Discord": the flow ends in Chat."""
        return self._without_discord

    def _go(self, index: int) -> None:
        self.pages.setCurrentIndex(index)
        self.step_label.setText(f"Step {index + 1} of {len(STEPS)}")
        last = index == len(STEPS) - 1
        self.next_button.setText((CHAT_LABEL if self._without_discord else FINISH_LABEL) if last else NEXT_LABEL)
        self.chat_note.setVisible(self._without_discord and last)
        self._sync_back()
        self._clear_error()

    def _sync_back(self) -> None:
        """Back goes to the step before: none on step 1, and not while a step is being saved or checked."""
        self.back_button.setEnabled(self.pages.currentIndex() > 0 and not self.ops.busy)

    def _advance(self) -> None:
        index = self.pages.currentIndex()
        if index == len(STEPS) - 1:
            if self._without_discord:
                self.chat_requested.emit()
            self.accept()
        else:
            self._go(index + 1)

    def _show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.setVisible(True)

    def _clear_error(self) -> None:
        self.error_label.clear()
        self.error_label.setVisible(False)

    @async_slot()
    async def load(self) -> None:
        """Fill the fields with the values in force (called once when the dialog is built)."""
        outcome = await self.ops.run("read the settings", self._facade.setup.current, busy=self._busy_widgets)
        if isinstance(outcome, Succeeded) and shiboken6.isValid(self):  # closed meanwhile: nothing to fill
            self._fill(outcome.value)

    def _fill(self, view: SettingsView) -> None:
        self._view = view
        if not self.name_field.text():
            self.name_field.setText(view.display_name)
        if view.named_by_card and self.pages.currentIndex() == 0:
            # Made from a card, still called by its name: the name is chosen, step 1 is done.
            _show(self.card_label, f"Made from a character card: its name, {view.card_name}, is taken.", ok=True)
            self.named_note.setText(f"{view.card_name} has its name from its character card (Back to change it).")
            self.named_note.setVisible(True)
            self._go(1)
        token = view.get("discord_token")
        lock_if_overridden(self.token_field, token)
        if token.is_set and not token.from_environment:
            self.token_field.setPlaceholderText(f"a token is saved ({token.hint}): paste another to replace it")
        url = view.get("llm.base_url")
        if url.value and not self.url_field.text():
            self.preset_combo.setCurrentText(preset_for(url.value).name)
            self.url_field.setText(url.value)
        elif not self.url_field.text():  # none set yet: the address of the kind shown, not just its placeholder
            self.url_field.setText(PRESETS[self.preset_combo.currentIndex()].base_url)
        lock_if_overridden(self.url_field, url)
        if url.from_environment:
            self.preset_combo.setEnabled(False)
        key = view.get("llm_api_key")
        lock_if_overridden(self.key_field, key)
        if key.is_set and not key.from_environment:
            self.key_field.setPlaceholderText(f"a key is saved ({key.hint}): leave empty to keep it")
        model = view.get("llm.model")
        if model.value and not self.model_combo.currentText():
            self.model_combo.setEditText(model.value)
        if model.from_environment:
            self.model_combo.setEnabled(False)
            self.model_combo.setToolTip(f"set by {model.variable}")

    def _overridden(self, key: str) -> bool:
        return self._view is not None and self._view.get(key).from_environment

    # -- step 1: the name, or a card -------------------------------------------------------------
    @async_slot()
    async def _on_card_clicked(self) -> None:
        path = await choose_file_to_open(self, "Choose a character card", CARD_FILTER)
        if path is not None:
            await self.choose_card(path)

    @async_slot(object)
    async def choose_card(self, path: Path) -> None:
        """Read the card at `path` and show what it brings; Next makes the familiar its character."""
        outcome = await self.ops.run(
            "read the card", lambda: self._facade.setup.preview_card(path), busy=self._busy_widgets
        )
        if isinstance(outcome, Succeeded):
            self._show_card(outcome.value)
        else:
            self._card = None
            self.card_label.clear()

    def _show_card(self, preview: CardPreview) -> None:
        self._card = preview.path
        self.name_field.setText(preview.name)
        self.name_field.setReadOnly(True)
        extras = [f"{preview.lore_entries} lore entries"] if preview.lore_entries else []
        if preview.has_greeting:
            extras.append("a greeting")
        brings = f" It brings {', '.join(extras)}." if extras else ""
        _show(
            self.card_label,
            f"{preview.name}, from {preview.source}.{brings} {preview.description}".strip(),
            ok=True,
        )

    # -- step 2: Discord -------------------------------------------------------------------------
    def _on_token_edited(self) -> None:
        self._last_check = None
        self.verdict_label.clear()
        self.invite_label.setVisible(False)

    def _typed_token(self) -> str | None:
        if self._overridden("discord_token"):
            return None
        return self.token_field.text().strip() or None

    @async_slot()
    async def _on_check_clicked(self) -> None:
        with self._keeping_focus():
            await self._check_token()

    async def _check_token(self, *, refusing: bool = False) -> DiscordCheck | None:
        """Ask Discord about the token typed; `refusing`: Next asked, so a rejected token's verdict also says
        how to go on without it (once: the verdict is the one place it is said)."""
        token = self._typed_token()
        _show(self.verdict_label, "Asking Discord…", ok=None)
        outcome = await self.ops.run(
            "check the token",
            lambda: self._facade.setup.check_discord(token),
            busy=(*self._busy_widgets, self.check_button),
        )
        if not isinstance(outcome, Succeeded):
            self.verdict_label.clear()
            return None
        check = outcome.value
        self._last_check = (token or "", check)
        self._show_verdict(check, refusing=refusing)
        return check

    def _show_verdict(self, check: DiscordCheck, *, refusing: bool) -> None:
        text = f"{check.message} {SKIP_TOKEN_HINT}" if refusing and not check.token_works else check.message
        _show(self.verdict_label, text, ok=check.verdict.value == "ok")
        if check.invite_url:
            self.invite_label.setText(
                f'Add the bot to your server: <a href="{check.invite_url}">{check.invite_url}</a>'
            )
            self.invite_label.setVisible(True)
        else:
            self.invite_label.setVisible(False)

    def _on_without_discord(self) -> None:
        """On to the language model without a token: Chat cannot answer without one."""
        self._without_discord = True
        self._go(STEPS.index("llm"))

    # -- step 3: the LLM -------------------------------------------------------------------------
    def _on_llm_edited(self) -> None:
        """The endpoint or model changed since the result shown: it no longer tells about them."""
        if not self._listing:
            self.llm_result.clear()

    def _on_preset_changed(self, index: int) -> None:
        preset = PRESETS[index]
        self.preset_hint.setText(preset.hint)
        if not self.url_field.isReadOnly() and preset.base_url:
            self.url_field.setText(preset.base_url)
        elif not self.url_field.isReadOnly():
            self.url_field.clear()
            self.url_field.setFocus()

    def _llm_draft(self) -> SettingsUpdate:
        url = None if self._overridden("llm.base_url") else self.url_field.text().strip()
        key = None if self._overridden("llm_api_key") else (self.key_field.text().strip() or None)
        model = None if self._overridden("llm.model") else self.model_combo.currentText().strip()
        return SettingsUpdate(llm_base_url=url, llm_api_key=key, llm_model=model)

    @async_slot()
    async def _on_models_clicked(self) -> None:
        with self._keeping_focus():
            await self._list_and_test()

    async def _list_and_test(self) -> None:
        draft = self._llm_draft()
        busy = (*self._busy_widgets, self.models_button)
        _show(self.llm_result, "Asking the endpoint for its models…", ok=None)

        def report(message: str) -> None:
            _show(self.llm_result, message, ok=False)

        listed = await self.ops.run(
            "list the models", lambda: self._facade.setup.list_models(draft), busy=busy, report=report
        )
        if not isinstance(listed, Succeeded):
            return
        models = listed.value
        typed = self.model_combo.currentText().strip()
        chosen = typed if typed in models.models else models.current if models.current in models.models else ""
        if not chosen and models.models:
            chosen = models.models[0]
        self._listing = True
        try:
            self.model_combo.clear()
            self.model_combo.addItems(list(models.models))
            self.model_combo.setEditText(chosen)
        finally:
            self._listing = False
        if not models.models:
            _show(self.llm_result, f"{models.base_url} lists no models: type the model's name.", ok=False)
            return
        draft = self._llm_draft()
        tested = await self.ops.run(
            "test the endpoint", lambda: self._facade.setup.test_endpoint(draft), busy=busy, report=report
        )
        if isinstance(tested, Succeeded):
            count = len(models.models)
            _show(self.llm_result, f"{count} model{'s' if count != 1 else ''} listed. {tested.value}", ok=True)

    # -- navigation ------------------------------------------------------------------------------
    def _on_back(self) -> None:
        if self.step == "llm":
            self._without_discord = False  # back to Discord: the token is an option again
        self._go(max(0, self.pages.currentIndex() - 1))

    def _on_skip(self) -> None:
        self._advance()

    @async_slot()
    async def _on_next(self) -> None:
        with self._keeping_focus():
            if await self._save_step():
                self._advance()

    @contextlib.contextmanager
    def _keeping_focus(self) -> Iterator[None]:
        """The focus back where it was once a call is over: the buttons disabled meanwhile pass it on (to "Try
        it without Discord", say, which Enter would then press)."""
        had = self.focusWidget()
        try:
            yield
        finally:
            alive = shiboken6.isValid(self) and had is not None and shiboken6.isValid(had)
            if alive and had is not None and had.isVisible() and had.isEnabled():
                had.setFocus()

    async def _save_step(self) -> bool:
        """Save what this step's fields say; False (with the message shown) keeps the step open."""
        setup = self._facade.setup
        if self.step == "name":
            card = self._card
            if card is not None:

                async def apply() -> SettingsView:
                    await setup.apply_card(card)
                    return await setup.current()  # its name is the familiar's now

                applied = await self.ops.run("use the card", apply, busy=self._busy_widgets)
                if isinstance(applied, Succeeded):
                    self._view = applied.value
                    self._card = None  # applied: Back then Next does not make it again
                    self.name_field.setReadOnly(False)
                return self._saved(isinstance(applied, Succeeded))
            name = self.name_field.text().strip()
            if self._view is not None and name == self._view.display_name:
                return True
            return await self._save(SettingsUpdate(display_name=name))
        if self.step == "discord":
            token = self._typed_token()
            if token is None:
                return True
            check = self._last_check[1] if self._last_check and self._last_check[0] == token else None
            if check is None:
                check = await self._check_token(refusing=True)
            elif not check.token_works:
                self._show_verdict(check, refusing=True)
            if check is None or not check.token_works:
                return False  # the verdict says why, and that Skip goes on without it
            return await self._save(SettingsUpdate(bot_token=token))
        return await self._save(self._llm_draft())

    async def _save(self, update: SettingsUpdate) -> bool:
        if update.empty:
            return True
        outcome = await self.ops.run("save", lambda: self._facade.setup.save(update), busy=self._busy_widgets)
        if isinstance(outcome, Succeeded):
            self._view = outcome.value
        return self._saved(isinstance(outcome, Succeeded))

    def _saved(self, ok: bool) -> bool:
        if ok:
            self.saved.emit()
        return ok
