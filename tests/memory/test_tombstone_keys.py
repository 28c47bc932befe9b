"""The tombstone key lives in the OS keyring (here: the SecretStore's fallback file, as on a machine
without a keyring), never in history.db: a copy of the database alone cannot be used to test guesses
of a forgotten text. Older databases have theirs moved out, and erased from the file, its WAL and the
migration backups beside it."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import tomllib
from pathlib import Path

import pytest

from app.config.secrets import SecretStore
from app.memory.errors import StoreError
from app.memory.export import export_records, import_records
from app.memory.facts import Fact, NewFact
from app.memory.history import History
from app.memory.policy import tombstone_hash
from app.memory.store import Store
from app.memory.tombstone_keys import VaultKeys, key_id
from app.memory.tombstones import foreign_tombstones
from tests.memory.helpers import PLACE

pytestmark = pytest.mark.asyncio

ALICE = "discord:7001"
SECRET_TEXT = "Alice's locker code is 4417"


def vault(root: Path, familiar: str = "default") -> SecretStore:
    return SecretStore(familiar, root / "secrets.toml", use_keyring=False)


def files(root: Path) -> tuple[Path, Path, Path]:
    return root / "history.db", root / "fts", root / "backups"


async def open_history(root: Path, secrets: SecretStore | None = None) -> History:
    keys = VaultKeys(secrets) if secrets is not None else None
    return await History.open(*files(root), keys=keys)


def fact(text: str = SECRET_TEXT) -> NewFact:
    return NewFact(text, "semantic", 6, 0.9, (ALICE,), PLACE, origin="remember")


async def remember_and_forget(history: History, text: str = SECRET_TEXT) -> Fact:
    outcome = await history.insert_fact(fact(text))
    assert outcome.fact is not None
    await history.forget_fact(outcome.fact.id)
    return outcome.fact


async def relearn(history: History, text: str = SECRET_TEXT) -> str:
    return (await history.insert_fact(fact(text))).outcome


def stored_key(secrets_file: Path, familiar: str = "default") -> bytes:
    return bytes.fromhex(tomllib.loads(secrets_file.read_text(encoding="utf-8"))[familiar]["tombstone_key"])


def holds(path: Path, needle: bytes) -> bool:
    return any(each.exists() and needle in each.read_bytes() for each in (path, path.with_name(path.name + "-wal")))


def meta(db: Path) -> dict[str, object]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT key, value FROM store_meta").fetchall())


async def test_the_key_is_kept_in_the_secrets_store_and_nowhere_in_the_database(tmp_path: Path) -> None:
    secrets = vault(tmp_path)
    history = await open_history(tmp_path, secrets)
    try:
        await remember_and_forget(history)
        assert await relearn(history) == "tombstoned"
        stone = (await history.tombstones.fetch_all())[0]
        await history.store.checkpoint()
    finally:
        await history.close()
    key = stored_key(tmp_path / "secrets.toml")
    assert stone.hash == tombstone_hash(key, SECRET_TEXT, (ALICE,))
    db = tmp_path / "history.db"
    assert not holds(db, key)
    assert not holds(db, key.hex().encode())
    assert "tombstone_key" not in meta(db)
    assert meta(db)["tombstone_key_id"] == key_id(key)  # a name for the key, which reveals nothing of it

    # A copy of the database alone: nothing in it can reproduce the tombstone's hash (no guess can be tested),
    # and opening it as a bare database refuses rather than hashing with a new key of its own.
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(db, copy / "history.db")
    with sqlite3.connect(copy / "history.db") as conn:
        values = [
            bytes(v) if isinstance(v, bytes) else str(v).encode()
            for (v,) in conn.execute("SELECT value FROM store_meta")
        ]
    assert all(tombstone_hash(v, SECRET_TEXT, (ALICE,)) != stone.hash for v in values)
    bare = await open_history(copy)
    try:
        with pytest.raises(StoreError, match="kept in the OS keyring"):
            await bare.insert_fact(fact())
    finally:
        await bare.close()

    # The familiar itself, opened again, still blocks it.
    again = await open_history(tmp_path, vault(tmp_path))
    try:
        assert await relearn(again) == "tombstoned"
    finally:
        await again.close()


async def test_an_old_database_has_its_key_moved_out_and_erased_from_the_file_and_the_backups(
    tmp_path: Path,
) -> None:
    old = await open_history(tmp_path)  # the way every database kept it before: in store_meta
    try:
        await remember_and_forget(old)
        await old.store.checkpoint()
    finally:
        await old.close()
    db, _fts, backups = files(tmp_path)
    key = bytes(meta(db)["tombstone_key"])  # type: ignore[arg-type]
    backups.mkdir(exist_ok=True)
    backup = backups / "history-v6-20250101T000000Z.db"
    shutil.copy(db, backup)  # a migration's backup written before the move holds it too
    assert holds(db, key)
    assert holds(backup, key)

    history = await open_history(tmp_path, vault(tmp_path))
    try:
        assert await relearn(history) == "tombstoned"  # the same key, now from the secrets store
    finally:
        await history.close()
    assert stored_key(tmp_path / "secrets.toml") == key
    assert not holds(db, key), "the key's bytes are still in history.db or its WAL"
    assert not holds(backup, key), "the key's bytes are still in the backup"
    assert set(meta(db)) >= {"tombstone_key_id"}
    assert not {"tombstone_key", "tombstone_key_scrub"} & set(meta(db))
    with sqlite3.connect(backup) as conn:  # the backup is still a whole database, less the key
        assert conn.execute("SELECT COUNT(*) FROM tombstones").fetchone() == (1,)


async def test_a_key_lost_with_the_keyring_leaves_tombstones_that_say_they_cannot_block(tmp_path: Path) -> None:
    history = await open_history(tmp_path, vault(tmp_path))
    try:
        await remember_and_forget(history)
    finally:
        await history.close()
    old_id = key_id(stored_key(tmp_path / "secrets.toml"))
    (tmp_path / "secrets.toml").unlink()  # the data folder copied to another computer, without the keyring

    history = await open_history(tmp_path, vault(tmp_path))
    try:
        stones = await history.tombstones.fetch_all()
        assert await foreign_tombstones(history.store) == {stones[0].id: old_id}
        assert await relearn(history) == "inserted"  # honestly: nothing can match its hash any more
        relearned = await history.facts.list_facts(status="all")
        await history.forget_fact(relearned[-1].id)  # a new forget, with the new key, blocks again
        assert await relearn(history) == "tombstoned"
    finally:
        await history.close()
    assert key_id(stored_key(tmp_path / "secrets.toml")) != old_id


async def test_an_unreadable_secrets_file_stops_the_open_and_changes_nothing(tmp_path: Path) -> None:
    history = await open_history(tmp_path, vault(tmp_path))
    try:
        await remember_and_forget(history)
    finally:
        await history.close()
    secrets_file = tmp_path / "secrets.toml"
    secrets_file.write_text("[default\ntombstone_key = ", encoding="utf-8")
    before = meta(tmp_path / "history.db")
    with pytest.raises(StoreError, match=r"tombstone key cannot be read: .*secrets\.toml cannot be read"):
        await open_history(tmp_path, vault(tmp_path))
    assert meta(tmp_path / "history.db") == before
    with sqlite3.connect(tmp_path / "history.db") as conn:
        assert conn.execute("SELECT key_id FROM tombstones").fetchall() == [(None,)]  # not taken for lost


async def test_two_processes_opening_a_new_familiar_at_once_agree_on_one_key(tmp_path: Path) -> None:
    schema = await Store.open(tmp_path / "history.db", tmp_path / "backups")  # migrated, no key yet
    await schema.close()
    first, second = await asyncio.gather(
        open_history(tmp_path, vault(tmp_path)), open_history(tmp_path, vault(tmp_path))
    )
    try:
        assert await first.tombstones.keys.secret_now(first.store) == await second.tombstones.keys.secret_now(
            second.store
        )
        await remember_and_forget(first)
        assert await relearn(second) == "tombstoned"
    finally:
        await first.close()
        await second.close()


async def test_an_import_the_database_refuses_puts_the_familiars_own_key_back(tmp_path: Path) -> None:
    source = await open_history(tmp_path / "source", vault(tmp_path / "source"))
    try:
        await remember_and_forget(source)
        lines = [json.dumps(r) async for r in export_records(source.store, keys=source.tombstones.keys)]
    finally:
        await source.close()
    target_secrets = vault(tmp_path / "target")
    target = await open_history(tmp_path / "target", target_secrets)
    try:
        own = await target.tombstones.keys.secret_now(target.store)
        # A row the import's own tombstone 1 collides with: the write fails inside its transaction,
        # after the file's key was put in the secrets store.
        await target.store.write(
            [("INSERT INTO tombstones (id, hash, reason, created_at) VALUES (1, 'x', 'r', 't')", ())]
        )
        with pytest.raises(StoreError, match="refused"):
            await import_records(target.store, lines, keys=target.tombstones.keys)
        assert stored_key(tmp_path / "target" / "secrets.toml") == own
        assert await target.tombstones.keys.secret_now(target.store) == own
    finally:
        await target.close()


async def test_opening_again_writes_nothing_when_the_key_is_in_place(tmp_path: Path) -> None:
    """Issue 19, item 5: every open committed the key's id again, so a command that only reads failed
    beside a running familiar on a full disk ("database or disk is full")."""
    secrets = vault(tmp_path)
    first = await open_history(tmp_path, secrets)
    try:
        await remember_and_forget(first)
        await first.catch_up(10)
        [(busy, _frames, _moved)] = await first.store.read_all("PRAGMA wal_checkpoint(TRUNCATE)")
        assert busy == 0
        wal = tmp_path / "history.db-wal"
        assert wal.stat().st_size == 0
        for reading in (True, False):  # a command beside it, reading or not, opens the same store
            beside = await History.open(*files(tmp_path), keys=VaultKeys(secrets), reading=reading)
            try:
                assert wal.stat().st_size == 0, "opening wrote to the database"
                assert await relearn(beside) == "tombstoned"  # with the key the familiar uses
            finally:
                await beside.close()
    finally:
        await first.close()
