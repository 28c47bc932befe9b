"""The facts timeline: bi-temporal slices of every fact row, fast enough to drag a slider across.

A slice at (world time W, recorded time S) holds the fact rows recorded by S and not yet retired at S
(created_at <= S < superseded_at) that held in the world at W (valid_from <= W < valid_to; an open end
is open), of every status, each with the status it had at S (from its status log). A forgotten row
stays in as a content-free marker (the store erased its text and subjects; its receipt keeps who and
where). Rows held out by a scheduled forget are left out, as from every read.

At 100,000 facts one SQL slice is a full scan (measured: 50-65 ms for the count alone, more for a page
deep in the order), too slow to follow a slider. So the book keeps each row's spans on both axes as
arrays (`Spans`), in display order (latest start first: valid_from, or created_at when the start is
open), built off the event loop once per change of the facts (the store's change counters say when).
A slice is then a few vectorised comparisons; only the page shown is read from SQL.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from app.memory.errors import BadInputError, StoreError
from app.memory.facts import COLUMNS, Fact, from_row
from app.memory.store import Store

_log = logging.getLogger(__name__)

Ints = npt.NDArray[np.int64]
Codes = npt.NDArray[np.int8]
Mask = npt.NDArray[np.bool_]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
OPEN_START = np.iinfo(np.int64).min  # an open valid_from (numpy's NaT: compares below every time)
OPEN_END = np.iinfo(np.int64).max  # an open valid_to, or a row not retired
_PARSE_CHUNK = 5_000  # values parsed per numpy call: the GIL is held per call, so the window keeps ticking
_PIECE_CHARS = 65_536
"""A column read as one joined text (100,000 values: megabytes) is cut into pieces about this long before
any str call over it: one replace or split over all of it holds the GIL for ~10 ms, during which the
window's loop cannot take a turn; over a piece, a fraction of a millisecond."""
_SCOPE_SEP = chr(31)
_IN_CHUNK = 500
_CHAIN_STEPS = 64

TYPES = ("episodic", "semantic", "procedural")
STATUSES = ("pending", "active", "rejected", "archived", "forgotten")
_TYPE_CODE = {name: code for code, name in enumerate(TYPES)}
_STATUS_CODE = {name: code for code, name in enumerate(STATUSES)}
FORGOTTEN = _STATUS_CODE["forgotten"]


def micros(moment: datetime) -> int:
    """A time as integer microseconds since the epoch (exact; the arrays' unit)."""
    if moment.tzinfo is None:
        raise BadInputError("times must carry a time zone (ISO-8601 with an offset, e.g. 2024-05-01T12:00:00+00:00)")
    return (moment - EPOCH) // timedelta(microseconds=1)


def from_micros(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=int(value))


def _utc_text(value: str) -> str:
    """A stored time as numpy parses it: UTC without the offset ('' for NULL)."""
    if not value:
        return ""
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat()


def _pieces(joined: str, sep: str) -> Iterator[str]:
    """`joined` cut at separators into runs of whole values, each about _PIECE_CHARS long (see there)."""
    start = 0
    while True:
        cut = joined.find(sep, start + _PIECE_CHARS) if start + _PIECE_CHARS < len(joined) else -1
        if cut < 0:
            yield joined[start:]
            return
        yield joined[start:cut]
        start = cut + 1


def _utc_texts(piece: str) -> list[str]:
    """A run of stored times joined by commas as texts numpy parses (see _utc_text)."""
    plain = piece.replace("+00:00", "")  # the store writes UTC: most values need nothing else
    texts = plain.split(",")
    # A value still carrying an offset has a '+', or more than the date's two '-'.
    if "+" in plain or plain.count("-") > 2 * (len(texts) - texts.count("")):
        texts = [_utc_text(v) if ("+" in v or v.count("-") > 2) else v for v in texts]
    return texts


def parse_times(values: Sequence[str | None] | str, missing: int, count: int | None = None) -> Ints:
    """Stored ISO-8601 times as microseconds, `missing` for NULL (or ''). `values` may also be `count`
    of them joined by commas, as `build_spans` reads them. Parsed in runs (see _PIECE_CHARS)."""
    if isinstance(values, str):
        runs = [_utc_texts(piece) for piece in _pieces(values, ",")] if count else []
    else:
        texts = [_utc_text(v) if v else "" for v in values]
        runs = [texts[start : start + _PARSE_CHUNK] for start in range(0, len(texts), _PARSE_CHUNK)]
    out: Ints = _joined_runs([np.array(run, dtype="datetime64[us]").astype(np.int64) for run in runs], np.int64)
    if count is not None and len(out) != count:
        raise StoreError(f"the timeline read {len(out)} times for {count} rows")
    if missing != OPEN_START:
        out[out == OPEN_START] = missing
    return out


