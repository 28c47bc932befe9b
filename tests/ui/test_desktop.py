"""The window on the desktop: the tray and its menu, closing to the tray, the pending notification, where the
window was, File > Open / New familiar, and the Help menu.

QSystemTrayIcon cannot show on the offscreen platform: the tray's menu and state logic are tested through
TrayIcon with `available=True` (a desktop with a tray); only the OS-level icon is absent.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QColor, QGuiApplication
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths, create_familiar, list_familiars
from app.config.ui_prefs import UiPreferencesFile
from app.memory.facts import NewFact
from app.runtime.events import ChangeKind, ConnectionChanged, ConnectionState, MemoryChanged
from app.runtime.service import Familiar
from app.ui.desktop import TRAY_NOTICE_TITLE
from app.ui.dialogs.about import about_text, running_versions
from app.ui.dialogs.familiars import NewFamiliarDialog, OpenFamiliarDialog, familiar_command
from app.ui.main_window import MainWindow
from app.ui.pending_notifier import waiting_text
from app.ui.theme import LIGHT
from app.ui.tray import TrayIcon, TrayState, badge_pixel
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, Run, settle

pytestmark = QT_STRICT

SAMPLES = Path(__file__).resolve().parents[1] / "runtime" / "samples"


class Launched:
    """Stands in for starting `familiar --familiar NAME` (the real launch is tested in
    tests/e2e/test_single_instance.py): records the names."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, name: str) -> bool:
        self.names.append(name)
        return True


def window_on(
    qtbot: QtBot,
    facade: Any,
    *,
    prefs: UiPreferencesFile | None = None,
    tray: bool = True,
    root: Path | None = None,
    launcher: Launched | None = None,
    pane: str | None = None,
) -> MainWindow:
    window = MainWindow(
        facade,
        pane=pane,
        prefs=prefs,
        tray=TrayIcon(facade.familiar_name, available=True) if tray else None,
        root=root,
        launcher=launcher or Launched(),
    )
    qtbot.addWidget(window)
    window.show()
    settle(qtbot)
    return window


# -- the tray ------------------------------------------------------------------------------------------
def test_the_tray_shows_the_state_as_a_badge(qtbot: QtBot, memory_facade: FakeFacade, run: Run[Any]) -> None:
    window = window_on(qtbot, memory_facade)
    tray = window.desktop.tray
    assert tray is not None
    assert tray.state is TrayState.STOPPED
    assert tray.tooltip() == "Familiar — Wisp: Stopped"
    assert badge_pixel(tray.current_icon()) != QColor(LIGHT.state_connected)

    window.familiar_ready()
    tray.start_stop_action.trigger()  # Start
    qtbot.waitUntil(lambda: tray.state is TrayState.CONNECTED, timeout=WAIT_MS)
    assert badge_pixel(tray.current_icon()) == QColor(LIGHT.state_connected)
    assert tray.start_stop_action.text() == "S&top"

    # The pause switches are enabled once the familiar's pause state has been read (they show it as it is).
    qtbot.waitUntil(tray.pause_learning_action.isEnabled, timeout=WAIT_MS)
    tray.pause_learning_action.trigger()
    qtbot.waitUntil(lambda: tray.state is TrayState.PAUSED, timeout=WAIT_MS)
    assert run(memory_facade.controls.state()).learning == ("*",)
    assert tray.pause_learning_action.isChecked()
    assert tray.tooltip() == "Familiar — Wisp: Connected, learning paused"
    assert badge_pixel(tray.current_icon()) == QColor(LIGHT.amber)

    tray.pause_recall_action.trigger()
    qtbot.waitUntil(lambda: run(memory_facade.controls.state()).recall == ("*",), timeout=WAIT_MS)
    tray.pause_learning_action.trigger()  # resume learning
    qtbot.waitUntil(lambda: run(memory_facade.controls.state()).learning == (), timeout=WAIT_MS)
    assert not tray.pause_learning_action.isChecked()
    assert tray.state is TrayState.PAUSED  # recall still is

    memory_facade.publish(ConnectionChanged(ConnectionState.FAILED, "Discord rejected the bot token."))
    assert tray.state is TrayState.ERROR
    assert badge_pixel(tray.current_icon()) == QColor(LIGHT.state_failed)
    assert tray.start_stop_action.text() == "&Start"

    tray.start_stop_action.trigger()  # Start again
    qtbot.waitUntil(lambda: tray.start_stop_action.text() == "S&top", timeout=WAIT_MS)
    tray.start_stop_action.trigger()  # Stop
    qtbot.waitUntil(lambda: memory_facade.call_names().count("stop") == 1, timeout=WAIT_MS)
    settle(qtbot)


