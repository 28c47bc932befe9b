"""The system tray icon: the familiar's state at a glance (a coloured badge on the icon), and a menu with
Show, Start / Stop, Pause learning, Pause recall and Quit.

`TrayIcon` is the menu and the state logic, always built, so it can be used and tested where the desktop
has no tray (the offscreen platform, a GNOME without the tray extension); the QSystemTrayIcon itself is
created only when the desktop has a tray (`available`). The window wires the signals (app/ui/main_window.py).
"""

from __future__ import annotations

import enum
import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QAction, QColor, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from app.runtime.events import ConnectionState
from app.ui.icons import app_icon
from app.ui.theme import STATE_WORDS, colours

if TYPE_CHECKING:  # for annotations only: this module is on the window's path to its first paint
    from app.runtime.api.views import PauseView


_log = logging.getLogger(__name__)

BADGE_SIZES = (16, 22, 24, 32, 48, 64)
MESSAGE_MS = 8_000


class TrayState(enum.Enum):
    """What the badge shows, most urgent first."""

    ERROR = "error"  # the connection failed
    PAUSED = "paused"  # learning or recall paused everywhere
    CONNECTED = "connected"
    CONNECTING = "connecting"
    STOPPED = "stopped"  # not connected (or still starting): no badge


def tray_state(connection: ConnectionState, pause: PauseView | None) -> TrayState:
    if connection is ConnectionState.FAILED:
        return TrayState.ERROR
    if pause is not None and ("*" in pause.learning or "*" in pause.recall):
        return TrayState.PAUSED
    if connection is ConnectionState.CONNECTED:
        return TrayState.CONNECTED
    if connection in (ConnectionState.CONNECTING, ConnectionState.RECONNECTING):
        return TrayState.CONNECTING
    return TrayState.STOPPED


def badge_colour(state: TrayState) -> str | None:
    p = colours()
    return {
        TrayState.ERROR: p.state_failed,
        TrayState.PAUSED: p.amber,
        TrayState.CONNECTED: p.state_connected,
        TrayState.CONNECTING: p.state_busy,
        TrayState.STOPPED: None,
    }[state]


def badged_icon(base: QIcon, colour: str | None) -> QIcon:
    """`base` with a round badge of `colour` at its bottom right (none for None), at every tray size."""
    if colour is None:
        return base
    icon = QIcon()
    for size in BADGE_SIZES:
        pixmap = base.pixmap(size, size)
        if pixmap.isNull():
            pixmap = QPixmap(size, size)
            pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        diameter = max(6.0, size * 0.46)
        ring = max(1.0, size / 16)
        box = QRectF(size - diameter - ring / 2, size - diameter - ring / 2, diameter, diameter)
        painter.setPen(QPen(QColor("#ffffff"), ring))
        painter.setBrush(QColor(colour))
        painter.drawEllipse(box.center(), diameter / 2, diameter / 2)
        painter.end()
        icon.addPixmap(pixmap)
    return icon


def badge_pixel(icon: QIcon, size: int = 32) -> QColor:
    """The colour at the badge's centre (for tests and for looking)."""
    diameter = max(6.0, size * 0.46)
    ring = max(1.0, size / 16)
    centre = QPointF(size - diameter / 2 - ring / 2, size - diameter / 2 - ring / 2)
    return icon.pixmap(size, size).toImage().pixelColor(int(centre.x()), int(centre.y()))