def _joined_runs(runs: list[Any], dtype: type[np.generic]) -> Any:
    return np.concatenate(runs) if runs else np.zeros(0, dtype=dtype)


def _ints(joined: str, count: int) -> Ints:
    """`count` integers joined by commas (a group_concat) as an array."""
    if not count:
        return np.zeros(0, dtype=np.int64)
    out: Ints = _joined_runs([np.array(piece.split(","), dtype=np.int64) for piece in _pieces(joined, ",")], np.int64)
    if len(out) != count:
        raise StoreError(f"the timeline read {len(out)} ids for {count} rows")
    return out


def _codes(joined: str, count: int) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
    """`count` names joined by U+001F as codes into the table of distinct names (first seen first). Coded
    by a Python loop, not np.unique: that sorts every name in one call holding the GIL (35 ms at 100,000
    facts), and the window's loop cannot take a turn meanwhile; between the loop's steps it can."""
    if not count:
        return (), np.zeros(0, dtype=np.int32)
    table: dict[str, int] = {}
    codes: npt.NDArray[np.int32] = _joined_runs(
        [
            np.fromiter((table.setdefault(name, len(table)) for name in piece.split(_SCOPE_SEP)), dtype=np.int32)
            for piece in _pieces(joined, _SCOPE_SEP)
        ],
        np.int32,
    )
    if len(codes) != count:
        raise StoreError(f"the timeline read {len(codes)} places for {count} rows")
    return tuple(table), codes


def _digits(joined: str) -> Codes:
    """One-digit codes written side by side ("0120...") as an array."""
    return (np.frombuffer(joined.encode("ascii"), dtype=np.uint8) - ord("0")).astype(np.int8)


def _code_sql(column: str, names: Sequence[str]) -> str:
    """SQL turning a column's name into its one-digit code (0 for anything unknown)."""
    cases = " ".join(f"WHEN '{name}' THEN {code}" for code, name in enumerate(names))
    return f"CASE {column} {cases} ELSE 0 END"


@dataclass(frozen=True, slots=True)
class TimelineFilter:
    """What a slice keeps, besides the two times. Empty means any."""

    subjects: tuple[str, ...] = ()  # canonical keys: rows about any of them (forgotten ones by their receipt)
    places: tuple[str, ...] = ()  # scope keys; a server (guild:<id>) takes in its channels
    types: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()  # the status at the slice's recorded time
    text: str = ""  # a case-insensitive piece of the text (forgotten rows have none)

    def __post_init__(self) -> None:
        for name, allowed, given in (("type", TYPES, self.types), ("status", STATUSES, self.statuses)):
            unknown = sorted(set(given) - set(allowed))
            if unknown:
                raise BadInputError(f"unknown {name} {unknown[0]!r}: choose from {', '.join(allowed)}")


@dataclass(frozen=True, slots=True)
class Point:
    """A point of the two axes; None is "now"."""

    world_at: datetime | None = None
    recorded_at: datetime | None = None

    def resolved(self, now: datetime) -> tuple[int, int]:
        return micros(self.world_at or now), micros(self.recorded_at or now)


@dataclass(frozen=True, slots=True)
class ForgetInfo:
    """Who and where a forgotten row was about, and when it was forgotten: never what."""

    subjects: tuple[str, ...]
    forgotten_at: datetime | None
    receipt_id: int | None


@dataclass(frozen=True, slots=True)
class TimelinePage:
    total: int  # rows in the whole slice
    offset: int
    facts: tuple[Fact, ...]  # the page in display order, each with its status at the recorded time
    forgotten: Mapping[int, ForgetInfo] = field(default_factory=dict)  # the page's forgotten rows (content-free)


@dataclass(frozen=True, slots=True)
class DiffRow:
    kind: Literal["added", "removed", "changed"]
    before: Fact | None  # the row at the first point, with its status there
    after: Fact | None  # the row at the second point, with its status there


