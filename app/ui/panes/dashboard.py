"""Dashboard: start / stop the bot, connection state, latency, guilds, the live activity log and the last error."""

from __future__ import annotations

import logging

from PySide6.QtCore import QModelIndex, QPoint, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.runtime.events import (
    Activity,
    ActivityKind,
    ConnectionChanged,
    ConnectionState,
    DiskFullChanged,
    GuildInfo,
    LorebookStatus,
)
from app.ui.async_slot import async_slot
from app.ui.error_text import single_line
from app.ui.models import activity_model, guilds_model
from app.ui.models.activity_model import ActivityLogModel
from app.ui.models.guilds_model import GuildsModel
from app.ui.panes.base import Pane, PaneContext
from app.ui.theme import SPACE_L, SPACE_M, SPACE_SM, SPACE_XS, section_label, setup_hint_style
from app.ui.widgets.connection_indicator import ConnectionIndicator
from app.ui.widgets.error_banner import ErrorBanner
from app.ui.widgets.record_table import RecordTableView

_log = logging.getLogger(__name__)

RUNNING_STATES = frozenset({ConnectionState.CONNECTING, ConnectionState.RECONNECTING, ConnectionState.CONNECTED})


GUILDS_PLACEHOLDER_STOPPED = "Not connected. Press Start to connect to Discord."
GUILDS_PLACEHOLDER_CONNECTED = "The bot is in no server yet. Invite it from the Discord developer portal."
ACTIVITY_PLACEHOLDER = "Nothing yet. Messages the familiar reads and sends will appear here."


def setup_hint_text(missing: tuple[str, ...]) -> str:
    if missing:
        return f"Not set up yet: missing {', '.join(missing)}. Open Settings."
    return "Not set up yet. Open Settings."


def latency_text(milliseconds: float | None) -> str:
    return "Latency: —" if milliseconds is None else f"Latency: {milliseconds:.0f} ms"


