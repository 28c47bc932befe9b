"""What the facts timeline is asked to show: its as-of times, the two compared, the filters, and which row to
focus when a new slice comes. Plain Python, no Qt (the Timeline pane shows a `TimelineQuery`).

World time (what held in the world then) and recorded time (as the familiar knew it then) are each None for
"now" (following the clock). Comparing puts a second recorded time, B, beside A: the slice becomes the
changes from A to B. After a slice, the fact the side panel shows stays chosen if the slice has it, or its
newest version there if it was corrected meanwhile; after a forget, the row that took the forgotten one's
place is chosen; else the panel stops showing a fact the slice no longer has.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from app.runtime.api.views import (
    FactStatus,
    FactType,
    FactView,
    TimelineDiff,
    TimelineExtent,
    TimelineFilters,
    TimelinePoint,
    TimelineSlice,
)
from app.ui.time_text import when, when_or_now

COMPARE_FROM = timedelta(days=7)
"""How far back A goes when comparing starts with A at "now" (B then is "now")."""


@dataclass(frozen=True, slots=True)
class Axes:
    """The span of the two time axes: the world axis padded around every fact's validity (and at least the
    last week), the recorded axis from a little before the first fact was recorded to now."""

    world_start: datetime
    world_end: datetime
    recorded_start: datetime


def axes_for(extent: TimelineExtent, now: datetime) -> Axes:
    first_world = min(extent.first_world or now, now - timedelta(days=7))
    last_world = max(extent.last_world or now, now)
    pad = max((last_world - first_world) * 0.04, timedelta(hours=12))
    first_recorded = min(extent.first_recorded or now, now - timedelta(days=1))
    recorded_start = first_recorded - max((now - first_recorded) * 0.02, timedelta(hours=1))
    return Axes(first_world - pad, last_world + pad, recorded_start)


def page_around(first: int, last: int, margin: int, least: int) -> tuple[int, int]:
    """The page of a slice to fetch for the rows `first`..`last` in view: `margin` rows beyond them either
    side, and at least `least` rows; (offset, limit)."""
    offset = max(0, first - margin)
    return offset, max(last - offset + 1 + margin, least)


def filters_from(
    person: str | None, place: str | None, kind: FactType | None, status: FactStatus | None, text: str
) -> TimelineFilters:
    """The filters the controls say (each None: any)."""
    return TimelineFilters(
        subjects=(person,) if person else (),
        places=(place,) if place else (),
        types=(kind,) if kind else (),
        statuses=(status,) if status else (),
        text=text.strip(),
    )


def newest_loaded_version(
    fact_id: int, versions: Sequence[FactView] | None, row_of: Callable[[int], int | None]
) -> int | None:
    """The row of the newest version, among the rows loaded, of the fact `fact_id` whose version chain is
    `versions` (the side panel's; None when it shows none, or a chain `fact_id` is not in: None)."""
    if versions is None or all(version.id != fact_id for version in versions):
        return None
    for version in reversed(versions):
        row = row_of(version.id)
        if row is not None:
            return row
    return None


@dataclass(frozen=True, slots=True)
class SliceFocus:
    """Which row a new slice makes current: the fact kept (or its newest version), the row after one
    forgotten, the first row of a first load, none (the panel stops showing a fact that went), or as it is."""

    kind: Literal["kept", "followed", "first", "clear", "unchanged"]
    row: int = -1


class TimelineQuery:
    def __init__(self) -> None:
        self.world: datetime | None = None
        self.recorded: list[datetime | None] = [None, None]  # A, and B when comparing
        self.comparing = False
        self.filters = TimelineFilters()
        self.follow_row: int | None = None  # after a forget: the row whose fact to show next

    # -- the times ---------------------------------------------------------------------------------------------
    def move_world(self, moment: object) -> None:
        """World time moved (a datetime, else "now")."""
        self.world = moment if isinstance(moment, datetime) else None

    def move_recorded(self, handle: int, moment: object) -> bool:
        """Recorded time A (0) or B (1) moved; whether that changes what is shown (B does only when comparing)."""
        self.recorded[handle] = moment if isinstance(moment, datetime) else None
        return handle == 0 or self.comparing

    def world_handles(self) -> tuple[datetime | None, datetime | None]:
        return (self.world, None)

    def recorded_handles(self) -> tuple[datetime | None, datetime | None]:
        return (self.recorded[0], self.recorded[1])

    def compare(self, on: bool, axis_start: datetime, now: datetime) -> datetime | None:
        """Start comparing (B at now; A, if it was at now too, a week back but not before the axis) or stop.
        The moment A moved to, if it moved."""
        self.comparing = on
        if not on:
            return None
        moved = None
        if self.recorded[0] is None:
            moved = max(axis_start, now - COMPARE_FROM)
            self.recorded[0] = moved
        self.recorded[1] = None
        return moved

    def point(self, handle: int) -> TimelinePoint:
        """World time with recorded time A (0) or B (1)."""
        return TimelinePoint(self.world, self.recorded[handle])

    # -- words -------------------------------------------------------------------------------------------------
    def summary_text(self, total: int) -> str:
        world = "now" if self.world is None else f"on {when(self.world)}"
        recorded = "knows them now" if self.recorded[0] is None else f"knew them on {when(self.recorded[0])}"
        text = f"{total:,} fact{'s' if total != 1 else ''} held {world}, as the familiar {recorded}."
        if self.filters.any:
            text += " Filtered: clear the filters to see every fact."
        return text

    def empty_text(self) -> str:
        if self.filters.any:
            return "No fact matches these filters at these times. Clear the filters, or move either time."
        world = "now" if self.world is None else when(self.world)
        recorded = "now" if self.recorded[0] is None else when(self.recorded[0])
        return f"No fact held at {world} as the familiar knew it at {recorded}. Move either time."

    @staticmethod
    def diff_text(diff: TimelineDiff) -> str:
        a = when_or_now(diff.before.recorded_at)
        b = when_or_now(diff.after.recorded_at)
        listed = len(diff.changes)
        whole = diff.added + diff.removed + diff.changed
        more = f" (the first {listed} listed)" if listed < whole else ""
        return f"From A ({a}) to B ({b}): {diff.added} added, {diff.removed} removed, {diff.changed} changed{more}."

    # -- the row to focus ----------------------------------------------------------------------------------------
    def focus_after_slice(
        self,
        kept: int | None,
        sliced: TimelineSlice,
        row_of: Callable[[int], int | None],
        versions: Sequence[FactView] | None,
        *,
        first_load: bool,
    ) -> SliceFocus:
        """Where the focus goes in `sliced` (now in the model: `row_of`), `kept` the fact chosen before it
        came and `versions` the version chain the side panel shows. A row to follow is used up."""
        row = row_of(kept) if kept is not None else None
        if row is None and kept is not None:
            row = newest_loaded_version(kept, versions, row_of)  # corrected since: the choice follows it
        if row is not None:
            return SliceFocus("kept", row)
        if self.follow_row is not None and sliced.total:
            row, self.follow_row = min(self.follow_row, sliced.total - 1), None
            return SliceFocus("followed", row)
        if first_load and sliced.rows:
            return SliceFocus("first", sliced.offset)
        if kept is not None:
            return SliceFocus("clear")  # the fact shown is not among these rows: the panel stops showing it
        return SliceFocus("unchanged")