@dataclass(frozen=True, slots=True)
class TimelineDiffRows:
    rows: tuple[DiffRow, ...]  # at most `limit` of each kind, in display order
    added: int  # the whole counts
    removed: int
    changed: int
    forgotten: Mapping[int, ForgetInfo] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TimelineExtent:
    rows: int  # fact rows on the timeline (every version, every status)
    first_recorded: datetime | None
    first_world: datetime | None  # the earliest start (valid_from, or created_at for an open start)
    last_world: datetime | None  # the latest time any row names (may lie ahead)
    subjects: tuple[str, ...]  # every subject key of a fact row
    places: tuple[str, ...]  # every scope of a fact row


@dataclass(frozen=True, slots=True)
class Spans:
    """Every fact row (but the held ones) on both axes, in display order. Built by `build_spans`."""

    ids: Ints
    created: Ints
    retired: Ints  # superseded_at, OPEN_END while current
    valid_from: Ints  # OPEN_START when open
    valid_to: Ints  # OPEN_END when open
    types: Codes
    scopes: npt.NDArray[np.int32]
    scope_names: tuple[str, ...]
    status_now: Codes
    successor: Ints  # row position of superseded_by, -1 when none (or held)
    log_row: Ints  # the status log, sorted by (row, time, insertion)
    log_at: Ints
    log_status: Codes
    log_order: Ints  # the log rows' rowids (their insertion order)
    sorted_ids: Ints  # ids ascending, and the row of each
    sorted_rows: Ints
    max_id: int  # the newest fact row read, and the newest log row kept: what an append reads after
    max_log_rowid: int
    last_logged: int  # the latest time in the status log

    def __len__(self) -> int:
        return len(self.ids)

    def rows_of(self, ids: Sequence[int] | Ints) -> Ints:
        """Row positions of these ids (ids not on the timeline are left out)."""
        rows, found = _lookup(self.sorted_ids, self.sorted_rows, np.asarray(ids, dtype=np.int64))
        return rows[found]

    def status_at(self, recorded: int) -> Codes:
        """Each row's status at a recorded time: its last log entry by then (its own status if none)."""
        if not len(self.log_at) or recorded >= self.last_logged:
            return self.status_now  # nothing changed since: the status now (read-only, shared)
        out = self.status_now.copy()
        by_then = np.flatnonzero(self.log_at <= recorded)
        if len(by_then):
            rows = self.log_row[by_then]
            last = np.ones(len(rows), dtype=bool)
            last[:-1] = rows[1:] != rows[:-1]
            out[rows[last]] = self.log_status[by_then[last]]
        return out

    def held_at(self, world: int, recorded: int) -> Mask:
        """Rows in the slice at (world, recorded), before any filter."""
        return (
            (self.created <= recorded)
            & (recorded < self.retired)
            & (self.valid_from <= world)
            & (world < self.valid_to)
        )


def _lookup(sorted_ids: Ints, sorted_rows: Ints, wanted: Ints) -> tuple[Ints, Mask]:
    """For each wanted id: its row (where found) and whether it was found."""
    if not len(sorted_ids):
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=np.bool_)
    at = np.clip(np.searchsorted(sorted_ids, wanted), 0, len(sorted_ids) - 1)
    found: Mask = sorted_ids[at] == wanted
    rows: Ints = sorted_rows[at]
    return rows, found


# Every column of every row comes back as one string per column (a group_concat, aligned across the
# columns of one query): 100,000 rows are then a dozen Python objects, not a million (measured: reading
# them as rows took 0.8 s and making the arrays 1.7 s more; see bench/bench_ui_stall.py scenario timeline).
_ROWS_SQL = (
    "SELECT COUNT(*), group_concat(id), group_concat(created_at), group_concat(COALESCE(superseded_at, '')),"
    " group_concat(COALESCE(valid_from, '')), group_concat(COALESCE(valid_to, '')),"
    f" group_concat({_code_sql('type', TYPES)}, ''), group_concat(scope, char(31)),"
    f" group_concat({_code_sql('status', STATUSES)}, ''), group_concat(COALESCE(superseded_by, -1))"
    " FROM facts WHERE id NOT IN (SELECT fact_id FROM forget_holds) AND id > ?"
)
_LOG_SQL = (
    "SELECT COUNT(*), group_concat(fact_id), group_concat(at), group_concat(rowid),"
    f" group_concat({_code_sql('status', STATUSES)}, '') FROM fact_status_log WHERE rowid > ?"
)


