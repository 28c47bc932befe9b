"""Says when new facts wait in the pending queue: "3 new facts wait for you".

It counts the queue when the familiar is live (that count is what the owner has already been told about)
and again a moment after the memory workers (or another process) last changed the facts, so a burst of
extraction is one notification. Only growth is announced; when the owner works through the queue the
count it compares against follows it down. Whether and where to show it is the window's business
(`notify` carries the text).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from app.runtime.api.facade import FamiliarFacade
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind, MemoryChanged
from app.ui.async_slot import async_slot
from app.ui.bridge import RuntimeBridge

_log = logging.getLogger(__name__)

DEBOUNCE_MS = 3_000


def waiting_text(new: int) -> str:
    return "1 new fact waits for you" if new == 1 else f"{new} new facts wait for you"


class PendingNotifier(QObject):
    notify = Signal(str)

    def __init__(
        self,
        facade: FamiliarFacade,
        bridge: RuntimeBridge,
        *,
        enabled: Callable[[], bool],
        debounce_ms: int = DEBOUNCE_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._facade = facade
        self._enabled = enabled
        self._told: int | None = None  # None until the first count
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(debounce_ms)
        self._timer.timeout.connect(self.check)
        bridge.memory_changed.connect(self._on_bridge_memory_changed)

    @property
    def told(self) -> int | None:
        """How many waiting facts the owner counts as known."""
        return self._told

    async def count(self) -> int:
        return (await self._facade.memory.pending(limit=1, with_related=False)).pending

    async def prime(self) -> None:
        """Take the queue as it is now as known (the familiar has just opened)."""
        try:
            self._told = await self.count()
        except FamiliarError as exc:
            _log.info("pending queue not counted: %s", exc)

    def _on_bridge_memory_changed(self, change: MemoryChanged) -> None:
        if ChangeKind.FACTS in change.kinds:
            self._timer.start()  # restarted by each change of a burst

    def stop(self) -> None:
        self._timer.stop()

    @async_slot()
    async def check(self) -> None:
        try:
            now = await self.count()
        except FamiliarError as exc:
            _log.info("pending queue not counted: %s", exc)
            return
        told = self._told
        self._told = now
        if told is not None and now > told and self._enabled():
            self.notify.emit(waiting_text(now - told))
