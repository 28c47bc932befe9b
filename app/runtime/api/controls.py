"""`facade.controls`: the learning and recall switches, everywhere, per server and per channel, by
name, with what each place inherits; and the memory workers' state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from app.memory.catalog import Catalog
from app.memory.derived import Projections
from app.memory.errors import StoreError
from app.memory.pauses import EVERYWHERE, PauseState, PauseSwitches
from app.memory.work_queue import WorkQueue
from app.runtime.api.views import FailedWork, PauseKind, PauseView, PlaceRef, PlaceSwitches, Switch, WorkersView
from app.runtime.changes import ChangeBroadcaster
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind
from app.runtime.names import Names, NameTable

_NOT_SWITCHABLE = frozenset({"familiar", "quarantine"})


def _switch(chosen: tuple[str, ...], place: str) -> Switch:
    if place in chosen:
        return Switch(True, "here")
    parent = place.split("/", 1)[0]
    if parent != place and parent in chosen:
        return Switch(True, "server")
    if EVERYWHERE in chosen:
        return Switch(True, "everywhere")
    return Switch(False, None)


def _order(place: PlaceRef) -> tuple[object, ...]:
    """Local chat, then DMs by name, then each server followed by its channels by name."""
    if place.key == "local":
        return (0,)
    if place.key.startswith("dm:"):
        return (1, place.name.casefold(), place.key)
    server = place.parent or place.key
    server_name = place.name.split(" #", 1)[0] if place.parent else place.name
    return (2, server_name.casefold(), server, place.parent is not None, place.name.casefold(), place.key)


def pause_view(state: PauseState, places: set[str], names: NameTable) -> PauseView:
    keys = {p for p in places | set(state.learning) | set(state.recall) if p != EVERYWHERE}
    keys |= {p.split("/", 1)[0] for p in keys if p.startswith("guild:") and "/" in p}
    refs = sorted((names.place(k) for k in keys - _NOT_SWITCHABLE), key=_order)
    return PauseView(
        learning=state.learning,
        recall=state.recall,
        places=tuple(
            PlaceSwitches(place=ref, learning=_switch(state.learning, ref.key), recall=_switch(state.recall, ref.key))
            for ref in refs
        ),
    )


class ControlsService:
    def __init__(
        self,
        pauses: PauseSwitches,
        projections: Projections,
        work_queue: WorkQueue,
        catalog: Catalog,
        names: Names,
        changes: ChangeBroadcaster,
        set_paused: Callable[[PauseKind, str, bool], Awaitable[PauseState]],
        projector_names: Callable[[], tuple[str, ...]],
    ) -> None:
        self._pauses = pauses
        self._projections = projections
        self._work_queue = work_queue
        self._catalog = catalog
        self._names = names
        self._changes = changes
        self._set_paused = set_paused
        self._projector_names = projector_names

    async def state(self) -> PauseView:
        """Every switch, and how each known place is affected (paused here, by its server, everywhere)."""
        try:
            state = await self._pauses.state()
            places = set(await self._catalog.known_places())
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        return await self._view(state, places)

    async def _view(self, state: PauseState, places: set[str]) -> PauseView:
        keys = places | set(state.learning) | set(state.recall)
        return pause_view(state, places, await self._names.table(places=keys - {EVERYWHERE}))

    async def pause(self, kind: PauseKind, where: str = EVERYWHERE, *, initiator: object | None = None) -> PauseView:
        """Pause learning or recall everywhere ("*") or in one place; kept across restarts."""
        return await self._switch(kind, where, True, initiator)

    async def resume(self, kind: PauseKind, where: str = EVERYWHERE, *, initiator: object | None = None) -> PauseView:
        return await self._switch(kind, where, False, initiator)

    async def _switch(self, kind: PauseKind, where: str, paused: bool, initiator: object | None) -> PauseView:
        state = await self._set_paused(kind, where, paused)
        await self._changes.wrote([ChangeKind.PAUSE], initiator)
        try:
            places = set(await self._catalog.known_places())
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        return await self._view(state, places)

    async def workers(self) -> WorkersView:
        """Which memory workers run, the switches, and queued and failed work."""
        try:
            failed = await self._work_queue.work(status="failed")
            queued = await self._work_queue.work(status="queued")
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        return WorkersView(
            projectors=self._projector_names(),
            pause=await self.state(),
            queued=len(queued),
            failed=tuple(
                FailedWork(
                    id=w.id, kind=w.kind, turn_id=w.turn_id, place=w.place, attempts=w.attempts, last_error=w.last_error
                )
                for w in failed
            ),
        )
