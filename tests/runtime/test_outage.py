"""StorageOutage's state, on its own: which refusals make the disk "full", what the event says, and the
retry that finds room by itself. A real store under tmp_path answers the retry's probe write; the disk
itself is filled in tests/runtime/test_disk_full.py."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from app.memory.store import Store
from app.runtime.events import DiskFullChanged, RuntimeEvent
from app.runtime.outage import STORE, StorageOutage, disk_full_line


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(tmp_path / "history.db", tmp_path / "backups")
    yield opened
    await opened.close()


async def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():  # noqa: ASYNC110 - a short poll, bounded below
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


@pytest.mark.asyncio
async def test_the_index_alone_refused_says_messages_are_stored_but_not_yet_searchable(
    tmp_path: Path, store: Store
) -> None:
    events: list[RuntimeEvent] = []
    outage = StorageOutage(tmp_path, events.append, store.probe_room)
    outage.index_health("turns", False, None)
    assert events == []  # nothing to say while it was never full

    outage.index_health("turns", True, "No space left on device (os error 28) at path .tmpAbc123")
    outage.index_health("turns", True, "No space left on device (os error 28) at path .tmpXyz789")
    [full] = events  # the same state: said once, whatever temporary file each try named
    assert isinstance(full, DiskFullChanged)
    assert full.full
    assert full.index_only
    assert full.banner.startswith("Disk full: the search index cannot take new messages (they are stored")
    assert outage.banner() == full.banner

    outage.index_health("turns", False, None)
    assert isinstance(events[-1], DiskFullChanged)
    assert not events[-1].full
    assert events[-1].banner == ""
    assert outage.banner() is None
    await outage.close()


@pytest.mark.asyncio
async def test_a_store_refusal_is_retried_by_itself_and_cleared_when_a_probe_write_lands(
    tmp_path: Path, store: Store
) -> None:
    events: list[RuntimeEvent] = []
    outage = StorageOutage(tmp_path, events.append, store.probe_room, retry_first=0.05)
    outage.index_health("facts", True, "no room")
    outage.refused(STORE, sqlite3.OperationalError("database or disk is full"))
    status = events[-1]
    assert isinstance(status, DiskFullChanged)
    assert status.detail == "database or disk is full"  # the store's own words before the index's
    assert not status.index_only
    outage.index_health("facts", False, None)
    # Nothing was missed, so only the retry's probe can tell the store takes writes again: it does here.
    await _until(lambda: not outage.full)
    last = events[-1]
    assert isinstance(last, DiskFullChanged)
    assert not last.full
    await outage.close()


def test_the_one_line_names_the_folder_and_what_said_so() -> None:
    inner = sqlite3.OperationalError("database or disk is full")
    outer = RuntimeError("the import failed")
    outer.__cause__ = inner
    line = disk_full_line(outer, Path("/data/familiars/default"))
    assert line == (
        "the disk holding /data/familiars/default is full (database or disk is full):"
        " free some space on it, then try again"
    )
    assert disk_full_line(sqlite3.OperationalError("database is locked"), Path("/data")) is None
