"""The times an index's health carries for the index health pane (issue 9, pane 5): the last commit, since
when a backlog waits, and when refusals last let go; shared with a process that only reads the index."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.memory.history import History
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
            health_file = folder.fts / "turns.health.json"
            data = json.loads(health_file.read_text(encoding="utf-8"))
            for key in ("last_commit_at", "backlog_since", "recovered_after", "recovered_at"):
                data.pop(key)
            health_file.write_text(json.dumps(data), encoding="utf-8")
            older = reader.turns_index.shared_health()
            assert older is not None
            assert (older.state, older.last_commit_at, older.recovered_at) == ("ready", None, None)
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
