"""The state-changing actions on a fact, each `Reversible` for the window's undo (app/ui/undo.py).

Each is built, not yet done: hand it to `UndoCentre.perform`, which does it and records it. After
that, `step.current` is the fact as the action left it (the new head after an edit) for the pane to
show. Every call carries the revision seen and the pane as the initiator:

    step = accept(facade.memory, fact, initiator=self)
    outcome = await self.ops.run("accept the fact", lambda: context.undo.perform(step))
    if isinstance(outcome, Succeeded):
        self.model.replace_record(step.current)

The reversals are honest store operations (back to pending, un-archive, the snooze it had, the version
from before an edit reopened as it was), each logged in the fact's history. A forget is deferred: it is
scheduled and applied when its undo window ends (or the window closes); undo cancels it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from app.runtime.api.facade import MemoryApi
from app.runtime.api.views import FORGET_UNDO_SECONDS, FactView, ScheduledForget

MAX_LABEL_CHARS = 60


def quoted(text: str) -> str:
    """A fact's text shortened for a label: “Alice keeps bees”."""
    text = " ".join(text.split())
    return f"“{text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + '…'}”"


Move = Callable[[FactView], Awaitable[FactView]]


class FactStep:
    """A decision on one fact; `redo` and `undo` move it forward and back from where it stands now."""

    undo_window: float | None = None

    def __init__(self, label: str, fact: FactView, forward: Move, backward: Move) -> None:
        self._label = label
        self.current = fact
        self._forward = forward
        self._backward = backward

    @property
    def label(self) -> str:
        return self._label

    async def redo(self) -> None:
        self.current = await self._forward(self.current)

    async def undo(self) -> None:
        self.current = await self._backward(self.current)


def accept(memory: MemoryApi, fact: FactView, initiator: object | None = None) -> FactStep:
    return FactStep(
        f"Accepted {quoted(fact.content)}",
        fact,
        lambda f: memory.accept(f.id, f.revision, initiator=initiator),
        lambda f: memory.reopen(f.id, f.revision, initiator=initiator),
    )


def reject(memory: MemoryApi, fact: FactView, initiator: object | None = None) -> FactStep:
    return FactStep(
        f"Rejected {quoted(fact.content)}",
        fact,
        lambda f: memory.reject(f.id, f.revision, initiator=initiator),
        lambda f: memory.reopen(f.id, f.revision, initiator=initiator),
    )


def archive(memory: MemoryApi, fact: FactView, initiator: object | None = None) -> FactStep:
    return FactStep(
        f"Archived {quoted(fact.content)}",
        fact,
        lambda f: memory.archive(f.id, f.revision, initiator=initiator),
        lambda f: memory.unarchive(f.id, f.revision, initiator=initiator),
    )


def snooze(memory: MemoryApi, fact: FactView, until: datetime, initiator: object | None = None) -> FactStep:
    before = fact.snoozed_until
    return FactStep(
        f"Snoozed {quoted(fact.content)} until {until.astimezone():%a %d %b %H:%M}",
        fact,
        lambda f: memory.snooze(f.id, f.revision, until, initiator=initiator),
        lambda f: memory.restore_snooze(f.id, f.revision, before, initiator=initiator),
    )


def edit(memory: MemoryApi, fact: FactView, text: str, initiator: object | None = None) -> FactStep:
    """Undo reopens the version from before (its own id and dates); `current` is always the chain's head."""
    return FactStep(
        f"Edited {quoted(fact.content)}",
        fact,
        lambda f: memory.edit(f.id, f.revision, text, initiator=initiator),
        lambda f: memory.revert_edit(f.id, f.revision, initiator=initiator),
    )


class ForgetStep:
    """A deferred forget: the fact is out of every read at once and erased when the undo window ends."""

    def __init__(
        self,
        memory: MemoryApi,
        fact: FactView,
        *,
        redact_sources: bool = False,
        initiator: object | None = None,
        undo_seconds: float = FORGET_UNDO_SECONDS,
    ) -> None:
        self.undo_window: float | None = undo_seconds
        self._memory = memory
        self.fact = fact
        self._redact_sources = redact_sources
        self._initiator = initiator
        self.scheduled: ScheduledForget | None = None

    @property
    def label(self) -> str:
        return f"Forgot {quoted(self.fact.content)}"

    async def redo(self) -> None:
        self.scheduled = await self._memory.schedule_forget(
            self.fact.id,
            self.fact.revision,
            redact_sources=self._redact_sources,
            delay=self.undo_window or 0.0,
            initiator=self._initiator,
        )

    async def undo(self) -> None:
        if self.scheduled is not None:
            await self._memory.cancel_forget(self.scheduled.id, initiator=self._initiator)
            self.scheduled = None


def forget(
    memory: MemoryApi,
    fact: FactView,
    *,
    redact_sources: bool = False,
    initiator: object | None = None,
    undo_seconds: float = FORGET_UNDO_SECONDS,
) -> ForgetStep:
    return ForgetStep(memory, fact, redact_sources=redact_sources, initiator=initiator, undo_seconds=undo_seconds)
