"""The memory controls' state-changing actions, each `Reversible` for the window's undo (app/ui/undo.py):
a pause switch, the lift of a tombstone, keeping a fact whose forget is still in its undo window.

Built, not yet done: hand one to `UndoCentre.perform`. `settled` (when given) is called with what the
facade returned after each redo and undo, so the pane that shows it can update without a reload.
"""

from __future__ import annotations

from collections.abc import Callable

from app.runtime.api.facade import ControlsApi, MemoryApi
from app.runtime.api.views import FORGET_UNDO_SECONDS, PauseKind, PauseView, ScheduledForget, TombstoneView

EVERYWHERE = "*"


class SwitchStep:
    """Pause or resume learning or recall in one place (or everywhere); undo flips it back."""

    undo_window: float | None = None

    def __init__(
        self,
        controls: ControlsApi,
        kind: PauseKind,
        where: str,
        place_name: str,
        *,
        pause: bool,
        initiator: object | None = None,
        settled: Callable[[PauseView], None] | None = None,
    ) -> None:
        self._controls = controls
        self.kind = kind
        self.where = where
        self.place_name = place_name
        self.pause = pause
        self._initiator = initiator
        self._settled = settled
        self.view: PauseView | None = None

    @property
    def label(self) -> str:
        where = "everywhere" if self.where == EVERYWHERE else f"in {self.place_name}"
        return f"{'Paused' if self.pause else 'Resumed'} {self.kind} {where}"

    async def _set(self, paused: bool) -> None:
        flip = self._controls.pause if paused else self._controls.resume
        self.view = await flip(self.kind, self.where, initiator=self._initiator)
        if self._settled is not None:
            self._settled(self.view)

    async def redo(self) -> None:
        await self._set(self.pause)

    async def undo(self) -> None:
        await self._set(not self.pause)


class LiftStep:
    """Lift a tombstone (what it blocked may be learned again); undo puts it back in force."""

    undo_window: float | None = None

    def __init__(self, memory: MemoryApi, stone: TombstoneView, *, initiator: object | None = None) -> None:
        self._memory = memory
        self.stone = stone
        self._initiator = initiator

    @property
    def label(self) -> str:
        return f"Lifted the tombstone “{self.stone.label}”"

    async def redo(self) -> None:
        await self._memory.lift_tombstone(self.stone.id, initiator=self._initiator)

    async def undo(self) -> None:
        await self._memory.restore_tombstone(self.stone.id, initiator=self._initiator)


class KeepStep:
    """Call off a forget still waiting out its undo window (the fact stays); undo schedules it again,
    with a fresh undo window."""

    undo_window: float | None = None

    def __init__(
        self,
        memory: MemoryApi,
        schedule: ScheduledForget,
        text: str,
        *,
        initiator: object | None = None,
        undo_seconds: float = FORGET_UNDO_SECONDS,
    ) -> None:
        self._memory = memory
        self.schedule = schedule
        self._text = text
        self._initiator = initiator
        self._undo_seconds = undo_seconds

    @property
    def label(self) -> str:
        return f"Kept {self._text or f'fact #{self.schedule.fact_id}'} (not forgotten)"

    async def redo(self) -> None:
        await self._memory.cancel_forget(self.schedule.id, initiator=self._initiator)

    async def undo(self) -> None:
        fact = (await self._memory.fact(self.schedule.fact_id)).fact
        self.schedule = await self._memory.schedule_forget(
            fact.id,
            fact.revision,
            redact_sources=self.schedule.redact_sources,
            delay=self._undo_seconds,
            initiator=self._initiator,
        )
