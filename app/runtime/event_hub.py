"""Runtime events to their listeners: the window's bridge, the CLI, and the familiar's own parts.

One broken listener never silences the others (it is logged). The last failure and the last connection
state published are kept for the status snapshot, so a window opened after them still shows them, and a
status read says what every listener was told (the status bar and the Dashboard agree)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from app.runtime.events import ConnectionChanged, ConnectionState, FailureReported, RuntimeEvent

_log = logging.getLogger(__name__)

Listener = Callable[[RuntimeEvent], None]


class EventHub:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self.last_error: str | None = None
        self.connection = ConnectionChanged(state=ConnectionState.STOPPED)  # the last one published

    def subscribe(self, callback: Listener) -> Callable[[], None]:
        """Call `callback` (on the event loop's thread) for every event; returns an unsubscribe."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return unsubscribe

    def withdraw_error(self, message: str) -> bool:
        """The failure `message` no longer holds (what it lacked is there now): no longer the last error."""
        if self.last_error != message:
            return False
        self.last_error = None
        return True

    def publish(self, event: RuntimeEvent) -> None:
        if isinstance(event, FailureReported):
            self.last_error = event.message
        elif isinstance(event, ConnectionChanged):
            self.connection = event
        for callback in list(self._listeners):
            try:
                callback(event)
            except Exception:  # noqa: BLE001 - one broken listener must not silence the others
                _log.exception("event listener failed")