def test_a_pause_made_elsewhere_shows_in_the_tray_menu(
    qtbot: QtBot, memory_facade: FakeFacade, real_familiar: Familiar, run: Run[Any]
) -> None:
    window = window_on(qtbot, memory_facade)
    window.familiar_ready()
    settle(qtbot)
    tray = window.desktop.tray
    assert tray is not None
    assert tray.pause_recall_action.isEnabled()
    assert not tray.pause_recall_action.isChecked()

    run(real_familiar.controls.pause("recall"))  # the Memory pane, or the CLI beside the window

    qtbot.waitUntil(tray.pause_recall_action.isChecked, timeout=WAIT_MS)
    settle(qtbot)


def test_show_and_quit_from_the_tray(qtbot: QtBot, facade: FakeFacade, tmp_path: Path) -> None:
    window = window_on(qtbot, facade, prefs=UiPreferencesFile(tmp_path / "ui.toml"))
    tray = window.desktop.tray
    assert tray is not None
    window.close()
    assert window.isHidden()

    tray.show_action.trigger()
    assert window.isVisible()

    with qtbot.waitSignal(window.closed, timeout=1_000):
        tray.quit_action.trigger()
    assert not window.isVisible()


# -- closing to the tray -------------------------------------------------------------------------------
def test_closing_keeps_the_familiar_in_the_tray_and_says_so_the_first_time(
    qtbot: QtBot, facade: FakeFacade, tmp_path: Path
) -> None:
    prefs = UiPreferencesFile(tmp_path / "ui.toml")
    window = window_on(qtbot, facade, prefs=prefs)
    closed: list[bool] = []
    window.closed.connect(lambda: closed.append(True))

    window.close()  # the title bar's close button

    assert window.isHidden()
    assert closed == []  # the familiar keeps running: the bootstrap stops on `closed` only
    assert prefs.prefs.tray_notice_shown
    said = tomllib.loads((tmp_path / "ui.toml").read_text(encoding="utf-8"))
    assert said["tray_notice_shown"] is True

    window.bring_forward()
    window.close()  # again: no second notice (the flag is what the notice checks)
    assert window.isHidden()

    window.bring_forward()
    with qtbot.waitSignal(window.closed, timeout=1_000):
        window.quit_action.trigger()  # File > Quit closes for real


def test_closing_quits_when_the_setting_is_off_or_there_is_no_tray(
    qtbot: QtBot, facade: FakeFacade, tmp_path: Path
) -> None:
    prefs = UiPreferencesFile(tmp_path / "ui.toml")
    prefs.update(close_to_tray=False)
    window = window_on(qtbot, facade, prefs=prefs)
    with qtbot.waitSignal(window.closed, timeout=1_000):
        window.close()

    no_tray = window_on(qtbot, FakeFacade(), prefs=UiPreferencesFile(tmp_path / "other.toml"), tray=False)
    with qtbot.waitSignal(no_tray.closed, timeout=1_000):
        no_tray.close()


def test_the_tray_notice_text() -> None:
    assert TRAY_NOTICE_TITLE == "Familiar is still running"


