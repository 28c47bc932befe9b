"""The memory package's exception root."""

import sqlite3


class StoreError(Exception):
    """A failure of the local store, explained in one line."""


class MigrationError(StoreError):
    """The database could not be migrated; nothing was changed."""


class RevisionConflictError(StoreError):
    """An update carried a revision that is no longer current."""


class IndexLockedError(StoreError):
    """A search index's files cannot be opened or written now: a lock or a permission (the Windows
    antivirus race, a read-only folder), or another I/O failure. Never a sign of corruption: the
    index is left as it is and tried again."""


class IndexUnavailableError(StoreError):
    """A search index cannot answer now (locked, being rebuilt, written by another version); the
    message says which. Searches then answer from the store."""


class RebuildCancelledError(StoreError):
    """An index rebuild was cancelled; the old index answers exactly as before."""


# What a store call can raise: its own one-line errors, and SQLite's own (a database locked by another
# process past its timeout, a full disk). Code above the store catches these without importing sqlite3.
STORE_FAILURES: tuple[type[Exception], ...] = (StoreError, sqlite3.Error)
