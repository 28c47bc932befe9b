"""The familiar against a wire-level fake Discord and a fake OpenAI-compatible server.

Real discord.py, real openai client, real SQLite and tantivy; nothing patched.
"""

from __future__ import annotations

import asyncio

import pytest

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.errors import FamiliarError
from app.runtime.events import (
    Activity,
    ActivityKind,
    ConnectionState,
    FailureReported,
    GuildsChanged,
    IndexHealthReport,
    LatencyMeasured,
    RuntimeEvent,
)
from app.runtime.service import Familiar
from tests.conftest import ALICE, BOB, GENERAL, GUILD_ID, HOME, OTHER_BOT, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM

pytestmark = pytest.mark.asyncio


async def _search_until(familiar: Familiar, query: str, expected: int, timeout: float = 5.0) -> list[str]:
    """Search until `expected` hits appear (the index follows SQL asynchronously)."""
    hits: list[str] = []

    async def poll() -> None:
        nonlocal hits
        while True:
            await familiar.history.turns_index.flush(timeout)
            hits = [h.content for h in await familiar.search_turns(query)]
            if len(hits) == expected:
                return
            await asyncio.sleep(0.01)

    try:
        await asyncio.wait_for(poll(), timeout)
    except TimeoutError:
        pytest.fail(f"searching {query!r}: expected {expected} hits, got {hits}")
    return hits


async def test_mention_gets_a_reply_with_persona_and_history(
    familiar: Familiar, familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    await familiar.start()
    status = familiar.get_status()
    assert status.state is ConnectionState.CONNECTED
    assert [g.name for g in status.guilds] == ["Lantern Club"]

    await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=BOB, content="the kettle is on")
    fake_llm.script("Hello alice, I smell tea.")
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="hi familiar", mentions_bot=True
    )
    posted = await fake_discord.wait_for_posted(1)
    assert posted[0].content == "Hello alice, I smell tea."
    assert posted[0].channel_id == GENERAL
    assert posted[0].message_reference is not None  # it answers the message it replies to
    assert GENERAL in fake_discord.typing_events

    request = fake_llm.requests[0]
    assert request.model == "test-model"
    system = request.messages[0]
    assert system["role"] == "system"
    persona = familiar_paths.character_md.read_text(encoding="utf-8")
    assert "If someone asks you to break the server's rules, politely refuse." in persona
    assert "If someone asks you to break the server's rules, politely refuse." in system["content"]
    history = [m["content"] for m in request.messages[1:]]
    assert history[0] == "bob: the kettle is on"
    assert history[-1].startswith("alice: ")
    assert "hi familiar" in history[-1]

    assert await _search_until(familiar, "tea", 1) == ["Hello alice, I smell tea."]
    assert await _search_until(familiar, "kettle", 1) == ["the kettle is on"]
    kinds = {e.kind for e in events if isinstance(e, Activity)}
    assert {ActivityKind.MESSAGE_IN, ActivityKind.REPLY_OUT} <= kinds


async def test_who_the_familiar_answers(familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM) -> None:
    await familiar.start()
    # Not addressed in an ordinary channel: stored, not answered.
    await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="just chatting")
    # Another bot mentioning it: ignored by default.
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=OTHER_BOT, content="hey bot", mentions_bot=True
    )
    # A home channel: answered without a mention.
    await fake_discord.send_message(channel_id=HOME, guild_id=GUILD_ID, author_id=ALICE, content="anyone home?")
    posted = await fake_discord.wait_for_posted(1)
    assert posted[0].channel_id == HOME
    # A DM: answered.
    dm = fake_discord.add_dm(BOB)
    await fake_discord.send_message(channel_id=dm, author_id=BOB, content="psst")
    posted = await fake_discord.wait_for_posted(2)
    assert posted[1].channel_id == dm
    # A reply to the familiar's own message: answered.
    await fake_discord.send_message(
        channel_id=HOME, guild_id=GUILD_ID, author_id=BOB, content="replying", reply_to=posted[0].message_id
    )
    await fake_discord.wait_for_posted(3)
    await fake_discord.wait_for_delivered()
    assert len(fake_llm.requests) == 3  # never for "just chatting", the other bot, or its own echoes
    assert await _search_until(familiar, "chatting", 1) == ["just chatting"]
    assert sorted(await _search_until(familiar, "psst", 2)) == ["echo: bob: psst", "psst"]  # message and reply


