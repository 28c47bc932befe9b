"""What the memory workers read of the facts: the status log past their watermarks (a fact that
became active, a person's facts that changed), and the current facts a prompt shows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from app.memory.facts import Fact, FactBook
from app.memory.policy import visible_scopes
from app.memory.store import Store

_CURRENT = "f.superseded_at IS NULL"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """A row of the fact status log: `position` is where a worker's watermark stands after reading it."""

    position: int
    fact_id: int


@dataclass(frozen=True, slots=True)
class PersonChange:
    """A status-log row that changes what is current about a person in a scope."""

    position: int
    subject: str
    scope: str


class FactFeed:
    def __init__(self, store: Store, facts: FactBook) -> None:
        self._store = store
        self._facts = facts

    async def activations_after(self, position: int, limit: int) -> list[LogEntry]:
        """Facts that became active past `position` in the status log, in log order."""
        rows = await self._store.read_all(
            "SELECT rowid, fact_id FROM fact_status_log WHERE rowid > ? AND status = 'active' ORDER BY rowid LIMIT ?",
            (position, limit),
        )
        return [LogEntry(int(r[0]), int(r[1])) for r in rows]

    async def people_changed_after(self, position: int, limit: int) -> list[PersonChange]:
        """Per status-log row past `position` (at most `limit` rows' worth, one row per subject of the
        fact): whose facts changed, in which scope. A fact still pending changes nothing current."""
        rows = await self._store.read_all(
            "SELECT l.rowid, s.subject, f.scope FROM fact_status_log l JOIN facts f ON f.id = l.fact_id"
            " JOIN fact_subjects s ON s.fact_id = f.id WHERE l.rowid > ? AND l.status != 'pending'"
            " ORDER BY l.rowid LIMIT ?",
            (position, limit),
        )
        return [PersonChange(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    async def current_about(self, subject: str, scope: str, limit: int) -> list[tuple[int, str]]:
        """(id, content) of a person's newest `limit` active current facts in one scope, oldest first."""
        rows = await self._store.read_all(
            # From the person's facts, not the scope's (a busy server has thousands of those).
            "SELECT f.id, f.content FROM fact_subjects s CROSS JOIN facts f ON f.id = s.fact_id WHERE s.subject = ?"
            f" AND +f.scope = ? AND f.status = 'active' AND {_CURRENT} ORDER BY f.id DESC LIMIT ?",
            (subject, scope, limit),
        )
        return sorted((int(r[0]), str(r[1])) for r in rows)

    async def source_places(self, fact_ids: Sequence[int]) -> dict[int, frozenset[str]]:
        """Where each of these facts was said: the places of the messages it came from (a fact
        without sources, such as one the owner remembered, is left out)."""
        rows = await self._store.read_all(
            "SELECT s.fact_id, t.place FROM fact_sources s JOIN turns t ON t.id = s.turn_id"
            " WHERE s.fact_id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(set(fact_ids))),),
        )
        places: dict[int, set[str]] = {}
        for fact_id, place in rows:
            places.setdefault(int(fact_id), set()).add(str(place))
        return {fact_id: frozenset(found) for fact_id, found in places.items()}

    async def recent_at(self, place: str, limit: int) -> list[Fact]:
        """The newest `limit` active current facts that may be recalled at `place`, oldest first."""
        scopes = visible_scopes(place)
        rows = await self._store.read_all(
            f"SELECT f.id FROM facts f WHERE f.scope IN ({','.join('?' * len(scopes))}) AND f.status = 'active'"
            f" AND {_CURRENT} ORDER BY f.id DESC LIMIT ?",
            [*scopes, limit],
        )
        found = await self._facts.get_many([int(r[0]) for r in rows])
        return sorted(found.values(), key=lambda f: f.id)

    async def known_at(self, place: str, limit: int) -> list[str]:
        """The text of the newest `limit` current facts, active or awaiting the owner, that may be
        recalled at `place`, newest first: what a worker need not learn again there."""
        scopes = visible_scopes(place)
        rows = await self._store.read_all(
            f"SELECT f.content FROM facts f WHERE f.scope IN ({','.join('?' * len(scopes))})"
            f" AND f.status IN ('active', 'pending') AND {_CURRENT} ORDER BY f.id DESC LIMIT ?",
            [*scopes, limit],
        )
        return [str(r[0]) for r in rows]
