"""The main window: a navigation list on the left, one pane at a time on the right, the connection in the status bar.

The bootstrap builds `MainWindow(facade)`, shows it, calls `maybe_show_first_run()`, and once the window has
closed (the `closed` signal, or QApplication.lastWindowClosed) awaits `shutdown()` before it stops the facade.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QSize, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QMainWindow, QStackedWidget, QWidget

from app.runtime.events import ConnectionChanged, ConnectionState
from app.runtime.facade import FamiliarFacade
from app.ui.async_slot import cancel_running_slots
from app.ui.bridge import RuntimeBridge
from app.ui.connection_indicator import ConnectionIndicator
from app.ui.dialogs.settings_dialog import SettingsDialog
from app.ui.icons import app_icon
from app.ui.panes.chat import ChatPane
from app.ui.panes.dashboard import DashboardPane, latency_text

_log = logging.getLogger(__name__)

NAVIGATION_WIDTH = 170


class MainWindow(QMainWindow):
    """Emits `closed` once the window has been closed (File > Quit or the title bar)."""

    closed = Signal()

    def __init__(self, facade: FamiliarFacade, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._facade = facade
        self._settings_dialog: SettingsDialog | None = None
        self.setWindowTitle(f"Familiar — {facade.familiar_name}")
        self.setWindowIcon(app_icon())
        self.resize(1100, 700)
        self.setMinimumSize(QSize(760, 480))

        self.bridge = RuntimeBridge(facade, self)
        self.dashboard = DashboardPane(facade, self.bridge)
        self.dashboard.settings_requested.connect(self.open_settings)
        self.chat = ChatPane(facade)

        # Adding a pane is one line here.
        self.panes: list[tuple[str, QWidget]] = [
            ("Dashboard", self.dashboard),
            ("Chat", self.chat),
        ]

        self.navigation = QListWidget()
        self.navigation.setFixedWidth(NAVIGATION_WIDTH)
        self.navigation.setObjectName("navigation")
        self.navigation.setStyleSheet(
            "#navigation { border: none; border-right: 1px solid #d6d6d6; background: #f4f4f6; padding-top: 8px;"
            " outline: 0; }"
            " #navigation::item { padding: 8px 14px; }"
            " #navigation::item:selected { background: #dde6f6; color: black; border-left: 3px solid #3b6fd4; }"
        )
        self.stack = QStackedWidget()
        for title, pane in self.panes:
            self.navigation.addItem(title)
            self.stack.addWidget(pane)
        self.navigation.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.navigation.setCurrentRow(0)

        central = QWidget()
        layout = QHBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.navigation)
        layout.addWidget(self.stack, 1)
        self.setCentralWidget(central)

        self._build_menu()

        status = facade.get_status()
        self.connection_indicator = ConnectionIndicator()
        self.connection_indicator.set_state(status.state)
        self.latency_label = QLabel(latency_text(status.latency_ms))
        self.statusBar().addWidget(self.connection_indicator)
        self.statusBar().addPermanentWidget(self.latency_label)
        self.statusBar().setContentsMargins(8, 0, 8, 0)
        self.bridge.connection_changed.connect(self._on_bridge_connection_changed)
        self.bridge.latency_measured.connect(self._on_bridge_latency_measured)

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

    def show_pane(self, title: str) -> None:
        """Switch to the pane called `title` (as listed in the navigation)."""
        for row, (pane_title, _pane) in enumerate(self.panes):
            if pane_title == title:
                self.navigation.setCurrentRow(row)
                return
        raise KeyError(title)

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

    async def shutdown(self) -> None:
        """Stop listening to the runtime and cancel handlers still in flight. The bootstrap then stops the facade."""
        self.bridge.close()
        await cancel_running_slots()

    def closeEvent(self, event: QCloseEvent) -> None:
        super().closeEvent(event)
        if event.isAccepted():
            if self._settings_dialog is not None:
                self._settings_dialog.close()  # an open child dialog would outlive the window
            self.closed.emit()

    def _on_bridge_connection_changed(self, event: ConnectionChanged) -> None:
        self.connection_indicator.set_state(event.state, event.detail)
        if event.state is not ConnectionState.CONNECTED:
            self.latency_label.setText(latency_text(None))

    def _on_bridge_latency_measured(self, milliseconds: float) -> None:
        self.latency_label.setText(latency_text(milliseconds))
