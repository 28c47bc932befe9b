"""Light and dark themes: the choice in Settings, following the system, every pane re-coloured, screenshots.

The 200% renderings are made by `familiar screenshot` with QT_SCALE_FACTOR=2 (tests/e2e/test_screenshot_command.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QDialog, QDialogButtonBox, QLabel, QMenu, QScrollBar
from pytestqt.qtbot import QtBot

from app.config.ui_prefs import UiPreferencesFile
from app.runtime.events import Activity, ConnectionState, GuildInfo, LatencyMeasured
from app.ui import theme as theme_module
from app.ui.dialogs.window_prefs import WindowPreferencesBox
from app.ui.main_window import MainWindow
from app.ui.theme import (
    DARK,
    ERROR_RED,
    LIGHT,
    PALETTES,
    ThemeController,
    colours,
    is_dark,
    recolour,
    text_colour_style,
)
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, settle
from tests.ui.test_screenshots import ACTIVITY, MIN_PNG_BYTES, grab

pytestmark = QT_STRICT

Scheme = Literal["light", "dark"]


def _busy_window(qtbot: QtBot) -> MainWindow:
    facade = FakeFacade(name="Wisp", guilds_on_start=(GuildInfo(871234567890123456, "Lantern Club", 1_234),))
    window = MainWindow(facade)
    qtbot.addWidget(window)
    window.resize(1100, 700)
    window.show()
    window.dashboard.start_button.click()
    settle(qtbot)
    for kind, where, summary in ACTIVITY:
        facade.publish(Activity(kind, where, summary))
    facade.publish(LatencyMeasured(41.0))
    window.dashboard.error_banner.show_message("The LLM endpoint answered 503; retrying in 2 s")
    window.undo.notices.show_message("Accepted “Bob is allergic to cat dander”")
    qtbot.waitExposed(window)
    return window


def test_dark_and_light_recolour_every_part_of_the_window(qtbot: QtBot, themes: Callable[..., ThemeController]) -> None:
    window = _busy_window(qtbot)
    assert colours() is LIGHT
    light = grab(window, "theme_light.png")

    controller = themes("dark")

    assert is_dark()
    assert colours() is DARK
    assert DARK.navigation_background in window.navigation.styleSheet()
    assert DARK.error_background in window.dashboard.error_banner.styleSheet()
    assert DARK.notice_background in window.undo.notices.styleSheet()  # one sheet on the area styles every notice
    assert DARK.state_connected in window.connection_indicator._dot.styleSheet()
    assert QApplication.palette().color(QPalette.ColorRole.Base) == QColor(DARK.base)
    error_row = window.dashboard.activity_model.index(6, 3)
    assert error_row.data(Qt.ItemDataRole.ForegroundRole) == QColor(DARK.error)
    dark = grab(window, "theme_dark.png")
    assert dark.stat().st_size > MIN_PNG_BYTES
    assert light.stat().st_size > MIN_PNG_BYTES

    controller.apply("light")
    assert not is_dark()
    assert LIGHT.navigation_background in window.navigation.styleSheet()
    assert DARK.navigation_background not in window.navigation.styleSheet()
    settle(qtbot)


def test_widgets_built_with_the_older_constants_follow_the_theme(
    qtbot: QtBot, themes: Callable[..., ThemeController]
) -> None:
    label = QLabel("a pane written against ERROR_RED")
    label.setStyleSheet(text_colour_style(ERROR_RED))
    qtbot.addWidget(label)
    themes("dark")
    assert label.styleSheet() == f"color: {DARK.error};"


def test_following_the_system_scheme(qtbot: QtBot, qapp: QApplication, themes: Callable[..., ThemeController]) -> None:
    scheme: list[Scheme] = ["light"]
    controller = themes("system", system=lambda: scheme[0])
    assert controller.palette is LIGHT
    scheme[0] = "dark"
    qapp.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Dark)  # what the desktop sends
    assert controller.palette is DARK
    assert is_dark()

    controller.apply("light")  # an explicit choice stops following the system
    scheme[0] = "dark"
    qapp.styleHints().colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert controller.palette is LIGHT


def test_the_theme_choice_in_settings_applies_at_once_and_is_kept(
    qtbot: QtBot, tmp_path: Path, themes: Callable[..., ThemeController], memory_facade: FakeFacade
) -> None:
    prefs = UiPreferencesFile(tmp_path / "ui.toml")
    controller = themes("system", system=lambda: "light")
    window = MainWindow(memory_facade, prefs=prefs, theme=controller)  # Settings reads the values in force
    qtbot.addWidget(window)
    window.show()
    dialog = window.open_settings()
    boxes = dialog.findChildren(WindowPreferencesBox)
    assert len(boxes) == 1
    box = boxes[0]
    assert not box.close_to_tray.isEnabled()  # no tray here: closing quits

    box.theme_choice.setCurrentIndex(2)  # Dark
    assert is_dark()
    assert prefs.prefs.theme == "dark"
    assert 'theme = "dark"' in (tmp_path / "ui.toml").read_text(encoding="utf-8")
    qtbot.waitExposed(dialog)
    grab(dialog, "settings_dark.png")

    box.notify_pending.setChecked(False)
    assert UiPreferencesFile(tmp_path / "ui.toml").prefs.notify_pending is False
    box.theme_choice.setCurrentIndex(0)  # Follow the system (light here)
    assert not is_dark()
    qtbot.waitUntil(lambda: True, timeout=WAIT_MS)
    dialog.close()
    settle(qtbot)


def test_cancel_in_settings_puts_back_the_window_preferences_in_force_before(
    qtbot: QtBot, tmp_path: Path, themes: Callable[..., ThemeController], memory_facade: FakeFacade
) -> None:
    """The Window section applies at once, as a preview; Cancel (or closing) puts back the theme in force when
    Settings opened, and the other choices; Save keeps them."""
    prefs = UiPreferencesFile(tmp_path / "ui.toml")
    prefs.update(theme="light")
    controller = themes("light", system=lambda: "light")
    window = MainWindow(memory_facade, prefs=prefs, theme=controller)
    qtbot.addWidget(window)
    window.show()
    dialog = window.open_settings()
    settle(qtbot)
    (box,) = dialog.findChildren(WindowPreferencesBox)
    box.theme_choice.setCurrentIndex(2)  # Dark
    box.notify_pending.setChecked(False)
    assert is_dark(), "applied at once"

    dialog.buttons.button(QDialogButtonBox.StandardButton.Cancel).click()
    settle(qtbot)

    assert not dialog.isVisible()
    assert controller.choice == "light"
    assert not is_dark()
    assert (prefs.prefs.theme, prefs.prefs.notify_pending) == ("light", True)
    kept = UiPreferencesFile(tmp_path / "ui.toml").prefs
    assert (kept.theme, kept.notify_pending) == ("light", True), "ui.toml says what is in force"

    dialog = window.open_settings()
    settle(qtbot)
    (box,) = dialog.findChildren(WindowPreferencesBox)
    box.theme_choice.setCurrentIndex(2)  # Dark
    dialog.buttons.button(QDialogButtonBox.StandardButton.Save).click()
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    settle(qtbot)
    assert is_dark(), "Save keeps the choice"
    assert UiPreferencesFile(tmp_path / "ui.toml").prefs.theme == "dark"
    controller.apply("light")


def test_each_palette_recolours_to_the_other_unambiguously() -> None:
    """A stylesheet built from one palette becomes the other's: no colour stands for two roles."""
    for source in PALETTES.values():
        for target in PALETTES.values():
            targets: dict[str, set[str]] = {}
            for role, colour in source.roles().items():
                targets.setdefault(colour, set()).add(target.roles()[role])
            assert all(len(found) == 1 for found in targets.values()), (source.name, target.name)
    shared = set(LIGHT.roles().values()) & set(DARK.roles().values())
    for colour in shared:  # a colour in both palettes means the same role in both
        assert [r for r, c in LIGHT.roles().items() if c == colour] == [
            r for r, c in DARK.roles().items() if c == colour
        ]
    sheet = f"color: {LIGHT.error}; background: {LIGHT.error_background.upper()};"
    assert recolour(sheet, LIGHT, DARK) == f"color: {DARK.error}; background: {DARK.error_background};"
    assert recolour(recolour(sheet, LIGHT, DARK), DARK, LIGHT).lower() == sheet.lower()


