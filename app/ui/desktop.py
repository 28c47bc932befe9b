"""How the window lives on the desktop: the tray icon and its menu, closing to the tray, the pending-queue
notification, where the window was (size, place, pane), File > Open / New familiar and the Help menu.

`Desktop` is built by the MainWindow and given what the bootstrap knows: the window preferences
(ui.toml), the theme, whether to put an icon in the tray, the data root. Everything it does to the
familiar goes through the facade.

The dialogs of the File and Help menus (and the version look-ups behind About) are imported when first
opened, not before the window's first paint (cold start, bench/bench_startup.py).
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import shiboken6
from PySide6.QtCore import QByteArray, QObject, Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QApplication, QMenu

from app.config.logs import log_folder
from app.config.ui_prefs import UiPreferencesFile
from app.runtime.api.facade import FamiliarFacade
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind, ConnectionChanged, MemoryChanged, SettingsReloaded
from app.ui.async_slot import async_slot
from app.ui.ops import Operations, Succeeded
from app.ui.pending_notifier import PendingNotifier
from app.ui.theme import ThemeController
from app.ui.tray import TrayIcon

if TYPE_CHECKING:
    from app.ui.dialogs.familiars import Launcher, NewFamiliarDialog, OpenFamiliarDialog
    from app.ui.main_window import MainWindow

_log = logging.getLogger(__name__)

TRAY_NOTICE_TITLE = "Familiar is still running"
TRAY_NOTICE = "Closing the window keeps your familiar online here in the tray. Quit it from the tray's menu."
NOTICE_MS = 12_000
PENDING_PANE = "pending"  # the pane the notification opens, once it exists; else the dashboard


def window_title(display_name: str) -> str:
    """The window's title (and the tray's and notifications' name for it): the name the familiar goes by."""
    return f"Familiar — {display_name}"


