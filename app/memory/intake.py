"""How a fact gets in: every insert goes through the same rules, enforced in code.

Validation, the tombstones (what was forgotten is never learnt again), near-duplicates (through the
dedup index, not a scan), the owner's earlier rejections, the promotion policy (only a narrow kind
of learnt fact is active at once) and, for learnt facts, a source message that still stands.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from app.memory.facts import (
    COLUMNS,
    Changes,
    Fact,
    InsertOutcome,
    NewFact,
    from_row,
    iso,
    needs_live_source,
    row_values,
    scoped_key,
    validate,
)
from app.memory.policy import auto_promotes, fact_scope, scope_reaches, tombstone_hash
from app.memory.store import Store
from app.memory.tombstones import Tombstones
from app.memory.watermarks import WatermarkAdvance, advance_in


class FactIntake:
    """Inserts into the facts of one store."""

    def __init__(self, store: Store, tombstones: Tombstones) -> None:
        self._store = store
        self._tombstones = tombstones

    async def insert(self, new: NewFact, *, now: datetime | None = None) -> tuple[InsertOutcome, Changes]:
        """Insert through every rule: validation, tombstones, near-duplicates, promotion policy.

        The happy path is one conditional INSERT (triggers record subjects, sources and the status
        log), so the duplicate check and the write are atomic even beside another process.
        """
        (outcome,), changes = await self.insert_many([new], now=now)
        return outcome, changes

    async def insert_many(
        self,
        news: Sequence[NewFact],
        *,
        now: datetime | None = None,
        advance: Sequence[WatermarkAdvance] = (),
    ) -> tuple[list[InsertOutcome], Changes]:
        """Insert a batch (an extraction's facts) in one transaction, each through the same rules as
        `insert`; a later fact of the batch duplicating an earlier one is a duplicate. Every fact
        is validated before anything is written: one invalid fact writes none. The watermarks of
        `advance` move in the same transaction (a worker's watermark moves with the facts it wrote)."""
        facts = [validate(new) for new in news]
        moment = now or datetime.now(UTC)
        at = iso(moment)
        secret = await self._tombstones.secret()
        source_places = await self._store.places_of(sorted({t for f in facts for t in f.source_turn_ids}))
        plans = []
        for fact in facts:
            scope = fact_scope(fact.place, channel_scoped=fact.channel_scoped)
            if any(not scope_reaches(scope, source_places.get(t, scope)) for t in fact.source_turn_ids):
                # Its sources disagree about where it was said (another server, a DM): nobody can tell who
                # may hear it, so it is kept for the owner to see and never recalled.
                scope = "quarantine"
            key = scoped_key(fact.content, fact.subjects, scope)
            hashed = tombstone_hash(secret, fact.content, fact.subjects)
            owner = fact.origin in ("remember", "import")
            if owner:
                status = "active"
            else:
                status = "active" if auto_promotes(fact.type, fact.confidence, fact.content) else "pending"
            blocking = "('pending', 'active')" if owner else "('pending', 'active', 'rejected')"
            plans.append((fact, scope, key, hashed, status, blocking))
        # Learnt facts need a source that still stands, checked in the same transaction as the insert:
        # a message deleted (or edited) while the model read it must not come back as a fact.
        ids: list[int | None] = []
        if plans or advance:
            async with self._store.transaction() as conn:
                for fact, scope, key, hashed, status, blocking in plans:
                    # execute_fetchall: one trip to SQLite's thread (execute, fetch, close take three).
                    rows = await conn.execute_fetchall(
                        "INSERT INTO facts (content, dedup_key, type, importance, confidence, subjects, sources,"
                        " speaker, scope, status, origin, created_at, valid_from, valid_to)"
                        " SELECT ?,?,?,?,?,?,?,?,?,?,?,?,?,?"
                        " WHERE NOT EXISTS (SELECT 1 FROM tombstones WHERE hash = ? AND lifted_at IS NULL)"
                        f" AND NOT EXISTS (SELECT 1 FROM facts WHERE dedup_key = ? AND superseded_at IS NULL"
                        f" AND status IN {blocking})"
                        " AND (? = 0 OR EXISTS (SELECT 1 FROM json_each(?) j JOIN turns t ON t.id = j.value"
                        "   WHERE t.redacted = 0 AND t.superseded = 0)) RETURNING id",
                        (
                            *row_values(fact, key, scope, status, at),
                            hashed,
                            key,
                            int(needs_live_source(fact)),
                            json.dumps(list(fact.source_turn_ids)),
                        ),
                    )
                    found = list(rows)
                    ids.append(int(found[0][0]) if found else None)
                await advance_in(conn, advance)
        outcomes: list[InsertOutcome] = []
        changes = Changes()
        for (fact, scope, key, hashed, status, blocking), fact_id in zip(plans, ids, strict=True):
            if fact_id is None:
                if needs_live_source(fact) and not await self._has_live_source(fact.source_turn_ids):
                    outcomes.append(InsertOutcome("sources_gone", None))
                else:
                    outcomes.append(await self._why_not_inserted(hashed, key, blocking))
                continue
            changes.facts_index = True
            changes.fact_ids.append(fact_id)
            outcomes.append(
                InsertOutcome(
                    "inserted",
                    Fact(
                        id=fact_id,
                        content=fact.content,
                        type=fact.type,
                        importance=fact.importance,
                        confidence=fact.confidence,
                        subjects=fact.subjects,
                        speaker=fact.speaker,
                        scope=scope,
                        status=status,
                        revision=0,
                        origin=fact.origin,
                        created_at=datetime.fromisoformat(at or ""),
                        superseded_at=None,
                        superseded_by=None,
                        valid_from=_again(fact.valid_from),
                        valid_to=_again(fact.valid_to),
                        snoozed_until=None,
                        source_turn_ids=fact.source_turn_ids,
                    ),
                )
            )
        return outcomes, changes

    async def _has_live_source(self, turn_ids: Sequence[int]) -> bool:
        marks = ",".join("?" * len(turn_ids))
        row = await self._store.read_one(
            f"SELECT 1 FROM turns WHERE id IN ({marks}) AND redacted = 0 AND superseded = 0 LIMIT 1", list(turn_ids)
        )
        return row is not None

    async def _why_not_inserted(self, hashed: str, key: str, blocking: str) -> InsertOutcome:
        if await self._store.read_one("SELECT 1 FROM tombstones WHERE hash = ? AND lifted_at IS NULL", (hashed,)):
            return InsertOutcome("tombstoned", None)
        row = await self._store.read_one(
            f"SELECT {COLUMNS} FROM facts WHERE dedup_key = ? AND superseded_at IS NULL AND status IN {blocking}"
            " ORDER BY status = 'rejected' LIMIT 1",
            (key,),
        )
        if row is None:  # pragma: no cover - the conflicting row vanished in between; report it as known
            return InsertOutcome("duplicate", None)
        found = from_row(row)
        # A rejection is a durable owner decision: the familiar does not propose it again.
        return InsertOutcome("rejected_before" if found.status == "rejected" else "duplicate", found)


def _again(moment: datetime | None) -> datetime | None:
    """A time as the store gives it back (UTC)."""
    text = iso(moment)
    return datetime.fromisoformat(text) if text else None
