"""The store: SQLite (through aiosqlite) is the source of truth.

One writer connection, fed in order by aiosqlite's own thread, with explicit transactions; a second
connection serves reads beside it (WAL). Turns are append-only: an edit adds a revision, a deletion
redacts (content cleared, row kept, marker recorded) so nothing can bring the text back.

Opening writes nothing unless it must (a migration, the database's first open): a command that only
reads works beside a running familiar on a full disk. Opened `reading`, on a disk too full for SQLite
to make its shared-memory file (`-shm`: nobody has the database open, so none is there), the file is
read as it stands (`immutable`): nobody writes it while there is no room, and nothing is in its WAL,
or SQLite could not answer from the file alone (that open is refused). Such a store is `read_only`:
a write is refused with StoreDiskFullError.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import aiosqlite

from app.config.paths import private_file
from app.memory.errors import StoreDiskFullError, StoreError, is_disk_full, no_room_left, sqlite_io_error
from app.memory.migrations import migrate, schema_current
from app.memory.records import NewTurn, Turn
from app.memory.sql import in_chunks

_log = logging.getLogger(__name__)

_TURN_COLUMNS = (
    "id, platform, place, guild_id, channel_id, message_id, author_key, author_name, content, mode,"
    " created_at, revision, redacted, reply_to"
)
MAX_CONTENT_CHARS = 100_000
CONVERSATION_START = "conversation_start:"
"""store_meta key prefix (+ a place): the turn (its first revision's id) after which the place's conversation
runs now (app.memory.conversations); recent_turns leaves out what came before."""
_PLACE_CACHE_SIZE = 100_000  # turn places remembered (about 10 MB at most); the cache starts over past it


def now_iso() -> str:
    """The current time as the store writes it (UTC, ISO-8601)."""
    return datetime.now(UTC).isoformat()


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise StoreError("timestamps must carry a time zone")
    return moment.astimezone(UTC).isoformat()


def _turn(row: Sequence[Any]) -> Turn:
    return Turn(
        id=row[0],
        platform=row[1],
        place=row[2],
        guild_id=row[3],
        channel_id=row[4],
        message_id=row[5],
        author_key=row[6],
        author_name=row[7],
        content=row[8],
        mode=row[9],
        created_at=datetime.fromisoformat(row[10]),
        revision=row[11],
        redacted=bool(row[12]),
        reply_to=row[13],
    )


_INSERT_TURN = (
    "INSERT OR IGNORE INTO turns (platform, place, guild_id, channel_id, message_id, author_key, author_name,"
    " content, mode, created_at, reply_to) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11"
    " WHERE ?5 IS NULL OR NOT EXISTS"
    " (SELECT 1 FROM deleted_sources WHERE platform = ?1 AND message_id = ?5)"
)


def _turn_row(t: NewTurn) -> tuple[Any, ...]:
    return (
        t.platform,
        t.place,
        t.guild_id,
        t.channel_id,
        t.message_id,
        t.author_key,
        _clean_text(t.author_name, "display name")[:200],
        _clean_text(t.content, "message content"),
        t.mode,
        _iso(t.created_at),
        t.reply_to,
    )


def _clean_text(text: str, what: str) -> str:
    """Reject what SQLite or tantivy would choke on: lone surrogates; cap huge text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
        _log.warning("%s contained invalid UTF-8 (lone surrogates); replaced them", what)
    if len(text) > MAX_CONTENT_CHARS:
        raise StoreError(f"{what} is too long ({len(text)} characters, at most {MAX_CONTENT_CHARS})")
    return text


class Store:
    """Async access to one familiar's history.db."""

    def __init__(
        self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection, *, read_only: bool = False
    ) -> None:
        self.path = path
        self._writer = writer
        self._reader = reader
        self.read_only = read_only  # opened as the file stands, on a full disk: every write is refused
        self.backup_written: Path | None = None
        # aiosqlite orders single calls, not transactions: one lock keeps write transactions whole.
        self._write_lock = asyncio.Lock()
        self._places: dict[int, str] = {}  # turn id -> place, for turns this process has read or written
        self._raw_fd: int | None = None  # the database file read as bytes (file_holds), closed after SQLite's

    def _tx(self) -> _Transaction:
        self._check_writable()
        return _Transaction(self._writer, self._write_lock)

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreDiskFullError(
                f"{self.path} cannot be written now: the disk holding it is full (it was opened to read only)"
            )

    @classmethod
    async def open(cls, path: Path, backups_dir: Path, *, reading: bool = False) -> Store:
        """`reading`: for a command that only reads (see the module doc)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # Readable by the owner only; SQLite gives the -wal and -shm files the database's mode.
            private_file(path, create=True)
        except OSError as exc:
            if is_disk_full(exc):
                raise StoreDiskFullError(f"{path} cannot be created: {exc.strerror or exc}") from exc
            reason = exc.strerror or str(exc)
            raise StoreError(f"{path} cannot be created ({reason}); check its folder's permissions") from exc
        backup_written, immutable = await asyncio.to_thread(_migrate_sync, path, backups_dir, reading)
        opened: list[aiosqlite.Connection] = []
        try:
            for _ in range(2):  # the writer, then the reader
                if immutable:
                    conn = await aiosqlite.connect(_immutable_uri(path), uri=True, isolation_level=None)
                else:
                    conn = await aiosqlite.connect(path, isolation_level=None)
                opened.append(conn)
                if not immutable:  # already WAL: setting it again writes nothing
                    await conn.execute("PRAGMA journal_mode = WAL")
                await conn.execute("PRAGMA synchronous = NORMAL")
                await conn.execute("PRAGMA busy_timeout = 5000")
                await conn.execute("PRAGMA foreign_keys = ON")
                # Redacted and forgotten text must not linger in free pages of the file.
                await conn.execute("PRAGMA secure_delete = ON")
        except sqlite3.Error as exc:
            for conn in opened:
                with contextlib.suppress(sqlite3.Error, ValueError):
                    await conn.close()
            raise _open_error(path, exc, reading_it=False) from exc
        writer, reader = opened
        store = cls(path, writer, reader, read_only=immutable)
        store.backup_written = backup_written
        if immutable:
            _log.warning("%s is read as it stands: the disk holding it is full", path)
        return store

    async def close(self) -> None:
        for conn in (self._writer, self._reader):
            try:
                await conn.close()
            except (sqlite3.Error, ValueError) as exc:  # already closed
                _log.debug("closing store connection: %s", exc)
        if self._raw_fd is not None:  # only now: its close drops this process's locks on the file
            os.close(self._raw_fd)
            self._raw_fd = None

    def file_holds(self, needle: bytes, chunk: int = 1 << 20) -> bool:
        """Whether the database file or its WAL holds these bytes anywhere (blocking: run it in a thread).

        The database file is read through one descriptor kept open until the store closes, never one
        opened and closed here: closing a descriptor of a file drops every POSIX lock this process
        holds on it, SQLite's too, and another process would then take the database for unused and
        delete the WAL this one writes to (see app.config.paths.database_usable). The WAL carries no
        locks, so it is read as any file."""
        if self._raw_fd is None:
            self._raw_fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        fd = self._raw_fd
        if blocks_hold((os.pread(fd, chunk, offset) for offset in itertools.count(0, chunk)), needle):
            return True
        try:
            with self.path.with_name(self.path.name + "-wal").open("rb") as wal:
                return blocks_hold(iter(lambda: wal.read(chunk), b""), needle)
        except FileNotFoundError:
            return False

    # -- low-level helpers shared by the memory package ------------------------------------
    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """One explicit write transaction on the writer connection (committed, or rolled back on error)."""
        async with self._tx():
            yield self._writer

    async def write(self, statements: Iterable[tuple[str, Sequence[Any]]]) -> None:
        """Run statements in one explicit write transaction."""
        async with self._tx():
            for sql, params in statements:
                await self._writer.execute(sql, params)

    async def probe_room(self) -> None:
        """A write that needs room on the disk as any write does (a few pages of the WAL) and leaves
        nothing behind: it raises SQLite's own error (SQLITE_FULL) while the disk has no room. For one
        waiting for a full disk to take writes again."""
        async with self._tx():
            await self._writer.execute(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES ('room_probe', zeroblob(8192))"
            )
            await self._writer.execute("DELETE FROM store_meta WHERE key = 'room_probe'")

    async def checkpoint(self) -> None:
        """Move the WAL into the database file and truncate it: after a forget (so erased text does not
        linger in the WAL) and after a bulk load (so the next small writes do not pay for it)."""
        self._check_writable()
        async with self._write_lock:
            await self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def vacuum(self) -> None:
        """Rewrite the whole file (so no freed page keeps old bytes), then truncate the WAL."""
        self._check_writable()
        async with self._write_lock:
            await self._writer.execute("VACUUM")
            await self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # Every read is one call on the reader's thread (execute and fetch all, so the statement is done
    # and its read transaction over before the next one starts). Reads made of several calls
    # (execute, then fetch, then close) interleave on the shared connection: a statement left open
    # by one coroutine pins the snapshot, and another coroutine's read in between would not see what
    # was committed meanwhile.
    async def read_all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in await self._reader.execute_fetchall(sql, params)]

    async def read_one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        rows = await self._reader.execute_fetchall(sql, params)
        for row in rows:
            return tuple(row)
        return None

    # -- turns -----------------------------------------------------------------------------
    def _seen(self, turns: Sequence[Turn]) -> list[Turn]:
        """Remember where these turns were said (a turn's place never changes) for `places_of`."""
        if len(self._places) > _PLACE_CACHE_SIZE:
            self._places.clear()
        for t in turns:
            self._places[t.id] = t.place
        return list(turns)

    async def places_of(self, turn_ids: Sequence[int]) -> dict[int, str]:
        """The place of each turn id that exists; turns this process has seen cost no query."""
        found = {i: self._places[i] for i in turn_ids if i in self._places}
        missing = sorted({i for i in turn_ids if i not in found})
        if missing:  # turns_by_ids remembers their places for next time
            found.update((t.id, t.place) for t in await self.turns_by_ids(missing))
        return found

    async def append_turn(self, turn: NewTurn) -> Turn | None:
        """Append one turn in one statement. Returns None when its message was deleted (a stale
        backfill) or is already stored."""
        row = _turn_row(turn)
        self._check_writable()
        async with self._write_lock:
            rows = await self._writer.execute_fetchall(_INSERT_TURN + " RETURNING " + _TURN_COLUMNS, row)
        found = list(rows)
        return self._seen([_turn(tuple(found[0]))])[0] if found else None

    async def append_turns(self, turns: Sequence[NewTurn]) -> list[int]:
        """Append turns in one transaction; returns the new row ids in order.

        A turn whose Discord message was deleted, or that is already stored, is skipped.
        """
        rows = [_turn_row(t) for t in turns]
        async with self._tx():
            async with self._writer.execute("SELECT COALESCE(MAX(id), 0) FROM turns") as cursor:
                before = int((await cursor.fetchone() or (0,))[0])
            await self._writer.executemany(_INSERT_TURN, rows)
            async with self._writer.execute("SELECT id FROM turns WHERE id > ? ORDER BY id", (before,)) as cursor:
                return [int(r[0]) for r in await cursor.fetchall()]

    async def edit_message(self, platform: str, message_id: int, content: str, edited_at: datetime) -> Turn | None:
        """Add a revision for an edited message. Returns the new turn, or None if unknown/deleted/unchanged."""
        return await self._add_revision(
            "platform = ? AND message_id = ? AND superseded = 0", (platform, message_id), content, edited_at
        )

    async def revise_turn(self, turn_id: int, content: str, revised_at: datetime) -> Turn | None:
        """Add a revision of the turn `turn_id` (its latest revision, which need not carry a message id: a
        regenerated reply of the window's chat). Returns the new turn, or None when `turn_id` is not the
        latest revision, is redacted, or already says `content`."""
        return await self._add_revision("id = ? AND superseded = 0", (turn_id,), content, revised_at)

    async def _add_revision(self, where: str, params: Sequence[Any], content: str, at: datetime) -> Turn | None:
        """A new row for the latest revision matching `where` (the old one is kept, marked superseded, and
        leaves the search index): turns are never updated in place."""
        content = _clean_text(content, "message content")
        async with self._tx():
            async with self._writer.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE {where} ORDER BY revision DESC LIMIT 1", params
            ) as cursor:
                row = await cursor.fetchone()
            if row is None:
                return None
            current = _turn(tuple(row))
            if current.redacted or current.content == content:
                return None
            cursor = await self._writer.execute(
                "INSERT INTO turns (platform, place, guild_id, channel_id, message_id, author_key, author_name,"
                " content, mode, created_at, revision, reply_to, origin_id)"
                " SELECT ?,?,?,?,?,?,?,?,?,?,?,?, COALESCE(origin_id, id) FROM turns WHERE id = ?",
                (
                    current.platform,
                    current.place,
                    current.guild_id,
                    current.channel_id,
                    current.message_id,
                    current.author_key,
                    current.author_name,
                    content,
                    current.mode,
                    _iso(at),
                    current.revision + 1,
                    current.reply_to,
                    current.id,
                ),
            )
            new_id = int(cursor.lastrowid or 0)
            await self._writer.execute("UPDATE turns SET superseded = 1 WHERE id = ?", (current.id,))
            await self._writer.execute("INSERT INTO index_outbox (name, doc_id) VALUES ('turns', ?)", (current.id,))
        return (await self.turns_by_ids([new_id]))[0]

    async def latest_revision(self, platform: str, message_id: int) -> Turn | None:
        row = await self.read_one(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE platform = ? AND message_id = ? ORDER BY revision DESC LIMIT 1",
            (platform, message_id),
        )
        return _turn(row) if row is not None else None

    async def redact_message(self, platform: str, message_id: int, deleted_at: datetime) -> list[int]:
        """A deleted message: clear the text of every revision, keep the rows, remember the deletion."""
        async with self._tx():
            await self._writer.execute(
                "INSERT INTO deleted_sources (platform, message_id, deleted_at, propagated) VALUES (?, ?, ?, 0)"
                " ON CONFLICT DO UPDATE SET propagated = 0",
                (platform, message_id, _iso(deleted_at)),
            )
            async with self._writer.execute(
                "SELECT id FROM turns WHERE platform = ? AND message_id = ?", (platform, message_id)
            ) as cursor:
                ids = [int(r[0]) for r in await cursor.fetchall()]
            if ids:
                await redact_turns_in(self._writer, ids)
        return ids

    async def deletions_to_propagate(self) -> list[tuple[str, int]]:
        """(platform, message id) of deleted messages whose consequences a crash cut short."""
        rows = await self.read_all(
            "SELECT platform, message_id FROM deleted_sources WHERE propagated = 0 ORDER BY rowid"
        )
        return [(str(r[0]), int(r[1])) for r in rows]

    async def message_turn_ids(self, platform: str, message_id: int) -> list[int]:
        """Every revision of one message."""
        rows = await self.read_all("SELECT id FROM turns WHERE platform = ? AND message_id = ?", (platform, message_id))
        return [int(r[0]) for r in rows]

    async def mark_propagated(self, platform: str, message_id: int) -> None:
        """A deletion's consequences are all written (see `redact_message`)."""
        sql = "UPDATE deleted_sources SET propagated = 1 WHERE platform = ? AND message_id = ?"
        await self.write([(sql, (platform, message_id))])

    async def turns_by_ids(self, ids: Sequence[int]) -> list[Turn]:
        """Turns in the order of `ids` (missing ids are left out)."""
        found: dict[int, Turn] = {}
        for chunk, marks in in_chunks(ids):
            for row in await self.read_all(f"SELECT {_TURN_COLUMNS} FROM turns WHERE id IN ({marks})", chunk):
                found[row[0]] = _turn(row)
        return self._seen([found[i] for i in ids if i in found])

    async def recent_turns(self, place: str, limit: int, *, ending_at: int | None = None) -> list[Turn]:
        """The latest revision of the newest `limit` turns of a place, oldest first; redacted ones left out,
        and those from before the place's conversation start (app.memory.conversations: a cleared chat).

        `ending_at` (a turn id, any revision of its message) ends the window at that message: what
        was said after it is left out, so a reply is built for the message it answers.
        """
        if limit <= 0:
            return []
        live = (
            "place = ? AND superseded = 0 AND redacted = 0 AND COALESCE(origin_id, id) >"
            " (SELECT COALESCE(MAX(CAST(value AS INTEGER)), 0) FROM store_meta WHERE key = ?)"
        )
        start = CONVERSATION_START + place
        if ending_at is None:
            rows = await self.read_all(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE {live}"
                " ORDER BY COALESCE(origin_id, id) DESC LIMIT ?",  # an edited message keeps its place
                (place, start, limit),
            )
        else:
            rows = await self.read_all(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE {live}"
                " AND COALESCE(origin_id, id) <= (SELECT COALESCE(origin_id, id) FROM turns WHERE id = ?)"
                " ORDER BY COALESCE(origin_id, id) DESC LIMIT ?",
                (place, start, ending_at, limit),
            )
        return self._seen([_turn(r) for r in reversed(rows)])

    async def resume_point(self, place: str, overlap: int) -> int | None:
        """Where to fetch a place's missed messages from: the oldest message id among its last
        `overlap` stored messages (deleted and redacted ones count: they were seen), None when it has
        none. The overlap finds what a crash cut short among the newest ones, such as a reply that
        Discord accepted but that was never stored; messages already stored are skipped again."""
        row = await self.read_one(
            "SELECT MIN(message_id) FROM (SELECT message_id FROM turns WHERE place = ?"
            " AND message_id IS NOT NULL ORDER BY id DESC LIMIT ?)",
            (place, max(1, overlap)),
        )
        return int(row[0]) if row is not None and row[0] is not None else None

    async def dm_channels(self) -> list[tuple[str, int, str | None]]:
        """(place, channel id, the other person's last known name) of every direct-message
        conversation stored, by place.

        A skip-scan over the place index: one probe per conversation, not one per turn."""
        rows = await self.read_all(
            "WITH RECURSIVE dms(place) AS ("
            " SELECT MIN(place) FROM turns WHERE place > 'dm:' AND place < 'dm;'"
            " UNION ALL SELECT (SELECT MIN(place) FROM turns WHERE place > dms.place AND place < 'dm;')"
            " FROM dms WHERE dms.place IS NOT NULL)"
            " SELECT place, (SELECT channel_id FROM turns WHERE turns.place = dms.place ORDER BY id DESC LIMIT 1),"
            " (SELECT display_name FROM participants WHERE canonical_key = 'discord:' || substr(dms.place, 4))"
            " FROM dms WHERE place IS NOT NULL"
        )
        return [(str(r[0]), int(r[1]), None if r[2] is None else str(r[2])) for r in rows]

    async def turns_after(self, place: str, after_id: int, limit: int) -> list[Turn]:
        """Live turns (latest revisions, not redacted) of a place after a turn id, oldest first."""
        rows = await self.read_all(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE place = ? AND id > ? AND superseded = 0 AND redacted = 0"
            " ORDER BY id LIMIT ?",
            (place, after_id, limit),
        )
        return self._seen([_turn(r) for r in rows])

    async def count_turns(self) -> int:
        row = await self.read_one("SELECT COUNT(*) FROM turns")
        return int(row[0]) if row else 0

    async def max_turn_id(self) -> int:
        row = await self.read_one("SELECT COALESCE(MAX(id), 0) FROM turns")
        return int(row[0]) if row else 0

    async def turns_for_index(self, after_id: int, limit: int) -> tuple[list[tuple[int, str, str, str]], int]:
        """Indexable (id, place, author_name, content) among the `limit` rows after `after_id`, and the
        id that scan reached. One query, so the two can never disagree."""
        rows = await self.read_all(
            "SELECT id, place, author_name, content, superseded OR redacted FROM turns"
            " WHERE id > ? ORDER BY id LIMIT ?",
            (after_id, limit),
        )
        reached = int(rows[-1][0]) if rows else after_id
        return [(int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows if not r[4]], reached

    # -- index bookkeeping -------------------------------------------------------------------
    async def index_state(self, name: str) -> tuple[int, int, bool]:
        """(watermark, schema_version, rebuilding) of a side-index."""
        row = await self.read_one(
            "SELECT watermark, schema_version, rebuilding FROM index_state WHERE name = ?", (name,)
        )
        if row is None:
            return (0, 0, False)
        return (int(row[0]), int(row[1]), bool(row[2]))

    async def set_index_state(
        self, name: str, *, watermark: int, schema_version: int, rebuilding: bool, outbox_upto: int | None = None
    ) -> None:
        async with self._tx():
            await self._writer.execute(
                "INSERT INTO index_state (name, watermark, schema_version, rebuilding) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET watermark = excluded.watermark,"
                " schema_version = excluded.schema_version, rebuilding = excluded.rebuilding",
                (name, watermark, schema_version, int(rebuilding)),
            )
            if outbox_upto is not None:
                await self._writer.execute("DELETE FROM index_outbox WHERE name = ? AND id <= ?", (name, outbox_upto))

    async def outbox(self, name: str, limit: int) -> list[tuple[int, int]]:
        """(outbox id, document id) waiting to be removed from an index."""
        rows = await self.read_all(
            "SELECT id, doc_id FROM index_outbox WHERE name = ? ORDER BY id LIMIT ?", (name, limit)
        )
        return [(int(r[0]), int(r[1])) for r in rows]

    async def read_one_apart(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """A long read (a count over every turn) on a read-only connection of its own, in a worker
        thread: it does not hold up the reads that share the reader connection (a reply's)."""
        (rows,) = await self.read_all_apart([(sql, params)])
        return rows[0] if rows else None

    async def read_all_apart(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
        """Several reads in one snapshot, like `read_one_apart`: the rows of each statement, in order."""

        def run() -> list[list[tuple[Any, ...]]]:
            uri = _immutable_uri(self.path) if self.read_only else f"{self.path.resolve().as_uri()}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=5.0)
            try:
                conn.execute("BEGIN")
                out = [[tuple(row) for row in conn.execute(sql, params)] for sql, params in statements]
                conn.execute("COMMIT")
                return out
            finally:
                conn.close()

        try:
            return await asyncio.to_thread(run)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from exc


async def redact_turns_in(conn: aiosqlite.Connection, turn_ids: Sequence[int]) -> list[int]:
    """In the caller's transaction: clear these turns' text (those not redacted already), keeping the
    rows, and queue their index documents' removal. Returns the ids redacted now, in order."""
    done: list[int] = []
    for chunk, marks in in_chunks(turn_ids):
        rows = await conn.execute_fetchall(
            f"UPDATE turns SET content = '', redacted = 1 WHERE id IN ({marks}) AND redacted = 0 RETURNING id", chunk
        )
        now = sorted(int(r[0]) for r in rows)
        await conn.executemany("INSERT INTO index_outbox (name, doc_id) VALUES ('turns', ?)", [(t,) for t in now])
        done.extend(now)
    return sorted(done)


class _Transaction:
    """`BEGIN IMMEDIATE` ... `COMMIT`, rolled back on any exception.

    Cancellation-safe: a task cancelled while its BEGIN is in flight does not give up the write lock
    until that BEGIN has been rolled back (SQLite runs it anyway, in aiosqlite's thread). Otherwise the
    writer would be left inside a transaction nobody owns, every later write would join it, and none
    of them would ever be seen by a reader.
    """

    _cleanups: ClassVar[set[asyncio.Task[None]]] = set()

    def __init__(self, conn: aiosqlite.Connection, lock: asyncio.Lock) -> None:
        self._conn = conn
        self._lock = lock

    async def __aenter__(self) -> None:
        await self._lock.acquire()
        begin = asyncio.ensure_future(self._conn.execute("BEGIN IMMEDIATE"))
        try:
            await asyncio.shield(begin)
        except asyncio.CancelledError:
            cleanup = asyncio.get_running_loop().create_task(self._undo(begin))
            self._cleanups.add(cleanup)
            cleanup.add_done_callback(self._cleanups.discard)
            raise
        except BaseException:
            self._lock.release()
            raise

    async def _undo(self, begin: asyncio.Future[aiosqlite.Cursor]) -> None:
        """Wait for a BEGIN whose caller was cancelled, roll it back, then release the lock."""
        try:
            try:
                await begin
            except (sqlite3.Error, ValueError):
                return  # it did not begin (or the connection closed): nothing to undo
            with contextlib.suppress(sqlite3.Error, ValueError):
                await self._conn.execute("ROLLBACK")
        finally:
            self._lock.release()

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                try:
                    await self._conn.execute("COMMIT")
                except BaseException:
                    # A failed COMMIT leaves the transaction open: end it before anyone else writes.
                    with contextlib.suppress(sqlite3.Error, ValueError):
                        await self._conn.execute("ROLLBACK")
                    raise
            else:
                await self._conn.execute("ROLLBACK")
        finally:
            self._lock.release()


def blocks_hold(blocks: Iterable[bytes], needle: bytes) -> bool:
    """Whether the bytes these blocks make, read up to the first empty one, hold `needle` (also across
    two blocks)."""
    tail = b""
    for block in blocks:
        if not block:
            return False
        if needle in tail + block:
            return True
        tail = block[-(len(needle) - 1) :] if len(needle) > 1 else b""
    return False


def _immutable_uri(path: Path) -> str:
    return f"{path.resolve().as_uri()}?immutable=1"


def _no_room(exc: sqlite3.Error, path: Path) -> bool:
    """A failure the full disk holding `path` caused: SQLite's own SQLITE_FULL, or an I/O error (it could
    not size its -shm file) on a disk with no room left."""
    return is_disk_full(exc) or (sqlite_io_error(exc) and no_room_left(path.parent))


def _open_error(path: Path, exc: sqlite3.Error, *, reading_it: bool = True) -> StoreError:
    """The one-line error for a failed open: the full disk when it is one; else, once SQLite has read the
    file (`reading_it`), what it found there, or that it cannot be opened."""
    if _no_room(exc, path):
        return StoreDiskFullError(f"{path.name} cannot be opened: {exc}")
    if reading_it:
        return StoreError(f"{path} is not a readable Familiar database: {exc}")
    return StoreError(f"{path} cannot be opened ({exc}); check it and its folder's permissions")


def _wal_empty(path: Path) -> bool:
    """Whether the database's WAL holds nothing (or is not there): the file alone is the whole database.
    Asked with stat, never by opening history.db (see app.config.paths.database_usable)."""
    try:
        return os.stat(path.with_name(path.name + "-wal")).st_size == 0
    except FileNotFoundError:
        return True


def _migrate_sync(path: Path, backups_dir: Path, reading: bool) -> tuple[Path | None, bool]:
    """Bring the schema up to date; returns (the backup written, None if none; whether the file must be
    read as it stands: `reading` on a full disk, see the module doc)."""
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise _open_error(path, exc, reading_it=False) from exc
    try:
        conn.execute("PRAGMA journal_mode = WAL")  # WAL already: this writes nothing
        conn.execute("PRAGMA busy_timeout = 5000")
        if reading and schema_current(conn):
            return None, False
        return migrate(conn, backups_dir), False
    except sqlite3.DatabaseError as exc:
        if reading and _no_room(exc, path) and _wal_empty(path):
            return None, _read_as_it_stands(path, exc)
        raise _open_error(path, exc) from exc
    finally:
        conn.close()


def _read_as_it_stands(path: Path, refused: sqlite3.Error) -> bool:
    """For a reading open the full disk refused: check that the file, read as it stands, is a current
    Familiar database (a migration would have to write). Returns True."""
    try:
        conn = sqlite3.connect(_immutable_uri(path), uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise _open_error(path, refused, reading_it=False) from exc
    try:
        if not schema_current(conn):
            raise StoreDiskFullError(
                f"{path} must be upgraded to this Familiar's schema, and the disk holding it has no room left"
            )
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a readable Familiar database: {exc}") from exc
    finally:
        conn.close()
    return True
