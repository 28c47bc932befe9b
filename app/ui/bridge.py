"""Runtime events -> typed Qt signals.

The runtime calls subscribers on the event loop's thread, which under qasync is the GUI thread, so the bridge
re-emits directly. Signals:

- `connection_changed(ConnectionChanged)`: the whole event (state and detail);
- `guilds_changed(tuple[GuildInfo, ...])`: the full list of guilds, replacing the previous one;
- `latency_measured(float)`: gateway latency in milliseconds;
- `activity(Activity)`: one line for the activity log;
- `failure(str)`: a one-line failure message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from app.runtime.events import (
    Activity,
    ConnectionChanged,
    FailureReported,
    GuildsChanged,
    LatencyMeasured,
    RuntimeEvent,
)
from app.runtime.facade import FamiliarFacade

_log = logging.getLogger(__name__)


class RuntimeBridge(QObject):
    connection_changed = Signal(object)
    guilds_changed = Signal(object)
    latency_measured = Signal(float)
    activity = Signal(object)
    failure = Signal(str)

    def __init__(self, facade: FamiliarFacade, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._unsubscribe: Callable[[], None] | None = facade.subscribe(self._on_runtime_event)

    @property
    def is_subscribed(self) -> bool:
        return self._unsubscribe is not None

    def close(self) -> None:
        """Stop listening to the runtime. Safe to call more than once."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
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
