"""Facts: typed, staged, supersede-only, bi-temporal, scoped, forgettable. The records, their strict
validation, and the reads (`FactBook`): current truth, as-of slices, chains, the owner's queue.

Every rule is enforced in code: content rows are immutable (an edit inserts a new row and links the
old one: corrections.py), near-duplicates are suppressed through an index and only a narrow policy
auto-promotes (intake.py), tombstones block re-learning (tombstones.py), every owner operation
carries the revision it saw (decisions.py), and a forget erases everywhere (erasure.py).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, TypeGuard

import aiosqlite

from app.memory.errors import RevisionConflictError, StoreError
from app.memory.policy import (
    FACT_TYPES,
    dedup_key,
    normalize_subjects,
    place_problem,
    visible_scopes,
)
from app.memory.sql import in_chunks
from app.memory.store import Store

_log = logging.getLogger(__name__)

MAX_FACT_CHARS = 2000
_SUBJECT = re.compile(r"[a-z][a-z0-9_]{0,15}:[A-Za-z0-9_.\-]{1,64}")


def is_canonical_key(value: object) -> TypeGuard[str]:
    """A person's (or the familiar's) canonical key: discord:1234, familiar:self, local:owner."""
    return isinstance(value, str) and _SUBJECT.fullmatch(value) is not None


_ORIGINS = ("extraction", "remember", "edit", "import", "dreaming", "supersede")
COLUMNS = (
    "id, content, type, importance, confidence, subjects, speaker, scope, status, revision, origin,"
    " created_at, superseded_at, superseded_by, valid_from, valid_to, snoozed_until, sources"
)
FactStatus = Literal["pending", "active", "rejected", "archived", "forgotten"]


class FactError(StoreError):
    """A fact was refused; the message names the field and what is wrong with it."""


@dataclass(frozen=True, slots=True)
class NewFact:
    content: str
    type: str
    importance: int
    confidence: float
    subjects: tuple[str, ...]
    place: str  # where it was learned: dm:<id>, guild:<id>[/<channel id>], local, or familiar
    speaker: str | None = None
    source_turn_ids: tuple[int, ...] = ()
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    origin: str = "extraction"
    channel_scoped: bool = False  # the guild keeps facts per channel


@dataclass(frozen=True, slots=True)
class Fact:
    id: int
    content: str
    type: str
    importance: int
    confidence: float
    subjects: tuple[str, ...]
    speaker: str | None
    scope: str
    status: str
    revision: int
    origin: str
    created_at: datetime
    superseded_at: datetime | None
    superseded_by: int | None
    valid_from: datetime | None
    valid_to: datetime | None
    snoozed_until: datetime | None
    source_turn_ids: tuple[int, ...] = ()

    @property
    def is_head(self) -> bool:
        return self.superseded_at is None


@dataclass(frozen=True, slots=True)
class InsertOutcome:
    outcome: Literal["inserted", "duplicate", "tombstoned", "rejected_before", "sources_gone"]
    # the new row, the existing duplicate, the owner's earlier rejection, or None for a tombstone
    fact: Fact | None


@dataclass(frozen=True, slots=True)
class FactChain:
    """A fact's whole supersede chain, oldest first, and the head."""

    facts: tuple[Fact, ...]
    head_id: int


@dataclass(slots=True)
class Changes:
    """What an operation changed, so the caller can wake the right indexes."""

    facts_index: bool = False
    turns_index: bool = False
    fact_ids: list[int] = field(default_factory=list)


def iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise FactError("times must carry a time zone (ISO-8601 with an offset, e.g. 2024-05-01T12:00:00+00:00)")
    return moment.astimezone(UTC).isoformat()


