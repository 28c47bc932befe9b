"""Who and where, by name: the people the familiar has met and the places it has heard in.

The window and the CLI show "alice" and "Lantern Club #general", not `discord:7001` and
`guild:500/501`. People's names come from the participants table (kept by a trigger on turns);
place names are written by the runtime when the Discord adapter sees them, so they are known
offline and in another process. Reads only touch SQL; nothing here knows Discord.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from app.memory.sql import in_chunks
from app.memory.store import Store


@dataclass(frozen=True, slots=True)
class Participant:
    canonical_key: str
    display_name: str
    is_self: bool
    first_seen: datetime
    last_seen: datetime


@dataclass(frozen=True, slots=True)
class PersonFacts:
    """A person and how many current facts are about them, with the scopes their dossiers cover."""

    participant: Participant
    current_facts: int
    dossier_scopes: tuple[str, ...]


class Catalog:
    def __init__(self, store: Store) -> None:
        self._store = store

    # -- people --------------------------------------------------------------------------------
    async def display_names(self, keys: Sequence[str]) -> dict[str, str]:
        """The last display name seen for each canonical key that has spoken (unknown keys are left out)."""
        wanted = sorted(set(keys))
        out: dict[str, str] = {}
        for chunk, marks in in_chunks(wanted):
            rows = await self._store.read_all(
                f"SELECT canonical_key, display_name FROM participants WHERE canonical_key IN ({marks})", chunk
            )
            out.update((str(r[0]), str(r[1])) for r in rows)
        return out

    async def people(self, limit: int = 1000) -> list[PersonFacts]:
        """Everyone who has spoken or is the subject of a current fact, most recently seen first."""
        rows = await self._store.read_all(
            "SELECT p.canonical_key, p.display_name, p.is_self, p.first_seen, p.last_seen,"
            " (SELECT COUNT(*) FROM fact_subjects s JOIN facts f ON f.id = s.fact_id"
            "   WHERE s.subject = p.canonical_key AND f.superseded_at IS NULL AND f.status = 'active'"
            "   AND f.id NOT IN (SELECT fact_id FROM forget_holds)),"
            " (SELECT json_group_array(scope) FROM people_dossiers d WHERE d.canonical_key = p.canonical_key)"
            " FROM participants p ORDER BY p.last_seen DESC LIMIT ?",
            (max(1, limit),),
        )
        return [
            PersonFacts(
                participant=Participant(
                    canonical_key=str(r[0]),
                    display_name=str(r[1]),
                    is_self=bool(r[2]),
                    first_seen=datetime.fromisoformat(r[3]),
                    last_seen=datetime.fromisoformat(r[4]),
                ),
                current_facts=int(r[5]),
                dossier_scopes=tuple(sorted(str(s) for s in json.loads(r[6] or "[]"))),
            )
            for r in rows
        ]

    async def dossiers_of(self, canonical_key: str) -> list[tuple[str, str, datetime]]:
        """(scope, text, updated_at) of every dossier written about a person."""
        rows = await self._store.read_all(
            "SELECT scope, text, updated_at FROM people_dossiers WHERE canonical_key = ? ORDER BY scope",
            (canonical_key,),
        )
        return [(str(r[0]), str(r[1]), datetime.fromisoformat(r[2])) for r in rows]

    # -- places --------------------------------------------------------------------------------
    async def place_names(self, places: Sequence[str]) -> dict[str, str]:
        """The stored name of each of these places (a guild's or a channel's own name) that is known."""
        wanted = sorted(set(places))
        out: dict[str, str] = {}
        for chunk, marks in in_chunks(wanted):
            rows = await self._store.read_all(
                f"SELECT place, name FROM places WHERE place IN ({marks}) AND name != ''", chunk
            )
            out.update((str(r[0]), str(r[1])) for r in rows)
        return out

    async def known_places(self) -> dict[str, str]:
        """Every place heard in (or named), with its name ('' when not seen yet)."""
        return {str(r[0]): str(r[1]) for r in await self._store.read_all("SELECT place, name FROM places")}

    async def name_places(self, names: Mapping[str, str]) -> int:
        """Record what places are called now (guild:<id> -> server name, guild:<id>/<channel> -> channel
        name). Only rows whose name changed are written; returns how many."""
        current = await self.place_names(list(names))
        changed = [(place, name) for place, name in names.items() if name and current.get(place) != name]
        if changed:
            await self._store.write(
                (
                    "INSERT INTO places (place, name) VALUES (?, ?)"
                    " ON CONFLICT (place) DO UPDATE SET name = excluded.name",
                    row,
                )
                for row in changed
            )
        return len(changed)
