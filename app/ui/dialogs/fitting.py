"""A dialog as tall as its wrapped text needs.

A top-level widget's minimum size does not count text that wraps (a QLabel with word wrap has a height
for its width, not a minimum height), so when a dialog shows a longer verdict, a note or a hint that wraps
after it was first sized, Qt squeezes the rows into each other and cuts the text. `FittingDialog` looks
again each time its layout asks to be redone and grows to the height its layout needs at its width.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QDialog


class FittingDialog(QDialog):
    def event(self, event: QEvent) -> bool:
        handled = super().event(event)
        if event.type() == QEvent.Type.LayoutRequest:
            self.fit()
        return handled

    def fit(self) -> None:
        """Grow (never shrink) to the height the layout needs at this width."""
        layout = self.layout()
        if layout is None or not layout.hasHeightForWidth():
            return
        needed = layout.totalHeightForWidth(self.width())
        if needed > self.height():
            self.resize(self.width(), needed)