def _dt(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def from_row(row: Sequence[Any]) -> Fact:
    return Fact(
        id=int(row[0]),
        content=str(row[1]),
        type=str(row[2]),
        importance=int(row[3]),
        confidence=float(row[4]),
        subjects=tuple(json.loads(row[5])),
        speaker=row[6],
        scope=str(row[7]),
        status=str(row[8]),
        revision=int(row[9]),
        origin=str(row[10]),
        created_at=datetime.fromisoformat(row[11]),
        superseded_at=_dt(row[12]),
        superseded_by=row[13],
        valid_from=_dt(row[14]),
        valid_to=_dt(row[15]),
        snoozed_until=_dt(row[16]),
        # The sources column is what fact_sources was filled from (by trigger) and never changes.
        source_turn_ids=tuple(sorted(int(t) for t in json.loads(row[17]))),
    )


# A fact with a forget scheduled is held out of every read until the forget is applied or undone.
_NOT_HELD = "f.id NOT IN (SELECT fact_id FROM forget_holds)"
# The status a fact row had at a recorded time (one parameter: that time), from its status log.
_STATUS_AT = (
    "(SELECT l.status FROM fact_status_log l WHERE l.fact_id = f.id AND l.at <= ?"
    " ORDER BY l.at DESC, l.rowid DESC LIMIT 1)"
)


def _status_then(fact: Fact, status: object) -> Fact:
    """`fact` as it stood at a recorded time: the status it had then (its own when the log is silent)."""
    return fact if status is None or status == fact.status else replace(fact, status=str(status))


def row_values(fact: NewFact, key: str, scope: str, status: str, at: str | None) -> tuple[Any, ...]:
    """The values of a new facts row, in the column order both inserts use."""
    return (
        fact.content,
        key,
        fact.type,
        fact.importance,
        fact.confidence,
        json.dumps(list(fact.subjects)),
        json.dumps(list(fact.source_turn_ids)),
        fact.speaker,
        scope,
        status,
        fact.origin,
        at,
        iso(fact.valid_from),
        iso(fact.valid_to),
    )


def scoped_key(content: str, subjects: Sequence[str], scope: str) -> str:
    """The near-duplicate key of a text about these subjects in one scope."""
    return dedup_key(content, (*subjects, f"@scope={scope}"))


def needs_live_source(fact: NewFact) -> bool:
    """Facts learnt from messages (not the owner's, not an import) need one of them still standing."""
    return fact.origin in ("extraction", "dreaming") and bool(fact.source_turn_ids)


def validate(new: NewFact) -> NewFact:
    """Strict validation: every problem names the field. Returns the fact with subjects normalized."""

    def fail(name: str, problem: str) -> None:
        raise FactError(f"fact field '{name}': {problem}")

    if not isinstance(new.content, str) or not new.content.strip():
        fail("content", "must be a non-empty sentence")
    try:
        new.content.encode("utf-8")
    except UnicodeEncodeError:
        fail("content", "contains invalid UTF-8 (a lone surrogate)")
    if len(new.content) > MAX_FACT_CHARS:
        fail("content", f"is too long ({len(new.content)} characters, at most {MAX_FACT_CHARS})")
    if new.type not in FACT_TYPES:
        fail("type", f"'{new.type}' is not one of {', '.join(FACT_TYPES)}")
    if isinstance(new.importance, bool) or not isinstance(new.importance, int) or not 1 <= new.importance <= 10:
        fail("importance", f"{new.importance!r} is not a whole number from 1 to 10")
    confidence = new.confidence
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or math.isnan(confidence)
        or not 0.0 <= confidence <= 1.0
    ):
        fail("confidence", f"{confidence!r} is not a number from 0 to 1")
    for subject in new.subjects:
        if not is_canonical_key(subject):
            fail("subjects", f"{subject!r} is not a canonical key like discord:1234 or familiar:self")
    if new.speaker is not None and not is_canonical_key(new.speaker):
        fail("speaker", f"{new.speaker!r} is not a canonical key")
    if (problem := place_problem(new.place)) is not None:
        fail("place", problem)
    if new.origin not in _ORIGINS:
        fail("origin", f"'{new.origin}' is not one of {', '.join(_ORIGINS)}")
    for name, moment in (("valid_from", new.valid_from), ("valid_to", new.valid_to)):
        if moment is not None and moment.tzinfo is None:
            fail(name, "must carry a time zone")
    if new.valid_from and new.valid_to and new.valid_to <= new.valid_from:
        fail("valid_to", "must be after valid_from")
    if any(isinstance(t, bool) or not isinstance(t, int) or t <= 0 for t in new.source_turn_ids):
        fail("source_turn_ids", "must be turn ids (positive whole numbers)")
    return NewFact(
        content=" ".join(new.content.split()),
        type=new.type,
        importance=new.importance,
        confidence=float(confidence),
        subjects=normalize_subjects(new.subjects),
        place=new.place,
        speaker=new.speaker,
        source_turn_ids=tuple(sorted(set(new.source_turn_ids))),
        valid_from=new.valid_from,
        valid_to=new.valid_to,
        origin=new.origin,
        channel_scoped=new.channel_scoped,
    )


