"""Forgetting: the one home of erasing a fact everywhere, and of what a deleted message takes with it.

A forget erases a fact's whole supersede chain, in one transaction, from every store that holds its
text or may quote it, each through its owner's own statement: the fact rows and their index
documents (facts.py), a content-free tombstone in their place (tombstones.py), the embeddings
(embeddings.py), the dossiers, reflections and summaries (derived.py); with `redact_sources` also the
messages it came from and the familiar's replies quoting them (store.py, app.memory.quoting). It
returns a receipt of each store it touched. The preview is the same forget, rolled back, so it
counts exactly what the forget would erase.

A Discord deletion redacts the message (store.py), forgets the facts that came only from it and drops
what quoted it (`propagate_deletion`), resumed at the next start if a crash cut it short.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiosqlite

from app.memory.derived import drop_dossiers_in, drop_reflections_citing, drop_summaries_covering
from app.memory.embeddings import drop_vectors_in
from app.memory.errors import RevisionConflictError, StoreError
from app.memory.facts import Changes, Fact, FactBook, FactError, blank_in, revisions_in, source_turns_in
from app.memory.quoting import QuoteFinder
from app.memory.records import SELF_KEY
from app.memory.store import Store, redact_turns_in
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
                    (place, last, SELF_KEY, *(() if upto is None else (upto,)), _SCAN_CHUNK),
                )
                if not rows:
                    break
                last = int(rows[-1][0])
                # Comparing texts is CPU work: off the event loop (the window's thread under qasync).
                batch = [(int(r[0]), str(r[1]), None if r[2] is None else int(r[2])) for r in rows]
                found.update(await asyncio.to_thread(self.finder.quoting, batch))
        return found


@dataclass(slots=True)
class _Plan:
    """A forget worked out before its transaction: the chain as read, what still holds text, and
    (with redact_sources) the familiar's replies found quoting the sources so far."""

    fact_id: int
    seen: dict[int, int]  # every version's revision when read: the transaction acts only if unchanged
    live: list[Fact]
    quoting: _QuotingScan | None
    scope: str

    @property
    def ids(self) -> list[int]:
        return [f.id for f in self.live]

    @property
    def subjects(self) -> list[str]:
        return sorted({s for f in self.live for s in f.subjects})

    @property
    def sources(self) -> list[int]:
        return sorted({t for f in self.live for t in f.source_turn_ids})


