"""Projections of the conversation (summaries, dossiers, reflections). (The workers' watermarks are
in watermarks.py, their queue in work_queue.py.)

Every projection here can be dropped and rebuilt from turns and facts. (The pause switches are in
pauses.py, the replies' explanations in explanations.py: owner-facing records, not projections.) No
Qt, no Discord, no LLM: the projectors in app/runtime decide what to write; this module only stores
it, one explicit transaction per change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiosqlite

from app.memory.pauses import PauseState, pause_state_of
from app.memory.store import Store, now_iso
from app.memory.watermarks import WatermarkAdvance, advance_in, rewind_in

REFLECTION_WORKER = "reflection"  # the worker the reflections are written by (its watermark moves with them)


@dataclass(frozen=True, slots=True)
class Summary:
    place: str
    text: str
    last_turn_id: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Dossier:
    canonical_key: str
    scope: str
    text: str
    last_fact_id: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Reflection:
    id: int
    place: str
    text: str
    cited_turn_ids: tuple[int, ...]
    cited_fact_ids: tuple[int, ...]
    created_at: datetime
    stale: bool  # a cited fact has been retired since


class Projections:
    """SQL access for the projectors and the context layers."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # -- summaries -----------------------------------------------------------------------------
    async def summary(self, place: str) -> Summary | None:
        row = await self._store.read_one(
            "SELECT place, text, last_turn_id, updated_at FROM summaries WHERE place = ?", (place,)
        )
        if row is None:
            return None
        return Summary(str(row[0]), str(row[1]), int(row[2]), datetime.fromisoformat(row[3]))

    async def save_summary(
        self,
        place: str,
        text: str,
        last_turn_id: int,
        *,
        watermark_name: str,
        shown_turn_ids: Sequence[int] = (),
        based_on: int | None = None,
    ) -> bool:
        """The summary and its watermark move together, in one transaction, and only if what the
        model was shown still stands: none of `shown_turn_ids` was deleted meanwhile, and the summary
        it folded (`based_on`, its last_turn_id, or None for none) is still the one stored. Otherwise
        nothing is written (the text may quote a deleted message) and False is returned."""
        async with self._store.transaction() as conn:
            if shown_turn_ids and await _any_gone_turn(conn, shown_turn_ids):
                return False
            async with conn.execute("SELECT last_turn_id FROM summaries WHERE place = ?", (place,)) as cursor:
                row = await cursor.fetchone()
            if (None if row is None else int(row[0])) != based_on:
                return False
            await conn.execute(
                "INSERT INTO summaries (place, text, last_turn_id, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (place) DO UPDATE SET text = excluded.text,"
                " last_turn_id = excluded.last_turn_id, updated_at = excluded.updated_at",
                (place, text, last_turn_id, now_iso()),
            )
            await advance_in(conn, [WatermarkAdvance(watermark_name, last_turn_id, place)])
        return True

    async def places_without_summary(self, watermark_name: str) -> list[str]:
        """Places whose summary worker has read turns (a watermark above 0) but that have no summary
        row: the row was dropped (the table emptied to rebuild it, or a deleted message took it)."""
        rows = await self._store.read_all(
            "SELECT p.key FROM projector_state p WHERE p.name = ? AND p.key != '' AND p.key NOT GLOB '#*'"
            " AND p.watermark > 0 AND NOT EXISTS (SELECT 1 FROM summaries s WHERE s.place = p.key)",
            (watermark_name,),
        )
        return [str(r[0]) for r in rows]

    # -- dossiers ------------------------------------------------------------------------------
    async def dossier(self, canonical_key: str, scope: str) -> Dossier | None:
        row = await self._store.read_one(
            "SELECT canonical_key, scope, text, last_fact_id, updated_at FROM people_dossiers"
            " WHERE canonical_key = ? AND scope = ?",
            (canonical_key, scope),
        )
        return _dossier(row) if row else None

    async def dossiers(self, keys: Sequence[str], scopes: Sequence[str]) -> list[Dossier]:
        if not keys or not scopes:
            return []
        k = ",".join("?" * len(keys))
        s = ",".join("?" * len(scopes))
        rows = await self._store.read_all(
            "SELECT canonical_key, scope, text, last_fact_id, updated_at FROM people_dossiers"
            f" WHERE canonical_key IN ({k}) AND scope IN ({s}) ORDER BY canonical_key, scope",
            [*keys, *scopes],
        )
        return [_dossier(r) for r in rows]

    async def save_dossier(
        self, canonical_key: str, scope: str, text: str, last_fact_id: int, shown_fact_ids: Sequence[int] = ()
    ) -> bool:
        """Write a dossier, only if every fact it was written from is still active and current (a
        fact forgotten or retired while the model wrote must not come back through the dossier)."""
        async with self._store.transaction() as conn:
            if shown_fact_ids and await _any_gone_fact(conn, shown_fact_ids):
                return False
            await conn.execute(
                "INSERT INTO people_dossiers (canonical_key, scope, text, last_fact_id, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (canonical_key, scope) DO UPDATE SET"
                " text = excluded.text, last_fact_id = excluded.last_fact_id, updated_at = excluded.updated_at",
                (canonical_key, scope, text, last_fact_id, now_iso()),
            )
        return True

    async def pairs_without_dossier(self, limit: int) -> list[tuple[str, str]]:
        """(person, scope) pairs with active current facts but no dossier (one was dropped by a
        supersede or a forget, or never written), at most `limit`."""
        rows = await self._store.read_all(
            "SELECT DISTINCT s.subject, f.scope FROM facts f JOIN fact_subjects s ON s.fact_id = f.id"
            " WHERE f.status = 'active' AND f.superseded_at IS NULL AND NOT EXISTS (SELECT 1 FROM people_dossiers d"
            "   WHERE d.canonical_key = s.subject AND d.scope = f.scope) LIMIT ?",
            (limit,),
        )
        return [(str(r[0]), str(r[1])) for r in rows]

    async def drop_dossiers(self, canonical_keys: Sequence[str], scope: str | None = None) -> int:
        """Drop the dossiers of these people (in one scope, or in all), to be rebuilt clean."""
        if not canonical_keys:
            return 0
        marks = ",".join("?" * len(canonical_keys))
        where = f"canonical_key IN ({marks})" + ("" if scope is None else " AND scope = ?")
        params = [*canonical_keys] + ([] if scope is None else [scope])
        async with self._store.transaction() as conn:
            cursor = await conn.execute(f"DELETE FROM people_dossiers WHERE {where}", params)
            return max(cursor.rowcount, 0)

    # -- reflections ---------------------------------------------------------------------------
    async def add_reflections(
        self,
        place: str,
        items: Sequence[tuple[str, Sequence[int], Sequence[int]]],
        *,
        last_turn_id: int,
        last_fact_id: int,
        watermark_name: str,
    ) -> int:
        """Store (text, cited turn ids, cited fact ids) rows and advance the watermark, together. A
        reflection citing a message deleted, or a fact forgotten or retired, while the model wrote is
        not stored (its text may quote it). Returns how many were stored."""
        now = now_iso()
        stored = 0
        async with self._store.transaction() as conn:
            for text, turns, facts in items:
                if (turns and await _any_gone_turn(conn, turns)) or (facts and await _any_gone_fact(conn, facts)):
                    continue
                await conn.execute(
                    "INSERT INTO reflections (place, text, cited_turn_ids, cited_fact_ids, last_turn_id,"
                    " last_fact_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (place, text, json.dumps(list(turns)), json.dumps(list(facts)), last_turn_id, last_fact_id, now),
                )
                stored += 1
            await advance_in(conn, [WatermarkAdvance(watermark_name, last_turn_id, place)])
        return stored

    async def has_reflections(self) -> bool:
        return await self._store.read_one("SELECT 1 FROM reflections LIMIT 1") is not None

    async def reflections(self, places: Sequence[str], limit: int) -> list[Reflection]:
        """The newest reflections of these places, newest first, each flagged stale when a fact it
        cites has been retired (superseded, archived, rejected or forgotten) since."""
        if not places or limit <= 0:
            return []
        marks = ",".join("?" * len(places))
        rows = await self._store.read_all(
            "SELECT r.id, r.place, r.text, r.cited_turn_ids, r.cited_fact_ids, r.created_at,"
            " EXISTS (SELECT 1 FROM json_each(r.cited_fact_ids) j JOIN facts f ON f.id = j.value"
            "   WHERE f.superseded_at IS NOT NULL OR f.status != 'active')"
            f" FROM reflections r WHERE r.place IN ({marks}) ORDER BY r.id DESC LIMIT ?",
            [*places, limit],
        )
        return [
            Reflection(
                id=int(r[0]),
                place=str(r[1]),
                text=str(r[2]),
                cited_turn_ids=tuple(int(x) for x in json.loads(r[3])),
                cited_fact_ids=tuple(int(x) for x in json.loads(r[4])),
                created_at=datetime.fromisoformat(r[5]),
                stale=bool(r[6]),
            )
            for r in rows
        ]

    # -- the memory tick ----------------------------------------------------------------------
    async def tick_state(self) -> tuple[PauseState, frozenset[str]]:
        """The pause switches and the kinds of work queued, in one read (once per memory tick)."""
        rows = await self._store.read_all(
            "SELECT kind, place FROM memory_pause UNION ALL"
            " SELECT DISTINCT kind, NULL FROM memory_work WHERE status = 'queued'"
        )
        queued = frozenset(str(r[0]) for r in rows if r[1] is None)
        return pause_state_of([r for r in rows if r[1] is not None]), queued


