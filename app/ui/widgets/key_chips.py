"""Lorebook keys as chips: one removable chip per key, a field to add one, checked as you type.

`check` says why a key can never match (an invalid or too long regex: "/drag(on/"), or None; it must do
no I/O (facade.lore.check_key). The error shows inline under the field and Enter does not add a key it
names. Enter (or a comma) adds the typed key; Backspace in the empty field takes the last chip back
into the field for editing; a chip's × removes it. `keys_changed` carries the keys after each change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QLabel, QLineEdit, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from app.ui.theme import ERROR_RED, chip_style
from app.ui.widgets.flow_layout import FlowLayout


class KeyChips(QWidget):
    keys_changed = Signal(tuple)

    def __init__(self, check: Callable[[str], str | None], placeholder: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._check = check
        self._keys: tuple[str, ...] = ()
        self._chips_host = QWidget()
        self._flow = FlowLayout(self._chips_host)
        self.field = QLineEdit()
        self.field.setPlaceholderText(placeholder)
        self.field.setToolTip(
            "Type a key and press Enter (or a comma). /pattern/flags is a regular expression. "
            "Backspace in the empty field edits the last key."
        )
        self.field.textEdited.connect(self._on_edited)
        self.field.returnPressed.connect(self.commit_typed)
        self.field.installEventFilter(self)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {ERROR_RED};")
        self.error.setVisible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        layout.addWidget(self._chips_host)
        layout.addWidget(self.field)
        layout.addWidget(self.error)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)

    # -- state -----------------------------------------------------------------------------------------
    @property
    def keys(self) -> tuple[str, ...]:
        return self._keys

    def set_keys(self, keys: Sequence[str]) -> None:
        """Show these keys (no signal)."""
        self._keys = tuple(keys)
        self.field.clear()
        self._show_error(None)
        self._rebuild()

    def chip_texts(self) -> list[str]:
        return [self._flow.itemAt(i).widget().text().removesuffix("  ×") for i in range(self._flow.count())]  # type: ignore[union-attr]

    # -- editing ---------------------------------------------------------------------------------------
    def _on_edited(self, text: str) -> None:
        if "," in text and not text.lstrip().startswith("/"):
            parts = text.split(",")
            for part in parts[:-1]:
                self._add(part)
            self.field.setText(parts[-1].lstrip())
            return
        self._show_error(self._check(text.strip()) if text.strip() else None)

    def commit_typed(self) -> bool:
        """Add what is typed; False (and the error shown) when it cannot match."""
        text = self.field.text().strip()
        if not text:
            return True
        if self._add(text):
            self.field.clear()
            return True
        return False

    def _add(self, text: str) -> bool:
        key = text.strip()
        if not key:
            return True
        problem = self._check(key)
        if problem is not None:
            self._show_error(problem)
            return False
        self._show_error(None)
        if key not in self._keys:
            self._keys = (*self._keys, key)
            self._rebuild()
            self.keys_changed.emit(self._keys)
        return True

    def remove(self, key: str) -> None:
        if key in self._keys:
            self._keys = tuple(k for k in self._keys if k != key)
            self._rebuild()
            self.keys_changed.emit(self._keys)

    def _show_error(self, problem: str | None) -> None:
        self.error.setText(problem or "")
        self.error.setVisible(problem is not None)
        self.field.setStyleSheet(f"border: 1px solid {ERROR_RED};" if problem else "")

    def _rebuild(self) -> None:
        while (item := self._flow.takeAt(0)) is not None:
            widget = item.widget()
            if widget is not None:
                widget.deleteLater()
        for key in self._keys:
            chip = QToolButton()
            chip.setText(f"{key}  ×")
            # Its own text colour with its background, in the theme's colours: the pill used to keep the
            # window's text colour, near-white on a near-white pill in the dark theme.
            chip.setStyleSheet(chip_style(regex=key.startswith("/")))
            chip.setToolTip(f"Remove the key “{key}”")
            chip.setAccessibleName(f"key {key}")
            chip.clicked.connect(lambda _checked=False, k=key: self.remove(k))
            self._flow.addWidget(chip)
        self._chips_host.setVisible(bool(self._keys))
        self._flow.invalidate()
        self.updateGeometry()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            watched is self.field
            and isinstance(event, QKeyEvent)
            and event.type() == QKeyEvent.Type.KeyPress
            and event.key() == Qt.Key.Key_Backspace
            and not self.field.text()
            and self._keys
        ):
            last = self._keys[-1]
            self.remove(last)
            self.field.setText(last)
            return True
        return False
