"""Dialogs opened window-modal from a coroutine: the window stays live (no nested event loop).

Under qasync the asyncio loop is Qt's own loop. `QDialog.exec()`, `QMenu.exec()` and the static
`QFileDialog.get*`, `QInputDialog.get*` and `QMessageBox.question / warning / ...` helpers start a nested
Qt loop; an asyncio task resumed inside it fails with "Cannot enter into task" while the task that opened
the dialog is still executing, and the background workers die one by one (issue 18). Every dialog of the
window opens through one of these instead: `open()`, then wait for `finished`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QFileDialog, QInputDialog, QLineEdit, QMessageBox, QWidget


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


async def accepted(dialog: QDialog) -> bool:
    """Open `dialog` window-modal (as `window_modal`) and say whether it was accepted."""
    return await window_modal(dialog) == QDialog.DialogCode.Accepted


async def choose_file_to_open(parent: QWidget, caption: str, filters: str) -> Path | None:
    """An existing file the user picks (None: cancelled), as QFileDialog.getOpenFileName without its loop."""
    dialog = QFileDialog(parent, caption, "", filters)
    dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptOpen)
    if not await accepted(dialog):
        return None
    files = dialog.selectedFiles()
    return Path(files[0]) if files else None


async def choose_file_to_save(parent: QWidget, caption: str, suggested: str, filters: str) -> tuple[Path, str] | None:
    """Where to write (the file and the filter picked; None: cancelled), as QFileDialog.getSaveFileName
    without its loop (which also asks before an existing file is replaced)."""
    dialog = QFileDialog(parent, caption, "", filters)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    dialog.setFileMode(QFileDialog.FileMode.AnyFile)
    dialog.selectFile(suggested)
    if not await accepted(dialog):
        return None
    files = dialog.selectedFiles()
    return (Path(files[0]), dialog.selectedNameFilter()) if files else None


def _input_dialog(parent: QWidget, title: str, label: str) -> QInputDialog:
    dialog = QInputDialog(parent)
    dialog.setWindowTitle(title)
    dialog.setLabelText(label)
    return dialog


async def ask_item(parent: QWidget, title: str, label: str, items: Sequence[str]) -> str | None:
    """One of `items`, picked from a list (None: cancelled)."""
    dialog = _input_dialog(parent, title, label)
    dialog.setComboBoxItems(list(items))
    dialog.setComboBoxEditable(False)
    if items:
        dialog.setTextValue(items[0])
    return dialog.textValue() if await accepted(dialog) else None


async def ask_int(parent: QWidget, title: str, label: str, value: int, low: int, high: int) -> int | None:
    """A whole number between `low` and `high` (None: cancelled)."""
    dialog = _input_dialog(parent, title, label)
    dialog.setInputMode(QInputDialog.InputMode.IntInput)
    dialog.setIntRange(low, high)
    dialog.setIntValue(value)
    return dialog.intValue() if await accepted(dialog) else None


async def ask_text(parent: QWidget, title: str, label: str) -> str | None:
    """A line of text (None: cancelled)."""
    dialog = _input_dialog(parent, title, label)
    dialog.setInputMode(QInputDialog.InputMode.TextInput)
    dialog.setTextEchoMode(QLineEdit.EchoMode.Normal)
    return dialog.textValue() if await accepted(dialog) else None


async def ask_buttons(
    parent: QWidget,
    icon: QMessageBox.Icon,
    title: str,
    text: str,
    buttons: QMessageBox.StandardButton,
    default: QMessageBox.StandardButton,
    *,
    labels: Mapping[QMessageBox.StandardButton, str] | None = None,
) -> QMessageBox.StandardButton:
    """The button the user pressed in a message box (Escape or closing it: the box's escape button).
    `labels` gives some buttons words of their own ("Clear local chat" rather than "OK")."""
    box = QMessageBox(icon, title, text, buttons, parent)
    box.setDefaultButton(default)
    for button, label in (labels or {}).items():
        shown = box.button(button)
        if shown is not None:
            shown.setText(label)
    box.setTextFormat(Qt.TextFormat.PlainText)
    await window_modal(box)
    clicked = box.clickedButton()
    return box.standardButton(clicked) if clicked is not None else QMessageBox.StandardButton.Cancel
