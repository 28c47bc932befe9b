"""The tombstone key: where it lives, its id, and which tombstones it can make block.

A tombstone is a keyed hash (HMAC-SHA256) of a forgotten fact's normalized text and subjects. Whoever
holds the hashes and the key can test guesses of a forgotten text ("is it 'Alice is pregnant'?"), so
the key is not kept in history.db: a familiar keeps it in the OS keyring, or in the bot token's
fallback file when there is none (app.config.secrets), through `VaultKeys`. A database written
before that kept it in its `store_meta` table; the first open moves it out, deletes it from the
database (secure_delete, the WAL truncated, VACUUM if any trace is left) and from the migration
backups beside it.

What history.db keeps instead is not secret:
- `store_meta` `tombstone_key_id`: the id of the key the tombstones were hashed with (an HMAC of a
  constant under the key: it names the key, it reveals nothing of it);
- `tombstones.key_id`: NULL for a tombstone hashed with that key (it blocks), else the id of another
  key, for a "foreign" tombstone: one that came with an import whose key did not travel with it, or
  whose key this machine does not have (the data folder copied to another computer without the
  keyring). A foreign tombstone is kept, listed and exported, but cannot block: nothing can
  compute its hash.

`StoreMetaKeys` is the old way (the key in `store_meta`), for a database opened on its own (tests,
benchmarks); it refuses a database whose key has moved out.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import secrets
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import aiosqlite

from app.config.secrets import SecretsUnavailableError
from app.memory.errors import StoreError
from app.memory.store import Store, blocks_hold

_log = logging.getLogger(__name__)

SECRET_NAME = "tombstone_key"  # its name in the keyring / the secrets file
_LEGACY = "tombstone_key"  # its old row in store_meta
_ID = "tombstone_key_id"
_SCRUB = "tombstone_key_scrub"  # the key moved out; the backups may still hold it
_HEX64 = re.compile(r"[0-9a-f]{64}")
KEY_BYTES = 32


def key_id(key: bytes) -> str:
    """A short public name of a key: an HMAC of a constant under it (reveals nothing of the key)."""
    return hmac.new(key, b"familiar tombstone key id", hashlib.sha256).hexdigest()[:16]


class KeyVault(Protocol):
    """Where a familiar's secrets live (app.config.secrets.SecretStore)."""

    @property
    def backend_name(self) -> str: ...

    def read(self, key: str) -> str:
        """The value, "" when there is none; SecretsUnavailableError when it cannot be read."""
        ...

    def set(self, key: str, value: str) -> None: ...


class TombstoneKeys:
    """The key tombstones are hashed with, for one store (see the module docstring)."""

    async def prepare(self, store: Store, backups_dir: Path) -> None:
        """Called once when the store opens."""

    async def secret(self, conn: aiosqlite.Connection) -> bytes:
        """The key, inside a write transaction (a first key is created with it)."""
        raise NotImplementedError

    async def secret_now(self, store: Store) -> bytes:
        """The key, outside any transaction."""
        raise NotImplementedError

    async def current(self, store: Store) -> bytes | None:
        """The key now, without creating one (None: there is none yet)."""
        raise NotImplementedError

    async def stage(self, key: bytes) -> None:
        """Before an import's transaction that adopts `key`: put it where it will be read."""

    async def record(self, conn: aiosqlite.Connection, key: bytes) -> None:
        """Inside that transaction: the store now says `key` is the one."""
        raise NotImplementedError

    async def settle(self, key: bytes | None, committed: bool) -> None:
        """After it: keep `key` if the transaction committed, else put the old key back."""


class StoreMetaKeys(TombstoneKeys):
    """The key in history.db's store_meta, for a database opened on its own (tests, benchmarks). A
    familiar's database keeps its key in the keyring (`VaultKeys`): refused here."""

    def __init__(self) -> None:
        self._secret: bytes | None = None

    async def _check(self, conn: aiosqlite.Connection) -> None:
        async with conn.execute("SELECT 1 FROM store_meta WHERE key = ?", (_ID,)) as cursor:
            if await cursor.fetchone() is not None:
                raise StoreError(
                    "this database's tombstone key is kept in the OS keyring (or the secrets file):"
                    " open it through its familiar"
                )

    async def secret(self, conn: aiosqlite.Connection) -> bytes:
        if self._secret is None:
            await self._check(conn)
            async with conn.execute("SELECT value FROM store_meta WHERE key = ?", (_LEGACY,)) as cursor:
                row = await cursor.fetchone()
            if row is None:
                # Not cached until read back committed: this transaction may still roll back, and a key
                # that never reached the disk would leave every tombstone hashed with it unmatched later.
                value = secrets.token_bytes(KEY_BYTES)
                await conn.execute("INSERT INTO store_meta (key, value) VALUES (?, ?)", (_LEGACY, value))
                return value
            self._secret = bytes(row[0])
        return self._secret

    async def secret_now(self, store: Store) -> bytes:
        if self._secret is None:
            async with store.transaction() as conn:
                return await self.secret(conn)
        return self._secret

    async def current(self, store: Store) -> bytes | None:
        row = await store.read_one("SELECT value FROM store_meta WHERE key = ?", (_LEGACY,))
        return bytes(row[0]) if row is not None else None

    async def record(self, conn: aiosqlite.Connection, key: bytes) -> None:
        await self._check(conn)
        await conn.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", (_LEGACY, key))

    async def settle(self, key: bytes | None, committed: bool) -> None:
        self._secret = key if committed and key is not None else None