@dataclass(slots=True)
class _Tally:
    """The receipt's store counts, in the order they are erased."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, store: str, count: int) -> None:
        self.counts[store] = self.counts.get(store, 0) + count


class _RolledBack(Exception):  # noqa: N818 - not an error: how a preview leaves its transaction
    def __init__(self, receipt: ForgetReceipt) -> None:
        super().__init__("preview")
        self.receipt = receipt


class Erasure:
    """Forgets on one store."""

    def __init__(self, store: Store, facts: FactBook, tombstones: Tombstones) -> None:
        self._store = store
        self._facts = facts
        self._tombstones = tombstones

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
        plan = await self._plan(fact_id, revision, redact_sources)
        async with self._store.transaction() as conn:
            receipt = await self._erase(conn, plan, reason, now or datetime.now(UTC))
        changes = Changes(
            facts_index=True,
            turns_index=bool(receipt.redacted_turn_ids or receipt.redacted_reply_ids),
            fact_ids=list(receipt.fact_ids),
        )
        return receipt, changes

    async def preview(self, fact_id: int, *, redact_sources: bool = False) -> ForgetPreview:
        """What `forget` would erase now: the forget itself, in a transaction rolled back, so its counts
        are the receipt's own (nothing is written)."""
        plan = await self._plan(fact_id, None, redact_sources)
        try:
            async with self._store.transaction() as conn:
                raise _RolledBack(await self._erase(conn, plan, "preview", datetime.now(UTC)))
        except _RolledBack as undone:
            receipt = undone.receipt
        return ForgetPreview(
            fact_ids=receipt.fact_ids,
            subjects=tuple(plan.subjects),
            scope=plan.scope,
            source_turn_ids=tuple(plan.sources),
            stores=receipt.stores,
        )

    async def replies_quoting_sources(self, fact_ids: Sequence[int]) -> list[int]:
        """The familiar's replies a `forget(..., redact_sources=True)` of these facts would redact now."""
        scan = await _QuotingScan.prepare(_reader_query(self._store), fact_ids)
        return sorted(scan.found)

    async def _plan(self, fact_id: int, revision: int | None, redact_sources: bool) -> _Plan:
        chain = await self._facts.chain(fact_id)
        target = next(f for f in chain.facts if f.id == fact_id)
        if revision is not None and target.revision != revision:
            raise RevisionConflictError(
                f"fact {fact_id} changed since you saw it (revision {revision}, now {target.revision}); reload it"
            )
        live = [f for f in chain.facts if f.status != "forgotten"]
        if not live:
            raise FactError(f"fact {fact_id} is already forgotten")
        quoting = None
        if redact_sources:
            # The familiar's replies are read and compared before the write transaction, so a long
            # history does not hold up the writer; the transaction then looks only at replies newer
            # than this scan.
            quoting = await _QuotingScan.prepare(_reader_query(self._store), [f.id for f in live])
        head = next((f for f in chain.facts if f.id == chain.head_id), live[-1])
        return _Plan(fact_id, {f.id: f.revision for f in chain.facts}, live, quoting, head.scope)

    async def _erase(self, conn: aiosqlite.Connection, plan: _Plan, reason: str, moment: datetime) -> ForgetReceipt:
        # Overwrite freed bytes with zeros: SQLite builds without SQLITE_SECURE_DELETE (python.org's
        # Windows and macOS builds) would otherwise leave the erased text in the database file.
        await conn.execute("PRAGMA secure_delete = ON")
        # The chain was read before the transaction: if any of it changed since, act on nothing.
        if await revisions_in(conn, list(plan.seen)) != plan.seen:
            raise RevisionConflictError(f"fact {plan.fact_id} changed while it was being forgotten; try again")
        ids = plan.ids
        texts = [(f.content, f.subjects) for f in plan.live]
        tombstone_id = await self._tombstones.bury_in(conn, texts, reason, moment)
        await blank_in(conn, ids, moment)
        tally = _Tally()
        tally.add("facts", len(ids))
        tally.add("fts/facts", len(ids))
        tally.add("fact_embeddings", await drop_vectors_in(conn, ids))
        # Derived rows that may quote the fact go, and their workers rebuild them from what is left:
        # the dossiers of its subjects, the reflections citing it, and what quotes its source messages.
        if plan.subjects:
            tally.add("people_dossiers", await drop_dossiers_in(conn, plan.subjects))
        sources = await source_turns_in(conn, ids)
        tally.add("reflections", await drop_reflections_citing(conn, fact_ids=ids, turn_ids=sources))
        tally.add("summaries", await drop_summaries_covering(conn, sources))
        redacted: list[int] = []
        replies: list[int] = []
        if plan.quoting is not None:
            query = _conn_query(conn)
            marks = ",".join("?" * len(ids))
            turn_ids = [int(r[0]) for r in await query(_SOURCE_REVISIONS.format(marks=marks), [*ids, *ids])]
            reply_ids = await plan.quoting.finish(query, exclude=set(turn_ids))
            redacted = await redact_turns_in(conn, turn_ids)
            replies = await redact_turns_in(conn, reply_ids)
            tally.add("turns", len(redacted))
            tally.add("turns (replies quoting them)", len(replies))
            tally.add("fts/turns", len(redacted) + len(replies))
            # What quoted the replies goes too (their sources' summaries and reflections went above).
            tally.add("summaries", await drop_summaries_covering(conn, replies))
            tally.add("reflections", await drop_reflections_citing(conn, turn_ids=replies))
        return ForgetReceipt(
            fact_ids=tuple(ids),
            tombstone_id=tombstone_id,
            stores=tuple(tally.counts.items()),
            redacted_turn_ids=tuple(redacted),
            redacted_reply_ids=tuple(replies),
        )

    # -- a message deleted on Discord -----------------------------------------------------------------
    async def propagate_deletion(self, platform: str, message_id: int, turn_ids: Sequence[int]) -> None:
        """What a deleted message (its turns already redacted) takes with it: the facts that came only
        from it are forgotten, queued work on it cancelled, and what quoted it dropped. Each step is
        safe to repeat; the deletion's marker says the last one finished."""
        if turn_ids:
            await self.on_turns_deleted(turn_ids)
            async with self._store.transaction() as conn:
                await drop_summaries_covering(conn, turn_ids)
                await drop_reflections_citing(conn, turn_ids=turn_ids)
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