async def _any_gone_turn(conn: aiosqlite.Connection, turn_ids: Sequence[int]) -> bool:
    marks = ",".join("?" * len(turn_ids))
    async with conn.execute(
        f"SELECT COUNT(*) FROM turns WHERE id IN ({marks}) AND redacted = 0 AND superseded = 0", list(turn_ids)
    ) as cursor:
        row = await cursor.fetchone()
    return int(row[0] if row else 0) < len(set(turn_ids))


async def _any_gone_fact(conn: aiosqlite.Connection, fact_ids: Sequence[int]) -> bool:
    marks = ",".join("?" * len(fact_ids))
    async with conn.execute(
        f"SELECT COUNT(*) FROM facts WHERE id IN ({marks}) AND status = 'active' AND superseded_at IS NULL",
        list(fact_ids),
    ) as cursor:
        row = await cursor.fetchone()
    return int(row[0] if row else 0) < len(set(fact_ids))


async def drop_dossiers_in(conn: aiosqlite.Connection, canonical_keys: Sequence[str]) -> int:
    """In the caller's transaction (a forget): drop every dossier of these people, to be rebuilt from
    what is left. Returns how many."""
    if not canonical_keys:
        return 0
    marks = ",".join("?" * len(canonical_keys))
    cursor = await conn.execute(f"DELETE FROM people_dossiers WHERE canonical_key IN ({marks})", list(canonical_keys))
    return max(cursor.rowcount, 0)


