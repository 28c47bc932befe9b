"""The cross-process health file alone: what the writer shares, throttled, and what a reader takes from it."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from app.memory.index.health_file import THROTTLE_SECONDS, HealthFile, health_from_json, health_json
from app.memory.records import IndexHealth, IndexState

AT = datetime(2026, 5, 1, 12, 30, tzinfo=UTC)


def health(state: IndexState = IndexState.READY, attempts: int = 0, commits: int = 3) -> IndexHealth:
    return IndexHealth(
        "turns", commits, 40, 1, 0, 0, "Access is denied", 2, 5, 17, False, state=state,
        locked_attempts=attempts, last_commit_at=AT, recovered_at=AT,
    )  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_file_says_the_health_in_json_with_times_in_iso_and_the_writers_pid(tmp_path: Path) -> None:
    shared = HealthFile(tmp_path / "fts-turns.health.json")
    shared.share(lambda: health(IndexState.LOCKED, attempts=4))
    data = json.loads(shared.path.read_text(encoding="utf-8"))
    assert data["pid"] == os.getpid()
    assert data["state"] == "locked"
    assert data["locked_attempts"] == 4
    assert data["last_commit_at"] == "2026-05-01T12:30:00+00:00"
    assert data["backlog_since"] is None
    assert shared.read() == health(IndexState.LOCKED, attempts=4)
    assert not (tmp_path / "fts-turns.health.tmp").exists(), "written beside, then moved in place"


def test_json_and_back_is_the_same_health() -> None:
    for state in IndexState:
        back = health_from_json(health_json(health(state)))
        assert back == health(state)
        assert back.state is state


def test_writes_are_throttled_but_a_change_of_state_or_a_retry_is_not(tmp_path: Path) -> None:
    clock = Clock()
    shared = HealthFile(tmp_path / "h.json", clock=clock)
    shared.share(lambda: health(commits=1))
    clock.now += THROTTLE_SECONDS / 2
    shared.share(lambda: health(commits=2))
    assert shared.unwritten, "kept for the loop's next turn"
    assert shared.read() == health(commits=1)
    shared.share(lambda: health(commits=3), retrying=True)
    assert shared.read() == health(commits=3)
    assert not shared.unwritten
    shared.share(lambda: health(IndexState.LOCKED, commits=4), force=True)
    assert shared.read() == health(IndexState.LOCKED, commits=4)
    clock.now += THROTTLE_SECONDS
    shared.share(lambda: health(commits=5))
    assert shared.read() == health(commits=5)


def test_a_refused_write_never_raises_and_is_tried_again(tmp_path: Path) -> None:
    shared = HealthFile(tmp_path / "missing-folder" / "h.json")
    shared.share(lambda: health())
    assert shared.unwritten
    shared.path.parent.mkdir()
    shared.share(lambda: health(), force=True)
    assert not shared.unwritten
    assert shared.read() == health()


def test_a_reader_takes_nothing_from_a_missing_broken_or_unknown_file(tmp_path: Path) -> None:
    shared = HealthFile(tmp_path / "h.json")
    assert shared.read() is None
    for text in ("{not json", "[1, 2]", json.dumps(health_json(health()) | {"state": "levitating"})):
        shared.path.write_text(text, encoding="utf-8")
        assert shared.read() is None, text


def test_a_file_of_an_older_version_lacks_the_newer_keys(tmp_path: Path) -> None:
    data = health_json(health())
    for newer in ("disk_full", "recovered_after", "recovered_at", "backlog_since"):
        del data[newer]
    shared = HealthFile(tmp_path / "h.json")
    shared.path.write_text(json.dumps(data), encoding="utf-8")
    read = shared.read()
    assert read is not None
    assert (read.disk_full, read.recovered_after, read.recovered_at) == (False, 0, None)
