"""Watermarks are persisted (a restart sends no turn twice) and learning can be paused everywhere or per
place: no model request for what is paused, the conversation goes on, nothing is lost on resume, and the
switch survives a restart. The workers that read facts hold back, the same way, the facts said where
learning is paused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.memory.facts import Fact, NewFact
from app.runtime.projectors import supersede
from app.runtime.service import Familiar
from tests.fakes.llm_server import FakeLLM
from tests.runtime.projectors.conftest import Familiars
from tests.runtime.projectors.helpers import (
    ALICE,
    BOB,
    DM,
    GUILD,
    GUILD_SCOPE,
    OTHER_PLACE,
    PLACE,
    Brain,
    add_turns,
    insert,
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


# -- the workers that read facts: a fact is held by a pause where it was said ------------------------
async def _said(familiar: Familiar, content: str, where: str, *, speaker: str = ALICE) -> Fact:
    """A fact extraction learnt from what `speaker` just said at `where` (active at once; guild scope)."""
    [source] = await add_turns(familiar, turn(f"about that: {content}", speaker, place=where))
    new = NewFact(content, "episodic", 5, 0.9, (speaker,), where, speaker=speaker, source_turn_ids=(source,))
    return await insert(familiar, new)


async def test_a_dossier_leaves_out_facts_said_where_learning_is_paused_until_it_resumes(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(learning("people_dossier"))
    await familiar.set_paused("learning", PLACE, True)  # one channel of the guild, not the guild
    await _said(familiar, "Alice bakes sourdough on Sundays.", PLACE)
    await _said(familiar, "Alice plays the cello.", OTHER_PLACE)
    await familiar.learn_now()

    [request] = requests_of(fake_llm, "people_dossier")
    assert "cello" in prompt(request)
    assert "sourdough" not in prompt(request)
    dossier = await familiar.projections.dossier(ALICE, GUILD_SCOPE)
    assert dossier is not None
    assert "sourdough" not in dossier.text

    await familiar.learn_now()
    familiar = await familiars.reopen(familiar)  # the pause and the note of what waits survive a restart
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "people_dossier")) == 1  # nothing asked again while the pause holds

    await familiar.set_paused("learning", PLACE, False)
    await familiar.learn_now()
    [_first, again] = requests_of(fake_llm, "people_dossier")
    assert "sourdough" in prompt(again)
    assert "cello" in prompt(again)
    dossier = await familiar.projections.dossier(ALICE, GUILD_SCOPE)
    assert dossier is not None
    assert "sourdough" in dossier.text
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "people_dossier")) == 2  # done: not again


async def test_a_dossier_of_nothing_but_paused_facts_waits_whole(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(learning("people_dossier"))
    await familiar.set_paused("learning", PLACE, True)
    await _said(familiar, "Alice bakes sourdough on Sundays.", PLACE)
    await familiar.learn_now()
    assert requests_of(fake_llm, "people_dossier") == []
    assert await familiar.projections.dossier(ALICE, GUILD_SCOPE) is None

    await familiar.set_paused("learning", PLACE, False)
    await familiar.learn_now()
    [request] = requests_of(fake_llm, "people_dossier")
    assert "sourdough" in prompt(request)


async def test_supersede_holds_a_fact_said_where_learning_is_paused_and_hides_it_from_others(
    familiars: Familiars, fake_llm: FakeLLM, brain: Brain
) -> None:
    familiar = await familiars.open(learning("fact_supersede"))
    bakery = await _said(familiar, "Alice works at the bakery.", OTHER_PLACE)
    await familiar.learn_now()  # nothing earlier: nothing asked
    await familiar.set_paused("learning", PLACE, True)

    def retire_the_bakery_for_the_library(messages: list[dict[str, Any]]) -> str:
        new_fact = str(messages[1]["content"]).split("\n", 1)[0]
        return json.dumps({"retire": [bakery.id] if "library" in new_fact else []})

    brain.answers["fact_supersede"] = retire_the_bakery_for_the_library
    library = await _said(familiar, "Alice works at the library now.", PLACE)
    leeds = await _said(familiar, "Alice works nights at the Leeds market.", OTHER_PLACE)
    await familiar.learn_now()

    # The library fact is not considered, and not shown beside the Leeds one.
    [request] = requests_of(fake_llm, "fact_supersede")
    assert prompt(request).startswith(f"New fact: [F#{leeds.id}]")
    assert f"[F#{bakery.id}]" in prompt(request)
    assert f"[F#{library.id}]" not in prompt(request)
    assert (await familiar.history.facts.chain(bakery.id)).head_id == bakery.id
    familiar = await familiars.reopen(familiar)
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "fact_supersede")) == 1  # nothing asked again while the pause holds

    await familiar.set_paused("learning", PLACE, False)
    await familiar.learn_now()
    later = requests_of(fake_llm, "fact_supersede")[1:]
    assert [prompt(r).split("]", 1)[0] for r in later] == [f"New fact: [F#{library.id}", f"New fact: [F#{leeds.id}"]
    assert f"[F#{bakery.id}]" in prompt(later[0])  # what it replaces is shown now, and retired
    assert f"[F#{library.id}]" in prompt(later[1])
    assert (await familiar.history.facts.chain(bakery.id)).head_id == library.id
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "fact_supersede")) == 3  # done: not again


async def test_a_fact_held_by_a_pause_does_not_hold_up_the_facts_after_it(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(learning("fact_supersede"))
    await _said(familiar, "Alice drinks tea.", DM)
    await familiar.learn_now()
    await familiar.set_paused("learning", GUILD_SCOPE, True)
    await _said(familiar, "Alice works at the bakery.", PLACE)  # held while the guild is paused
    coffee = await _said(familiar, "Alice drinks coffee now.", DM)
    await familiar.learn_now()

    [request] = requests_of(fake_llm, "fact_supersede")
    assert prompt(request).startswith(f"New fact: [F#{coffee.id}]")


async def test_facts_still_held_do_not_crowd_out_the_ones_a_resume_frees(
    familiars: Familiars, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supersede, "MAX_PER_TICK", 1)  # one fact shown to the model per tick
    familiar = await familiars.open(learning("fact_supersede"))
    await _said(familiar, "Alice drinks tea.", f"guild:{GUILD}/503")
    await familiar.learn_now()
    await familiar.set_paused("learning", PLACE, True)
    await familiar.set_paused("learning", OTHER_PLACE, True)
    await _said(familiar, "Bob repairs bicycles.", PLACE, speaker=BOB)  # stays held: met first
    coffee = await _said(familiar, "Alice drinks coffee.", OTHER_PLACE)
    cocoa = await _said(familiar, "Alice drinks cocoa.", OTHER_PLACE)
    for _ in range(3):  # one status-log row per tick
        await familiar.learn_now()
    assert requests_of(fake_llm, "fact_supersede") == []

    await familiar.set_paused("learning", OTHER_PLACE, False)
    await familiar.learn_now()
    await familiar.learn_now()
    asked = [prompt(r).split("]", 1)[0] for r in requests_of(fake_llm, "fact_supersede")]
    assert asked == [f"New fact: [F#{coffee.id}", f"New fact: [F#{cocoa.id}"]
