"""Tombstones: what a forget leaves behind so the text is never learnt again.

A tombstone is a keyed hash of a forgotten fact's normalized text and subjects (app.memory.policy),
content-free: without the key nobody can test a guess of the text against it. Insert, edit and the
revert of an edit refuse a text a tombstone in force blocks; the owner can lift one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import aiosqlite

from app.memory.errors import StoreError
from app.memory.policy import tombstone_hash
from app.memory.store import Store
from app.memory.tombstone_keys import StoreMetaKeys, TombstoneKeys

_REASON_CHARS = 200
_COLUMNS = "id, hash, reason, created_at, lifted_at"


@dataclass(frozen=True, slots=True)
class Tombstone:
    id: int
    hash: str
    reason: str
    created_at: datetime
    lifted_at: datetime | None


def _tombstone(row: Sequence[object]) -> Tombstone:
    lifted = row[4]
    return Tombstone(
        int(str(row[0])),
        str(row[1]),
        str(row[2]),
        datetime.fromisoformat(str(row[3])),
        datetime.fromisoformat(str(lifted)) if lifted else None,
    )


class Tombstones:
    """The tombstones table of one store, and the key its hashes are made with."""

    def __init__(self, store: Store, keys: TombstoneKeys | None = None) -> None:
        self._store = store
        # Where the tombstone key lives (app.memory.tombstone_keys): a familiar's in the OS keyring.
        self.keys = keys if keys is not None else StoreMetaKeys()

    async def secret_in(self, conn: aiosqlite.Connection) -> bytes:
        """The hashing key, made (in the caller's transaction) the first time one is needed."""
        return await self.keys.secret(conn)

    async def secret(self) -> bytes:
        return await self.keys.secret_now(self._store)

    async def blocks_in(self, conn: aiosqlite.Connection, text: str, subjects: Sequence[str]) -> bool:
        """Whether a tombstone in force blocks this text about these subjects (in the caller's transaction)."""
        hashed = tombstone_hash(await self.secret_in(conn), text, subjects)
        async with conn.execute(
            "SELECT 1 FROM tombstones WHERE hash = ? AND lifted_at IS NULL LIMIT 1", (hashed,)
        ) as cursor:
            return await cursor.fetchone() is not None

    async def bury_in(
        self, conn: aiosqlite.Connection, texts: Iterable[tuple[str, Sequence[str]]], reason: str, moment: datetime
    ) -> int:
        """Tombstones for these (text, subjects), in the caller's transaction; returns the first id."""
        secret = await self.secret_in(conn)
        first = 0
        for hashed in sorted({tombstone_hash(secret, text, subjects) for text, subjects in texts}):
            cursor = await conn.execute(
                "INSERT INTO tombstones (hash, reason, created_at) VALUES (?, ?, ?)",
                (hashed, reason[:_REASON_CHARS], moment.astimezone(UTC).isoformat()),
            )
            first = first or int(cursor.lastrowid or 0)
        return first

    async def filter(self) -> Callable[[str, Sequence[str]], bool]:
        """A check "would this text and these subjects be refused as forgotten?", over the hashes of
        the tombstones in force now (for dreaming, which must never re-learn what was forgotten)."""
        secret = await self.secret()
        rows = await self._store.read_all("SELECT hash FROM tombstones WHERE lifted_at IS NULL")
        hashes = frozenset(str(r[0]) for r in rows)

        def forgotten(text: str, subjects: Sequence[str]) -> bool:
            return tombstone_hash(secret, text, subjects) in hashes

        return forgotten

    async def fetch_all(self, *, include_lifted: bool = False) -> list[Tombstone]:
        rows = await self._store.read_all(
            f"SELECT {_COLUMNS} FROM tombstones"
            + ("" if include_lifted else " WHERE lifted_at IS NULL")
            + " ORDER BY id"
        )
        return [_tombstone(r) for r in rows]

    async def lift(self, tombstone_id: int, *, now: datetime | None = None) -> Tombstone:
        """Allow what it blocked to be learned again."""
        moment = (now or datetime.now(UTC)).astimezone(UTC).isoformat()
        async with self._store.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE tombstones SET lifted_at = ? WHERE id = ? AND lifted_at IS NULL", (moment, tombstone_id)
            )
            if not cursor.rowcount:
                raise TombstoneError(f"there is no tombstone {tombstone_id} in force")
        row = await self._store.read_one(f"SELECT {_COLUMNS} FROM tombstones WHERE id = ?", (tombstone_id,))
        assert row is not None
        return _tombstone(row)


class TombstoneError(StoreError):
    """A tombstone operation was refused."""


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
    raise TombstoneError(
        f"tombstone {tombstone_id} is in force already" if exists else f"there is no tombstone {tombstone_id}"
    )
