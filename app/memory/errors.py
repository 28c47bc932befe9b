"""The memory package's exception root."""

import errno
import re
import shutil
import sqlite3
from pathlib import Path


class StoreError(Exception):
    """A failure of the local store, explained in one line."""


class BadInputError(StoreError, ValueError):
    """A value given to the store that it cannot take (a place, a time, a status), in one line saying what
    it takes instead. A ValueError too, for the callers that check a value before acting on it."""


class MigrationError(StoreError):
    """The database could not be migrated; nothing was changed."""


class RevisionConflictError(StoreError):
    """An update carried a revision that is no longer current."""


class IndexLockedError(StoreError):
    """A search index's files cannot be opened or written now: a lock or a permission (the Windows
    antivirus race, a read-only folder), or another I/O failure. Never a sign of corruption: the
    index is left as it is and tried again."""


class StoreDiskFullError(StoreError):
    """history.db cannot be opened, or written, for want of room on the disk holding it (SQLite says
    "disk I/O error" when it cannot make its shared-memory file there)."""


class IndexDiskFullError(StoreError):
    """A search index could not take a commit for want of room on the disk; SQL keeps the documents
    and the index catches up once there is room."""


class IndexUnavailableError(StoreError):
    """A search index cannot answer now (locked, being rebuilt, written by another version); the
    message says which. Searches then answer from the store."""


class IndexCommitError(StoreError):
    """A search index refused a write for a reason that is neither a lock nor a full disk (tantivy's own
    error is its cause). SQL keeps the documents; the index catches up once a commit lands."""


class IndexOwnedElsewhereError(StoreError, ValueError):
    """Another Familiar process writes this index: only that process rebuilds or repairs it. A ValueError
    too, as it was before it had a type of its own."""


class IndexRebuildError(StoreError):
    """An index rebuild beside the live index could not finish (a lock refused the build or the swap, or
    tantivy failed); the old index answers exactly as before."""


class RebuildCancelledError(StoreError):
    """An index rebuild was cancelled; the old index answers exactly as before."""


# What a store call can raise: its own one-line errors, and SQLite's own (a database locked by another
# process past its timeout, a full disk). Code above the store catches these without importing sqlite3.
STORE_FAILURES: tuple[type[Exception], ...] = (StoreError, sqlite3.Error)


# How a full disk (or a used-up quota) shows: SQLite's SQLITE_FULL, an OSError, and tantivy's plain
# ValueError whose message carries the OS error (Rust's StorageFull / QuotaExceeded).
_NO_ROOM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_NO_ROOM_WINERRORS = frozenset({39, 112})  # ERROR_HANDLE_DISK_FULL, ERROR_DISK_FULL
_NO_ROOM_TEXT = re.compile(
    r"database or disk is full|No space left on device|StorageFull|os error 28\b|Disk quota exceeded"
    r"|QuotaExceeded|os error 122\b|not enough space on the disk|os error 112\b",
    re.IGNORECASE,
)
_SQLITE_FULL = 13


def is_disk_full(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised from, says the disk holding the files has no room
    left: a write to try again once there is, not a broken store."""
    return disk_full_cause(error) is not None


def disk_full_cause(error: BaseException) -> BaseException | None:
    """The error in `error`'s chain (itself first, then what it was raised from) that says the disk
    has no room left; None when none does."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _says_disk_full(current):
            return current
        current = current.__cause__ or current.__context__
    return None


NO_ROOM_BYTES = 1 << 20
"""Less room than this on a disk, and an I/O error writing there is taken for a full disk (SQLite's
shared-memory file alone takes 32 KiB)."""
_SQLITE_IOERR = 10


def no_room_left(folder: Path) -> bool:
    """Whether the disk holding `folder` has (next to) no room left for this user."""
    try:
        return shutil.disk_usage(folder).free < NO_ROOM_BYTES
    except OSError:
        return False


def sqlite_io_error(error: BaseException) -> bool:
    """SQLite's "disk I/O error" (SQLITE_IOERR and its extended codes: the -shm file could not be sized...)."""
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(error, sqlite3.Error) and isinstance(code, int) and code & 0xFF == _SQLITE_IOERR


def _says_disk_full(error: BaseException) -> bool:
    if isinstance(error, IndexDiskFullError | StoreDiskFullError):
        return True
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        return (isinstance(code, int) and code & 0xFF == _SQLITE_FULL) or bool(_NO_ROOM_TEXT.search(str(error)))
    if isinstance(error, OSError):
        return error.errno in _NO_ROOM_ERRNOS or getattr(error, "winerror", None) in _NO_ROOM_WINERRORS
    return isinstance(error, (ValueError, StoreError)) and bool(_NO_ROOM_TEXT.search(str(error)))
