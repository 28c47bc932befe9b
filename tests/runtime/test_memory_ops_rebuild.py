"""`MemoryOps.rebuild_indexes` (what `familiar index rebuild` and the index health pane call): every
index is built beside the live one and all are swapped in at the end, so a cancel half-way leaves
every index answering exactly as before (issue 9, pane 5)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from app.memory.facts import NewFact
from app.memory.fts import FACTS, TURNS
from app.runtime.api.memory_ops import MemoryOps, RebuildProgress
from app.runtime.errors import RebuildCancelledError
from tests.memory.helpers import PLACE
from tests.memory.test_fts import FLUSH, Folder, assert_fully_indexed, fill
from tests.memory.test_index_lock import Gate, HoldingIndex, answers, snapshot


@pytest.mark.asyncio
async def test_a_rebuild_cancelled_in_the_second_index_leaves_both_as_they_were(tmp_path: Path) -> None:
    folder = Folder(tmp_path / "familiar")
    gate = Gate()
    facts_index = HoldingIndex(folder.fts / FACTS.name, FACTS, gate)
    history = await folder.open(facts_index=facts_index, batch_size=3)
    try:
        await fill(history, 12)
        for n in range(8):
            await history.insert_fact(
                NewFact(f"alice keeps lantern {n} on the quay", "episodic", 6, 0.9, ("discord:7001",), PLACE)
            )
        await history.catch_up(FLUSH)
        before = await answers(history)
        files = snapshot(folder.fts / TURNS.name), snapshot(folder.fts / FACTS.name)
        states = await history.store.index_state("turns"), await history.store.index_state("facts")
        events: list[RebuildProgress] = []
        cancel = threading.Event()
        ops = MemoryOps(history, folder.root / "lorebook.toml")
        rebuild = asyncio.create_task(ops.rebuild_indexes(events.append, cancel.is_set))
        await gate.wait_reached()  # the turns index is built (not swapped in); the facts one is half-way
        assert [e.index for e in events if e.event == "start"] == ["turns", "facts"]
        assert (folder.fts / "turns.building").is_dir()
        assert await answers(history) == before
        cancel.set()
        gate.release.set()
        with pytest.raises(RebuildCancelledError, match="answers as before"):
            await rebuild
        assert events[-1].event == "cancelled"
        assert events[-1].index == "facts"
        assert await answers(history) == before
        assert (snapshot(folder.fts / TURNS.name), snapshot(folder.fts / FACTS.name)) == files
        assert not (folder.fts / "turns.building").exists()
        assert not (folder.fts / "facts.building").exists()
        assert (await history.store.index_state("turns"), await history.store.index_state("facts")) == states
        # Both committers go on.
        added = await fill(history, 2, word="beacon", start=200)
        await history.catch_up(FLUSH)
        assert sorted(h.turn.id for h in await history.search_turns("beacon")) == added
        await assert_fully_indexed(history)
    finally:
        gate.release.set()
        await history.close()


@pytest.mark.asyncio
async def test_a_rebuild_swaps_every_index_in_and_reports_exact_progress(tmp_path: Path) -> None:
    folder = Folder(tmp_path / "familiar")
    history = await folder.open(batch_size=4)
    try:
        await fill(history, 10)
        await history.insert_fact(NewFact("alice keeps a lantern", "episodic", 6, 0.9, ("discord:7001",), PLACE))
        await history.catch_up(FLUSH)
        before = await answers(history)
        events: list[RebuildProgress] = []
        counts = await MemoryOps(history, folder.root / "lorebook.toml").rebuild_indexes(events.append)
        assert counts == {"turns": 10, "facts": 1}
        assert [e for e in events if e.event == "progress"][-1] == RebuildProgress("progress", "facts", 1, 1, 100.0)
        turn_steps = [e for e in events if e.index == "turns"]
        assert turn_steps[0] == RebuildProgress("start", "turns", 0, 10, 0.0)
        assert turn_steps[-1] == RebuildProgress("progress", "turns", 10, 10, 100.0)
        assert [e.done for e in turn_steps] == sorted(e.done for e in turn_steps)
        # The same hits with the same scores (among equal scores the order follows the new segments).
        assert [sorted(hits) for hits in await answers(history)] == [sorted(hits) for hits in before]
        assert history.turns_index.state == history.facts_index.state == "ready"
        await assert_fully_indexed(history)
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_a_rebuild_whose_swap_is_refused_keeps_every_old_index_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """The turns folder is locked: its new index cannot take its place. The error is one line, the
    facts index (built, not yet swapped) is dropped too, and nothing is resumed at the next start."""
    from app.runtime.errors import FamiliarError
    from tests.memory.test_index_lock import immutable

    folder = Folder(tmp_path / "familiar")
    history = await folder.open()
    try:
        await fill(history, 5)
        await history.insert_fact(NewFact("alice keeps a lantern", "episodic", 6, 0.9, ("discord:7001",), PLACE))
        await history.catch_up(FLUSH)
        before = await answers(history)
        with immutable(folder.fts / TURNS.name):
            with pytest.raises(FamiliarError, match="cannot swap in the rebuilt turns index") as refused:
                await MemoryOps(history, folder.root / "lorebook.toml").rebuild_indexes()
            assert "\n" not in str(refused.value)
            assert "the old turns index is kept" in str(refused.value)
        assert await answers(history) == before
        assert sorted(p.name for p in folder.fts.iterdir() if p.is_dir()) == ["facts", "turns"]
        for name in ("turns", "facts"):
            assert (await history.store.index_state(name))[2] is False
    finally:
        await history.close()
