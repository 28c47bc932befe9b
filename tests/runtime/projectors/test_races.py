"""What the owner does while a memory worker waits for the model: a message deleted or a fact
forgotten mid-call must not come back through the summary, dossier, reflection or supersede the
worker writes afterwards; a shutdown mid-dream is not a failed attempt. The model is the fake LLM
server; a thin wrapper around the real client runs the owner's action while the answer is on its way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from app.runtime.llm import LLMClient
from tests.runtime.projectors.conftest import Familiars
from tests.runtime.projectors.helpers import (
    ALICE,
    BOB,
    GUILD_SCOPE,
    PLACE,
    Brain,
    add_turns,
    all_facts,
    insert,
    learning,
    remembered,
    turn,
)

pytestmark = pytest.mark.asyncio


class Meanwhile:
    """The background client, with `action` run once while the first answer is on its way."""

    def __init__(self, inner: LLMClient, action: Callable[[], Awaitable[object]]) -> None:
        self.inner, self.action, self.done = inner, action, False

    async def complete(self, *args: Any, **kwargs: Any) -> str:
        answer = await self.inner.complete(*args, **kwargs)
        if not self.done:
            self.done = True
            await self.action()
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Stuck:
    """A background model that never answers (until the task waiting on it is cancelled)."""

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner
        self.asked = asyncio.Event()

    async def complete(self, *args: Any, **kwargs: Any) -> str:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_a_message_deleted_mid_summary_never_reaches_the_summary(familiars: Familiars, brain: Brain) -> None:
    familiar = await familiars.open(learning("rolling_summary", summary_turns=2))
    brain.answers["rolling_summary"] = lambda m: "Summary: " + m[1]["content"].split("New messages:")[1]
    await add_turns(familiar, turn("my password is hunter2", message_id=777001), turn("ok", BOB))

    async def delete() -> None:
        await familiar.history.redact_message("discord", 777001, datetime.now(UTC))

    familiar.projector_deps.llm = Meanwhile(familiar.projector_deps.llm, delete)  # type: ignore[assignment]
    await familiar.learn_now()
    await familiar.learn_now()
    summary = await familiar.projections.summary(PLACE)
    assert summary is not None  # written again, from what is left
    assert "hunter2" not in summary.text
    assert "ok" in summary.text


async def test_a_fact_forgotten_mid_dossier_never_reaches_the_dossier(familiars: Familiars, brain: Brain) -> None:
    familiar = await familiars.open(learning("people_dossier"))
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    await insert(familiar, remembered("Alice sings in a choir."))

    async def forget() -> None:
        await familiar.history.forget_fact(bakery.id)

    familiar.projector_deps.llm = Meanwhile(familiar.projector_deps.llm, forget)  # type: ignore[assignment]
    await familiar.learn_now()
    assert await familiar.projections.dossier(ALICE, GUILD_SCOPE) is None  # refused: it was written from it
    await familiar.learn_now()
    dossier = await familiar.projections.dossier(ALICE, GUILD_SCOPE)
    assert dossier is not None
    assert "choir" in dossier.text
    assert "bakery" not in dossier.text


async def test_a_message_deleted_mid_reflection_never_reaches_a_reflection(familiars: Familiars, brain: Brain) -> None:
    familiar = await familiars.open(learning("reflection", reflection_turns=2))
    ids = await add_turns(familiar, turn("my address is 12 Elm St", message_id=888001), turn("noted", BOB))
    brain.answers["reflection"] = json.dumps(
        {"reflections": [{"text": "Alice shared 12 Elm St.", "cited_turn_ids": [ids[0]]}]}
    )

    async def delete() -> None:
        await familiar.history.redact_message("discord", 888001, datetime.now(UTC))

    familiar.projector_deps.llm = Meanwhile(familiar.projector_deps.llm, delete)  # type: ignore[assignment]
    await familiar.learn_now()
    await familiar.learn_now()
    assert not any("Elm" in r.text for r in await familiar.projections.reflections([PLACE], 10))


async def test_nothing_is_retired_in_favour_of_a_fact_forgotten_mid_call(familiars: Familiars, brain: Brain) -> None:
    familiar = await familiars.open(learning("fact_supersede"))
    old = await insert(familiar, remembered("Alice lives in Lyon."))
    new = await insert(familiar, remembered("Alice lives in Oslo."))
    brain.answers["fact_supersede"] = json.dumps({"retire": [old.id]})

    async def forget() -> None:
        await familiar.history.forget_fact(new.id)

    familiar.projector_deps.llm = Meanwhile(familiar.projector_deps.llm, forget)  # type: ignore[assignment]
    await familiar.learn_now()
    lyon = next(f for f in await all_facts(familiar) if f.id == old.id)
    assert (lyon.status, lyon.superseded_at) == ("active", None)


async def test_a_shutdown_mid_dream_spends_no_attempt(familiars: Familiars, brain: Brain) -> None:
    familiar = await familiars.open(learning("dreaming", dream_idle_seconds=1))
    await add_turns(familiar, turn("we planned the trip"), turn("to the coast", BOB))
    stuck = Stuck(familiar.projector_deps.llm)
    familiar.projector_deps.llm = stuck  # type: ignore[assignment]
    for _ in range(4):  # more shutdowns while dreaming than a dream has attempts
        stuck.asked.clear()
        await familiar.start_learning()
        await asyncio.wait_for(stuck.asked.wait(), 5)  # the dream is with the model
        await familiar.learning.close()
    [item] = await familiar.work_queue.work(kind="dream")
    assert item.status == "running"  # requeued at the next start, its attempts untouched by shutdowns
    assert await familiar.work_queue.requeue_running() == 1
    [item] = await familiar.work_queue.work(kind="dream")
    assert (item.status, item.last_error) == ("queued", None)