class TrayIcon(QObject):
    """The tray menu and its state; a QSystemTrayIcon too when the desktop has a tray."""

    show_requested = Signal()
    start_requested = Signal()
    stop_requested = Signal()
    pause_requested = Signal(str, bool)  # "learning" / "recall", paused
    quit_requested = Signal()
    message_clicked = Signal()

    def __init__(self, familiar_name: str, parent: QObject | None = None, *, available: bool | None = None) -> None:
        super().__init__(parent)
        self._name = familiar_name
        self._connection = ConnectionState.STARTING
        self._pause: PauseView | None = None
        self._base = app_icon()
        # Whether closing the window may hide it in the tray. Tests pass True to use the logic offscreen.
        self.available = QSystemTrayIcon.isSystemTrayAvailable() if available is None else available

        self.menu = QMenu()
        self.destroyed.connect(self.menu.deleteLater)
        self.show_action = QAction("&Show Familiar", self)
        self.show_action.triggered.connect(self.show_requested)
        self.start_stop_action = QAction("&Start", self)
        self.start_stop_action.triggered.connect(self._on_start_stop)
        self.pause_learning_action = QAction("Pause &learning", self)
        self.pause_learning_action.setCheckable(True)
        self.pause_learning_action.setToolTip("Stop learning new facts everywhere; conversation goes on")
        self.pause_learning_action.toggled.connect(lambda on: self._on_pause_toggled("learning", on))
        self.pause_recall_action = QAction("Pause &recall", self)
        self.pause_recall_action.setCheckable(True)
        self.pause_recall_action.setToolTip("Stop using memories in replies everywhere")
        self.pause_recall_action.toggled.connect(lambda on: self._on_pause_toggled("recall", on))
        self.quit_action = QAction("&Quit", self)
        self.quit_action.triggered.connect(self.quit_requested)
        self.menu.addAction(self.show_action)
        self.menu.addSeparator()
        self.menu.addAction(self.start_stop_action)
        self.menu.addAction(self.pause_learning_action)
        self.menu.addAction(self.pause_recall_action)
        self.menu.addSeparator()
        self.menu.addAction(self.quit_action)

        self.icon: QSystemTrayIcon | None = None
        if self.available and QSystemTrayIcon.isSystemTrayAvailable():  # the OS-level icon only where there is one
            self.icon = QSystemTrayIcon(self._base, self)
            self.icon.setContextMenu(self.menu)
            self.icon.activated.connect(self._on_activated)
            self.icon.messageClicked.connect(self.message_clicked)
        self._refresh()

    # -- state -------------------------------------------------------------------------------------
    @property
    def state(self) -> TrayState:
        return tray_state(self._connection, self._pause)

    def current_icon(self) -> QIcon:
        return badged_icon(self._base, badge_colour(self.state))

    def tooltip(self) -> str:
        words = [STATE_WORDS[self._connection]]
        if self._pause is not None:
            if "*" in self._pause.learning:
                words.append("learning paused")
            if "*" in self._pause.recall:
                words.append("recall paused")
        return f"Familiar — {self._name}: {', '.join(words)}"

    def set_name(self, name: str) -> None:
        """The name the familiar goes by now (its settings were saved)."""
        self._name = name
        self._refresh()

    def set_connection(self, state: ConnectionState) -> None:
        self._connection = state
        self._refresh()

    def set_pause(self, pause: PauseView) -> None:
        self._pause = pause
        self._refresh()

    def _refresh(self) -> None:
        running = self._connection in (
            ConnectionState.CONNECTING,
            ConnectionState.RECONNECTING,
            ConnectionState.CONNECTED,
        )
        self.start_stop_action.setText("S&top" if running else "&Start")
        self.start_stop_action.setEnabled(self._connection is not ConnectionState.STARTING)
        known = self._pause is not None
        for action, kind in ((self.pause_learning_action, "learning"), (self.pause_recall_action, "recall")):
            action.setEnabled(known)
            chosen = () if self._pause is None else (self._pause.learning if kind == "learning" else self._pause.recall)
            action.blockSignals(True)  # showing the state is not asking for a change
            action.setChecked("*" in chosen)
            action.blockSignals(False)
        if self.icon is not None:
            self.icon.setIcon(self.current_icon())
            self.icon.setToolTip(self.tooltip())

    # -- the desktop ------------------------------------------------------------------------------
    def show(self) -> None:
        if self.icon is not None:
            self.icon.show()

    def hide(self) -> None:
        if self.icon is not None:
            self.icon.hide()

    @property
    def can_notify(self) -> bool:
        return self.icon is not None and self.icon.isVisible() and QSystemTrayIcon.supportsMessages()

    def notify(self, title: str, text: str) -> bool:
        """A desktop notification from the tray icon; False when the desktop cannot show one."""
        if not self.can_notify or self.icon is None:
            return False
        self.icon.showMessage(title, text, self.current_icon(), MESSAGE_MS)
        return True

    # -- handlers ----------------------------------------------------------------------------------
    def _on_start_stop(self) -> None:
        if self._connection in (ConnectionState.CONNECTING, ConnectionState.RECONNECTING, ConnectionState.CONNECTED):
            self.stop_requested.emit()
        else:
            self.start_requested.emit()

    def _on_pause_toggled(self, kind: str, paused: bool) -> None:
        self.pause_requested.emit(kind, paused)

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            self.show_requested.emit()
