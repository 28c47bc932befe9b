"""Turn an exception or a message into the one line a user sees (never a traceback)."""

from __future__ import annotations


def single_line(text: str) -> str:
    """`text` with every run of whitespace, newlines included, collapsed to one space."""
    return " ".join(text.split())


def one_line(error: BaseException) -> str:
    """The error's message on one line, or its class name when it has no message."""
    return single_line(str(error)) or f"Unexpected {type(error).__name__}"
