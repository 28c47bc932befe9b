"""Sending replies when Discord pushes back: rate limits (a route's, the global one) are waited out for
`[discord] send_retry_seconds`, in order in each channel, and a reply is given up only with a reason
on the Dashboard; a send whose answer was lost (a TCP reset after Discord took the POST) is found in
the channel and stored while running, never sent twice.

Real discord.py against the wire-level fake Discord, the real openai client against the fake LLM,
real SQLite and tantivy. The fake LLM answers "echo: <the last user message of the prompt>".
"""

from __future__ import annotations

import pytest

from app.config.paths import FamiliarPaths
from app.runtime.errors import FamiliarError
from app.runtime.events import ActivityKind, FailureReported
from app.runtime.service import Familiar
from tests.conftest import ALICE, BOB, GENERAL, GUILD_ID, HOME
from tests.fakes.discord_server import FakeDiscord, PostedMessage
from tests.fakes.llm_server import FakeLLM
from tests.runtime.test_replies import Recorder, _answers, _open_with

pytestmark = pytest.mark.asyncio

POSTS = f"POST /api/v10/channels/{GENERAL}/messages"


async def _mention(fake: FakeDiscord, content: str, channel_id: int = GENERAL, author_id: int = ALICE) -> int:
    return await fake.send_message(
        channel_id=channel_id, guild_id=GUILD_ID, author_id=author_id, content=content, mentions_bot=True
    )


async def _stored_replies(familiar: Familiar) -> list[tuple[int, int, str]]:
    """(message id, the message it answers, text) of every message of the familiar's in history.db."""
    rows = await familiar.history.store.read_all(
        "SELECT message_id, reply_to, content FROM turns WHERE author_key = 'familiar:self' ORDER BY id"
    )
    return [(int(m), int(r), str(c)) for m, r, c in rows]


def _problems(events: Recorder) -> list[str]:
    failures = [e.message for e in events.events if isinstance(e, FailureReported)]
    return [e.summary for e in events.activity(ActivityKind.ERROR)] + failures


def _caught_up(events: Recorder) -> bool:
    return any(e.summary.startswith("caught up") for e in events.activity(ActivityKind.INFO))


# -- rate limits -----------------------------------------------------------------------------------


async def test_a_reply_refused_by_more_429s_than_discord_py_tries_still_goes_out(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """discord.py tries five times; before, the reply was then logged "Discord refused the reply (429)" and lost."""
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    fake_discord.rate_limit(8, 0.02, channel_id=GENERAL)
    asked = await _mention(fake_discord, "are you rate limited?")
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the reply")
    assert fake_discord.rate_limited == [POSTS] * 8
    [post] = fake_discord.posted
    assert _answers([post]) == {asked: ["echo: alice: are you rate limited?"]}
    assert await _stored_replies(familiar) == [(post.message_id, asked, "echo: alice: are you rate limited?")]
    assert _problems(events) == []


async def test_a_burst_of_global_429s_delays_the_reply_and_loses_nothing(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """The global limit refuses every request, the typing indicator's too; before, a refused typing
    request lost the reply."""
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events), "the start-up catch-up")  # its history reads go first
    fake_discord.rate_limit(12, 0.02, is_global=True)
    asked = await _mention(fake_discord, "is everyone limited?")
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the reply", timeout=20)
    assert len(fake_discord.rate_limited) == 12
    assert f"POST /api/v10/channels/{GENERAL}/typing" in fake_discord.rate_limited
    assert POSTS in fake_discord.rate_limited
    assert _answers(fake_discord.posted) == {asked: ["echo: alice: is everyone limited?"]}
    assert [r[1] for r in await _stored_replies(familiar)] == [asked]
    assert _problems(events) == []


