"""reflection: syntheses that cite what they rest on. Uncited ones are dropped, citations outside what was
shown are removed, at most max_reflections_per_tick are kept, the watermark advances even on an empty or
a garbage answer, a reflection citing a retired fact reads as stale, and one dropped by a forget or a
deleted message is made again from what remains."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from app.runtime.projectors.reflection import ReflectionProjector
from app.runtime.service import Familiar
from tests.fakes.llm_server import FakeLLM
from tests.runtime.projectors.conftest import Familiars
from tests.runtime.projectors.helpers import (
    ALICE,
    BOB,
    DM,
    OTHER_PLACE,
    PLACE,
    Brain,
    add_turns,
    insert,
    learning,
    prompt,
    remembered,
    requests_of,
    turn,
    turn_ids_shown,
)

pytestmark = pytest.mark.asyncio

SETTINGS = learning("reflection", reflection_turns=3, max_reflections_per_tick=2)


def _answer(*items: dict[str, object]) -> str:
    return json.dumps({"reflections": list(items)})


async def _conversation(familiar: Familiar, *words: str) -> list[int]:
    return await add_turns(familiar, *(turn(f"{w} again", ALICE if i % 2 else BOB) for i, w in enumerate(words)))


async def test_citations_are_checked_and_at_most_the_cap_is_kept(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    tea = await insert(familiar, remembered("Bob drinks his tea cold.", about=BOB))
    private = await insert(familiar, remembered("Alice is saving for a boat.", place=DM))  # not shown in a guild
    elsewhere = await add_turns(familiar, turn("far away", place=OTHER_PLACE))
    ids = await _conversation(familiar, "bread", "tea", "bread")
    fake_llm.script(
        _answer(
            {"text": "An opinion without a source.", "cited_turn_ids": [], "cited_fact_ids": []},
            {"text": "Only cites what it was not shown.", "cited_turn_ids": elsewhere, "cited_fact_ids": [private.id]},
            {
                "text": "Bread keeps coming back to the bakery.",
                "cited_turn_ids": [ids[0], elsewhere[0], 99_999, ids[0]],
                "cited_fact_ids": [bakery.id, private.id],
            },
            {"text": "Tea is a running theme.", "cited_fact_ids": [tea.id]},
            {"text": "A third good one, over the cap.", "cited_turn_ids": [ids[1]]},
        )
    )
    await familiar.learn_now()

    [request] = requests_of(fake_llm, "reflection")
    assert turn_ids_shown(request) == ids
    assert f"[F#{bakery.id}]" in prompt(request)
    assert f"[F#{private.id}]" not in prompt(request)
    newest_first = await familiar.projections.reflections([PLACE], 10)
    assert [(r.text, r.cited_turn_ids, r.cited_fact_ids) for r in newest_first] == [
        ("Tea is a running theme.", (), (tea.id,)),
        ("Bread keeps coming back to the bakery.", (ids[0],), (bakery.id,)),
    ]
    assert not any(r.stale for r in newest_first)
    assert await familiar.projector_deps.marks.get("reflection", PLACE) == ids[-1]


async def test_too_few_new_turns_wait(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    await _conversation(familiar, "one", "two")
    await familiar.learn_now()
    assert requests_of(fake_llm, "reflection") == []
    assert await familiar.projector_deps.marks.get("reflection", PLACE) == 0
    ids = await _conversation(familiar, "three")
    await familiar.learn_now()
    assert [turn_ids_shown(r) for r in requests_of(fake_llm, "reflection")] == [[ids[0] - 2, ids[0] - 1, ids[0]]]


async def test_the_watermark_moves_on_an_empty_answer_and_on_garbage_twice(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(SETTINGS)
    ids = await _conversation(familiar, "a", "b", "c")
    fake_llm.script('{"reflections": []}')
    await familiar.learn_now()
    assert await familiar.projector_deps.marks.get("reflection", PLACE) == ids[-1]
    assert await familiar.projections.reflections([PLACE], 10) == []

    more = await _conversation(familiar, "d", "e", "f")
    fake_llm.script("I reflect that you are all lovely.", '{"reflections": [{"text": "x", "mood": "sunny"}]}')
    reports = await familiar.learn_now()
    assert "no reflection" in reports["reflection"]
    assert len(requests_of(fake_llm, "reflection")) == 3  # one, then garbage and its one retry
    assert await familiar.projector_deps.marks.get("reflection", PLACE) == more[-1]
    assert await familiar.projections.reflections([PLACE], 10) == []

    await familiar.learn_now()
    assert len(requests_of(fake_llm, "reflection")) == 3  # nothing is sent again


async def test_a_reflection_citing_a_retired_fact_reads_as_stale(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    tea = await insert(familiar, remembered("Bob drinks his tea cold.", about=BOB))
    ids = await _conversation(familiar, "bread", "tea", "bread")
    fake_llm.script(
        _answer(
            {"text": "Work is on Alice's mind.", "cited_turn_ids": [ids[0]], "cited_fact_ids": [bakery.id]},
            {"text": "Tea is a running theme.", "cited_fact_ids": [tea.id]},
        )
    )
    await familiar.learn_now()

    library = await insert(familiar, remembered("Alice works at the library."))
    assert await familiar.history.corrections.supersede(bakery.id, library.id) == "superseded"
    tea_theme, work = await familiar.projections.reflections([PLACE], 10)
    assert work.stale
    assert work.text == "Work is on Alice's mind."
    assert not tea_theme.stale


async def test_an_emptied_reflections_table_is_rebuilt_once(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    ids = await _conversation(familiar, "tea", "kettle", "tea")
    fake_llm.script(_answer({"text": "Tea keeps coming up.", "cited_turn_ids": [ids[0], ids[2]]}))
    await familiar.learn_now()
    assert [r.text for r in await familiar.projections.reflections([PLACE], 10)] == ["Tea keeps coming up."]

    await familiar.history.store.write([("DELETE FROM reflections", ())])
    fake_llm.script(_answer({"text": "Tea, again and again.", "cited_turn_ids": [ids[2]]}))
    await familiar.learn_now()
    assert [r.text for r in await familiar.projections.reflections([PLACE], 10)] == ["Tea, again and again."]
    assert turn_ids_shown(requests_of(fake_llm, "reflection")[-1]) == ids

    # A rebuild that finds nothing to say does not start over on every tick.
    await familiar.history.store.write([("DELETE FROM reflections", ())])
    fake_llm.script('{"reflections": []}')
    await familiar.learn_now()
    asked = len(requests_of(fake_llm, "reflection"))
    await familiar.learn_now()
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "reflection")) == asked


async def test_a_quiet_place_below_the_threshold_does_not_hold_the_scan_back(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(SETTINGS)
    quiet = await add_turns(familiar, turn("one", ALICE, place=OTHER_PLACE), turn("two", BOB, place=OTHER_PLACE))
    busy = await _conversation(familiar, "a", "b", "c")
    fake_llm.script(_answer())
    await familiar.learn_now()
    # The floor (where the next scan starts) moved past the quiet place's two unread turns.
    [worker] = familiar.learning.projectors
    assert isinstance(worker, ReflectionProjector)
    assert worker.floor.value >= busy[-1]
    more = await add_turns(familiar, turn("three", ALICE, place=OTHER_PLACE))
    fake_llm.script(_answer())
    await familiar.learn_now()
    shown = [turn_ids_shown(r) for r in requests_of(fake_llm, "reflection")]
    assert shown[-1] == [*quiet, *more]  # all three of its turns, though two were below the floor


def _cite_first_shown(*, fact_id: int | None = None) -> Callable[[list[dict[str, Any]]], str]:
    """A reflection answer citing the first turn shown (and `fact_id` when it was shown too)."""

    def answer(messages: list[dict[str, Any]]) -> str:
        shown = str(messages[1]["content"])
        first = int(shown.split("[T#", 1)[1].split("]", 1)[0])
        facts = [fact_id] if fact_id is not None and f"[F#{fact_id}]" in shown else []
        return _answer({"text": f"A theme from T#{first}.", "cited_turn_ids": [first], "cited_fact_ids": facts})

    return answer


async def test_a_forget_that_drops_a_reflection_has_it_made_again_from_what_remains(
    familiars: Familiars, fake_llm: FakeLLM, brain: Brain
) -> None:
    familiar = await familiars.open(SETTINGS)
    early = await _conversation(familiar, "kettle", "steam", "kettle")
    brain.answers["reflection"] = _cite_first_shown()
    await familiar.learn_now()
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    ids = await _conversation(familiar, "bread", "flour", "bread")
    elsewhere = await add_turns(familiar, *(turn(f"{w} there", place=DM) for w in ("x", "y", "z")))
    brain.answers["reflection"] = _cite_first_shown(fact_id=bakery.id)
    await familiar.learn_now()
    assert [r.cited_fact_ids for r in await familiar.projections.reflections([PLACE], 10)] == [(bakery.id,), ()]
    asked = len(requests_of(fake_llm, "reflection"))

    receipt = await familiar.history.forget_fact(bakery.id)
    assert ("reflections", 1) in receipt.stores
    # Sent back to where the reflections still standing there end: after the first conversation.
    assert await familiar.projector_deps.marks.get("reflection", PLACE) == early[-1]
    assert await familiar.projector_deps.marks.get("reflection", DM) == elsewhere[-1]
    await familiar.learn_now()

    [again] = requests_of(fake_llm, "reflection")[asked:]  # that place only, once
    assert turn_ids_shown(again) == ids
    assert f"[F#{bakery.id}]" not in prompt(again)
    assert [r.text for r in await familiar.projections.reflections([PLACE], 10)] == [
        f"A theme from T#{ids[0]}.",
        f"A theme from T#{early[0]}.",
    ]
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "reflection")) == asked + 1  # and not again


async def test_a_deleted_message_that_drops_a_reflection_has_it_made_again(
    familiars: Familiars, fake_llm: FakeLLM, brain: Brain
) -> None:
    familiar = await familiars.open(SETTINGS)
    await add_turns(familiar, *(turn(f"{w} there", place=OTHER_PLACE) for w in ("x", "y", "z")))
    ids = await _conversation(familiar, "bread", "flour", "bread", "crumbs")
    brain.answers["reflection"] = _cite_first_shown()
    await familiar.learn_now()
    asked = len(requests_of(fake_llm, "reflection"))
    [cited] = await familiar.history.store.turns_by_ids([ids[0]])
    assert cited.message_id is not None

    await familiar.history.redact_message("discord", cited.message_id, datetime.now(UTC))
    assert await familiar.projections.reflections([PLACE], 10) == []
    await familiar.learn_now()

    [again] = requests_of(fake_llm, "reflection")[asked:]
    assert turn_ids_shown(again) == ids[1:]
    assert [r.text for r in await familiar.projections.reflections([PLACE], 10)] == [f"A theme from T#{ids[1]}."]


async def test_a_forget_from_another_process_reaches_the_running_worker(
    familiars: Familiars, fake_llm: FakeLLM, brain: Brain
) -> None:
    running = await familiars.open(SETTINGS)
    bakery = await insert(running, remembered("Alice works at the bakery."))
    await add_turns(running, *(turn(f"{w} there", place=DM) for w in ("x", "y", "z")))
    ids = await _conversation(running, "bread", "flour", "bread")
    brain.answers["reflection"] = _cite_first_shown(fact_id=bakery.id)
    await running.learn_now()
    asked = len(requests_of(fake_llm, "reflection"))

    command = await familiars.open()  # `familiar forget` while the familiar runs: the same store
    await command.history.forget_fact(bakery.id)
    await familiars.close(command)
    await running.learn_now()

    [again] = requests_of(fake_llm, "reflection")[asked:]
    assert turn_ids_shown(again) == ids