async def drop_reflections_citing(
    conn: aiosqlite.Connection, *, fact_ids: Sequence[int] = (), turn_ids: Sequence[int] = ()
) -> int:
    """Inside the caller's transaction: drop the reflections citing any of these facts or turns (their
    text may quote them), and send the reflection worker back, at each place that lost one, to where
    the reflections still standing there end, so it reflects again on what remains. Returns how many
    were dropped."""
    dropped: list[tuple[str, int]] = []
    for column, ids in (("cited_fact_ids", fact_ids), ("cited_turn_ids", turn_ids)):
        if ids:
            dropped += [
                (str(r[0]), int(r[1]))
                for r in await conn.execute_fetchall(
                    f"DELETE FROM reflections WHERE EXISTS (SELECT 1 FROM json_each(reflections.{column}) j"
                    " WHERE j.value IN (SELECT value FROM json_each(?))) RETURNING place, last_turn_id",
                    (json.dumps(sorted(set(ids))),),
                )
            ]
    lowest: dict[str, int] = {}
    for place, last_turn_id in dropped:
        lowest[place] = min(last_turn_id, lowest.get(place, last_turn_id))
    for place, first_lost in sorted(lowest.items()):
        rows = await conn.execute_fetchall(
            "SELECT COALESCE(MAX(last_turn_id), 0) FROM reflections WHERE place = ? AND last_turn_id < ?",
            (place, first_lost),
        )
        await rewind_in(conn, REFLECTION_WORKER, place, int(next(iter(rows))[0]))
    return len(dropped)


async def drop_summaries_covering(conn: aiosqlite.Connection, turn_ids: Sequence[int]) -> int:
    """In the caller's transaction: drop the summaries that folded any of these turns in (a summary
    of a place covers its turns up to its last_turn_id); the summary worker rebuilds them."""
    if not turn_ids:
        return 0
    async with conn.execute(
        f"SELECT place, MIN(id) FROM turns WHERE id IN ({','.join('?' * len(turn_ids))}) GROUP BY place",
        list(turn_ids),
    ) as cursor:
        spans = [(str(r[0]), int(r[1])) for r in await cursor.fetchall()]
    dropped = 0
    for place, first in spans:
        cursor = await conn.execute("DELETE FROM summaries WHERE place = ? AND last_turn_id >= ?", (place, first))
        dropped += max(cursor.rowcount, 0)
    return dropped


def _dossier(row: Sequence[Any]) -> Dossier:
    return Dossier(str(row[0]), str(row[1]), str(row[2]), int(row[3]), datetime.fromisoformat(row[4]))


async def change_counters(store: Store) -> dict[str, int]:
    """Per-table change counters (bumped by triggers on every write, from any process)."""
    rows = await store.read_all("SELECT name, value FROM change_counters")
    return {str(r[0]): int(r[1]) for r in rows}


async def change_marks(store: Store) -> dict[str, int]:
    """`change_counters` plus the newest turn id as "turns", in one read: what a watcher compares to
    tell, from any process, which kinds of memory changed since it last looked."""
    rows = await store.read_all(
        "SELECT name, value FROM change_counters UNION ALL SELECT 'turns', COALESCE(MAX(id), 0) FROM turns"
    )
    return {str(r[0]): int(r[1]) for r in rows}