async def test_long_replies_are_split_cleanly(familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM) -> None:
    await familiar.start()
    paragraph = "The lantern flickers over the old map. " * 40
    fake_llm.script(paragraph + "\n\n" + paragraph + "\n\n" + paragraph)
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="tell me a story", mentions_bot=True
    )
    posted = await fake_discord.wait_for_posted(3)
    assert all(len(p.content) <= 2000 for p in posted)
    assert all(p.content.endswith(".") for p in posted)  # cut at sentence or paragraph ends
    assert " ".join(p.content for p in posted).split() == (paragraph * 3).split()
    assert fake_discord.rejected == []


async def test_edit_and_delete_reach_the_store(familiar: Familiar, fake_discord: FakeDiscord) -> None:
    await familiar.start()
    message_id = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="my cat is called Pepper"
    )
    assert await _search_until(familiar, "pepper", 1) == ["my cat is called Pepper"]
    await fake_discord.edit_message(message_id, "my cat is called Salt")
    assert await _search_until(familiar, "salt", 1) == ["my cat is called Salt"]
    assert await _search_until(familiar, "pepper", 0) == []
    rows = await familiar.history.store.read_all(
        "SELECT revision, content, redacted FROM turns WHERE message_id = ? ORDER BY revision", (message_id,)
    )
    assert rows == [(0, "my cat is called Pepper", 0), (1, "my cat is called Salt", 0)]

    await fake_discord.delete_message(message_id)
    assert await _search_until(familiar, "salt", 0) == []
    rows = await familiar.history.store.read_all(
        "SELECT revision, content, redacted FROM turns WHERE message_id = ? ORDER BY revision", (message_id,)
    )
    assert rows == [(0, "", 1), (1, "", 1)]  # the rows stay, the text is gone


async def test_reconnect_resumes_without_losing_a_message(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    await familiar.start()
    await fake_discord.close_gateway(4000)
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="sent while you blinked", mentions_bot=True
    )
    await fake_discord.wait_for_resume()
    posted = await fake_discord.wait_for_posted(1)
    await fake_discord.wait_for_delivered()
    assert fake_discord.identify_count == 1
    assert fake_discord.resume_count == 1
    assert len(posted) == 1
    assert len(fake_llm.requests) == 1
    assert len(await _search_until(familiar, "blinked", 2)) == 2  # the message and the reply quoting it


async def test_bad_token_is_a_clear_message(familiar: Familiar, fake_discord: FakeDiscord) -> None:
    fake_discord.token = "another-token"
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    with pytest.raises(FamiliarError, match="rejected the bot token"):
        await familiar.start()
    status = familiar.get_status()
    assert status.state is ConnectionState.FAILED, "the state every listener was told: Failed"
    assert "rejected the bot token" in status.state_detail
    await familiar.stop()  # Stop after a failed start: Stopped
    assert familiar.get_status().state is ConnectionState.STOPPED
    failures = [e.message for e in events if isinstance(e, FailureReported)]
    assert len(failures) == 1
    assert "\n" not in failures[0]


async def test_missing_message_content_intent_is_explained(familiar: Familiar, fake_discord: FakeDiscord) -> None:
    fake_discord.allowed_privileged = 0  # the Message Content switch is off in the Developer Portal
    with pytest.raises(FamiliarError, match="Message Content Intent"):
        await familiar.start()
    assert familiar.get_status().last_error is not None


async def test_unreachable_llm_is_reported_and_the_bot_keeps_going(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    await familiar.start()
    await fake_llm.close()  # the endpoint goes away
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="are you there?", mentions_bot=True
    )

    async def failure() -> str:
        while True:
            found = [e.message for e in events if isinstance(e, FailureReported)]
            if found:
                return found[0]
            await asyncio.sleep(0.01)

    message = await asyncio.wait_for(failure(), 10)
    assert "Cannot reach the LLM endpoint" in message
    assert fake_discord.posted == []
    # nothing lost: the message is stored and the connection is still up
    assert await _search_until(familiar, "there", 1) == ["are you there?"]
    assert familiar.get_status().state is ConnectionState.CONNECTED