@dataclass(frozen=True, slots=True)
class _Columns:
    """Fact rows and status-log rows as arrays, in no particular order (what `_assemble` sorts)."""

    ids: Ints
    created: Ints
    retired: Ints
    valid_from: Ints
    valid_to: Ints
    types: Codes
    scopes: npt.NDArray[np.int32]
    scope_names: tuple[str, ...]
    status_now: Codes
    next_ids: Ints
    log_ids: Ints
    log_at: Ints
    log_order: Ints
    log_status: Codes


async def _read(store: Store, after_id: int = -1, after_log: int = -1) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    rows = await store.read_one(_ROWS_SQL, (after_id,))
    log = await store.read_one(_LOG_SQL, (after_log,))
    if rows is None or log is None:  # pragma: no cover - an aggregate always answers one row
        raise StoreError("the facts could not be read for the timeline")
    return rows, log


async def build_spans(store: Store) -> Spans:
    """Read every row's times and statuses (two reads), then make the arrays off the event loop."""
    rows, log = await _read(store)
    return await asyncio.to_thread(lambda: _assemble(_columns(rows, log)))


def _columns(rows: tuple[Any, ...], log: tuple[Any, ...]) -> _Columns:
    count = int(rows[0])
    if not count:
        rows = (0, "", "", "", "", "", "", "", "", "")
    names, codes = _codes(rows[7], count)
    logged = int(log[0])
    if not logged:
        log = (0, "", "", "", "")
    return _Columns(
        ids=_ints(rows[1], count),
        created=parse_times(rows[2], OPEN_START, count),
        retired=parse_times(rows[3], OPEN_END, count),
        valid_from=parse_times(rows[4], OPEN_START, count),
        valid_to=parse_times(rows[5], OPEN_END, count),
        types=_digits(rows[6]),
        scopes=codes,
        scope_names=names,
        status_now=_digits(rows[8]),
        next_ids=_ints(rows[9], count),
        log_ids=_ints(log[1], logged),
        log_at=parse_times(log[2], OPEN_START, logged),
        log_order=_ints(log[3], logged),
        log_status=_digits(log[4]),
    )


def _unsorted(spans: Spans) -> _Columns:
    """The columns of spans already built (to append new rows to)."""
    next_ids = np.where(spans.successor >= 0, spans.ids[np.maximum(spans.successor, 0)], -1)
    return _Columns(
        ids=spans.ids,
        created=spans.created,
        retired=spans.retired,
        valid_from=spans.valid_from,
        valid_to=spans.valid_to,
        types=spans.types,
        scopes=spans.scopes,
        scope_names=spans.scope_names,
        status_now=spans.status_now,
        next_ids=next_ids,
        log_ids=spans.ids[spans.log_row],
        log_at=spans.log_at,
        log_order=spans.log_order,
        log_status=spans.log_status,
    )


def _joined(old: _Columns, new: _Columns) -> _Columns:
    """Old rows and appended ones together (the scopes' codes merged)."""
    names = list(old.scope_names)
    code = {name: n for n, name in enumerate(names)}
    for name in new.scope_names:
        if name not in code:
            code[name] = len(names)
            names.append(name)
    remap = np.array([code[name] for name in new.scope_names], dtype=np.int32)
    new_scopes = remap[new.scopes] if len(new.scopes) else new.scopes
    return _Columns(
        ids=np.concatenate([old.ids, new.ids]),
        created=np.concatenate([old.created, new.created]),
        retired=np.concatenate([old.retired, new.retired]),
        valid_from=np.concatenate([old.valid_from, new.valid_from]),
        valid_to=np.concatenate([old.valid_to, new.valid_to]),
        types=np.concatenate([old.types, new.types]),
        scopes=np.concatenate([old.scopes, new_scopes]).astype(np.int32),
        scope_names=tuple(names),
        status_now=np.concatenate([old.status_now, new.status_now]),
        next_ids=np.concatenate([old.next_ids, new.next_ids]),
        log_ids=np.concatenate([old.log_ids, new.log_ids]),
        log_at=np.concatenate([old.log_at, new.log_at]),
        log_order=np.concatenate([old.log_order, new.log_order]),
        log_status=np.concatenate([old.log_status, new.log_status]),
    )


