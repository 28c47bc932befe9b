"""Settings: the values in force, where each comes from, and saving that applies at once.

Every field shows the value in force (`facade.setup.current()`), and beside it where that comes from:
character.toml, the OS keyring or the secrets file, the built-in default, or an environment variable. A value
an environment variable sets is read-only, "set by <VARIABLE>": it would win over anything saved here.
Secrets are never read back: their field is empty, with the last characters of the saved one as a hint;
an empty secret field keeps the saved one.

Test (and List models) ask the endpoint that would really be used: the typed values, except where the
environment overrides them, without saving anything. Save sends only what changed to `facade.setup.save`,
which checks it all first and then puts it in force everywhere (replies, the background memory workers,
the persona and the lorebook). The background endpoint, model and key are optional: empty, they follow the
reply endpoint. "Run the welcome again" asks the window for the welcome flow (`welcome_requested`).
"""

from __future__ import annotations

import logging

import shiboken6
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.runtime.api.facade import FamiliarFacade
from app.runtime.api.setup_views import SettingsUpdate, SettingsView, SettingValue, Which
from app.ui.async_slot import async_slot
from app.ui.dialogs.fitting import FittingDialog
from app.ui.error_text import single_line
from app.ui.ops import Operations, Succeeded
from app.ui.theme import (
    AMBER,
    ERROR_RED,
    MUTED_GREY,
    OK_GREEN,
    section_label,
    small_label,
    text_colour_style,
    title_label,
)

_log = logging.getLogger(__name__)

DEFAULT_BASE_URL_HINT = "http://127.0.0.1:11434/v1"
TEST_LABEL = "Test endpoint"
BACKGROUND_TEST_LABEL = "Test background endpoint"
FOLLOWS = "empty: follows the reply endpoint"
# field attribute -> the setting it edits (a key with a dot is in character.toml, one without a secret)
FIELDS: dict[str, str] = {
    "display_name": "familiar.display_name",
    "bot_token": "discord_token",
    "base_url": "llm.base_url",
    "model": "llm.model",
    "api_key": "llm_api_key",
    "background_base_url": "llm.background.base_url",
    "background_model": "llm.background.model",
    "background_api_key": "llm_background_api_key",
}


def _line(*, secret: bool = False, placeholder: str = "") -> QLineEdit:
    field = QLineEdit()
    if secret:
        field.setEchoMode(QLineEdit.EchoMode.Password)
    field.setPlaceholderText(placeholder)
    return field


