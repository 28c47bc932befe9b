"""What forgetting left: receipts (what each forget erased, counted per store), tombstones (what may not
be learned again), and the forgets still waiting out their undo window. Content-free but for the
waiting forgets, whose fact is not forgotten yet. Names, not keys; times in local time ("3 Nov 14:05")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from PySide6.QtCore import QObject

from app.runtime.api.views import ForgetReceipt, PersonRef, PlaceRef, ScheduledForget, TombstoneView
from app.ui.models.base import ALL_ROLES as _ROLES
from app.ui.models.base import RIGHT, Column, RecordTableModel
from app.ui.theme import AMBER, MUTED_GREY, themed

NO_ONE = "no one in particular"


def short_time(moment: datetime, now: datetime | None = None) -> str:
    """ "3 Nov 14:05" in local time; the year too when it is not this year's."""
    local = moment.astimezone()
    current = (now or datetime.now(UTC)).astimezone()
    day = f"{local.day} {local:%b}" + ("" if local.year == current.year else f" {local.year}")
    return f"{day} {local:%H:%M}"


def people(subjects: tuple[PersonRef, ...]) -> str:
    return ", ".join(p.name for p in subjects) or NO_ONE


def place(scope: PlaceRef | None) -> str:
    return scope.name if scope is not None else "—"


# -- receipts ------------------------------------------------------------------------------------------
class ReceiptsModel(RecordTableModel[ForgetReceipt]):
    """Newest first. `describe` words what a receipt erased (the pane passes the forget dialog's wording)."""

    def __init__(self, describe: Callable[[ForgetReceipt], str], parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column("#", lambda r: f"#{r.id}" if r.id is not None else "", align=RIGHT),
                Column("Forgotten", lambda r: short_time(r.created_at)),
                Column("About", lambda r: people(r.subjects)),
                Column("Where", lambda r: r.scope.name),
                Column("Erased", describe, tooltip=lambda r: describe(r).replace("; ", "\n")),
            ),
            key=lambda r: r.id,
            parent=parent,
        )


# -- tombstones ----------------------------------------------------------------------------------------
def _blocks(stone: TombstoneView) -> str:
    return "Yes" if stone.can_block else "No: its key is not on this machine"


class TombstonesModel(RecordTableModel[TombstoneView]):
    """Newest first: who it was about, where, when, the receipt it came from, whether it can block."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column("Forgotten", lambda t: short_time(t.created_at)),
                Column("About", lambda t: people(t.subjects) if t.receipt_id is not None else t.reason),
                Column("Where", lambda t: place(t.scope)),
                Column("Receipt", lambda t: f"#{t.receipt_id}" if t.receipt_id is not None else "—"),
                Column(
                    "Blocks re-learning",
                    _blocks,
                    foreground=lambda t: None if t.can_block else themed(AMBER),
                    tooltip=lambda t: (
                        "The familiar cannot learn this again."
                        if t.can_block
                        else "This tombstone was made with a key this machine does not have (it came with an"
                        " import without its key, or the keyring was lost): it is kept, but nothing can"
                        " recognise the forgotten text, so it cannot stop it being learned again."
                    ),
                ),
            ),
            key=lambda t: t.id,
            parent=parent,
        )


# -- forgets waiting out their undo window -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WaitingForget:
    schedule: ScheduledForget
    text: str  # the fact, quoted ("" when it could not be read): not forgotten yet, still undoable


def seconds_left(waiting: WaitingForget, now: datetime | None = None) -> int:
    left = (waiting.schedule.due_at - (now or datetime.now(UTC))).total_seconds()
    return max(0, round(left))


def _countdown(waiting: WaitingForget) -> str:
    left = seconds_left(waiting)
    return f"in {left} s" if left else "now"


class WaitingForgetsModel(RecordTableModel[WaitingForget]):
    """Soonest first; `tick()` redraws the countdown (call it every second while any row is left)."""

    COUNTDOWN = 1

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column("Fact", lambda w: w.text or f"fact #{w.schedule.fact_id}"),
                Column("Forgotten", _countdown, align=RIGHT, foreground=lambda _w: themed(MUTED_GREY)),
                Column("Its messages", lambda w: "erased too" if w.schedule.redact_sources else "kept"),
            ),
            key=lambda w: w.schedule.id,
            parent=parent,
        )

    def tick(self) -> None:
        if self.rowCount():
            column = self.COUNTDOWN
            self.dataChanged.emit(self.index(0, column), self.index(self.rowCount() - 1, column), _ROLES)
