"""The lore package's exception root."""

from __future__ import annotations


class LoreError(Exception):
    """A lorebook problem explained in one line (a file that cannot be read, a format that is not a lorebook)."""