class DashboardPane(Pane):
    """Emits `settings_requested` when the user asks to open Settings from the set-up hint."""

    name = "dashboard"
    title = "Dashboard"

    settings_requested = Signal()

    def __init__(self, context: PaneContext, parent: QWidget | None = None) -> None:
        super().__init__(context, parent)
        self._connection = ConnectionState.STOPPED
        self._reported: str | None = None  # the runtime's last failure, as the banner was last given it
        self.ops.busy_changed.connect(self._update_buttons)

        self.guilds_model = GuildsModel(self)
        self.activity_model = ActivityLogModel(parent=self)

        self.setup_hint = QFrame()
        self.setup_hint.setObjectName("setupHint")
        self.setup_hint.setStyleSheet(setup_hint_style())
        self.setup_hint_label = QLabel()
        self.setup_hint_label.setWordWrap(True)
        self.open_settings_button = QPushButton("Open Settings…")
        self.open_settings_button.clicked.connect(self.settings_requested)
        hint_layout = QHBoxLayout(self.setup_hint)
        hint_layout.setContentsMargins(SPACE_M, SPACE_SM, SPACE_M, SPACE_SM)
        hint_layout.addWidget(self.setup_hint_label, 1)
        hint_layout.addWidget(self.open_settings_button)

        self.state_indicator = ConnectionIndicator()
        self.latency_label = QLabel(latency_text(None))
        self.start_button = QPushButton("Start")
        self.start_button.setToolTip("Connect the familiar to Discord")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Disconnect from Discord")
        self.start_button.clicked.connect(self._on_start_clicked)
        self.stop_button.clicked.connect(self._on_stop_clicked)
        status_row = QHBoxLayout()
        status_row.setSpacing(SPACE_L)
        status_row.addWidget(self.state_indicator)
        status_row.addWidget(self.latency_label)
        status_row.addStretch(1)
        status_row.addWidget(self.start_button)
        status_row.addWidget(self.stop_button)

        self.guilds_view = RecordTableView(
            GUILDS_PLACEHOLDER_STOPPED,
            self.guilds_model,
            grid=False,
            wrap=True,
            row_height=24,
            stretch=guilds_model.NAME,
            left_headers=True,
        )
        guild_header = self.guilds_view.horizontalHeader()
        guild_header.setSectionResizeMode(guilds_model.ID, QHeaderView.ResizeMode.ResizeToContents)
        guild_header.setSectionResizeMode(guilds_model.MEMBERS, QHeaderView.ResizeMode.ResizeToContents)
        self.guilds_heading = section_label("Servers")

        self.activity_view = RecordTableView(
            ACTIVITY_PLACEHOLDER, self.activity_model, grid=False, row_height=24, stretch="last", left_headers=True
        )
        self.activity_view.setColumnWidth(activity_model.TIME, 80)
        self.activity_view.setColumnWidth(activity_model.KIND, 80)
        self.activity_view.setColumnWidth(activity_model.WHERE, 200)
        # A reply in the log opens what went into it (double-click, Enter, or its context menu).
        self.activity_view.activated.connect(self._on_activity_view_activated)
        self.activity_view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.activity_view.customContextMenuRequested.connect(self._on_activity_context_menu)
        self._stick_to_bottom = True
        self.activity_model.rowsAboutToBeInserted.connect(self._on_activity_rows_about_to_be_inserted)
        self.activity_model.rowsInserted.connect(self._on_activity_rows_inserted)

        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(_section(self.guilds_heading, self.guilds_view))
        splitter.addWidget(_section(section_label("Recent activity"), self.activity_view))
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 3)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(SPACE_M)
        # While the disk is full: what waits and where to free space; cleared once writes land again.
        self.disk_banner = ErrorBanner()
        layout.addWidget(self.disk_banner)
        # What is wrong with lorebook.toml, apart from the last failure: a fixed file clears it.
        self.lore_banner = ErrorBanner()
        layout.addWidget(self.lore_banner)
        layout.addWidget(self.setup_hint)
        layout.addLayout(status_row)
        layout.addWidget(splitter, 1)
        self.set_body(body)

        bridge = context.bridge
        bridge.connection_changed.connect(self._on_bridge_connection_changed)
        bridge.guilds_changed.connect(self._on_bridge_guilds_changed)
        bridge.latency_measured.connect(self._on_bridge_latency_measured)
        bridge.activity.connect(self._on_bridge_activity)
        bridge.failure.connect(self._on_bridge_failure)
        bridge.lorebook_status.connect(self._on_bridge_lorebook_status)
        bridge.disk_full.connect(self._on_bridge_disk_full)

        self.refresh_status()

    @property
    def connection_state(self) -> ConnectionState:
        return self._connection

    async def load(self) -> bool:
        self.refresh_status()
        return True

    def refresh_status(self) -> None:
        """Re-read the facade's status snapshot (no I/O), e.g. after the settings were saved."""
        status = self.facade.get_status()
        self.setup_hint.setVisible(not status.configured)
        self.setup_hint_label.setText(setup_hint_text(status.missing))
        self._set_guilds(status.guilds)
        self.latency_label.setText(latency_text(status.latency_ms))
        if status.last_error:
            self._show_failure(status.last_error)
        elif self._reported is not None and self.error_banner.text() == single_line(self._reported):
            self.error_banner.clear_message()  # the runtime withdrew it: what it lacked is set now
            self._reported = None
        if status.lore_problem:
            self.lore_banner.show_message(single_line(status.lore_problem))
        self._show_disk_full(status.disk_full)
        self._set_state(status.state, status.state_detail)

    def _set_state(self, state: ConnectionState, detail: str = "") -> None:
        self._connection = state
        self.state_indicator.set_state(state, detail)
        self.guilds_view.set_placeholder(
            GUILDS_PLACEHOLDER_CONNECTED if state is ConnectionState.CONNECTED else GUILDS_PLACEHOLDER_STOPPED
        )
        if state is not ConnectionState.CONNECTED:
            self.latency_label.setText(latency_text(None))
        self._update_buttons()

    def _set_guilds(self, guilds: tuple[GuildInfo, ...]) -> None:
        self.guilds_model.set_guilds(guilds)
        self.guilds_heading.setText(f"Servers ({len(guilds)})")

    def _update_buttons(self) -> None:
        running = self._connection in RUNNING_STATES
        self.start_button.setEnabled(not self.ops.busy and not running)
        self.stop_button.setEnabled(not self.ops.is_running("stop") and running)

    @async_slot()
    async def _on_start_clicked(self) -> None:
        await self.ops.run("start", self.facade.start, clear=not self.ops.busy)
        self._show_status_state()

    @async_slot()
    async def _on_stop_clicked(self) -> None:
        await self.ops.run("stop", self.facade.stop, clear=False)
        self._show_status_state()

    def _show_status_state(self) -> None:
        status = self.facade.get_status()
        self._set_state(status.state, status.state_detail)

    def _on_bridge_connection_changed(self, event: ConnectionChanged) -> None:
        self._set_state(event.state, event.detail)

    def _on_bridge_guilds_changed(self, guilds: tuple[GuildInfo, ...]) -> None:
        self._set_guilds(guilds)

    def _on_bridge_latency_measured(self, milliseconds: float) -> None:
        self.latency_label.setText(latency_text(milliseconds))

    def _on_bridge_activity(self, record: Activity) -> None:
        self.activity_model.append(record)

    def explain_activity(self, row: int) -> bool:
        """Open the "Why did it say that" pane on the reply logged at `row`; False for other kinds of line."""
        record = self.activity_model.record(row)
        if record.kind is not ActivityKind.REPLY_OUT:
            return False
        # That reply's explanation; a line without its turn (not stored) opens its place's newest reply.
        self.navigate_requested.emit("explain", record.turn_id if record.turn_id is not None else record.place)
        return True

    def _on_activity_view_activated(self, index: QModelIndex) -> None:
        self.explain_activity(index.row())

    def _on_activity_context_menu(self, position: QPoint) -> None:
        index = self.activity_view.indexAt(position)
        if not index.isValid() or self.activity_model.record(index.row()).kind is not ActivityKind.REPLY_OUT:
            return
        menu = QMenu(self)
        row = index.row()
        menu.addAction("Why did it say that?").triggered.connect(lambda: self.explain_activity(row))
        menu.popup(self.activity_view.viewport().mapToGlobal(position))

    def _on_bridge_failure(self, message: str) -> None:
        self._show_failure(message)

    def _show_failure(self, message: str) -> None:
        self._reported = message
        self.error_banner.show_message(single_line(message))

    def _show_disk_full(self, banner: str | None) -> None:
        if banner:
            self.disk_banner.show_message(single_line(banner))
        else:
            self.disk_banner.clear_message()

    def _on_bridge_disk_full(self, event: DiskFullChanged) -> None:
        self._show_disk_full(event.banner)

    def _on_bridge_lorebook_status(self, status: LorebookStatus) -> None:
        if status.banner:
            self.lore_banner.show_message(single_line(status.banner))
        else:
            self.lore_banner.clear_message()

    def _on_activity_rows_about_to_be_inserted(self) -> None:
        scroll_bar = self.activity_view.verticalScrollBar()
        self._stick_to_bottom = scroll_bar.value() >= scroll_bar.maximum()

    def _on_activity_rows_inserted(self) -> None:
        if self._stick_to_bottom:
            self.activity_view.scrollToBottom()


def _section(heading: QLabel, view: RecordTableView) -> QWidget:
    """A heading over a table, as one splitter child."""
    section = QWidget()
    layout = QVBoxLayout(section)
    layout.setContentsMargins(0, SPACE_XS, 0, SPACE_XS)
    layout.setSpacing(SPACE_XS)
    layout.addWidget(heading)
    layout.addWidget(view, 1)
    return section
