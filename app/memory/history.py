"""A familiar's history: the SQL store plus its tantivy turn index, kept in step."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from app.memory.committer import IndexCommitter
from app.memory.corrections import Corrections
from app.memory.decisions import Decisions
from app.memory.erasure import Erasure, ForgetReceipt
from app.memory.errors import IndexUnavailableError
from app.memory.facts import Changes, Fact, FactBook, InsertOutcome, NewFact
from app.memory.fts import FACTS, TURNS, FtsIndex, IndexTiming
from app.memory.intake import FactIntake
from app.memory.policy import TYPE_WEIGHTS, visible_scopes
from app.memory.records import IndexHealth, NewTurn, Turn, TurnSearchHit
from app.memory.scan import merge_hits, scan_facts, scan_turns
from app.memory.sql import in_chunks
from app.memory.store import Store
from app.memory.tombstone_keys import TombstoneKeys
from app.memory.tombstones import Tombstones
from app.memory.watermarks import WatermarkAdvance

_log = logging.getLogger(__name__)


class TurnIndexSource:
    """Reads what the turn index should hold from SQL."""

    _INDEXABLE = "superseded = 0 AND redacted = 0"  # the latest revision of each message, text still there

    def __init__(self, store: Store) -> None:
        self._store = store

    async def documents_after(self, watermark: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        rows, reached = await self._store.turns_for_index(watermark, limit)
        return [_doc(r) for r in rows], reached

    async def removals(self, limit: int) -> list[tuple[int, int]]:
        return await self._store.outbox(TURNS.name, limit)

    async def load_state(self) -> tuple[int, int, bool]:
        return await self._store.index_state(TURNS.name)

    async def save_state(
        self, *, watermark: int, schema_version: int, rebuilding: bool, outbox_upto: int | None
    ) -> None:
        await self._store.set_index_state(
            TURNS.name,
            watermark=watermark,
            schema_version=schema_version,
            rebuilding=rebuilding,
            outbox_upto=outbox_upto,
        )

    async def newest_id(self) -> int:
        return await self._store.max_turn_id()

    async def documents_by_ids(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        turns = await self._store.turns_by_ids(ids)
        return [_doc((t.id, t.place, t.author_name, t.content)) for t in turns if not t.redacted]

    async def indexable_ids(self) -> set[int]:
        rows = await self._store.read_all(f"SELECT id FROM turns WHERE {self._INDEXABLE}")
        return {int(r[0]) for r in rows}

    async def backlog(self, watermark: int) -> tuple[int, int]:
        return await _backlog(
            self._store, TURNS.name, f"SELECT COUNT(*) FROM turns WHERE id > ? AND {self._INDEXABLE}", watermark
        )

    async def indexable_count(self) -> tuple[int, int]:
        return await _count(self._store, f"SELECT COUNT(*), MAX(id) FROM turns WHERE {self._INDEXABLE}")


def _doc(row: tuple[int, str, str, str]) -> dict[str, Any]:
    return {"id": row[0], "place": row[1], "author": row[2], "content": row[3]}


class FactIndexSource:
    """Reads what the fact index should hold from SQL: every fact with text (any status; recall
    filters status, scope and time in SQL). Forgotten facts leave through the outbox."""

    _INDEXABLE = "status != 'forgotten'"

    def __init__(self, store: Store) -> None:
        self._store = store

    async def documents_after(self, watermark: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        rows = await self._store.read_all(
            "SELECT id, scope, content, status FROM facts WHERE id > ? ORDER BY id LIMIT ?", (watermark, limit)
        )
        reached = int(rows[-1][0]) if rows else watermark
        docs = [{"id": int(r[0]), "place": str(r[1]), "content": str(r[2])} for r in rows if r[3] != "forgotten"]
        return docs, reached

    async def removals(self, limit: int) -> list[tuple[int, int]]:
        return await self._store.outbox(FACTS.name, limit)

    async def load_state(self) -> tuple[int, int, bool]:
        return await self._store.index_state(FACTS.name)

    async def save_state(
        self, *, watermark: int, schema_version: int, rebuilding: bool, outbox_upto: int | None
    ) -> None:
        await self._store.set_index_state(
            FACTS.name,
            watermark=watermark,
            schema_version=schema_version,
            rebuilding=rebuilding,
            outbox_upto=outbox_upto,
        )

    async def newest_id(self) -> int:
        row = await self._store.read_one("SELECT COALESCE(MAX(id), 0) FROM facts")
        return int(row[0]) if row else 0

    async def documents_by_ids(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for chunk, marks in in_chunks(ids):
            rows = await self._store.read_all(
                f"SELECT id, scope, content FROM facts WHERE id IN ({marks}) AND {self._INDEXABLE}", chunk
            )
            out.extend({"id": int(r[0]), "place": str(r[1]), "content": str(r[2])} for r in rows)
        return out

    async def indexable_ids(self) -> set[int]:
        rows = await self._store.read_all(f"SELECT id FROM facts WHERE {self._INDEXABLE}")
        return {int(r[0]) for r in rows}

    async def backlog(self, watermark: int) -> tuple[int, int]:
        return await _backlog(
            self._store, FACTS.name, f"SELECT COUNT(*) FROM facts WHERE id > ? AND {self._INDEXABLE}", watermark
        )

    async def indexable_count(self) -> tuple[int, int]:
        return await _count(self._store, f"SELECT COUNT(*), MAX(id) FROM facts WHERE {self._INDEXABLE}")


async def _count(store: Store, query: str) -> tuple[int, int]:
    """(rows, the highest id among them), in one snapshot, read apart from the shared reader: it scans
    the whole table (about 60 ms at 100k turns)."""
    row = await store.read_one_apart(query)
    return (int(row[0]), int(row[1] or 0)) if row else (0, 0)


async def _backlog(store: Store, name: str, count_after: str, watermark: int) -> tuple[int, int]:
    """(documents past the watermark to add, removals waiting in the outbox), counted in SQL."""
    added = await store.read_one(count_after, (watermark,))
    removed = await store.read_one("SELECT COUNT(*) FROM index_outbox WHERE name = ?", (name,))
    return (int(added[0]) if added else 0, int(removed[0]) if removed else 0)


def health_file(db_path: Path, name: str) -> Path:
    """Where the process writing the `name` index shares its health: beside history.db, out of the index
    folder, which is what a lock or a read-only disk refuses (app/memory/index/health_file.py)."""
    return db_path.with_name(f"fts-{name}.health.json")


class History:
    """Append, edit, redact and search turns; the facts beside them. SQL first; the indexes follow
    through their committers, woken after each change.

    The fact tables have one object per job: `facts` reads them, `intake` inserts (every rule of what
    may be learnt), `decisions` moves a fact's status (the owner's decisions and their undo),
    `corrections` supersedes (edits, the supersede worker, edited sources), `tombstones` keeps what
    was forgotten from being learnt again, and `erasure` forgets (everywhere, in one transaction)."""

    def __init__(
        self,
        store: Store,
        turns_index: IndexCommitter,
        facts_index: IndexCommitter,
        keys: TombstoneKeys | None = None,
    ) -> None:
        self.store = store
        self.turns_index = turns_index
        self.facts_index = facts_index
        self.tombstones = Tombstones(store, keys)
        self.facts = FactBook(store)
        self.intake = FactIntake(store, self.tombstones)
        self.decisions = Decisions(store, self.facts)
        self.corrections = Corrections(store, self.facts, self.tombstones)
        self.erasure = Erasure(store, self.facts, self.tombstones)
        self._scanning: set[str] = set()  # indexes whose searches the store answers now (logged once)

    @classmethod
    async def open(
        cls,
        db_path: Path,
        fts_dir: Path,
        backups_dir: Path,
        *,
        on_health: Callable[[IndexHealth], None] | None = None,
        index: FtsIndex | None = None,
        facts_index: FtsIndex | None = None,
        batch_size: int = 5000,
        index_timing: IndexTiming | None = None,
        keys: TombstoneKeys | None = None,
        reading: bool = False,
    ) -> History:
        """`keys`: where the tombstone key lives (a familiar passes `VaultKeys` over its SecretStore);
        None keeps it in the database itself, for a database opened on its own (tests, benchmarks).
        `reading`: for a command that only reads: nothing is written at open unless it must be, and on a
        full disk the store is read as it stands, the indexes only read (app.memory.store)."""
        store = await Store.open(db_path, backups_dir, reading=reading)
        if keys is not None:
            try:
                await keys.prepare(store, backups_dir)
            except BaseException:
                await store.close()
                raise
        committer = IndexCommitter(
            index or FtsIndex(fts_dir / TURNS.name, TURNS),
            TurnIndexSource(store),
            on_health=on_health,
            batch_size=batch_size,
            timing=index_timing,
            health_file=health_file(db_path, TURNS.name),
            read_only=store.read_only,
        )
        facts_committer = IndexCommitter(
            facts_index or FtsIndex(fts_dir / FACTS.name, FACTS),
            FactIndexSource(store),
            on_health=on_health,
            batch_size=batch_size,
            timing=index_timing,
            health_file=health_file(db_path, FACTS.name),
            read_only=store.read_only,
            # Facts arrive in bursts (an extraction batch, an import): gather them for a second, so the
            # commit work interrupts the conversation less often. Measured at 100k facts: with 0.2 s the
            # commits beside a burst of inserts put the insert p95 at 1.3-3.4 ms, with 1 s at 0.5-0.9 ms.
            # Whoever needs a fact searchable at once (forget's receipt, tests) flushes.
            linger=1.0,
        )
        started: list[IndexCommitter] = []
        try:
            for each in (committer, facts_committer):
                await each.start()
                started.append(each)
        except BaseException:
            for each in started:
                await each.close()
            await store.close()
            raise
        history = cls(store, committer, facts_committer, keys)
        if committer.owns_index:  # the process that owns the memory finishes what a crash cut short
            try:
                finished = await history.erasure.finish_interrupted_deletions()
                history.facts_index.notify()
            except BaseException:
                await history.close()
                raise
            if finished:
                _log.warning("finished %d message deletions a crash had interrupted", finished)
        return history

    async def close(self) -> None:
        try:
            await self.turns_index.close()
            await self.facts_index.close()
        finally:
            await self.store.close()

    def indexes(self) -> tuple[IndexCommitter, IndexCommitter]:
        return (self.turns_index, self.facts_index)

    def _wake(self, changes: Changes) -> None:
        if changes.facts_index:
            self.facts_index.notify()
        if changes.turns_index:
            self.turns_index.notify()

    async def append_turn(self, turn: NewTurn) -> Turn | None:
        stored = await self.store.append_turn(turn)
        self.turns_index.notify()
        return stored

    async def append_turns(self, turns: Sequence[NewTurn]) -> list[int]:
        ids = await self.store.append_turns(turns)
        self.turns_index.notify()
        return ids

    async def edit_message(self, platform: str, message_id: int, content: str, edited_at: datetime) -> Turn | None:
        """A new revision; facts derived from the old one are retired and the new one queued."""
        before = await self.store.latest_revision(platform, message_id)
        turn = await self.store.edit_message(platform, message_id, content, edited_at)
        self.turns_index.notify()
        if turn is not None and before is not None:
            await self.corrections.retire_edited(before.id, turn.id)
        return turn

    async def revise_turn(self, turn_id: int, content: str, revised_at: datetime) -> Turn | None:
        """A new revision of the turn `turn_id` (as an edit makes: facts derived from the old one are
        retired and the new one queued); None when it is not the latest revision or is unchanged."""
        turn = await self.store.revise_turn(turn_id, content, revised_at)
        self.turns_index.notify()
        if turn is not None:
            await self.corrections.retire_edited(turn_id, turn.id)
        return turn

    async def redact_message(self, platform: str, message_id: int, deleted_at: datetime) -> list[int]:
        """A deleted message: its turns are redacted, facts that came only from it are tombstoned and
        queued work on it is cancelled. The deletion marker keeps a later backfill out."""
        ids = await self.store.redact_message(platform, message_id, deleted_at)
        self.turns_index.notify()
        await self.erasure.propagate_deletion(platform, message_id, ids)
        if ids:
            self.facts_index.notify()
        return ids

    async def recent_turns(self, place: str, limit: int, *, ending_at: int | None = None) -> list[Turn]:
        return await self.store.recent_turns(place, limit, ending_at=ending_at)

    async def search_turns(self, query: str, limit: int = 20, place: str | None = None) -> list[TurnSearchHit]:
        """BM25 hits mapped to their SQL rows; rows redacted since indexing are left out. While the
        index cannot answer (locked, being rebuilt), the store answers (see `_hits`)."""
        if not query.strip():
            return []

        async def scan(after_id: int | None) -> list[tuple[int, float]]:
            return await scan_turns(self.store, query, limit, place, after_id=after_id)

        hits = await self._hits(self.turns_index, query, limit, place, scan)
        turns = {t.id: t for t in await self.store.turns_by_ids([i for i, _s in hits])}
        return [TurnSearchHit(turn=turns[i], score=score) for i, score in hits if i in turns and not turns[i].redacted]

    async def _hits(
        self,
        committer: IndexCommitter,
        query: str,
        limit: int,
        place: str | tuple[str, ...] | None,
        scan: Callable[[int | None], Awaitable[list[tuple[int, float]]]],
    ) -> list[tuple[int, float]]:
        """The index's hits. SQL is the truth, so a search never fails for want of its index: when the
        index cannot answer, a scan of the store answers instead; when it is open but locked (it lacks
        what arrived since), the rows it lacks are scanned and merged in."""
        name = committer.index.spec.name
        try:
            hits = await committer.search(query, limit, place)
        except IndexUnavailableError as exc:
            if name not in self._scanning:
                self._scanning.add(name)
                _log.warning("%s; searches answer from the store until it is back", exc)
            return await scan(None)
        stale = await committer.stale_after()
        if stale is None:
            if name in self._scanning:
                self._scanning.discard(name)
                _log.info("the %s search index answers again", name)
            return hits
        return merge_hits(hits, await scan(stale), limit)

    async def catch_up(self, timeout: float = 60.0) -> None:
        """When this process writes the index: wait until it holds everything SQL has (after a crash,
        the first open re-indexes what the last run did not commit). An index that is locked, that a
        full disk refuses, or not done within `timeout`, is not waited for: searches answer from the
        store meanwhile."""
        for committer in self.indexes():
            if committer.owns_index:
                try:
                    if committer.health().disk_full:
                        raise IndexUnavailableError(committer.unavailable_reason())
                    await committer.flush(timeout)
                except (IndexUnavailableError, TimeoutError) as exc:
                    reason = str(exc) or f"the {committer.index.spec.name} index is still catching up"
                    _log.warning("not waiting for the index: %s", reason)

    # -- facts -------------------------------------------------------------------------------------
    async def insert_fact(self, new: NewFact) -> InsertOutcome:
        outcome, changes = await self.intake.insert(new)
        self._wake(changes)
        return outcome

    async def insert_facts(
        self, news: Sequence[NewFact], *, advance: Sequence[WatermarkAdvance] = ()
    ) -> list[InsertOutcome]:
        """A batch in one transaction (all validated first: one invalid fact writes none), moving the
        watermarks of `advance` in the same transaction."""
        outcomes, changes = await self.intake.insert_many(news, advance=advance)
        self._wake(changes)
        return outcomes

    async def edit_fact(self, fact_id: int, revision: int, text: str) -> Fact:
        fact, changes = await self.corrections.edit(fact_id, revision, text)
        self._wake(changes)
        return fact

    async def forget_fact(
        self, fact_id: int, *, revision: int | None = None, redact_sources: bool = False
    ) -> ForgetReceipt:
        """Forget, and return the receipt only once the indexes no longer hold the text."""
        # The forget itself drops what quotes its source messages, redacted or not.
        receipt, changes = await self.erasure.forget(fact_id, revision=revision, redact_sources=redact_sources)
        await self.store.checkpoint()  # the erased text must not linger in the write-ahead log either
        self._wake(changes)
        for committer, touched in ((self.facts_index, changes.facts_index), (self.turns_index, changes.turns_index)):
            if touched and committer.owns_index:
                try:
                    await committer.flush()
                except IndexUnavailableError as exc:
                    # SQL is the truth: the text is out of every search (results are checked against
                    # SQL), and the outbox takes it out of the index once the lock is gone.
                    _log.warning("forgotten; %s, so the index drops the text once it is back", exc)
        return receipt

    async def search_facts(self, query: str, limit: int = 20) -> list[tuple[Fact, float]]:
        """Full-text search over every fact with text (any status), best first."""
        if not query.strip() or limit <= 0:
            return []

        async def scan(after_id: int | None) -> list[tuple[int, float]]:
            return await scan_facts(self.store, query, limit, after_id=after_id)

        hits = await self._hits(self.facts_index, query, limit, None, scan)
        out: list[tuple[Fact, float]] = []
        for fact_id, score in hits:
            fact = await self.facts.get(fact_id)
            if fact is not None and fact.status != "forgotten":
                out.append((fact, score))
        return out

    async def recall_candidates(self, query: str, where: str, fetch: int) -> tuple[list[tuple[Fact, float]], float]:
        """Among the `fetch` best full-text hits for `query`, the facts recall may use at `where`
        (active, current heads in scope) with their raw BM25 scores, in hit order; and the best score
        of all the hits. Every recall path goes through here, so the scope rules live in one place."""
        scopes = visible_scopes(where)  # a bad place is an error before any search
        if not query.strip() or fetch <= 0:
            return [], 0.0

        # The index filters by scope, so facts of other places can never crowd out this place's own.
        async def scan(after_id: int | None) -> list[tuple[int, float]]:
            return await scan_facts(self.store, query, fetch, scopes, after_id=after_id)

        hits = await self._hits(self.facts_index, query, fetch, scopes, scan)
        facts = await self.facts.get_many(await self.facts.visible_ids([i for i, _s in hits], where))
        best = max((s for _i, s in hits), default=0.0)
        return [(facts[i], score) for i, score in hits if i in facts], best

    async def recall(self, query: str, where: str, limit: int = 10) -> list[tuple[Fact, float]]:
        """The facts recall may use at `where` for `query`: active, current heads in scope, scored by
        BM25 (normalized within the over-fetched batch) times the type weight."""
        candidates, best = await self.recall_candidates(query, where, limit * 4)
        scored = [(fact, bm25 / (best or 1.0) * TYPE_WEIGHTS[fact.type]) for fact, bm25 in candidates]
        scored.sort(key=lambda pair: pair[1], reverse=True)
        return scored[:limit]

    def index_health(self) -> IndexHealth:
        return self.turns_index.health()