def _source_label() -> QLabel:
    label = small_label("")
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class SettingsDialog(FittingDialog):
    """Emits `saved` after settings were saved and put in force (before it closes)."""

    saved = Signal()
    welcome_requested = Signal()

    def __init__(self, facade: FamiliarFacade, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._facade = facade
        self._busy = False
        self._view: SettingsView | None = None
        # Not a Qt child: a load still running when the dialog is deleted must not find its Operations gone.
        self.ops = Operations(show_error=self._show_error)
        self.setWindowTitle("Familiar settings")
        self.setMinimumWidth(620)

        self.display_name = _line(placeholder="e.g. Wisp")
        self.bot_token = _line(secret=True, placeholder="from the Discord developer portal")
        self.base_url = _line(placeholder=DEFAULT_BASE_URL_HINT)
        self.model = _line(placeholder="e.g. llama3.1:8b")
        self.api_key = _line(secret=True, placeholder="optional")
        self.background_base_url = _line(placeholder=FOLLOWS)
        self.background_model = _line(placeholder=FOLLOWS)
        self.background_api_key = _line(secret=True, placeholder=FOLLOWS)
        self.sources: dict[str, QLabel] = {name: _source_label() for name in FIELDS}

        def form(rows: tuple[tuple[str, str], ...]) -> QFormLayout:
            layout = QFormLayout()
            layout.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
            layout.setHorizontalSpacing(12)
            layout.setVerticalSpacing(2)
            for name, label in rows:
                column = QVBoxLayout()
                column.setSpacing(0)
                column.addWidget(self.field(name))
                column.addWidget(self.sources[name])
                layout.addRow(label, column)
            return layout

        self.test_button = QPushButton(TEST_LABEL)
        self.test_button.setToolTip("Sends a tiny request to the endpoint that would be used. Saves nothing.")
        self.test_button.clicked.connect(lambda: self._on_test_clicked("replies"))
        self.background_test_button = QPushButton(BACKGROUND_TEST_LABEL)
        self.background_test_button.clicked.connect(lambda: self._on_test_clicked("background"))
        self.test_result = QLabel()
        self.test_result.setWordWrap(True)
        self.test_result.setTextFormat(Qt.TextFormat.PlainText)
        self.test_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.background_test_button)
        test_row.addStretch(1)

        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)
        self.error_label.setStyleSheet(text_colour_style(ERROR_RED))
        self.error_label.setVisible(False)

        self.welcome_button = QPushButton("Run the welcome again…")
        self.welcome_button.clicked.connect(self._on_welcome_clicked)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.addButton(self.welcome_button, QDialogButtonBox.ButtonRole.ResetRole)
        self.buttons.accepted.connect(self._on_save_clicked)
        self.buttons.rejected.connect(self.reject)
        self.where_label = small_label("")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 16, 18, 16)
        layout.setSpacing(8)
        layout.addWidget(title_label("Settings"))
        layout.addWidget(
            small_label("Beside each value: where it comes from. Empty secret fields keep the saved secret.")
        )
        layout.addLayout(form((("display_name", "Name"), ("bot_token", "Bot token"))))
        layout.addWidget(section_label("Replies"))
        layout.addLayout(form((("base_url", "LLM endpoint"), ("model", "Model"), ("api_key", "API key"))))
        layout.addWidget(section_label("Background memory work (optional)"))
        layout.addWidget(small_label("A separate, e.g. cheaper or local, model for extraction and summaries."))
        layout.addLayout(
            form(
                (
                    ("background_base_url", "Endpoint"),
                    ("background_model", "Model"),
                    ("background_api_key", "API key"),
                )
            )
        )
        layout.addLayout(test_row)
        layout.addWidget(self.test_result)
        layout.addWidget(self.where_label)
        layout.addWidget(self.error_label)
        layout.addStretch(1)
        layout.addWidget(self.buttons)
        self.load()

    def field(self, name: str) -> QLineEdit:
        widget = getattr(self, name)
        assert isinstance(widget, QLineEdit)
        return widget

    # -- reading -----------------------------------------------------------------------------------
    @async_slot()
    async def load(self) -> None:
        """Show the values in force and their sources (called once when the dialog is built)."""
        outcome = await self.ops.run("read the settings", self._facade.setup.current)
        if isinstance(outcome, Succeeded) and shiboken6.isValid(self):  # closed meanwhile: nothing to fill
            self._fill(outcome.value)

    def _fill(self, view: SettingsView) -> None:
        self._view = view
        for name, key in FIELDS.items():
            value = view.get(key)
            field = self.field(name)
            self.sources[name].setText(self._source_text(value))
            self.sources[name].setStyleSheet(text_colour_style(AMBER if value.from_environment else MUTED_GREY))
            if not value.secret:
                field.setText(value.value)
            else:
                field.clear()
                if value.is_set and not value.from_environment:
                    field.setPlaceholderText("saved: leave empty to keep it, or paste a new one")
            field.setReadOnly(value.from_environment)
            field.setToolTip(
                f"set by {value.variable}: change or unset it to change this" if value.from_environment else ""
            )
        self.where_label.setText(f"Settings file: {view.settings_file}. Secrets are saved in: {view.secrets_location}.")

    @staticmethod
    def _source_text(value: SettingValue) -> str:
        text = value.describe()
        if value.secret and value.hint:
            text += f" ({value.hint})"
        return text

    def _typed(self, name: str) -> str | None:
        """What to send for field `name`: None when it is unchanged, set by the environment, or an
        empty secret field (which keeps the saved secret)."""
        field = self.field(name)
        text = field.text().strip()
        if field.echoMode() == QLineEdit.EchoMode.Password:
            return None if field.isReadOnly() else text or None
        if self._view is None:
            return text or None
        value = self._view.get(FIELDS[name])
        return None if value.from_environment or text == value.value else text

    def draft(self) -> SettingsUpdate:
        """The changes typed: what Save sends and what Test tries (unchanged fields are None)."""
        return SettingsUpdate(
            display_name=self._typed("display_name"),
            bot_token=self._typed("bot_token"),
            llm_base_url=self._typed("base_url"),
            llm_model=self._typed("model"),
            llm_api_key=self._typed("api_key"),
            background_base_url=self._typed("background_base_url"),
            background_model=self._typed("background_model"),
            background_api_key=self._typed("background_api_key"),
        )

    # -- acting ------------------------------------------------------------------------------------
    def reject(self) -> None:
        """Cancel, Escape and the title bar close; ignored while a save or a test is in flight."""
        if not self._busy:
            super().reject()

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        for button in (self.test_button, self.background_test_button, self.welcome_button):
            button.setEnabled(not busy)
        for standard in (QDialogButtonBox.StandardButton.Save, QDialogButtonBox.StandardButton.Cancel):
            self.buttons.button(standard).setEnabled(not busy)

    def _show_result(self, text: str, *, ok: bool | None) -> None:
        colour = MUTED_GREY if ok is None else OK_GREEN if ok else ERROR_RED
        self.test_result.setStyleSheet(text_colour_style(colour))
        self.test_result.setText(text)

    @async_slot(str)
    async def _on_test_clicked(self, which: Which) -> None:
        if self._busy:
            return
        self._set_busy(True)
        self._show_result("Testing…", ok=None)
        draft = self.draft()
        try:
            outcome = await self.ops.run(
                "test the endpoint",
                lambda: self._facade.setup.test_endpoint(draft, which),
                report=lambda m: self._show_result(m, ok=False),
            )
        finally:
            self._set_busy(False)
        if isinstance(outcome, Succeeded):
            self._show_result(single_line(outcome.value), ok=True)

    @async_slot()
    async def _on_save_clicked(self) -> None:
        if self._busy:
            return
        self._set_busy(True)
        self.error_label.setVisible(False)
        update = self.draft()
        try:
            outcome = await self.ops.run("save", lambda: self._facade.setup.save(update))
        finally:
            self._set_busy(False)
        if isinstance(outcome, Succeeded):
            self._fill(outcome.value)
            self.saved.emit()
            self.accept()

    def _on_welcome_clicked(self) -> None:
        if self._busy:
            return
        self.welcome_requested.emit()
        self.accept()

    def _show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.setVisible(True)