class FactBook:
    """Reads of the fact tables of one store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # -- reads -----------------------------------------------------------------------------------
    async def get(self, fact_id: int) -> Fact | None:
        row = await self._store.read_one(f"SELECT {COLUMNS} FROM facts WHERE id = ?", (fact_id,))
        return from_row(row) if row is not None else None

    async def get_many(self, ids: Sequence[int]) -> dict[int, Fact]:
        """Facts by id, one query per 500; missing ids are left out."""
        out: dict[int, Fact] = {}
        for chunk, marks in in_chunks(ids):
            for row in await self._store.read_all(f"SELECT {COLUMNS} FROM facts WHERE id IN ({marks})", chunk):
                out[int(row[0])] = from_row(row)
        return out

    async def chain(self, fact_id: int) -> FactChain:
        """Walk the supersede chain both ways, detecting cycles."""
        start = await self.get(fact_id)
        if start is None:
            raise FactError(f"there is no fact {fact_id}")
        seen: dict[int, Fact] = {start.id: start}
        # forward to the head
        current = start
        while current.superseded_by is not None:
            if current.superseded_by in seen:
                raise StoreError(f"fact {fact_id}: the supersede chain has a cycle at {current.superseded_by}")
            nxt = await self.get(current.superseded_by)
            if nxt is None:
                break
            seen[nxt.id] = nxt
            current = nxt
        head_id = current.id
        # backwards from the head to the first version: every version that led to it (an undone edit too,
        # which points back at the version it gave way to)
        frontier = [head_id]
        walked: set[int] = set()  # the versions whose predecessors were looked up
        while frontier:
            walked.update(frontier)
            marks = ",".join("?" * len(frontier))
            rows = await self._store.read_all(f"SELECT id FROM facts WHERE superseded_by IN ({marks})", frontier)
            frontier = []
            for (older_id,) in rows:
                if older_id in walked:
                    continue
                if older_id not in seen:
                    older = await self.get(int(older_id))
                    if older is None:
                        continue
                    seen[older.id] = older
                # a version on the way forward from `fact_id` (the forward walk checked it for cycles) is
                # walked back through too: the versions before `fact_id` led to the head as well
                frontier.append(int(older_id))
        return FactChain(facts=tuple(sorted(seen.values(), key=lambda f: (f.created_at, f.id))), head_id=head_id)

    async def list_facts(
        self,
        *,
        status: str = "active",
        subject: str | None = None,
        world_at: datetime | None = None,
        recorded_at: datetime | None = None,
        limit: int = 200,
    ) -> list[Fact]:
        """Current truth by default; with world_at / recorded_at, the bi-temporal slice.

        Current truth: heads only, valid now. As of (W, S): rows recorded by S and not yet retired at
        S, valid in the world at W, whose status at S matches — retired rows included.
        """
        if status not in ("pending", "active", "rejected", "archived", "all"):
            raise FactError(f"status '{status}' is not pending, active, rejected, archived or all")
        limit = max(1, min(limit, 10_000))
        where: list[str] = ["f.status != 'forgotten'", _NOT_HELD]
        params: list[Any] = []
        join = ""
        as_of: str | None = None
        if subject is not None:
            join = " JOIN fact_subjects s ON s.fact_id = f.id AND s.subject = ?"
            params.append(subject)
        if world_at is None and recorded_at is None:
            now = iso(datetime.now(UTC))
            where.append(
                "f.superseded_at IS NULL AND (f.valid_from IS NULL OR f.valid_from <= ?)"
                " AND (f.valid_to IS NULL OR f.valid_to > ?)"
            )
            params += [now, now]
            if status != "all":
                where.append("f.status = ?")
                params.append(status)
        else:
            world = iso(world_at or datetime.now(UTC))
            recorded = as_of = iso(recorded_at or datetime.now(UTC))
            where.append("f.created_at <= ? AND (f.superseded_at IS NULL OR f.superseded_at > ?)")
            params += [recorded, recorded]
            where.append("(f.valid_from IS NULL OR f.valid_from <= ?) AND (f.valid_to IS NULL OR f.valid_to > ?)")
            params += [world, world]
            if status != "all":
                where.append(f"{_STATUS_AT} = ?")
                params += [recorded, status]
        columns = ", ".join("f." + c.strip() for c in COLUMNS.split(","))
        if as_of is not None:
            # The status each row had at the recorded time, not today's: a slice shows what was believed then.
            columns += f", {_STATUS_AT}"
            params = [as_of, *params]
        sql = (
            f"SELECT {columns} FROM facts f{join} WHERE {' AND '.join(where)}"
            " ORDER BY f.created_at DESC, f.id DESC LIMIT ?"
        )
        rows = await self._store.read_all(sql, [*params, limit])
        if as_of is None:
            return [from_row(r) for r in rows]
        return [_status_then(from_row(r), r[-1]) for r in rows]

    async def visible_ids(self, ids: Sequence[int], where: str, *, now: datetime | None = None) -> list[int]:
        """Of `ids`, those recall may use at `where`: active, current heads, in scope. Order kept."""
        scopes = visible_scopes(where)
        if not ids:
            return []
        moment = iso(now or datetime.now(UTC))
        found: set[int] = set()
        for chunk, marks in in_chunks(ids):
            scope_marks = ",".join("?" * len(scopes))
            rows = await self._store.read_all(
                f"SELECT id FROM facts WHERE id IN ({marks}) AND status = 'active' AND superseded_at IS NULL"
                f" AND (valid_to IS NULL OR valid_to > ?) AND (valid_from IS NULL OR valid_from <= ?)"
                f" AND scope IN ({scope_marks}) AND id NOT IN (SELECT fact_id FROM forget_holds)",
                [*chunk, moment, moment, *scopes],
            )
            found.update(int(r[0]) for r in rows)
        return [i for i in ids if i in found]

    async def pending(
        self,
        *,
        now: datetime | None = None,
        limit: int = 200,
        include_snoozed: bool = False,
        subject: str | None = None,
    ) -> list[Fact]:
        """The owner's queue: pending heads, oldest first; snoozed ones only with `include_snoozed`."""
        where, params = self._pending_where(now, snoozed=None if include_snoozed else False, subject=subject)
        rows = await self._store.read_all(
            f"SELECT {COLUMNS} FROM facts WHERE {where} ORDER BY id LIMIT ?", [*params, limit]
        )
        return [from_row(r) for r in rows]

    async def snoozed_count(self, *, now: datetime | None = None, subject: str | None = None) -> int:
        """Pending heads whose snooze has not ended (what the owner's queue leaves out)."""
        where, params = self._pending_where(now, snoozed=True, subject=subject)
        row = await self._store.read_one(f"SELECT COUNT(*) FROM facts WHERE {where}", params)
        return int(row[0]) if row else 0

    async def waiting_count(self, *, now: datetime | None = None, subject: str | None = None) -> int:
        """Pending heads in the queue now (not snoozed): the "N pending" of the owner's queue."""
        where, params = self._pending_where(now, snoozed=False, subject=subject)
        row = await self._store.read_one(f"SELECT COUNT(*) FROM facts WHERE {where}", params)
        return int(row[0]) if row else 0

    async def status_log(self, ids: Sequence[int]) -> dict[int, list[tuple[str, datetime]]]:
        """Each fact's statuses over recorded time, oldest first (what an as-of slice reads)."""
        out: dict[int, list[tuple[str, datetime]]] = {}
        for chunk, marks in in_chunks(ids):
            rows = await self._store.read_all(
                f"SELECT fact_id, status, at FROM fact_status_log WHERE fact_id IN ({marks}) ORDER BY at, rowid", chunk
            )
            for fact_id, status, at in rows:
                out.setdefault(int(fact_id), []).append((str(status), datetime.fromisoformat(at)))
        return out

    @staticmethod
    def _pending_where(now: datetime | None, *, snoozed: bool | None, subject: str | None) -> tuple[str, list[Any]]:
        clauses = ["status = 'pending'", "superseded_at IS NULL", "id NOT IN (SELECT fact_id FROM forget_holds)"]
        params: list[Any] = []
        if snoozed is not None:
            clauses.append("snoozed_until > ?" if snoozed else "(snoozed_until IS NULL OR snoozed_until <= ?)")
            params.append(iso(now or datetime.now(UTC)))
        if subject is not None:
            clauses.append("id IN (SELECT fact_id FROM fact_subjects WHERE subject = ?)")
            params.append(subject)
        return " AND ".join(clauses), params

    async def related_current(self, fact: Fact, limit: int = 5) -> list[Fact]:
        """Current facts in the same scope sharing a subject: what a pending item may duplicate or supersede."""
        if not fact.subjects:
            return []
        marks = ",".join("?" * len(fact.subjects))
        rows = await self._store.read_all(
            f"SELECT DISTINCT {', '.join('f.' + c.strip() for c in COLUMNS.split(','))} FROM facts f"
            f" JOIN fact_subjects s ON s.fact_id = f.id WHERE s.subject IN ({marks}) AND f.id != ?"
            f" AND f.superseded_at IS NULL AND f.status = 'active' AND f.scope = ? AND {_NOT_HELD}"
            " ORDER BY f.id DESC LIMIT ?",
            (*fact.subjects, fact.id, fact.scope, limit),
        )
        return [from_row(r) for r in rows]

    async def require(self, fact_id: int) -> Fact:
        """A fact just written in this store."""
        fact = await self.get(fact_id)
        if fact is None:  # pragma: no cover - just written in the same store
            raise FactError(f"fact {fact_id} vanished")
        return fact


