"""Settings: the bot token and the LLM endpoint, for the first run and later.

Empty fields mean "leave unchanged" (the facade gets None), so the dialog never needs to read secrets back.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.runtime.facade import FamiliarFacade
from app.ui.async_slot import async_slot
from app.ui.error_text import single_line
from app.ui.ops import Operations, Succeeded
from app.ui.theme import ERROR_RED, MUTED_GREY, OK_GREEN, small_label, text_colour_style, title_label

_log = logging.getLogger(__name__)

DEFAULT_BASE_URL_HINT = "http://127.0.0.1:11434/v1"
TEST_LABEL = "Test endpoint"
SAVE_AND_TEST_LABEL = "Save endpoint && test"


def _value(field: QLineEdit) -> str | None:
    return field.text().strip() or None


class SettingsDialog(QDialog):
    """Emits `saved` after the credentials were stored (before it closes)."""

    saved = Signal()

    def __init__(self, facade: FamiliarFacade, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._facade = facade
        self._busy = False
        self.ops = Operations(show_error=self._show_error, parent=self)
        self.setWindowTitle("Familiar settings")
        self.setMinimumWidth(520)

        status = facade.get_status()
        intro = (
            f"Still missing: {', '.join(status.missing)}."
            if status.missing
            else "Leave a field empty to keep its current value."
        )

        self.bot_token = QLineEdit()
        self.bot_token.setEchoMode(QLineEdit.EchoMode.Password)
        self.bot_token.setPlaceholderText("from the Discord developer portal")
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText(DEFAULT_BASE_URL_HINT)
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("optional")
        self.model = QLineEdit()
        self.model.setPlaceholderText("e.g. llama3.1:8b")

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setHorizontalSpacing(12)
        form.setVerticalSpacing(8)
        form.addRow("Bot token", self.bot_token)
        form.addRow("LLM base URL", self.base_url)
        form.addRow("API key", self.api_key)
        form.addRow("Model", self.model)

        self.test_button = QPushButton(TEST_LABEL)
        self.test_button.setToolTip(
            "Sends a tiny request to the endpoint. If you filled in endpoint fields, they are saved first."
        )
        self.test_button.clicked.connect(self._on_test_clicked)
        self.test_result = QLabel()
        self.test_result.setWordWrap(True)
        self.test_result.setTextFormat(Qt.TextFormat.PlainText)
        self.test_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.test_result, 1)
        for field in (self.base_url, self.api_key, self.model):
            field.textChanged.connect(self._on_endpoint_field_changed)

        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)
        self.error_label.setStyleSheet(text_colour_style(ERROR_RED))
        self.error_label.setVisible(False)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._on_save_clicked)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 16, 18, 16)
        layout.setSpacing(10)
        layout.addWidget(title_label("Settings"))
        layout.addWidget(small_label(intro))
        layout.addLayout(form)
        layout.addWidget(
            small_label(
                f"The bot token and the API key are stored in: {facade.secrets_location}. "
                "The base URL and the model are written to character.toml. "
                "Empty fields keep their current value."
            )
        )
        layout.addLayout(test_row)
        layout.addWidget(self.error_label)
        layout.addStretch(1)
        layout.addWidget(self.buttons)

    def reject(self) -> None:
        """Cancel, Escape and the title bar close; ignored while a save or a test is in flight."""
        if not self._busy:
            super().reject()

    def _endpoint_edited(self) -> bool:
        return any(_value(field) is not None for field in (self.base_url, self.api_key, self.model))

    def _on_endpoint_field_changed(self) -> None:
        self.test_button.setText(SAVE_AND_TEST_LABEL if self._endpoint_edited() else TEST_LABEL)

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.test_button.setEnabled(not busy)
        for button in (QDialogButtonBox.StandardButton.Save, QDialogButtonBox.StandardButton.Cancel):
            self.buttons.button(button).setEnabled(not busy)

    def _show_result(self, text: str, *, ok: bool | None) -> None:
        colour = MUTED_GREY if ok is None else OK_GREEN if ok else ERROR_RED
        self.test_result.setStyleSheet(text_colour_style(colour))
        self.test_result.setText(text)

    @async_slot()
    async def _on_test_clicked(self) -> None:
        if self._busy:
            return
        self._set_busy(True)
        self._show_result("Testing…", ok=None)
        try:
            outcome = await self.ops.run(
                "test the endpoint", self._save_endpoint_then_test, report=lambda m: self._show_result(m, ok=False)
            )
        finally:
            self._set_busy(False)
        if isinstance(outcome, Succeeded):
            self._show_result(single_line(outcome.value), ok=True)

    async def _save_endpoint_then_test(self) -> str:
        if self._endpoint_edited():
            await self._facade.save_credentials(
                bot_token=None,
                llm_base_url=_value(self.base_url),
                llm_api_key=_value(self.api_key),
                llm_model=_value(self.model),
            )
            self.saved.emit()
        return await self._facade.test_llm_endpoint()

    @async_slot()
    async def _on_save_clicked(self) -> None:
        if self._busy:
            return
        self._set_busy(True)
        self.error_label.setVisible(False)
        try:
            outcome = await self.ops.run(
                "save",
                lambda: self._facade.save_credentials(
                    bot_token=_value(self.bot_token),
                    llm_base_url=_value(self.base_url),
                    llm_api_key=_value(self.api_key),
                    llm_model=_value(self.model),
                ),
            )
        finally:
            self._set_busy(False)
        if isinstance(outcome, Succeeded):
            self.saved.emit()
            self.accept()

    def _show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.setVisible(True)
