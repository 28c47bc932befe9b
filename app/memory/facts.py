"""Facts and their lifecycle: typed, staged, supersede-only, bi-temporal, scoped, forgettable.

Every rule here is enforced in code: content rows are immutable (an edit inserts a new row and links
the old one), near-duplicates are suppressed through an index, only a narrow policy auto-promotes,
tombstones block re-learning, and every owner operation carries the revision it saw.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, TypeGuard

import aiosqlite

from app.memory.derived import drop_reflections_citing
from app.memory.errors import RevisionConflictError, StoreError
from app.memory.policy import (
    FACT_TYPES,
    auto_promotes,
    dedup_key,
    fact_scope,
    normalize_subjects,
    place_problem,
    scope_reaches,
    tombstone_hash,
    visible_scopes,
)
from app.memory.quoting import FAMILIAR_SELF, QuoteFinder
from app.memory.store import Store
from app.memory.tombstone_keys import StoreMetaKeys, TombstoneKeys
from app.memory.watermarks import WatermarkAdvance, advance_in

_log = logging.getLogger(__name__)

MAX_FACT_CHARS = 2000
_SUBJECT = re.compile(r"[a-z][a-z0-9_]{0,15}:[A-Za-z0-9_.\-]{1,64}")


def is_canonical_key(value: object) -> TypeGuard[str]:
    """A person's (or the familiar's) canonical key: discord:1234, familiar:self, local:owner."""
    return isinstance(value, str) and _SUBJECT.fullmatch(value) is not None


_ORIGINS = ("extraction", "remember", "edit", "import", "dreaming", "supersede")
_COLUMNS = (
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
class ForgetReceipt:
    fact_ids: tuple[int, ...]
    tombstone_id: int
    stores: tuple[tuple[str, int], ...]  # (store, rows or documents touched)
    redacted_turn_ids: tuple[int, ...] = ()  # the source messages (every revision of each)
    redacted_reply_ids: tuple[int, ...] = ()  # the familiar's replies that quoted them (app.memory.quoting)


@dataclass(frozen=True, slots=True)
class Tombstone:
    id: int
    hash: str
    reason: str
    created_at: datetime
    lifted_at: datetime | None


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


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise FactError("times must carry a time zone (ISO-8601 with an offset, e.g. 2024-05-01T12:00:00+00:00)")
    return moment.astimezone(UTC).isoformat()


def _dt(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _fact(row: Sequence[Any]) -> Fact:
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


def _row_values(fact: NewFact, key: str, scope: str, status: str, at: str | None) -> tuple[Any, ...]:
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
        _iso(fact.valid_from),
        _iso(fact.valid_to),
    )


def _needs_live_source(fact: NewFact) -> bool:
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


async def _tables(conn: aiosqlite.Connection, *names: str) -> set[str]:
    """Which of these tables exist (derived tables came with a later migration than facts)."""
    marks = ",".join("?" * len(names))
    async with conn.execute(f"SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({marks})", names) as c:
        return {str(r[0]) for r in await c.fetchall()}


async def drop_projections_quoting(conn: aiosqlite.Connection, turn_ids: Sequence[int]) -> list[tuple[str, int]]:
    """Drop the summaries that covered these turns and the reflections citing them (their projectors
    rebuild from what is left), in the caller's transaction; returns how many of each."""
    present = await _tables(conn, "summaries", "reflections")
    if not turn_ids:
        return [(name, 0) for name in ("summaries", "reflections") if name in present]
    marks = ",".join("?" * len(turn_ids))
    out: list[tuple[str, int]] = []
    if "summaries" in present:
        async with conn.execute(
            f"SELECT place, MIN(id) FROM turns WHERE id IN ({marks}) GROUP BY place", list(turn_ids)
        ) as cursor:
            spans = [(str(r[0]), int(r[1])) for r in await cursor.fetchall()]
        summaries = 0
        for place, first in spans:
            cursor = await conn.execute("DELETE FROM summaries WHERE place = ? AND last_turn_id >= ?", (place, first))
            summaries += max(cursor.rowcount, 0)
        out.append(("summaries", summaries))
    if "reflections" in present:
        out.append(("reflections", await drop_reflections_citing(conn, turn_ids=turn_ids)))
    return out


Query = Callable[[str, Sequence[Any]], Awaitable[list[tuple[Any, ...]]]]

# The turns a forget with --redact-sources erases: the facts' source turns and every other revision
# of the same Discord messages (an edit keeps the old text in the earlier revision's row).
_SOURCE_REVISIONS = (
    "SELECT t.id FROM fact_sources s JOIN turns t ON t.id = s.turn_id WHERE s.fact_id IN ({marks})"
    " UNION SELECT r.id FROM fact_sources s JOIN turns t ON t.id = s.turn_id"
    " JOIN turns r ON r.platform = t.platform AND r.message_id = t.message_id"
    " WHERE s.fact_id IN ({marks}) AND t.message_id IS NOT NULL ORDER BY 1"
)
_SCAN_CHUNK = 2000


