"""dreaming: a quiet conversation is queued once (durably), dreamt over for at most five facts whose
provenance and scope code sets, never re-learning what was forgotten; three failed attempts leave an
inspectable failure, and deleting the source message cancels the work."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from app.runtime.service import Familiar
from tests.fakes.llm_server import FakeLLM, ScriptedReply
from tests.runtime.projectors.conftest import Familiars
from tests.runtime.projectors.helpers import (
    ALICE,
    BOB,
    DM,
    GUILD_SCOPE,
    OTHER_PLACE,
    PLACE,
    Brain,
    add_turns,
    all_facts,
    fact,
    facts_answer,
    insert,
    learning,
    prompt,
    remembered,
    requests_of,
    turn,
    turn_ids_shown,
)

pytestmark = pytest.mark.asyncio

SETTINGS = learning("dreaming", dream_idle_seconds=600)


async def _conversation(familiar: Familiar, place: str = PLACE, minutes_ago: float = 60) -> list[int]:
    return await add_turns(
        familiar,
        turn("I finally adopted a cat, her name is Miso.", ALICE, place=place, minutes_ago=minutes_ago),
        turn("congrats! I have two dogs myself.", BOB, place=place, minutes_ago=minutes_ago),
        turn("Miso hates the dogs already.", ALICE, place=place, minutes_ago=minutes_ago),
    )


async def test_a_quiet_conversation_is_queued_once_and_the_queue_survives_a_restart(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(SETTINGS)
    await add_turns(familiar, turn("still typing...", ALICE, place=OTHER_PLACE, minutes_ago=0))  # not quiet yet
    ids = await _conversation(familiar)
    fake_llm.script(ScriptedReply(status=503))
    reports = await familiar.learn_now()

    [item] = await familiar.work_queue.work(kind="dream")
    assert (item.turn_id, item.place, item.status, item.attempts) == (ids[-1], PLACE, "queued", 0)
    assert item.last_error is not None
    assert "503" in item.last_error
    assert "waiting for the background model" in reports["dreaming"]

    familiar = await familiars.reopen(familiar)
    assert [(w.id, w.status) for w in await familiar.work_queue.work(kind="dream")] == [(item.id, "queued")]
    fake_llm.script(
        facts_answer(
            fact("Alice adopted a cat named Miso.", [ids[0]], type="semantic"),
            fact("Bob has two dogs.", [ids[1]], speaker=BOB, type="semantic"),
        )
    )
    await familiar.learn_now()

    [done] = await familiar.work_queue.work(kind="dream")
    assert (done.id, done.status, done.attempts, done.last_error) == (item.id, "done", 1, None)
    first, second = requests_of(fake_llm, "dreaming")
    assert turn_ids_shown(first) == turn_ids_shown(second) == ids  # the same conversation, and only it
    cat, dogs = await all_facts(familiar)
    assert (cat.origin, cat.scope, cat.source_turn_ids, cat.speaker) == ("dreaming", GUILD_SCOPE, (ids[0],), ALICE)
    assert (dogs.origin, dogs.scope, dogs.source_turn_ids, dogs.speaker) == ("dreaming", GUILD_SCOPE, (ids[1],), BOB)

    await familiar.learn_now()
    assert len(requests_of(fake_llm, "dreaming")) == 2  # a conversation is dreamt once
    assert len(await familiar.work_queue.work(kind="dream")) == 1

    later = await add_turns(familiar, turn("Miso learnt to open doors.", ALICE), turn("uh oh", BOB))
    await familiar.learn_now()
    assert turn_ids_shown(requests_of(fake_llm, "dreaming")[-1]) == later  # only what came since
    assert [w.turn_id for w in await familiar.work_queue.work(kind="dream")] == [ids[-1], later[-1]]


async def test_scope_and_provenance_come_from_the_conversation(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    ids = await _conversation(familiar, place=DM)
    fake_llm.script(
        facts_answer(*(fact(f"Alice's cat Miso has habit number {n}.", [ids[0], ids[2]]) for n in range(1, 6)))
    )
    await familiar.learn_now()

    facts = await all_facts(familiar)
    assert len(facts) == 5  # five is allowed
    assert {(f.scope, f.origin, f.source_turn_ids, f.speaker) for f in facts} == {
        (DM, "dreaming", (ids[0], ids[2]), ALICE)
    }


async def test_citing_a_turn_of_another_conversation_is_garbage(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    [elsewhere] = await add_turns(familiar, turn("I am a pilot.", ALICE, place=OTHER_PLACE, minutes_ago=1))
    ids = await _conversation(familiar)
    stray = facts_answer(fact("Alice is a pilot.", [elsewhere]), fact("Alice adopted a cat named Miso.", [ids[0]]))
    fake_llm.script(stray, stray)
    await familiar.learn_now()

    assert await all_facts(familiar) == []
    [item] = await familiar.work_queue.work(kind="dream")
    assert item.status == "queued"
    assert item.last_error is not None
    assert "is not one of the turns shown" in item.last_error


async def test_six_candidates_are_garbage_and_three_failures_stay_inspectable(
    familiars: Familiars, fake_llm: FakeLLM, brain: Brain
) -> None:
    familiar = await familiars.open(SETTINGS)
    ids = await _conversation(familiar)
    brain.answers["dreaming"] = facts_answer(
        *(fact(f"Alice's cat Miso has habit number {n}.", [ids[0]]) for n in range(1, 7))
    )
    for attempt in (1, 2, 3):
        reports = await familiar.learn_now()
        assert len(requests_of(fake_llm, "dreaming")) == 2 * attempt  # each attempt: once, and one retry
        assert f"(attempt {attempt})" in reports["dreaming"]

    assert await all_facts(familiar) == []
    assert await familiar.work_queue.work(kind="dream", status="queued") == []
    [failed] = await familiar.work_queue.work(status="failed")
    assert (failed.kind, failed.turn_id, failed.place, failed.attempts) == ("dream", ids[-1], PLACE, 3)
    assert failed.last_error == "6 facts proposed; at most 5 per conversation (after one retry)"

    familiar = await familiars.reopen(familiar)
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "dreaming")) == 6  # a failed item is not tried again
    assert [w.status for w in await familiar.work_queue.work(kind="dream")] == ["failed"]


async def test_an_unreachable_model_spends_no_attempt(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    ids = await _conversation(familiar)
    fake_llm.script(*(ScriptedReply(status=503) for _ in range(4)))
    for _ in range(4):  # more outages than attempts
        await familiar.learn_now()
    [item] = await familiar.work_queue.work(kind="dream")
    assert (item.status, item.attempts) == ("queued", 0)

    fake_llm.script(facts_answer(fact("Alice adopted a cat named Miso.", [ids[0]])))
    await familiar.learn_now()
    assert [(w.status, w.attempts) for w in await familiar.work_queue.work(kind="dream")] == [("done", 1)]
    assert len(await all_facts(familiar)) == 1


async def test_a_forgotten_fact_is_never_dreamt_again(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    spiders = await insert(familiar, remembered("Alice is afraid of spiders."))
    await familiar.history.forget_fact(spiders.id)
    ids = await _conversation(familiar)
    fake_llm.script(
        facts_answer(
            fact("Alice is afraid of spiders.", [ids[0]]),
            fact("alice is afraid of spiders", [ids[2]], type="semantic"),  # the same, once normalized
            fact("Alice adopted a cat named Miso.", [ids[0]]),
        )
    )
    reports = await familiar.learn_now()

    assert "afraid of spiders" not in prompt(requests_of(fake_llm, "dreaming")[0])
    assert [f.content for f in await all_facts(familiar) if f.status != "forgotten"] == [
        "Alice adopted a cat named Miso."
    ]
    assert reports["dreaming"].endswith("done: 1 facts")


async def test_deleting_the_source_message_cancels_the_queued_dream(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    ids = await _conversation(familiar)
    [source] = await familiar.history.store.turns_by_ids([ids[-1]])
    assert source.message_id is not None
    fake_llm.script(ScriptedReply(status=503))
    await familiar.learn_now()
    [item] = await familiar.work_queue.work(kind="dream")
    assert item.status == "queued"

    assert await familiar.history.redact_message("discord", source.message_id, datetime.now(UTC)) == [ids[-1]]
    assert await familiar.work_queue.work_status(item.id) == "cancelled"
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "dreaming")) == 1  # never asked again
    assert await familiar.work_queue.work_status(item.id) == "cancelled"


async def test_a_source_deleted_while_dreaming_lands_nothing(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(SETTINGS)
    ids = await _conversation(familiar)
    [source] = await familiar.history.store.turns_by_ids([ids[-1]])
    assert source.message_id is not None
    answer = facts_answer(fact("Miso hates dogs.", [ids[2]]), fact("Alice adopted a cat named Miso.", [ids[0]]))
    fake_llm.script(ScriptedReply(content=answer, delay=1.0))  # time to delete it meanwhile

    learning_task = asyncio.create_task(familiar.learn_now())
    await fake_llm.wait_for_requests(1)
    await familiar.history.redact_message("discord", source.message_id, datetime.now(UTC))
    await asyncio.wait_for(learning_task, 10)

    [item] = await familiar.work_queue.work(kind="dream")
    assert item.status == "cancelled"
    assert await all_facts(familiar) == []