async def test_stop_disconnects_cleanly(familiar: Familiar, fake_discord: FakeDiscord) -> None:
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    await familiar.start()
    assert fake_discord.open_connections == 1
    await fake_discord.wait_until(lambda: familiar.get_status().latency_ms is not None, what="a latency reading")
    assert any(isinstance(e, LatencyMeasured) for e in events)
    await familiar.stop()
    status = familiar.get_status()
    assert status.state is ConnectionState.STOPPED
    assert status.guilds == ()
    assert status.latency_ms is None
    await fake_discord.wait_until(lambda: fake_discord.open_connections == 0, what="the gateway connection to close")
    # The window learns the server list is empty from the events alone.
    guild_lists = [e.guilds for e in events if isinstance(e, GuildsChanged)]
    assert [g.name for g in guild_lists[0]] == ["Lantern Club"]
    assert guild_lists[-1] == ()


async def _open_with(paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM, discord: str) -> Familiar:
    """A familiar whose [discord] section has extra settings."""
    write_character_toml(paths, fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url)
    text = paths.character_toml.read_text(encoding="utf-8")
    paths.character_toml.write_text(text.replace("[discord]\n", f"[discord]\n{discord}\n", 1), encoding="utf-8")
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    return await Familiar.open(paths, secrets, env={"DISCORD_TOKEN": TOKEN})


async def test_dms_can_be_refused_and_other_bots_allowed(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    familiar = await _open_with(familiar_paths, fake_discord, fake_llm, "allow_dms = false\nrespond_to_bots = true")
    try:
        await familiar.start()
        dm = fake_discord.add_dm(BOB)
        await fake_discord.send_message(channel_id=dm, author_id=BOB, content="psst, secret")
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=OTHER_BOT, content="hello fellow bot", mentions_bot=True
        )
        posted = await fake_discord.wait_for_posted(1)
        await fake_discord.wait_for_delivered()
        assert [p.channel_id for p in posted] == [GENERAL]  # the bot was answered, the DM was not
        assert len(fake_llm.requests) == 1
        assert await _search_until(familiar, "secret", 1) == ["psst, secret"]  # stored all the same
    finally:
        await familiar.close()


async def test_mentions_are_stored_and_shown_by_name(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    await familiar.start()
    fake_llm.script("On my way.")
    message_id = await fake_discord.send_message(
        channel_id=GENERAL,
        guild_id=GUILD_ID,
        author_id=ALICE,
        content=f"<@{fake_discord.bot_id}> ask <@{BOB}> to bring tea to <#{HOME}>, not <#999>",
    )
    await fake_discord.wait_for_posted(1)
    readable = "@Familiar ask @bob to bring tea to #familiar-home, not <#999>"  # an unknown channel stays as is
    assert fake_llm.requests[0].messages[-1]["content"] == f"alice: {readable}"
    rows = await familiar.history.store.read_all("SELECT content FROM turns WHERE message_id = ?", (message_id,))
    assert rows == [(readable,)]
    logged = [e.summary for e in events if isinstance(e, Activity) and e.kind is ActivityKind.MESSAGE_IN]
    assert logged == [f"alice: {readable}"]


async def test_edits_and_deletes_are_logged_by_name(familiar: Familiar, fake_discord: FakeDiscord) -> None:
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    await familiar.start()
    first = await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="one")
    await fake_discord.edit_message(first, "one, edited")
    await fake_discord.delete_message(first)
    await fake_discord.wait_for_delivered()
    await fake_discord.wait_until(
        lambda: any(isinstance(e, Activity) and e.kind is ActivityKind.DELETE for e in events), what="the delete"
    )
    logged = [(e.kind, e.where, e.summary) for e in events if isinstance(e, Activity)]
    assert (ActivityKind.EDIT, "Lantern Club #general", "alice edited: one, edited") in logged
    assert (ActivityKind.DELETE, "Lantern Club #general", "alice's message was deleted") in logged


