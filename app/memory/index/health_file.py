"""The cross-process health file: the process that writes an index shares its health with those that only
read it (`familiar index status` beside the window) through a small JSON file.

It lives beside history.db, not in the index folder: a locked or read-only index folder (the antivirus race)
is exactly when a reader must learn "locked, retrying (attempt N)". A write of it that fails (a scanner
holding the file) is tried again at the committer's next turn, and a reader does not take a file its writer
left as "closed" for the state of an index another process holds now (`IndexFigures.status`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from app.memory.index import COMMITTER_LOG
from app.memory.records import IndexHealth, IndexState

_log = logging.getLogger(COMMITTER_LOG)

THROTTLE_SECONDS = 0.5
"""At most one write in this long, but for a change of state and a retry in progress (their attempt shows)."""
_HEALTH_TIMES = ("last_commit_at", "backlog_since", "recovered_at")


def health_json(health: IndexHealth) -> dict[str, Any]:
    """IndexHealth as the shared health file holds it (times as ISO-8601)."""
    data: dict[str, Any] = {k: getattr(health, k) for k in health.__slots__}
    for key in _HEALTH_TIMES:
        moment = data[key]
        data[key] = moment.isoformat() if moment is not None else None
    return data


def health_from_json(data: dict[str, Any]) -> IndexHealth:
    """The inverse of `health_json`; a file from an older version lacks the newer keys (defaults)."""
    for key in _HEALTH_TIMES:
        if data.get(key) is not None:
            data[key] = datetime.fromisoformat(str(data[key]))
    if "state" in data:
        data["state"] = IndexState(data["state"])  # ValueError: a state this version does not know
    return IndexHealth(**data)


class HealthFile:
    """One index's shared health file: written (throttled) by the process that writes the index, read by the others."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.unwritten = False  # a change the throttle or a refused write kept out of the file, written when idle
        self._written = 0.0
        self._clock = clock

    def share(self, health: Callable[[], IndexHealth], *, force: bool = False, retrying: bool = False) -> None:
        """Write `health()` with this process's id; within THROTTLE_SECONDS of the last write only when
        `force`d (a change of state) or `retrying` (a commit's live attempt), else it waits for `unwritten`."""
        now = self._clock()
        if not force and now - self._written < THROTTLE_SECONDS and not retrying:
            self.unwritten = True
            return
        data = health_json(health())
        data["pid"] = os.getpid()
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(data), encoding="utf-8")
            tmp.replace(self.path)
        except OSError as exc:  # a locked file must not stop indexing: the loop's next turn writes it again
            self.unwritten = True
            _log.debug("could not write %s: %s", self.path, exc)
            return
        self._written = now
        self.unwritten = False

    def read(self) -> IndexHealth | None:
        """The health the writing process last shared (None: no file, or not one this version reads)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            data.pop("pid", None)
            return health_from_json(data)
        except (OSError, ValueError, TypeError, AttributeError):
            return None
