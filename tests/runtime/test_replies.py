"""Replies under pressure: simultaneous mentions, long answers and huge messages.

Real discord.py against the wire-level fake Discord, the real openai client against the fake LLM,
real SQLite and tantivy. The fake LLM answers "echo: <the last user message of the prompt>", so a
reply says which prompt it was built from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.memory.store import MAX_CONTENT_CHARS
from app.runtime.events import Activity, ActivityKind, FailureReported, RuntimeEvent
from app.runtime.messages import REPLY_CUT
from app.runtime.service import Familiar
from tests.conftest import ALICE, BOB, GENERAL, GUILD_ID, HOME, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord, PostedMessage
from tests.fakes.llm_server import FakeLLM, ScriptedReply

pytestmark = pytest.mark.asyncio


class Recorder:
    """Runtime events as they are published, with a bounded wait for one to show up."""

    def __init__(self) -> None:
        self.events: list[RuntimeEvent] = []
        self._changed = asyncio.Event()

    def __call__(self, event: RuntimeEvent) -> None:
        self.events.append(event)
        self._changed.set()

    def activity(self, kind: ActivityKind) -> list[Activity]:
        return [e for e in self.events if isinstance(e, Activity) and e.kind is kind]

    async def wait_for(self, ready: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
        try:
            async with asyncio.timeout(timeout):
                while not ready():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            pytest.fail(f"no {what} within {timeout} s: {self.events}")


def _answers(posted: list[PostedMessage]) -> dict[int, list[str]]:
    """Reply texts by the message id each one references."""
    out: dict[int, list[str]] = {}
    for post in posted:
        assert post.message_reference is not None, f"a reply that answers no message: {post.content!r}"
        out.setdefault(int(post.message_reference["message_id"]), []).append(post.content)
    return out


async def test_two_mentions_at_the_same_instant_each_get_their_own_answer(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    await familiar.start()
    first, second = await asyncio.gather(
        fake_discord.send_message(
            channel_id=GENERAL,
            guild_id=GUILD_ID,
            author_id=ALICE,
            content="what is the river called?",
            mentions_bot=True,
        ),
        fake_discord.send_message(
            channel_id=GENERAL,
            guild_id=GUILD_ID,
            author_id=BOB,
            content="and who keeps the lantern?",
            mentions_bot=True,
        ),
    )
    posted = await fake_discord.wait_for_posted(2, timeout=10)
    await fake_discord.wait_for_delivered()
    answers = _answers(posted)
    assert answers == {
        first: ["echo: alice: what is the river called?"],
        second: ["echo: bob: and who keeps the lantern?"],
    }
    assert len(fake_llm.requests) == 2  # no double answers
    # Each prompt ends at its own message: the later one is not in the earlier one's history.
    prompts = sorted(([m["content"] for m in r.messages[1:]] for r in fake_llm.requests), key=len)
    ends = {p[-1] for p in prompts}
    assert ends == {"alice: what is the river called?", "bob: and who keeps the lantern?"}
    assert not any("and who keeps the lantern?" in line for p in prompts for line in p[:-1])


async def test_a_burst_of_mentions_gets_one_reply_each_in_order(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    count = 12
    ids = await asyncio.gather(
        *(
            fake_discord.send_message(
                channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=f"question {n}", mentions_bot=True
            )
            for n in range(count)
        )
    )
    posted = await fake_discord.wait_for_posted(count, timeout=20)
    await fake_discord.wait_for_delivered()
    assert _answers(posted) == {mid: [f"echo: alice: question {n}"] for n, mid in enumerate(ids)}
    # Replies in one channel go out in the order of the messages they answer.
    assert [int(p.message_reference["message_id"]) for p in posted if p.message_reference] == sorted(ids)
    assert len(fake_llm.requests) == count
    # The store links each reply to its own message (each is stored once Discord accepted it).
    await events.wait_for(lambda: len(events.activity(ActivityKind.REPLY_OUT)) == count, "stored replies")
    rows = await familiar.history.store.read_all(
        "SELECT reply_to, content FROM turns WHERE author_key = 'familiar:self' ORDER BY id"
    )
    assert rows == [(mid, f"echo: alice: question {n}") for n, mid in enumerate(ids)]


async def test_a_slow_reply_holds_back_its_own_channel_only(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    await familiar.start()
    fake_llm.hang_next()  # the first answer never comes (until the LLM's timeout)
    stuck = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="a hard question", mentions_bot=True
    )
    await fake_llm.wait_for_requests(1)
    waiting = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=BOB, content="an easy one", mentions_bot=True
    )
    elsewhere = await fake_discord.send_message(channel_id=HOME, guild_id=GUILD_ID, author_id=BOB, content="hi home")
    [post] = await fake_discord.wait_for_posted(1)
    assert _answers([post]) == {elsewhere: ["echo: bob: hi home"]}
    await fake_discord.wait_for_delivered()
    # The second mention in the stuck channel waits its turn: its prompt is not even built yet.
    assert len(fake_llm.requests) == 2
    assert {stuck, waiting}.isdisjoint(_answers(fake_discord.posted))


async def _open_with(paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM, discord: str) -> Familiar:
    """A familiar whose [discord] section has extra settings."""
    write_character_toml(paths, fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url)
    text = paths.character_toml.read_text(encoding="utf-8")
    paths.character_toml.write_text(text.replace("[discord]\n", f"[discord]\n{discord}\n", 1), encoding="utf-8")
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    return await Familiar.open(paths, secrets, env={"DISCORD_TOKEN": TOKEN})


async def test_a_reply_is_at_most_five_discord_messages_by_default(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    fake_llm.script("The lantern flickers over the old map. " * 500)  # about ten messages' worth
    asked = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="tell me everything", mentions_bot=True
    )
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the reply")
    posted = fake_discord.posted
    assert len(posted) == 5
    assert all(len(p.content) <= 2000 for p in posted)
    assert posted[-1].content.endswith(REPLY_CUT)
    assert not any(REPLY_CUT in p.content for p in posted[:-1])
    assert posted[0].message_reference is not None
    assert int(posted[0].message_reference["message_id"]) == asked
    assert fake_discord.rejected == []
    stored = await familiar.history.store.read_all(
        "SELECT content FROM turns WHERE author_key = 'familiar:self' ORDER BY id"
    )
    assert [row[0] for row in stored] == [p.content for p in posted]


async def test_the_cap_on_reply_messages_is_a_setting(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    familiar = await _open_with(familiar_paths, fake_discord, fake_llm, "max_reply_messages = 2")
    try:
        events = Recorder()
        familiar.subscribe(events)
        await familiar.start()
        fake_llm.script("A very long story. " * 600)
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="a story?", mentions_bot=True
        )
        await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the reply")
        assert len(fake_discord.posted) == 2
        assert fake_discord.posted[-1].content.endswith(REPLY_CUT)
    finally:
        await familiar.close()


async def test_a_message_over_the_store_limit_is_stored_cut_with_a_marker(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    fake_llm.script("That is a lot of x.")
    huge = "spam " * 30_000  # 150,000 characters
    quiet = await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=BOB, content=huge)
    asked = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="x" * 120_000, mentions_bot=True
    )
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the reply")
    rows = dict(
        await familiar.history.store.read_all(
            "SELECT message_id, content FROM turns WHERE message_id IN (?, ?)", (quiet, asked)
        )
    )
    for message_id, original in ((quiet, huge), (asked, "x" * 120_000)):
        text = rows[message_id]
        assert len(text) == MAX_CONTENT_CHARS
        assert text.endswith(f"[message cut: it had {len(original)} characters; only the first ones are kept]")
        assert original.startswith(text[: MAX_CONTENT_CHARS - 100])
    assert len(fake_discord.posted) == 1  # and the huge mention was still answered
    # An edit that makes a message huge is cut the same way.
    await fake_discord.edit_message(quiet, "edited " * 20_000)
    await events.wait_for(lambda: bool(events.activity(ActivityKind.EDIT)), "the edit")
    [(edited,)] = await familiar.history.store.read_all(
        "SELECT content FROM turns WHERE message_id = ? AND superseded = 0", (quiet,)
    )
    assert len(edited) == MAX_CONTENT_CHARS
    assert edited.endswith("[message cut: it had 140000 characters; only the first ones are kept]")
    assert not any(isinstance(e, FailureReported) for e in events.events)


async def test_a_message_deleted_before_its_turn_is_not_answered(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    fake_llm.script(ScriptedReply(content="Slowly, yes.", delay=0.5))  # the first answer takes a while
    first = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="first question", mentions_bot=True
    )
    second = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=BOB, content="never mind", mentions_bot=True
    )
    await fake_llm.wait_for_requests(1)
    await fake_discord.delete_message(second)  # gone while it waited behind the first reply
    await events.wait_for(lambda: bool(events.activity(ActivityKind.DELETE)), "the deletion")
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the first reply")
    third = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="still there?", mentions_bot=True
    )
    await fake_discord.wait_for_posted(2)
    await fake_discord.wait_for_delivered()
    assert _answers(fake_discord.posted) == {first: ["Slowly, yes."], third: ["echo: alice: still there?"]}
    assert len(fake_llm.requests) == 2  # no prompt was built for the deleted message
    assert fake_discord.rejected == []