class VaultKeys(TombstoneKeys):
    """The key in the OS keyring or the secrets file (a familiar's store)."""

    def __init__(self, vault: KeyVault) -> None:
        self._vault = vault
        self._key: bytes | None = None
        self._previous: bytes | None = None

    @property
    def where(self) -> str:
        return self._vault.backend_name

    async def _read(self) -> bytes | None:
        try:
            text = (await asyncio.to_thread(self._vault.read, SECRET_NAME)).strip()
        except (SecretsUnavailableError, OSError) as exc:
            raise StoreError(f"the tombstone key cannot be read: {exc}") from exc
        if not text:
            return None
        if not _HEX64.fullmatch(text):
            raise StoreError(
                f"the tombstone key kept in the {self._vault.backend_name} is damaged (not 64 hex digits);"
                " nothing was changed"
            )
        return bytes.fromhex(text)

    async def _write(self, key: bytes) -> None:
        try:
            await asyncio.to_thread(self._vault.set, SECRET_NAME, key.hex())
        except OSError as exc:
            raise StoreError(
                f"the tombstone key cannot be kept in the {self._vault.backend_name} ({exc.strerror or exc});"
                " nothing was changed"
            ) from exc
        if await self._read() != key:
            raise StoreError(f"the tombstone key did not stay in the {self._vault.backend_name}; nothing was changed")

    async def prepare(self, store: Store, backups_dir: Path) -> None:
        """Find the key (moving an old database's out of it), or make the first one. One process at a
        time: the write transaction serialises two opening together. When everything is in place (the
        key in the vault, its id recorded, nothing left to move or erase), it is read and nothing is
        written: opening a familiar to read it writes nothing (a full disk, a command beside the window)."""
        stored = await self._read()
        settled = await store.read_all(
            "SELECT key, value FROM store_meta WHERE key IN (?, ?, ?)", (_LEGACY, _ID, _SCRUB)
        )
        found = {str(row[0]): row[1] for row in settled}
        if stored is not None and set(found) == {_ID} and str(found[_ID]) == key_id(stored):
            self._key = stored
            return
        async with store.transaction() as conn:
            legacy = await _meta(conn, _LEGACY)
            recorded = await _meta(conn, _ID)
            stored = await self._read()  # again: another process may have made the first key meanwhile
            if legacy is not None:
                key = bytes(legacy)
                if stored not in (None, key):
                    _log.warning("the tombstone key in the %s is replaced by history.db's own", self.where)
                if stored != key:
                    await self._write(key)
                # secure_delete (set when the store opens) zeroes the row's bytes in its page.
                await conn.execute("DELETE FROM store_meta WHERE key = ?", (_LEGACY,))
                await _set_meta(conn, _SCRUB, "pending")
                _log.info("moved the tombstone key out of history.db into the %s", self.where)
            elif stored is None:
                key = secrets.token_bytes(KEY_BYTES)
                await self._write(key)
            else:
                key = stored
            if recorded is not None and str(recorded) != key_id(key):
                # Tombstones hashed with a key this machine does not have (the data folder copied without
                # the keyring, the keyring wiped): kept and listed, but nothing can match them any more.
                cursor = await conn.execute("UPDATE tombstones SET key_id = ? WHERE key_id IS NULL", (str(recorded),))
                if cursor.rowcount:
                    _log.warning(
                        "%d tombstones were made with a tombstone key that is not in the %s; they are kept"
                        " but can no longer stop forgotten facts being learned again",
                        cursor.rowcount,
                        self.where,
                    )
            if recorded is None or str(recorded) != key_id(key):
                await _set_meta(conn, _ID, key_id(key))
            scrub = await _meta(conn, _SCRUB) is not None
        self._key = key
        if scrub:
            await _erase_traces(store, key, backups_dir)

    def _cached(self) -> bytes:
        if self._key is None:
            raise StoreError("the tombstone key is not loaded (the store was not prepared)")
        return self._key

    async def secret(self, conn: aiosqlite.Connection) -> bytes:
        recorded = await _meta(conn, _ID)
        if recorded is not None and str(recorded) != key_id(self._cached()):
            # Another process adopted a key (an import) since this one read it.
            fresh = await self._read()
            if fresh is None or key_id(fresh) != str(recorded):
                raise StoreError(f"the tombstone key in the {self.where} does not match history.db's; reopen")
            self._key = fresh
        return self._cached()

    async def secret_now(self, _store: Store) -> bytes:
        return self._cached()

    async def current(self, _store: Store) -> bytes | None:
        return self._key

    async def stage(self, key: bytes) -> None:
        self._previous = self._key
        if key != self._key:
            await self._write(key)

    async def record(self, conn: aiosqlite.Connection, key: bytes) -> None:
        await _set_meta(conn, _ID, key_id(key))

    async def settle(self, key: bytes | None, committed: bool) -> None:
        if committed:
            self._key = key if key is not None else self._key
            return
        previous, self._previous = self._previous, None
        if previous is not None and key is not None and key != previous:
            await self._write(previous)


