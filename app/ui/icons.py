"""The application icon: PNG sizes in resources/icons, rendered from familiar.svg by installers/make_icons.py.

The window, the tray and the dialogs all take it from `app_icon()`. The sizes are files, not the SVG drawn at run
time, so the icon needs no SVG plugin in a bundle and each size is exactly what was looked at.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QIcon, QImage, QPainter

ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
SVG_NAME = "familiar.svg"


def icon_folder() -> Path:
    """resources/icons: beside the `app` package (source tree, PyInstaller bundle), else the installed package."""
    beside = Path(__file__).resolve().parents[2] / "resources" / "icons"
    if beside.is_dir():
        return beside
    return Path(str(importlib.resources.files("app._resources"))) / "icons"


def icon_file(size: int) -> Path:
    return icon_folder() / f"familiar-{size}.png"


def app_icon() -> QIcon:
    """Familiar's icon with every rendered size, for windows, the tray and the task bar."""
    icon = QIcon()
    for size in ICON_SIZES:
        icon.addFile(str(icon_file(size)), QSize(size, size))
    return icon


def render_icon(size: int, svg: Path | None = None) -> QImage:
    """The SVG drawn at `size` x `size` pixels (what installers/make_icons.py saves; needs a QGuiApplication)."""
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg or icon_folder() / SVG_NAME))
    if not renderer.isValid():
        raise ValueError(f"{svg or icon_folder() / SVG_NAME} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    return image
