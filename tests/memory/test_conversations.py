"""A place's conversation restarted (the window's chat cleared) and a turn revised by id (a regenerated reply):
nothing is deleted or updated in place; the recent window of that place, and only that place, follows."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.memory.conversations import ConversationStarts
from app.memory.store import Store
from tests.memory.helpers import OTHER_PLACE, PLACE, T0, turn

pytestmark = pytest.mark.asyncio


async def _contents(store: Store, place: str = PLACE, **kwargs: int) -> list[str]:
    return [t.content for t in await store.recent_turns(place, 10, **kwargs)]


async def test_a_restart_hides_what_came_before_in_that_place_only_and_restore_undoes_it(store: Store) -> None:
    first = await store.append_turn(turn("before 1", message_id=1))
    await store.append_turn(turn("before 2", message_id=2, minutes=1))
    await store.append_turn(turn("elsewhere", message_id=3, place=OTHER_PLACE))
    starts = ConversationStarts(store)

    restart = await starts.restart(PLACE)

    assert (restart.before, restart.turns) == (0, 2)
    assert await starts.start(PLACE) == restart.after
    assert await _contents(store) == []
    assert await _contents(store, OTHER_PLACE) == ["elsewhere"]
    assert len(await store.read_all("SELECT id FROM turns")) == 3  # nothing deleted
    await store.append_turn(turn("after", message_id=4, minutes=2))
    await store.edit_message("discord", 1, "before 1, edited", T0 + timedelta(hours=1))  # keeps its old place
    assert await _contents(store) == ["after"]
    assert first is not None
    assert await _contents(store, ending_at=first.id) == []

    assert await starts.restore(restart)
    assert await _contents(store) == ["before 1, edited", "before 2", "after"]
    assert await starts.start(PLACE) == 0
    assert not await starts.restore(restart), "an undo applies once, to the start it left"


async def test_a_restart_with_nothing_said_since_changes_nothing(store: Store) -> None:
    starts = ConversationStarts(store)
    assert (await starts.restart(PLACE)).turns == 0
    await store.append_turn(turn("one", message_id=1))
    done = await starts.restart(PLACE)
    again = await starts.restart(PLACE)
    assert (again.turns, again.before, again.after) == (0, done.after, done.after)
    assert await starts.restore(again)  # a no-op, undone as a no-op
    assert await starts.start(PLACE) == done.after


async def test_a_turn_is_revised_by_id_as_a_new_row_and_only_its_latest_revision(store: Store) -> None:
    stored = await store.append_turn(turn("old words", platform="local", place="local"))
    assert stored is not None
    assert stored.message_id is None
    revised = await store.revise_turn(stored.id, "new words", T0 + timedelta(minutes=5))
    assert revised is not None
    assert (revised.id != stored.id, revised.revision, revised.content) == (True, 1, "new words")
    assert [t.content for t in await store.turns_by_ids([stored.id, revised.id])] == ["old words", "new words"]
    assert await store.revise_turn(stored.id, "newer words", T0) is None  # no longer the latest revision
    assert await store.revise_turn(revised.id, "new words", T0) is None  # unchanged
    assert await _contents(store, "local") == ["new words"]