class Desktop(QObject):
    def __init__(
        self,
        window: MainWindow,
        facade: FamiliarFacade,
        *,
        prefs: UiPreferencesFile,
        theme: ThemeController | None,
        tray: TrayIcon | None,
        root: Path | None,
        launcher: Launcher | None = None,
    ) -> None:
        super().__init__(window)
        self._window = window
        self._facade = facade
        self.prefs = prefs
        self.theme = theme
        self.tray = tray
        self.root = root
        self._launcher = launcher
        self._quitting = False
        self.dialogs: list[QObject] = []  # the ones open now (kept referenced while shown)
        self.ops = Operations(show_error=self._show_error, parent=self)
        self.notifier = PendingNotifier(
            facade, window.bridge, enabled=lambda: self.prefs.prefs.notify_pending, parent=self
        )
        self.notifier.notify.connect(self._on_notifier_notify)
        window.bridge.connection_changed.connect(self._on_bridge_connection_changed)
        window.bridge.memory_changed.connect(self._on_bridge_memory_changed)
        window.bridge.settings_reloaded.connect(self._on_bridge_settings_reloaded)
        if tray is not None:
            tray.show_requested.connect(lambda: self.bring_forward())
            tray.start_requested.connect(self._on_tray_start)
            tray.stop_requested.connect(self._on_tray_stop)
            tray.pause_requested.connect(self._on_tray_pause)
            tray.quit_requested.connect(self.quit)
            tray.message_clicked.connect(self.open_pending)
            tray.set_connection(facade.get_status().state)
            tray.show()

    # -- menus ---------------------------------------------------------------------------------------
    def add_familiar_actions(self, menu: QMenu) -> None:
        self.open_familiar_action = QAction("&Open familiar…", self)
        self.open_familiar_action.setToolTip("Open another familiar in a window of its own")
        self.open_familiar_action.triggered.connect(self.open_familiar)
        self.new_familiar_action = QAction("&New familiar…", self)
        self.new_familiar_action.setToolTip("Make a familiar from the template or from a character card")
        self.new_familiar_action.triggered.connect(self.new_familiar)
        for action in (self.open_familiar_action, self.new_familiar_action):
            action.setEnabled(self.root is not None)
            menu.addAction(action)

    def add_help_menu(self, menu: QMenu) -> None:
        self.about_action = QAction("&About Familiar", self)
        self.about_action.triggered.connect(self.show_about)
        self.open_data_action = QAction("Open &data folder", self)
        self.open_data_action.setToolTip(str(self._facade.home))
        self.open_data_action.triggered.connect(lambda: self.open_folder(self._facade.home))
        self.open_logs_action = QAction("Open &log folder", self)
        self.open_logs_action.setToolTip(str(log_folder()))
        self.open_logs_action.triggered.connect(lambda: self.open_folder(log_folder()))
        self.copy_diagnostics_action = QAction("&Copy diagnostics", self)
        self.copy_diagnostics_action.setToolTip(
            "Versions, settings without secrets, index status and the last errors, for a bug report"
        )
        self.copy_diagnostics_action.triggered.connect(self.copy_diagnostics)
        menu.addAction(self.about_action)
        menu.addSeparator()
        menu.addAction(self.open_data_action)
        menu.addAction(self.open_logs_action)
        menu.addAction(self.copy_diagnostics_action)

    # -- the window on the desktop -------------------------------------------------------------------
    @property
    def quitting(self) -> bool:
        return self._quitting

    def quit(self) -> None:
        """Close for real (File > Quit, the tray's Quit): the familiar stops."""
        self._quitting = True
        self._window.close()

    def stay_open(self) -> None:
        """A Quit the owner took back (Cancel when asked about unsaved edits): closing goes to the tray again."""
        self._quitting = False

    def closes_to_tray(self) -> bool:
        """Whether closing the window now hides it in the tray (the familiar keeps running)."""
        return not self._quitting and self.tray is not None and self.tray.available and self.prefs.prefs.close_to_tray

    def hide_to_tray(self) -> None:
        self.save_placement()
        self._window.hide()
        if not self.prefs.prefs.tray_notice_shown and self.tray is not None:
            if not self.tray.notify(TRAY_NOTICE_TITLE, TRAY_NOTICE):
                _log.info("%s: %s", TRAY_NOTICE_TITLE, TRAY_NOTICE)
            self.prefs.update(tray_notice_shown=True)

    def bring_forward(self, pane: str | None = None) -> None:
        """Show the window (from the tray, or for a second launch of this familiar), on `pane` if given."""
        window = self._window
        window.show()
        window.setWindowState(window.windowState() & ~Qt.WindowState.WindowMinimized)
        window.raise_()
        window.activateWindow()
        if pane:
            try:
                window.show_pane(pane)
            except KeyError:
                _log.info("no pane %r to show", pane)

    def open_pending(self) -> None:
        """What clicking the pending notification does: the pending pane if there is one, else the dashboard."""
        self.bring_forward(PENDING_PANE if PENDING_PANE in self._window.pane_names else "dashboard")

    # -- where the window was ------------------------------------------------------------------------
    def restore_placement(self, pane: str | None) -> None:
        """Size and place from ui.toml; the last pane too, unless `pane` (from --pane) is given."""
        prefs = self.prefs.prefs
        if prefs.geometry:
            try:
                self._window.restoreGeometry(QByteArray(base64.b64decode(prefs.geometry, validate=True)))
            except (binascii.Error, ValueError):
                _log.info("the saved window geometry is not readable; using the default size")
        chosen = pane or prefs.last_pane
        if chosen and chosen in self._window.pane_names:
            self._window.show_pane(chosen)

    def save_placement(self) -> None:
        geometry = base64.b64encode(bytes(self._window.saveGeometry().data())).decode("ascii")
        self.prefs.update(geometry=geometry, last_pane=self._window.current_pane.name)

    # -- the name it goes by --------------------------------------------------------------------------
    def show_name(self, display_name: str) -> None:
        """Call the familiar `display_name` in the window's title and the tray."""
        self._window.setWindowTitle(window_title(display_name))
        if self.tray is not None and shiboken6.isValid(self.tray):
            self.tray.set_name(display_name)

    def _on_bridge_settings_reloaded(self, event: SettingsReloaded) -> None:
        self.show_name(event.display_name)

    # -- once the familiar is live -------------------------------------------------------------------
    @async_slot()
    async def familiar_ready(self) -> None:
        self.show_name(self._facade.display_name)  # as its settings say, now they are read
        await self.notifier.prime()
        await self._refresh_pause()

    async def _refresh_pause(self) -> None:
        if self.tray is None:
            return
        try:
            state = await self._facade.controls.state()
        except FamiliarError as exc:
            _log.info("pause state not read: %s", exc)
            return
        self.tray.set_pause(state)

    def _on_bridge_connection_changed(self, event: ConnectionChanged) -> None:
        if self.tray is not None:
            self.tray.set_connection(event.state)

    def _on_bridge_memory_changed(self, change: MemoryChanged) -> None:
        if ChangeKind.PAUSE in change.kinds:
            self._refresh_pause_soon()

    @async_slot()
    async def _refresh_pause_soon(self) -> None:
        await self._refresh_pause()

    def _on_notifier_notify(self, text: str) -> None:
        window = self._window
        if window.isVisible() and window.isActiveWindow():
            return  # the owner is looking at the window already
        title = window_title(self._facade.display_name)
        if self.tray is None or not self.tray.notify(title, text):
            window.notices.show_notice(text, action=self.open_pending, action_text="Show", duration_ms=NOTICE_MS)

    def shutdown(self) -> None:
        if self.tray is not None and shiboken6.isValid(self.tray):
            self.tray.hide()
        if not shiboken6.isValid(self):  # Qt deleted the window, and with it this and the notifier's timer
            return
        if self._window.isVisible():  # stopped by a signal (Ctrl-C, SIGTERM, log-out) rather than closed
            self.save_placement()
        self.notifier.stop()

    # -- tray actions --------------------------------------------------------------------------------
    @async_slot()
    async def _on_tray_start(self) -> None:
        await self.ops.run("start", self._facade.start)

    @async_slot()
    async def _on_tray_stop(self) -> None:
        await self.ops.run("stop", self._facade.stop)

    @async_slot(str, bool)
    async def _on_tray_pause(self, kind: str, paused: bool) -> None:
        controls = self._facade.controls
        switch = controls.pause if paused else controls.resume
        outcome = await self.ops.run(
            f"{'pause' if paused else 'resume'} {kind}",
            lambda: switch("learning" if kind == "learning" else "recall", "*", initiator=self),
        )
        if isinstance(outcome, Succeeded) and self.tray is not None:
            self.tray.set_pause(outcome.value)
        else:
            await self._refresh_pause()  # show the switch as it really is

    def _show_error(self, message: str) -> None:
        if self.tray is None or not self.tray.notify(window_title(self._facade.display_name), message):
            self._window.notices.show_message(message)

    # -- File and Help -------------------------------------------------------------------------------
    @property
    def launcher(self) -> Launcher:
        """Starts a familiar in a process of its own (tests give one that records the names)."""
        if self._launcher is None:
            from app.ui.dialogs.familiars import launch_familiar

            self._launcher = launch_familiar
        return self._launcher

    def open_familiar(self) -> OpenFamiliarDialog | None:
        from app.ui.dialogs.familiars import OpenFamiliarDialog

        if self.root is None:
            return None
        dialog = OpenFamiliarDialog(self.root, self._facade.familiar_name, self.launcher, self._window)
        self._keep(dialog)
        dialog.show()
        return dialog

    def new_familiar(self) -> NewFamiliarDialog | None:
        from app.ui.dialogs.familiars import NewFamiliarDialog

        if self.root is None:
            return None
        dialog = NewFamiliarDialog(self.root, self.launcher, self._window)
        self._keep(dialog)
        dialog.show()
        return dialog

    def _keep(self, dialog: QObject) -> None:
        self.dialogs.append(dialog)
        dialog.destroyed.connect(lambda _obj=None, d=dialog: self.dialogs.remove(d) if d in self.dialogs else None)
        if hasattr(dialog, "finished"):
            dialog.finished.connect(dialog.deleteLater)

    def show_about(self) -> None:
        from app.ui.dialogs.about import about_box

        box = about_box(self._window)
        box.show()

    def open_folder(self, folder: Path, opener: Callable[[QUrl], bool] = QDesktopServices.openUrl) -> bool:
        """Show a folder in the desktop's file manager (made first if it does not exist yet)."""
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._show_error(f"Cannot open {folder}: {exc.strerror or exc}")
            return False
        if not opener(QUrl.fromLocalFile(str(folder))):
            self._show_error(f"The desktop could not open {folder}")
            return False
        return True

    @async_slot()
    async def copy_diagnostics(self) -> None:
        outcome = await self.ops.run("copy the diagnostics", lambda: self._facade.diagnostics(_qt_versions()))
        if isinstance(outcome, Succeeded):
            clipboard = QGuiApplication.clipboard()
            clipboard.setText(outcome.value)
            self._window.notices.show_message("Diagnostics copied: paste them into your bug report.")


def _qt_versions() -> dict[str, str]:
    from app.ui.dialogs.about import running_versions

    found = running_versions()
    return {"Qt": found.get("Qt", "?"), "style": QApplication.style().name()}
