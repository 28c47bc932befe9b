"""Runtime events -> typed Qt signals. Every event type has a handler: the match ends in
`assert_never`, so a new event without one fails the type check.

The runtime calls subscribers on the event loop's thread, which under qasync is the GUI thread, so
the bridge re-emits directly, except where events can burst: index health is passed on at most
every `THROTTLE_MS` per index (the latest report wins), and memory changes are coalesced over the
same interval (the kinds united; the initiator kept only if every change in the batch had it).
Signals:

- `connection_changed(ConnectionChanged)`: the whole event (state and detail);
- `guilds_changed(tuple[GuildInfo, ...])`: the full list of guilds, replacing the previous one;
- `latency_measured(float)`: gateway latency in milliseconds;
- `activity(Activity)`: one line for the activity log;
- `failure(str)`: a one-line failure message;
- `index_health(IndexHealthReport)`: one index's commit health (throttled);
- `memory_changed(MemoryChanged)`: what changed in memory and who initiated it (coalesced);
- `lorebook_status(LorebookStatus)`: lorebook.toml read again: what is wrong with it, or that it reads;
- `settings_reloaded(SettingsReloaded)`: the settings were saved and are in force (the name it goes by...).
- `disk_full(DiskFullChanged)`: the disk holding the familiar's files is full (and what waits), or has room again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import assert_never

from PySide6.QtCore import QObject, QTimer, Signal
from shiboken6 import isValid

from app.runtime.api.facade import FamiliarFacade
from app.runtime.events import (
    Activity,
    ConnectionChanged,
    DiskFullChanged,
    FailureReported,
    GuildsChanged,
    IndexHealthReport,
    LatencyMeasured,
    LorebookStatus,
    MemoryChanged,
    RuntimeEvent,
    SettingsReloaded,
)

_log = logging.getLogger(__name__)

THROTTLE_MS = 200
_NOBODY = object()  # "no batch yet" for the initiator


class RuntimeBridge(QObject):
    connection_changed = Signal(object)
    guilds_changed = Signal(object)
    latency_measured = Signal(float)
    activity = Signal(object)
    failure = Signal(str)
    index_health = Signal(object)
    memory_changed = Signal(object)
    lorebook_status = Signal(object)
    settings_reloaded = Signal(object)
    disk_full = Signal(object)

    def __init__(
        self, facade: FamiliarFacade, parent: QObject | None = None, *, throttle_ms: int = THROTTLE_MS
    ) -> None:
        super().__init__(parent)
        self._health: dict[str, IndexHealthReport] = {}
        self._health_timer = _quiet_timer(self, throttle_ms, self._flush_health)
        self._changes: MemoryChanged | None = None
        self._change_initiator: object = _NOBODY
        self._changes_timer = _quiet_timer(self, throttle_ms, self._flush_changes)
        unsubscribe = facade.subscribe(self._on_runtime_event)
        self._unsubscribe: Callable[[], None] | None = unsubscribe
        # Deleted with its parent without close(): stop the runtime calling into a dead object.
        self.destroyed.connect(lambda _obj=None: unsubscribe())

    @property
    def is_subscribed(self) -> bool:
        return self._unsubscribe is not None

    def close(self) -> None:
        """Stop listening to the runtime. Safe to call more than once."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if isValid(self):  # the window may already be gone (deleted with its parent)
            self._health_timer.stop()
            self._changes_timer.stop()
        if unsubscribe is not None:
            unsubscribe()

    def _on_runtime_event(self, event: RuntimeEvent) -> None:
        if self._unsubscribe is None:
            return  # an event already queued when we unsubscribed
        match event:
            case ConnectionChanged():
                self.connection_changed.emit(event)
            case GuildsChanged(guilds=guilds):
                self.guilds_changed.emit(guilds)
            case LatencyMeasured(milliseconds=milliseconds):
                self.latency_measured.emit(milliseconds)
            case Activity():
                self.activity.emit(event)
            case FailureReported(message=message):
                self.failure.emit(message)
            case IndexHealthReport():
                self._on_index_health(event)
            case MemoryChanged():
                self._on_memory_changed(event)
            case LorebookStatus():
                self.lorebook_status.emit(event)
            case SettingsReloaded():
                self.settings_reloaded.emit(event)
            case DiskFullChanged():
                self.disk_full.emit(event)
            case _:
                assert_never(event)

    # -- throttled events: the first goes out at once, what follows within the interval after it ----------
    def _on_index_health(self, report: IndexHealthReport) -> None:
        if not self._health_timer.isActive():
            self.index_health.emit(report)
            self._health_timer.start()
            return
        self._health[report.name] = report  # the latest per index wins

    def _flush_health(self) -> None:
        pending, self._health = self._health, {}
        for report in pending.values():
            self.index_health.emit(report)
        if pending:
            self._health_timer.start()

    def _on_memory_changed(self, change: MemoryChanged) -> None:
        if not self._changes_timer.isActive():
            self.memory_changed.emit(change)
            self._changes_timer.start()
            return
        if self._changes is None:
            self._changes, self._change_initiator = change, change.initiator
            return
        same = self._change_initiator is change.initiator
        self._change_initiator = change.initiator if same else None
        self._changes = MemoryChanged(
            kinds=self._changes.kinds | change.kinds, initiator=self._change_initiator, at=change.at
        )

    def _flush_changes(self) -> None:
        batch, self._changes, self._change_initiator = self._changes, None, _NOBODY
        if batch is not None:
            self.memory_changed.emit(batch)
            self._changes_timer.start()


def _quiet_timer(parent: QObject, interval_ms: int, slot: Callable[[], None]) -> QTimer:
    timer = QTimer(parent)
    timer.setSingleShot(True)
    timer.setInterval(interval_ms)
    timer.timeout.connect(slot)
    return timer