# -- new facts waiting ---------------------------------------------------------------------------------
def _pending(familiar: Familiar, run: Run[Any], text: str) -> None:
    outcome = run(familiar.history.insert_fact(NewFact(text, "semantic", 6, 0.9, ("discord:7002",), "guild:500/501")))
    assert outcome.fact is not None
    assert outcome.fact.status == "pending"


def test_new_pending_facts_are_announced_once_per_burst_and_open_the_pending_queue(
    qtbot: QtBot, memory_facade: FakeFacade, real_familiar: Familiar, run: Run[Any], tmp_path: Path
) -> None:
    _pending(real_familiar, run, "Bob keeps bees")  # waiting before the window opened: not news
    window = window_on(qtbot, memory_facade, prefs=UiPreferencesFile(tmp_path / "ui.toml"))
    notifier = window.desktop.notifier
    notifier._timer.setInterval(50)  # the debounce, shortened for the test
    window.familiar_ready()
    qtbot.waitUntil(lambda: notifier.told == 1, timeout=WAIT_MS)
    window.show_pane("chat")
    window.close()  # to the tray: the owner is not looking

    said: list[str] = []
    notifier.notify.connect(said.append)
    for text in ("Bob's bees are Italian", "Alice plays the oboe", "Carol moved to Leeds"):
        _pending(real_familiar, run, text)
        memory_facade.publish(MemoryChanged(kinds=frozenset({ChangeKind.FACTS})))
    qtbot.waitUntil(lambda: said == ["3 new facts wait for you"], timeout=WAIT_MS)

    # Offscreen there is no OS tray to notify from: the window says it, with a Show button.
    (notice,) = [n for n in window.notices.notices() if n.text == "3 new facts wait for you"]
    assert notice.action_button is not None
    notice.action_button.click()
    assert window.isVisible()
    assert window.current_pane.name == "pending"  # the queue the notice is about
    settle(qtbot)


def test_pending_notifications_can_be_switched_off(
    qtbot: QtBot, memory_facade: FakeFacade, real_familiar: Familiar, run: Run[Any], tmp_path: Path
) -> None:
    prefs = UiPreferencesFile(tmp_path / "ui.toml")
    prefs.update(notify_pending=False)
    window = window_on(qtbot, memory_facade, prefs=prefs)
    notifier = window.desktop.notifier
    window.familiar_ready()
    qtbot.waitUntil(lambda: notifier.told == 0, timeout=WAIT_MS)
    said: list[str] = []
    notifier.notify.connect(said.append)
    _pending(real_familiar, run, "Bob keeps bees")
    notifier.check()
    qtbot.waitUntil(lambda: notifier.told == 1, timeout=WAIT_MS)
    assert said == []
    settle(qtbot)


def test_waiting_text() -> None:
    assert waiting_text(1) == "1 new fact waits for you"
    assert waiting_text(3) == "3 new facts wait for you"


# -- where the window was ------------------------------------------------------------------------------
def test_the_window_comes_back_where_it_was_on_the_last_pane_unless_a_pane_is_asked_for(
    qtbot: QtBot, facade: FakeFacade, tmp_path: Path
) -> None:
    path = tmp_path / "ui.toml"
    first = window_on(qtbot, facade, prefs=UiPreferencesFile(path), tray=False)
    first.resize(780, 520)  # the offscreen screen is 800 x 600: a restored window is kept on it
    first.move(10, 20)
    first.show_pane("chat")
    settle(qtbot)
    where = first.geometry()
    first.quit()
    saved = tomllib.loads(path.read_text(encoding="utf-8"))
    assert saved["last_pane"] == "chat"
    assert saved["geometry"]

    again = window_on(qtbot, FakeFacade(), prefs=UiPreferencesFile(path), tray=False)
    assert again.size() == where.size()
    # Offscreen, window frames are guessed: the place comes back to within a few pixels.
    assert abs(again.x() - where.x()) <= 4
    assert abs(again.y() - where.y()) <= 4
    assert again.current_pane.name == "chat"

    asked = window_on(qtbot, FakeFacade(), prefs=UiPreferencesFile(path), tray=False, pane="dashboard")
    assert asked.current_pane.name == "dashboard"  # --pane wins over the last pane
    settle(qtbot)