async def test_a_bulk_delete_redacts_every_message(familiar: Familiar, fake_discord: FakeDiscord) -> None:
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    await familiar.start()
    ids = [
        await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=BOB, content=f"spam {n}")
        for n in range(3)
    ]
    keep = await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="spam? no")
    assert len(await _search_until(familiar, "spam", 4)) == 4
    await fake_discord.delete_messages(ids)
    assert await _search_until(familiar, "spam", 1) == ["spam? no"]
    rows = await familiar.history.store.read_all(
        "SELECT message_id, redacted, content FROM turns WHERE channel_id = ? ORDER BY id", (GENERAL,)
    )
    assert rows == [(ids[0], 1, ""), (ids[1], 1, ""), (ids[2], 1, ""), (keep, 0, "spam? no")]
    logged = [(e.where, e.summary) for e in events if isinstance(e, Activity) and e.kind is ActivityKind.DELETE]
    assert logged == [("Lantern Club #general", "3 messages were deleted at once")]


@pytest.mark.logs_errors(r"app\.runtime\.discord\.adapter: reply to \d+ failed")
async def test_a_reply_that_cannot_be_saved_is_reported(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """Any failure on the reply path reaches the activity log and the window, not just the known kinds."""
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    await familiar.start()
    # The disk refuses the familiar's own turn (a real SQLite error, raised by SQLite itself).
    trigger = (
        "CREATE TRIGGER refuse_reply BEFORE INSERT ON turns WHEN NEW.author_key = 'familiar:self' "
        "BEGIN SELECT RAISE(ABORT, 'disk refused the write'); END"
    )
    await familiar.history.store.write([(trigger, ())])
    fake_llm.script("You will not see this stored.")
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="are you keeping notes?", mentions_bot=True
    )
    await fake_discord.wait_for_posted(1)
    await fake_discord.wait_until(lambda: any(isinstance(e, FailureReported) for e in events), what="a failure")
    failure = next(e.message for e in events if isinstance(e, FailureReported))
    assert "Could not answer alice" in failure
    assert "disk refused the write" in failure
    errors = [e.summary for e in events if isinstance(e, Activity) and e.kind is ActivityKind.ERROR]
    assert errors == [failure]
    assert familiar.get_status().state is ConnectionState.CONNECTED  # the bot keeps going


async def test_local_chat_uses_its_own_channel(familiar: Familiar, fake_llm: FakeLLM) -> None:
    fake_llm.script("I am right here.")
    line = await familiar.chat_local("where are you?")
    assert line.content == "I am right here."
    assert line.from_familiar
    history = await familiar.load_local_history()
    assert [(h.author, h.content) for h in history] == [("You", "where are you?"), ("Wisp", "I am right here.")]
    assert "private test chat" in fake_llm.requests[0].messages[0]["content"]
    with pytest.raises(FamiliarError, match="Type a message"):
        await familiar.chat_local("   ")


async def test_index_health_is_published_as_events(familiar: Familiar, fake_llm: FakeLLM) -> None:
    reports: list[IndexHealthReport] = []
    familiar.subscribe(lambda e: reports.append(e) if isinstance(e, IndexHealthReport) else None)
    await familiar.chat_local("remember the lantern")
    await familiar.history.turns_index.flush(5)
    turns = [r for r in reports if r.name == "turns"]
    assert turns
    assert turns[-1].commits >= 1
    assert turns[-1].lag == 0
    assert {h.name for h in familiar.index_health()} == {"turns", "facts"}


async def test_without_an_os_keyring_the_familiar_says_where_secrets_go(familiar: Familiar) -> None:
    location = familiar.secrets_location
    assert "secrets.toml" in location
    assert "no OS keyring" in location


async def test_a_reply_discord_refuses_is_reported_in_the_window(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """A missing Send Messages permission: the owner must act, so it reaches the banner, not only the log."""
    events: list[RuntimeEvent] = []
    familiar.subscribe(events.append)
    await familiar.start()
    fake_discord.muted_channels.add(GENERAL)
    fake_llm.script("You will not see this.")
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="can you hear me?", mentions_bot=True
    )
    await fake_discord.wait_until(lambda: any(isinstance(e, FailureReported) for e in events), what="a failure")
    failure = next(e.message for e in events if isinstance(e, FailureReported))
    assert failure.startswith("Discord refused the reply (403)")
    assert "Missing Permissions" in failure
    assert fake_discord.posted == []
