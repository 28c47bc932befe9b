"""A one-line red banner for the last failure; hidden while there is nothing to say."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from app.ui.theme import error_banner_style


class ErrorBanner(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)  # messages come from outside: never render them as HTML
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setStyleSheet(error_banner_style())
        self.setVisible(False)

    def show_message(self, message: str) -> None:
        self.setText(message)
        self.setVisible(bool(message))

    def clear_message(self) -> None:
        self.clear()
        self.setVisible(False)
