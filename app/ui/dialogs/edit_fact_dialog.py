"""Correct a fact's text: the timeline's Edit (E). The corrected text becomes a new version of the fact."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLineEdit, QVBoxLayout, QWidget

from app.ui.dialogs.modal import window_modal
from app.ui.theme import small_label


class EditFactDialog(QDialog):
    """Correct a fact's text (Enter saves, Escape cancels)."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit a fact")
        self.setMinimumWidth(520)
        self.editor = QLineEdit(" ".join(text.split()))
        self.editor.selectAll()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.editor.returnPressed.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addWidget(small_label("The corrected text becomes a new version; the old one stays in the history."))
        layout.addWidget(self.editor)
        layout.addWidget(buttons)

    def text(self) -> str:
        return " ".join(self.editor.text().split())


async def ask_for_text(text: str, parent: QWidget | None) -> str | None:
    """The edit dialog, window-modal without a nested event loop; the new text, or None."""
    dialog = EditFactDialog(text, parent)
    result = await window_modal(dialog)
    new = dialog.text()
    return new if result == QDialog.DialogCode.Accepted and new and new != " ".join(text.split()) else None
