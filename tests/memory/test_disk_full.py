"""A full disk under the store and its search index: recognised as such (not as damage, not as a lock),
nothing already stored is lost, and both take writes again once there is room (issue 18, item 18).

Real SQLite and tantivy on a small tmpfs that the test fills with a filler file and frees again.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from app.memory.errors import IndexDiskFullError, StoreDiskFullError, is_disk_full
from app.memory.fts import IndexTiming
from app.memory.history import History
from app.memory.records import IndexHealth
from tests.memory.helpers import turn
from tests.small_disk import SmallDisk

QUICK = IndexTiming(poll_interval=0.05, locked_retry_first=0.05, locked_retry_max=0.2)
FILLER_TEXT = "a message said while the disk filled up " * 20  # ~800 bytes a turn: the WAL must grow
BEFORE = 300


def test_what_says_the_disk_is_full() -> None:
    assert is_disk_full(sqlite3.OperationalError("database or disk is full"))
    assert is_disk_full(OSError(28, "No space left on device"))
    tantivy_says = (
        "Failed to open file for write: 'IoError { io_error: Custom { kind: StorageFull, error: PathError {"
        ' path: "/data/fts/turns/.tmpb8Kar2", err: Os { code: 28, kind: StorageFull, message: "No space left'
        ' on device" } } }'
    )
    assert is_disk_full(ValueError(tantivy_says))
    assert is_disk_full(IndexDiskFullError("the disk is full"))
    outer = RuntimeError("storing the message failed")
    outer.__cause__ = sqlite3.OperationalError("database or disk is full")
    assert is_disk_full(outer)  # through the chain
    # A lock, a permission, damage: none of them is a full disk.
    assert not is_disk_full(sqlite3.OperationalError("database is locked"))
    assert not is_disk_full(ValueError("Failed to acquire Lockfile: LockBusy"))
    assert not is_disk_full(PermissionError(13, "Permission denied"))
    assert not is_disk_full(sqlite3.DatabaseError("database disk image is malformed"))


async def _until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    async def poll() -> None:
        while not condition():  # noqa: ASYNC110 - a short poll, bounded below
            await asyncio.sleep(0.02)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        pytest.fail(f"no {what} within {timeout} s")


async def _append_until_full(history: History, first_id: int, most: int = 20_000) -> tuple[list[int], BaseException]:
    """Append turns one by one until the store refuses one; returns the message ids it took and the error."""
    taken: list[int] = []
    for message_id in range(first_id, first_id + most):
        try:
            stored = await history.append_turn(turn(f"{FILLER_TEXT} {message_id}", message_id=message_id))
        except Exception as exc:  # noqa: BLE001 - the error is what the test looks at
            return taken, exc
        assert stored is not None
        taken.append(message_id)
    pytest.fail(f"the store took {most} turns on a full disk")


def _paths(disk: SmallDisk) -> tuple[Path, Path, Path]:
    root = disk.path / "familiar"
    return root / "history.db", root / "fts", root / "backups"


@pytest.mark.asyncio
async def test_a_full_disk_refuses_writes_loses_nothing_and_writes_resume_once_there_is_room(
    small_disk: SmallDisk,
) -> None:
    health: list[IndexHealth] = []
    history = await History.open(*_paths(small_disk), on_health=health.append, index_timing=QUICK)
    try:
        before = await history.append_turns(
            [turn(f"lantern {FILLER_TEXT} {i}", message_id=i) for i in range(1, BEFORE + 1)]
        )
        await history.turns_index.flush(10)
        # Everything in the WAL is now in the database file: the next writes reuse the WAL's room, so
        # SQL still takes some turns once the disk is full while the index (new files) takes none.
        [(busy, _frames, _moved)] = await history.store.read_all("PRAGMA wal_checkpoint(PASSIVE)")
        assert busy == 0

        small_disk.fill()
        taken, refused = await _append_until_full(history, 1000)
        assert taken, "the WAL had room for a few turns"
        # SQLite says so in its own words; nothing is taken for damage.
        assert isinstance(refused, sqlite3.OperationalError), repr(refused)
        assert is_disk_full(refused)
        # The index cannot take what SQL took: it says the disk is full and backs off (no error logged
        # per try: the autouse fixture fails the test on any ERROR record).
        await _until(lambda: any(h.name == "turns" and h.disk_full for h in health), "disk-full index health")
        report = next(h for h in reversed(health) if h.name == "turns")
        assert report.disk_full
        assert "disk is full" in report.state_line()

        # The probe a waiting caller uses says the same, and leaves nothing behind once there is room.
        with pytest.raises(sqlite3.OperationalError) as probed:
            await history.store.probe_room()
        assert is_disk_full(probed.value)

        small_disk.free()
        await history.store.probe_room()
        assert await history.store.read_all("SELECT key FROM store_meta WHERE key = 'room_probe'") == []
        after = await history.append_turn(turn("lantern after the disk was freed", message_id=99_999))
        assert after is not None
        # The index heals by itself (a writer the full disk killed reads as a lock until it is replaced).
        await _until(lambda: history.turns_index.state == "ready", "the index ready again")
        await history.turns_index.flush(20)
        assert not history.turns_index.health().disk_full

        stored = await history.store.read_all("SELECT message_id FROM turns ORDER BY id")
        assert [r[0] for r in stored] == [*range(1, BEFORE + 1), *taken, 99_999]  # nothing stored was lost
        # The index caught up with everything SQL took, during the full disk too.
        assert len(await history.search_turns("lantern", limit=BEFORE + 10)) == BEFORE + 1
        assert len(await history.search_turns("filled", limit=BEFORE + len(taken) + 10)) == BEFORE + len(taken)
        [(check,)] = await history.store.read_all("PRAGMA integrity_check")
        assert check == "ok"
        assert len(before) == BEFORE
    finally:
        small_disk.free()
        await history.close()


@pytest.mark.asyncio
async def test_while_the_index_cannot_take_documents_searches_read_the_store_and_nobody_waits_for_it(
    small_disk: SmallDisk,
) -> None:
    """Issue 19, item 5: a search waited for the index to catch up (up to a minute) and then missed what
    SQL took while the disk was full, as if the index were up to date."""
    health: list[IndexHealth] = []
    history = await History.open(*_paths(small_disk), on_health=health.append, index_timing=QUICK)
    try:
        await history.append_turns([turn(f"lantern {FILLER_TEXT} {i}", message_id=i) for i in range(1, 51)])
        await history.turns_index.flush(10)
        [(busy, _frames, _moved)] = await history.store.read_all("PRAGMA wal_checkpoint(PASSIVE)")
        assert busy == 0
        small_disk.fill()
        taken, _refused = await _append_until_full(history, 1000)
        assert taken
        await _until(lambda: history.turns_index.health().disk_full, "the index to meet the full disk")
        await asyncio.wait_for(history.catch_up(60), 5)  # not waited for: it takes nothing until there is room
        hits = await history.search_turns("filled", limit=100)
        assert len(hits) == 50 + len(taken)  # what SQL took meanwhile is found in the store
        status = await history.turns_index.status()
        assert status.disk_full
    finally:
        small_disk.free()
        await history.close()


@pytest.mark.asyncio
async def test_with_nothing_running_a_full_disk_is_read_as_it_stands_and_a_writing_open_says_it_is_full(
    small_disk: SmallDisk,
) -> None:
    """Issue 19, item 5: with the familiar stopped, every command said "history.db is not a readable Familiar
    database: disk I/O error": SQLite cannot make its shared-memory file on a full disk."""
    db, fts, backups = _paths(small_disk)
    history = await History.open(db, fts, backups)
    try:
        await history.append_turns([turn(f"lantern {i}", message_id=i) for i in range(1, 6)])
        await history.turns_index.flush(10)
    finally:
        await history.close()
    small_disk.fill()
    with pytest.raises(StoreDiskFullError) as refused:
        await History.open(db, fts, backups)
    assert is_disk_full(refused.value)
    assert "disk I/O error" in str(refused.value)
    reading = await History.open(db, fts, backups, reading=True)
    try:
        assert reading.store.read_only
        assert not reading.turns_index.owns_index  # nothing is written, the index files neither
        assert len(await reading.search_turns("lantern", limit=10)) == 5
        assert await reading.store.read_one_apart("SELECT COUNT(*) FROM turns") == (5,)
        with pytest.raises(StoreDiskFullError):
            await reading.append_turn(turn("one more", message_id=99))
        with pytest.raises(StoreDiskFullError):
            await reading.store.write([("DELETE FROM turns", ())])
    finally:
        await reading.close()
    small_disk.free()
    history = await History.open(db, fts, backups)
    try:
        assert await history.append_turn(turn("lantern once there is room", message_id=6)) is not None
        [(check,)] = await history.store.read_all("PRAGMA integrity_check")
        assert check == "ok"
    finally:
        await history.close()
