"""The `MemoryProjector` protocol, the registry, and what every projector shares.

A projector is a background worker that reads turns (or facts) past its persisted watermark and
writes one side-index. `run()` is one tick: it does what is due and returns. Watermarks live in
SQL (projector_state), so a restart, a pause or a dropped side-index resumes from where it stood.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from app.config.settings import Settings
from app.memory.derived import Projections
from app.memory.embeddings import Embedder, EmbeddingIndex
from app.memory.history import History
from app.memory.pauses import PauseState, PauseSwitches
from app.memory.records import Turn
from app.runtime.llm import LLMClient

_log = logging.getLogger(__name__)

FLOOR_PERSIST_STEP = 1000  # turn ids a floor may run ahead of its persisted value


class MemoryProjector(Protocol):
    name: str

    async def run(self) -> None: ...


@dataclass
class ProjectorDeps:
    """Everything a projector may use; built once by the runtime."""

    history: History
    projections: Projections
    llm: LLMClient  # the background slot
    settings: Settings
    embedder: Embedder | None = None
    embeddings: EmbeddingIndex | None = None
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    # What the last tick did, per projector, for status displays and tests.
    reports: dict[str, str] = field(default_factory=dict)
    # The last scan for new turns per projector, reused to move its floor at the end of the tick.
    scans: dict[str, tuple[dict[str, tuple[int, int, int]], int, int]] = field(default_factory=dict)

    # Read once at the start of a runner tick and shared by its projectors (None outside a tick).
    tick_pause: PauseState | None = None
    tick_queued: frozenset[str] | None = None
    # Each projector's floor as this process last moved it; persisted lazily (a lower floor on disk
    # only means a longer scan after a restart, never a lost turn).
    floors: dict[str, int] = field(default_factory=dict)
    floors_saved: dict[str, int] = field(default_factory=dict)
    moved: dict[str, dict[str, int]] = field(default_factory=dict)
    passing: dict[str, set[str]] = field(default_factory=dict)
    floor_passers: set[str] = field(default_factory=set)
    pauses: PauseSwitches = field(init=False)

    def __post_init__(self) -> None:
        self.pauses = PauseSwitches(self.history.store)

    @property
    def display_name(self) -> str:
        return self.settings.familiar.display_name

    async def begin_tick(self) -> None:
        self.tick_pause, self.tick_queued = await self.projections.tick_state()

    def end_tick(self) -> None:
        self.tick_pause = self.tick_queued = None

    async def pause(self) -> PauseState:
        if self.tick_pause is not None:
            return self.tick_pause
        return await self.pauses.state()

    def moved_mark(self, name: str, place: str, value: int) -> None:
        """A projector moved a place's watermark this tick (so advance_floor need not read them back;
        a move it does not hear of only keeps the floor lower, which is safe)."""
        self.moved.setdefault(name, {})[place] = value

    def let_floor_pass(self, name: str, place: str) -> None:
        """This place's unread turns need not hold the floor: the projector only acts on the place
        again when it gets new turns (a reflection waits for enough of them), and new turns are
        always above the floor. Keeps a quiet channel from pinning every scan to its old turns."""
        self.floor_passers.add(name)
        self.passing.setdefault(name, set()).add(place)

    def queued(self, kind: str) -> None:
        """This tick queued work of this kind (so a later projector of the tick looks for it)."""
        if self.tick_queued is not None:
            self.tick_queued = self.tick_queued | {kind}

    def may_have_work(self, kind: str) -> bool:
        """False only when this tick's start saw no queued work of this kind."""
        return self.tick_queued is None or kind in self.tick_queued

    def report(self, name: str, text: str) -> None:
        self.reports[name] = text
        _log.info("%s: %s", name, text)

    def channel_scoped(self, place: str) -> bool:
        """Whether facts learnt at `place` stay in its channel (`[memory] channel_scope_guilds`)."""
        if not place.startswith("guild:") or "/" not in place:
            return False
        guild = place.removeprefix("guild:").split("/", 1)[0]
        return guild.isdigit() and int(guild) in self.settings.memory.channel_scope_guilds


class ProjectorBase:
    """What the built-in projectors share: their dependencies, and the pause check a tick starts with."""

    name: str

    def __init__(self, deps: ProjectorDeps) -> None:
        self._deps = deps

    async def _learning(self) -> PauseState | None:
        """The pause switches, or None when learning is paused everywhere (the tick then does nothing)."""
        pause = await self._deps.pause()
        return None if pause.paused("learning", "*") else pause

    async def _learnable_places(self, pause: PauseState) -> dict[str, tuple[int, int, int]]:
        """`places_with_new_turns`, less the places where learning is paused: their watermarks stay
        (and hold the floor), so their turns wait for the resume."""
        behind = await places_with_new_turns(self._deps, self.name)
        return {place: due for place, due in behind.items() if not pause.paused("learning", place)}


Factory = Callable[[ProjectorDeps], MemoryProjector]
_REGISTRY: dict[str, Factory] = {}


def register_projector(name: str, factory: Factory) -> None:
    """Make a projector available to `[providers.memory].projectors` (call at import time)."""
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"a projector name is letters, digits and underscores, not {name!r}")
    _REGISTRY[name] = factory


