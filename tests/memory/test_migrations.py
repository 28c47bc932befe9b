"""Numbered migrations: backups before touching data, all-or-nothing steps, refusing the future."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.memory.errors import MigrationError, StoreError
from app.memory.facts import FactBook
from app.memory.migrations import MIGRATIONS, Migration, backup, current_version, migrate
from app.memory.store import Store
from tests.memory.helpers import turn

LATEST = max(m.version for m in MIGRATIONS)  # the schema this code writes
NEXT = LATEST + 1  # a migration the tests add on top

V2 = Migration(
    NEXT,
    "turn notes",
    """
    ALTER TABLE turns ADD COLUMN note TEXT;
    CREATE TABLE turn_notes (turn_id INTEGER PRIMARY KEY, note TEXT NOT NULL);
    CREATE TRIGGER turn_notes_sync AFTER INSERT ON turn_notes BEGIN
        UPDATE turns SET note = NEW.note WHERE id = NEW.turn_id;
    END;
    """,
)
BROKEN_V2 = Migration(
    NEXT,
    "half done",
    """
    CREATE TABLE would_be_created (x INTEGER);
    ALTER TABLE turns ADD COLUMN note TEXT;
    INSERT INTO no_such_table VALUES (1);
    """,
)


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    return conn


@pytest.fixture
def v1_db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A database at the current schema holding a few turns."""
    conn = connect(tmp_path / "history.db")
    assert migrate(conn, tmp_path / "backups") is None
    conn.executemany(
        "INSERT INTO turns (platform, place, channel_id, author_key, author_name, content, created_at)"
        " VALUES ('discord', 'guild:1/2', 2, 'discord:7', 'alice', ?, '2024-05-01T12:00:00+00:00')",
        [(f"remember me {i}",) for i in range(25)],
    )
    yield conn
    conn.close()


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")}


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def test_fresh_database_migrates_without_a_backup(tmp_path: Path) -> None:
    conn = connect(tmp_path / "history.db")
    try:
        assert migrate(conn, tmp_path / "backups") is None
        assert current_version(conn) == max(m.version for m in MIGRATIONS)
        assert {"turns", "participants", "deleted_sources", "index_state", "index_outbox"} <= tables(conn)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # Already current: nothing to do, still no backup.
        assert migrate(conn, tmp_path / "backups") is None
    finally:
        conn.close()
    assert not (tmp_path / "backups").exists()


@pytest.mark.asyncio
async def test_store_open_on_a_fresh_path(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "sub" / "history.db", tmp_path / "backups")
    try:
        assert store.backup_written is None
        assert await store.read_one("SELECT MAX(version) FROM schema_migrations") == (LATEST,)
        assert await store.read_one("PRAGMA journal_mode") == ("wal",)
    finally:
        await store.close()
    assert not (tmp_path / "backups").exists()


def test_non_empty_database_is_backed_up_before_migrating(tmp_path: Path, v1_db: sqlite3.Connection) -> None:
    backups = tmp_path / "backups"
    written = migrate(v1_db, backups, (*MIGRATIONS, V2))
    assert written is not None
    assert written.parent == backups
    assert written.name.startswith(f"history-v{LATEST}-")
    assert current_version(v1_db) == NEXT
    assert "note" in columns(v1_db, "turns")
    assert "turn_notes_sync" in tables(v1_db)
    # The backup holds the data as it was, at v1, and is a sound database.
    backup = sqlite3.connect(written)
    try:
        assert backup.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert current_version(backup) == LATEST
        assert backup.execute("SELECT COUNT(*) FROM turns").fetchone() == (25,)
        assert backup.execute("SELECT content FROM turns WHERE id = 25").fetchone() == ("remember me 24",)
        assert "note" not in columns(backup, "turns")
    finally:
        backup.close()
    # The live data survived the migration too.
    assert v1_db.execute("SELECT COUNT(*) FROM turns").fetchone() == (25,)
    assert [p.name for p in backups.iterdir()] == [written.name]


def test_backup_includes_rows_still_in_the_wal(tmp_path: Path) -> None:
    conn = connect(tmp_path / "history.db")
    try:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        migrate(conn, tmp_path / "backups")
        conn.execute(
            "INSERT INTO turns (platform, place, channel_id, author_key, author_name, content, created_at)"
            " VALUES ('discord', 'local', 0, 'discord:7', 'alice', 'only in the WAL', '2024-05-01T12:00:00+00:00')"
        )
        written = migrate(conn, tmp_path / "backups", (*MIGRATIONS, V2))
        assert written is not None
    finally:
        conn.close()
    backup = sqlite3.connect(written)
    try:
        assert backup.execute("SELECT content FROM turns").fetchall() == [("only in the WAL",)]
    finally:
        backup.close()


