"""The owner's decisions on a fact and their reversals, as one table of status moves.

Every move carries the revision the owner saw, applies to a current head in the statuses it names,
bumps the revision and logs the new status (so an as-of slice shows what was decided when). A
reversal is an honest new state in the log, never a rewrite: undoing an accept is a `reopen`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from app.memory.facts import Fact, FactBook, FactError, current_in, iso, set_status_in
from app.memory.store import Store

Move = Literal["accept", "reject", "snooze", "archive", "reopen", "unarchive", "restore_snooze"]


@dataclass(frozen=True, slots=True)
class Transition:
    sources: tuple[str, ...]  # the statuses it applies to
    target: str
    snooze: Literal["clear", "keep", "set"]  # what happens to snoozed_until
    refusal: str  # why it does not apply, after "fact <id> is <status>"


_NOT_PENDING = ", not pending"
TRANSITIONS: dict[Move, Transition] = {
    "accept": Transition(("pending",), "active", "clear", _NOT_PENDING),
    "reject": Transition(("pending",), "rejected", "keep", _NOT_PENDING),
    "snooze": Transition(("pending",), "pending", "set", _NOT_PENDING),
    "archive": Transition(("active",), "archived", "keep", ", not active"),
    # Undo an accept or a reject: back to the pending queue.
    "reopen": Transition(
        ("active", "rejected"), "pending", "clear", "; only an accepted or rejected fact can be reopened"
    ),
    # Undo an archive: current truth again.
    "unarchive": Transition(("archived",), "active", "keep", ", not archived"),
    # Undo a snooze: the snooze it had before (None: in the queue now).
    "restore_snooze": Transition(("pending",), "pending", "set", _NOT_PENDING),
}


class Decisions:
    """Status moves on the facts of one store."""

    def __init__(self, store: Store, facts: FactBook) -> None:
        self._store = store
        self._facts = facts

    async def decide(
        self,
        fact_id: int,
        revision: int,
        move: Move,
        *,
        until: datetime | None = None,
        now: datetime | None = None,
    ) -> Fact:
        """Apply `move` (see TRANSITIONS) to the fact the owner saw at `revision`. `until` is the snooze
        end: required and in the future for `snooze`, None (back in the queue) or a time for
        `restore_snooze`. Returns the fact as it is now."""
        transition = TRANSITIONS[move]
        moment = now or datetime.now(UTC)
        extra: dict[str, str | None] = {}
        if transition.snooze == "clear":
            extra["snoozed_until"] = None
        elif transition.snooze == "set":
            extra["snoozed_until"] = _snooze_end(move, until, moment)
        async with self._store.transaction() as conn:
            fact = await current_in(conn, fact_id, revision)
            if fact.status not in transition.sources:
                raise FactError(f"fact {fact_id} is {fact.status}{transition.refusal}")
            await set_status_in(conn, fact, transition.target, moment, **extra)
        return await self._facts.require(fact_id)


def _snooze_end(move: Move, until: datetime | None, moment: datetime) -> str | None:
    if move == "snooze":
        if until is None or until.tzinfo is None or until <= moment:
            raise FactError("snooze needs a future time with a time zone")
    elif until is not None and until.tzinfo is None:
        raise FactError("a snooze time needs a time zone")
    return iso(until)
