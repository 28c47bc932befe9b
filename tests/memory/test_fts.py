"""History end to end: SQL first, the tantivy turn index following through the group committer.

Nothing is mocked: real SQLite and tantivy files under tmp_path. Faults are injected at the one
seam that touches index files (`FtsIndex._commit_writer`) with the messages tantivy really raises.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import tantivy
from hypothesis import given, settings
from hypothesis import strategies as st

from app.memory.errors import IndexUnavailableError
from app.memory.fts import TURNS, FtsIndex, IndexTiming, is_transient
from app.memory.history import History
from app.memory.records import IndexHealth
from tests.memory.helpers import OTHER_PLACE, PLACE, T0, turn

# What tantivy 0.27 raises, captured from real faults: a segment file that cannot be created (the index
# folder made immutable with chattr +i on Linux), meta.json that cannot be replaced, a second writer.
OPEN_FOR_WRITE_NOT_PERMITTED = (
    "Failed to open file for write: 'IoError { io_error: Custom { kind: PermissionDenied, error: PathError { path:"
    ' "/tmp/familiar/fts/turns/.tmpEgvpPu", err: Os { code: 1, kind: PermissionDenied, message: "Operation not'
    ' permitted" } } }, filepath: "924e94acf6534e6f82d385ccb4b12500.fieldnorm" }\''
)
NOT_PERMITTED = "An IO error occurred: 'Operation not permitted (os error 1)'"
LOCK_BUSY = (
    'Failed to acquire Lockfile: LockBusy. Some("Failed to acquire index lock. If you are using a regular '
    "directory, this means there is already an `IndexWriter` working on this `Directory`, in this process "
    'or in a different process.")'
)
# The same two failures on Windows while an antivirus scanner holds a file: Rust renders the OS error as
# `Os { code: 5, kind: PermissionDenied, message: "Access is denied." }` / "Access is denied. (os error 5)".
OPEN_FOR_WRITE_ACCESS_DENIED = (
    "Failed to open file for write: 'IoError { io_error: Custom { kind: PermissionDenied, error: PathError { path:"
    ' "C:\\\\Users\\\\owner\\\\AppData\\\\Local\\\\Familiar\\\\default\\\\fts\\\\turns\\\\.tmpQ3xv1a", err: Os {'
    ' code: 5, kind: PermissionDenied, message: "Access is denied." } } }, filepath:'
    ' "0c5e5e7a4f1b4bb58a5c1f4f4c2a9e11.idx" }\''
)
ACCESS_DENIED = "An IO error occurred: 'Access is denied. (os error 5)'"
TRANSIENT_MESSAGES = [
    OPEN_FOR_WRITE_NOT_PERMITTED,
    NOT_PERMITTED,
    LOCK_BUSY,
    OPEN_FOR_WRITE_ACCESS_DENIED,
    ACCESS_DENIED,
]
NOT_TRANSIENT = "An invalid argument was passed: 'schema mismatch for field content'"

FLUSH = 15.0
REPO_ROOT = str(Path(__file__).resolve().parents[2])


class FaultyIndex(FtsIndex):
    """A real tantivy index whose commit fails (or silently loses its batch) on demand."""

    def __init__(self, path: Path, *, errors: list[str] | None = None, lose: int = 0) -> None:
        super().__init__(path, TURNS)
        self._lock = threading.Lock()
        self.errors = list(errors or [])
        self.lose = lose
        self.commit_calls = 0

    def fail_next(self, *messages: str) -> None:
        with self._lock:
            self.errors.extend(messages)

    def lose_next(self, count: int = 1) -> None:
        with self._lock:
            self.lose += count

    def _commit_writer(self, writer: tantivy.IndexWriter) -> None:
        with self._lock:
            self.commit_calls += 1
            error = self.errors.pop(0) if self.errors else None
            lose = self.lose > 0
            if lose:
                self.lose -= 1
        if error is not None:
            raise ValueError(error)
        if lose:
            writer.rollback()  # as if the commit "succeeded" but its documents vanished
            return
        super()._commit_writer(writer)


@dataclass
class Folder:
    root: Path
    healths: list[IndexHealth] = field(default_factory=list)
    listeners: list[Callable[[IndexHealth], None]] = field(default_factory=list)

    def _on_health(self, health: IndexHealth) -> None:
        self.healths.append(health)
        for listener in self.listeners:
            listener(health)

    @property
    def db(self) -> Path:
        return self.root / "history.db"

    @property
    def fts(self) -> Path:
        return self.root / "fts"

    @property
    def index_dir(self) -> Path:
        return self.fts / TURNS.name

    async def open(self, index: FtsIndex | None = None, **kwargs: Any) -> History:
        return await History.open(
            self.db, self.fts, self.root / "backups", on_health=self._on_health, index=index, **kwargs
        )

    def faulty(self, **kwargs: Any) -> FaultyIndex:
        return FaultyIndex(self.index_dir, **kwargs)


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path / "familiar")


@pytest_asyncio.fixture
async def history(folder: Folder) -> AsyncIterator[History]:
    opened = await folder.open()
    yield opened
    await opened.close()


async def ids_for(history: History, query: str, place: str | None = None) -> list[int]:
    return sorted(hit.turn.id for hit in await history.search_turns(query, limit=100, place=place))


async def index_ids(history: History) -> set[int]:
    return await asyncio.to_thread(history.turns_index.index.all_ids)


async def index_doc_count(history: History) -> int:
    return await asyncio.to_thread(history.turns_index.index.num_docs)


async def indexable_ids(history: History) -> set[int]:
    rows = await history.store.read_all("SELECT id FROM turns WHERE superseded = 0 AND redacted = 0")
    return {int(r[0]) for r in rows}


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():  # noqa: ASYNC110 - a short poll, bounded by wait_for below
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


async def fill(history: History, count: int, word: str = "lantern", start: int = 1) -> list[int]:
    return await history.append_turns(
        [turn(f"{word} note number{i}", message_id=i, minutes=i) for i in range(start, start + count)]
    )


async def assert_fully_indexed(history: History) -> None:
    wanted = await indexable_ids(history)
    assert await index_ids(history) == wanted
    assert await index_doc_count(history) == len(wanted), "duplicate documents in the index"


# -- the happy path ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_appended_turns_become_searchable(history: History) -> None:
    first = await history.append_turn(turn("the lantern flickers in the wind", message_id=1))
    assert first is not None
    more = await history.append_turns(
        [turn("a lantern festival tonight", message_id=2), turn("unrelated chatter", message_id=3)]
    )
    await history.turns_index.flush(timeout=FLUSH)
    assert await ids_for(history, "lantern") == [first.id, more[0]]
    assert await ids_for(history, "chatter") == [more[1]]
    assert await ids_for(history, "alice") == [first.id, *more], "the author's name is searchable"
    hits = await history.search_turns("lantern flickers")
    assert hits[0].turn.id == first.id
    assert hits[0].score > 0
    assert hits[0].turn.content == "the lantern flickers in the wind"
    assert await history.search_turns("   ") == []
    health = history.index_health()
    assert health.watermark == 3
    assert health.lag == 0
    assert health.pending == 0
    assert health.documents_committed == 3
    assert health.failures == 0
    assert health.rebuilt_at_start is True  # a new index is built from SQL


@pytest.mark.asyncio
async def test_group_commit_takes_many_documents_per_commit(history: History) -> None:
    await fill(history, 300)
    await history.turns_index.flush(timeout=FLUSH)
    health = history.index_health()
    assert health.documents_committed == 300
    assert health.commits <= 3
    assert len(await ids_for(history, "lantern")) == 100  # the limit
    await assert_fully_indexed(history)


@pytest.mark.asyncio
async def test_search_limit_is_respected_and_zero_is_harmless(history: History) -> None:
    await fill(history, 5)
    await history.turns_index.flush(timeout=FLUSH)
    assert len(await history.search_turns("lantern", limit=2)) == 2
    assert await history.search_turns("lantern", limit=0) == []
    assert await history.search_turns("lantern", limit=-1) == []


@pytest.mark.asyncio
async def test_edit_replaces_the_indexed_text(history: History) -> None:
    original = await history.append_turn(turn("I adore cats", message_id=1))
    assert original is not None
    await history.turns_index.flush(timeout=FLUSH)
    assert await ids_for(history, "cats") == [original.id]
    edited = await history.edit_message("discord", 1, "I adore dogs", T0 + timedelta(minutes=1))
    assert edited is not None
    await history.turns_index.flush(timeout=FLUSH)
    assert await ids_for(history, "cats") == []
    assert await ids_for(history, "dogs") == [edited.id]
    assert original.id not in await index_ids(history), "the old revision is gone from the index itself"
    await assert_fully_indexed(history)


@pytest.mark.asyncio
async def test_edit_before_the_first_commit(history: History) -> None:
    await history.append_turn(turn("draft wording", message_id=1))
    await history.edit_message("discord", 1, "final wording", T0 + timedelta(minutes=1))
    await history.turns_index.flush(timeout=FLUSH)
    assert await ids_for(history, "draft") == []
    assert len(await ids_for(history, "final")) == 1
    await assert_fully_indexed(history)


@pytest.mark.asyncio
async def test_redaction_removes_the_text_from_the_index(history: History) -> None:
    secret = await history.append_turn(turn("my password is swordfish", message_id=1))
    other = await history.append_turn(turn("the swordfish swam by", message_id=2))
    assert secret is not None
    assert other is not None
    await history.turns_index.flush(timeout=FLUSH)
    assert await ids_for(history, "swordfish") == [secret.id, other.id]
    await history.redact_message("discord", 1, T0)
    await history.turns_index.flush(timeout=FLUSH)
    assert await ids_for(history, "swordfish") == [other.id]
    raw_hits = await history.turns_index.search("password", 10)
    assert raw_hits == [], "the document is deleted from tantivy, not merely filtered out"
    assert secret.id not in await index_ids(history)
    assert await history.store.outbox("turns", 10) == []


@pytest.mark.asyncio
async def test_redaction_of_every_revision(history: History) -> None:
    await history.append_turn(turn("first secret", message_id=1))
    await history.turns_index.flush(timeout=FLUSH)
    await history.edit_message("discord", 1, "second secret", T0 + timedelta(minutes=1))
    await history.redact_message("discord", 1, T0 + timedelta(minutes=2))
    await history.turns_index.flush(timeout=FLUSH)
    assert await history.turns_index.search("secret", 10) == []
    assert await index_ids(history) == set()


@pytest.mark.asyncio
async def test_search_with_a_place_filter(history: History) -> None:
    here = await history.append_turn(turn("meet at the lantern", message_id=1))
    there = await history.append_turn(turn("meet at the lantern too", message_id=2, place=OTHER_PLACE))
    dm = await history.append_turn(turn("lantern in a DM", message_id=3, place="dm:7001"))
    assert here is not None
    assert there is not None
    assert dm is not None
    await history.turns_index.flush(timeout=FLUSH)
    assert await ids_for(history, "lantern") == [here.id, there.id, dm.id]
    assert await ids_for(history, "lantern", place=PLACE) == [here.id]
    assert await ids_for(history, "lantern", place=OTHER_PLACE) == [there.id]
    assert await ids_for(history, "lantern", place="dm:7001") == [dm.id]
    assert await ids_for(history, "lantern", place="guild:500") == [], "place is matched exactly"
    assert await ids_for(history, "lantern", place="nowhere") == []


HOSTILE_QUERIES = [
    '"unbalanced quote',
    "'single",
    'content:"also unbalanced',
    "content:lantern",
    "author:alice",
    "place:guild:500/501",
    "id:1",
    "id:notanumber",
    "id:[1 TO",
    "nosuchfield:value",
    "field:",
    ":",
    "*",
    "lan*",
    "AND OR",
    "AND",
    "OR NOT",
    "NOT lantern",
    "-lantern",
    "+",
    "(",
    ")))",
    "[1 TO 5]",
    "{ }",
    "^2",
    "lantern^",
    "lantern~2",
    "\\",
    "🏮🔥 lantern 🐉",
    "\x00\x01",
    "a" * 10_000,
    "lantern " * 1_500,
    "日本語のテキスト",
    "IN [a b]",
    "0:*",  # an exists-query on a field that is not there: found by hypothesis (the search refused it)
    "place:*",
    "content:lantern",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES, ids=range(len(HOSTILE_QUERIES)))
@pytest.mark.asyncio
async def test_hostile_queries_never_raise(history: History, query: str) -> None:
    await history.append_turn(turn("the lantern 🏮 glows", message_id=1))
    await history.turns_index.flush(timeout=FLUSH)
    hits = await history.search_turns(query)
    assert all(hit.turn.content for hit in hits)
    await history.search_turns(query, place=PLACE)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_random_queries_never_raise(tmp_path_factory: pytest.TempPathFactory, query: str) -> None:
    index = _shared_index(tmp_path_factory)
    assert isinstance(index.search(query, 5), list)
    assert isinstance(index.search(query, 5, place=PLACE), list)


_INDEXES: dict[int, FtsIndex] = {}


def _shared_index(factory: pytest.TempPathFactory) -> FtsIndex:
    """One small read-only index for the property test (opening one per example would be slow)."""
    key = id(factory)
    if key not in _INDEXES:
        path = factory.mktemp("property-index") / "turns"
        writer = FtsIndex(path, TURNS)
        writer.open()
        writer.stage(
            [{"id": i, "place": PLACE, "author": "alice", "content": f"lantern {i} 🏮"} for i in range(1, 20)],
            [],
            upsert=False,
        )
        writer.commit()
        writer.close()
        reader = FtsIndex(path, TURNS)
        reader.open(writable=False)
        _INDEXES.clear()
        _INDEXES[key] = reader
    return _INDEXES[key]


# -- transient commit failures ------------------------------------------------------------------------


def test_the_real_tantivy_messages_are_recognised() -> None:
    for message in TRANSIENT_MESSAGES:
        assert is_transient(ValueError(message)), message
    assert not is_transient(ValueError(NOT_TRANSIENT))
    assert not is_transient(OSError(ACCESS_DENIED)), "tantivy only ever raises ValueError"
    assert not is_transient(ValueError("Failed to commit: An IO error occurred: 'No such file (os error 13)'"))


@pytest.mark.parametrize(
    "message", TRANSIENT_MESSAGES, ids=["open-eperm", "eperm", "lockbusy", "open-access-denied", "access-denied"]
)
@pytest.mark.asyncio
async def test_transient_failures_are_retried_with_live_attempts(folder: Folder, message: str) -> None:
    index = folder.faulty(errors=[message] * 3)
    history = await folder.open(index=index)
    try:
        ids = await fill(history, 40)
        await history.turns_index.flush(timeout=FLUSH)
        live = [h.live_attempt for h in folder.healths if h.live_attempt]
        assert live == [2, 3, 4]
        retrying = [h for h in folder.healths if h.live_attempt]
        assert all(h.last_error is not None and message[:40] in h.last_error for h in retrying)
        assert [h.retries for h in retrying] == [1, 2, 3]
        health = history.index_health()
        assert health.retries == 3
        assert health.live_attempt == 0
        assert health.failures == 0
        assert health.last_error is None
        assert health.watermark == ids[-1]
        assert index.commit_calls == 4
        assert await ids_for(history, "lantern") == ids
        await assert_fully_indexed(history)
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_failures_beyond_max_attempts_leave_the_watermark_behind(folder: Folder) -> None:
    index = folder.faulty()
    history = await folder.open(index=index)
    try:
        first = await fill(history, 10)
        await history.turns_index.flush(timeout=FLUSH)
        assert history.index_health().watermark == first[-1]

        failed = asyncio.Event()
        seen: list[IndexHealth] = []
        in_index: list[list[tuple[int, float]]] = []

        def watch(health: IndexHealth) -> None:
            if health.failures and not failed.is_set():
                seen.append(health)
                in_index.append(history.turns_index.index.search("beacon", 100))  # the index at that moment
                failed.set()

        folder.listeners.append(watch)
        index.fail_next(*[ACCESS_DENIED] * 5)  # max_attempts is 5
        second = await fill(history, 10, word="beacon", start=100)
        await asyncio.wait_for(failed.wait(), timeout=FLUSH)
        # During the pause after the failed round: nothing of the batch landed, nothing was skipped.
        [at_failure] = seen
        assert at_failure.failures == 1
        assert at_failure.watermark == first[-1]
        assert at_failure.live_attempt == 0
        assert at_failure.last_error is not None
        assert "Access is denied" in at_failure.last_error
        assert at_failure.retries == 4
        assert (at_failure.state, at_failure.locked_attempts) == ("locked", 1)
        state = await history.store.index_state("turns")
        assert state[0] == first[-1], "the persisted watermark did not move either"
        assert in_index == [[]]
        # Searches add what the locked index lacks from the store.
        assert await ids_for(history, "beacon") == second

        # The next round (after the backoff) lands everything.
        await wait_for(lambda: history.index_health().state == "ready")
        await history.turns_index.flush(timeout=FLUSH)
        assert await ids_for(history, "beacon") == second
        assert await ids_for(history, "lantern") == first
        health = history.index_health()
        assert health.failures == 1
        assert health.watermark == second[-1]
        assert (await history.store.index_state("turns"))[0] == second[-1]
        assert index.commit_calls >= 1 + 5 + 1
        await assert_fully_indexed(history)
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_a_failed_batch_is_picked_up_after_a_restart(folder: Folder) -> None:
    index = folder.faulty()
    history = await folder.open(index=index)
    try:
        first = await fill(history, 10)
        await history.turns_index.flush(timeout=FLUSH)
        index.fail_next(*[LOCK_BUSY] * 5)
        second = await fill(history, 6, word="beacon", start=100)
        await wait_for(lambda: history.index_health().failures == 1)
    finally:
        await history.close()  # during the failure pause: the batch never landed
    reopened = await folder.open()
    try:
        health = reopened.index_health()
        assert health.rebuilt_at_start is False
        assert health.watermark == first[-1]
        await reopened.turns_index.flush(timeout=FLUSH)
        assert reopened.index_health().documents_committed == len(second), "only the missing batch is indexed"
        assert await ids_for(reopened, "beacon") == second
        assert await ids_for(reopened, "lantern") == first
        await assert_fully_indexed(reopened)
    finally:
        await reopened.close()


@pytest.mark.asyncio
async def test_silent_loss_is_repaired_by_reconcile(folder: Folder) -> None:
    index = folder.faulty()
    history = await folder.open(index=index)
    try:
        kept = await fill(history, 5)
        await history.turns_index.flush(timeout=FLUSH)
        index.lose_next()
        lost = await fill(history, 7, word="beacon", start=50)
        await history.turns_index.flush(timeout=FLUSH)
        # The commit "succeeded": the watermark moved, yet the documents are not there.
        assert history.index_health().watermark == lost[-1]
        assert await ids_for(history, "beacon") == []
        repaired = await history.turns_index.reconcile()
        assert repaired == len(lost)
        assert await ids_for(history, "beacon") == lost
        assert await ids_for(history, "lantern") == kept
        await assert_fully_indexed(history)
        assert await history.turns_index.reconcile() == 0
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_reconcile_drops_documents_sql_no_longer_wants(folder: Folder) -> None:
    history = await folder.open()
    try:
        ids = await fill(history, 3)
        await history.turns_index.flush(timeout=FLUSH)
        # Simulate a lost removal: the row is redacted in SQL but the outbox entry is gone.
        await history.store.write(
            [("UPDATE turns SET content = '', redacted = 1 WHERE id = ?", (ids[0],)), ("DELETE FROM index_outbox", ())]
        )
        assert ids[0] in await index_ids(history)
        assert await history.turns_index.reconcile() == 1
        assert await index_ids(history) == set(ids[1:])
    finally:
        await history.close()


@pytest.mark.asyncio
@pytest.mark.logs_errors(r"app\.memory\.committer: index turns: commit failed: .*invalid argument")
async def test_non_transient_errors_are_not_retried(folder: Folder) -> None:
    index = folder.faulty(errors=[NOT_TRANSIENT])
    calls_at_failure: list[int] = []
    history = await folder.open(index=index)
    try:

        def watch(health: IndexHealth) -> None:
            if health.failures and not calls_at_failure:
                calls_at_failure.append(index.commit_calls)

        folder.listeners.append(watch)
        ids = await fill(history, 5)
        await wait_for(lambda: bool(calls_at_failure))
        assert calls_at_failure == [1], "one attempt, no immediate retry"
        health = history.index_health()
        assert health.retries == 0
        assert health.failures == 1
        assert health.last_error is not None
        assert "invalid argument" in health.last_error
        assert all(h.live_attempt == 0 for h in folder.healths)
        # Nothing is lost: a later round (after the failure pause) indexes the batch.
        await history.turns_index.flush(timeout=FLUSH)
        assert await ids_for(history, "lantern") == ids
        assert history.index_health().retries == 0
    finally:
        await history.close()


@pytest.mark.asyncio
@pytest.mark.logs_errors(r"app\.memory\.committer: index health listener failed")
async def test_a_health_listener_that_raises_does_not_stop_indexing(folder: Folder) -> None:
    def broken(_health: IndexHealth) -> None:
        raise RuntimeError("listener bug")

    history = await History.open(folder.db, folder.fts, folder.root / "backups", on_health=broken)
    try:
        ids = await fill(history, 3)
        await history.turns_index.flush(timeout=FLUSH)
        assert await ids_for(history, "lantern") == ids
    finally:
        await history.close()


# -- start-up: corrupt, foreign or missing indexes ------------------------------------------------------


def _garbage_everything(index_dir: Path) -> None:
    for path in index_dir.iterdir():
        if path.is_file() and not path.name.startswith(".tantivy-"):
            path.write_bytes(os.urandom(64))


def _garbage_segments(index_dir: Path) -> None:
    for path in index_dir.iterdir():
        if path.suffix in {".idx", ".term", ".store", ".pos", ".fast", ".fieldnorm"}:
            path.write_bytes(b"garbage" * 50)


def _garbage_meta(index_dir: Path) -> None:
    (index_dir / "meta.json").write_text("{not json", encoding="utf-8")


def _missing_segment(index_dir: Path) -> None:
    for path in index_dir.iterdir():
        if path.suffix == ".idx":
            path.unlink()


def _other_schema_version(index_dir: Path) -> None:
    (index_dir / "familiar-index.json").write_text(json.dumps({"schema_version": 99}), encoding="utf-8")


def _no_version_file(index_dir: Path) -> None:
    (index_dir / "familiar-index.json").unlink()


def _stray_files(index_dir: Path) -> None:
    (index_dir / "zzz.garbage").write_bytes(b"\x00" * 100)
    _garbage_meta(index_dir)


def _deleted_folder(index_dir: Path) -> None:
    import shutil

    shutil.rmtree(index_dir.parent)


def _file_instead_of_folder(index_dir: Path) -> None:
    import shutil

    shutil.rmtree(index_dir)
    index_dir.write_bytes(b"not an index")


DAMAGE = {
    "garbage-everything": _garbage_everything,
    "garbage-segments": _garbage_segments,
    "garbage-meta": _garbage_meta,
    "missing-segment": _missing_segment,
    "other-schema-version": _other_schema_version,
    "no-version-file": _no_version_file,
    "stray-files": _stray_files,
    "fts-folder-deleted": _deleted_folder,
    "file-instead-of-folder": _file_instead_of_folder,
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
@pytest.mark.asyncio
async def test_damaged_index_is_rebuilt_from_sql_at_start(folder: Folder, damage: Callable[[Path], None]) -> None:
    history = await folder.open()
    try:
        ids = await fill(history, 30)
        await history.redact_message("discord", 3, T0)
        await history.turns_index.flush(timeout=FLUSH)
    finally:
        await history.close()
    damage(folder.index_dir)
    reopened = await folder.open()
    try:
        assert reopened.index_health().rebuilt_at_start is True
        await reopened.turns_index.flush(timeout=FLUSH)
        expected = [i for i in ids if i != 3]
        assert await ids_for(reopened, "lantern") == expected
        await assert_fully_indexed(reopened)
        assert (await reopened.store.index_state("turns"))[2] is False, "the rebuild is recorded as finished"
    finally:
        await reopened.close()
    # And the repaired index is kept on the next start.
    again = await folder.open()
    try:
        assert again.index_health().rebuilt_at_start is False
        await again.turns_index.flush(timeout=FLUSH)
        assert again.index_health().documents_committed == 0
        assert await ids_for(again, "lantern") == expected
    finally:
        await again.close()


@pytest.mark.asyncio
async def test_index_state_of_another_schema_version_forces_a_rebuild(folder: Folder) -> None:
    history = await folder.open()
    try:
        ids = await fill(history, 12)
        await history.turns_index.flush(timeout=FLUSH)
        await history.store.set_index_state("turns", watermark=ids[-1], schema_version=0, rebuilding=False)
    finally:
        await history.close()
    reopened = await folder.open()
    try:
        assert reopened.index_health().rebuilt_at_start is True
        await reopened.turns_index.flush(timeout=FLUSH)
        assert reopened.index_health().documents_committed == 12
        await assert_fully_indexed(reopened)
    finally:
        await reopened.close()


@pytest.mark.asyncio
async def test_an_interrupted_rebuild_is_restarted(folder: Folder) -> None:
    history = await folder.open()
    try:
        await fill(history, 12)
        await history.turns_index.flush(timeout=FLUSH)
        await history.store.set_index_state("turns", watermark=4, schema_version=TURNS.schema_version, rebuilding=True)
    finally:
        await history.close()
    reopened = await folder.open()
    try:
        assert reopened.index_health().rebuilt_at_start is True
        await reopened.turns_index.flush(timeout=FLUSH)
        await assert_fully_indexed(reopened)
    finally:
        await reopened.close()


@pytest.mark.asyncio
async def test_reopening_keeps_the_watermark(folder: Folder) -> None:
    history = await folder.open()
    try:
        ids = await fill(history, 25)
        await history.turns_index.flush(timeout=FLUSH)
    finally:
        await history.close()
    reopened = await folder.open()
    try:
        health = reopened.index_health()
        assert health.rebuilt_at_start is False
        assert health.watermark == ids[-1]
        await reopened.turns_index.flush(timeout=FLUSH)
        assert reopened.index_health().documents_committed == 0, "nothing was re-indexed"
        assert await ids_for(reopened, "lantern") == ids
        more = await fill(reopened, 2, word="beacon", start=500)
        await reopened.turns_index.flush(timeout=FLUSH)
        assert reopened.index_health().documents_committed == 2
        assert await ids_for(reopened, "beacon") == more
        await assert_fully_indexed(reopened)
    finally:
        await reopened.close()


@pytest.mark.asyncio
async def test_turns_written_while_the_index_was_closed_are_indexed_on_open(folder: Folder) -> None:
    from app.memory.store import Store

    history = await folder.open()
    try:
        first = await fill(history, 5)
        await history.turns_index.flush(timeout=FLUSH)
    finally:
        await history.close()
    # Another writer (no index attached) appends, edits and redacts in SQL only.
    store = await Store.open(folder.db, folder.root / "backups")
    try:
        later = await store.append_turns([turn(f"beacon {i}", message_id=100 + i) for i in range(4)])
        await store.redact_message("discord", 1, T0)
        await store.edit_message("discord", 2, "edited beacon", T0 + timedelta(minutes=9))
    finally:
        await store.close()
    reopened = await folder.open()
    try:
        await reopened.turns_index.flush(timeout=FLUSH)
        assert first[0] not in await index_ids(reopened)
        assert len(await ids_for(reopened, "beacon")) == len(later) + 1
        await assert_fully_indexed(reopened)
    finally:
        await reopened.close()


# -- two processes on one folder ------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_second_history_opens_the_index_read_only(folder: Folder) -> None:
    first = await folder.open()
    try:
        ids = await fill(first, 8)
        await first.turns_index.flush(timeout=FLUSH)
        second = await History.open(folder.db, folder.fts, folder.root / "backups")
        try:
            assert first.turns_index.index.writable is True
            assert second.turns_index.index.writable is False
            assert await ids_for(second, "lantern") == ids
            status = await second.turns_index.status()
            assert status.watermark == ids[-1]
            assert status.lag == 0
            with pytest.raises(ValueError, match="another Familiar process is writing the turns index") as refused:
                await second.turns_index.rebuild()
            assert "window" not in str(refused.value), "no window control to point at"
            # The reader never wiped or touched the writer's index.
            more = await fill(first, 2, word="beacon", start=100)
            await first.turns_index.flush(timeout=FLUSH)
            assert await ids_for(first, "beacon") == more
            assert await ids_for(first, "lantern") == ids
        finally:
            await second.close()
        # Closing the reader did not disturb the writer.
        newest = await fill(first, 1, word="ember", start=200)
        await first.turns_index.flush(timeout=FLUSH)
        assert await ids_for(first, "ember") == newest
    finally:
        await first.close()


# -- rebuild ------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_rebuild_reports_progress_and_indexes_everything(folder: Folder) -> None:
    history = await folder.open(batch_size=7)
    try:
        ids = await fill(history, 40)
        await history.redact_message("discord", 5, T0)
        await history.edit_message("discord", 6, "edited lantern", T0 + timedelta(minutes=1))
        await history.turns_index.flush(timeout=FLUSH)
        newest = await history.store.max_turn_id()
        progress: list[tuple[int, int]] = []
        done = await history.turns_index.rebuild(lambda d, t: progress.append((d, t)))
        assert done == len(await indexable_ids(history))
        assert len(progress) >= 5
        assert [d for d, _t in progress] == sorted(d for d, _t in progress)
        assert all(t == newest for _d, t in progress)
        assert progress[-1] == (newest, newest)
        await assert_fully_indexed(history)
        assert len(await ids_for(history, "lantern")) == len(ids) - 1
        state = await history.store.index_state("turns")
        assert state == (newest, TURNS.schema_version, False)
        # The committer runs again after the rebuild.
        more = await fill(history, 3, word="beacon", start=100)
        await history.turns_index.flush(timeout=FLUSH)
        assert await ids_for(history, "beacon") == more
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_rebuild_of_an_empty_history(history: History) -> None:
    progress: list[tuple[int, int]] = []
    assert await history.turns_index.rebuild(lambda d, t: progress.append((d, t))) == 0
    assert progress == []
    ids = await fill(history, 2)
    await history.turns_index.flush(timeout=FLUSH)
    assert await ids_for(history, "lantern") == ids


# -- a crash ------------------------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from datetime import UTC, datetime
    from pathlib import Path
    from app.memory.facts import NewFact
    from app.memory.history import History
    from app.memory.records import NewTurn

    async def main(root: Path) -> None:
        def health(h):
            if h.commits:
                print("W", h.watermark, flush=True)
        history = await History.open(root / "history.db", root / "fts", root / "backups", on_health=health)
        i = 0
        while True:
            i += 1
            stored = await history.append_turn(NewTurn(
                platform="discord", place="guild:1/2", channel_id=2, author_key="discord:7",
                author_name="alice", content=f"crashword{i} lantern", created_at=datetime.now(UTC),
                guild_id=1, message_id=i))
            print("T", stored.id, flush=True)
            if i % 3 == 0:
                outcome = await history.insert_fact(NewFact(
                    content=f"alice said factword{i} about the lantern", type="episodic", importance=5,
                    confidence=0.9, subjects=("discord:7",), place="guild:1/2", source_turn_ids=(stored.id,)))
                print("F", outcome.fact.id, flush=True)
            if i % 5 == 0:
                await asyncio.sleep(0.002)

    asyncio.run(main(Path(sys.argv[1])))
    """
)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_killed_process_loses_nothing(folder: Folder) -> None:
    await asyncio.to_thread(folder.root.mkdir, parents=True)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        str(folder.root),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO_ROOT,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    printed: list[int] = []
    facts: list[int] = []
    commits = 0
    try:

        async def read_until_busy() -> None:
            nonlocal commits
            while len(printed) < 400 or commits < 3:
                line = await process.stdout.readline()
                if not line:
                    raise AssertionError("the child died early: " + (await process.stderr.read()).decode())
                kind, value = line.decode().split()
                if kind == "T":
                    printed.append(int(value))
                elif kind == "F":
                    facts.append(int(value))
                else:
                    commits += 1

        await asyncio.wait_for(read_until_busy(), timeout=30)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)
        rest, _err = await asyncio.wait_for(process.communicate(), timeout=10)
    assert process.returncode == -signal.SIGKILL
    for line in rest.decode().splitlines():
        kind, value = line.split()
        if kind == "T":
            printed.append(int(value))
        elif kind == "F":
            facts.append(int(value))

    history = await folder.open()
    try:
        # At most one turn was committed but not yet printed when the signal landed.
        assert await history.store.count_turns() - len(printed) in (0, 1)
        stored = await history.store.turns_by_ids(printed)
        assert [t.id for t in stored] == printed, "every acknowledged turn is in SQL"
        await history.turns_index.flush(timeout=FLUSH)
        assert set(printed) <= await index_ids(history)
        await assert_fully_indexed(history)
        for turn_id in (printed[0], printed[len(printed) // 2], printed[-1]):
            [hit] = await history.search_turns(f"crashword{turn_id}")
            assert hit.turn.id == turn_id
        # Facts too: every acknowledged fact is in SQL and the facts index catches up on restart.
        assert facts
        stored_facts = [await history.facts.get(fact_id) for fact_id in facts]
        assert all(f is not None and f.status == "active" for f in stored_facts)
        await history.facts_index.flush(timeout=FLUSH)
        indexed = await asyncio.to_thread(history.facts_index.index.all_ids)
        assert set(facts) <= indexed
        for fact in (stored_facts[0], stored_facts[-1]):
            assert fact is not None
            word = fact.content.split()[2]
            assert [f.id for f, _score in await history.search_facts(word)] == [fact.id]
    finally:
        await history.close()


def test_a_second_process_never_wipes_a_live_index(tmp_path: Path) -> None:
    """Another Familiar (e.g. a newer CLI with another schema version) must not touch a live index."""
    from dataclasses import replace

    from app.memory.fts import TURNS, FtsIndex

    live = FtsIndex(tmp_path / "turns", TURNS)
    assert live.open() == "created"
    live.stage([{"id": 1, "place": "local", "author": "a", "content": "ember"}], [], upsert=False)
    live.commit()

    newer = FtsIndex(tmp_path / "turns", replace(TURNS, schema_version=TURNS.schema_version + 1))
    assert newer.open() == "incompatible"
    assert (newer.writable, newer.owned) == (False, False)
    with pytest.raises(IndexUnavailableError, match="index format"):
        newer.search("ember", 5)

    live.stage([{"id": 2, "place": "local", "author": "a", "content": "ember again"}], [], upsert=False)
    live.commit()
    assert sorted(i for i, _s in live.search("ember", 5)) == [1, 2]
    newer.close()
    live.close()
    # Once the writer is gone the newer version takes the index over; it rebuilds it beside (see
    # test_an_outdated_index_is_rebuilt_beside_and_answers_cjk), never in place.
    assert newer.open() == "incompatible"
    assert newer.owned
    newer.close()
    assert live.open(writable=False) == "opened"
    assert sorted(i for i, _s in live.search("ember", 5)) == [1, 2]
    live.close()


# -- while the familiar runs: removed words leave the files, other processes' writes, silent loss -------------


QUICK = IndexTiming(poll_interval=0.05, compact_after=0.2, reconcile_every=0.3)


async def doc_freq(history: History, word: str) -> int:
    return await asyncio.to_thread(history.turns_index.index.doc_freq, "content", word)


async def with_a_deleted_message(history: History, text: str) -> list[int]:
    """Five lantern turns, and one more with `text` that is indexed, then deleted; returns the five."""
    kept = await fill(history, 5)
    assert await history.append_turn(turn(text, message_id=99)) is not None
    await history.turns_index.flush(timeout=FLUSH)
    assert await doc_freq(history, "zeppelin") == 1
    await history.redact_message("discord", 99, T0)
    await history.turns_index.flush(timeout=FLUSH)
    return kept


@pytest.mark.asyncio
async def test_a_deleted_message_leaves_the_index_files_after_a_compaction(folder: Folder) -> None:
    history = await folder.open(index_timing=QUICK)
    try:
        kept = await with_a_deleted_message(history, "my zeppelin code is 4417")
        # Out of search at once, but a deleted document's words stay in its segment until it is rewritten.
        assert await ids_for(history, "zeppelin") == []
        assert history.index_health().awaiting_purge == 1
        # The committer compacts by itself once removals are quiet.
        await wait_for(lambda: history.index_health().awaiting_purge == 0)
        assert await doc_freq(history, "zeppelin") == 0
        assert await ids_for(history, "lantern") == kept
        await assert_fully_indexed(history)
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_a_compaction_that_fails_is_rolled_back_and_tried_again(folder: Folder) -> None:
    index = folder.faulty()
    history = await folder.open(index=index, index_timing=QUICK)
    try:
        kept = await with_a_deleted_message(history, "zeppelin")
        index.fail_next(NOT_TRANSIENT)  # the compaction's commit fails and is rolled back whole
        await history.turns_index.purge(timeout=FLUSH)
        assert await doc_freq(history, "zeppelin") == 0
        assert await ids_for(history, "lantern") == kept  # nothing the compaction dropped was lost
        await assert_fully_indexed(history)
        assert history.index_health().failures >= 1
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_another_processes_deletion_reaches_the_running_index(folder: Folder) -> None:
    """The CLI beside the window writes SQL only; the window's committer finds the work by looking."""
    writer = await folder.open(index_timing=QUICK)
    try:
        await fill(writer, 3)
        await writer.append_turn(turn("the zeppelin lands at noon", message_id=99))
        await writer.turns_index.flush(timeout=FLUSH)
        assert len(await ids_for(writer, "zeppelin")) == 1
        other = await folder.open()  # the index is taken: this one only reads it
        try:
            assert not other.turns_index.index.writable
            await other.redact_message("discord", 99, T0)
            await other.append_turn(turn("a lighthouse appears", message_id=100))
        finally:
            await other.close()
        # Nobody told the writer; it sees the deletion and the new turn on its own.
        await wait_for(lambda: writer.index_health().watermark >= 5)
        await writer.turns_index.flush(timeout=FLUSH)
        assert await ids_for(writer, "zeppelin") == []
        assert len(await ids_for(writer, "lighthouse")) == 1
    finally:
        await writer.close()


@pytest.mark.asyncio
async def test_a_silently_lost_batch_is_repaired_while_running(folder: Folder) -> None:
    index = folder.faulty()
    history = await folder.open(index=index, index_timing=QUICK)
    try:
        kept = await fill(history, 5)
        await history.turns_index.flush(timeout=FLUSH)
        index.lose_next()
        lost = await fill(history, 7, word="beacon", start=50)
        await history.turns_index.flush(timeout=FLUSH)
        assert history.index_health().failures == 0  # nothing reported the loss
        found: list[int] = []

        async def repaired() -> None:
            while True:
                found[:] = await ids_for(history, "beacon")
                if found == lost:
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(repaired(), 10)  # the periodic comparison with SQL finds and repairs it
        assert await ids_for(history, "lantern") == kept
        await assert_fully_indexed(history)
    finally:
        await history.close()


def _immutable(path: Path, on: bool) -> bool:
    """chattr +i / -i: a real 'Operation not permitted' for every process, root included."""
    import subprocess

    done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.asyncio
async def test_a_real_filesystem_fault_is_retried_and_loses_nothing(folder: Folder) -> None:
    """Not a simulated message: the index folder really refuses new files for a moment."""
    history = await folder.open()
    try:
        kept = await fill(history, 3)
        await history.turns_index.flush(timeout=FLUSH)
        if not _immutable(folder.index_dir, True):
            pytest.skip("chattr +i is not available on this filesystem")
        try:
            await fill(history, 4, word="beacon", start=50)
            await wait_for(lambda: history.index_health().retries >= 1)
            error = history.index_health().last_error or ""
            # The refused file, or (when a worker thread met it first) the writer it killed, which is
            # then replaced: both are retried.
            assert "Operation not permitted" in error or "index writer was killed" in error
            assert is_transient(ValueError(error))
        finally:
            assert _immutable(folder.index_dir, False)
        await history.turns_index.flush(timeout=FLUSH)
        assert len(await ids_for(history, "beacon")) == 4
        assert await ids_for(history, "lantern") == kept
        await assert_fully_indexed(history)
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_a_rebuild_leaves_nothing_to_compact(folder: Folder) -> None:
    history = await folder.open(index_timing=IndexTiming(compact_after=600))
    try:
        kept = await with_a_deleted_message(history, "zeppelin")
        assert history.index_health().awaiting_purge == 1
        assert await history.turns_index.rebuild() == len(kept)
        assert history.index_health().awaiting_purge == 0
        assert await doc_freq(history, "zeppelin") == 0
        await history.turns_index.purge(timeout=FLUSH)  # returns at once: nothing awaits a purge
        await assert_fully_indexed(history)
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_words_left_by_a_run_that_ended_before_compacting_are_purged_after_a_restart(folder: Folder) -> None:
    history = await folder.open(index_timing=IndexTiming(compact_after=600))
    try:
        kept = await with_a_deleted_message(history, "zeppelin")
    finally:
        await history.close()  # quits long before its compaction was due
    reopened = await folder.open(index_timing=QUICK)
    try:
        await wait_for(lambda: reopened.index_health().awaiting_purge == 0)
        assert await doc_freq(reopened, "zeppelin") == 0
        assert await ids_for(reopened, "lantern") == kept
        await assert_fully_indexed(reopened)
    finally:
        await reopened.close()
