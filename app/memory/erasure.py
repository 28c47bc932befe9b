"""Forgetting: one home for erasing a fact everywhere, and for what a deleted message takes with it.

A forget erases a fact's whole supersede chain from the facts, the fact index, the embeddings and
every derived row that may quote it (dossiers, reflections, summaries), leaves a content-free
tombstone, and returns a receipt of each store it touched; with `redact_sources` also the messages it
came from and the familiar's replies quoting them. A Discord deletion redacts the message, forgets
the facts that came only from it and drops what quoted it. Each is one transaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiosqlite

from app.memory.errors import RevisionConflictError, StoreError
from app.memory.facts import Changes, FactBook, FactError, iso
from app.memory.quoting import FAMILIAR_SELF, QuoteFinder
from app.memory.store import Store
from app.memory.tombstones import Tombstones

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ForgetReceipt:
    fact_ids: tuple[int, ...]
    tombstone_id: int
    stores: tuple[tuple[str, int], ...]  # (store, rows or documents touched)
    redacted_turn_ids: tuple[int, ...] = ()  # the source messages (every revision of each)
    redacted_reply_ids: tuple[int, ...] = ()  # the familiar's replies that quoted them (app.memory.quoting)


@dataclass(frozen=True, slots=True)
class ForgetPreview:
    """What forgetting a fact would erase, counted now without writing anything."""

    fact_ids: tuple[int, ...]  # the versions still holding text
    subjects: tuple[str, ...]
    scope: str
    source_turn_ids: tuple[int, ...]  # the messages it came from (erased too only when redacting)
    stores: tuple[tuple[str, int], ...]  # (store, rows or documents that would go)


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
        cursor = await conn.execute(
            "DELETE FROM reflections WHERE EXISTS (SELECT 1 FROM json_each(reflections.cited_turn_ids) j"
            f" WHERE j.value IN ({marks}))",
            list(turn_ids),
        )
        out.append(("reflections", max(cursor.rowcount, 0)))
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


class Erasure:
    """Forgets on one store."""

    def __init__(self, store: Store, facts: FactBook, tombstones: Tombstones) -> None:
        self._store = store
        self._facts = facts
        self._tombstones = tombstones

    async def preview(self, fact_id: int, *, redact_sources: bool = False) -> ForgetPreview:
        """What `forget` would erase now: the same stores its receipt lists, counted (nothing is written)."""
        chain = await self._facts.chain(fact_id)
        live = [f for f in chain.facts if f.status != "forgotten"]
        if not live:
            raise FactError(f"fact {fact_id} is already forgotten")
        ids = [f.id for f in live]
        subjects = sorted({s for f in live for s in f.subjects})
        sources = sorted({t for f in live for t in f.source_turn_ids})
        marks = ",".join("?" * len(ids))
        stores: list[tuple[str, int]] = [("facts", len(ids)), ("fts/facts", len(ids))]
        vectors = await self._count(f"SELECT COUNT(*) FROM fact_embeddings WHERE fact_id IN ({marks})", ids)
        stores.append(("fact_embeddings", vectors))
        if subjects:
            subject_marks = ",".join("?" * len(subjects))
            dossiers = await self._count(
                f"SELECT COUNT(*) FROM people_dossiers WHERE canonical_key IN ({subject_marks})", subjects
            )
            stores.append(("people_dossiers", dossiers))
        reflections = await self._count(
            "SELECT COUNT(*) FROM reflections r WHERE EXISTS (SELECT 1 FROM json_each(r.cited_fact_ids) j"
            f" WHERE j.value IN ({marks}))"
            + (
                " OR EXISTS (SELECT 1 FROM json_each(r.cited_turn_ids) j"
                f" WHERE j.value IN ({','.join('?' * len(sources))}))"
                if sources
                else ""
            ),
            [*ids, *sources],
        )
        stores.append(("reflections", reflections))
        summaries = 0
        if sources:
            summaries = await self._count(
                "SELECT COUNT(*) FROM summaries s WHERE EXISTS (SELECT 1 FROM turns t"
                f" WHERE t.id IN ({','.join('?' * len(sources))}) AND t.place = s.place AND s.last_turn_id >= t.id)",
                sources,
            )
        stores.append(("summaries", summaries))
        if redact_sources:
            replies = [r for r in await self.replies_quoting_sources(ids) if r not in set(sources)]
            stores += [
                ("turns", len(sources)),
                ("turns (replies quoting them)", len(replies)),
                ("fts/turns", len(sources) + len(replies)),
            ]
        head = next((f for f in chain.facts if f.id == chain.head_id), live[-1])
        return ForgetPreview(
            fact_ids=tuple(ids),
            subjects=tuple(subjects),
            scope=head.scope,
            source_turn_ids=tuple(sources),
            stores=tuple(stores),
        )

    async def _count(self, sql: str, params: Sequence[Any]) -> int:
        row = await self._store.read_one(sql, params)
        return int(row[0]) if row else 0

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
        chain = await self._facts.chain(fact_id)
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
            tombstone_id = await self._tombstones.bury_in(conn, [(f.content, f.subjects) for f in live], reason, moment)
            marks = ",".join("?" * len(ids))
            await conn.execute(
                f"UPDATE facts SET content = '', subjects = '[]', speaker = NULL, dedup_key = 'forgotten:' || id,"
                f" status = 'forgotten', revision = revision + 1 WHERE id IN ({marks})",
                ids,
            )
            await conn.executemany(
                "INSERT INTO fact_status_log (fact_id, status, at) VALUES (?, 'forgotten', ?)",
                [(i, iso(moment)) for i in ids],
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
            cursor = await conn.execute(
                "DELETE FROM reflections WHERE EXISTS (SELECT 1 FROM json_each(reflections.cited_fact_ids) j"
                f" WHERE j.value IN ({marks}))",
                ids,
            )
            citing = max(cursor.rowcount, 0)
        quoting = dict(await drop_projections_quoting(conn, source_ids))
        if "reflections" in present:
            out.append(("reflections", citing + quoting.get("reflections", 0)))
        if "summaries" in quoting:
            out.append(("summaries", quoting["summaries"]))
        return out

    # -- propagation from the conversation ---------------------------------------------------------
    # -- a message deleted on Discord -----------------------------------------------------------------
    async def propagate_deletion(self, platform: str, message_id: int, turn_ids: Sequence[int]) -> None:
        """What a deleted message (its turns already redacted) takes with it: the facts that came only
        from it are forgotten, queued work on it cancelled, and what quoted it dropped. Each step is
        safe to repeat; the deletion's marker says the last one finished."""
        if turn_ids:
            await self.on_turns_deleted(turn_ids)
            async with self._store.transaction() as conn:
                await drop_projections_quoting(conn, turn_ids)
        await self._store.mark_propagated(platform, message_id)

    async def finish_interrupted_deletions(self) -> int:
        """Deletions a crash cut short (the turn redacted, its facts not yet forgotten) are finished."""
        finished = 0
        for platform, message_id in await self._store.deletions_to_propagate():
            try:
                turn_ids = await self._store.message_turn_ids(platform, message_id)
                await self.propagate_deletion(platform, message_id, turn_ids)
            except StoreError as exc:  # never a reason not to start: the marker stays for the next time
                _log.warning("could not finish the deletion of %s message %s: %s", platform, message_id, exc)
                continue
            finished += 1
        return finished

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
            current = await self._facts.get(int(fact_id))
            if current is None or current.status == "forgotten":
                continue  # already erased as part of an earlier chain
            receipt, _changes = await self.forget(int(fact_id), reason="its source message was deleted", now=now)
            receipts.append(receipt)
        return receipts