def _assemble(cols: _Columns) -> Spans:
    count = len(cols.ids)
    # Display order: the latest start first (valid_from, or created_at when the start is open), then the id.
    start = np.where(cols.valid_from == OPEN_START, cols.created, cols.valid_from)
    order = np.lexsort((-cols.ids, -start))
    ids = cols.ids[order]
    next_ids = cols.next_ids[order]
    by_id = np.argsort(ids, kind="stable")
    sorted_ids = ids[by_id]
    sorted_rows = by_id.astype(np.int64)

    successor = np.full(count, -1, dtype=np.int64)
    if count:
        linked = next_ids >= 0
        rows_next, found = _lookup(sorted_ids, sorted_rows, next_ids[linked])
        successor[np.flatnonzero(linked)[found]] = rows_next[found]

    log_rows, known = _lookup(sorted_ids, sorted_rows, cols.log_ids)  # a row written between the reads: left out
    log_rows, log_at = log_rows[known], cols.log_at[known]
    log_status, log_order = cols.log_status[known], cols.log_order[known]
    # Each row's entries together, in time order (ties in the order they were written).
    by_row = np.lexsort((log_order, log_at, log_rows))
    return Spans(
        ids=ids,
        created=cols.created[order],
        retired=cols.retired[order],
        valid_from=cols.valid_from[order],
        valid_to=cols.valid_to[order],
        types=cols.types[order],
        scopes=cols.scopes[order],
        scope_names=cols.scope_names,
        status_now=cols.status_now[order],
        successor=successor,
        log_row=log_rows[by_row],
        log_at=log_at[by_row],
        log_status=log_status[by_row],
        log_order=log_order[by_row],
        sorted_ids=sorted_ids,
        sorted_rows=sorted_rows,
        max_id=int(ids.max()) if count else -1,
        max_log_rowid=int(log_order.max()) if len(log_order) else -1,
        last_logged=int(log_at.max()) if len(log_at) else OPEN_START,
    )


async def append_spans(store: Store, spans: Spans, moved: int) -> Spans | None:
    """`spans` with the rows written since, when the only change was appending them: the facts' change
    counter moved by exactly as many rows as are new (every insert, update and delete moves it by one)
    and the status log gained entries for those rows only. None when anything else changed."""
    rows, log = await _read(store, spans.max_id, spans.max_log_rowid)
    if int(rows[0]) != moved:
        return None
    new = _columns(rows, log)
    if len(new.log_ids) and not bool(np.isin(new.log_ids, new.ids).all()):
        return None  # an older row's status changed too
    return await asyncio.to_thread(lambda: _assemble(_joined(_unsorted(spans), new)))


def stood_at(fact: Fact, recorded: int) -> Fact:
    """A row of the slice at recorded time `recorded` (microseconds) as it stood then: a version superseded
    only after that time was then its chain's head, so it reads as not superseded (its status then is
    the slice's, from `Spans.status_at`)."""
    if fact.superseded_at is not None and micros(fact.superseded_at) > recorded:
        return replace(fact, superseded_at=None, superseded_by=None)
    return fact


_MARKS = ("facts", "scheduled_forgets")  # what moves when a row or its holds change
_MARK_COLUMNS = ", ".join(f"(SELECT value FROM change_counters WHERE name = '{name}')" for name in _MARKS)
_FACT_COLUMNS = ", ".join(f"f.{c.strip()}" for c in COLUMNS.split(","))  # the facts row FactBook reads