# -- in a caller's write transaction ----------------------------------------------------------------
async def fact_in(conn: aiosqlite.Connection, where: str, params: Sequence[Any]) -> Fact | None:
    """The first fact row matching `where` (SQL after WHERE), read inside the caller's transaction."""
    async with conn.execute(f"SELECT {COLUMNS} FROM facts WHERE {where}", params) as cursor:
        row = await cursor.fetchone()
    return None if row is None else from_row(tuple(row))


async def current_in(conn: aiosqlite.Connection, fact_id: int, revision: int) -> Fact:
    """The fact an owner operation acts on: it must exist, still be at the revision the owner saw, and
    be a current head."""
    fact = await fact_in(conn, "id = ?", (fact_id,))
    if fact is None:
        raise FactError(f"there is no fact {fact_id}")
    if fact.revision != revision:
        raise RevisionConflictError(
            f"fact {fact_id} changed since you saw it (revision {revision}, now {fact.revision}); reload it"
        )
    if fact.superseded_at is not None:
        if fact.superseded_by is None:
            raise RevisionConflictError(f"fact {fact_id} was retired (its source message changed)")
        raise RevisionConflictError(f"fact {fact_id} was superseded by fact {fact.superseded_by}; act on that one")
    return fact


async def set_status_in(
    conn: aiosqlite.Connection, fact: Fact, status: str, moment: datetime, **extra: str | None
) -> None:
    """Move a fact to `status` (other columns in `extra`), bump its revision and log the new status."""
    sets = ", ".join(["status = ?", "revision = revision + 1", *(f"{k} = ?" for k in extra)])
    await conn.execute(f"UPDATE facts SET {sets} WHERE id = ?", (status, *extra.values(), fact.id))
    if status != fact.status:
        await conn.execute(
            "INSERT INTO fact_status_log (fact_id, status, at) VALUES (?, ?, ?)", (fact.id, status, iso(moment))
        )


