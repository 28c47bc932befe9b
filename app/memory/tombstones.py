"""Tombstones: what a forget leaves behind so the text is never learnt again.

A tombstone is a keyed hash of a forgotten fact's normalized text and subjects (app.memory.policy),
content-free: without the key nobody can test a guess of the text against it. Insert, edit and the
revert of an edit refuse a text a tombstone in force blocks; the owner can lift one.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import aiosqlite

from app.memory.errors import StoreError
from app.memory.policy import tombstone_hash
from app.memory.store import Store

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

    def __init__(self, store: Store) -> None:
        self._store = store
        self._secret: bytes | None = None

    async def secret_in(self, conn: aiosqlite.Connection) -> bytes:
        """The hashing key, made (in the caller's transaction) the first time one is needed."""
        if self._secret is None:
            async with conn.execute("SELECT value FROM store_meta WHERE key = 'tombstone_key'") as cursor:
                row = await cursor.fetchone()
            if row is None:
                # Not cached until read back committed: this transaction may still roll back, and a key
                # that never reached the disk would leave every tombstone hashed with it unmatched later.
                value = secrets.token_bytes(32)
                await conn.execute("INSERT INTO store_meta (key, value) VALUES ('tombstone_key', ?)", (value,))
                return value
            self._secret = bytes(row[0])
        return self._secret

    async def secret(self) -> bytes:
        if self._secret is None:
            async with self._store.transaction() as conn:
                return await self.secret_in(conn)
        return self._secret

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
