"""Reading a file a user pointed at (a lorebook to import, a character card): whole, up to a size, with
one line saying what is wrong otherwise."""

from __future__ import annotations

from pathlib import Path


class UnreadableFileError(Exception):
    """The file cannot be read as asked; the message names it and why, in one line."""


def read_limited(path: Path, limit: int, what: str) -> bytes:
    """The bytes of `path`, at most `limit` of them (`what` the file should be: "a lorebook"). Raises
    UnreadableFileError: no such file, a folder, too large, or what the system said."""
    try:
        if path.stat().st_size > limit:
            raise UnreadableFileError(f"{path}: too large to be {what} (over {limit // 2**20} MB)")
        return path.read_bytes()
    except FileNotFoundError:
        raise UnreadableFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UnreadableFileError(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise UnreadableFileError(f"{path}: cannot be read: {exc.strerror or exc}") from None
