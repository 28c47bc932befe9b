"""The shared `IN (...)` chunking: every value asked once, in order, in pieces SQLite accepts."""

from __future__ import annotations

import pytest

from app.memory.sql import IN_CHUNK, in_chunks
from app.memory.store import Store
from tests.memory.helpers import turn


def test_values_come_in_pieces_with_their_placeholders() -> None:
    pieces = list(in_chunks(range(1201)))
    assert [len(chunk) for chunk, _marks in pieces] == [IN_CHUNK, IN_CHUNK, 201]
    assert [marks.count("?") for _chunk, marks in pieces] == [IN_CHUNK, IN_CHUNK, 201]
    assert [v for chunk, _marks in pieces for v in chunk] == list(range(1201))
    assert list(in_chunks([])) == []
    assert list(in_chunks(["a", "b", "c"], size=2)) == [(["a", "b"], "?,?"), (["c"], "?")]
    with pytest.raises(ValueError, match="at least one"):
        list(in_chunks([1], size=0))


@pytest.mark.asyncio
async def test_more_ids_than_one_piece_are_all_found_in_order(store: Store) -> None:
    ids = await store.append_turns([turn(f"line {i}", message_id=i + 1, minutes=i) for i in range(IN_CHUNK + 7)])
    wanted = [*reversed(ids), 10_000]
    found = await store.turns_by_ids(wanted)
    assert [t.id for t in found] == list(reversed(ids))
    assert await store.turns_by_ids([]) == []
