"""RuntimeBridge: runtime events become typed Qt signals; closing unsubscribes."""

from __future__ import annotations

from typing import get_args

from pytestqt.qtbot import QtBot

from app.runtime.events import (
    Activity,
    ActivityKind,
    ChangeKind,
    ConnectionChanged,
    ConnectionState,
    DiskFullChanged,
    FailureReported,
    GuildInfo,
    GuildsChanged,
    IndexHealthReport,
    LatencyMeasured,
    LorebookStatus,
    MemoryChanged,
    RuntimeEvent,
    SettingsReloaded,
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
    status = LorebookStatus("lorebook.toml", None)
    with qtbot.waitSignal(bridge.lorebook_status, timeout=1_000) as blocker:
        facade.publish(status)
    assert blocker.args == [status]
    full = DiskFullChanged(full=True, folder="/data", detail="database or disk is full", waiting=3, places=1)
    with qtbot.waitSignal(bridge.disk_full, timeout=1_000) as blocker:
        facade.publish(full)
    assert blocker.args == [full]


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


def _health(name: str, commits: int) -> IndexHealthReport:
    return IndexHealthReport(
        name=name,
        commits=commits,
        documents_committed=commits,
        retries=0,
        live_attempt=0,
        failures=0,
        last_error=None,
        pending=0,
        lag=0,
    )


def _one_of_each() -> list[RuntimeEvent]:
    return [
        ConnectionChanged(ConnectionState.CONNECTED),
        GuildsChanged(()),
        LatencyMeasured(1.0),
        Activity(ActivityKind.INFO, "local", "hello"),
        FailureReported("oops"),
        _health("turns", 1),
        MemoryChanged(frozenset({ChangeKind.FACTS})),
        LorebookStatus("lorebook.toml", "lorebook.toml, line 3: not valid TOML", 3),
        SettingsReloaded("Moth"),
        DiskFullChanged(full=True, folder="/data", detail="database or disk is full"),
    ]


def test_every_runtime_event_type_has_a_signal(qtbot: QtBot, facade: FakeFacade) -> None:
    """The runtime check beside mypy's assert_never: one event of each type in the union, each emitted."""
    events = _one_of_each()
    assert {type(e) for e in events} == set(get_args(RuntimeEvent)), "a new event type needs an entry here"
    bridge = RuntimeBridge(facade)
    emitted: list[object] = []
    for signal in (
        bridge.connection_changed,
        bridge.guilds_changed,
        bridge.latency_measured,
        bridge.activity,
        bridge.failure,
        bridge.index_health,
        bridge.memory_changed,
        bridge.lorebook_status,
        bridge.settings_reloaded,
        bridge.disk_full,
    ):
        signal.connect(emitted.append)
    for event in events:
        facade.publish(event)
    assert len(emitted) == len(events)


def test_index_health_is_throttled_the_latest_report_per_index_wins(qtbot: QtBot, facade: FakeFacade) -> None:
    bridge = RuntimeBridge(facade, throttle_ms=100)
    seen: list[IndexHealthReport] = []
    bridge.index_health.connect(seen.append)

    facade.publish(_health("turns", 1))  # the first goes out at once
    assert [(r.name, r.commits) for r in seen] == [("turns", 1)]
    for commits in range(2, 50):  # a burst of live retries
        facade.publish(_health("turns", commits))
        facade.publish(_health("facts", commits))
    assert len(seen) == 1
    qtbot.waitUntil(lambda: len(seen) == 3, timeout=1_000)
    assert sorted((r.name, r.commits) for r in seen[1:]) == [("facts", 49), ("turns", 49)]
    with qtbot.assertNotEmitted(bridge.index_health, wait=250):
        pass  # nothing new: nothing more


def test_memory_changes_are_coalesced_keeping_the_initiator_only_when_all_share_it(
    qtbot: QtBot, facade: FakeFacade
) -> None:
    bridge = RuntimeBridge(facade, throttle_ms=100)
    seen: list[MemoryChanged] = []
    bridge.memory_changed.connect(seen.append)
    pane = object()

    facade.publish(MemoryChanged(frozenset({ChangeKind.TURNS})))
    facade.publish(MemoryChanged(frozenset({ChangeKind.FACTS}), initiator=pane))
    facade.publish(MemoryChanged(frozenset({ChangeKind.FORGETS}), initiator=pane))
    qtbot.waitUntil(lambda: len(seen) == 2, timeout=1_000)
    assert seen[0].kinds == {ChangeKind.TURNS}
    assert (seen[1].kinds, seen[1].initiator) == ({ChangeKind.FACTS, ChangeKind.FORGETS}, pane)

    qtbot.waitUntil(lambda: not bridge._changes_timer.isActive(), timeout=1_000)
    facade.publish(MemoryChanged(frozenset({ChangeKind.PAUSE}), initiator=pane))  # leading edge again
    facade.publish(MemoryChanged(frozenset({ChangeKind.FACTS}), initiator=pane))
    facade.publish(MemoryChanged(frozenset({ChangeKind.DOSSIERS})))  # someone else: the batch is not the pane's
    qtbot.waitUntil(lambda: len(seen) == 4, timeout=1_000)
    assert (seen[2].kinds, seen[2].initiator) == ({ChangeKind.PAUSE}, pane)
    assert (seen[3].kinds, seen[3].initiator) == ({ChangeKind.FACTS, ChangeKind.DOSSIERS}, None)
