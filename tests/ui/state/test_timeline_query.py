"""The timeline's query without a window: the as-of times, comparing A with B, the filters, the axes and
pages, and which row a new slice focuses (the fact kept, its newest version, the row after a forget)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from app.runtime.api.views import (
    FactView,
    PlaceRef,
    TimelineDiff,
    TimelineExtent,
    TimelineFilters,
    TimelinePoint,
    TimelineSlice,
)
from app.ui.state.timeline_query import (
    TimelineQuery,
    axes_for,
    filters_from,
    newest_loaded_version,
    page_around,
)
from app.ui.time_text import when, when_or_now

NOW = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)


def fact(fact_id: int, **fields: Any) -> FactView:
    made = FactView(
        id=fact_id,
        content=f"fact {fact_id}",
        type="semantic",
        importance=5,
        confidence=0.9,
        subjects=(),
        speaker=None,
        scope=PlaceRef("local", "Local chat"),
        status="active",
        revision=1,
        origin="extraction",
        created_at=NOW - timedelta(days=1),
        superseded_at=None,
        superseded_by=None,
        valid_from=None,
        valid_to=None,
        snoozed_until=None,
    )
    return dataclasses.replace(made, **fields)


def sliced(*ids: int, total: int | None = None, offset: int = 0) -> TimelineSlice:
    rows = tuple(fact(i) for i in ids)
    return TimelineSlice(None, None, rows, total=len(ids) if total is None else total, offset=offset, rows=rows)


def rows_of(*ids: int) -> dict[int, int]:
    return {fact_id: row for row, fact_id in enumerate(ids)}


# -- times and comparing --------------------------------------------------------------------------------------
def test_the_times_move_and_anything_but_a_datetime_is_now() -> None:
    query = TimelineQuery()
    assert (query.world, query.recorded, query.comparing) == (None, [None, None], False)
    query.move_world(NOW)
    assert query.world == NOW
    query.move_world(None)
    assert query.world is None
    assert query.move_recorded(0, NOW), "A moved: a slice is due"
    assert not query.move_recorded(1, NOW - timedelta(days=1)), "B moved while not comparing: nothing shown changes"
    assert query.recorded_handles() == (NOW, NOW - timedelta(days=1))
    query.comparing = True
    assert query.move_recorded(1, "now")
    assert query.recorded[1] is None
    assert query.world_handles() == (None, None)


def test_comparing_from_now_puts_a_a_week_back_and_b_at_now() -> None:
    query = TimelineQuery()
    query.recorded[1] = NOW  # left over from before
    moved = query.compare(True, NOW - timedelta(days=30), NOW)
    assert moved == NOW - timedelta(days=7)
    assert query.recorded == [NOW - timedelta(days=7), None]
    assert query.comparing
    assert (query.point(0), query.point(1)) == (TimelinePoint(None, NOW - timedelta(days=7)), TimelinePoint(None, None))
    assert query.compare(False, NOW - timedelta(days=30), NOW) is None
    assert not query.comparing


def test_comparing_keeps_a_where_it_was_and_never_before_the_axis() -> None:
    query = TimelineQuery()
    query.recorded[0] = NOW - timedelta(days=2)
    assert query.compare(True, NOW - timedelta(days=30), NOW) is None
    assert query.recorded == [NOW - timedelta(days=2), None]
    young = TimelineQuery()
    assert young.compare(True, NOW - timedelta(days=3), NOW) == NOW - timedelta(days=3), "the axis starts later"


# -- words ------------------------------------------------------------------------------------------------------
def test_the_summary_and_the_empty_text_say_the_times_and_the_filters() -> None:
    query = TimelineQuery()
    assert query.summary_text(1) == "1 fact held now, as the familiar knows them now."
    assert query.empty_text() == "No fact held at now as the familiar knew it at now. Move either time."
    query.world, query.recorded[0] = NOW, NOW - timedelta(days=1)
    assert query.summary_text(2_000) == (
        f"2,000 facts held on {when(NOW)}, as the familiar knew them on {when(NOW - timedelta(days=1))}."
    )
    query.filters = TimelineFilters(text="bees")
    assert query.summary_text(0).endswith(" Filtered: clear the filters to see every fact.")
    assert query.empty_text().startswith("No fact matches these filters")


def test_the_diff_text_says_how_many_of_each_and_how_many_are_listed() -> None:
    diff = TimelineDiff(TimelinePoint(None, NOW), TimelinePoint(), changes=(), added=2, removed=1, changed=0)
    text = TimelineQuery.diff_text(diff)
    a, b = when_or_now(NOW), when_or_now(None)
    assert text == f"From A ({a}) to B ({b}): 2 added, 1 removed, 0 changed (the first 0 listed)."
    empty = dataclasses.replace(diff, added=0, removed=0)
    assert TimelineQuery.diff_text(empty).endswith(": 0 added, 0 removed, 0 changed.")


def test_filters_from_the_controls() -> None:
    assert filters_from(None, None, None, None, "  ") == TimelineFilters()
    assert filters_from("person:1", "guild:2", "episodic", "active", " bees ") == TimelineFilters(
        subjects=("person:1",), places=("guild:2",), types=("episodic",), statuses=("active",), text="bees"
    )


# -- axes and pages ---------------------------------------------------------------------------------------------
def test_the_axes_span_every_fact_with_room_around() -> None:
    empty = TimelineExtent(0, None, None, None, (), ())
    axes = axes_for(empty, NOW)
    # At least the last week of world time, padded by 4% (at least 12 hours) either side.
    assert axes.world_start == NOW - timedelta(days=7) - timedelta(hours=12)
    assert axes.world_end == NOW + timedelta(hours=12)
    assert axes.recorded_start == NOW - timedelta(days=1) - timedelta(hours=1)
    wide = TimelineExtent(10, NOW - timedelta(days=100), NOW - timedelta(days=300), NOW + timedelta(days=100), (), ())
    axes = axes_for(wide, NOW)
    assert axes.world_start == NOW - timedelta(days=300) - timedelta(days=16)
    assert axes.world_end == NOW + timedelta(days=100) + timedelta(days=16)
    assert axes.recorded_start == NOW - timedelta(days=100) - timedelta(days=2)


def test_a_page_takes_the_rows_in_view_and_a_margin() -> None:
    assert page_around(50, 70, 8, 1) == (42, 37)
    assert page_around(3, 10, 8, 1) == (0, 19)
    assert page_around(0, 10, 8, 120) == (0, 120), "a first load: a longer page"


# -- the focus after a slice --------------------------------------------------------------------------------------
def test_the_fact_chosen_stays_chosen_where_the_slice_has_it() -> None:
    query = TimelineQuery()
    focus = query.focus_after_slice(12, sliced(11, 12), rows_of(11, 12).get, None, first_load=False)
    assert (focus.kind, focus.row) == ("kept", 1)


def test_a_fact_corrected_meanwhile_is_followed_to_its_newest_version_loaded() -> None:
    versions = (fact(5), fact(6), fact(7))  # oldest first: the panel's version chain of fact 5
    rows = rows_of(1, 6, 2)  # 7 is not loaded, 6 is
    assert newest_loaded_version(5, versions, rows.get) == 1
    assert newest_loaded_version(9, versions, rows.get) is None, "not the fact the panel shows"
    assert newest_loaded_version(5, None, rows.get) is None
    assert newest_loaded_version(5, versions, {}.get) is None
    query = TimelineQuery()
    focus = query.focus_after_slice(5, sliced(1, 6, 2), rows.get, versions, first_load=False)
    assert (focus.kind, focus.row) == ("kept", 1)


def test_a_fact_gone_from_the_slice_is_shown_no_more() -> None:
    query = TimelineQuery()
    focus = query.focus_after_slice(5, sliced(1, 2), rows_of(1, 2).get, (fact(5),), first_load=False)
    assert focus.kind == "clear"


def test_after_a_forget_the_row_that_took_its_place_is_chosen_once() -> None:
    query = TimelineQuery()
    query.follow_row = 4
    focus = query.focus_after_slice(None, sliced(1, 2, 3), rows_of(1, 2, 3).get, None, first_load=False)
    assert (focus.kind, focus.row) == ("followed", 2), "it was the last row: the one now last"
    assert query.follow_row is None
    again = query.focus_after_slice(None, sliced(1, 2, 3), rows_of(1, 2, 3).get, None, first_load=False)
    assert again.kind == "unchanged"
    query.follow_row = 0
    nothing_left = query.focus_after_slice(None, sliced(), {}.get, None, first_load=False)
    assert nothing_left.kind == "unchanged"
    assert query.follow_row == 0, "kept for a slice that has rows"


def test_a_first_load_chooses_its_first_row() -> None:
    query = TimelineQuery()
    focus = query.focus_after_slice(None, sliced(1, 2, offset=30), rows_of(1, 2).get, None, first_load=True)
    assert (focus.kind, focus.row) == ("first", 30)
    assert query.focus_after_slice(None, sliced(), {}.get, None, first_load=True).kind == "unchanged"