def test_every_connection_state_has_a_colour_in_each_theme() -> None:
    for palette in PALETTES.values():
        assert {palette.state_colour(state) for state in ConnectionState} <= set(palette.roles().values())


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_scroll_bars_are_a_flat_handle_in_the_themes_colour(
    qtbot: QtBot, themes: Callable[..., ThemeController], scheme: Scheme
) -> None:
    """Scroll bars are flat (a rounded handle on a clear track, no arrows) in both themes: the look, and a
    repaint at every change of a long list's length that costs nothing (bench_ui_stall --scenario triage)."""
    palette = themes(scheme).palette
    bar = QScrollBar(Qt.Orientation.Vertical)
    qtbot.addWidget(bar)
    bar.setRange(0, 1_000)
    bar.setPageStep(500)
    bar.resize(bar.sizeHint().width(), 300)
    bar.show()
    qtbot.waitExposed(bar)
    image = bar.grab().toImage()
    assert bar.width() == 12
    middle = bar.width() // 2
    handle = [image.pixelColor(middle, y).name() for y in range(image.height())]
    assert palette.scroll_handle in handle  # the handle, flat in one colour
    assert handle[0] != palette.scroll_handle  # no arrow buttons: a margin, then the handle
    assert handle[-1] != palette.scroll_handle
    assert handle.count(palette.scroll_handle) > 80  # a third of the track: the page is a third of the content


