"""One committer core over a real tantivy index and a real SQLite store under tmp_path, for the jobs alone."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.memory.fts import TURNS, FtsIndex
from app.memory.history import TurnIndexSource
from app.memory.index.core import IndexCore
from app.memory.index.health_file import HealthFile
from app.memory.records import IndexHealth
from app.memory.store import Store


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def index(tmp_path: Path) -> Iterator[FtsIndex]:
    opened = FtsIndex(tmp_path / "fts" / TURNS.name, TURNS)
    assert opened.open() == "created"
    yield opened
    opened.close()


@pytest.fixture
def healths() -> list[IndexHealth]:
    return []


@pytest.fixture
def core(index: FtsIndex, store: Store, tmp_path: Path, healths: list[IndexHealth]) -> Iterator[IndexCore]:
    with ThreadPoolExecutor(max_workers=1) as executor:
        yield IndexCore(
            index,
            TurnIndexSource(store),
            executor,
            HealthFile(tmp_path / "fts-turns.health.json"),
            batch_size=100,
            on_health=healths.append,
        )
