"""A splitter whose children keep their shares of it: what they show never moves the handle.

A QSplitter hands its children new sizes whenever their size hints change and it lays out again (an
editor shown and hidden, a bar of buttons appearing, the pane shown again after another page): the list
beside a detail then jumps in width as the owner works through it. `StableSplitter` gives each child a
share of its length, keeps those shares through every layout and resize, and changes them only when the
owner drags the handle (or a child's minimum size leaves no choice).
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import QSplitter, QWidget


class StableSplitter(QSplitter):
    def __init__(self, orientation: Qt.Orientation, shares: Sequence[float], parent: QWidget | None = None) -> None:
        """`shares`: each child's part of the length, in the order the children are added (summing to anything)."""
        super().__init__(orientation, parent)
        total = sum(shares)
        if total <= 0 or any(share <= 0 for share in shares):
            raise ValueError("every share must be above 0")
        self._shares = [share / total for share in shares]
        self._applying = False
        self.splitterMoved.connect(self._on_splitter_moved)

    @property
    def shares(self) -> tuple[float, ...]:
        return tuple(self._shares)

    def _length(self) -> int:
        extent = self.width() if self.orientation() == Qt.Orientation.Horizontal else self.height()
        return max(0, extent - self.handleWidth() * max(0, self.count() - 1))

    def _apply(self) -> None:
        if self._applying or self.count() != len(self._shares) or not self.isVisible():
            return
        length = self._length()
        if length <= 0:
            return
        wanted = [round(length * share) for share in self._shares]
        wanted[-1] = length - sum(wanted[:-1])
        if wanted != self.sizes():
            self._applying = True
            try:
                self.setSizes(wanted)
            finally:
                self._applying = False

    def _on_splitter_moved(self, _position: int, _index: int) -> None:
        sizes = self.sizes()
        total = sum(sizes)
        if total > 0 and len(sizes) == len(self._shares):
            self._shares = [size / total for size in sizes]

    def event(self, event: QEvent) -> bool:
        handled = super().event(event)
        if event.type() in (QEvent.Type.LayoutRequest, QEvent.Type.ShowToParent):
            self._apply()
        return handled

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._apply()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._apply()