def test_a_broken_ui_toml_is_said_in_one_line_and_left_as_it_is(
    qtbot: QtBot, facade: FakeFacade, tmp_path: Path
) -> None:
    path = tmp_path / "ui.toml"
    path.write_text('theme = "purple"\nclose_to_tray = true\n', encoding="utf-8")
    prefs = UiPreferencesFile(path)
    assert prefs.problem == (
        f"{path}, key 'theme': must be one of system, light, dark (not 'purple');"
        " the defaults are used and the file is left as it is"
    )
    window = window_on(qtbot, facade, prefs=prefs, tray=False)
    window.show_pane("chat")
    settle(qtbot)
    window.quit()
    assert path.read_text(encoding="utf-8") == 'theme = "purple"\nclose_to_tray = true\n'


def test_ui_toml_keeps_the_owners_comments(tmp_path: Path) -> None:
    path = tmp_path / "ui.toml"
    path.write_text('# mine\ntheme = "dark"  # I like it dark\n', encoding="utf-8")
    prefs = UiPreferencesFile(path)
    assert prefs.prefs.theme == "dark"
    prefs.update(last_pane="chat")
    text = path.read_text(encoding="utf-8")
    assert text.startswith('# mine\ntheme = "dark"  # I like it dark\n')
    assert 'last_pane = "chat"' in text
    with pytest.raises(ValueError, match="window preference 'theme': must be one of"):
        prefs.update(theme="purple")


def test_ui_toml_keeps_the_familiars_tried_without_discord_as_a_list(tmp_path: Path) -> None:
    path = tmp_path / "ui.toml"
    prefs = UiPreferencesFile(path)
    prefs.update(without_discord=("default", "Captain-Rook"))
    assert 'without_discord = ["default", "Captain-Rook"]' in path.read_text(encoding="utf-8")
    assert UiPreferencesFile(path).prefs.without_discord == ("default", "Captain-Rook")
    with pytest.raises(ValueError, match="window preference 'without_discord': must be a list of names"):
        prefs.update(without_discord="default")
    path.write_text("without_discord = [1]\n", encoding="utf-8")
    broken = UiPreferencesFile(path)
    assert broken.problem is not None
    assert "key 'without_discord': must be a list of names" in broken.problem
    assert broken.prefs.without_discord == ()


# -- File > Open / New familiar -----------------------------------------------------------------------
def test_open_familiar_lists_the_others_and_launches_the_chosen_one(qtbot: QtBot, tmp_path: Path) -> None:
    root = tmp_path / "home"
    for name in ("default", "rook", "wisp"):
        create_familiar(FamiliarPaths(root=root, name=name))
    launched = Launched()
    window = window_on(qtbot, FakeFacade(name="default"), root=root, launcher=launched, tray=False)
    dialog = window.desktop.open_familiar()
    assert isinstance(dialog, OpenFamiliarDialog)
    rows = [dialog.familiars.item(row).text() for row in range(dialog.familiars.count())]
    assert rows == ["default (this window)", "rook", "wisp"]
    assert dialog.chosen() == "rook"
    dialog.familiars.setCurrentRow(2)
    dialog.buttons.accepted.emit()
    assert launched.names == ["wisp"]
    assert not dialog.isVisible()


