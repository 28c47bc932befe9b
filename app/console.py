"""What the `familiar` command writes to the terminal: results on stdout, one-line errors on stderr."""

from __future__ import annotations

import sys


def output(text: str) -> None:
    """A command's result, on stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def error(message: str) -> None:
    """A one-line error, on stderr."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
