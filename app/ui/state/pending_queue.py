"""The pending queue's decisions in flight: plain Python, no Qt (the Pending pane shows a `QueueState`).

A decision takes its items out of the list at once (optimistically) and runs through the window's undo
after; meanwhile the items are *in flight*. A queue read from the store while decisions run (a reload for a
change from elsewhere) may have read an item before its decision or after it, so each fact a decision (or
its undo) settled is *touched* at a generation: a read begun before that generation keeps the model's row
for it, not the read's. The counter moves with each step (`settle_step`); a count read beside a decision is
counted again once nothing overlaps (`recount`). `QueueDecision` is one decision, `Reversible` for the
window's undo; `focus_after_decision` is where the focus goes after one (the next item, never the top).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from datetime import datetime
from typing import Literal

from app.runtime.api.views import FactView, PendingItem, PendingQueue
from app.runtime.errors import FamiliarError
from app.ui.fact_actions import FactStep

Kind = Literal["accept", "reject", "snooze", "edit"]
VERBS: dict[Kind, tuple[str, str]] = {  # (operation, past tense for a batch's label)
    "accept": ("accept", "Accepted"),
    "reject": ("reject", "Rejected"),
    "snooze": ("snooze", "Snoozed"),
    "edit": ("edit and accept", "Edited"),
}


def is_open(fact: FactView) -> bool:
    """Still something to decide: a pending head."""
    return fact.status == "pending" and fact.is_head


def waiting(fact: FactView, now: datetime) -> bool:
    """Counted as pending: open and not snoozed."""
    return is_open(fact) and not fact.snoozed(now)


def snoozed(fact: FactView, now: datetime) -> bool:
    return is_open(fact) and fact.snoozed(now)


def focus_after_decision(
    focused: int | None,
    decided: Collection[int],
    taken_rows: Sequence[int],
    row: int,
    row_of: Callable[[int], int | None],
) -> int:
    """The row to focus once the rows `taken_rows` (of the facts `decided`) are out of the list. `focused`:
    the fact focused before (None: none), at `row`; `row_of`: a fact's row in the list as it is now.

    Deciding the selected items leaves the focus where it was; deciding the focused one moves it to the item
    after the last one decided (or, at the end, the one before): the rows above it that were decided went
    out with it, so it is that many rows up from where it was."""
    if focused is not None and focused not in decided:
        return row_of(focused) or 0
    if taken_rows:
        return max(taken_rows) + 1 - len(taken_rows)
    return row


Settled = Callable[[PendingItem, int, FactView, FactView, bool], None]


class QueueDecision:
    """One decision on one or several queue items, `Reversible` for the window's undo. Each item's step is
    a fact_actions step; after each step is done or undone the pane is told (`settled`), so it puts the
    item back or takes it out, wherever the undo came from (z, Ctrl+Z, the notice).

    The first time, a step that fails (a revision conflict) leaves the others done: `failures` lists them,
    and only the steps done are undone later. If every step fails, the first error is raised."""

    undo_window: float | None = None

    def __init__(self, kind: Kind, steps: Sequence[tuple[PendingItem, int, FactStep]], settled: Settled) -> None:
        self._kind = kind
        self._steps = list(steps)
        self._settled = settled
        self._first = True
        self.failures: list[tuple[PendingItem, int, FamiliarError]] = []

    @property
    def label(self) -> str:
        if len(self._steps) == 1:
            return self._steps[0][2].label
        return f"{VERBS[self._kind][1]} {len(self._steps)} facts"

    @property
    def items(self) -> list[PendingItem]:
        return [item for item, _order, _step in self._steps]

    async def redo(self) -> None:
        if not self._first:
            for item, order, step in self._steps:
                await self._move(item, order, step, step.redo, undoing=False)
            return
        self._first = False
        done: list[tuple[PendingItem, int, FactStep]] = []
        for item, order, step in self._steps:
            try:
                await self._move(item, order, step, step.redo, undoing=False)
            except FamiliarError as error:
                self.failures.append((item, order, error))
            else:
                done.append((item, order, step))
        if not done:
            raise self.failures[0][2]
        self._steps = done

    async def undo(self) -> None:
        for item, order, step in reversed(self._steps):
            await self._move(item, order, step, step.undo, undoing=True)

    async def _move(
        self, item: PendingItem, order: int, step: FactStep, move: Callable[[], Awaitable[None]], *, undoing: bool
    ) -> None:
        before = step.current
        await move()
        self._settled(item, order, before, step.current, undoing)


class QueueState:
    """The counts, the decisions in flight and what they settled, the "changed meanwhile" notes."""

    def __init__(self) -> None:
        self.pending = 0  # waiting now (not snoozed), shown or not
        self.snoozed = 0
        self.show_snoozed = False
        self.wanted: int | None = None  # a fact another pane asked to show, once loaded
        self._conflicts: dict[int, str] = {}  # fact id -> the "changed meanwhile" note
        self._in_flight: set[int] = set()  # taken out, decision not settled yet
        # Facts this pane's decisions (or their undo) settled, by generation: a load that ran meanwhile
        # read them before or after, so for them the model, not the load, is right.
        self._generation = 0
        self._touched: dict[int, int] = {}

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def deciding(self) -> bool:
        """Items taken out of the queue whose decision has not settled yet."""
        return bool(self._in_flight)

    def in_flight(self, fact_id: int) -> bool:
        return fact_id in self._in_flight

    # -- decisions ---------------------------------------------------------------------------------------------
    def take_out(self, fact_ids: Collection[int]) -> None:
        """A decision on these facts begins: out of the list until it settles (a new decision, no old note)."""
        self._in_flight.update(fact_ids)
        for fact_id in fact_ids:
            self._conflicts.pop(fact_id, None)

    def landed(self, fact_ids: Collection[int]) -> None:
        """The decision's facade calls are done (each step has settled, or failed)."""
        self._in_flight.difference_update(fact_ids)

    def settled(self, fact_ids: Collection[int]) -> None:
        """The decision is over, whatever became of it: a read begun before now keeps the model's rows."""
        self._in_flight.difference_update(fact_ids)
        self.touch(*fact_ids)

    def touch(self, *fact_ids: int) -> None:
        self._generation += 1
        for fact_id in fact_ids:
            self._touched[fact_id] = self._generation

    def settle_step(self, before: FactView, after: FactView, now: datetime) -> bool:
        """A step moved a fact from `before` to `after` (done or undone): the counts follow it. Whether the
        fact belongs in the list now (open, and not snoozed unless snoozed ones are shown)."""
        self.pending += waiting(after, now) - waiting(before, now)
        self.snoozed += snoozed(after, now) - snoozed(before, now)
        self.touch(before.id, after.id)
        return is_open(after) and (self.show_snoozed or not after.snoozed(now))

    # -- reading the store -------------------------------------------------------------------------------------
    def read(self, queue: PendingQueue, since: int) -> tuple[list[PendingItem], set[int]]:
        """A queue read from the store, begun at generation `since`: its items to show (not those in flight,
        nor those settled since, whose rows the model keeps as it has them: the second value). The counts
        are the read's (recount them when it missed settled decisions)."""
        recent = {fact_id for fact_id, generation in self._touched.items() if generation > since}
        fresh = [i for i in queue.items if i.fact.id not in self._in_flight and i.fact.id not in recent]
        self._touched = {f: g for f, g in self._touched.items() if g > since}
        self.pending, self.snoozed = queue.pending, queue.snoozed
        return fresh, recent

    def recount(self, queue: PendingQueue, since: int) -> bool:
        """Counts read at generation `since` taken, unless a decision overlapped them (then False: count
        again after)."""
        if self._generation != since or self._in_flight:
            return False
        self.pending, self.snoozed = queue.pending, queue.snoozed
        return True

    def needs_more(self, loaded: int, low_water: int) -> bool:
        """Fewer than `low_water` of a longer queue are loaded (those in flight are not left to load)."""
        return loaded < low_water and self.pending > loaded + len(self._in_flight)

    # -- "changed meanwhile" -----------------------------------------------------------------------------------
    def conflict(self, fact_id: int) -> str | None:
        return self._conflicts.get(fact_id)

    def note_conflict(self, fact_id: int, note: str) -> None:
        self._conflicts[fact_id] = note

    def keep_conflicts(self, listed: Callable[[int], bool]) -> None:
        """Notes only for facts still listed."""
        for fact_id in [f for f in self._conflicts if not listed(f)]:
            del self._conflicts[fact_id]
