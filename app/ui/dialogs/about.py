"""Help > About Familiar: what is running, in versions."""

from __future__ import annotations

from collections.abc import Mapping

from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

from app.runtime.diagnostics import versions
from app.ui.icons import app_icon


def running_versions() -> dict[str, str]:
    """Familiar's version and those of what it runs on, Qt's own included."""
    return versions({"Qt": qVersion()})


def about_text(found: Mapping[str, str]) -> str:
    lines = [f"Familiar {found.get('Familiar', '?')}", "", "An AI character for your Discord server,"]
    lines += ["with a window onto its memory.", ""]
    lines += [f"{name}: {version}" for name, version in found.items() if name != "Familiar"]
    return "\n".join(lines)


def about_box(parent: QWidget | None = None) -> QMessageBox:
    box = QMessageBox(parent)
    box.setWindowTitle("About Familiar")
    box.setIconPixmap(app_icon().pixmap(64, 64))
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(about_text(running_versions()))
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    return box
