"""Runtime events to their listeners: the window's bridge, the CLI, and the familiar's own parts.

One broken listener never silences the others (it is logged). The last failure and the last connection
state published are kept for the status snapshot, so a window opened after them still shows them, and a
status read says what every listener was told (the status bar and the Dashboard agree).

A failure's text reaches every listener without credentials: a web address in it loses its
user:password (app.config.redaction), whatever raised it."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable

from app.config.redaction import redact_urls
from app.runtime.events import (
    Activity,
    ActivityKind,
    ConnectionChanged,
    ConnectionState,
    FailureReported,
    RuntimeEvent,
)

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
        event = _redacted(event)
        if isinstance(event, FailureReported):
            self.last_error = event.message
        elif isinstance(event, ConnectionChanged):
            self.connection = event
        for callback in list(self._listeners):
            try:
                callback(event)
            except Exception:  # noqa: BLE001 - one broken listener must not silence the others
                _log.exception("event listener failed")


def _redacted(event: RuntimeEvent) -> RuntimeEvent:
    """The event with the failure text it carries redacted (what someone wrote is left as it is)."""
    if isinstance(event, FailureReported) and (clean := redact_urls(event.message)) != event.message:
        return dataclasses.replace(event, message=clean)
    if isinstance(event, ConnectionChanged) and (clean := redact_urls(event.detail)) != event.detail:
        return dataclasses.replace(event, detail=clean)
    if isinstance(event, Activity) and event.kind is ActivityKind.ERROR:
        clean = redact_urls(event.summary)
        return event if clean == event.summary else dataclasses.replace(event, summary=clean)
    return event