def _reader_query(store: Store) -> Query:
    return store.read_all


def _conn_query(conn: aiosqlite.Connection) -> Query:
    async def run(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        async with conn.execute(sql, params) as cursor:
            return [tuple(r) for r in await cursor.fetchall()]

    return run


async def _redact_turns(conn: aiosqlite.Connection, turn_ids: Sequence[int]) -> list[int]:
    """Clear these turns' text (those not redacted already) and queue their index documents' removal;
    returns the ids redacted now."""
    done: list[int] = []
    for start in range(0, len(turn_ids), 500):
        chunk = list(turn_ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        async with conn.execute(
            f"UPDATE turns SET content = '', redacted = 1 WHERE id IN ({marks}) AND redacted = 0 RETURNING id", chunk
        ) as cursor:
            now = sorted(int(r[0]) for r in await cursor.fetchall())
        await conn.executemany("INSERT INTO index_outbox (name, doc_id) VALUES ('turns', ?)", [(t,) for t in now])
        done.extend(now)
    return sorted(done)


@dataclass(slots=True)
class _QuotingScan:
    """The familiar's replies that quote the messages a forget redacts (the rule: app.memory.quoting),
    looked for where those messages could have been seen or recalled: every channel of their server,
    or their DM (or the local chat)."""

    finder: QuoteFinder
    exact: tuple[str, ...]  # places looked at whole
    guilds: tuple[str, ...]  # "guild:<id>/" prefixes: every channel of the server
    boundary: int  # the newest turn id the first pass has seen
    found: set[int]

    @classmethod
    async def prepare(cls, query: Query, fact_ids: Sequence[int]) -> _QuotingScan:
        marks = ",".join("?" * len(fact_ids))
        boundary = int((await query("SELECT COALESCE(MAX(id), 0) FROM turns", ()))[0][0])
        rows = await query(
            f"SELECT id, place, message_id, content FROM turns WHERE id IN ({_SOURCE_REVISIONS.format(marks=marks)})",
            [*fact_ids, *fact_ids],
        )
        finder = QuoteFinder((None if r[2] is None else int(r[2]), str(r[3])) for r in rows)
        places = {str(r[1]) for r in rows}
        guilds = tuple(sorted({p.split("/", 1)[0] + "/" for p in places if p.startswith("guild:")}))
        exact = tuple(sorted(p for p in places if not p.startswith("guild:")))
        scan = cls(finder, exact, guilds, boundary, set())
        if finder:
            scan.found = await scan._scan(query, after=0, upto=boundary)
        return scan

    async def finish(self, query: Query, *, exclude: set[int]) -> list[int]:
        """In the write transaction: the replies found before plus those stored since."""
        if self.finder:
            self.found |= await self._scan(query, after=self.boundary, upto=None)
        return sorted(self.found - exclude)

    async def _scan(self, query: Query, *, after: int, upto: int | None) -> set[int]:
        places = list(self.exact)
        for prefix in self.guilds:  # "guild:5/" up to "guild:50": exactly the channels of guild 5
            rows = await query(
                "SELECT DISTINCT place FROM turns WHERE place >= ? AND place < ?", (prefix, prefix[:-1] + "0")
            )
            places.extend(str(r[0]) for r in rows)
        found: set[int] = set()
        for place in places:
            last = after
            while True:
                rows = await query(
                    "SELECT id, content, reply_to FROM turns WHERE place = ? AND id > ? AND author_key = ?"
                    " AND redacted = 0" + ("" if upto is None else " AND id <= ?") + " ORDER BY id LIMIT ?",
                    (place, last, FAMILIAR_SELF, *(() if upto is None else (upto,)), _SCAN_CHUNK),
                )
                if not rows:
                    break
                last = int(rows[-1][0])
                # Comparing texts is CPU work: off the event loop (the window's thread under qasync).
                batch = [(int(r[0]), str(r[1]), None if r[2] is None else int(r[2])) for r in rows]
                found.update(await asyncio.to_thread(self.finder.quoting, batch))
        return found


class FactBook:
    """The fact tables of one store. SQL only; the History wakes the indexes after each change."""

    def __init__(self, store: Store, keys: TombstoneKeys | None = None) -> None:
        self._store = store
        # Where the tombstone key lives (app.memory.tombstone_keys): a familiar's in the OS keyring.
        self.keys = keys if keys is not None else StoreMetaKeys()

    async def _tombstone_secret(self, conn: aiosqlite.Connection) -> bytes:
        return await self.keys.secret(conn)

    # -- insert ----------------------------------------------------------------------------------
    async def _secret_key(self) -> bytes:
        return await self.keys.secret_now(self._store)

    async def tombstone_filter(self) -> Callable[[str, Sequence[str]], bool]:
        """A check "would this text and these subjects be refused as forgotten?", over the hashes of
        the tombstones in force now (for dreaming, which must never re-learn what was forgotten)."""
        secret = await self._secret_key()
        rows = await self._store.read_all("SELECT hash FROM tombstones WHERE lifted_at IS NULL")
        hashes = frozenset(str(r[0]) for r in rows)

        def forgotten(text: str, subjects: Sequence[str]) -> bool:
            return tombstone_hash(secret, text, subjects) in hashes

        return forgotten

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
        at = _iso(moment)
        secret = await self._secret_key()
        source_places = await self._store.places_of(sorted({t for f in facts for t in f.source_turn_ids}))
        plans = []
        for fact in facts:
            scope = fact_scope(fact.place, channel_scoped=fact.channel_scoped)
            if any(not scope_reaches(scope, source_places.get(t, scope)) for t in fact.source_turn_ids):
                # Its sources disagree about where it was said (another server, a DM): nobody can tell who
                # may hear it, so it is kept for the owner to see and never recalled.
                scope = "quarantine"
            key = dedup_key(fact.content, (*fact.subjects, f"@scope={scope}"))
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
                            *_row_values(fact, key, scope, status, at),
                            hashed,
                            key,
                            int(_needs_live_source(fact)),
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
                if _needs_live_source(fact) and not await self._has_live_source(fact.source_turn_ids):
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
                        valid_from=_dt(_iso(fact.valid_from)),
                        valid_to=_dt(_iso(fact.valid_to)),
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
            f"SELECT {_COLUMNS} FROM facts WHERE dedup_key = ? AND superseded_at IS NULL AND status IN {blocking}"
            " ORDER BY status = 'rejected' LIMIT 1",
            (key,),
        )
        if row is None:  # pragma: no cover - the conflicting row vanished in between; report it as known
            return InsertOutcome("duplicate", None)
        found = _fact(row)
        # A rejection is a durable owner decision: the familiar does not propose it again.
        return InsertOutcome("rejected_before" if found.status == "rejected" else "duplicate", found)

    async def _insert_row(
        self, conn: aiosqlite.Connection, fact: NewFact, scope: str, key: str, status: str, moment: datetime
    ) -> int:
        cursor = await conn.execute(
            "INSERT INTO facts (content, dedup_key, type, importance, confidence, subjects, sources, speaker, scope,"
            " status, origin, created_at, valid_from, valid_to) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            _row_values(fact, key, scope, status, _iso(moment)),
        )
        return int(cursor.lastrowid or 0)

    # -- reads -----------------------------------------------------------------------------------
    async def get(self, fact_id: int) -> Fact | None:
        row = await self._store.read_one(f"SELECT {_COLUMNS} FROM facts WHERE id = ?", (fact_id,))
        return _fact(row) if row is not None else None

    async def get_many(self, ids: Sequence[int]) -> dict[int, Fact]:
        """Facts by id, one query per 500; missing ids are left out."""
        out: dict[int, Fact] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for row in await self._store.read_all(f"SELECT {_COLUMNS} FROM facts WHERE id IN ({marks})", chunk):
                out[int(row[0])] = _fact(row)
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
        # backwards to the first version
        frontier = [start.id]
        while frontier:
            marks = ",".join("?" * len(frontier))
            rows = await self._store.read_all(f"SELECT id FROM facts WHERE superseded_by IN ({marks})", frontier)
            frontier = []
            for (older_id,) in rows:
                if older_id in seen:
                    if older_id != start.id:
                        continue
                    raise StoreError(f"fact {fact_id}: the supersede chain has a cycle at {older_id}")
                older = await self.get(int(older_id))
                if older is not None:
                    seen[older.id] = older
                    frontier.append(older.id)
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
            now = _iso(datetime.now(UTC))
            where.append(
                "f.superseded_at IS NULL AND (f.valid_from IS NULL OR f.valid_from <= ?)"
                " AND (f.valid_to IS NULL OR f.valid_to > ?)"
            )
            params += [now, now]
            if status != "all":
                where.append("f.status = ?")
                params.append(status)
        else:
            world = _iso(world_at or datetime.now(UTC))
            recorded = as_of = _iso(recorded_at or datetime.now(UTC))
            where.append("f.created_at <= ? AND (f.superseded_at IS NULL OR f.superseded_at > ?)")
            params += [recorded, recorded]
            where.append("(f.valid_from IS NULL OR f.valid_from <= ?) AND (f.valid_to IS NULL OR f.valid_to > ?)")
            params += [world, world]
            if status != "all":
                where.append(f"{_STATUS_AT} = ?")
                params += [recorded, status]
        columns = ", ".join("f." + c.strip() for c in _COLUMNS.split(","))
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
            return [_fact(r) for r in rows]
        return [_status_then(_fact(r), r[-1]) for r in rows]

    async def visible_ids(self, ids: Sequence[int], where: str, *, now: datetime | None = None) -> list[int]:
        """Of `ids`, those recall may use at `where`: active, current heads, in scope. Order kept."""
        scopes = visible_scopes(where)
        if not ids:
            return []
        moment = _iso(now or datetime.now(UTC))
        found: set[int] = set()
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
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
            f"SELECT {_COLUMNS} FROM facts WHERE {where} ORDER BY id LIMIT ?", [*params, limit]
        )
        return [_fact(r) for r in rows]

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
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
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
            params.append(_iso(now or datetime.now(UTC)))
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
            f"SELECT DISTINCT {', '.join('f.' + c.strip() for c in _COLUMNS.split(','))} FROM facts f"
            f" JOIN fact_subjects s ON s.fact_id = f.id WHERE s.subject IN ({marks}) AND f.id != ?"
            f" AND f.superseded_at IS NULL AND f.status = 'active' AND f.scope = ? AND {_NOT_HELD}"
            " ORDER BY f.id DESC LIMIT ?",
            (*fact.subjects, fact.id, fact.scope, limit),
        )
        return [_fact(r) for r in rows]

    # -- owner operations (each carries the revision it saw) -------------------------------------
    async def _current(self, conn: aiosqlite.Connection, fact_id: int, revision: int) -> Fact:
        async with conn.execute(f"SELECT {_COLUMNS} FROM facts WHERE id = ?", (fact_id,)) as cursor:
            row = await cursor.fetchone()
        if row is None:
            raise FactError(f"there is no fact {fact_id}")
        fact = _fact(tuple(row))
        if fact.revision != revision:
            raise RevisionConflictError(
                f"fact {fact_id} changed since you saw it (revision {revision}, now {fact.revision}); reload it"
            )
        if fact.superseded_at is not None:
            if fact.superseded_by is None:
                raise RevisionConflictError(f"fact {fact_id} was retired (its source message changed)")
            raise RevisionConflictError(f"fact {fact_id} was superseded by fact {fact.superseded_by}; act on that one")
        return fact

    async def _set_status(
        self, conn: aiosqlite.Connection, fact: Fact, status: str, moment: datetime, **extra: str | None
    ) -> None:
        sets = ", ".join(["status = ?", "revision = revision + 1", *(f"{k} = ?" for k in extra)])
        await conn.execute(f"UPDATE facts SET {sets} WHERE id = ?", (status, *extra.values(), fact.id))
        if status != fact.status:
            await conn.execute(
                "INSERT INTO fact_status_log (fact_id, status, at) VALUES (?, ?, ?)", (fact.id, status, _iso(moment))
            )

    async def accept(self, fact_id: int, revision: int, *, now: datetime | None = None) -> Fact:
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            fact = await self._current(conn, fact_id, revision)
            if fact.status != "pending":
                raise FactError(f"fact {fact_id} is {fact.status}, not pending")
            await self._set_status(conn, fact, "active", moment, snoozed_until=None)
        return await self._require(fact_id)

    async def reject(self, fact_id: int, revision: int, *, now: datetime | None = None) -> Fact:
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            fact = await self._current(conn, fact_id, revision)
            if fact.status != "pending":
                raise FactError(f"fact {fact_id} is {fact.status}, not pending")
            await self._set_status(conn, fact, "rejected", moment)
        return await self._require(fact_id)

    async def snooze(self, fact_id: int, revision: int, until: datetime, *, now: datetime | None = None) -> Fact:
        moment = now or datetime.now(UTC)
        if until.tzinfo is None or until <= moment:
            raise FactError("snooze needs a future time with a time zone")
        async with self._store.transaction() as conn:
            fact = await self._current(conn, fact_id, revision)
            if fact.status != "pending":
                raise FactError(f"fact {fact_id} is {fact.status}, not pending")
            await self._set_status(conn, fact, "pending", moment, snoozed_until=_iso(until))
        return await self._require(fact_id)

    async def archive(self, fact_id: int, revision: int, *, now: datetime | None = None) -> Fact:
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            fact = await self._current(conn, fact_id, revision)
            if fact.status != "active":
                raise FactError(f"fact {fact_id} is {fact.status}, not active")
            await self._set_status(conn, fact, "archived", moment)
        return await self._require(fact_id)

    async def edit(
        self, fact_id: int, revision: int, text: str, *, now: datetime | None = None
    ) -> tuple[Fact, Changes]:
        """Edit = supersede: a new row with the new text (active: the owner wrote it); the old row is
        linked to it and leaves current truth."""
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            old = await self._current(conn, fact_id, revision)
            if old.status not in ("pending", "active"):
                raise FactError(f"fact {fact_id} is {old.status}; only pending or active facts can be edited")
            sources = old.source_turn_ids
            replacement = validate(
                NewFact(
                    content=text,
                    type=old.type,
                    importance=old.importance,
                    confidence=1.0,
                    subjects=old.subjects,
                    place=old.scope if old.scope != "quarantine" else "local",
                    speaker=old.speaker,
                    source_turn_ids=sources,
                    valid_from=old.valid_from,
                    valid_to=old.valid_to,
                    origin="edit",
                    channel_scoped=True,
                )
            )
            key = dedup_key(replacement.content, (*replacement.subjects, f"@scope={old.scope}"))
            secret = await self._tombstone_secret(conn)
            async with conn.execute(
                "SELECT 1 FROM tombstones WHERE hash = ? AND lifted_at IS NULL LIMIT 1",
                (tombstone_hash(secret, replacement.content, replacement.subjects),),
            ) as cursor:
                if await cursor.fetchone() is not None:
                    raise FactError("that text was forgotten before (a tombstone blocks it); lift the tombstone first")
            async with conn.execute(
                "SELECT id FROM facts WHERE dedup_key = ? AND superseded_at IS NULL AND status IN ('pending', 'active')"
                " AND id != ? LIMIT 1",
                (key, fact_id),
            ) as cursor:
                twin = await cursor.fetchone()
            if twin is not None:
                new_id = int(twin[0])  # the corrected text is already known: link to it, add no copy
                cursor = await conn.execute(
                    "UPDATE facts SET status = 'active', revision = revision + 1, snoozed_until = NULL"
                    " WHERE id = ? AND status = 'pending'",
                    (new_id,),
                )
                if cursor.rowcount:  # the owner's edit accepts the pending twin: as_of reads must see it too
                    await conn.execute(
                        "INSERT INTO fact_status_log (fact_id, status, at) VALUES (?, 'active', ?)",
                        (new_id, _iso(moment)),
                    )
            else:
                new_id = await self._insert_row(conn, replacement, old.scope, key, "active", moment)
            await conn.execute(
                "UPDATE facts SET superseded_at = ?, superseded_by = ?, revision = revision + 1 WHERE id = ?",
                (_iso(moment), new_id, fact_id),
            )
        changes = Changes(facts_index=True, fact_ids=[new_id, fact_id])
        return await self._require(new_id), changes

    # -- reversals: the owner's undo, each an honest new state in the status log ------------------
    async def reopen(self, fact_id: int, revision: int, *, now: datetime | None = None) -> Fact:
        """Undo an accept or a reject: the fact goes back to the pending queue (logged, so an as-of
        slice between the two still shows the decision)."""
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            fact = await self._current(conn, fact_id, revision)
            if fact.status not in ("active", "rejected"):
                raise FactError(f"fact {fact_id} is {fact.status}; only an accepted or rejected fact can be reopened")
            await self._set_status(conn, fact, "pending", moment, snoozed_until=None)
        return await self._require(fact_id)

    async def unarchive(self, fact_id: int, revision: int, *, now: datetime | None = None) -> Fact:
        """Undo an archive: the fact is current truth again (logged)."""
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            fact = await self._current(conn, fact_id, revision)
            if fact.status != "archived":
                raise FactError(f"fact {fact_id} is {fact.status}, not archived")
            await self._set_status(conn, fact, "active", moment)
        return await self._require(fact_id)

    async def restore_snooze(
        self, fact_id: int, revision: int, until: datetime | None, *, now: datetime | None = None
    ) -> Fact:
        """Undo a snooze: the pending fact's snooze goes back to what it was (`None`: in the queue now)."""
        moment = now or datetime.now(UTC)
        if until is not None and until.tzinfo is None:
            raise FactError("a snooze time needs a time zone")
        async with self._store.transaction() as conn:
            fact = await self._current(conn, fact_id, revision)
            if fact.status != "pending":
                raise FactError(f"fact {fact_id} is {fact.status}, not pending")
            await self._set_status(conn, fact, "pending", moment, snoozed_until=None if until is None else _iso(until))
        return await self._require(fact_id)

    async def revert_edit(self, fact_id: int, revision: int, *, now: datetime | None = None) -> tuple[Fact, Changes]:
        """Undo an edit: the text from before comes back as a new version superseding `fact_id`, with the
        status that version had. Nothing is rewritten: as-of slices still show the edit while it stood."""
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            await self._current(conn, fact_id, revision)
            async with conn.execute(
                f"SELECT {_COLUMNS} FROM facts WHERE superseded_by = ? ORDER BY superseded_at DESC, id DESC LIMIT 1",
                (fact_id,),
            ) as cursor:
                row = await cursor.fetchone()
            if row is None:
                raise FactError(f"fact {fact_id} replaced no earlier version: there is no edit to undo")
            before = _fact(tuple(row))
            if before.status not in ("pending", "active"):
                raise FactError(f"the version before fact {fact_id} is {before.status}; it cannot come back")
            key = dedup_key(before.content, (*before.subjects, f"@scope={before.scope}"))
            secret = await self._tombstone_secret(conn)
            async with conn.execute(
                "SELECT 1 FROM tombstones WHERE hash = ? AND lifted_at IS NULL LIMIT 1",
                (tombstone_hash(secret, before.content, before.subjects),),
            ) as cursor:
                if await cursor.fetchone() is not None:
                    raise FactError("the text before the edit was forgotten since (a tombstone blocks it)")
            async with conn.execute(
                "SELECT id FROM facts WHERE dedup_key = ? AND superseded_at IS NULL AND status IN ('pending', 'active')"
                " AND id != ? LIMIT 1",
                (key, fact_id),
            ) as cursor:
                twin = await cursor.fetchone()
            if twin is not None:
                raise FactError(f"the text before the edit is a current fact again (fact {int(twin[0])})")
            restored = NewFact(
                content=before.content,
                type=before.type,
                importance=before.importance,
                confidence=before.confidence,
                subjects=before.subjects,
                place=before.scope,
                speaker=before.speaker,
                source_turn_ids=before.source_turn_ids,
                valid_from=before.valid_from,
                valid_to=before.valid_to,
                origin="edit",
            )
            new_id = await self._insert_row(conn, restored, before.scope, key, before.status, moment)
            await conn.execute(
                "UPDATE facts SET superseded_at = ?, superseded_by = ?, revision = revision + 1 WHERE id = ?",
                (_iso(moment), new_id, fact_id),
            )
        return await self._require(new_id), Changes(facts_index=True, fact_ids=[new_id, fact_id])

    async def supersede(
        self, old_id: int, new_id: int, *, now: datetime | None = None
    ) -> Literal["superseded", "skipped"]:
        """Retire `old_id` in favour of an existing `new_id` (the fact_supersede projector's path).
        A prior already retired by a concurrent writer is skipped, never re-linked."""
        if old_id == new_id:
            raise FactError("a fact cannot supersede itself")
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            # Both must still stand: a fact forgotten (or retired) while the model decided retires nothing.
            # Neither may be waiting to be forgotten: linking them would carry the forget over to the other.
            cursor = await conn.execute(
                "UPDATE facts SET superseded_at = ?, superseded_by = ?, revision = revision + 1"
                " WHERE id = ? AND superseded_at IS NULL AND status = 'active' AND EXISTS (SELECT 1 FROM facts"
                "   WHERE id = ? AND status = 'active' AND superseded_at IS NULL)"
                " AND NOT EXISTS (SELECT 1 FROM forget_holds WHERE fact_id IN (?, ?))",
                (_iso(moment), new_id, old_id, new_id, old_id, new_id),
            )
            return "superseded" if cursor.rowcount else "skipped"

    async def _require(self, fact_id: int) -> Fact:
        fact = await self.get(fact_id)
        if fact is None:  # pragma: no cover - just written in the same store
            raise FactError(f"fact {fact_id} vanished")
        return fact

    # -- forget and tombstones -----------------------------------------------------------------------
    async def forget(
        self,
        fact_id: int,
        *,
        revision: int | None = None,
        redact_sources: bool = False,
        reason: str = "forgotten by the owner",
        now: datetime | None = None,
    ) -> tuple[ForgetReceipt, Changes]:
        """Erase a fact (its whole supersede chain) everywhere and leave a content-free tombstone."""
        moment = now or datetime.now(UTC)
        chain = await self.chain(fact_id)
        target = next(f for f in chain.facts if f.id == fact_id)
        if revision is not None and target.revision != revision:
            raise RevisionConflictError(
                f"fact {fact_id} changed since you saw it (revision {revision}, now {target.revision}); reload it"
            )
        seen = {f.id: f.revision for f in chain.facts}
        live = [f for f in chain.facts if f.status != "forgotten"]
        if not live:
            raise FactError(f"fact {fact_id} is already forgotten")
        ids = [f.id for f in live]
        changes = Changes(facts_index=True, fact_ids=ids)
        stores: list[tuple[str, int]] = []
        redacted: list[int] = []
        replies: list[int] = []
        quoting: _QuotingScan | None = None
        if redact_sources:
            # The familiar's replies are read and compared before the write transaction, so a long
            # history does not hold up the writer; the transaction then looks only at replies newer
            # than this scan.
            quoting = await _QuotingScan.prepare(_reader_query(self._store), ids)
        async with self._store.transaction() as conn:
            # Overwrite freed bytes with zeros: SQLite builds without SQLITE_SECURE_DELETE (python.org's
            # Windows and macOS builds) would otherwise leave the erased text in the database file.
            await conn.execute("PRAGMA secure_delete = ON")
            # The chain was read before the transaction: if any of it changed since, act on nothing.
            async with conn.execute(
                f"SELECT id, revision FROM facts WHERE id IN ({','.join('?' * len(seen))})", list(seen)
            ) as cursor:
                now_at = {int(r[0]): int(r[1]) for r in await cursor.fetchall()}
            if now_at != seen:
                raise RevisionConflictError(f"fact {fact_id} changed while it was being forgotten; try again")
            secret = await self._tombstone_secret(conn)
            hashes = {tombstone_hash(secret, f.content, f.subjects) for f in live}
            tombstone_id = 0
            for hashed in sorted(hashes):
                cursor = await conn.execute(
                    "INSERT INTO tombstones (hash, reason, created_at) VALUES (?, ?, ?)",
                    (hashed, reason[:200], _iso(moment)),
                )
                tombstone_id = tombstone_id or int(cursor.lastrowid or 0)
            marks = ",".join("?" * len(ids))
            await conn.execute(
                f"UPDATE facts SET content = '', subjects = '[]', speaker = NULL, dedup_key = 'forgotten:' || id,"
                f" status = 'forgotten', revision = revision + 1 WHERE id IN ({marks})",
                ids,
            )
            await conn.executemany(
                "INSERT INTO fact_status_log (fact_id, status, at) VALUES (?, 'forgotten', ?)",
                [(i, _iso(moment)) for i in ids],
            )
            subjects = sorted({s for f in live for s in f.subjects})
            await conn.execute(f"DELETE FROM fact_subjects WHERE fact_id IN ({marks})", ids)
            stores.append(("facts", len(ids)))
            await conn.executemany("INSERT INTO index_outbox (name, doc_id) VALUES ('facts', ?)", [(i,) for i in ids])
            stores.append(("fts/facts", len(ids)))
            cursor = await conn.execute(f"DELETE FROM fact_embeddings WHERE fact_id IN ({marks})", ids)
            stores.append(("fact_embeddings", max(cursor.rowcount, 0)))
            stores.extend(await self._drop_derived(conn, ids, subjects))
            if quoting is not None:
                query = _conn_query(conn)
                turn_ids = [int(r[0]) for r in await query(_SOURCE_REVISIONS.format(marks=marks), [*ids, *ids])]
                reply_ids = await quoting.finish(query, exclude=set(turn_ids))
                redacted = await _redact_turns(conn, turn_ids)
                replies = await _redact_turns(conn, reply_ids)
                changes.turns_index = bool(redacted or replies)
                stores.append(("turns", len(redacted)))
                stores.append(("turns (replies quoting them)", len(replies)))
                stores.append(("fts/turns", len(redacted) + len(replies)))
                # What quoted the replies goes too (their sources' summaries and reflections went above).
                dropped = dict(await drop_projections_quoting(conn, replies))
                stores = [(name, count + dropped.pop(name, 0)) for name, count in stores]
                stores.extend(dropped.items())
        receipt = ForgetReceipt(
            fact_ids=tuple(ids),
            tombstone_id=tombstone_id,
            stores=tuple(stores),
            redacted_turn_ids=tuple(redacted),
            redacted_reply_ids=tuple(replies),
        )
        return receipt, changes

    async def replies_quoting_sources(self, fact_ids: Sequence[int]) -> list[int]:
        """The familiar's replies a `forget(..., redact_sources=True)` of these facts would redact now."""
        scan = await _QuotingScan.prepare(_reader_query(self._store), fact_ids)
        return sorted(scan.found)

    async def _drop_derived(
        self, conn: aiosqlite.Connection, ids: list[int], subjects: list[str]
    ) -> list[tuple[str, int]]:
        """Derived rows that may quote the fact are dropped, and their projectors rebuild them from what is
        left: the dossiers of its subjects, the reflections citing it, and what quotes its source messages."""
        out: list[tuple[str, int]] = []
        present = await _tables(conn, "people_dossiers", "reflections")
        marks = ",".join("?" * len(ids))
        async with conn.execute(f"SELECT DISTINCT turn_id FROM fact_sources WHERE fact_id IN ({marks})", ids) as cur:
            source_ids = [int(r[0]) for r in await cur.fetchall()]
        if "people_dossiers" in present and subjects:
            subject_marks = ",".join("?" * len(subjects))
            cursor = await conn.execute(
                f"DELETE FROM people_dossiers WHERE canonical_key IN ({subject_marks})", subjects
            )
            out.append(("people_dossiers", max(cursor.rowcount, 0)))
        citing = 0
        if "reflections" in present:
            citing = await drop_reflections_citing(conn, fact_ids=ids)
        quoting = dict(await drop_projections_quoting(conn, source_ids))
        if "reflections" in present:
            out.append(("reflections", citing + quoting.get("reflections", 0)))
        if "summaries" in quoting:
            out.append(("summaries", quoting["summaries"]))
        return out

    async def tombstones(self, *, include_lifted: bool = False) -> list[Tombstone]:
        rows = await self._store.read_all(
            "SELECT id, hash, reason, created_at, lifted_at FROM tombstones"
            + ("" if include_lifted else " WHERE lifted_at IS NULL")
            + " ORDER BY id"
        )
        return [Tombstone(int(r[0]), str(r[1]), str(r[2]), datetime.fromisoformat(r[3]), _dt(r[4])) for r in rows]

    async def lift_tombstone(self, tombstone_id: int, *, now: datetime | None = None) -> Tombstone:
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE tombstones SET lifted_at = ? WHERE id = ? AND lifted_at IS NULL", (_iso(moment), tombstone_id)
            )
            if not cursor.rowcount:
                raise FactError(f"there is no tombstone {tombstone_id} in force")
        row = await self._store.read_one(
            "SELECT id, hash, reason, created_at, lifted_at FROM tombstones WHERE id = ?", (tombstone_id,)
        )
        assert row is not None
        return Tombstone(int(row[0]), str(row[1]), str(row[2]), datetime.fromisoformat(row[3]), _dt(row[4]))

    # -- propagation from the conversation ---------------------------------------------------------
    async def on_turns_deleted(self, turn_ids: Sequence[int], *, now: datetime | None = None) -> list[ForgetReceipt]:
        """A Discord deletion: facts sourced only from deleted turns are forgotten (tombstoned), and
        queued memory work on those turns is cancelled."""
        if not turn_ids:
            return []
        marks = ",".join("?" * len(turn_ids))
        async with self._store.transaction() as conn:
            await conn.execute(
                f"UPDATE memory_work SET status = 'cancelled' WHERE turn_id IN ({marks})"
                " AND status IN ('queued', 'running')",
                list(turn_ids),
            )
        rows = await self._store.read_all(
            f"SELECT DISTINCT s.fact_id FROM fact_sources s JOIN facts f ON f.id = s.fact_id"
            f" WHERE s.turn_id IN ({marks}) AND f.status != 'forgotten'"
            " AND NOT EXISTS (SELECT 1 FROM fact_sources o JOIN turns t ON t.id = o.turn_id"
            "   WHERE o.fact_id = s.fact_id AND t.redacted = 0)",
            list(turn_ids),
        )
        receipts: list[ForgetReceipt] = []
        for (fact_id,) in rows:
            current = await self.get(int(fact_id))
            if current is None or current.status == "forgotten":
                continue  # already erased as part of an earlier chain
            receipt, _changes = await self.forget(int(fact_id), reason="its source message was deleted", now=now)
            receipts.append(receipt)
        return receipts

    async def on_turn_edited(self, old_turn_id: int, new_turn_id: int, *, now: datetime | None = None) -> list[int]:
        """An edit retires facts derived from the old revision and queues the new one for extraction."""
        moment = _iso(now or datetime.now(UTC))
        async with self._store.transaction() as conn:
            async with conn.execute(
                "SELECT f.id FROM fact_sources s JOIN facts f ON f.id = s.fact_id"
                " WHERE s.turn_id = ? AND f.superseded_at IS NULL AND f.status IN ('pending', 'active')",
                (old_turn_id,),
            ) as cursor:
                retired = [int(r[0]) for r in await cursor.fetchall()]
            if retired:
                marks = ",".join("?" * len(retired))
                await conn.execute(
                    f"UPDATE facts SET superseded_at = ?, revision = revision + 1 WHERE id IN ({marks})",
                    [moment, *retired],
                )
            await conn.execute(
                "UPDATE memory_work SET status = 'cancelled' WHERE turn_id = ? AND status IN ('queued', 'running')",
                (old_turn_id,),
            )
            await conn.execute(
                "INSERT INTO memory_work (kind, turn_id, place, created_at, updated_at)"
                " SELECT 'extract', id, place, ?, ? FROM turns WHERE id = ?",
                (moment, moment, new_turn_id),
            )
        return retired
