"""A sheet of a pane's keys ("?"): what each key does, from the pane's own actions, so it stays true."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QGridLayout, QLabel, QVBoxLayout, QWidget

from app.ui.theme import section_label


def key_text(sequence: QKeySequence) -> str:
    """A key as it is pressed: 'a' for the plain letter key (Qt writes it 'A', which reads as Shift+A),
    'Shift+A', '?', 'F1', 'Shift+Del'."""
    text = sequence.toString(QKeySequence.SequenceFormat.NativeText)
    return text.lower() if len(text) == 1 and text.isalpha() else text


def keys_text(action: QAction) -> str:
    """'a', 'Shift+A', 'd or Shift+Del'."""
    return " or ".join(key_text(s) for s in action.shortcuts())


class ShortcutSheet(QDialog):
    def __init__(self, title: str, actions: Sequence[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{title}: keys")
        grid = QGridLayout()
        grid.setHorizontalSpacing(18)
        grid.setVerticalSpacing(4)
        self.rows: list[tuple[str, str]] = []
        for row, action in enumerate(a for a in actions if a.shortcuts()):
            keys = keys_text(action)
            what = action.statusTip() or action.text().replace("&", "")
            self.rows.append((keys, what))
            key_label = QLabel(keys)
            font = key_label.font()
            font.setBold(True)
            key_label.setFont(font)
            grid.addWidget(key_label, row, 0, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
            text = QLabel(what)
            text.setTextFormat(Qt.TextFormat.PlainText)
            text.setWordWrap(True)
            grid.addWidget(text, row, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(section_label(f"Keys of the {title.lower()}"))
        layout.addLayout(grid)
        layout.addWidget(buttons)
