"""The status bar's disk-full light: hidden while the familiar's disk has room; "● Disk full" in red
while it has none, on every pane, with what that means (messages waiting to be fetched again from
Discord, the folder to free space on) as its tooltip. It follows DiskFullChanged through the bridge;
`show_banner` sets it from a status snapshot (the window opened while the disk was already full)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from app.runtime.events import DiskFullChanged
from app.ui.bridge import RuntimeBridge
from app.ui.theme import ERROR_RED, text_colour_style

TEXT = "● Disk full"


class DiskFullLight(QLabel):
    def __init__(self, bridge: RuntimeBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diskFullLight")
        self.setAccessibleName("Disk full")
        self.setVisible(False)
        bridge.disk_full.connect(self._on_bridge_disk_full)

    @property
    def lit(self) -> bool:
        return bool(self.text())

    def show_banner(self, banner: str | None) -> None:
        """Lit with `banner` as its tooltip, or hidden for None / ""."""
        if banner:
            self.setStyleSheet(text_colour_style(ERROR_RED) + " font-weight: bold; padding: 0 6px;")
            self.setText(TEXT)
            self.setToolTip(banner)
        else:
            self.clear()
            self.setToolTip("")
        self.setVisible(bool(banner))

    def _on_bridge_disk_full(self, event: DiskFullChanged) -> None:
        self.show_banner(event.banner)
