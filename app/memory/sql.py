"""What the memory modules' hand-written SQL shares: long `IN (...)` lists asked in pieces."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

IN_CHUNK = 500  # values per IN (...) query, well under SQLite's limit on bound variables


def in_chunks(values: Iterable[T], size: int = IN_CHUNK) -> Iterator[tuple[list[T], str]]:
    """`values` in order, in lists of at most `size`, each with its placeholders ("?,?,?") for an
    `IN (...)`; nothing for no values (an empty `IN ()` is an error in SQLite)."""
    if size < 1:
        raise ValueError(f"a chunk holds at least one value, not {size}")
    chunk: list[T] = []
    for value in values:
        chunk.append(value)
        if len(chunk) == size:
            yield chunk, ",".join("?" * size)
            chunk = []
    if chunk:
        yield chunk, ",".join("?" * len(chunk))
