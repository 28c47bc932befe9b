"""When a compaction is due: once removals have been quiet a while, and never later than a deadline however
busy they keep it; and what is left to purge once one ran (a real tantivy index and SQLite store)."""

from __future__ import annotations

from app.memory.index.compaction import DEADLINE_FACTOR, Compaction
from app.memory.index.core import IndexCore
from tests.memory.index.conftest import Clock


def test_removals_put_the_compaction_off_but_never_past_the_deadline(core: IndexCore) -> None:
    clock = Clock()
    start = clock.now
    compaction = Compaction(core, after=100.0, clock=clock)
    assert compaction.due is None
    assert not compaction.is_due()
    compaction.schedule(2)
    assert compaction.due == start + 100.0
    clock.now += 90.0
    compaction.schedule(1)
    assert compaction.due == start + 190.0, "a later removal puts it off"
    assert core.c.awaiting_purge == 3
    clock.now = start + DEADLINE_FACTOR * 100.0 - 50.0
    compaction.schedule(1)
    assert compaction.due == start + DEADLINE_FACTOR * 100.0, "never past the deadline"
    assert not compaction.is_due()
    clock.now = compaction.due
    assert compaction.is_due()


def test_what_removals_landed_during_a_compaction_are_purged_by_the_next(core: IndexCore) -> None:
    clock = Clock()
    compaction = Compaction(core, after=100.0, clock=clock)
    compaction.schedule(5)
    compaction.purged(3)  # two were staged after the rewrite
    assert core.c.awaiting_purge == 2
    assert compaction.due == clock.now + 100.0, "a new quiet spell, a new deadline"
    compaction.purged(2)
    assert core.c.awaiting_purge == 0
    assert compaction.due is None
