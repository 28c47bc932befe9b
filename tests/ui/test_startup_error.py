"""The start-up error dialog shows one line and returns once dismissed."""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import QApplication, QMessageBox
from pytestqt.qtbot import QtBot

from app.ui.dialogs.startup_error import TITLE, show_startup_error
from tests.ui.support import QT_STRICT, WAIT_MS

pytestmark = QT_STRICT


def visible_boxes() -> list[QMessageBox]:
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]


def test_shows_the_message_and_returns_when_closed(qtbot: QtBot) -> None:
    task = asyncio.ensure_future(show_startup_error("Cannot write to the data folder /x:\nPermission denied."))
    qtbot.waitUntil(lambda: len(visible_boxes()) == 1, timeout=WAIT_MS)
    box = visible_boxes()[0]

    assert box.windowTitle() == TITLE
    assert box.text() == "Cannot write to the data folder /x: Permission denied."
    assert not task.done()

    box.button(QMessageBox.StandardButton.Close).click()
    qtbot.waitUntil(task.done, timeout=WAIT_MS)
    assert task.result() is None
    assert visible_boxes() == []