async def insert_row_in(
    conn: aiosqlite.Connection, fact: NewFact, scope: str, key: str, status: str, moment: datetime
) -> int:
    """A new facts row (already validated and keyed); triggers record its subjects, sources and status."""
    cursor = await conn.execute(
        "INSERT INTO facts (content, dedup_key, type, importance, confidence, subjects, sources, speaker, scope,"
        " status, origin, created_at, valid_from, valid_to) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        row_values(fact, key, scope, status, iso(moment)),
    )
    return int(cursor.lastrowid or 0)


async def revisions_in(conn: aiosqlite.Connection, fact_ids: Sequence[int]) -> dict[int, int]:
    """Each fact's revision, read inside the caller's transaction."""
    async with conn.execute(
        f"SELECT id, revision FROM facts WHERE id IN ({','.join('?' * len(fact_ids))})", list(fact_ids)
    ) as cursor:
        return {int(r[0]): int(r[1]) for r in await cursor.fetchall()}


async def blank_in(conn: aiosqlite.Connection, fact_ids: Sequence[int], moment: datetime) -> None:
    """In the caller's transaction (a forget): erase these rows' text, subjects and speaker, keep the
    rows as `forgotten` (logged), and queue their fact index documents' removal."""
    ids = list(fact_ids)
    marks = ",".join("?" * len(ids))
    await conn.execute(
        f"UPDATE facts SET content = '', subjects = '[]', speaker = NULL, dedup_key = 'forgotten:' || id,"
        f" status = 'forgotten', revision = revision + 1 WHERE id IN ({marks})",
        ids,
    )
    await conn.executemany(
        "INSERT INTO fact_status_log (fact_id, status, at) VALUES (?, 'forgotten', ?)", [(i, iso(moment)) for i in ids]
    )
    await conn.execute(f"DELETE FROM fact_subjects WHERE fact_id IN ({marks})", ids)
    await conn.executemany("INSERT INTO index_outbox (name, doc_id) VALUES ('facts', ?)", [(i,) for i in ids])


async def source_turns_in(conn: aiosqlite.Connection, fact_ids: Sequence[int]) -> list[int]:
    """The turns these facts were learnt from, read inside the caller's transaction."""
    async with conn.execute(
        f"SELECT DISTINCT turn_id FROM fact_sources WHERE fact_id IN ({','.join('?' * len(fact_ids))})",
        list(fact_ids),
    ) as cursor:
        return [int(r[0]) for r in await cursor.fetchall()]
