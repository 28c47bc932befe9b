"""Dialogs opened window-modal from a coroutine: the window stays live (no nested event loop)."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog


async def window_modal(dialog: QDialog) -> int:
    """Open `dialog` window-modal, without a nested event loop, and wait until it finishes: its result code.
    It is deleted later (after the caller, on the same turn of the loop, has read what it chose)."""
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def finished(result: int) -> None:
        if not done.done():
            done.set_result(result)

    dialog.finished.connect(finished)
    dialog.open()
    try:
        return await done
    finally:
        dialog.deleteLater()
