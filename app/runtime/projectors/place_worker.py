"""The base of the memory workers that read each place's new turns, and the floor their scan starts from.

A `PlaceWorker`'s tick scans once for the places with live turns past their watermarks, hands each
place whose learning is not paused to `on_place()`, then moves its floor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.memory.pauses import PauseState
from app.runtime.projectors.base import ProjectorBase, ProjectorDeps

FLOOR_PERSIST_STEP = 1000  # turn ids a floor may run ahead of its persisted value


@dataclass(frozen=True, slots=True)
class Due:
    """A place with live turns past a worker's watermark there."""

    mark: int  # the worker's watermark at the place
    newest: int  # the place's newest live turn
    count: int  # how many live turns are past the watermark


@dataclass(frozen=True, slots=True)
class _Scan:
    behind: Mapping[str, Due]  # every place behind, paused ones too
    written: frozenset[str]  # places with a watermark of their own on disk
    top: int  # the newest turn id the scan covered
    floor: int  # the floor it started from


class Floor:
    """One worker's scan for places with new turns, and the floor the scan starts from.

    The floor is the lowest watermark among places that still have turns past theirs (paused places
    keep it low so their turns are not lost). It moves in memory every tick and is written down
    lazily (a lower floor on disk only means a longer scan after a restart, never a lost turn).
    """

    def __init__(self, name: str, deps: ProjectorDeps, *, lets_pass: bool = False) -> None:
        self._name = name
        self._deps = deps
        # Whether the worker may let places it is waiting on go below the floor (`let_pass`), and
        # whether it has, in this process.
        self._lets_pass = lets_pass
        self._has_let_pass = False
        self.value = 0  # the floor as this process last moved it
        self._saved: int | None = None  # the floor on disk, as this process last wrote or read it
        self._rewinds: int | None = None  # the worker's rewind count at the last scan
        self._scan: _Scan | None = None
        self._moved: dict[str, int] = {}
        self._passing: set[str] = set()

    async def places(self, pause: PauseState) -> dict[str, Due]:
        """The places with live turns past their watermark, less those where learning is paused:
        their watermarks stay (and hold the floor), so their turns wait for the resume.

        One range scan from the floor, so a tick reads only turns that arrived since, not the whole
        table. The scan is remembered for `advance()` at the end of the tick."""
        self._moved.clear()  # only moves made after this scan count for advance()
        self._passing.clear()
        marks = await self._deps.marks.marks(self._name)
        if self._rewinds is not None and marks.rewinds != self._rewinds:
            # Something it made was erased and its watermarks sent back (a forget, in this process
            # or another): the floor written down was lowered with them, the one in memory was not.
            self.value, self._saved = marks.floor, marks.floor
        self._rewinds = marks.rewinds
        floor = max(marks.floor, self.value)
        scan = await self._deps.turns.scan(floor)
        behind: dict[str, Due] = {}
        for found in scan.places:
            mark = marks.places.get(found.place, floor)
            if found.newest > mark:
                # The count is from the floor. Every turn at or below the floor has been read (unless
                # the worker has let waiting places go below it), so for a place whose watermark is at
                # or below it the count is exact; only a place further along needs its own count.
                count = found.count
                if mark > floor or (mark < floor and self._has_let_pass):
                    count = await self._deps.turns.count_after(found.place, mark)
                behind[found.place] = Due(mark, found.newest, count)
        self._scan = _Scan(behind, frozenset(marks.places), max(scan.top, floor), floor)
        return {place: due for place, due in behind.items() if not pause.paused("learning", place)}

    def written(self, place: str) -> bool:
        """Whether the place had a watermark of its own on disk at this tick's scan."""
        return self._scan is not None and place in self._scan.written

    def moved(self, place: str, value: int) -> None:
        """The worker moved a place's watermark this tick (so `advance()` need not read them back;
        a move it does not hear of only keeps the floor lower, which is safe)."""
        self._moved[place] = value

    def let_pass(self, place: str) -> None:
        """This place's unread turns need not hold the floor: the worker only acts on the place
        again when it gets new turns (a reflection waits for enough of them), and new turns are
        always above the floor. Keeps a quiet channel from pinning every scan to its old turns.
        Only for a worker built with `lets_pass`."""
        if not self._lets_pass:
            raise RuntimeError(f"{self._name} does not let places go below its floor")
        self._has_let_pass = True
        self._passing.add(place)

    async def advance(self) -> None:
        """At the end of a tick: the floor moves to the lowest watermark among the places still
        behind; with none behind, to the newest turn id the tick's scan covered (a turn that arrived
        after it is above that, so it is never skipped)."""
        if self._scan is None:
            await self.places(PauseState((), ()))
        scan, self._scan = self._scan, None
        assert scan is not None
        still = [
            self._moved.get(place, due.mark)
            for place, due in scan.behind.items()
            if self._moved.get(place, due.mark) < due.newest and place not in self._passing
        ]
        self._moved.clear()
        self._passing.clear()
        floor = min(still) if still else scan.top
        if floor == scan.floor:
            return
        saved = self._saved if self._saved is not None else await self._deps.marks.get(self._name)
        self.value = floor
        if floor < saved or floor - saved >= FLOOR_PERSIST_STEP:
            await self._deps.marks.set(self._name, floor)
            saved = floor
        self._saved = saved

    async def reset(self, value: int = 0) -> None:
        """Lower the floor to `value` (a projection is being rebuilt): on disk first, then in memory."""
        current = max(await self._deps.marks.get(self._name), self.value)
        value = min(value, current)
        await self._deps.marks.set(self._name, value)
        self.value = self._saved = value


class PlaceWorker(ProjectorBase):
    """A worker that reads each place's new turns past its watermark there.

    Its tick: `prepare()`, then `on_place()` for each place with new turns where learning is not
    paused, then the floor moves, then `finish()`."""

    lets_floor_pass = False  # see Floor.let_pass

    def __init__(self, deps: ProjectorDeps) -> None:
        super().__init__(deps)
        self.floor = Floor(self.name, deps, lets_pass=self.lets_floor_pass)

    async def tick(self, pause: PauseState) -> None:
        await self.prepare(pause)
        for place, due in (await self.floor.places(pause)).items():
            await self.on_place(place, due)
        await self.floor.advance()
        await self.finish(pause)

    async def prepare(self, pause: PauseState) -> None:
        """Before the scan (nothing by default)."""

    async def on_place(self, place: str, due: Due) -> None:
        raise NotImplementedError

    async def finish(self, pause: PauseState) -> None:
        """After the floor has moved (nothing by default)."""
