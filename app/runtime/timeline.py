"""`facade.memory`, the timeline: pages of the bi-temporal slice, its extent, and diffs between two
points, with names resolved and forgotten facts as content-free markers (app/memory/timeline.py)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, cast

from app.memory.facts import Fact
from app.runtime.api.memory_base import MemoryBase
from app.runtime.api.view_builder import fact_view
from app.runtime.api.views import (
    DiffPiece,
    FactStatus,
    FactView,
    ForgottenFact,
    TimelineChange,
    TimelineDiff,
    TimelineExtent,
    TimelineFilters,
    TimelinePoint,
    TimelineRow,
    TimelineSlice,
)
from app.runtime.names import NameTable
from app.runtime.textdiff import word_diff

if TYPE_CHECKING:  # the timeline book loads numpy: imported when a slice is first asked for (MemoryBase)
    from app.memory.timeline import ForgetInfo, Point, TimelineFilter

MAX_ROWS = 10_000
MAX_DIFF_ROWS = 2_000
NAMES_SECONDS = 5.0
"""Names looked up for the timeline are reused this long: a slider drag asks for the same people and places
dozens of times a second, and a renamed channel may show its old name for a few seconds at most."""


def point(world_at: datetime | None, recorded_at: datetime | None) -> Point:
    from app.memory.timeline import Point

    return Point(world_at, recorded_at)


def slice_filter(filters: TimelineFilters | None, status: str, subject: str | None) -> TimelineFilter:
    """The book's filter for a slice: `filters`, and one status ("all": any) and one subject on top."""
    from app.memory.timeline import TimelineFilter

    chosen = filters or TimelineFilters()
    statuses: tuple[str, ...] = chosen.statuses
    if status != "all":
        statuses = (*statuses, status) if statuses else (status,)
    subjects = (*chosen.subjects, subject) if subject is not None else chosen.subjects
    return TimelineFilter(
        subjects=subjects, places=chosen.places, types=chosen.types, statuses=statuses, text=chosen.text
    )


def _forgotten(fact: Fact, info: ForgetInfo | None, names: NameTable) -> ForgottenFact:
    return ForgottenFact(
        id=fact.id,
        subjects=tuple(names.person(s) for s in (info.subjects if info else ())),
        scope=names.place(fact.scope),
        status=cast(FactStatus, fact.status),
        created_at=fact.created_at,
        superseded_at=fact.superseded_at,
        valid_from=fact.valid_from,
        valid_to=fact.valid_to,
        forgotten_at=info.forgotten_at if info else None,
        receipt_id=info.receipt_id if info else None,
    )


class _NameCache:
    """The names of the people and places the timeline showed lately (see NAMES_SECONDS)."""

    def __init__(self) -> None:
        self.table: NameTable | None = None
        self.people: set[str] = set()
        self.places: set[str] = set()
        self.at = 0.0

    def covers(self, people: set[str], places: set[str], now: float) -> bool:
        return (
            self.table is not None and now - self.at < NAMES_SECONDS and people <= self.people and places <= self.places
        )


class TimelineMixin(MemoryBase):
    _timeline_names: _NameCache | None = None

    async def _names(self, people: set[str], places: set[str]) -> NameTable:
        cache = self._timeline_names = self._timeline_names or _NameCache()
        now = time.monotonic()
        if not cache.covers(people, places, now):
            fresh = now - cache.at < NAMES_SECONDS
            wanted_people = people | cache.people if fresh else people
            wanted_places = places | cache.places if fresh else places
            cache.table = await self._views.names.table(people=wanted_people, places=wanted_places)
            cache.people, cache.places = wanted_people, wanted_places
            cache.at = cache.at if fresh else now
        assert cache.table is not None
        return cache.table

    async def timeline(
        self,
        *,
        world_at: datetime | None = None,
        recorded_at: datetime | None = None,
        status: str = "all",
        subject: str | None = None,
        limit: int = MAX_ROWS,
        offset: int = 0,
        filters: TimelineFilters | None = None,
    ) -> TimelineSlice:
        """What held in the world at `world_at` as recorded by `recorded_at` (either None: now), every
        status by default, each fact with the status it had at the recorded time; forgotten facts stay
        as content-free markers in `rows`. A page of `limit` rows from `offset`, latest start first;
        `total` is the whole slice's size."""
        async with self._explained():
            where = slice_filter(filters, status, subject)
            page = await self._timeline().slice(
                point(world_at, recorded_at), where, offset=offset, limit=max(0, min(limit, MAX_ROWS))
            )
        rows = await self._timeline_rows(page.facts, page.forgotten)
        return TimelineSlice(
            world_at=world_at,
            recorded_at=recorded_at,
            facts=tuple(r for r in rows if isinstance(r, FactView)),
            total=page.total,
            offset=page.offset,
            rows=rows,
        )

    async def timeline_extent(self) -> TimelineExtent:
        """How far the timeline's two axes reach, and the people and places its facts are about."""
        async with self._explained():
            extent = await self._timeline().extent()
        names = await self._views.names.table(people=extent.subjects, places=extent.places)
        return TimelineExtent(
            facts=extent.rows,
            first_recorded=extent.first_recorded,
            first_world=extent.first_world,
            last_world=extent.last_world,
            people=tuple(sorted((names.person(k) for k in extent.subjects), key=lambda p: p.name.casefold())),
            places=tuple(sorted((names.place(k) for k in extent.places), key=lambda p: p.name.casefold())),
        )

    async def timeline_diff(
        self,
        before: TimelinePoint,
        after: TimelinePoint,
        *,
        filters: TimelineFilters | None = None,
        limit: int = 500,
    ) -> TimelineDiff:
        """What changed from one point to the other: facts added, removed, and changed (another version,
        with a word diff of the text, or another status). At most `limit` of each kind are listed."""
        async with self._explained():
            found = await self._timeline().diff(
                point(before.world_at, before.recorded_at),
                point(after.world_at, after.recorded_at),
                slice_filter(filters, "all", None),
                limit=max(1, min(limit, MAX_DIFF_ROWS)),
            )
        facts = [f for row in found.rows for f in (row.before, row.after) if f is not None]
        views = dict(zip((id(f) for f in facts), await self._timeline_rows(facts, found.forgotten), strict=True))
        changes: list[TimelineChange] = []
        for row in found.rows:
            old = views[id(row.before)] if row.before is not None else None
            new = views[id(row.after)] if row.after is not None else None
            diff: tuple[DiffPiece, ...] = ()
            if isinstance(old, FactView) and isinstance(new, FactView) and old.content != new.content:
                diff = word_diff(old.content, new.content)
            changes.append(TimelineChange(kind=row.kind, before=old, after=new, diff=diff))
        return TimelineDiff(
            before=before,
            after=after,
            changes=tuple(changes),
            added=found.added,
            removed=found.removed,
            changed=found.changed,
        )

    async def _timeline_rows(
        self, facts: Sequence[Fact], forgotten: Mapping[int, ForgetInfo]
    ) -> tuple[TimelineRow, ...]:
        """View rows in the same order; a forgotten fact becomes a marker without any of its text."""
        people = {s for f in facts for s in f.subjects} | {f.speaker for f in facts if f.speaker}
        people |= {s for info in forgotten.values() for s in info.subjects}
        names = await self._names(people, {f.scope for f in facts})
        return tuple(_forgotten(f, forgotten[f.id], names) if f.id in forgotten else fact_view(f, names) for f in facts)
