"""Dashboard: start / stop through the facade, state from events, errors in the banner."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from app.runtime.events import ActivityKind, ConnectionState, FailureReported, GuildInfo, LatencyMeasured
from app.ui.models.roles import RecordRole
from app.ui.panes.dashboard import (
    ACTIVITY_PLACEHOLDER,
    GUILDS_PLACEHOLDER_CONNECTED,
    GUILDS_PLACEHOLDER_STOPPED,
    DashboardPane,
)
from app.ui.theme import STATE_COLOURS
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, make_context, settle

pytestmark = QT_STRICT

GUILDS = (GuildInfo(101, "Lantern Club", 1_234), GuildInfo(202, "Moth Society", 7))
TOKEN_ERROR = "Discord rejected the bot token. Reset it in the developer portal and paste it in Settings."


def make_pane(qtbot: QtBot, facade: FakeFacade) -> DashboardPane:
    pane = DashboardPane(make_context(qtbot, facade))
    qtbot.addWidget(pane)
    pane.show()
    return pane


def click(qtbot: QtBot, pane: DashboardPane, which: str) -> None:
    button = pane.start_button if which == "start" else pane.stop_button
    assert button.isEnabled(), f"{which} should be enabled"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_initially_stopped_with_start_enabled(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make_pane(qtbot, facade)

    assert pane.state_indicator.text() == "Stopped"
    assert pane.state_indicator.dot_colour() == STATE_COLOURS[ConnectionState.STOPPED]
    assert pane.start_button.isEnabled()
    assert not pane.stop_button.isEnabled()
    assert pane.error_banner.isHidden()
    assert pane.setup_hint.isHidden()
    assert pane.latency_label.text() == "Latency: —"


def test_start_connects_and_events_fill_the_tables(qtbot: QtBot) -> None:
    facade = FakeFacade(guilds_on_start=GUILDS, latency_on_start=42.0)
    pane = make_pane(qtbot, facade)

    click(qtbot, pane, "start")
    qtbot.waitUntil(lambda: pane.state_indicator.text() == "Connected", timeout=WAIT_MS)

    assert facade.call_names().count("start") == 1
    assert pane.state_indicator.dot_colour() == STATE_COLOURS[ConnectionState.CONNECTED]
    qtbot.waitUntil(lambda: not pane.start_button.isEnabled() and pane.stop_button.isEnabled(), timeout=WAIT_MS)
    assert pane.guilds_model.guilds == GUILDS
    assert pane.guilds_heading.text() == "Servers (2)"
    assert pane.latency_label.text() == "Latency: 42 ms"

    facade.publish_activity(ActivityKind.MESSAGE_IN, "guild:101/501", "alice: hello familiar")
    facade.publish_activity(ActivityKind.REPLY_OUT, "guild:101/501", "Wisp: hello alice")
    facade.publish(LatencyMeasured(37.4))

    assert pane.activity_model.rowCount() == 2
    assert pane.activity_model.index(1, 3).data(RecordRole).summary == "Wisp: hello alice"
    assert pane.latency_label.text() == "Latency: 37 ms"


def test_start_is_disabled_while_connecting(qtbot: QtBot) -> None:
    facade = FakeFacade()
    facade.gate = asyncio.Event()
    pane = make_pane(qtbot, facade)

    click(qtbot, pane, "start")
    qtbot.waitUntil(lambda: pane.state_indicator.text() == "Connecting…", timeout=WAIT_MS)

    assert pane.state_indicator.dot_colour() == STATE_COLOURS[ConnectionState.CONNECTING]
    assert not pane.start_button.isEnabled()
    assert pane.stop_button.isEnabled()

    facade.gate.set()
    qtbot.waitUntil(lambda: pane.connection_state is ConnectionState.CONNECTED, timeout=WAIT_MS)


def test_start_failure_shows_one_line_and_reenables_start(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.start_error = TOKEN_ERROR
    pane = make_pane(qtbot, facade)

    click(qtbot, pane, "start")
    settle(qtbot)

    assert pane.start_button.isEnabled()
    assert pane.error_banner.text() == TOKEN_ERROR
    assert not pane.error_banner.isHidden()
    assert pane.state_indicator.text() == "Failed"
    assert pane.state_indicator.dot_colour() == STATE_COLOURS[ConnectionState.FAILED]
    assert not pane.stop_button.isEnabled()

    facade.start_error = None  # a second attempt clears the banner and connects
    click(qtbot, pane, "start")
    qtbot.waitUntil(lambda: pane.connection_state is ConnectionState.CONNECTED, timeout=WAIT_MS)
    assert pane.error_banner.isHidden()


def test_a_multi_line_error_is_shown_on_one_line(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.start_error = "first line\n  second line"
    pane = make_pane(qtbot, facade)

    click(qtbot, pane, "start")
    settle(qtbot)

    assert pane.error_banner.text() == "first line second line"
    assert pane.start_button.isEnabled()


def test_stop_disconnects(qtbot: QtBot) -> None:
    facade = FakeFacade(guilds_on_start=GUILDS)
    pane = make_pane(qtbot, facade)
    click(qtbot, pane, "start")
    qtbot.waitUntil(lambda: pane.stop_button.isEnabled(), timeout=WAIT_MS)

    click(qtbot, pane, "stop")
    settle(qtbot)

    assert facade.call_names().count("stop") == 1
    assert pane.state_indicator.text() == "Stopped"
    assert pane.guilds_model.rowCount() == 0
    assert pane.latency_label.text() == "Latency: —"
    assert not pane.stop_button.isEnabled()


def test_stop_failure_shows_in_banner(qtbot: QtBot) -> None:
    facade = FakeFacade()
    pane = make_pane(qtbot, facade)
    click(qtbot, pane, "start")
    qtbot.waitUntil(lambda: pane.stop_button.isEnabled(), timeout=WAIT_MS)
    facade.stop_error = "Could not close the gateway cleanly."

    click(qtbot, pane, "stop")
    qtbot.waitUntil(lambda: not pane.error_banner.isHidden(), timeout=WAIT_MS)

    assert pane.error_banner.text() == "Could not close the gateway cleanly."
    qtbot.waitUntil(lambda: pane.stop_button.isEnabled(), timeout=WAIT_MS)


def test_failure_events_show_in_banner(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make_pane(qtbot, facade)

    facade.publish(FailureReported("The LLM endpoint is unreachable: connection refused."))

    assert pane.error_banner.text() == "The LLM endpoint is unreachable: connection refused."
    assert not pane.error_banner.isHidden()


def test_last_error_from_status_is_shown_at_start_up(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.publish(FailureReported("Missing the message content intent."))

    pane = make_pane(qtbot, facade)

    assert pane.error_banner.text() == "Missing the message content intent."


def test_not_configured_shows_a_hint_with_a_settings_button(qtbot: QtBot) -> None:
    facade = FakeFacade(configured=False, missing=("bot token", "LLM endpoint"))
    pane = make_pane(qtbot, facade)

    assert not pane.setup_hint.isHidden()
    assert pane.setup_hint_label.text() == "Not set up yet: missing bot token, LLM endpoint. Open Settings."
    with qtbot.waitSignal(pane.settings_requested, timeout=1_000):
        qtbot.mouseClick(pane.open_settings_button, Qt.MouseButton.LeftButton)

    facade.status = replace(facade.status, configured=True, missing=())
    pane.refresh_status()
    assert pane.setup_hint.isHidden()


def test_activity_log_keeps_the_newest_rows_in_view(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make_pane(qtbot, facade)
    pane.resize(800, 500)

    for number in range(200):
        facade.publish_activity(ActivityKind.INFO, "local", f"event {number}")

    bar = pane.activity_view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum(), timeout=WAIT_MS)


def test_a_double_click_starts_once(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make_pane(qtbot, facade)

    qtbot.mouseClick(pane.start_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(pane.start_button, Qt.MouseButton.LeftButton)
    settle(qtbot)

    assert facade.call_names().count("start") == 1
    assert pane.connection_state is ConnectionState.CONNECTED


def test_empty_tables_explain_themselves(qtbot: QtBot) -> None:
    facade = FakeFacade(guilds_on_start=())
    pane = make_pane(qtbot, facade)
    assert pane.guilds_view.placeholder() == GUILDS_PLACEHOLDER_STOPPED
    assert pane.activity_view.placeholder() == ACTIVITY_PLACEHOLDER

    click(qtbot, pane, "start")
    settle(qtbot)

    assert pane.guilds_view.placeholder() == GUILDS_PLACEHOLDER_CONNECTED
