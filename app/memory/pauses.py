"""The pause switches: learning (the memory workers) and recall (the memory layers of a reply), each
paused everywhere ("*"), in a server (and so every channel of it), or in one channel or DM. They are
owner decisions, kept across restarts; nothing is lost while one holds (work resumes from the
workers' watermarks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from app.memory.errors import StoreError
from app.memory.policy import place_problem
from app.memory.store import Store

PauseKind = Literal["learning", "recall"]
EVERYWHERE = "*"


@dataclass(frozen=True, slots=True)
class PauseState:
    learning: tuple[str, ...]  # "*" = everywhere, else places
    recall: tuple[str, ...]

    def paused(self, kind: PauseKind, place: str) -> bool:
        """Paused everywhere, in this place, or in the guild a channel belongs to."""
        chosen = self.learning if kind == "learning" else self.recall
        return EVERYWHERE in chosen or place in chosen or place.split("/", 1)[0] in chosen


def pause_state_of(rows: Sequence[Sequence[Any]]) -> PauseState:
    """The switches from memory_pause (kind, place) rows, places sorted."""
    learning = tuple(sorted(str(r[1]) for r in rows if r[0] == "learning"))
    recall = tuple(sorted(str(r[1]) for r in rows if r[0] == "recall"))
    return PauseState(learning=learning, recall=recall)


class PauseSwitches:
    """The memory_pause table of one store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def state(self) -> PauseState:
        return pause_state_of(await self._store.read_all("SELECT kind, place FROM memory_pause"))

    async def set(self, kind: PauseKind, place: str, paused: bool) -> PauseState:
        """Pause or resume learning or recall, everywhere (place "*") or in one place."""
        if kind not in ("learning", "recall"):
            raise StoreError(f"cannot pause {kind!r}: choose learning or recall")
        if place != EVERYWHERE and (problem := place_problem(place)) is not None:
            raise StoreError(f"{problem} (or * for everywhere)")
        if paused:
            sql = "INSERT OR IGNORE INTO memory_pause (kind, place, since) VALUES (?, ?, ?)"
            await self._store.write([(sql, (kind, place, datetime.now(UTC).isoformat()))])
        else:
            await self._store.write([("DELETE FROM memory_pause WHERE kind = ? AND place = ?", (kind, place))])
        return await self.state()
