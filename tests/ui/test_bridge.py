"""RuntimeBridge: runtime events become typed Qt signals; closing unsubscribes."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from app.runtime.events import (
    Activity,
    ActivityKind,
    ConnectionChanged,
    ConnectionState,
    FailureReported,
    GuildInfo,
    GuildsChanged,
    LatencyMeasured,
)
from app.ui.bridge import RuntimeBridge
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT

pytestmark = QT_STRICT


def test_each_event_becomes_its_signal(qtbot: QtBot, facade: FakeFacade) -> None:
    bridge = RuntimeBridge(facade)
    changed = ConnectionChanged(ConnectionState.CONNECTED, "ready")
    guilds = (GuildInfo(1, "Lantern Club", 12),)
    line = Activity(ActivityKind.MESSAGE_IN, "guild:1/2", "alice: hi")

    with qtbot.waitSignal(bridge.connection_changed, timeout=1_000) as blocker:
        facade.publish(changed)
    assert blocker.args == [changed]
    with qtbot.waitSignal(bridge.guilds_changed, timeout=1_000) as blocker:
        facade.publish(GuildsChanged(guilds))
    assert blocker.args == [guilds]
    with qtbot.waitSignal(bridge.latency_measured, timeout=1_000) as blocker:
        facade.publish(LatencyMeasured(41.5))
    assert blocker.args == [41.5]
    with qtbot.waitSignal(bridge.activity, timeout=1_000) as blocker:
        facade.publish(line)
    assert blocker.args == [line]
    with qtbot.waitSignal(bridge.failure, timeout=1_000) as blocker:
        facade.publish(FailureReported("The LLM endpoint is unreachable."))
    assert blocker.args == ["The LLM endpoint is unreachable."]


def test_close_unsubscribes_once(qtbot: QtBot, facade: FakeFacade) -> None:
    bridge = RuntimeBridge(facade)
    assert facade.subscriber_count == 1

    bridge.close()
    bridge.close()

    assert facade.subscriber_count == 0
    assert not bridge.is_subscribed
    assert facade.call_names().count("unsubscribe") == 1
    with qtbot.assertNotEmitted(bridge.latency_measured, wait=50):
        facade.publish(LatencyMeasured(1.0))