def projector_names() -> tuple[str, ...]:
    _load_builtins()
    return tuple(sorted(_REGISTRY))


def unknown_projectors(names: Sequence[str]) -> list[str]:
    known = set(projector_names())
    return [n for n in names if n not in known]


def create_projectors(names: Sequence[str], deps: ProjectorDeps) -> list[MemoryProjector]:
    _load_builtins()
    missing = unknown_projectors(names)
    if missing:
        raise ValueError(f"unknown projector {missing[0]!r} (known: {', '.join(projector_names())})")
    return [_REGISTRY[n](deps) for n in dict.fromkeys(names)]


def _load_builtins() -> None:
    from app.runtime.projectors import builtins  # noqa: F401  (registers the built-ins)


# -- shared queries ---------------------------------------------------------------------------------
async def places_with_new_turns(deps: ProjectorDeps, name: str) -> dict[str, tuple[int, int, int]]:
    """Per place: (watermark, newest turn id, how many live turns are past the watermark).

    One range scan from the projector's floor (the lowest place watermark still behind), so a tick
    reads only turns that arrived since, not the whole table. (`GROUP BY +place` keeps SQLite on
    the id range; grouping through the place index would walk every turn.) The scan is remembered
    for `advance_floor` at the end of the tick.
    """
    deps.moved.pop(name, None)  # only moves made after this scan count for advance_floor
    deps.passing.pop(name, None)
    marks = await deps.projections.watermarks(name)
    floor = max(marks.get("", 0), deps.floors.get(name, 0))
    # One statement, one snapshot: the newest id overall (the row whose place is NULL) and, per
    # place, the newest live turn past the floor and how many there are.
    rows = await deps.history.store.read_all(
        "SELECT NULL, MAX(id), 0 FROM turns UNION ALL"
        " SELECT place, MAX(id), COUNT(*) FROM turns WHERE id > ? AND superseded = 0 AND redacted = 0"
        " GROUP BY +place",
        (floor,),
    )
    top = max((int(r[1] or 0) for r in rows if r[0] is None), default=0)
    out: dict[str, tuple[int, int, int]] = {}
    for place, newest, count in rows:
        if place is None:
            continue
        mark = marks.get(str(place), floor)
        if int(newest) > mark:
            # The count above is from the floor. Every turn at or below the floor has been read (unless
            # this projector lets waiting places go past it, see `let_floor_pass`), so for a place
            # whose watermark is at or below it the count is exact; only a place further along needs
            # its own count.
            if mark > floor or (mark < floor and name in deps.floor_passers):
                count = await _count_after(deps, str(place), mark)
            out[str(place)] = (mark, int(newest), int(count))
    deps.scans[name] = (out, max(top, floor), floor)
    return out


async def _count_after(deps: ProjectorDeps, place: str, after: int) -> int:
    row = await deps.history.store.read_one(
        "SELECT COUNT(*) FROM turns WHERE place = ? AND id > ? AND superseded = 0 AND redacted = 0", (place, after)
    )
    return int(row[0]) if row else 0


async def advance_floor(deps: ProjectorDeps, name: str) -> None:
    """The floor is the lowest watermark among places that still have turns past theirs (paused
    places keep it low so their turns are not lost); with none behind, the newest turn id the
    tick's scan covered (a turn that arrived after it is above that, so it is never skipped)."""
    scan = deps.scans.pop(name, None)
    if scan is None:
        await places_with_new_turns(deps, name)
        scan = deps.scans.pop(name)
    behind, top, old_floor = scan
    moved = deps.moved.pop(name, {})
    passing = deps.passing.pop(name, set())
    still = [
        moved.get(place, mark)
        for place, (mark, newest, _count) in behind.items()
        if moved.get(place, mark) < newest and place not in passing
    ]
    floor = min(still) if still else top
    if floor == old_floor:
        return
    persisted = deps.floors_saved.get(name)
    if persisted is None:
        persisted = await deps.projections.watermark(name, "")
    deps.floors[name] = floor
    if floor < persisted or floor - persisted >= FLOOR_PERSIST_STEP:
        await deps.projections.set_watermark(name, floor, "")
        persisted = floor
    deps.floors_saved[name] = persisted


async def reset_floor(deps: ProjectorDeps, name: str, value: int = 0) -> None:
    """Lower the floor to `value` (a projection is being rebuilt): on disk first, then in memory."""
    current = max(await deps.projections.watermark(name, ""), deps.floors.get(name, 0))
    value = min(value, current)
    await deps.projections.set_watermark(name, value, "")
    deps.floors[name] = value
    deps.floors_saved[name] = value


def quote_turn(turn: Turn, *, with_id: bool = False) -> str:
    """One turn as one prompt line; its own line breaks are indented so a message cannot fake the
    line of another turn (or another speaker)."""
    head = f"[T#{turn.id}] " if with_id else ""
    return f"{head}{turn.author_name}: " + turn.content.replace("\r", "").replace("\n", "\n    ")


def quiet_for(deps: ProjectorDeps, turns: Sequence[Turn]) -> float:
    """Seconds since the newest of `turns`."""
    if not turns:
        return 0.0
    newest = max(t.created_at for t in turns)
    return (deps.clock() - newest).total_seconds()
