"""MainWindow: navigation, title, status bar, menu, first-run settings, non-blocking close and shutdown."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.runtime.events import ConnectionChanged, ConnectionState, DiskFullChanged, LatencyMeasured, SettingsReloaded
from app.runtime.service import Familiar
from app.ui.async_slot import running_slots
from app.ui.main_window import PANES, MainWindow
from app.ui.panes.pending import PendingPane
from app.ui.tray import TrayIcon
from tests.demo_familiar import seed_demo
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, Run, settle

pytestmark = QT_STRICT


def make_window(qtbot: QtBot, facade: FakeFacade) -> MainWindow:
    window = MainWindow(facade)
    qtbot.addWidget(window)
    window.show()
    settle(qtbot)
    return window


def test_title_and_navigation(qtbot: QtBot, facade: FakeFacade) -> None:
    window = make_window(qtbot, facade)

    assert window.windowTitle() == "Familiar — Wisp"
    titles = [window.navigation.item(row).text() for row in range(window.navigation.count())]
    assert titles == [pane.title for pane in PANES]
    assert titles[:2] == ["Dashboard", "Chat"]
    assert "Character" in titles
    assert "Lorebook" in titles
    assert window.stack.currentWidget() is window.dashboard

    window.navigation.setCurrentRow(1)
    assert window.stack.currentWidget() is window.chat
    settle(qtbot)  # the chat pane loads its history when first shown
    assert "load_local_history" in facade.call_names()

    window.show_pane("Dashboard")
    assert window.stack.currentWidget() is window.dashboard


def test_the_title_and_the_tray_say_the_name_it_goes_by_and_follow_a_settings_save(qtbot: QtBot) -> None:
    """The familiar's display name, not its folder's ("default"), as the Character pane shows it (issue 18 item 6)."""
    facade = FakeFacade(name="default", display_name="Moth")
    tray = TrayIcon(facade.display_name, available=True)
    window = MainWindow(facade, tray=tray)
    qtbot.addWidget(window)
    window.show()
    settle(qtbot)
    assert window.windowTitle() == "Familiar — Moth"
    assert tray.tooltip() == "Familiar — Moth: Stopped"

    facade.publish(SettingsReloaded(display_name="Ember"))

    assert window.windowTitle() == "Familiar — Ember"
    assert tray.tooltip() == "Familiar — Ember: Stopped"


def test_the_title_follows_the_real_familiar_s_character_save(
    qtbot: QtBot, real_familiar: Familiar, run: Run[Any]
) -> None:
    window = MainWindow(real_familiar)
    qtbot.addWidget(window)
    assert (real_familiar.familiar_name, window.windowTitle()) == ("default", "Familiar — Wisp")
    view = run(real_familiar.character.load())
    run(real_familiar.character.save(replace(view.draft, display_name="Moth"), view.revision))
    qtbot.waitUntil(lambda: window.windowTitle() == "Familiar — Moth", timeout=WAIT_MS)


def test_panes_are_built_when_first_shown_and_each_registry_entry_names_its_class(
    qtbot: QtBot, facade: FakeFacade
) -> None:
    window = make_window(qtbot, facade)
    assert [pane.name for pane in window.built_panes] == ["dashboard"]  # what the first paint needed
    placeholder = window.stack.widget(1)

    window.navigation.setCurrentRow(1)  # by the navigation list, as a click or the arrow keys do
    chat = window.stack.currentWidget()
    assert chat is not placeholder
    assert chat is window.current_pane
    assert chat.name == PANES[1].name == "chat"
    settle(qtbot)
    assert chat.is_loaded  # shown, so loaded
    assert window.stack.count() == len(PANES)
    assert window.show_pane("chat") is chat  # built once

    assert [(p.name, p.title) for p in window.panes] == [(s.name, s.title) for s in PANES]  # the rest, now
    assert [window.stack.widget(row) for row in range(len(PANES))] == window.panes
    assert window.stack.currentWidget() is chat


def test_a_pane_built_after_the_window_is_shown_leaves_it_active_and_focused(
    qtbot: QtBot, real_familiar: Familiar
) -> None:
    window = MainWindow(real_familiar)
    qtbot.addWidget(window)
    with qtbot.waitActive(window, timeout=WAIT_MS):
        window.show()
        window.activateWindow()
    for spec in PANES[1:]:
        pane = window.show_pane(spec.name)  # built now, into the shown window
        settle(qtbot)
        # Nothing it made flashed up as a window of its own and took the focus (the keys go to the pane).
        assert QApplication.activeWindow() is window, spec.name
        assert pane.isVisible()


def test_status_bar_follows_the_connection(qtbot: QtBot, facade: FakeFacade) -> None:
    window = make_window(qtbot, facade)
    assert window.connection_indicator.text() == "Stopped"

    facade.publish(ConnectionChanged(ConnectionState.CONNECTED))
    facade.publish(LatencyMeasured(51.0))
    assert window.connection_indicator.text() == "Connected"
    assert window.latency_label.text() == "Latency: 51 ms"

    facade.publish(ConnectionChanged(ConnectionState.RECONNECTING, "gateway closed (1006)"))
    assert window.connection_indicator.text() == "Reconnecting…"
    assert window.connection_indicator.toolTip() == "gateway closed (1006)"
    assert window.latency_label.text() == "Latency: —"


def test_the_window_says_disk_full_while_it_lasts_on_every_pane(qtbot: QtBot, facade: FakeFacade) -> None:
    window = make_window(qtbot, facade)
    light, banner = window.disk_full_light, window.dashboard.disk_banner
    assert not light.isVisible()
    assert not banner.isVisible()

    full = DiskFullChanged(
        full=True, folder="/data/familiars/default", detail="database or disk is full", waiting=12, places=2
    )
    facade.publish(full)
    assert light.isVisible()
    assert light.text() == "● Disk full"
    assert light.toolTip() == full.banner
    assert banner.isVisible()
    assert banner.text() == full.banner
    assert banner.text().startswith("Disk full: 12 messages in 2 channels not stored yet")
    assert "free some space on the disk holding /data/familiars/default" in banner.text()
    window.show_pane("Chat")
    settle(qtbot)
    assert light.isVisible()  # the status bar says it on every pane

    facade.publish(DiskFullChanged(full=False, folder="/data/familiars/default"))
    assert not light.isVisible()
    window.show_pane("Dashboard")
    assert not banner.isVisible()


def test_a_window_opened_while_the_disk_is_full_says_so(qtbot: QtBot, facade: FakeFacade) -> None:
    full = DiskFullChanged(full=True, folder="/data/familiars/default", detail="database or disk is full")
    facade.publish(full)  # before the window: only the status snapshot has it
    window = make_window(qtbot, facade)
    assert window.disk_full_light.isVisible()
    assert window.disk_full_light.toolTip() == full.banner
    assert window.dashboard.disk_banner.text() == full.banner
    assert "new messages cannot be stored until there is room" in full.banner


def test_file_menu_has_settings_and_quit(qtbot: QtBot, memory_facade: FakeFacade) -> None:
    window = make_window(qtbot, memory_facade)
    assert [action.text() for action in window.menuBar().actions()] == ["&File", "&Edit", "&Help"]
    edit = [action.text() for action in window.edit_menu.actions()]
    assert edit == ["&Undo", "&Redo"]
    assert window.undo.undo_action.shortcut().toString() == "Ctrl+Z"
    assert [s.toString() for s in window.undo.redo_action.shortcuts()][:1] == ["Ctrl+Shift+Z"]
    texts = [action.text() for action in window.file_menu.actions() if not action.isSeparator()]
    assert texts == ["&Open familiar…", "&New familiar…", "&Settings…", "&Quit"]

    window.settings_action.trigger()
    dialog = window.settings_dialog
    assert dialog is not None
    assert dialog.isVisible()
    assert not dialog.isModal()
    window.settings_action.trigger()
    assert window.settings_dialog is dialog  # raised again, not a second dialog
    settle(qtbot)


def test_first_run_opens_the_welcome_instead_of_settings(qtbot: QtBot, real_familiar: Familiar) -> None:
    facade = FakeFacade(configured=False, missing=("bot token", "LLM endpoint"), backing=real_familiar)
    window = make_window(qtbot, facade)
    assert not window.dashboard.setup_hint.isHidden()

    assert window.maybe_show_first_run()
    settle(qtbot)
    dialog = window.welcome_dialog
    assert dialog is not None
    assert dialog.isVisible()
    assert window.settings_dialog is None
    assert window.open_welcome() is dialog  # raised again, not a second one

    facade.status = replace(facade.status, configured=True, missing=())
    assert not window.maybe_show_first_run()


def test_the_set_up_hint_button_opens_settings(qtbot: QtBot, real_familiar: Familiar) -> None:
    facade = FakeFacade(configured=False, missing=("bot token",), backing=real_familiar)
    window = make_window(qtbot, facade)

    qtbot.mouseClick(window.dashboard.open_settings_button, Qt.MouseButton.LeftButton)
    settle(qtbot)

    assert window.settings_dialog is not None
    assert window.settings_dialog.isVisible()


def test_close_does_not_block_and_emits_closed(qtbot: QtBot, memory_facade: FakeFacade) -> None:
    window = make_window(qtbot, memory_facade)
    window.open_settings()
    settle(qtbot)

    with qtbot.waitSignal(window.closed, timeout=1_000):
        window.quit_action.trigger()

    assert not window.isVisible()
    assert window.settings_dialog is not None
    assert not window.settings_dialog.isVisible()


def test_shutdown_unsubscribes_and_cancels_handlers_in_flight(qtbot: QtBot, facade: FakeFacade, run: Run[Any]) -> None:
    window = make_window(qtbot, facade)
    window.show_pane("Chat")
    settle(qtbot)
    facade.gate = asyncio.Event()
    window.chat.input.setText("a question nobody will answer")
    window.chat.send_button.click()
    qtbot.waitUntil(lambda: window.chat.is_waiting, timeout=WAIT_MS)

    run(window.shutdown())

    assert not running_slots()
    assert facade.subscriber_count == 0
    assert "unsubscribe" in facade.call_names()
    facade.publish(ConnectionChanged(ConnectionState.CONNECTED))
    assert window.connection_indicator.text() == "Stopped"


def _seeded_window(qtbot: QtBot, familiar: Familiar, facade: FakeFacade) -> MainWindow:
    task = asyncio.ensure_future(seed_demo(familiar))
    qtbot.waitUntil(task.done, timeout=30_000)
    task.result()
    window = MainWindow(facade)
    qtbot.addWidget(window, before_close_func=lambda w: _shut(qtbot, w))
    window.resize(1100, 700)
    with qtbot.waitActive(window, timeout=WAIT_MS):
        window.show()
        window.activateWindow()
    return window


def _shut(qtbot: QtBot, window: Any) -> None:
    task = asyncio.ensure_future(window.shutdown())
    qtbot.waitUntil(task.done, timeout=WAIT_MS)


def _click_row(qtbot: QtBot, window: MainWindow, row: int) -> None:
    navigation = window.navigation
    rect = navigation.visualItemRect(navigation.item(row))
    qtbot.mouseClick(navigation.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


@pytest.mark.timeout(90)
def test_a_click_in_the_navigation_puts_the_keyboard_in_the_pane(
    qtbot: QtBot, real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    """Clicked, a pane takes the focus (its main view, or the first widget Tab reaches): Down then moves
    inside it, not to the next pane."""
    window = _seeded_window(qtbot, real_familiar, memory_facade)
    for row, spec in enumerate(PANES):
        _click_row(qtbot, window, row)
        pane = window.current_pane
        assert pane.name == spec.name
        qtbot.waitUntil(lambda pane=pane: pane.is_loaded, timeout=WAIT_MS)
        settle(qtbot)
        focused = QApplication.focusWidget()
        assert focused is not None, spec.name
        assert pane.isAncestorOf(focused), (spec.name, focused)
        main = pane.focus_widget()
        assert main is None or focused is main or not main.isVisible(), (spec.name, focused, main)

    # In the pending queue, Down now moves through the queue, and the navigation stays where it was.
    pending = window.show_pane("pending")
    _click_row(qtbot, window, window.pane_names.index("pending"))
    assert isinstance(pending, PendingPane)
    assert pending.list_view.hasFocus()
    row = pending.current_row()
    qtbot.keyClick(pending.list_view, Qt.Key.Key_Down)
    assert pending.current_row() == row + 1
    assert window.current_pane is pending
    settle(qtbot)


@pytest.mark.timeout(90)
def test_the_arrow_keys_still_walk_the_navigation_and_enter_goes_into_the_pane(
    qtbot: QtBot, real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    """With the focus in the navigation, Down shows each pane in turn and the focus stays in the list, even
    when a pane that takes the focus on its own (the chat's field) loads meanwhile; Enter goes into the pane."""
    window = _seeded_window(qtbot, real_familiar, memory_facade)
    window.navigation.setFocus()
    for row in range(1, len(PANES)):
        qtbot.keyClick(window.navigation, Qt.Key.Key_Down)
        pane = window.current_pane
        assert pane.name == PANES[row].name
        qtbot.waitUntil(lambda pane=pane: pane.is_loaded, timeout=WAIT_MS)
        settle(qtbot)
        assert window.navigation.hasFocus(), (pane.name, QApplication.focusWidget())
    qtbot.keyClick(window.navigation, Qt.Key.Key_Up)
    qtbot.keyClick(window.navigation, Qt.Key.Key_Up)
    lorebook = window.current_pane
    assert lorebook.name == "lorebook"
    settle(qtbot)
    qtbot.keyClick(window.navigation, Qt.Key.Key_Return)
    assert lorebook.focus_widget() is QApplication.focusWidget()
    settle(qtbot)
