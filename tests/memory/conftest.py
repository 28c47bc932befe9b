"""Fixtures for the store tests: real SQLite and tantivy files under tmp_path, never mocks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from app.memory.store import Store


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(tmp_path / "history.db", tmp_path / "backups")
    yield opened
    await opened.close()
