"""The application icon: every size present and drawn, the committed PNGs matching the SVG, the window using it."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QImage
from pytestqt.qtbot import QtBot

from app.ui.icons import ICON_SIZES, app_icon, icon_file, icon_folder, render_icon
from app.ui.main_window import MainWindow
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT

pytestmark = QT_STRICT


def _colours(image: QImage) -> set[tuple[int, int, int]]:
    """Opaque colours, coarsely bucketed (so antialiasing does not count as a colour)."""
    found = set()
    for y in range(image.height()):
        for x in range(image.width()):
            colour = QColor(image.pixel(x, y))
            if image.pixelColor(x, y).alpha() > 200:
                found.add((colour.red() // 64, colour.green() // 64, colour.blue() // 64))
    return found


def test_every_size_is_a_file_and_in_the_icon(qtbot: QtBot) -> None:
    icon = app_icon()
    assert not icon.isNull()
    assert {s.width() for s in icon.availableSizes()} == set(ICON_SIZES)
    for size in ICON_SIZES:
        image = QImage(str(icon_file(size)))
        assert image.size() == QSize(size, size), icon_file(size)
    for name in ("familiar.svg", "familiar.ico", "familiar.icns"):
        assert (icon_folder() / name).stat().st_size > 0


def test_the_smallest_size_still_shows_sky_moon_cat_and_eyes(qtbot: QtBot) -> None:
    image = app_icon().pixmap(16, 16).toImage()
    assert image.size() == QSize(16, 16)
    # Night sky, moon, silhouette, eyes: at least four distinct colours survive at 16 px.
    assert len(_colours(image)) >= 4
    assert image.pixelColor(0, 0).alpha() == 0, "the corners are rounded off"


def test_the_committed_pngs_match_the_svg(qtbot: QtBot) -> None:
    """Fails when familiar.svg changed and installers/make_icons.py was not run again."""
    for size in (16, 64, 256):
        committed = QImage(str(icon_file(size))).convertToFormat(QImage.Format.Format_ARGB32)
        fresh = render_icon(size).convertToFormat(QImage.Format.Format_ARGB32)
        differing = 0
        for y in range(size):
            for x in range(size):
                a, b = committed.pixelColor(x, y), fresh.pixelColor(x, y)
                channels = zip(a.getRgb(), b.getRgb(), strict=True)
                differing += any(abs(old - new) > 40 for old, new in channels)
        # Antialiasing may differ by a shade between Qt versions; a changed shape or colour moves many pixels.
        assert differing <= size * size // 1000, f"familiar-{size}.png is out of date: run installers/make_icons.py"


def test_the_main_window_carries_the_icon(qtbot: QtBot, facade: FakeFacade) -> None:
    window = MainWindow(facade)
    qtbot.addWidget(window)
    assert {s.width() for s in window.windowIcon().availableSizes()} == set(ICON_SIZES)
