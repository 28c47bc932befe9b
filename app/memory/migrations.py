"""Numbered schema migrations, each applied in one transaction with its bookkeeping row.

Before migrating a database that already holds data, a backup is written with SQLite's backup
API; if the backup fails the migration does not run.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from app.config.paths import private_file, private_folder
from app.memory.errors import MigrationError

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "turns",
        """
        CREATE TABLE turns (
            id           INTEGER PRIMARY KEY,
            platform     TEXT    NOT NULL,
            place        TEXT    NOT NULL,
            guild_id     INTEGER,
            channel_id   INTEGER NOT NULL,
            message_id   INTEGER,
            author_key   TEXT    NOT NULL,
            author_name  TEXT    NOT NULL,
            content      TEXT    NOT NULL,
            mode         TEXT    NOT NULL DEFAULT 'text',
            created_at   TEXT    NOT NULL,
            revision     INTEGER NOT NULL DEFAULT 0,
            redacted     INTEGER NOT NULL DEFAULT 0,
            reply_to     INTEGER,
            superseded   INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX turns_place ON turns (place, id);
        CREATE UNIQUE INDEX turns_message ON turns (platform, message_id, revision)
            WHERE message_id IS NOT NULL;
        CREATE TABLE participants (
            canonical_key TEXT PRIMARY KEY,
            display_name  TEXT NOT NULL,
            is_self       INTEGER NOT NULL DEFAULT 0,
            first_seen    TEXT NOT NULL,
            last_seen     TEXT NOT NULL
        );
        CREATE TRIGGER turns_participant AFTER INSERT ON turns BEGIN
            INSERT INTO participants (canonical_key, display_name, is_self, first_seen, last_seen)
            VALUES (NEW.author_key, NEW.author_name, NEW.author_key = 'familiar:self', NEW.created_at,
                    NEW.created_at)
            ON CONFLICT (canonical_key) DO UPDATE SET display_name = excluded.display_name,
                last_seen = MAX(last_seen, excluded.last_seen);
        END;
        CREATE TABLE deleted_sources (
            platform    TEXT    NOT NULL,
            message_id  INTEGER NOT NULL,
            deleted_at  TEXT    NOT NULL,
            PRIMARY KEY (platform, message_id)
        );
        CREATE TABLE index_state (
            name           TEXT PRIMARY KEY,
            watermark      INTEGER NOT NULL DEFAULT 0,
            schema_version INTEGER NOT NULL DEFAULT 0,
            rebuilding     INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE index_outbox (
            id      INTEGER PRIMARY KEY,
            name    TEXT    NOT NULL,
            doc_id  INTEGER NOT NULL
        );
        """,
    ),
    Migration(
        2,
        "turn order and participant names",
        """
        ALTER TABLE turns ADD COLUMN origin_id INTEGER;
        CREATE INDEX turns_place_order ON turns (place, COALESCE(origin_id, id));
        DROP TRIGGER turns_participant;
        CREATE TRIGGER turns_participant AFTER INSERT ON turns BEGIN
            INSERT INTO participants (canonical_key, display_name, is_self, first_seen, last_seen)
            VALUES (NEW.author_key, NEW.author_name, NEW.author_key = 'familiar:self', NEW.created_at,
                    NEW.created_at)
            ON CONFLICT (canonical_key) DO UPDATE SET
                display_name = CASE WHEN excluded.last_seen >= last_seen THEN excluded.display_name
                                    ELSE display_name END,
                first_seen = MIN(first_seen, excluded.first_seen),
                last_seen = MAX(last_seen, excluded.last_seen);
        END;
        """,
    ),
    Migration(
        3,
        "facts",
        """
        CREATE TABLE store_meta (
            key   TEXT PRIMARY KEY,
            value BLOB NOT NULL
        );
        CREATE TABLE facts (
            id             INTEGER PRIMARY KEY,
            content        TEXT    NOT NULL,
            dedup_key      TEXT    NOT NULL,
            type           TEXT    NOT NULL CHECK (type IN ('episodic', 'semantic', 'procedural')),
            importance     INTEGER NOT NULL CHECK (importance BETWEEN 1 AND 10),
            confidence     REAL    NOT NULL CHECK (confidence BETWEEN 0 AND 1),
            subjects       TEXT    NOT NULL,
            sources        TEXT    NOT NULL DEFAULT '[]',
            speaker        TEXT,
            scope          TEXT    NOT NULL,
            status         TEXT    NOT NULL
                CHECK (status IN ('pending', 'active', 'rejected', 'archived', 'forgotten')),
            revision       INTEGER NOT NULL DEFAULT 0,
            origin         TEXT    NOT NULL,
            created_at     TEXT    NOT NULL,
            superseded_at  TEXT,
            superseded_by  INTEGER REFERENCES facts (id),
            valid_from     TEXT,
            valid_to       TEXT,
            snoozed_until  TEXT
        );
        CREATE INDEX facts_dedup ON facts (dedup_key) WHERE superseded_at IS NULL;
        CREATE INDEX facts_status ON facts (status, id);
        CREATE INDEX facts_created ON facts (created_at);
        CREATE INDEX facts_scope ON facts (scope, status) WHERE superseded_at IS NULL;
        CREATE INDEX facts_superseded_by ON facts (superseded_by) WHERE superseded_by IS NOT NULL;
        CREATE TABLE fact_subjects (
            fact_id  INTEGER NOT NULL REFERENCES facts (id),
            subject  TEXT    NOT NULL,
            PRIMARY KEY (subject, fact_id)
        ) WITHOUT ROWID;
        CREATE INDEX fact_subjects_fact ON fact_subjects (fact_id);
        CREATE TABLE fact_sources (
            fact_id  INTEGER NOT NULL REFERENCES facts (id),
            turn_id  INTEGER NOT NULL,
            PRIMARY KEY (turn_id, fact_id)
        ) WITHOUT ROWID;
        CREATE INDEX fact_sources_fact ON fact_sources (fact_id);
        CREATE TABLE fact_status_log (
            fact_id  INTEGER NOT NULL REFERENCES facts (id),
            status   TEXT    NOT NULL,
            at       TEXT    NOT NULL
        );
        CREATE INDEX fact_status_log_fact ON fact_status_log (fact_id, at);
        CREATE TRIGGER facts_inserted AFTER INSERT ON facts BEGIN
            INSERT INTO fact_subjects (fact_id, subject) SELECT NEW.id, value FROM json_each(NEW.subjects);
            INSERT INTO fact_sources (fact_id, turn_id) SELECT NEW.id, value FROM json_each(NEW.sources);
            INSERT INTO fact_status_log (fact_id, status, at) VALUES (NEW.id, NEW.status, NEW.created_at);
        END;
        CREATE TABLE tombstones (
            id         INTEGER PRIMARY KEY,
            hash       TEXT NOT NULL,
            reason     TEXT NOT NULL,
            created_at TEXT NOT NULL,
            lifted_at  TEXT
        );
        CREATE INDEX tombstones_hash ON tombstones (hash) WHERE lifted_at IS NULL;
        CREATE TABLE fact_embeddings (
            fact_id    INTEGER NOT NULL REFERENCES facts (id),
            model      TEXT    NOT NULL,
            dim        INTEGER NOT NULL,
            vector     BLOB    NOT NULL,
            created_at TEXT    NOT NULL,
            PRIMARY KEY (fact_id, model)
        );
        CREATE TABLE memory_work (
            id          INTEGER PRIMARY KEY,
            kind        TEXT    NOT NULL,
            turn_id     INTEGER NOT NULL,
            status      TEXT    NOT NULL DEFAULT 'queued'
                CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
            attempts    INTEGER NOT NULL DEFAULT 0,
            last_error  TEXT,
            created_at  TEXT    NOT NULL
        );
        CREATE INDEX memory_work_turn ON memory_work (turn_id);
        """,
    ),
    Migration(
        4,
        "projections, pause and reply explanations",
        """
        CREATE TABLE projector_state (
            name       TEXT    NOT NULL,
            key        TEXT    NOT NULL DEFAULT '',
            watermark  INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT    NOT NULL,
            PRIMARY KEY (name, key)
        );
        CREATE TABLE summaries (
            place        TEXT PRIMARY KEY,
            text         TEXT    NOT NULL,
            last_turn_id INTEGER NOT NULL,
            updated_at   TEXT    NOT NULL
        );
        CREATE TABLE people_dossiers (
            canonical_key TEXT    NOT NULL,
            scope         TEXT    NOT NULL,
            text          TEXT    NOT NULL,
            last_fact_id  INTEGER NOT NULL,
            updated_at    TEXT    NOT NULL,
            PRIMARY KEY (canonical_key, scope)
        );
        CREATE TABLE reflections (
            id             INTEGER PRIMARY KEY,
            place          TEXT    NOT NULL,
            text           TEXT    NOT NULL,
            cited_turn_ids TEXT    NOT NULL DEFAULT '[]',
            cited_fact_ids TEXT    NOT NULL DEFAULT '[]',
            last_turn_id   INTEGER NOT NULL,
            last_fact_id   INTEGER NOT NULL,
            created_at     TEXT    NOT NULL
        );
        CREATE INDEX reflections_place ON reflections (place, id);
        CREATE TABLE memory_pause (
            kind   TEXT NOT NULL CHECK (kind IN ('learning', 'recall')),
            place  TEXT NOT NULL,
            since  TEXT NOT NULL,
            PRIMARY KEY (kind, place)
        );
        ALTER TABLE memory_work ADD COLUMN place TEXT;
        ALTER TABLE memory_work ADD COLUMN updated_at TEXT;
        CREATE INDEX memory_work_queue ON memory_work (kind, status, id);
        CREATE TABLE explanations (
            id         INTEGER PRIMARY KEY,
            place      TEXT NOT NULL,
            created_at TEXT NOT NULL,
            body       TEXT NOT NULL
        );
        -- One counter per projection table, bumped by triggers, so a reader in any process can tell
        -- cheaply whether what it cached is still current.
        CREATE TABLE change_counters (
            name  TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        );
        INSERT INTO change_counters (name, value) VALUES
            ('facts', 0),
            ('fact_embeddings', 0),
            ('summaries', 0),
            ('people_dossiers', 0),
            ('reflections', 0),
            ('memory_pause', 0),
            ('tombstones', 0);
        CREATE TRIGGER count_facts_insert AFTER INSERT ON facts BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'facts';
        END;
        CREATE TRIGGER count_facts_update AFTER UPDATE ON facts BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'facts';
        END;
        CREATE TRIGGER count_facts_delete AFTER DELETE ON facts BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'facts';
        END;
        CREATE TRIGGER count_fact_embeddings_insert AFTER INSERT ON fact_embeddings BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'fact_embeddings';
        END;
        CREATE TRIGGER count_fact_embeddings_delete AFTER DELETE ON fact_embeddings BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'fact_embeddings';
        END;
        CREATE TRIGGER count_summaries_insert AFTER INSERT ON summaries BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'summaries';
        END;
        CREATE TRIGGER count_summaries_update AFTER UPDATE ON summaries BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'summaries';
        END;
        CREATE TRIGGER count_summaries_delete AFTER DELETE ON summaries BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'summaries';
        END;
        CREATE TRIGGER count_people_dossiers_insert AFTER INSERT ON people_dossiers BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'people_dossiers';
        END;
        CREATE TRIGGER count_people_dossiers_update AFTER UPDATE ON people_dossiers BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'people_dossiers';
        END;
        CREATE TRIGGER count_people_dossiers_delete AFTER DELETE ON people_dossiers BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'people_dossiers';
        END;
        CREATE TRIGGER count_reflections_insert AFTER INSERT ON reflections BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'reflections';
        END;
        CREATE TRIGGER count_reflections_delete AFTER DELETE ON reflections BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'reflections';
        END;
        CREATE TRIGGER count_memory_pause_insert AFTER INSERT ON memory_pause BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'memory_pause';
        END;
        CREATE TRIGGER count_memory_pause_delete AFTER DELETE ON memory_pause BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'memory_pause';
        END;
        CREATE TRIGGER count_tombstones_insert AFTER INSERT ON tombstones BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'tombstones';
        END;
        CREATE TRIGGER count_tombstones_update AFTER UPDATE ON tombstones BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'tombstones';
        END;
        CREATE TABLE explanation_turns (
            turn_id        INTEGER PRIMARY KEY,
            explanation_id INTEGER NOT NULL REFERENCES explanations (id)
        );
        """,
    ),
    Migration(
        5,
        "a deletion is marked done once it reached facts and projections",
        # A crash between redacting a deleted message and forgetting the facts that came only from it
        # must not leave those facts standing: the next start finishes what a 0 marks as unfinished.
        """
        ALTER TABLE deleted_sources ADD COLUMN propagated INTEGER NOT NULL DEFAULT 1;
        CREATE INDEX deleted_sources_unfinished ON deleted_sources (platform, message_id) WHERE propagated = 0;
        """,
    ),
    Migration(
        6,
        "place names, deferred forgets and forget receipts",
        # Place names let the window and the CLI say "Lantern Club #general" offline. A deferred forget is a
        # durable row (hidden at once, applied at its deadline, at close, or at the next open), so a crash
        # inside the undo window loses nothing. Receipts are content-free: ids, counts, subject keys, scope.
        """
        CREATE TABLE places (
            place  TEXT PRIMARY KEY,  -- guild:<id>, guild:<id>/<channel id>, dm:<user id>, local
            name   TEXT NOT NULL DEFAULT ''  -- the server's or the channel's own name; '' until seen
        ) WITHOUT ROWID;
        INSERT OR IGNORE INTO places (place) SELECT DISTINCT place FROM turns;
        CREATE TRIGGER turns_place AFTER INSERT ON turns BEGIN
            INSERT OR IGNORE INTO places (place) VALUES (NEW.place);
        END;
        CREATE TABLE scheduled_forgets (
            id             INTEGER PRIMARY KEY,
            fact_id        INTEGER NOT NULL,
            redact_sources INTEGER NOT NULL DEFAULT 0,
            due_at         TEXT    NOT NULL,
            created_at     TEXT    NOT NULL
        );
        CREATE INDEX scheduled_forgets_due ON scheduled_forgets (due_at);
        -- Every version of a chain with a forget scheduled: kept out of every read until it is applied.
        CREATE TABLE forget_holds (
            fact_id     INTEGER PRIMARY KEY,
            schedule_id INTEGER NOT NULL REFERENCES scheduled_forgets (id)
        );
        CREATE INDEX forget_holds_schedule ON forget_holds (schedule_id);
        CREATE TABLE forget_receipts (
            id                INTEGER PRIMARY KEY,
            tombstone_id      INTEGER,
            fact_ids          TEXT NOT NULL,
            stores            TEXT NOT NULL,
            redacted_turn_ids TEXT NOT NULL DEFAULT '[]',
            redacted_reply_ids TEXT NOT NULL DEFAULT '[]',
            subjects          TEXT NOT NULL DEFAULT '[]',
            scope             TEXT NOT NULL,
            created_at        TEXT NOT NULL
        );
        CREATE INDEX forget_receipts_tombstone ON forget_receipts (tombstone_id);
        INSERT INTO change_counters (name, value) VALUES ('places', 0), ('scheduled_forgets', 0),
            ('forget_receipts', 0);
        CREATE TRIGGER count_places_insert AFTER INSERT ON places BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'places';
        END;
        CREATE TRIGGER count_places_update AFTER UPDATE ON places BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'places';
        END;
        CREATE TRIGGER count_scheduled_forgets_insert AFTER INSERT ON scheduled_forgets BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'scheduled_forgets';
        END;
        CREATE TRIGGER count_scheduled_forgets_delete AFTER DELETE ON scheduled_forgets BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'scheduled_forgets';
        END;
        CREATE TRIGGER count_forget_receipts_insert AFTER INSERT ON forget_receipts BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'forget_receipts';
        END;
        """,
    ),
    Migration(
        7,
        "tombstone key ids",
        # The tombstone key leaves history.db for the OS keyring (app.memory.tombstone_keys). A tombstone
        # hashed with another key (an import without its key, a key this machine lacks) names that key's
        # id here and cannot block; NULL is the familiar's own key.
        """
        ALTER TABLE tombstones ADD COLUMN key_id TEXT;
        """,
    ),
    # 8, not 7: main took 7 for the tombstone key ids while this branch was open (a merge keeps both).
    Migration(
        8,
        "lorebook timed effects and message clocks",
        # The lorebook engine is pure: the runtime keeps its per-place state here. A timed effect (sticky or
        # cooldown, in SillyTavern's sense) of one entry in one place, in the place's message numbers; an
        # entry is named by a hash of its title, keys and content, never its text. A clock caches how many
        # messages a place had up to a message (its anchor: COALESCE(origin_id, id)), so the count of a long
        # channel is made once and then only grows by the messages since.
        """
        CREATE TABLE lore_timed_effects (
            place  TEXT    NOT NULL,
            entry  TEXT    NOT NULL,
            kind   TEXT    NOT NULL CHECK (kind IN ('sticky', 'cooldown')),
            start  INTEGER NOT NULL,
            end    INTEGER NOT NULL,
            PRIMARY KEY (place, entry, kind)
        ) WITHOUT ROWID;
        CREATE TABLE lore_clocks (
            place    TEXT    PRIMARY KEY,
            anchor   INTEGER NOT NULL,
            messages INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO change_counters (name, value) VALUES ('lore_timed_effects', 0);
        CREATE TRIGGER count_lore_timed_effects_insert AFTER INSERT ON lore_timed_effects BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'lore_timed_effects';
        END;
        CREATE TRIGGER count_lore_timed_effects_update AFTER UPDATE ON lore_timed_effects BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'lore_timed_effects';
        END;
        CREATE TRIGGER count_lore_timed_effects_delete AFTER DELETE ON lore_timed_effects BEGIN
            UPDATE change_counters SET value = value + 1 WHERE name = 'lore_timed_effects';
        END;
        """,
    ),
)


def current_version(conn: sqlite3.Connection) -> int:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TEXT NOT NULL)"
    )
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(row[0])


def schema_current(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> bool:
    """Whether the schema is up to date, asked without writing anything (a database newer than this
    Familiar is refused, as `migrate` refuses it)."""
    known = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    if known.fetchone() is None:
        return False
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    version, newest = int(row[0]), max(m.version for m in migrations)
    if version > newest:
        raise MigrationError(
            f"history.db is schema v{version}, newer than this Familiar knows (v{newest}); update Familiar"
        )
    return version == newest


def _has_data(conn: sqlite3.Connection) -> bool:
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " AND name NOT IN ('schema_migrations', 'change_counters')"  # bookkeeping, not the owner's data
        )
    ]
    return any(conn.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone() for t in tables)


def backup(conn: sqlite3.Connection, backups_dir: Path, from_version: int) -> Path:
    private_folder(backups_dir)  # a copy of every message: readable by the owner only, like history.db
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = backups_dir / f"history-v{from_version}-{stamp}.db"
    private_file(target, create=True)
    dest = sqlite3.connect(target)
    try:
        conn.backup(dest)
    finally:
        dest.close()
    check = sqlite3.connect(target)
    try:
        # Not quick_check: SQLite 3.40's quick_check reports "NULL value in fact_sources.fact_id" for every
        # row of a WITHOUT ROWID table whose key lists its columns in another order (nothing is NULL), and
        # it stops at 100 findings, so real damage could hide behind them. integrity_check is right there.
        report = [str(r[0]) for r in check.execute("PRAGMA integrity_check").fetchall()]
        if report != ["ok"]:
            raise sqlite3.DatabaseError(f"backup failed its integrity check: {report[0]}")
    finally:
        check.close()
    return target


def migrate(conn: sqlite3.Connection, backups_dir: Path, migrations: Sequence[Migration] = MIGRATIONS) -> Path | None:
    """Bring the schema up to date. Returns the backup's path when one was written."""
    version = current_version(conn)
    newest = max(m.version for m in migrations)
    # Checked before "nothing to do": a newer database has nothing to do and must still be refused.
    if version > newest:
        raise MigrationError(
            f"history.db is schema v{version}, newer than this Familiar knows (v{newest}); update Familiar"
        )
    todo = [m for m in migrations if m.version > version]
    if not todo:
        return None
    backup_path: Path | None = None
    if version > 0 and _has_data(conn):
        try:
            backup_path = backup(conn, backups_dir, version)
        except (OSError, sqlite3.Error) as exc:
            raise MigrationError(
                f"could not back up history.db before migrating (v{version}): {exc}; nothing was changed"
            ) from exc
        _log.info("backed up history.db to %s before migrating", backup_path)
    for migration in todo:
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, datetime.now(UTC).isoformat()),
            )
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise MigrationError(f"migration {migration.version} ({migration.name}) failed: {exc}") from exc
    return backup_path


def _statements(script: str) -> list[str]:
    out: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                out.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        out.append(buffer.strip())
    return out
