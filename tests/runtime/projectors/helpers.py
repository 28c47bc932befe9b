"""Builders for the projector tests: turns, the answers a model would give, and a fake-LLM brain that
answers each memory worker by its system prompt (and echoes everything else, like a reply)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from app.memory.facts import Fact, NewFact
from app.memory.records import NewTurn
from app.runtime.projectors import dossier, dreaming, reflection, rich_note, summary, supersede
from app.runtime.service import Familiar
from tests.fakes.llm_server import FakeLLM, RecordedRequest, echo_reply

GUILD = 500
GENERAL = 501
HOME = 502
PLACE = f"guild:{GUILD}/{GENERAL}"
OTHER_PLACE = f"guild:{GUILD}/{HOME}"
GUILD_SCOPE = f"guild:{GUILD}"
ALICE = "discord:7001"
BOB = "discord:7002"
DM = "dm:7001"
NAMES = {ALICE: "alice", BOB: "bob"}

_message_ids = itertools.count(90_000)

# The system prompt of each memory worker: how a recorded request is told apart.
WORKERS: dict[str, str] = {
    rich_note.SYSTEM: "rich_note",
    summary.SYSTEM: "rolling_summary",
    dossier.SYSTEM: "people_dossier",
    reflection.SYSTEM: "reflection",
    supersede.SYSTEM: "fact_supersede",
    dreaming.SYSTEM: "dreaming",
}
Answer = str | Callable[[list[dict[str, Any]]], str]


def learning(*projectors: str, **knobs: float | str) -> str:
    """The TOML tail for a familiar running these projectors; quiet thresholds are off unless given."""
    values: dict[str, float | str] = {"tick_seconds": 0.05, "dream_idle_seconds": 60}
    values.update(knobs)
    lines = "\n".join(f"{key} = {value}" for key, value in values.items())
    return f"[providers.memory]\nprojectors = {json.dumps(list(projectors))}\n\n[memory.learning]\n{lines}\n"


def turn(
    content: str,
    author: str = ALICE,
    *,
    place: str = PLACE,
    mode: str = "text",
    minutes_ago: float = 60,
    message_id: int | None = None,
) -> NewTurn:
    """A Discord turn from an hour ago (quiet enough for every threshold), with its own message id."""
    if place.startswith("guild:"):
        guild_id: int | None = GUILD
        channel = int(place.rsplit("/", 1)[1])
    else:
        guild_id, channel = None, 0
    return NewTurn(
        platform="discord",
        place=place,
        channel_id=channel,
        guild_id=guild_id,
        message_id=next(_message_ids) if message_id is None else message_id,
        author_key=author,
        author_name=NAMES.get(author, "wisp"),
        content=content,
        created_at=datetime.now(UTC) - timedelta(minutes=minutes_ago),
        mode=mode,
    )


async def add_turns(familiar: Familiar, *turns: NewTurn) -> list[int]:
    """Append the turns in order (one second apart in age, oldest first) and return their ids."""
    spaced = [dataclasses.replace(t, created_at=t.created_at + timedelta(seconds=i)) for i, t in enumerate(turns)]
    ids = await familiar.history.append_turns(spaced)
    assert len(ids) == len(turns)
    return ids


def fact(
    content: str,
    sources: Sequence[int],
    *,
    speaker: str = ALICE,
    subjects: Sequence[str] | None = None,
    type: str = "episodic",
    kind: str = "fact",
    importance: int = 5,
    confidence: float = 0.9,
    **extra: Any,
) -> dict[str, Any]:
    """One fact as the extraction contract wants it (speaker about themself unless told)."""
    return {
        "content": content,
        "type": type,
        "kind": kind,
        "importance": importance,
        "confidence": confidence,
        "subjects": list(subjects if subjects is not None else [speaker]),
        "speaker": speaker,
        "source_turn_ids": list(sources),
        **extra,
    }


def facts_answer(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


def remembered(content: str, *, about: str = ALICE, place: str = PLACE) -> NewFact:
    """An owner-remembered fact (active at once), for workers that read facts."""
    return NewFact(content, "semantic", 5, 1.0, (about,), place, speaker=about, origin="remember")


async def insert(familiar: Familiar, new: NewFact) -> Fact:
    outcome = await familiar.history.insert_fact(new)
    assert outcome.outcome == "inserted", outcome
    assert outcome.fact is not None
    return outcome.fact


async def all_facts(familiar: Familiar) -> list[Fact]:
    """Every fact row (any status, retired ones too), oldest first."""
    rows = await familiar.history.store.read_all("SELECT id FROM facts ORDER BY id")
    found = await familiar.history.facts.get_many([int(r[0]) for r in rows])
    return [found[int(r[0])] for r in rows]


class Brain:
    """`fake_llm.default_reply` for memory work: each worker gets its own (settable) answer; anything
    else (a reply) is echoed. Scripted answers (`fake_llm.script`) still come first."""

    def __init__(self) -> None:
        self.answers: dict[str, Answer] = {
            "rich_note": facts_answer(),
            "rolling_summary": "They talked.",
            "people_dossier": echo_reply,
            "reflection": '{"reflections": []}',
            "fact_supersede": '{"retire": []}',
            "dreaming": facts_answer(),
        }

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        name = worker_of(messages)
        if name is None:
            return echo_reply(messages)
        answer = self.answers[name]
        return answer if isinstance(answer, str) else answer(messages)


def worker_of(messages: list[dict[str, Any]]) -> str | None:
    if not messages or messages[0].get("role") != "system":
        return None
    return WORKERS.get(str(messages[0].get("content")))


def requests_of(fake_llm: FakeLLM, name: str) -> list[RecordedRequest]:
    """The requests one memory worker made (retries included)."""
    return [r for r in fake_llm.requests if worker_of(r.messages) == name]


def prompt(request: RecordedRequest) -> str:
    """The user message of a request: the material the worker showed the model."""
    assert request.messages[1]["role"] == "user"
    return str(request.messages[1]["content"])


def turn_ids_shown(request: RecordedRequest) -> list[int]:
    """The turn ids a request showed ([T12] in extraction and dreaming, [T#12] in reflections)."""
    return [int(i) for i in re.findall(r"^\[T#?(\d+)\]", prompt(request), re.MULTILINE)]