class TimelineBook:
    """Slices, pages and diffs of the timeline over the current `Spans`, rebuilt when the facts move."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = asyncio.Lock()
        self._spans: Spans | None = None
        self._marks: tuple[int, ...] | None = None
        self._id_sets: dict[tuple[str, tuple[str, ...]], Ints] = {}  # subject / text filters, per build
        self.builds = 0  # how many times the spans were read whole, and grown by appended rows
        self.appends = 0

    async def spans(self) -> Spans:
        """The current spans: rebuilt only when the facts (or their holds) changed since the last build,
        and only the new rows read when facts were just added (a memory worker's usual change)."""
        async with self._lock:
            marks = await self._change_marks()
            before = self._marks
            if self._spans is not None and before is not None and marks[1] == before[1] and marks[0] > before[0]:
                grown = await append_spans(self._store, self._spans, marks[0] - before[0])
                if grown is not None:
                    self.appends += 1
                    self._spans, self._marks, self._id_sets = grown, marks, {}
            if self._spans is None or marks != self._marks:
                self._spans = await build_spans(self._store)
                self.builds += 1
                self._marks = marks
                self._id_sets = {}
            return self._spans

    async def _change_marks(self) -> tuple[int, ...]:
        marks = ",".join("?" * len(_MARKS))
        rows = await self._store.read_all(f"SELECT name, value FROM change_counters WHERE name IN ({marks})", _MARKS)
        found = {str(r[0]): int(r[1]) for r in rows}
        return tuple(found.get(name, 0) for name in _MARKS)

    # -- slices --------------------------------------------------------------------------------------
    async def slice(
        self, point: Point, where: TimelineFilter, *, offset: int = 0, limit: int = 200, now: datetime | None = None
    ) -> TimelinePage:
        """A page of the slice at `point`, with the whole slice's size. One read of the store as a rule:
        the page's rows come with the change counters, and only if those moved is the page taken again
        over the spans brought up to date (each read is a trip to the store's thread and back, which a
        busy window pays for in waiting, so a drag makes as few as it can)."""
        spans = self._spans if self._spans is not None and not self._lock.locked() else await self.spans()
        world, recorded = point.resolved(now or datetime.now(UTC))
        for _attempt in range(3):
            statuses = spans.status_at(recorded)
            rows = np.flatnonzero(await self._mask(spans, world, recorded, statuses, where))
            offset = max(0, min(offset, len(rows)))
            page = rows[offset : offset + max(0, limit)]
            found, marks = await self._read_rows(spans.ids[page].tolist())
            if marks == self._marks:
                break
            spans = await self.spans()
        facts, forgotten = await self._with_statuses(spans, page, statuses, found)
        return TimelinePage(total=len(rows), offset=offset, facts=facts, forgotten=forgotten)

    async def as_recorded(
        self, point: Point, where: TimelineFilter, *, limit: int = 200, now: datetime | None = None
    ) -> tuple[Fact, ...]:
        """The facts of the slice at `point` (in display order; no forgotten ones: their text is gone), each
        as it stood at the slice's recorded time: the status it had then, and not superseded if it was
        superseded only later (`stood_at`). What `familiar facts list --recorded-at T` prints."""
        spans = await self.spans()
        world, recorded = point.resolved(now or datetime.now(UTC))
        statuses = spans.status_at(recorded)
        mask = await self._mask(spans, world, recorded, statuses, where)
        rows = np.flatnonzero(mask & (spans.status_now != FORGOTTEN))[: max(0, limit)]
        facts, _forgotten = await self._rows(spans, rows, statuses)
        return tuple(stood_at(f, recorded) for f in facts)

    async def versions_at(self, ids: Sequence[int], recorded_at: datetime) -> tuple[Fact, ...]:
        """These rows (a chain's versions, in the order given) as they stood at `recorded_at`: only those
        recorded by then, each with the status it had then and not superseded if only superseded later."""
        spans = await self.spans()
        recorded = micros(recorded_at)
        rows = spans.rows_of(ids)
        rows = rows[spans.created[rows] <= recorded]
        facts, _forgotten = await self._rows(spans, rows, spans.status_at(recorded))
        return tuple(stood_at(f, recorded) for f in facts)

    async def diff(
        self, before: Point, after: Point, where: TimelineFilter, *, limit: int = 500, now: datetime | None = None
    ) -> TimelineDiffRows:
        """What changed from one point to another: rows only in the second (added), only in the first
        (removed), and the same fact as another version or with another status (changed)."""
        spans = await self.spans()
        moment = now or datetime.now(UTC)
        world_a, recorded_a = before.resolved(moment)
        world_b, recorded_b = after.resolved(moment)
        status_a, status_b = spans.status_at(recorded_a), spans.status_at(recorded_b)
        in_a = await self._mask(spans, world_a, recorded_a, status_a, where)
        in_b = await self._mask(spans, world_b, recorded_b, status_b, where)
        only_a, only_b = in_a & ~in_b, in_b & ~in_a
        pairs: list[tuple[int, int]] = []  # (row at the first point, row at the second)
        paired = np.zeros(len(spans), dtype=bool)
        for start, other, first_is_older in ((only_a, only_b, True), (only_b, only_a, False)):
            for row in np.flatnonzero(start).tolist():
                if paired[row]:
                    continue
                newer = self._newer_in(spans, row, other, paired)
                if newer is not None:
                    paired[row] = paired[newer] = True
                    pairs.append((row, newer) if first_is_older else (newer, row))
        restated = np.flatnonzero(in_a & in_b & (status_a != status_b))
        added = np.flatnonzero(only_b & ~paired)
        removed = np.flatnonzero(only_a & ~paired)
        changed = sorted([*pairs, *((int(r), int(r)) for r in restated)], key=lambda p: min(p))
        chosen_changed = changed[:limit]
        chosen_added, chosen_removed = added[:limit], removed[:limit]
        need_a = np.array([p[0] for p in chosen_changed] + chosen_removed.tolist(), dtype=np.int64)
        need_b = np.array([p[1] for p in chosen_changed] + chosen_added.tolist(), dtype=np.int64)
        facts_a, forgotten_a = await self._rows(spans, need_a, status_a)
        facts_b, forgotten_b = await self._rows(spans, need_b, status_b)
        at_a = dict(zip(need_a.tolist(), facts_a, strict=True))
        at_b = dict(zip(need_b.tolist(), facts_b, strict=True))
        out: list[tuple[int, DiffRow]] = []
        out += [(min(a, b), DiffRow("changed", at_a[a], at_b[b])) for a, b in chosen_changed]
        out += [(int(r), DiffRow("added", None, at_b[int(r)])) for r in chosen_added]
        out += [(int(r), DiffRow("removed", at_a[int(r)], None)) for r in chosen_removed]
        out.sort(key=lambda item: item[0])
        return TimelineDiffRows(
            rows=tuple(row for _position, row in out),
            added=len(added),
            removed=len(removed),
            changed=len(changed),
            forgotten={**forgotten_a, **forgotten_b},
        )

    @staticmethod
    def _newer_in(spans: Spans, row: int, wanted: Mask, taken: Mask) -> int | None:
        """The first later version of `row` (along superseded_by) that `wanted` holds, if any."""
        current = row
        for _step in range(_CHAIN_STEPS):  # a cycle (which the store refuses) cannot loop forever here
            current = int(spans.successor[current])
            if current < 0:
                return None
            if wanted[current] and not taken[current]:
                return current
        return None

    async def extent(self) -> TimelineExtent:
        spans = await self.spans()
        subjects = await self._store.read_all("SELECT DISTINCT subject FROM fact_subjects ORDER BY subject")
        if not len(spans):
            return TimelineExtent(0, None, None, None, tuple(str(r[0]) for r in subjects), ())
        starts = np.where(spans.valid_from == OPEN_START, spans.created, spans.valid_from)
        named = [spans.created, spans.valid_from[spans.valid_from != OPEN_START]]
        named += [spans.valid_to[spans.valid_to != OPEN_END], spans.retired[spans.retired != OPEN_END]]
        # The codes in use by counting, not np.unique: its first call imports numpy.ma (20 ms, on the loop).
        used = np.flatnonzero(np.bincount(spans.scopes, minlength=len(spans.scope_names)))
        return TimelineExtent(
            rows=len(spans),
            first_recorded=from_micros(int(spans.created.min())),
            first_world=from_micros(int(starts.min())),
            last_world=from_micros(max(int(a.max()) for a in named if len(a))),
            subjects=tuple(str(r[0]) for r in subjects),
            places=tuple(sorted(spans.scope_names[int(c)] for c in used)),
        )

    # -- filters ---------------------------------------------------------------------------------------
    async def _mask(self, spans: Spans, world: int, recorded: int, statuses: Codes, where: TimelineFilter) -> Mask:
        mask = spans.held_at(world, recorded)
        if where.types:
            mask &= np.isin(spans.types, [_TYPE_CODE[t] for t in where.types])
        if where.statuses:
            mask &= np.isin(statuses, [_STATUS_CODE[s] for s in where.statuses])
        if where.places:
            codes = [
                code
                for code, scope in enumerate(spans.scope_names)
                if any(scope == p or scope.startswith(p + "/") for p in where.places)
            ]
            mask &= np.isin(spans.scopes, codes)
        if where.subjects:
            mask &= np.isin(spans.ids, await self._ids_about(where.subjects))
        if where.text.strip():
            mask &= np.isin(spans.ids, await self._ids_saying(where.text.strip()))
        return mask

    async def _ids_about(self, subjects: tuple[str, ...]) -> Ints:
        key = ("subjects", tuple(sorted(set(subjects))))
        if key not in self._id_sets:
            marks = ",".join("?" * len(key[1]))
            rows = await self._store.read_all(
                f"SELECT fact_id FROM fact_subjects WHERE subject IN ({marks})"
                " UNION SELECT j.value FROM forget_receipts r, json_each(r.fact_ids) j"
                f" WHERE EXISTS (SELECT 1 FROM json_each(r.subjects) s WHERE s.value IN ({marks}))",
                [*key[1], *key[1]],
            )
            self._id_sets[key] = np.array(sorted(int(r[0]) for r in rows), dtype=np.int64)
        return self._id_sets[key]

    async def _ids_saying(self, text: str) -> Ints:
        key = ("text", (text.casefold(),))
        if key not in self._id_sets:
            pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = await self._store.read_all(
                "SELECT id FROM facts WHERE status != 'forgotten' AND content LIKE ? ESCAPE '\\'", (pattern,)
            )
            found = {int(r[0]) for r in rows}
            if not text.isascii():  # LIKE folds ASCII letters only: fold the rest here, on the rows that could match
                found |= await self._ids_folding(text.casefold())
            self._id_sets[key] = np.array(sorted(found), dtype=np.int64)
        return self._id_sets[key]

    async def _ids_folding(self, folded: str) -> set[int]:
        rows = await self._store.read_all("SELECT id, content FROM facts WHERE status != 'forgotten'")
        return {int(r[0]) for r in rows if folded in str(r[1]).casefold()}

    # -- rows ------------------------------------------------------------------------------------------
    async def _rows(self, spans: Spans, rows: Ints, statuses: Codes) -> tuple[tuple[Fact, ...], dict[int, ForgetInfo]]:
        """The facts at these row positions (in this order), each with the status in `statuses`."""
        found, _marks = await self._read_rows(spans.ids[rows].tolist())
        return await self._with_statuses(spans, rows, statuses, found)

    async def _with_statuses(
        self, spans: Spans, rows: Ints, statuses: Codes, found: Mapping[int, Fact]
    ) -> tuple[tuple[Fact, ...], dict[int, ForgetInfo]]:
        out: list[Fact] = []
        forgotten: list[int] = []
        for row in rows.tolist():
            fact = found.get(int(spans.ids[row]))
            if fact is None:  # deleted since the spans were built (an import's reset): left out
                continue
            if fact.status == "forgotten":
                forgotten.append(fact.id)
            then = STATUSES[int(statuses[row])]
            out.append(fact if fact.status == then else replace(fact, status=then))
        return tuple(out), await self.forget_info(forgotten) if forgotten else {}

    async def _read_rows(self, ids: Sequence[int]) -> tuple[dict[int, Fact], tuple[int, ...]]:
        """Fact rows by id, and the change counters, in one read (the rows: at most _IN_CHUNK)."""
        out: dict[int, Fact] = {}
        marks: tuple[int, ...] = ()
        chunks = [list(ids[n : n + _IN_CHUNK]) for n in range(0, len(ids), _IN_CHUNK)] or [[]]
        for chunk in chunks:
            join = f"f.id IN ({','.join('?' * len(chunk))})" if chunk else "0"
            rows = await self._store.read_all(
                f"SELECT {_MARK_COLUMNS}, {_FACT_COLUMNS} FROM (SELECT 1) LEFT JOIN facts f ON {join}", chunk
            )
            for row in rows:
                marks = tuple(int(v or 0) for v in row[: len(_MARKS)])
                if row[len(_MARKS)] is not None:
                    fact = from_row(row[len(_MARKS) :])
                    out[fact.id] = fact
        return out, marks

    async def forget_info(self, fact_ids: Sequence[int]) -> dict[int, ForgetInfo]:
        """Content-free labels of forgotten rows: the subjects and time of their receipt (or of their log)."""
        out: dict[int, ForgetInfo] = {}
        for start in range(0, len(fact_ids), _IN_CHUNK):
            chunk = list(fact_ids[start : start + _IN_CHUNK])
            marks = ",".join("?" * len(chunk))
            receipts = await self._store.read_all(
                "SELECT j.value, r.id, r.subjects, r.created_at FROM forget_receipts r, json_each(r.fact_ids) j"
                f" WHERE j.value IN ({marks}) ORDER BY r.id",
                chunk,
            )
            logged = await self._store.read_all(
                "SELECT fact_id, MAX(at) FROM fact_status_log"
                f" WHERE status = 'forgotten' AND fact_id IN ({marks}) GROUP BY fact_id",
                chunk,
            )
            when = {int(r[0]): datetime.fromisoformat(r[1]) for r in logged}
            for fact_id in chunk:
                out[fact_id] = ForgetInfo(subjects=(), forgotten_at=when.get(fact_id), receipt_id=None)
            for fact_id, receipt_id, subjects, created in receipts:
                out[int(fact_id)] = ForgetInfo(
                    subjects=tuple(str(s) for s in json.loads(subjects)),
                    forgotten_at=when.get(int(fact_id)) or datetime.fromisoformat(created),
                    receipt_id=int(receipt_id),
                )
        return out
