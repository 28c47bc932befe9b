"""The index's errors as typed objects: tantivy's plain ValueError is classified once, by its message, at
the tantivy boundary (`write_failure`), and the committer keeps and raises that object, never words it back
into a ValueError to classify it again (issue 20 item 3)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.memory.errors import (
    IndexCommitError,
    IndexDiskFullError,
    IndexLockedError,
    IndexOwnedElsewhereError,
    IndexRebuildError,
    StoreError,
    is_disk_full,
)
from app.memory.fts import WRITER_KILLED, write_failure, writer_killed
from tests.memory.test_fts import (
    ACCESS_DENIED,
    FLUSH,
    LOCK_BUSY,
    NOT_PERMITTED,
    NOT_TRANSIENT,
    Folder,
    fill,
    ids_for,
)


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path / "familiar")


NO_SPACE = "Failed to write file: 'IoError { kind: StorageFull, message: \"No space left on device\" }' (os error 28)"


@pytest.mark.parametrize("message", [ACCESS_DENIED, LOCK_BUSY, NOT_PERMITTED, f"{WRITER_KILLED}: merge failed"])
def test_a_lock_is_an_index_locked_error_with_tantivys_error_as_its_cause(message: str) -> None:
    raw = ValueError(message)
    failure = write_failure(raw)
    assert type(failure) is IndexLockedError
    assert failure.__cause__ is raw
    assert str(failure) == message


def test_the_kept_cause_holds_no_frames_so_no_writer_a_failed_commit_held() -> None:
    """The frames of a failed commit hold tantivy's writer; a writer the error killed must be gone (its lock
    free) before `recover_writer` can make a new one, so a failure kept as an object keeps no traceback."""

    def commit(writer: object) -> None:
        raise ValueError(f"{WRITER_KILLED}: {ACCESS_DENIED}")

    try:
        commit(object())
    except ValueError as exc:
        failure = write_failure(exc)
    assert failure.__cause__ is not None
    assert failure.__cause__.__traceback__ is None


def test_a_full_disk_is_an_index_disk_full_error() -> None:
    failure = write_failure(ValueError(NO_SPACE))
    assert type(failure) is IndexDiskFullError
    assert is_disk_full(failure)


def test_a_full_disk_that_killed_the_writer_reads_as_a_lock_and_still_says_the_cause() -> None:
    failure = write_failure(ValueError(f"{WRITER_KILLED}: {NO_SPACE}"))
    assert type(failure) is IndexLockedError
    assert is_disk_full(failure), "the disk is named through the chain"


def test_anything_else_is_an_index_commit_error_in_one_line() -> None:
    failure = write_failure(ValueError(f"{NOT_TRANSIENT}\n  at segment 3"))
    assert type(failure) is IndexCommitError
    assert str(failure) == f"{NOT_TRANSIENT} at segment 3"
    assert not is_disk_full(failure)


def test_writer_killed_is_told_by_tantivys_words_only_on_its_errors() -> None:
    assert writer_killed(ValueError(f"An error occurred: {WRITER_KILLED}"))
    assert not writer_killed(ValueError(ACCESS_DENIED))
    assert not writer_killed(OSError(WRITER_KILLED))


def test_every_index_error_is_a_store_error_and_only_the_refused_rebuild_a_value_error_too() -> None:
    for kind in (IndexCommitError, IndexRebuildError, IndexOwnedElsewhereError, IndexLockedError, IndexDiskFullError):
        assert issubclass(kind, StoreError)
    assert issubclass(IndexOwnedElsewhereError, ValueError), "as it was before it had a type"
    assert not issubclass(IndexCommitError, ValueError)
    assert not issubclass(IndexRebuildError, ValueError)


@pytest.mark.asyncio
@pytest.mark.logs_errors(r"app\.memory\.committer: index turns: commit failed: .*invalid argument")
async def test_a_reconcile_that_cannot_commit_raises_an_index_commit_error_keeping_the_cause(folder: Folder) -> None:
    index = folder.faulty()
    history = await folder.open(index=index)
    try:
        await fill(history, 3)
        await history.turns_index.flush(timeout=FLUSH)
        index.lose_next()
        lost = await fill(history, 2, word="beacon", start=50)
        await history.turns_index.flush(timeout=FLUSH)
        index.fail_next(NOT_TRANSIENT)
        with pytest.raises(IndexCommitError, match="reconcile could not commit") as refused:
            await history.turns_index.reconcile()
        cause = refused.value.__cause__
        assert isinstance(cause, IndexCommitError)
        assert isinstance(cause.__cause__, ValueError)
        assert NOT_TRANSIENT in str(cause.__cause__)
        # The failed commit asks the committer's own loop to reconcile again, which repairs the index.
        async with asyncio.timeout(FLUSH):
            while await ids_for(history, "beacon") != lost:  # noqa: ASYNC110 - a short poll, bounded above
                await asyncio.sleep(0.05)
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_a_reconcile_a_lock_refuses_raises_the_lock_itself(folder: Folder) -> None:
    index = folder.faulty()
    history = await folder.open(index=index)
    try:
        await fill(history, 3)
        await history.turns_index.flush(timeout=FLUSH)
        index.lose_next()
        await fill(history, 2, word="beacon", start=50)
        await history.turns_index.flush(timeout=FLUSH)
        index.fail_next(*[ACCESS_DENIED] * 5)  # every try of the reconcile's commit
        with pytest.raises(IndexLockedError, match="Access is denied") as refused:
            await history.turns_index.reconcile()
        assert isinstance(refused.value.__cause__, ValueError)
    finally:
        await history.close()