def test_empty_database_at_an_old_version_needs_no_backup(tmp_path: Path) -> None:
    conn = connect(tmp_path / "history.db")
    try:
        migrate(conn, tmp_path / "backups")
        assert migrate(conn, tmp_path / "backups", (*MIGRATIONS, V2)) is None
        assert current_version(conn) == NEXT
    finally:
        conn.close()
    assert not (tmp_path / "backups").exists()


def test_failed_backup_blocks_the_migration(tmp_path: Path, v1_db: sqlite3.Connection) -> None:
    blocker = tmp_path / "backups-is-a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    schema_before = v1_db.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    with pytest.raises(MigrationError) as caught:
        migrate(v1_db, blocker, (*MIGRATIONS, V2))
    message = str(caught.value)
    assert "back up" in message
    assert "nothing was changed" in message
    assert current_version(v1_db) == LATEST
    assert "note" not in columns(v1_db, "turns")
    assert v1_db.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == schema_before
    assert v1_db.execute("SELECT COUNT(*) FROM turns").fetchone() == (25,)
    assert not v1_db.in_transaction
    assert blocker.read_text(encoding="utf-8") == "not a folder"


def test_failing_migration_statement_rolls_back(tmp_path: Path, v1_db: sqlite3.Connection) -> None:
    with pytest.raises(MigrationError) as caught:
        migrate(v1_db, tmp_path / "backups", (*MIGRATIONS, BROKEN_V2))
    assert f"migration {NEXT}" in str(caught.value)
    assert "no_such_table" in str(caught.value)
    assert current_version(v1_db) == LATEST
    assert "would_be_created" not in tables(v1_db)
    assert "note" not in columns(v1_db, "turns")
    assert not v1_db.in_transaction
    assert v1_db.execute("SELECT COUNT(*) FROM turns").fetchone() == (25,)
    # The database is still usable and a correct migration applies afterwards.
    assert migrate(v1_db, tmp_path / "backups", (*MIGRATIONS, V2)) is not None
    assert current_version(v1_db) == NEXT


def test_later_steps_stop_at_the_failing_one(tmp_path: Path, v1_db: sqlite3.Connection) -> None:
    broken_v3 = Migration(NEXT + 1, "broken", "CREATE TABLE v3_table (x); SELECT * FROM nowhere;")
    with pytest.raises(MigrationError, match=f"migration {NEXT + 1}"):
        migrate(v1_db, tmp_path / "backups", (*MIGRATIONS, V2, broken_v3))
    assert current_version(v1_db) == NEXT
    assert "v3_table" not in tables(v1_db)


def test_database_newer_than_the_code_is_refused(tmp_path: Path, v1_db: sqlite3.Connection) -> None:
    v1_db.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from the future', 'x')")
    with pytest.raises(MigrationError) as caught:
        migrate(v1_db, tmp_path / "backups")
    message = str(caught.value)
    assert "v99" in message
    assert "newer" in message
    assert "update Familiar" in message
    assert current_version(v1_db) == 99
    assert not (tmp_path / "backups").exists()


@pytest.mark.asyncio
async def test_store_open_refuses_a_newer_database(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "history.db", tmp_path / "backups")
    await store.append_turn(turn("hello"))
    await store.write(
        [("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 'x')", (NEXT,))]
    )
    await store.close()
    with pytest.raises(MigrationError, match="newer than this Familiar"):
        await Store.open(tmp_path / "history.db", tmp_path / "backups")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "content",
    [
        b"this is not a database at all, just some text that someone saved here" * 20,
        b"SQLite format 3\x00" + b"\xff" * 4000,
        bytes(range(256)) * 16,
    ],
)
async def test_store_open_on_a_garbage_file(tmp_path: Path, content: bytes) -> None:
    target = tmp_path / "history.db"
    target.write_bytes(content)
    with pytest.raises(StoreError) as caught:
        await Store.open(target, tmp_path / "backups")
    message = str(caught.value)
    assert str(target) in message
    assert "not a readable Familiar database" in message
    assert target.read_bytes() == content, "a failed open must not touch the file"


@pytest.mark.asyncio
async def test_store_open_on_an_empty_file_creates_the_schema(tmp_path: Path) -> None:
    target = tmp_path / "history.db"
    target.write_bytes(b"")
    store = await Store.open(target, tmp_path / "backups")
    try:
        assert await store.append_turn(turn("works")) is not None
    finally:
        await store.close()


