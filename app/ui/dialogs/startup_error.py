"""The one message shown when the familiar cannot even open (unwritable data folder, broken character.toml...)."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from app.ui.error_text import single_line

TITLE = "Familiar could not start"


def startup_error_box(message: str, parent: QWidget | None = None) -> QMessageBox:
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle(TITLE)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(single_line(message) or TITLE)
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    return box


async def show_startup_error(message: str) -> None:
    """Show `message` in a dialog and return once the user has dismissed it (without a nested event loop)."""
    box = startup_error_box(message)
    dismissed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_finished(_result: int) -> None:
        if not dismissed.done():
            dismissed.set_result(None)

    box.finished.connect(on_finished)
    box.show()
    try:
        await dismissed
    finally:
        box.hide()
        box.deleteLater()
