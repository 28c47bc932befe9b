"""A QTableView that says something useful while its model is empty."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QTableView, QWidget

from app.ui.theme import colours

PLACEHOLDER_MARGIN = 16


class PlaceholderTableView(QTableView):
    def __init__(self, placeholder: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._placeholder = placeholder

    def placeholder(self) -> str:
        return self._placeholder

    def set_placeholder(self, text: str) -> None:
        if text != self._placeholder:
            self._placeholder = text
            self.viewport().update()

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        model = self.model()
        if not self._placeholder or model is None or model.rowCount() > 0:
            return
        painter = QPainter(self.viewport())
        try:
            painter.setPen(QColor(colours().muted))
            area = (
                self.viewport()
                .rect()
                .adjusted(PLACEHOLDER_MARGIN, PLACEHOLDER_MARGIN, -PLACEHOLDER_MARGIN, -PLACEHOLDER_MARGIN)
            )
            painter.drawText(area, Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, self._placeholder)
        finally:
            painter.end()
