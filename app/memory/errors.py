"""The memory package's exception root."""


class StoreError(Exception):
    """A failure of the local store, explained in one line."""


class MigrationError(StoreError):
    """The database could not be migrated; nothing was changed."""


class RevisionConflictError(StoreError):
    """An update carried a revision that is no longer current."""
