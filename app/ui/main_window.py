"""The main window: a navigation list on the left, one pane at a time on the right, the connection and
background progress in the status bar, Undo notices at the bottom right, Ctrl+Z / Ctrl+Shift+Z.

Panes are built from `PANES`, the one registry of panes: adding a pane is one line there (see
app/ui/panes/base.py). Its names are what `familiar --pane NAME` and `familiar screenshot --pane NAME`
accept. Cold start: a pane's module is imported and the pane built when it is first shown (the Dashboard,
which collects the activity feed, always at once), so the first paint waits only for what it draws.

The bootstrap builds `MainWindow(facade)`, shows it, calls `maybe_show_first_run()`, and once the window has
closed (the `closed` signal, or QApplication.lastWindowClosed) awaits `shutdown()` before it stops the facade.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from PySide6.QtCore import QEvent, QModelIndex, QObject, QSize, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QBoxLayout,
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QWidget,
)

from app.config.ui_prefs import UiPreferencesFile
from app.runtime.api.facade import FamiliarFacade
from app.runtime.events import ConnectionChanged, ConnectionState
from app.ui.async_slot import async_slot, cancel_running_slots
from app.ui.bridge import RuntimeBridge
from app.ui.desktop import Desktop, window_title
from app.ui.dialogs.modal import ask_buttons
from app.ui.dialogs.window_prefs import WindowPreferencesBox
from app.ui.icons import app_icon
from app.ui.panes.base import Pane, PaneContext
from app.ui.panes.dashboard import DashboardPane, latency_text
from app.ui.progress import StatusProgress
from app.ui.theme import NAVIGATION_WIDTH, STATUS_BAR_MARGINS, ThemeController, navigation_style
from app.ui.tray import TrayIcon
from app.ui.undo import UndoCentre
from app.ui.widgets.connection_indicator import ConnectionIndicator
from app.ui.widgets.disk_full_light import DiskFullLight
from app.ui.widgets.notices import NoticeArea
from app.ui.widgets.pause_light import PauseLight

if TYPE_CHECKING:
    from app.ui.dialogs.familiars import Launcher
    from app.ui.dialogs.settings_dialog import SettingsDialog
    from app.ui.dialogs.welcome_dialog import WelcomeDialog
    from app.ui.panes.chat import ChatPane

_log = logging.getLogger(__name__)

DEFAULT_SIZE = QSize(1100, 700)


@dataclass(frozen=True, slots=True)
class PaneSpec:
    """A pane the window has, named without importing it: its module loads when the pane is first shown."""

    name: str  # the class's `name`: `familiar --pane NAME`
    title: str  # the class's `title`: the navigation entry
    module: str  # in app.ui.panes
    class_name: str

    def load(self) -> type[Pane]:
        pane_class = getattr(importlib.import_module(f"app.ui.panes.{self.module}"), self.class_name)
        if not (isinstance(pane_class, type) and issubclass(pane_class, Pane)):
            raise TypeError(f"app.ui.panes.{self.module}.{self.class_name} is not a Pane")
        if (pane_class.name, pane_class.title) != (self.name, self.title):
            raise TypeError(f"{self.class_name} is called {pane_class.name!r} / {pane_class.title!r}, not as in PANES")
        return pane_class


PANES: tuple[PaneSpec, ...] = (
    PaneSpec("dashboard", "Dashboard", "dashboard", "DashboardPane"),
    PaneSpec("chat", "Chat", "chat", "ChatPane"),
    PaneSpec("pending", "Pending queue", "pending", "PendingPane"),
    PaneSpec("people", "People", "people", "PeoplePane"),
    PaneSpec("timeline", "Facts timeline", "timeline", "TimelinePane"),
    PaneSpec("memory", "Memory controls", "memory", "MemoryPane"),
    PaneSpec("character", "Character", "character", "CharacterPane"),
    PaneSpec("lorebook", "Lorebook", "lorebook", "LorebookPane"),
    PaneSpec("index", "Index health", "index", "IndexPane"),
    PaneSpec("explain", "Why did it say that", "explain", "ExplainPane"),
)
"""Every pane, in navigation order. Adding a pane is one line here."""
MEMORY_PANE = "memory"

P = TypeVar("P", bound=Pane)
D = TypeVar("D", bound=QDialog)


def pane_names() -> tuple[str, ...]:
    return tuple(pane.name for pane in PANES)


def check_pane_name(name: str) -> str:
    """`name` if a pane has it; otherwise ValueError naming the choices."""
    if name not in pane_names():
        raise ValueError(f"there is no pane '{name}'; choose one of: {', '.join(pane_names())}")
    return name


class _FirstPaint(QObject):
    """Completes a future at the first paint event of the object it filters, then removes itself."""

    def __init__(self, done: asyncio.Future[None], parent: QObject) -> None:
        super().__init__(parent)
        self._done = done

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and not self._done.done():
            self._done.set_result(None)
            watched.removeEventFilter(self)
            self.deleteLater()
        return False


def _add_section(dialog: QDialog, section: QWidget) -> None:
    """Add a section to a dialog laid out top to bottom, above its last row (the buttons)."""
    layout = dialog.layout()
    if isinstance(layout, QBoxLayout):
        layout.insertWidget(max(0, layout.count() - 1), section)
    elif layout is not None:
        layout.addWidget(section)


def _raised(dialog: D | None) -> D | None:
    """`dialog` raised and returned if it is showing; a closed one is let go (None: make a new one)."""
    if dialog is not None and dialog.isVisible():
        dialog.raise_()
        dialog.activateWindow()
        return dialog
    if dialog is not None:
        dialog.deleteLater()
    return None


class MainWindow(QMainWindow):
    """Emits `closed` once the window has been closed for real (File > Quit, the tray's Quit, or the title bar
    when it does not close to the tray)."""

    closed = Signal()
    # Whether a close with unsaved edits asks first (tests that close windows at their end turn it off).
    ask_before_discarding = True

    def __init__(
        self,
        facade: FamiliarFacade,
        parent: QWidget | None = None,
        *,
        pane: str | None = None,
        prefs: UiPreferencesFile | None = None,
        theme: ThemeController | None = None,
        tray: TrayIcon | None = None,
        root: Path | None = None,
        launcher: Launcher | None = None,
    ) -> None:
        """`prefs`: the window preferences (ui.toml; None: defaults, not saved); `theme`: the application's
        theme; `tray`: the tray icon (None: none); `root`: the data root (File > Open / New familiar)."""
        super().__init__(parent)
        self._facade = facade
        self._settings_dialog: SettingsDialog | None = None
        self._welcome_dialog: WelcomeDialog | None = None
        self._shown_once = False
        self._discard_question: asyncio.Task[None] | None = None
        self._discard_confirmed = False  # the owner said Discard: the next close goes through
        self.setWindowTitle(window_title(facade.display_name))
        self.setWindowIcon(app_icon())
        self.resize(DEFAULT_SIZE)
        self.setMinimumSize(QSize(760, 480))

        central = QWidget()
        self.setCentralWidget(central)
        self.notices = NoticeArea(central)
        self.bridge = RuntimeBridge(facade, self)
        self.undo = UndoCentre(self.notices, self)
        self.status_progress = StatusProgress()
        self._specs = PANES  # as it was when built (tests take panes out of the registry)
        self._context = PaneContext(
            facade=facade,
            bridge=self.bridge,
            undo=self.undo,
            status=self.status_progress,
            window=self,
            panes=frozenset(self.pane_names),
        )
        self._built: dict[str, Pane] = {}

        self.navigation = QListWidget()
        self.navigation.setFixedWidth(NAVIGATION_WIDTH)
        self.navigation.setObjectName("navigation")
        self.navigation.setStyleSheet(navigation_style())
        self.stack = QStackedWidget()
        for spec in self._specs:
            self.navigation.addItem(spec.title)
            self.stack.addWidget(QWidget())  # stands in for the pane until it is first shown
        self.dashboard = self._build(0, DashboardPane)
        self.dashboard.settings_requested.connect(self.open_settings)
        self.navigation.currentRowChanged.connect(self._on_navigation_row_changed)
        # A click on a pane (or Enter on it) opens it for work: the keyboard goes into it. The arrow keys
        # only move through the list (and show each pane), so the list keeps the focus.
        self.navigation.clicked.connect(self._on_navigation_clicked)
        self.navigation.activated.connect(self._on_navigation_clicked)
        self.navigation.setCurrentRow(0)

        layout = QHBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.navigation)
        layout.addWidget(self.stack, 1)
        self.notices.raise_()

        self.desktop = Desktop(
            self, facade, prefs=prefs or UiPreferencesFile(None), theme=theme, tray=tray, root=root, launcher=launcher
        )
        self._build_menu()

        status = facade.get_status()
        self.connection_indicator = ConnectionIndicator()
        self.connection_indicator.set_state(status.state, status.state_detail)
        self.latency_label = QLabel(latency_text(status.latency_ms))
        # On every pane: lit while anything is paused; a click opens Memory controls.
        self.pause_light = PauseLight(facade, self.bridge)
        self.pause_light.clicked.connect(self._on_pause_light_clicked)
        # On every pane: lit while the disk holding the familiar's files is full.
        self.disk_full_light = DiskFullLight(self.bridge)
        self.disk_full_light.show_banner(status.disk_full)
        self.statusBar().addWidget(self.connection_indicator)
        self.statusBar().addWidget(self.disk_full_light)
        self.statusBar().addWidget(self.pause_light)
        self.statusBar().addWidget(self.status_progress)
        self.statusBar().addPermanentWidget(self.latency_label)
        self.statusBar().setContentsMargins(*STATUS_BAR_MARGINS)
        self.bridge.connection_changed.connect(self._on_bridge_connection_changed)
        self.bridge.latency_measured.connect(self._on_bridge_latency_measured)
        self.desktop.restore_placement(pane)

    def _build_menu(self) -> None:
        self.file_menu = file_menu = self.menuBar().addMenu("&File")
        self.desktop.add_familiar_actions(file_menu)
        file_menu.addSeparator()
        self.settings_action = QAction("&Settings…", self)
        self.settings_action.setShortcut(QKeySequence.StandardKey.Preferences)
        self.settings_action.triggered.connect(self.open_settings)
        file_menu.addAction(self.settings_action)
        file_menu.addSeparator()
        self.quit_action = QAction("&Quit", self)
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        self.quit_action.setToolTip("Stop the familiar and close the window")
        self.quit_action.triggered.connect(self.quit)
        file_menu.addAction(self.quit_action)
        self.edit_menu = edit_menu = self.menuBar().addMenu("&Edit")
        edit_menu.addAction(self.undo.undo_action)
        edit_menu.addAction(self.undo.redo_action)
        self.help_menu = self.menuBar().addMenu("&Help")
        self.desktop.add_help_menu(self.help_menu)

    # -- panes -------------------------------------------------------------------------------------
    def _build(self, row: int, expected: type[P]) -> P:
        """The pane at `row`, built (and its module imported) now if it was not yet."""
        spec = self._specs[row]
        built = self._built.get(spec.name)
        if built is None:
            built = spec.load()(self._context)
            built.navigate_requested.connect(self._on_pane_navigate_requested)
            standing_in = self.stack.widget(row)
            current = self.stack.currentIndex()
            self.stack.insertWidget(row, built)
            if standing_in is not None:
                self.stack.removeWidget(standing_in)
                standing_in.deleteLater()
            if current == row:
                self.stack.setCurrentIndex(row)
            self._built[spec.name] = built
        if not isinstance(built, expected):
            raise TypeError(f"the {spec.name} pane is a {type(built).__name__}, not a {expected.__name__}")
        return built

    def _row(self, name: str) -> int:
        for row, spec in enumerate(self._specs):
            if name in (spec.name, spec.title):
                return row
        raise KeyError(name)

    def _on_navigation_row_changed(self, row: int) -> None:
        if row < 0:
            return
        self._build(row, Pane)
        self.stack.setCurrentIndex(row)

    def _on_navigation_clicked(self, index: QModelIndex) -> None:
        if index.isValid() and index.row() == self.stack.currentIndex():
            self.current_pane.take_focus()

    @property
    def panes(self) -> list[Pane]:
        """Every pane, in navigation order (each built now if it was not yet)."""
        return [self._build(row, Pane) for row in range(len(self._specs))]

    @property
    def built_panes(self) -> list[Pane]:
        """The panes built so far (shown at least once, and the Dashboard)."""
        return [self._built[spec.name] for spec in self._specs if spec.name in self._built]

    @property
    def pane_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self._specs)

    @property
    def chat(self) -> ChatPane:
        from app.ui.panes.chat import ChatPane

        return self.pane_of(ChatPane)

    def pane_of(self, pane_class: type[P]) -> P:
        """The window's pane of this class (built now if it was not yet)."""
        return self._build(self._row(pane_class.name), pane_class)

    def pane(self, name: str) -> Pane:
        """The pane called `name` (its registry name, e.g. "chat", or its title, e.g. "Chat")."""
        return self._build(self._row(name), Pane)

    def _on_pane_navigate_requested(self, name: str, target: object) -> None:
        self.show_pane(name).focus_on(target)

    @property
    def current_pane(self) -> Pane:
        return self._build(self.stack.currentIndex(), Pane)

    def show_pane(self, name: str) -> Pane:
        """Switch to a pane by name or title; returns it."""
        row = self._row(name)
        found = self._build(row, Pane)
        self.navigation.setCurrentRow(row)
        return found

    # -- settings ----------------------------------------------------------------------------------
    @property
    def settings_dialog(self) -> SettingsDialog | None:
        return self._settings_dialog

    def open_settings(self) -> SettingsDialog:
        """Show the settings dialog (non-modal); raise it if it is already open."""
        if (showing := _raised(self._settings_dialog)) is not None:
            return showing
        from app.ui.dialogs.settings_dialog import SettingsDialog

        dialog = SettingsDialog(self._facade, self)
        dialog.saved.connect(self.dashboard.refresh_status)
        dialog.welcome_requested.connect(self.open_welcome)
        window_box = WindowPreferencesBox(
            self.desktop.prefs,
            self.desktop.theme,
            tray_available=self.desktop.tray is not None and self.desktop.tray.available,
        )
        dialog.rejected.connect(window_box.restore)  # Cancel puts back the theme in force before
        _add_section(dialog, window_box)
        self._settings_dialog = dialog
        dialog.show()
        return dialog

    @property
    def welcome_dialog(self) -> WelcomeDialog | None:
        return self._welcome_dialog

    def open_welcome(self) -> WelcomeDialog:
        """Show the welcome flow (non-modal); raise it if it is already open."""
        if (showing := _raised(self._welcome_dialog)) is not None:
            return showing
        from app.ui.dialogs.welcome_dialog import WelcomeDialog

        dialog = WelcomeDialog(self._facade, self)
        dialog.saved.connect(self.dashboard.refresh_status)
        dialog.chat_requested.connect(self._on_welcome_chat_requested)
        self._welcome_dialog = dialog
        dialog.show()
        return dialog

    def _on_welcome_chat_requested(self) -> None:
        """The welcome went on "without Discord" and ended: Chat, and, once it can answer there (a language
        model is set), the choice is remembered, so the welcome does not open at each launch for the token."""
        self.show_pane("chat")
        if self._chat_can_answer():
            tried = self.desktop.prefs.prefs.without_discord
            name = self._facade.familiar_name
            if name not in tried:
                self.desktop.prefs.update(without_discord=(*tried, name))

    def _chat_can_answer(self) -> bool:
        """Nothing but the bot token is missing: the local chat has its language model."""
        return set(self._facade.get_status().missing) <= {"bot token"}

    # -- start-up ------------------------------------------------------------------------------------
    def first_paint(self) -> asyncio.Future[None]:
        """Done once the window has painted for the first time (call before show())."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        watcher = _FirstPaint(done, self)
        self.installEventFilter(watcher)
        return done

    def familiar_ready(self) -> None:
        """The facade has become live (it was a DeferredFacade while the familiar opened): show its status."""
        status = self._facade.get_status()
        self.connection_indicator.set_state(status.state, status.state_detail)
        self.latency_label.setText(latency_text(status.latency_ms))
        self.disk_full_light.show_banner(status.disk_full)
        self.dashboard.refresh_status()
        self.desktop.familiar_ready()

    def maybe_show_first_run(self) -> bool:
        """Open the welcome flow when the familiar is not configured yet; returns whether it did. Not for a
        familiar its owner chose to try without Discord that has its language model: only the bot token is
        missing, and that was the choice (Settings > Run the welcome again… is there for it)."""
        if self._facade.get_status().configured:
            return False
        if self._facade.familiar_name in self.desktop.prefs.prefs.without_discord and self._chat_can_answer():
            return False
        self.open_welcome()
        return True

    # -- lifetime ----------------------------------------------------------------------------------
    def quit(self) -> None:
        """Close for real: the familiar stops (File > Quit, the tray's Quit)."""
        self.desktop.quit()

    def bring_forward(self, pane: str | None = None) -> None:
        """Show and raise the window (from the tray, or for a second launch of this familiar)."""
        self.desktop.bring_forward(pane)

    async def shutdown(self) -> None:
        """Stop listening to the runtime and cancel handlers still in flight. The bootstrap then stops the facade."""
        self.desktop.shutdown()
        self.bridge.close()
        await cancel_running_slots()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.desktop.closes_to_tray():
            event.ignore()  # the familiar keeps running (and the panes keep their edits); the tray brings it back
            self.desktop.hide_to_tray()
            return
        unsaved = [(each, text) for each in self.built_panes if (text := each.unsaved_work())]
        if unsaved and self.ask_before_discarding and not self._discard_confirmed:
            # Asked without a nested event loop: the close is refused now and made again once the owner
            # has said Discard (the familiar keeps running meanwhile).
            event.ignore()
            self.show_pane(unsaved[0][0].name)
            if self._discard_question is None or self._discard_question.done():
                self._discard_question = self._close_if_discarded([text for _pane, text in unsaved])
            return
        self._discard_confirmed = False
        if self.isVisible():
            self.desktop.save_placement()
        super().closeEvent(event)
        if event.isAccepted():
            for child in (self._settings_dialog, self._welcome_dialog):
                if child is not None:
                    child.close()  # an open child dialog would outlive the window
            for dialog in list(self.desktop.dialogs):
                if isinstance(dialog, QWidget):
                    dialog.close()
            self.closed.emit()

    async def confirm_discard(self, losses: list[str]) -> bool:
        """Whether closing may drop unsaved work (a pane's edits): asked, Cancel by default."""
        answer = await ask_buttons(
            self,
            QMessageBox.Icon.Warning,
            "Unsaved changes",
            "\n".join(losses) + "\n\nClose anyway and lose them?",
            QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        return answer == QMessageBox.StandardButton.Discard

    @async_slot()
    async def _close_if_discarded(self, losses: list[str]) -> None:
        if await self.confirm_discard(losses):
            self._discard_confirmed = True
            self.close()
        else:
            self.desktop.stay_open()  # a Quit that was answered Cancel is no Quit

    def _on_bridge_connection_changed(self, event: ConnectionChanged) -> None:
        self.connection_indicator.set_state(event.state, event.detail)
        if event.state is not ConnectionState.CONNECTED:
            self.latency_label.setText(latency_text(None))

    def _on_pause_light_clicked(self) -> None:
        self.show_pane(MEMORY_PANE)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._shown_once:
            self._shown_once = True
            self.pause_light.refresh()

    def _on_bridge_latency_measured(self, milliseconds: float) -> None:
        self.latency_label.setText(latency_text(milliseconds))