@pytest.mark.asyncio
async def test_a_database_of_the_previous_schema_is_backed_up_and_upgraded(tmp_path: Path) -> None:
    """A real upgrade: a history.db written by the previous release (all migrations but the last)
    with turns in it opens with this code, gets a backup first, and keeps every turn."""
    path = tmp_path / "history.db"
    conn = connect(path)
    previous = MIGRATIONS[:-1]
    migrate(conn, tmp_path / "backups", previous)
    conn.executemany(
        "INSERT INTO turns (platform, place, channel_id, author_key, author_name, content, created_at)"
        " VALUES ('discord', 'guild:1/2', 2, 'discord:7', 'alice', ?, '2024-05-01T12:00:00+00:00')",
        [(f"kept across the upgrade {i}",) for i in range(40)],
    )
    # Facts as the previous release wrote them: one active with a source, one corrected by another.
    conn.executemany(
        "INSERT INTO facts (id, content, dedup_key, type, importance, confidence, subjects, sources, speaker, scope,"
        " status, origin, created_at, superseded_at, superseded_by)"
        " VALUES (?, ?, ?, 'episodic', 5, 0.9, '[\"discord:7\"]', ?, 'discord:7', 'guild:1', 'active', ?, ?, ?, ?)",
        [
            (1, "Alice keeps bees", "k1", "[1]", "extraction", "2024-05-01T12:00:00+00:00", None, None),
            (2, "Alice has a cat", "k2", "[]", "remember", "2024-05-01T12:00:00+00:00", "2024-06-01T00:00:00+00:00", 3),
            (3, "Alice has two cats", "k3", "[]", "edit", "2024-06-01T00:00:00+00:00", None, None),
        ],
    )
    conn.execute("INSERT INTO deleted_sources (platform, message_id, deleted_at) VALUES ('discord', 99, '2024-05-02')")
    conn.commit()
    conn.close()
    store = await Store.open(path, tmp_path / "backups")
    try:
        assert store.backup_written is not None
        assert await store.read_one("SELECT MAX(version) FROM schema_migrations") == (LATEST,)
        assert await store.count_turns() == 40
        book = FactBook(store)
        assert sorted(f.content for f in await book.list_facts()) == ["Alice has two cats", "Alice keeps bees"]
        bees = await book.get(1)
        assert bees is not None
        assert bees.source_turn_ids == (1,)
        then = datetime(2024, 5, 15, tzinfo=UTC)
        believed = await book.list_facts(recorded_at=then, world_at=then)
        assert sorted(f.content for f in believed) == ["Alice has a cat", "Alice keeps bees"]
        # A deletion recorded before the upgrade counts as finished: nothing is redone at start-up.
        assert await store.read_all("SELECT propagated FROM deleted_sources") == [(1,)]
    finally:
        await store.close()
    with contextlib.closing(sqlite3.connect(store.backup_written)) as backup:
        assert current_version(backup) == previous[-1].version
        assert backup.execute("SELECT COUNT(*) FROM turns").fetchone() == (40,)


def test_real_damage_is_not_hidden_behind_sqlite_340s_false_alarms(tmp_path: Path) -> None:
    """SQLite 3.40's quick_check cries wolf on every fact_sources row (and stops at 100 findings);
    the backup's check must still see a real NULL in a NOT NULL column."""
    conn = sqlite3.connect(tmp_path / "history.db", isolation_level=None)
    conn.executescript(
        """
        CREATE TABLE facts (id INTEGER PRIMARY KEY);
        CREATE TABLE fact_sources (fact_id INTEGER NOT NULL REFERENCES facts (id), turn_id INTEGER NOT NULL,
            PRIMARY KEY (turn_id, fact_id)) WITHOUT ROWID;
        CREATE TABLE zz (a TEXT);
        INSERT INTO zz VALUES (NULL);
        """
    )
    for i in range(1, 150):
        conn.execute("INSERT INTO facts VALUES (?)", (i,))
        conn.execute("INSERT INTO fact_sources VALUES (?, ?)", (i, i + 1000))
    conn.execute("PRAGMA writable_schema = ON")  # damage: the column says NOT NULL, a row holds NULL
    conn.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE zz (a TEXT NOT NULL)' WHERE name = 'zz'")
    conn.execute("PRAGMA writable_schema = OFF")
    conn.close()
    with (
        contextlib.closing(sqlite3.connect(tmp_path / "history.db")) as damaged,
        pytest.raises(sqlite3.DatabaseError, match=r"integrity check: NULL value in zz\.a"),
    ):
        backup(damaged, tmp_path / "backups", 4)
    healthy = sqlite3.connect(tmp_path / "healthy.db", isolation_level=None)
    healthy.executescript(
        """
        CREATE TABLE facts (id INTEGER PRIMARY KEY);
        CREATE TABLE fact_sources (fact_id INTEGER NOT NULL REFERENCES facts (id), turn_id INTEGER NOT NULL,
            PRIMARY KEY (turn_id, fact_id)) WITHOUT ROWID;
        """
    )
    healthy.executemany("INSERT INTO fact_sources VALUES (?, ?)", [(i, i + 1000) for i in range(1, 150)])
    with contextlib.closing(healthy):
        assert backup(healthy, tmp_path / "backups", 4).exists()  # the false alarm blocks nothing
