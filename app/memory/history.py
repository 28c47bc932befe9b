"""A familiar's history: the SQL store plus its tantivy turn index, kept in step."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from app.memory.fts import TURNS, FtsIndex, IndexCommitter
from app.memory.records import IndexHealth, NewTurn, Turn, TurnSearchHit
from app.memory.store import Store

_log = logging.getLogger(__name__)


class TurnIndexSource:
    """Reads what the turn index should hold from SQL."""

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
        rows = await self._store.read_all("SELECT id FROM turns WHERE superseded = 0 AND redacted = 0")
        return {int(r[0]) for r in rows}


def _doc(row: tuple[int, str, str, str]) -> dict[str, Any]:
    return {"id": row[0], "place": row[1], "author": row[2], "content": row[3]}


class History:
    """Append, edit, redact and search turns. SQL first; the index follows through the committer."""

    def __init__(self, store: Store, turns_index: IndexCommitter) -> None:
        self.store = store
        self.turns_index = turns_index

    @classmethod
    async def open(
        cls,
        db_path: Path,
        fts_dir: Path,
        backups_dir: Path,
        *,
        on_health: Callable[[IndexHealth], None] | None = None,
        index: FtsIndex | None = None,
        batch_size: int = 5000,
    ) -> History:
        store = await Store.open(db_path, backups_dir)
        committer = IndexCommitter(
            index or FtsIndex(fts_dir / TURNS.name, TURNS),
            TurnIndexSource(store),
            on_health=on_health,
            batch_size=batch_size,
        )
        try:
            await committer.start()
        except BaseException:
            await store.close()
            raise
        return cls(store, committer)

    async def close(self) -> None:
        try:
            await self.turns_index.close()
        finally:
            await self.store.close()

    async def append_turn(self, turn: NewTurn) -> Turn | None:
        stored = await self.store.append_turn(turn)
        self.turns_index.notify()
        return stored

    async def append_turns(self, turns: Sequence[NewTurn]) -> list[int]:
        ids = await self.store.append_turns(turns)
        self.turns_index.notify()
        return ids

    async def edit_message(self, platform: str, message_id: int, content: str, edited_at: datetime) -> Turn | None:
        turn = await self.store.edit_message(platform, message_id, content, edited_at)
        self.turns_index.notify()
        return turn

    async def redact_message(self, platform: str, message_id: int, deleted_at: datetime) -> list[int]:
        ids = await self.store.redact_message(platform, message_id, deleted_at)
        self.turns_index.notify()
        return ids

    async def recent_turns(self, place: str, limit: int) -> list[Turn]:
        return await self.store.recent_turns(place, limit)

    async def search_turns(self, query: str, limit: int = 20, place: str | None = None) -> list[TurnSearchHit]:
        """BM25 hits mapped to their SQL rows; rows redacted since indexing are left out."""
        if not query.strip():
            return []
        hits = await self.turns_index.search(query, limit, place)
        turns = {t.id: t for t in await self.store.turns_by_ids([i for i, _s in hits])}
        return [TurnSearchHit(turn=turns[i], score=score) for i, score in hits if i in turns and not turns[i].redacted]

    async def catch_up(self, timeout: float = 60.0) -> None:
        """When this process writes the index: wait until it holds everything SQL has (after a crash,
        the first open re-indexes what the last run did not commit)."""
        if self.turns_index.index.writable:
            await self.turns_index.flush(timeout)

    def index_health(self) -> IndexHealth:
        return self.turns_index.health()
