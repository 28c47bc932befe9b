"""Why the familiar said what it said: each reply's explanation (the layers, lorebook entries, facts
and their scores, what the budget dropped), reachable from every turn the reply became. Owner-facing
records, pruned to the newest few thousand replies."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from app.config.redaction import redact_urls
from app.memory.store import Store

KEEP_EXPLANATIONS = 5000  # replies whose explanation stays available
PRUNE_EVERY = 100
_LINK = "INSERT OR REPLACE INTO explanation_turns (turn_id, explanation_id) VALUES (?, ?)"


class Explanations:
    """The explanations tables of one store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def save(self, place: str, body: dict[str, Any], turn_ids: Sequence[int]) -> int:
        """One reply's explanation, reachable from each turn it produced (a long reply is several messages).
        A web address in it is kept without its user:password (app.config.redaction)."""
        text = redact_urls(json.dumps(body, ensure_ascii=False))
        async with self._store.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO explanations (place, created_at, body) VALUES (?, ?, ?)",
                (place, datetime.now(UTC).isoformat(), text),
            )
            explanation_id = int(cursor.lastrowid or 0)
            await conn.executemany(_LINK, [(t, explanation_id) for t in turn_ids])
            if explanation_id % PRUNE_EVERY == 0:  # keep the newest KEEP_EXPLANATIONS, not every reply forever
                oldest_kept = explanation_id - KEEP_EXPLANATIONS
                await conn.execute("DELETE FROM explanation_turns WHERE explanation_id <= ?", (oldest_kept,))
                await conn.execute("DELETE FROM explanations WHERE id <= ?", (oldest_kept,))
        return explanation_id

    async def link(self, explanation_id: int, turn_ids: Sequence[int]) -> None:
        """More turns of the same reply (sent after it was saved)."""
        await self._store.write([(_LINK, (t, explanation_id)) for t in turn_ids])

    async def of_turn(self, turn_id: int) -> dict[str, Any] | None:
        """The explanation of the reply this turn belongs to, with its id, place and time."""
        row = await self._store.read_one(
            "SELECT e.id, e.place, e.created_at, e.body FROM explanation_turns t"
            " JOIN explanations e ON e.id = t.explanation_id WHERE t.turn_id = ?",
            (turn_id,),
        )
        if row is None:
            return None
        body: dict[str, Any] = json.loads(row[3])
        return {"explanation_id": int(row[0]), "place": str(row[1]), "created_at": str(row[2]), **body}