async def test_a_reply_ready_while_the_typing_request_sleeps_out_a_global_429_still_goes_out(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """discord.py opens its global lock again only after the sleep: a typing request cancelled during it
    (the reply written meanwhile) left every later request of the client waiting for ever."""
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events), "the start-up catch-up")
    fake_discord.rate_limit(1, 2.0, is_global=True)  # the typing request's; the reply is written in less
    asked = await _mention(fake_discord, "quick question")
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the reply", timeout=20)
    assert fake_discord.rate_limited == [f"POST /api/v10/channels/{GENERAL}/typing"]
    assert _answers(fake_discord.posted) == {asked: ["echo: alice: quick question"]}
    assert _problems(events) == []


async def test_a_rate_limited_reply_holds_back_its_own_channel_only_and_in_order(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    fake_discord.rate_limit(7, 0.1, channel_id=GENERAL)  # 0.7 s at the least before #general's first reply
    asked_when_first_went_out: list[str] = []

    async def on_post(post: PostedMessage) -> None:
        if post.channel_id == GENERAL and not asked_when_first_went_out:
            asked_when_first_went_out.extend(sorted(r.messages[-1]["content"] for r in fake_llm.requests))

    fake_discord.on_post = on_post
    first = await _mention(fake_discord, "first in general")
    second = await _mention(fake_discord, "second in general", author_id=BOB)
    elsewhere = await _mention(fake_discord, "meanwhile at home", channel_id=HOME)
    await events.wait_for(lambda: len(events.activity(ActivityKind.REPLY_OUT)) == 3, "three replies", timeout=20)
    answered = [int(p.message_reference["message_id"]) for p in fake_discord.posted if p.message_reference]
    assert answered == [elsewhere, first, second]  # home did not wait; #general kept its order
    assert _answers(fake_discord.posted) == {
        first: ["echo: alice: first in general"],
        second: ["echo: bob: second in general"],
        elsewhere: ["echo: alice: meanwhile at home"],
    }
    # The second reply waited for the first to be out: it was not even written before.
    assert asked_when_first_went_out == ["alice: first in general", "alice: meanwhile at home"]
    assert [r[1] for r in await _stored_replies(familiar)] == [elsewhere, first, second]
    assert _problems(events) == []


async def test_a_reply_is_given_up_past_the_setting_with_a_reason_and_the_next_one_waits_its_turn(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    familiar = await _open_with(familiar_paths, fake_discord, fake_llm, "send_retry_seconds = 1.0")
    try:
        events = Recorder()
        familiar.subscribe(events)
        await familiar.start()
        limit = fake_discord.rate_limit(None, 0.05, channel_id=GENERAL)  # until lifted
        await _mention(fake_discord, "you will not hear back")
        queued = await _mention(fake_discord, "but I will", author_id=BOB)
        await events.wait_for(lambda: bool(_problems(events)), "the reply given up", timeout=20)
        fake_discord.rate_limits.remove(limit)
        await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the queued reply", timeout=20)
        reason = (
            "Discord rate-limited the reply (429) for longer than [discord] send_retry_seconds allows (1 s);"
            " it was not sent"
        )
        errors = events.activity(ActivityKind.ERROR)
        assert [(e.summary, e.where) for e in errors] == [(reason, f"guild:{GUILD_ID}/{GENERAL}")]
        assert [e.message for e in events.events if isinstance(e, FailureReported)] == [reason]
        assert len(fake_discord.rate_limited) >= 10  # at least two rounds of discord.py's five tries
        assert _answers(fake_discord.posted) == {queued: ["echo: bob: but I will"]}  # nothing ahead of it
        assert [r[1] for r in await _stored_replies(familiar)] == [queued]
    finally:
        await familiar.close()


async def test_with_no_retry_time_a_refused_reply_is_given_up_at_once(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    familiar = await _open_with(familiar_paths, fake_discord, fake_llm, "send_retry_seconds = 0")
    try:
        events = Recorder()
        familiar.subscribe(events)
        await familiar.start()
        fake_discord.rate_limit(5, 0.01, channel_id=GENERAL)  # exactly what discord.py tries
        await _mention(fake_discord, "no second chances")
        await events.wait_for(lambda: bool(_problems(events)), "the reply given up")
        assert len(fake_discord.rate_limited) == 5
        assert fake_discord.posted == []
        assert "send_retry_seconds allows (0 s)" in events.activity(ActivityKind.ERROR)[0].summary
        asked = await _mention(fake_discord, "and now?")
        await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the next reply")
        assert _answers(fake_discord.posted) == {asked: ["echo: alice: and now?"]}
    finally:
        await familiar.close()


async def test_the_retry_time_is_checked_and_changes_while_running(
    familiar: Familiar, familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    toml = familiar_paths.character_toml
    good = toml.read_text(encoding="utf-8")
    toml.write_text(good.replace("[discord]\n", "[discord]\nsend_retry_seconds = -5\n", 1), encoding="utf-8")
    with pytest.raises(FamiliarError) as bad:
        await familiar.reconfigure()
    assert "line 6, key 'discord.send_retry_seconds': -5.0 is out of range (0 to 3600)" in str(bad.value)
    assert familiar.settings.discord.send_retry_seconds == 120.0  # nothing changed
    toml.write_text(good.replace("[discord]\n", "[discord]\nsend_retry_seconds = 0\n", 1), encoding="utf-8")
    await familiar.reconfigure()
    fake_discord.rate_limit(5, 0.01, channel_id=GENERAL)
    await _mention(fake_discord, "with no second chances now")
    await events.wait_for(lambda: bool(_problems(events)), "the reply given up")
    assert len(fake_discord.rate_limited) == 5  # not tried again: the running connection took the new setting
    assert fake_discord.posted == []


# -- a lost answer ---------------------------------------------------------------------------------


async def test_a_reply_discord_took_whose_answer_was_lost_is_stored_while_running(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """Before: no duplicate, but "Could not answer" and the reply missing from history.db until the next start."""
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    fake_discord.reset_next_post(accepted=True)
    asked = await _mention(fake_discord, "did you get that?")
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the reply", timeout=20)
    assert fake_discord.resets == ["accepted"]
    [post] = fake_discord.posted  # exactly one message on Discord
    assert await _stored_replies(familiar) == [(post.message_id, asked, "echo: alice: did you get that?")]
    # Stored as if the send had answered: the activity line opens its explanation.
    [line] = events.activity(ActivityKind.REPLY_OUT)
    assert line.turn_id is not None
    explanation = await familiar.explain(line.turn_id)
    assert explanation.place.key == f"guild:{GUILD_ID}/{GENERAL}"
    assert fake_discord.history_queries  # found in the channel's history
    assert _problems(events) == []


async def test_a_reply_reset_before_discord_took_it_is_sent_again_once(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    fake_discord.reset_next_post(accepted=False)
    asked = await _mention(fake_discord, "hello?")
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the reply", timeout=20)
    assert fake_discord.resets == ["refused"]
    [post] = fake_discord.posted
    assert await _stored_replies(familiar) == [(post.message_id, asked, "echo: alice: hello?")]
    assert _problems(events) == []


async def test_a_long_reply_whose_middle_answer_was_lost_is_stored_whole_and_in_order(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    paragraph = "The lantern flickers over the old map. " * 40
    fake_llm.script(f"{paragraph}\n\n{paragraph}\n\n{paragraph}")  # three messages, the same text in each
    fake_discord.reset_next_post(accepted=True, after=1)  # the second one's answer is lost
    asked = await _mention(fake_discord, "tell me a story")
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the reply", timeout=20)
    assert fake_discord.resets == ["accepted"]
    posted = fake_discord.posted
    assert len(posted) == 3
    stored = await _stored_replies(familiar)
    assert [(m, c) for m, _r, c in stored] == [(p.message_id, p.content) for p in posted]
    assert {r for _m, r, _c in stored} == {asked}
    assert _problems(events) == []
