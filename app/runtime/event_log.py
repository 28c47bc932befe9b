"""The familiar's events as log lines, the same for the window and headless mode (the `familiar` logger).

What someone wrote (a message, a reply, an edit) goes in as app.config.logs.Private: the log file gets its
message id and length, the headless console the text (escaped). A failure carries its text as `said`, so the
headless console shows it once although the connection state, the activity log and the failure event may
all repeat it. While `starting`, failures are not shown on the console at all: the command prints the one
that stops it as its error line (they still reach the log file).

A full disk is said once when it starts, then as the count of messages waiting for room changes (at most
every COUNT_EVERY seconds, the latest count last), and once when it ends; each message it kept out is a
line of the file only, not one more error line on the console.
"""

from __future__ import annotations

import asyncio
import logging
import time

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
COUNT_EVERY = 5.0  # seconds: while the disk is full, how often at most the count of waiting messages is said

# The activity kinds whose summary is what someone wrote, and how the log file names it.
_WRITTEN = {ActivityKind.MESSAGE_IN: "message", ActivityKind.REPLY_OUT: "reply to", ActivityKind.EDIT: "edit of"}


class EventLog:
    """Subscribe an instance to the familiar (`familiar.subscribe(event_log)`)."""

    def __init__(self, *, starting: bool = False, count_every: float = COUNT_EVERY) -> None:
        self.starting = starting
        self._disk_full = False  # a full disk is said when it starts and when it ends, its count in between
        self._count_every = count_every
        self._counted: tuple[int, int] = (0, 0)  # (messages, places) the console was last told wait
        self._counted_at = 0.0
        self._latest: DiskFullChanged | None = None
        self._count_timer: asyncio.TimerHandle | None = None

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
                shown = console and not event.disk_full  # the full disk's count says it (below)
                _log.error("in %s: %s", event.where, event.summary, extra={"said": event.summary, "console": shown})
            else:
                _log.info("%s %s %s", event.kind.value, event.where, event.summary)
        elif isinstance(event, FailureReported):
            _log.error("%s", event.message, extra={"said": event.message, "console": console})
        elif isinstance(event, DiskFullChanged):
            if event.full and not self._disk_full:
                _log.error("disk full: %s", event.summary, extra={"said": event.banner, "console": console})
                self._counted, self._counted_at = (event.waiting, event.places), time.monotonic()
            elif event.full:
                self._latest = event
                self._count_soon()
            elif self._disk_full:
                self._stop_counting()
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

    # -- the count of messages a full disk keeps waiting ---------------------------------------------
    def _count_soon(self) -> None:
        """Say the latest count now, or once COUNT_EVERY has passed since the last (one timer at a time)."""
        if self._count_timer is not None:
            return  # it says the latest when it fires
        wait = self._counted_at + self._count_every - time.monotonic()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): say it now
            wait = 0.0
        if wait <= 0:
            self._say_count()
        else:
            self._count_timer = loop.call_later(wait, self._say_count)

    def _say_count(self) -> None:
        self._count_timer = None
        event = self._latest
        if event is None or not self._disk_full or not event.full:
            return
        counted = (event.waiting, event.places)
        if counted == self._counted:
            return
        self._counted, self._counted_at = counted, time.monotonic()
        if event.waiting:
            count = "1 message" if event.waiting == 1 else f"{event.waiting} messages"
            where = "1 channel" if event.places == 1 else f"{event.places} channels"
            said = f"{count} in {where} wait for room (fetched from Discord and stored once there is room)"
        else:
            said = "no message waits for room any more"
        _log.warning("disk full: %s", said, extra={"console": not self.starting})

    def _stop_counting(self) -> None:
        if self._count_timer is not None:
            self._count_timer.cancel()
            self._count_timer = None
        self._latest = None
        self._counted = (0, 0)
