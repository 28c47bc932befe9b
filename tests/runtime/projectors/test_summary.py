"""rolling_summary: one running summary per place, folded forward, rebuilt when its rows are dropped."""

from __future__ import annotations

import pytest

from app.runtime.projectors import summary
from tests.fakes.llm_server import FakeLLM
from tests.runtime.projectors.conftest import Familiars
from tests.runtime.projectors.helpers import (
    BOB,
    OTHER_PLACE,
    PLACE,
    Brain,
    add_turns,
    learning,
    prompt,
    requests_of,
    turn,
)

pytestmark = pytest.mark.asyncio

SETTINGS = learning("rolling_summary", summary_turns=2)


async def test_a_summary_per_place_folded_forward(familiars: Familiars, fake_llm: FakeLLM, brain: Brain) -> None:
    familiar = await familiars.open(SETTINGS)
    brain.answers["rolling_summary"] = lambda messages: "Summary: " + prompt_words(messages)
    here = await add_turns(familiar, turn("the kettle is on"), turn("tea for two", BOB))
    there = await add_turns(familiar, turn("the map is torn", BOB, place=OTHER_PLACE))
    await familiar.learn_now()

    first = await familiar.projections.summary(PLACE)
    other = await familiar.projections.summary(OTHER_PLACE)
    assert first is not None
    assert other is not None
    assert first.last_turn_id == here[-1]
    assert other.last_turn_id == there[-1]
    assert "kettle" in first.text
    assert "map" not in first.text
    assert "map" in other.text
    assert "kettle" not in other.text
    assert await familiar.projector_deps.marks.get("rolling_summary", PLACE) == here[-1]

    later = await add_turns(familiar, turn("the tea is cold now"), turn("brew another", BOB))
    await familiar.learn_now()
    folded = requests_of(fake_llm, "rolling_summary")[-1]
    assert prompt(folded).startswith(f"Previous summary:\n{first.text}\n\nNew messages:\n")
    assert "kettle" not in prompt(folded).split("New messages:")[1]  # old turns are not sent again
    again = await familiar.projections.summary(PLACE)
    assert again is not None
    assert again.last_turn_id == later[-1]


def prompt_words(messages: list[dict[str, str]]) -> str:
    """What the new messages said, as one line (the fake's "summary")."""
    return " ".join(messages[1]["content"].split("New messages:")[1].split())


async def test_a_summary_is_short_plain_text_whatever_the_model_sends(
    familiars: Familiars, fake_llm: FakeLLM, brain: Brain
) -> None:
    familiar = await familiars.open(SETTINGS)
    brain.answers["rolling_summary"] = "word\n\n  " * 3000
    await add_turns(familiar, turn("hello"), turn("hi", BOB))
    await familiar.learn_now()
    found = await familiar.projections.summary(PLACE)
    assert found is not None
    assert len(found.text) <= summary.MAX_CHARS
    assert "\n" not in found.text


async def test_dropped_summaries_are_rebuilt_from_the_turns(
    familiars: Familiars, fake_llm: FakeLLM, brain: Brain
) -> None:
    familiar = await familiars.open(SETTINGS)
    brain.answers["rolling_summary"] = lambda messages: "Summary: " + prompt_words(messages)
    here = await add_turns(familiar, turn("the kettle is on"), turn("tea for two", BOB))
    there = await add_turns(familiar, turn("the map is torn", BOB, place=OTHER_PLACE))
    await familiar.learn_now()
    asked = len(requests_of(fake_llm, "rolling_summary"))
    assert asked == 2

    await familiar.history.store.write([("DELETE FROM summaries", ())])
    await familiar.learn_now()

    rebuilt = await familiar.projections.summary(PLACE)
    other = await familiar.projections.summary(OTHER_PLACE)
    assert rebuilt is not None
    assert other is not None
    assert (rebuilt.last_turn_id, other.last_turn_id) == (here[-1], there[-1])
    assert "kettle" in rebuilt.text
    assert "map" in other.text
    for request in requests_of(fake_llm, "rolling_summary")[asked:]:
        assert prompt(request).startswith("Previous summary:\n(none yet)")  # from the turns, not from memory

    await familiar.learn_now()  # and once rebuilt, it is not rebuilt again
    assert len(requests_of(fake_llm, "rolling_summary")) == asked + 2


async def test_one_dropped_summary_is_rebuilt_and_the_others_are_left_alone(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(SETTINGS)
    await add_turns(familiar, turn("the kettle is on"), turn("the map is torn", BOB, place=OTHER_PLACE))
    await familiar.learn_now()
    await familiar.history.store.write([("DELETE FROM summaries WHERE place = ?", (OTHER_PLACE,))])
    await familiar.learn_now()

    second = requests_of(fake_llm, "rolling_summary")[2:]
    assert len(second) == 1
    assert "map" in prompt(second[0])
    assert await familiar.projections.summary(OTHER_PLACE) is not None


async def test_a_long_channel_rebuilds_its_summary_from_its_recent_turns(
    familiars: Familiars, fake_llm: FakeLLM, brain: Brain
) -> None:
    familiar = await familiars.open(learning("rolling_summary", summary_turns=5, max_turns_per_tick=5))
    brain.answers["rolling_summary"] = lambda messages: "Summary: " + prompt_words(messages)
    ids = await add_turns(familiar, *(turn(f"message number {i}", BOB) for i in range(30)))
    for _ in range(6):
        await familiar.learn_now()
    assert (await familiar.projections.summary(PLACE)).last_turn_id == ids[-1]  # type: ignore[union-attr]
    asked = len(requests_of(fake_llm, "rolling_summary"))

    await familiar.history.store.write([("DELETE FROM summaries", ())])
    await familiar.learn_now()

    requests = requests_of(fake_llm, "rolling_summary")[asked:]
    assert len(requests) == 1  # one call, not thirty turns' worth from the first message
    assert "message number 25" in prompt(requests[0])
    assert "message number 24" not in prompt(requests[0])
    rebuilt = await familiar.projections.summary(PLACE)
    assert rebuilt is not None
    assert rebuilt.last_turn_id == ids[-1]
