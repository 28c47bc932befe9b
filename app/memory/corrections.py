"""Corrections: a fact's content never changes in place; a new version supersedes it.

The owner's edit, the fact_supersede worker's retirement of a prior in favour of a newer fact, and an
edited source message retiring what was learnt from its old text all leave the old row in the history,
linked to what replaced it (or retired with no successor). The undo of an edit reopens the version from
before and links the edit's version back to it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

import aiosqlite

from app.memory.facts import (
    Changes,
    Fact,
    FactBook,
    FactError,
    NewFact,
    current_in,
    fact_in,
    insert_row_in,
    iso,
    scoped_key,
    set_status_in,
    validate,
)
from app.memory.store import Store
from app.memory.tombstones import Tombstones


class Corrections:
    """Supersede links on the facts of one store."""

    def __init__(self, store: Store, facts: FactBook, tombstones: Tombstones) -> None:
        self._store = store
        self._facts = facts
        self._tombstones = tombstones

    async def edit(
        self, fact_id: int, revision: int, text: str, *, now: datetime | None = None
    ) -> tuple[Fact, Changes]:
        """Edit = supersede: a new row with the new text (active: the owner wrote it); the old row is
        linked to it and leaves current truth."""
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            old = await current_in(conn, fact_id, revision)
            if old.status not in ("pending", "active"):
                raise FactError(f"fact {fact_id} is {old.status}; only pending or active facts can be edited")
            replacement = validate(
                NewFact(
                    content=text,
                    type=old.type,
                    importance=old.importance,
                    confidence=1.0,
                    subjects=old.subjects,
                    place=old.scope if old.scope != "quarantine" else "local",
                    speaker=old.speaker,
                    source_turn_ids=old.source_turn_ids,
                    valid_from=old.valid_from,
                    valid_to=old.valid_to,
                    origin="edit",
                    channel_scoped=True,
                )
            )
            if await self._tombstones.blocks_in(conn, replacement.content, replacement.subjects):
                raise FactError("that text was forgotten before (a tombstone blocks it); lift the tombstone first")
            key = scoped_key(replacement.content, replacement.subjects, old.scope)
            twin = await _current_twin(conn, key, fact_id)
            if twin is not None:
                new_id = twin  # the corrected text is already known: link to it, add no copy
                cursor = await conn.execute(
                    "UPDATE facts SET status = 'active', revision = revision + 1, snoozed_until = NULL"
                    " WHERE id = ? AND status = 'pending'",
                    (new_id,),
                )
                if cursor.rowcount:  # the owner's edit accepts the pending twin: as_of reads must see it too
                    await conn.execute(
                        "INSERT INTO fact_status_log (fact_id, status, at) VALUES (?, 'active', ?)",
                        (new_id, iso(moment)),
                    )
            else:
                new_id = await insert_row_in(conn, replacement, old.scope, key, "active", moment)
            await _link(conn, fact_id, new_id, moment)
        return await self._facts.require(new_id), Changes(facts_index=True, fact_ids=[new_id, fact_id])

    async def revert_edit(self, fact_id: int, revision: int, *, now: datetime | None = None) -> tuple[Fact, Changes]:
        """Undo an edit: the version from before is the head again, as it was (its id, its dates, the status it
        had), and the edit's version leaves current truth, linked to the version it gave way back to and
        marked archived (so a later undo never takes it for the version an edit came from). Nothing else is
        rewritten: as-of slices still show the edit while it stood (beside the version it replaced, whose row,
        reopened in place, no longer records when it was retired). When the edit had found the corrected
        text already known (a twin it only linked to), the twin stays as it is, back in the queue if the
        edit was what accepted it."""
        moment = now or datetime.now(UTC)
        async with self._store.transaction() as conn:
            head = await current_in(conn, fact_id, revision)
            before = await fact_in(
                conn,
                "superseded_by = ? AND status IN ('pending', 'active') ORDER BY superseded_at DESC, id DESC LIMIT 1",
                (fact_id,),
            )
            if before is None or before.superseded_at is None:
                raise FactError(f"fact {fact_id} replaced no earlier version: there is no edit to undo")
            if await self._tombstones.blocks_in(conn, before.content, before.subjects):
                raise FactError("the text before the edit was forgotten since (a tombstone blocks it)")
            key = scoped_key(before.content, before.subjects, before.scope)
            twin = await _current_twin(conn, key, fact_id)
            if twin is not None and twin != before.id:
                raise FactError(f"the text before the edit is a current fact again (fact {twin})")
            linked_at = iso(before.superseded_at)
            await conn.execute(
                "UPDATE facts SET superseded_at = NULL, superseded_by = NULL, revision = revision + 1 WHERE id = ?",
                (before.id,),
            )
            if iso(head.created_at) == linked_at:  # the edit wrote this version: it gives way to the one before
                await _link(conn, head.id, before.id, moment)
                await set_status_in(conn, head, "archived", moment)
            elif head.status == "active" and await _accepted_at(conn, head.id, linked_at):
                await set_status_in(conn, head, "pending", moment)  # the twin the edit accepted waits again
        return await self._facts.require(before.id), Changes(facts_index=True, fact_ids=[before.id, fact_id])

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
                (iso(moment), new_id, old_id, new_id, old_id, new_id),
            )
            return "superseded" if cursor.rowcount else "skipped"

    async def retire_edited(self, old_turn_id: int, new_turn_id: int, *, now: datetime | None = None) -> list[int]:
        """A source message was edited: the facts derived from its old revision are retired (with no
        successor) and the new revision is queued for extraction. Returns the retired ids."""
        moment = iso(now or datetime.now(UTC))
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


async def _current_twin(conn: aiosqlite.Connection, key: str, other_than: int) -> int | None:
    """A current pending or active fact with this duplicate key, other than `other_than`."""
    async with conn.execute(
        "SELECT id FROM facts WHERE dedup_key = ? AND superseded_at IS NULL AND status IN ('pending', 'active')"
        " AND id != ? LIMIT 1",
        (key, other_than),
    ) as cursor:
        row = await cursor.fetchone()
    return None if row is None else int(row[0])


async def _accepted_at(conn: aiosqlite.Connection, fact_id: int, at: str | None) -> bool:
    """Whether the fact's latest status change is an accept made at `at` (an edit that accepted its twin)."""
    async with conn.execute(
        "SELECT status, at FROM fact_status_log WHERE fact_id = ? ORDER BY at DESC, rowid DESC LIMIT 1", (fact_id,)
    ) as cursor:
        row = await cursor.fetchone()
    return row is not None and row[0] == "active" and row[1] == at


async def _link(conn: aiosqlite.Connection, old_id: int, new_id: int, moment: datetime) -> None:
    await conn.execute(
        "UPDATE facts SET superseded_at = ?, superseded_by = ?, revision = revision + 1 WHERE id = ?",
        (iso(moment), new_id, old_id),
    )