async def _meta(conn: aiosqlite.Connection, name: str) -> Any:
    async with conn.execute("SELECT value FROM store_meta WHERE key = ?", (name,)) as cursor:
        row = await cursor.fetchone()
    return None if row is None else row[0]


async def _set_meta(conn: aiosqlite.Connection, name: str, value: str) -> None:
    await conn.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", (name, value))


async def _erase_traces(store: Store, key: bytes, backups_dir: Path) -> None:
    """After the key left store_meta: no copy of it may stay in history.db, its WAL, or the backups
    written before (each a whole copy of the database). What cannot be done now (another process
    holding the WAL, a backup that cannot be written) is logged and tried again at the next open."""
    try:
        await store.checkpoint()  # the page without the row replaces the old one; the WAL is truncated
        if await asyncio.to_thread(store.file_holds, key):
            _log.info("traces of the old tombstone key remain in %s: vacuuming it", store.path.name)
            await store.vacuum()
        if await asyncio.to_thread(store.file_holds, key):
            raise StoreError(f"the old tombstone key is still in {store.path} (another process may hold it open)")
        await asyncio.to_thread(_scrub_backups, backups_dir, key)
    except (StoreError, sqlite3.Error, OSError) as exc:
        _log.warning("%s; trying again at the next start", exc)
        return
    async with store.transaction() as conn:
        await conn.execute("DELETE FROM store_meta WHERE key = ?", (_SCRUB,))


def _holds(path: Path, key: bytes, chunk: int = 1 << 20) -> bool:
    """Whether a backup file holds these bytes anywhere (never history.db itself: Store.file_holds)."""
    try:
        with path.open("rb") as handle:
            return blocks_hold(iter(lambda: handle.read(chunk), b""), key)
    except FileNotFoundError:
        return False


def _scrub_backups(backups_dir: Path, key: bytes) -> None:
    if not backups_dir.is_dir():
        return
    for backup in sorted(backups_dir.glob("*.db")):
        try:
            if not _holds(backup, key):
                continue
            conn = sqlite3.connect(backup, isolation_level=None)
            try:
                conn.execute("PRAGMA secure_delete = ON")
                conn.execute("DELETE FROM store_meta WHERE key = ?", (_LEGACY,))
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"the old tombstone key could not be erased from the backup {backup}: {exc}") from exc
        if _holds(backup, key):
            raise StoreError(f"the old tombstone key could not be erased from the backup {backup}")
        _log.info("erased the old tombstone key from the backup %s", backup.name)


# -- which tombstones block --------------------------------------------------------------------------
def readable_keys(vaults: Iterable[KeyVault]) -> list[bytes]:
    """The tombstone keys these vaults hold (blocking: keyring calls); one that cannot be read is
    left out (it only means an import finds fewer keys)."""
    out: list[bytes] = []
    for vault in vaults:
        try:
            text = vault.read(SECRET_NAME).strip()
        except (SecretsUnavailableError, OSError) as exc:
            _log.info("a tombstone key in the %s cannot be read: %s", vault.backend_name, exc)
            continue
        if _HEX64.fullmatch(text):
            out.append(bytes.fromhex(text))
    return out


def adoptable(file_key: bytes | None, local: Sequence[bytes], tombstone_key_ids: Iterable[str | None]) -> bytes | None:
    """The key an import should hash with: the file's own when it carries one; else, of the keys this
    machine holds (the familiar's own first), the one most of the file's tombstones were made with;
    None when none was (they stay foreign)."""
    if file_key is not None:
        return file_key
    wanted = Counter(i for i in tombstone_key_ids if i is not None)
    best: tuple[int, bytes] | None = None
    for key in local:
        hits = wanted.get(key_id(key), 0)
        if hits and (best is None or hits > best[0]):
            best = (hits, key)
    return best[1] if best is not None else None
