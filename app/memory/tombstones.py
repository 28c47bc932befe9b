"""Tombstone queries beside FactBook's (which makes and lifts them): which ones cannot block, and
putting a lifted one back in force (the undo of a lift)."""

from __future__ import annotations

from collections.abc import Sequence

from app.memory.facts import FactError
from app.memory.store import Store


async def foreign_tombstones(store: Store, ids: Sequence[int] | None = None) -> dict[int, str]:
    """Tombstone id -> the id of the key it was hashed with, for those hashed with a key this store
    does not hold (app.memory.tombstone_keys): they are kept but cannot block."""
    if ids is not None and not ids:
        return {}
    where = "" if ids is None else f" AND id IN ({','.join('?' * len(ids))})"
    rows = await store.read_all(f"SELECT id, key_id FROM tombstones WHERE key_id IS NOT NULL{where}", list(ids or ()))
    return {int(r[0]): str(r[1]) for r in rows}


async def reimpose_tombstone(store: Store, tombstone_id: int) -> None:
    """A lifted tombstone blocks again (what it blocked cannot be learned from now on; a fact learned
    again while it was lifted stays, for the owner to forget)."""
    async with store.transaction() as conn:
        cursor = await conn.execute(
            "UPDATE tombstones SET lifted_at = NULL WHERE id = ? AND lifted_at IS NOT NULL", (tombstone_id,)
        )
        if cursor.rowcount:
            return
        async with conn.execute("SELECT 1 FROM tombstones WHERE id = ?", (tombstone_id,)) as found:
            exists = await found.fetchone() is not None
    raise FactError(
        f"tombstone {tombstone_id} is in force already" if exists else f"there is no tombstone {tombstone_id}"
    )
