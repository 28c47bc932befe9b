"""Catching up after downtime: messages missed while the familiar was off or its session was lost
are fetched from the channel history, stored once, and never answered.

Real discord.py against the wire-level fake Discord (its history route), real SQLite and tantivy.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from app.config.paths import FamiliarPaths
from app.memory.records import SELF_KEY
from app.runtime.events import Activity, ActivityKind
from app.runtime.service import Familiar
from tests.conftest import ALICE, BOB, GENERAL, GUILD_ID, HOME
from tests.fakes.discord_server import READ_MESSAGE_HISTORY, FakeDiscord, PostedMessage
from tests.fakes.llm_server import FakeLLM
from tests.runtime.test_replies import Recorder, _open_with

pytestmark = pytest.mark.asyncio


def _caught_up(events: Recorder, count: int = 1) -> bool:
    return len([a for a in events.activity(ActivityKind.INFO) if a.summary.startswith("caught up")]) >= count


def _backfilled(events: Recorder) -> list[tuple[str, str]]:
    return [(a.where, a.summary) for a in events.activity(ActivityKind.INFO) if a.summary.startswith("backfilled")]


async def _rows(familiar: Familiar, message_id: int) -> list[tuple[object, ...]]:
    return await familiar.history.store.read_all(
        "SELECT place, author_key, content, redacted, reply_to FROM turns WHERE message_id = ? ORDER BY id",
        (message_id,),
    )


async def _say(
    fake: FakeDiscord,
    content: str,
    *,
    channel: int = GENERAL,
    author: int = ALICE,
    mentions_bot: bool = False,
    at: datetime | None = None,
) -> int:
    return await fake.send_message(
        channel_id=channel, guild_id=GUILD_ID, author_id=author, content=content, mentions_bot=mentions_bot, at=at
    )


async def test_messages_sent_while_stopped_are_stored_at_the_next_start_and_not_answered(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events), "the first catch-up")
    seen = await _say(fake_discord, "before the break")
    # Redacted by the owner (forget --redact-sources) while Discord still has it: it must stay erased.
    erased = await _say(fake_discord, "my secret is 1234")
    await events.wait_for(lambda: len(events.activity(ActivityKind.MESSAGE_IN)) == 2, "the live messages")
    await familiar.history.redact_message("discord", erased, datetime.now(UTC))
    await familiar.stop()

    too_old = await _say(fake_discord, "said long ago", at=datetime.now(UTC) - timedelta(hours=30))
    missed = [
        await _say(fake_discord, "while you slept"),
        await _say(fake_discord, "wake up!", mentions_bot=True),
        await _say(fake_discord, "anyone home?", channel=HOME, author=BOB),  # a home channel: answered when live
    ]
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events, 2), "the catch-up after the restart")

    assert await _rows(familiar, missed[0]) == [
        (f"guild:{GUILD_ID}/{GENERAL}", f"discord:{ALICE}", "while you slept", 0, None)
    ]
    assert [r[2] for r in await _rows(familiar, missed[1])] == ["wake up!"]
    assert await _rows(familiar, missed[2]) == [(f"guild:{GUILD_ID}/{HOME}", f"discord:{BOB}", "anyone home?", 0, None)]
    assert await _rows(familiar, too_old) == []  # older than backfill_hours (24)
    assert [r[2] for r in await _rows(familiar, seen)] == ["before the break"]  # stored once, not twice
    assert await _rows(familiar, erased) == [(f"guild:{GUILD_ID}/{GENERAL}", f"discord:{ALICE}", "", 1, None)]
    assert sorted(_backfilled(events)) == [
        ("Lantern Club #familiar-home", "backfilled 1 message in #familiar-home"),
        ("Lantern Club #general", "backfilled 2 messages in #general"),
    ]
    # Nothing missed was answered; a new mention is, and only it.
    fresh = await _say(fake_discord, "are you back?", mentions_bot=True)
    [post] = await fake_discord.wait_for_posted(1)
    assert post.message_reference is not None
    assert int(post.message_reference["message_id"]) == fresh
    assert post.content == "echo: alice: are you back?"
    # Its prompt holds what was missed, in order, and ends at the new message.
    history = [m["content"] for m in fake_llm.requests[0].messages[1:]]
    assert history[-3:] == ["alice: while you slept", "alice: wake up!", "alice: are you back?"]
    await fake_discord.wait_for_delivered()
    assert len(fake_discord.posted) == 1
    assert len(fake_llm.requests) == 1


async def test_a_reply_accepted_but_never_stored_is_found_and_linked_at_the_next_start(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()

    stopped = asyncio.Event()

    async def stop_before_confirming(_post: PostedMessage) -> None:
        await familiar.stop()  # Discord has the reply; the familiar never hears back (as in a crash)
        stopped.set()

    fake_discord.on_post = stop_before_confirming
    fake_llm.script("A very long answer. " * 200)  # two Discord messages
    asked = await _say(fake_discord, "tell me", mentions_bot=True)
    async with asyncio.timeout(10):
        await stopped.wait()
    [first] = fake_discord.posted
    assert await familiar.history.store.read_all("SELECT 1 FROM turns WHERE author_key = ?", (SELF_KEY,)) == []
    fake_discord.on_post = None
    # The second piece of the reply was never sent; post one more as the familiar would have, as if
    # the crash came after it (a reply's later pieces answer nothing on Discord).
    second = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=fake_discord.bot_id, content="and the rest."
    )
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events, 2), "the catch-up after the restart")
    assert await _rows(familiar, first.message_id) == [
        (f"guild:{GUILD_ID}/{GENERAL}", SELF_KEY, first.content, 0, asked)
    ]
    assert await _rows(familiar, second) == [(f"guild:{GUILD_ID}/{GENERAL}", SELF_KEY, "and the rest.", 0, asked)]
    name = await familiar.history.store.read_one(
        "SELECT author_name FROM turns WHERE message_id = ?", (first.message_id,)
    )
    assert name == ("Wisp",)
    await fake_discord.wait_for_delivered()
    assert len(fake_discord.posted) == 1  # the question is not answered again


async def test_a_deletion_seen_during_the_catch_up_is_not_stored_back(
    familiar: Familiar, fake_discord: FakeDiscord
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events), "the first catch-up")
    await familiar.stop()
    doomed = await _say(fake_discord, "delete me")
    kept = await _say(fake_discord, "keep me")

    async def delete_while_in_flight(channel_id: int, ids: list[int]) -> None:
        # The page holding the message is already read when its deletion arrives and is handled.
        if channel_id == GENERAL and doomed in ids:
            fake_discord.on_history = None
            await fake_discord.delete_message(doomed)
            await events.wait_for(lambda: bool(events.activity(ActivityKind.DELETE)), "the deletion")

    fake_discord.on_history = delete_while_in_flight
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events, 2), "the catch-up after the restart")
    assert await _rows(familiar, doomed) == []
    assert [r[2] for r in await _rows(familiar, kept)] == ["keep me"]
    marked = await familiar.history.store.read_all(
        "SELECT message_id FROM deleted_sources WHERE message_id = ?", (doomed,)
    )
    assert marked == [(doomed,)]


async def test_the_catch_up_keeps_the_newest_messages_within_its_cap(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    ids = [await _say(fake_discord, f"note {n}") for n in range(7)]
    familiar = await _open_with(familiar_paths, fake_discord, fake_llm, "backfill_messages = 3")
    try:
        events = Recorder()
        familiar.subscribe(events)
        await familiar.start()
        await events.wait_for(lambda: _caught_up(events), "the catch-up")
        stored = await familiar.history.store.read_all("SELECT message_id FROM turns ORDER BY id")
        assert stored == [(i,) for i in ids[-3:]]  # the newest three, oldest first
    finally:
        await familiar.close()


async def test_the_catch_up_can_be_switched_off(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    await _say(fake_discord, "unseen")
    familiar = await _open_with(familiar_paths, fake_discord, fake_llm, "backfill_hours = 0")
    try:
        events = Recorder()
        familiar.subscribe(events)
        await familiar.start()
        live = await _say(fake_discord, "live")
        await events.wait_for(lambda: bool(events.activity(ActivityKind.MESSAGE_IN)), "the live message")
        assert await familiar.history.store.read_all("SELECT message_id FROM turns") == [(live,)]
        assert fake_discord.history_queries == []
        assert not _caught_up(events)
    finally:
        await familiar.close()


async def test_channels_without_readable_history_are_skipped(familiar: Familiar, fake_discord: FakeDiscord) -> None:
    fake_discord.deny_everyone(HOME, READ_MESSAGE_HISTORY)
    await _say(fake_discord, "in general")
    await _say(fake_discord, "at home", channel=HOME)
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events), "the catch-up")
    assert [cid for cid, _q in fake_discord.history_queries] == [GENERAL]
    assert fake_discord.rejected == []
    assert _backfilled(events) == [("Lantern Club #general", "backfilled 1 message in #general")]
    assert not events.activity(ActivityKind.ERROR)


async def test_direct_messages_missed_while_stopped_are_stored_in_their_dm(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    dm = fake_discord.add_dm(BOB)
    await fake_discord.send_message(channel_id=dm, author_id=BOB, content="psst")
    await fake_discord.wait_for_posted(1)  # DMs are answered
    await events.wait_for(lambda: bool(events.activity(ActivityKind.REPLY_OUT)), "the DM reply")
    await familiar.stop()
    missed = await fake_discord.send_message(channel_id=dm, author_id=BOB, content="are you there?")
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events, 2), "the catch-up after the restart")
    assert await _rows(familiar, missed) == [(f"dm:{BOB}", f"discord:{BOB}", "are you there?", 0, None)]
    assert len(fake_discord.posted) == 1
    assert ("DM with bob", "backfilled 1 message in the DM with bob") in _backfilled(events)


@pytest.mark.slow
async def test_a_reconnect_that_cannot_resume_catches_up_on_what_the_lost_session_missed(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events), "the first catch-up")
    await fake_discord.drop_session()
    lost = await _say(fake_discord, "said while the session was lost", mentions_bot=True)
    # discord.py waits 5 s before identifying again.
    await fake_discord.wait_for_identify(15, count=2)
    await events.wait_for(lambda: _caught_up(events, 2), "the catch-up after the new session", timeout=15)
    assert [r[2] for r in await _rows(familiar, lost)] == ["said while the session was lost"]
    assert ("Lantern Club #general", "backfilled 1 message in #general") in _backfilled(events)
    assert fake_discord.resume_count == 0
    after = await _say(fake_discord, "and now?", mentions_bot=True)
    [post] = await fake_discord.wait_for_posted(1)
    assert post.message_reference is not None
    assert int(post.message_reference["message_id"]) == after
    assert not any(isinstance(e, Activity) and e.kind is ActivityKind.ERROR for e in events.events)


async def test_live_messages_wait_for_their_channel_to_be_caught_up(
    familiar: Familiar, fake_discord: FakeDiscord
) -> None:
    """What was missed is stored before what is said meanwhile: the channel's order holds, and a live
    message stored first cannot hide what was missed before it."""
    events = Recorder()
    familiar.subscribe(events)
    for n in range(3):
        await _say(fake_discord, f"missed {n}")
    starting = asyncio.create_task(familiar.start())
    await fake_discord.wait_for_identify()
    await _say(fake_discord, "said at once")  # right after the new session began, before its guilds are in
    await starting
    await events.wait_for(lambda: _caught_up(events), "the catch-up")
    await events.wait_for(lambda: bool(events.activity(ActivityKind.MESSAGE_IN)), "the live message")
    order = await familiar.history.store.read_all(
        "SELECT content FROM turns WHERE channel_id = ? ORDER BY id", (GENERAL,)
    )
    assert [r[0] for r in order] == ["missed 0", "missed 1", "missed 2", "said at once"]

    async def say_during_the_fetch(channel_id: int, _ids: list[int]) -> None:
        if channel_id == GENERAL:
            fake_discord.on_history = None
            await _say(fake_discord, "said while it fetched")
            await fake_discord.wait_for_delivered()  # the familiar has it before the page arrives

    await familiar.stop()
    for n in range(2):
        await _say(fake_discord, f"missed again {n}")
    fake_discord.on_history = say_during_the_fetch
    await familiar.start()
    await events.wait_for(lambda: _caught_up(events, 2), "the second catch-up")
    await events.wait_for(lambda: len(events.activity(ActivityKind.MESSAGE_IN)) == 2, "the second live message")
    order = await familiar.history.store.read_all(
        "SELECT content FROM turns WHERE channel_id = ? ORDER BY id", (GENERAL,)
    )
    assert [r[0] for r in order][-3:] == ["missed again 0", "missed again 1", "said while it fetched"]
