"""The times an index's health carries for the index health pane (issue 9, pane 5): the last commit, since
when a backlog waits, and when refusals last let go; shared with a process that only reads the index."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.memory.history import History, health_file
from tests.memory.test_fts import FLUSH, Folder, fill, wait_for


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path / "familiar")


@pytest.mark.asyncio
async def test_a_commit_is_timed_and_a_backlog_dated_until_it_is_indexed(folder: Folder) -> None:
    history = await folder.open()
    try:
        assert history.turns_index.health().last_commit_at is None
        before = datetime.now(UTC)
        await fill(history, 3)
        waiting = history.turns_index.health().backlog_since
        assert waiting is not None
        assert before <= waiting <= datetime.now(UTC)
        await history.turns_index.flush(FLUSH)
        health = history.turns_index.health()
        assert health.last_commit_at is not None
        assert waiting <= health.last_commit_at <= datetime.now(UTC)
        await wait_for(lambda: history.turns_index.health().backlog_since is None)
        assert history.turns_index.health().recovered_after == 0
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_a_reader_sees_the_writers_times_and_an_older_health_file_still_reads(folder: Folder) -> None:
    writer = await folder.open()
    try:
        await fill(writer, 3)
        await writer.turns_index.flush(FLUSH)
        committed = writer.turns_index.health().last_commit_at
        reader = await History.open(folder.db, folder.fts, folder.root / "backups")
        try:
            await wait_for(
                lambda: (
                    (shared := reader.turns_index.shared_health()) is not None and shared.last_commit_at == committed
                ),
                FLUSH,
            )
            status = await reader.turns_index.status()
            assert status.last_commit_at == committed
            # A health file an older Familiar wrote has none of the new keys: it still reads, without times.
            shared = health_file(folder.db, "turns")
            data = json.loads(shared.read_text(encoding="utf-8"))
            for key in ("last_commit_at", "backlog_since", "recovered_after", "recovered_at"):
                data.pop(key)
            shared.write_text(json.dumps(data), encoding="utf-8")
            older = reader.turns_index.shared_health()
            assert older is not None
            assert (older.state, older.last_commit_at, older.recovered_at) == ("ready", None, None)
        finally:
            await reader.close()
    finally:
        await writer.close()


@pytest.mark.asyncio
async def test_a_refused_health_file_is_written_again_and_a_closed_one_is_not_the_holders_state(
    folder: Folder,
) -> None:
    """Issue 19, item 6: a reader beside a locked writer said `closed`, 0 attempts: what the last process
    left in the file when it let go, while the writer could not write it (a scanner holding it)."""
    writer = await folder.open()
    try:
        shared = health_file(folder.db, "turns")
        reader = await History.open(folder.db, folder.fts, folder.root / "backups")
        try:
            # What the last command left when it closed, and the writer cannot replace it for now.
            closed = json.loads(shared.read_text(encoding="utf-8")) | {"state": "closed", "locked_attempts": 0}
            shared.write_text(json.dumps(closed), encoding="utf-8")
            tmp = shared.with_suffix(".tmp")
            tmp.mkdir()  # the writer's write of the file fails while this is here
            await fill(writer, 2)
            await writer.turns_index.flush(FLUSH)
            assert json.loads(shared.read_text(encoding="utf-8"))["state"] == "closed"
            status = await reader.turns_index.status()
            assert status.state == "reader"  # not the "closed" of a process that let go
            tmp.rmdir()
            await wait_for(lambda: json.loads(shared.read_text(encoding="utf-8"))["state"] == "ready", FLUSH)
            status = await reader.turns_index.status()
            assert (status.state, status.commits) == ("ready", writer.turns_index.health().commits)
        finally:
            await reader.close()
    finally:
        await writer.close()


@pytest.mark.asyncio
async def test_source_rows_follow_appends_at_once_and_removals_once_they_leave_the_index(folder: Folder) -> None:
    """The whole table is counted now and then (it is a scan); what is appended meanwhile is added from
    a cheap range, and a removal that reached the index makes the next read count again."""
    history = await folder.open()
    try:
        committer = history.turns_index
        await fill(history, 5)
        assert await committer.source_rows() == 5  # a full count
        await fill(history, 3, word="beacon", start=50)
        assert await committer.source_rows() == 8  # the cached count and the new range
        await history.redact_message("discord", 1, datetime.now(UTC))
        await committer.flush(FLUSH)
        assert await committer.source_rows() == 7
        assert await committer.document_count() == 7
    finally:
        await history.close()
