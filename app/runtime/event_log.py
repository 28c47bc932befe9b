"""The familiar's events as log lines, the same for the window and headless mode (the `familiar` logger).

What someone wrote (a message, a reply, an edit) goes in as app.config.logs.Private: the log file gets its
message id and length, the headless console the text (escaped). A failure carries its text as `said`, so the
headless console shows it once although the connection state, the activity log and the failure event may
all repeat it. While `starting`, failures are not shown on the console at all: the command prints the one
that stops it as its error line (they still reach the log file).
"""

from __future__ import annotations

import logging

from app.config.logs import Private
from app.runtime.events import (
    Activity,
    ActivityKind,
    ConnectionChanged,
    ConnectionState,
    DiskFullChanged,
    FailureReported,
    GuildsChanged,
    LorebookStatus,
    RuntimeEvent,
)

_log = logging.getLogger("familiar")

# The activity kinds whose summary is what someone wrote, and how the log file names it.
_WRITTEN = {ActivityKind.MESSAGE_IN: "message", ActivityKind.REPLY_OUT: "reply to", ActivityKind.EDIT: "edit of"}


class EventLog:
    """Subscribe an instance to the familiar (`familiar.subscribe(event_log)`)."""

    def __init__(self, *, starting: bool = False) -> None:
        self.starting = starting
        self._disk_full = False  # a full disk is said when it starts and when it ends, not at each count

    def __call__(self, event: RuntimeEvent) -> None:
        console = not self.starting
        if isinstance(event, ConnectionChanged):
            if event.state is ConnectionState.FAILED:
                _log.info("connection: failed: %s", event.detail, extra={"said": event.detail, "console": console})
            else:
                _log.info("connection: %s %s", event.state.value, event.detail)
        elif isinstance(event, GuildsChanged):
            _log.info("guilds: %s", ", ".join(g.name for g in event.guilds) or "none")
        elif isinstance(event, Activity):
            if event.kind in _WRITTEN:
                text = Private(event.summary, _WRITTEN[event.kind], event.message_id)
                _log.info("%s %s %s", event.kind.value, event.where, text)
            elif event.kind is ActivityKind.ERROR:
                _log.error("in %s: %s", event.where, event.summary, extra={"said": event.summary, "console": console})
            else:
                _log.info("%s %s %s", event.kind.value, event.where, event.summary)
        elif isinstance(event, FailureReported):
            _log.error("%s", event.message, extra={"said": event.message, "console": console})
        elif isinstance(event, DiskFullChanged):
            if event.full and not self._disk_full:
                _log.error("disk full: %s", event.summary, extra={"said": event.banner, "console": console})
            elif not event.full and self._disk_full:
                _log.warning("disk full no more: %s takes writes again", event.folder)
            self._disk_full = event.full
        elif isinstance(event, LorebookStatus):  # lorebook.toml broken (the last good book in use) or read again
            if event.problem is not None:
                _log.warning("%s", event.banner)
            else:
                for warning in event.warnings:
                    _log.warning("%s", warning)
                if not event.warnings:
                    _log.info("%s reads again: it is the lorebook in use", event.file)
