"""Watermarks are persisted (a restart sends no turn twice) and learning can be paused everywhere or per
place: no model request for what is paused, the conversation goes on, nothing is lost on resume, and the
switch survives a restart."""

from __future__ import annotations

import pytest

from app.runtime.service import Familiar
from tests.fakes.llm_server import FakeLLM
from tests.runtime.projectors.conftest import Familiars
from tests.runtime.projectors.helpers import (
    BOB,
    GUILD_SCOPE,
    OTHER_PLACE,
    PLACE,
    add_turns,
    learning,
    prompt,
    requests_of,
    turn,
    turn_ids_shown,
    worker_of,
)

pytestmark = pytest.mark.asyncio

TURN_WORKERS = ("rich_note", "rolling_summary", "reflection", "dreaming")
SETTINGS = learning(*TURN_WORKERS, batch_turns=3, summary_turns=3, reflection_turns=3)
WORDS = ("apple", "birch", "cedar", "dahlia", "elder", "fennel", "ginger", "hazel")


def _worker_requests(fake_llm: FakeLLM) -> list[str]:
    return [name for r in fake_llm.requests if (name := worker_of(r.messages)) is not None]


def _shown(fake_llm: FakeLLM, worker: str, word: str) -> int:
    """In how many of a worker's requests a word was shown."""
    return sum(word in prompt(r) for r in requests_of(fake_llm, worker))


async def test_a_restart_sends_no_turn_to_the_model_twice(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    first = await add_turns(familiar, *(turn(f"{w} talk", BOB) for w in WORDS[:3]))
    await familiar.learn_now()
    assert await familiar.projector_deps.marks.get("rich_note", PLACE) == first[-1]

    familiar = await familiars.reopen(familiar)
    await familiar.learn_now()
    assert _worker_requests(fake_llm).count("rich_note") == 1  # nothing new: nothing asked
    second = await add_turns(familiar, *(turn(f"{w} talk", BOB) for w in WORDS[3:6]))
    await familiar.learn_now()

    for worker in TURN_WORKERS:
        assert len(requests_of(fake_llm, worker)) == 2, worker
        for word in WORDS[:6]:
            assert _shown(fake_llm, worker, word) == 1, (worker, word)
    for worker in ("rich_note", "reflection", "dreaming"):
        assert [turn_ids_shown(r) for r in requests_of(fake_llm, worker)] == [first, second], worker
    summary = await familiar.projections.summary(PLACE)
    assert summary is not None
    assert summary.last_turn_id == second[-1]


async def _chat_still_works(familiar: Familiar, fake_llm: FakeLLM) -> None:
    before = len(fake_llm.requests)
    line = await familiar.chat_local("are you still there?")
    assert line.from_familiar
    assert line.content.startswith("echo: ")
    assert worker_of(fake_llm.requests[before].messages) is None  # the reply, not memory work


async def test_learning_paused_everywhere_asks_nothing_loses_nothing_and_survives_a_restart(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(SETTINGS)
    state = await familiar.set_paused("learning", "*", True)
    assert state.learning == ("*",)
    assert state.recall == ()
    ids = await add_turns(familiar, *(turn(f"{w} talk", BOB) for w in WORDS[:3]))
    await familiar.learn_now()
    await _chat_still_works(familiar, fake_llm)
    assert _worker_requests(fake_llm) == []

    familiar = await familiars.reopen(familiar)
    assert (await familiar.pause_state()).learning == ("*",)
    await familiar.learn_now()
    assert _worker_requests(fake_llm) == []

    await familiar.set_paused("learning", "*", False)
    await familiar.learn_now()
    for worker in TURN_WORKERS:
        assert requests_of(fake_llm, worker), worker
    for worker in ("rich_note", "reflection", "dreaming"):
        assert ids in [turn_ids_shown(r) for r in requests_of(fake_llm, worker)], worker
    assert await familiar.projections.summary(PLACE) is not None


async def test_learning_paused_in_one_place_goes_on_elsewhere_and_resumes_there(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(SETTINGS)
    await familiar.set_paused("learning", PLACE, True)
    paused = await add_turns(familiar, *(turn(f"{w} talk", BOB) for w in WORDS[:3]))
    elsewhere = await add_turns(familiar, *(turn(f"{w} talk", BOB, place=OTHER_PLACE) for w in WORDS[3:6]))
    await familiar.learn_now()
    await _chat_still_works(familiar, fake_llm)

    for worker in TURN_WORKERS:
        assert requests_of(fake_llm, worker), worker
        assert not any(_shown(fake_llm, worker, w) for w in WORDS[:3]), worker
    assert [turn_ids_shown(r) for r in requests_of(fake_llm, "rich_note")] == [elsewhere]
    assert await familiar.projections.summary(PLACE) is None
    assert await familiar.projections.summary(OTHER_PLACE) is not None

    familiar = await familiars.reopen(familiar)
    assert (await familiar.pause_state()).learning == (PLACE,)
    await familiar.learn_now()
    assert not any(_shown(fake_llm, "rich_note", w) for w in WORDS[:3])

    await familiar.set_paused("learning", PLACE, False)
    await familiar.learn_now()
    for worker in TURN_WORKERS:
        assert all(_shown(fake_llm, worker, w) == 1 for w in WORDS[:3]), worker
    assert paused in [turn_ids_shown(r) for r in requests_of(fake_llm, "rich_note")]
    assert await familiar.projections.summary(PLACE) is not None


async def test_pausing_a_guild_pauses_learning_in_its_channels(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    await familiar.set_paused("learning", GUILD_SCOPE, True)
    await add_turns(familiar, turn("apple talk", BOB), turn("birch talk", BOB, place=OTHER_PLACE))
    await add_turns(familiar, turn("cedar talk", BOB, place="dm:7002"))
    await familiar.learn_now()

    for worker in TURN_WORKERS:
        assert not any(_shown(fake_llm, worker, w) for w in ("apple", "birch")), worker
    assert _shown(fake_llm, "rich_note", "cedar") == 1  # a DM is not part of the guild

    await familiar.set_paused("learning", GUILD_SCOPE, False)
    await familiar.learn_now()
    assert _shown(fake_llm, "rich_note", "apple") == _shown(fake_llm, "rich_note", "birch") == 1