def test_new_familiar_from_the_template_and_from_a_card(qtbot: QtBot, tmp_path: Path) -> None:
    root = tmp_path / "home"
    create_familiar(FamiliarPaths(root=root, name="default"))
    launched = Launched()
    window = window_on(qtbot, FakeFacade(name="default"), root=root, launcher=launched, tray=False)

    dialog = window.desktop.new_familiar()
    assert isinstance(dialog, NewFamiliarDialog)
    dialog.name.setText("not a name!")
    dialog.create_button.click()
    qtbot.waitUntil(dialog.error_label.isVisible, timeout=WAIT_MS)
    assert "a familiar's name may use letters, digits" in dialog.error_label.text()
    dialog.name.setText("default")
    dialog.create_button.click()
    qtbot.waitUntil(lambda: "already exists" in dialog.error_label.text(), timeout=WAIT_MS)
    assert list_familiars(root) == ["default"]  # nothing was made

    dialog.name.setText("moth")
    dialog.create_button.click()
    qtbot.waitUntil(lambda: launched.names == ["moth"], timeout=WAIT_MS)
    assert list_familiars(root) == ["default", "moth"]

    card = window.desktop.new_familiar()
    assert card is not None
    card.from_card.setChecked(True)
    card.card_file.setText(str(SAMPLES / "wisp_v2.json"))
    card.create_button.click()
    qtbot.waitUntil(lambda: len(launched.names) == 2, timeout=WAIT_MS)
    made = launched.names[1]
    assert made in list_familiars(root)
    assert (root / "familiars" / made / "character.md").read_text(encoding="utf-8")
    settle(qtbot)


def test_the_launch_command_opens_that_familiar() -> None:
    _program, arguments = familiar_command("rook")
    assert arguments[-2:] == ["--familiar", "rook"]


# -- Help ----------------------------------------------------------------------------------------------
def test_about_names_the_versions() -> None:
    found = running_versions()
    text = about_text(found)
    for name in ("Python", "Qt", "PySide6", "discord.py", "tantivy", "openai"):
        assert f"{name}: " in text, name
    assert text.startswith("Familiar 0.")


def test_help_opens_the_data_and_log_folders(qtbot: QtBot, facade: FakeFacade, tmp_path: Path) -> None:
    window = window_on(qtbot, facade, tray=False)
    opened: list[QUrl] = []
    folder = tmp_path / "logs" / "not yet"
    assert window.desktop.open_folder(folder, lambda url: opened.append(url) or True)
    assert opened == [QUrl.fromLocalFile(str(folder))]
    assert folder.is_dir()  # made, so there is something to open
    actions = [a.text() for a in window.help_menu.actions() if not a.isSeparator()]
    assert actions == ["&About Familiar", "Open &data folder", "Open &log folder", "&Copy diagnostics"]


def test_copy_diagnostics_puts_them_on_the_clipboard(qtbot: QtBot, memory_facade: FakeFacade) -> None:
    window = window_on(qtbot, memory_facade, tray=False)
    window.desktop.copy_diagnostics_action.trigger()
    qtbot.waitUntil(lambda: "Familiar diagnostics" in QGuiApplication.clipboard().text(), timeout=WAIT_MS)
    text = QGuiApplication.clipboard().text()
    assert "Qt: " in text
    assert "Search indexes:" in text
    assert json.dumps(text)  # plain text
    settle(qtbot)


def test_shutdown_after_qt_deleted_the_window(qtbot: QtBot, facade: FakeFacade, run: Run[Any]) -> None:
    """A window Qt has deleted already (its parent went, a failed test's teardown) still shuts down cleanly."""
    tray = TrayIcon(facade.familiar_name, available=True)
    window = MainWindow(facade, tray=tray, launcher=Launched())
    window.show()
    settle(qtbot)  # the panes' first loads are done
    destroyed: list[bool] = []
    window.destroyed.connect(lambda: destroyed.append(True))
    window.deleteLater()
    qtbot.waitUntil(lambda: destroyed == [True], timeout=WAIT_MS)
    run(window.shutdown())  # raised "Internal C++ object (QTimer) already deleted" before
    tray.deleteLater()
