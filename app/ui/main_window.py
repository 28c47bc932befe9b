"""The main window: a navigation list on the left, one pane at a time on the right, the connection and
background progress in the status bar, Undo notices at the bottom right, Ctrl+Z / Ctrl+Shift+Z.

Panes are built from `PANES`, the one registry of panes: adding a pane is one line there (see
app/ui/panes/base.py). Its names are what `familiar --pane NAME` and `familiar screenshot --pane NAME`
accept.

The bootstrap builds `MainWindow(facade)`, shows it, calls `maybe_show_first_run()`, and once the window has
closed (the `closed` signal, or QApplication.lastWindowClosed) awaits `shutdown()` before it stops the facade.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from PySide6.QtCore import QSize, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QMainWindow, QMessageBox, QStackedWidget, QWidget

from app.runtime.events import ConnectionChanged, ConnectionState
from app.runtime.facade import FamiliarFacade
from app.ui.async_slot import cancel_running_slots
from app.ui.bridge import RuntimeBridge
from app.ui.dialogs.settings_dialog import SettingsDialog
from app.ui.icons import app_icon
from app.ui.panes.base import Pane, PaneContext
from app.ui.panes.chat import ChatPane
from app.ui.panes.dashboard import DashboardPane, latency_text
from app.ui.panes.lorebook import LorebookPane
from app.ui.panes.memory import MemoryPane
from app.ui.progress import StatusProgress
from app.ui.theme import NAVIGATION_STYLE
from app.ui.undo import UndoCentre
from app.ui.widgets.connection_indicator import ConnectionIndicator
from app.ui.widgets.notices import NoticeArea
from app.ui.widgets.pause_light import PauseLight

_log = logging.getLogger(__name__)

NAVIGATION_WIDTH = 170
DEFAULT_SIZE = QSize(1100, 700)

PANES: tuple[type[Pane], ...] = (
    DashboardPane,
    ChatPane,
    MemoryPane,
    LorebookPane,
)
"""Every pane, in navigation order. Adding a pane is one line here."""

P = TypeVar("P", bound=Pane)


def pane_names() -> tuple[str, ...]:
    return tuple(pane.name for pane in PANES)


def check_pane_name(name: str) -> str:
    """`name` if a pane has it; otherwise ValueError naming the choices."""
    if name not in pane_names():
        raise ValueError(f"there is no pane '{name}'; choose one of: {', '.join(pane_names())}")
    return name


class MainWindow(QMainWindow):
    """Emits `closed` once the window has been closed (File > Quit or the title bar)."""

    closed = Signal()

    def __init__(self, facade: FamiliarFacade, parent: QWidget | None = None, *, pane: str | None = None) -> None:
        super().__init__(parent)
        self._facade = facade
        self._settings_dialog: SettingsDialog | None = None
        self._shown_once = False
        self.setWindowTitle(f"Familiar — {facade.familiar_name}")
        self.setWindowIcon(app_icon())
        self.resize(DEFAULT_SIZE)
        self.setMinimumSize(QSize(760, 480))

        central = QWidget()
        self.setCentralWidget(central)
        self.notices = NoticeArea(central)
        self.bridge = RuntimeBridge(facade, self)
        self.undo = UndoCentre(self.notices, self)
        self.status_progress = StatusProgress()
        context = PaneContext(
            facade=facade, bridge=self.bridge, undo=self.undo, status=self.status_progress, window=self
        )
        self.panes: list[Pane] = [pane_class(context) for pane_class in PANES]

        self.dashboard = self.pane_of(DashboardPane)
        self.dashboard.settings_requested.connect(self.open_settings)
        self.chat = self.pane_of(ChatPane)

        self.navigation = QListWidget()
        self.navigation.setFixedWidth(NAVIGATION_WIDTH)
        self.navigation.setObjectName("navigation")
        self.navigation.setStyleSheet(NAVIGATION_STYLE)
        self.stack = QStackedWidget()
        for each in self.panes:
            self.navigation.addItem(each.title)
            self.stack.addWidget(each)
        self.navigation.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.navigation.setCurrentRow(0)

        layout = QHBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.navigation)
        layout.addWidget(self.stack, 1)
        self.notices.raise_()

        self._build_menu()

        status = facade.get_status()
        self.connection_indicator = ConnectionIndicator()
        self.connection_indicator.set_state(status.state)
        self.latency_label = QLabel(latency_text(status.latency_ms))
        # On every pane: lit while anything is paused; a click opens Memory controls.
        self.pause_light = PauseLight(facade, self.bridge)
        self.pause_light.clicked.connect(self._on_pause_light_clicked)
        self.statusBar().addWidget(self.connection_indicator)
        self.statusBar().addWidget(self.pause_light)
        self.statusBar().addWidget(self.status_progress)
        self.statusBar().addPermanentWidget(self.latency_label)
        self.statusBar().setContentsMargins(8, 0, 8, 0)
        self.bridge.connection_changed.connect(self._on_bridge_connection_changed)
        self.bridge.latency_measured.connect(self._on_bridge_latency_measured)
        if pane is not None:
            self.show_pane(pane)

    def _build_menu(self) -> None:
        self.file_menu = file_menu = self.menuBar().addMenu("&File")
        self.settings_action = QAction("&Settings…", self)
        self.settings_action.setShortcut(QKeySequence.StandardKey.Preferences)
        self.settings_action.triggered.connect(self.open_settings)
        file_menu.addAction(self.settings_action)
        file_menu.addSeparator()
        self.quit_action = QAction("&Quit", self)
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        self.quit_action.triggered.connect(self.close)
        file_menu.addAction(self.quit_action)
        self.edit_menu = edit_menu = self.menuBar().addMenu("&Edit")
        edit_menu.addAction(self.undo.undo_action)
        edit_menu.addAction(self.undo.redo_action)

    # -- panes -------------------------------------------------------------------------------------
    def pane_of(self, pane_class: type[P]) -> P:
        """The window's pane of this class."""
        for each in self.panes:
            if isinstance(each, pane_class):
                return each
        raise KeyError(pane_class.__name__)

    def pane(self, name: str) -> Pane:
        """The pane called `name` (its registry name, e.g. "chat", or its title, e.g. "Chat")."""
        for each in self.panes:
            if name in (each.name, each.title):
                return each
        raise KeyError(name)

    @property
    def current_pane(self) -> Pane:
        return self.panes[self.stack.currentIndex()]

    def show_pane(self, name: str) -> Pane:
        """Switch to a pane by name or title; returns it."""
        found = self.pane(name)
        self.navigation.setCurrentRow(self.panes.index(found))
        return found

    # -- settings ----------------------------------------------------------------------------------
    @property
    def settings_dialog(self) -> SettingsDialog | None:
        return self._settings_dialog

    def open_settings(self) -> SettingsDialog:
        """Show the settings dialog (non-modal); raise it if it is already open."""
        dialog = self._settings_dialog
        if dialog is not None and dialog.isVisible():
            dialog.raise_()
            dialog.activateWindow()
            return dialog
        if dialog is not None:
            dialog.deleteLater()
        dialog = SettingsDialog(self._facade, self)
        dialog.saved.connect(self.dashboard.refresh_status)
        self._settings_dialog = dialog
        dialog.show()
        return dialog

    def maybe_show_first_run(self) -> bool:
        """Open Settings when the familiar is not configured yet; returns whether it did."""
        if self._facade.get_status().configured:
            return False
        self.open_settings()
        return True

    # -- lifetime ----------------------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Stop listening to the runtime and cancel handlers still in flight. The bootstrap then stops the facade."""
        self.bridge.close()
        await cancel_running_slots()

    def closeEvent(self, event: QCloseEvent) -> None:
        unsaved = [(each, text) for each in self.panes if (text := each.unsaved_work())]
        if unsaved and not self.confirm_discard([text for _pane, text in unsaved]):
            event.ignore()
            self.show_pane(unsaved[0][0].name)
            return
        super().closeEvent(event)
        if event.isAccepted():
            if self._settings_dialog is not None:
                self._settings_dialog.close()  # an open child dialog would outlive the window
            self.closed.emit()

    def confirm_discard(self, losses: list[str]) -> bool:
        """Whether closing may drop unsaved work (a pane's edits): asked, Cancel by default."""
        answer = QMessageBox.warning(
            self,
            "Unsaved changes",
            "\n".join(losses) + "\n\nClose anyway and lose them?",
            QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        return answer == QMessageBox.StandardButton.Discard

    def _on_bridge_connection_changed(self, event: ConnectionChanged) -> None:
        self.connection_indicator.set_state(event.state, event.detail)
        if event.state is not ConnectionState.CONNECTED:
            self.latency_label.setText(latency_text(None))

    def _on_pause_light_clicked(self) -> None:
        self.show_pane(MemoryPane.name)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._shown_once:
            self._shown_once = True
            self.pause_light.refresh()

    def _on_bridge_latency_measured(self, milliseconds: float) -> None:
        self.latency_label.setText(latency_text(milliseconds))
