"""A button that drops a menu down without a nested event loop.

`QToolButton.setMenu` opens its menu with `QMenu.exec()`, a nested Qt loop: under qasync every asyncio
task resumed while the menu is open, or while a dialog one of its actions opened is, fails with "Cannot
enter into task" (issue 18). This button opens its menu with `popup()` instead, below itself, and shows
itself pressed while the menu is open.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QMenu, QToolButton, QWidget


class MenuButton(QToolButton):
    def __init__(self, text: str, tooltip: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setText(text)
        self.setToolTip(tooltip)
        self.popup_menu = QMenu(self)
        self.popup_menu.aboutToHide.connect(lambda: self.setDown(False))
        self.clicked.connect(self.drop_down)

    def drop_down(self) -> None:
        """Open the menu below the button (above it where the screen ends first: Qt moves it)."""
        if not self.popup_menu.isVisible():
            self.setDown(True)
            self.popup_menu.popup(self.mapToGlobal(QPoint(0, self.height())))