@pytest.mark.qt_log_ignore(  # the offscreen plugin, as a window is raised and a menu pops up
    r"This plugin does not support (propagateSizeHints|raise)\(\)",
    r"This plugin does not support grabbing the keyboard",
)
def test_a_menu_opened_and_closed_does_not_go_over_the_window_again(
    qtbot: QtBot, themes: Callable[..., ThemeController], monkeypatch: pytest.MonkeyPatch, memory_facade: FakeFacade
) -> None:
    """In the dark theme a window taking the focus has its widgets' light-built stylesheets re-coloured; a menu
    (or a combo's list) popping up and the focus coming back from it is not such a change: going over every
    widget of the window twice at each snooze menu was ~1.5 ms of a triage key (bench_ui_stall triage)."""
    controller = themes("dark")
    window = MainWindow(memory_facade, theme=controller)
    qtbot.addWidget(window)
    with qtbot.waitActive(window, timeout=WAIT_MS):
        window.show()
        window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.focusWindow() is window.windowHandle(), timeout=WAIT_MS)
    looked: list[int] = []
    real = theme_module.restyle
    monkeypatch.setattr(
        theme_module, "restyle", lambda widgets, palette: (looked.append(len(widgets)), real(widgets, palette))[1]
    )

    menu = QMenu(window)
    menu.addAction("For 1 day")
    menu.popup(window.mapToGlobal(window.rect().center()))
    qtbot.waitUntil(lambda: QApplication.focusWindow() is menu.windowHandle(), timeout=WAIT_MS)
    menu.close()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.focusWindow() is window.windowHandle(), timeout=WAIT_MS)
    assert looked == []

    # Another window taking the focus is still gone over: a label built with a light colour turns dark.
    other = QDialog(window)
    label = QLabel("Not sent", other)
    label.setStyleSheet(f"color: {ERROR_RED};")
    with qtbot.waitActive(other, timeout=WAIT_MS):
        other.show()
        other.activateWindow()
    qtbot.waitUntil(lambda: bool(looked), timeout=WAIT_MS)
    assert label.styleSheet() == f"color: {DARK.error};"
    other.close()
