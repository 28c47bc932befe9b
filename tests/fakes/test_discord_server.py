"""Conformance tests: the real, unmodified discord.py client against FakeDiscord.

Every test fails on an ``on_error`` call, on an ERROR record from the ``discord`` logger, on a route
the fake does not handle and on an exception inside the fake.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import traceback
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import discord
import pytest
import pytest_asyncio
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from tests.fakes.discord_server import (
    CORRUPT_ZLIB_FRAME,
    READ_MESSAGE_HISTORY,
    VIEW_CHANNEL,
    FakeDiscord,
    PostedMessage,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(15)]

GUILD = 10
GENERAL = 11
RANDOM = 12
ALICE = 500
BOT_ID = 1000
STEP = 2.0  # timeout of every single wait


class RecordingClient(discord.Client):
    """A discord.Client that records its events and fails loudly through ``errors``."""

    def __init__(self, *, message_content: bool = True, members: bool = False) -> None:
        intents = discord.Intents.default()
        intents.message_content = message_content
        intents.members = members
        super().__init__(intents=intents, guild_ready_timeout=0.1)
        self.events: list[tuple[str, Any]] = []
        self.errors: list[str] = []
        self.on_message_hook: Callable[[discord.Message], Awaitable[None]] | None = None
        self._changed = asyncio.Event()

    def _record(self, name: str, value: Any) -> None:
        self.events.append((name, value))
        self._changed.set()
        self._changed = asyncio.Event()

    def seen(self, name: str) -> list[Any]:
        return [value for event, value in self.events if event == name]

    async def wait_event(self, name: str, predicate: Callable[[Any], bool] = lambda _: True) -> Any:
        async with asyncio.timeout(STEP):
            while True:
                changed = self._changed
                for value in self.seen(name):
                    if predicate(value):
                        return value
                await changed.wait()

    async def on_ready(self) -> None:
        self._record("ready", None)

    async def on_resumed(self) -> None:
        self._record("resumed", None)

    async def on_guild_join(self, guild: discord.Guild) -> None:
        self._record("guild_join", guild)

    async def on_message(self, message: discord.Message) -> None:
        self._record("message", message)
        assert self.user is not None
        if self.on_message_hook is not None and message.author.id != self.user.id:
            await self.on_message_hook(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        self._record("raw_message_edit", payload)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        self._record("raw_message_delete", payload)

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        self.errors.append(f"{event_method}: {traceback.format_exc()}")


def has_id(wanted: int) -> Callable[[Any], bool]:
    return lambda event: bool(event.id == wanted)


class RecordingShardedClient(RecordingClient, discord.AutoShardedClient):
    """Sharded variant: asks GET /gateway/bot and sends ``shard`` in IDENTIFY."""


class ErrorRecords(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True)
def discord_error_logs() -> Iterator[ErrorRecords]:
    handler = ErrorRecords()
    logger = logging.getLogger("discord")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
    assert [f"{r.name}: {r.getMessage()}" for r in handler.records] == []


@asynccontextmanager
async def serve(**kwargs: Any) -> AsyncIterator[FakeDiscord]:
    """Start a FakeDiscord and point discord.py at it; restore the class attributes afterwards."""
    fake = FakeDiscord(**kwargs)
    await fake.start()
    old_base, old_gateway = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = fake.api_base
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)
    try:
        yield fake
        assert fake.unhandled == []
        assert fake.errors == []
    finally:
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = old_base, old_gateway
        await fake.close()


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with serve() as server:
        server.add_user(ALICE, "alice")
        server.add_guild(GUILD, "Test Guild", {GENERAL: "general", RANDOM: "random"})
        yield server


@asynccontextmanager
async def running(
    fake: FakeDiscord, client: RecordingClient | None = None, *, message_content: bool = True
) -> AsyncIterator[RecordingClient]:
    """A RecordingClient logged in to ``fake`` and past on_ready."""
    client = client or RecordingClient(message_content=message_content)
    task = asyncio.create_task(client.start(fake.token))
    ready = asyncio.create_task(client.wait_event("ready"))
    try:
        await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            ready.cancel()
            task.result()
            raise AssertionError("client.start() returned before on_ready")
        ready.result()
        yield client
    finally:
        ready.cancel()
        await client.close()
        async with asyncio.timeout(STEP):
            await task
    assert client.errors == []


async def test_login_ready_exposes_user_guilds_and_channels(fake: FakeDiscord) -> None:
    async with running(fake) as client:
        assert client.user is not None
        assert (client.user.id, client.user.name, client.user.bot) == (BOT_ID, "Familiar", True)
        assert client.application_id == BOT_ID
        guild = client.get_guild(GUILD)
        assert guild is not None
        assert guild.name == "Test Guild"
        assert [c.name for c in guild.text_channels] == ["general", "random"]
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        assert guild.me is not None
        assert channel.permissions_for(guild.me).send_messages
        await fake.wait_for_identify(STEP)
        await fake.wait_for_delivered(STEP)
        assert fake.identify_count == 1
        assert fake.resume_count == 0
        # Login is exactly two REST calls; the gateway is reached directly, zlib-stream compressed.
        assert fake.requests == ["GET /api/v10/users/@me", "GET /api/v10/oauth2/applications/@me"]
        assert fake.gateway_queries == [{"v": "10", "encoding": "json", "compress": "zlib-stream"}]


async def test_message_in_reply_out_and_bot_sees_its_own_message(fake: FakeDiscord) -> None:
    async def reply(message: discord.Message) -> None:
        async with message.channel.typing():
            await message.reply(f"echo: {message.content}")

    async with running(fake) as client:
        client.on_message_hook = reply
        incoming_id = await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="hello")
        [post] = await fake.wait_for_posted(1)
        assert (post.channel_id, post.content) == (GENERAL, "echo: hello")
        assert post.message_reference is not None
        assert int(post.message_reference["message_id"]) == incoming_id
        await fake.wait_for_typing(1, STEP)
        assert fake.typing_events == [GENERAL]

        incoming = await client.wait_event("message", lambda m: m.id == incoming_id)
        assert isinstance(incoming.author, discord.Member)
        assert incoming.author.name == "alice"
        assert incoming.content == "hello"
        assert incoming.guild.id == GUILD

        own = await client.wait_event("message", lambda m: m.id == post.message_id)
        assert client.user is not None
        assert own.author.id == client.user.id
        assert own.reference.message_id == incoming_id
        assert own.reference.resolved.content == "hello"
        assert post.message_id != incoming_id
        assert post.message_id > 1 << 22


async def test_user_edit_and_delete_fire_raw_events(fake: FakeDiscord) -> None:
    async with running(fake) as client:
        mid = await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="first")
        await client.wait_event("message", lambda m: m.id == mid)
        await fake.edit_message(mid, "second")
        edit = await client.wait_event("raw_message_edit", lambda p: p.message_id == mid)
        assert edit.data["content"] == "second"
        assert edit.message.content == "second"
        assert edit.cached_message is not None
        assert edit.cached_message.content == "first"
        await fake.delete_message(mid)
        delete = await client.wait_event("raw_message_delete", lambda p: p.message_id == mid)
        assert (delete.channel_id, delete.guild_id) == (GENERAL, GUILD)


async def test_bot_edits_and_deletes_its_own_message(fake: FakeDiscord) -> None:
    async def draft_then_delete(message: discord.Message) -> None:
        sent = await message.channel.send("draft")
        await sent.edit(content="final")
        await sent.delete()

    async with running(fake) as client:
        client.on_message_hook = draft_then_delete
        await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="go")
        await fake.wait_until(lambda: len(fake.bot_deletes) == 1, STEP, "bot delete")
        [post] = fake.posted
        assert [e.content for e in fake.bot_edits] == ["final"]
        assert fake.bot_deletes == [post.message_id]
        edit = await client.wait_event("raw_message_edit", lambda p: p.message_id == post.message_id)
        assert edit.data["content"] == "final"
        await client.wait_event("raw_message_delete", lambda p: p.message_id == post.message_id)


async def test_wrong_token_raises_login_failure(fake: FakeDiscord) -> None:
    client = RecordingClient()
    try:
        with pytest.raises(discord.LoginFailure):
            await client.start("not-the-token")
    finally:
        await client.close()
    assert fake.identify_count == 0
    assert fake.rejected == ["GET /api/v10/users/@me: 401 0 401: Unauthorized"]


async def test_wrong_token_at_identify_closes_4004(fake: FakeDiscord) -> None:
    client = RecordingClient()
    try:
        await client.login(fake.token)
        client.http.token = "revoked-token"  # the token became invalid between login and IDENTIFY
        with pytest.raises(discord.ConnectionClosed) as closed:
            await client.connect()
        assert closed.value.code == 4004
    finally:
        await client.close()
    assert fake.identify_count == 0


async def test_disallowed_message_content_intent_raises_privileged_intents_required() -> None:
    async with serve(allow_message_content=False) as fake:
        client = RecordingClient(message_content=True)
        try:
            with pytest.raises(discord.PrivilegedIntentsRequired):
                async with asyncio.timeout(STEP):
                    await client.start(fake.token)
        finally:
            await client.close()
        assert fake.identify_count == 0


async def test_content_is_filtered_without_message_content_intent() -> None:
    async with serve(allow_message_content=False) as fake:
        fake.add_user(ALICE, "alice")
        fake.add_guild(GUILD, "Test Guild", {GENERAL: "general"})
        dm = fake.add_dm(ALICE)

        async def reply_to_mention(message: discord.Message) -> None:
            if message.guild is not None and message.content:
                await message.channel.send(f"you said {message.content!r}")

        async with running(fake, message_content=False) as client:
            client.on_message_hook = reply_to_mention
            plain = await fake.send_message(
                channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="secret", embeds=[{"title": "t"}]
            )
            mention = await fake.send_message(
                channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content=f"<@{BOT_ID}> hi"
            )
            direct = await fake.send_message(channel_id=dm, author_id=ALICE, content="in a dm")
            got: dict[int, discord.Message] = {}
            for mid in (plain, mention, direct):
                got[mid] = await client.wait_event("message", has_id(mid))
            assert (got[plain].content, got[plain].embeds) == ("", [])
            assert got[mention].content == f"<@{BOT_ID}> hi"
            assert client.user is not None
            assert got[mention].mentions == [client.user]
            assert got[direct].content == "in a dm"
            [post] = await fake.wait_for_posted(1)
            own = await client.wait_event("message", has_id(post.message_id))
            assert own.content == f"you said '<@{BOT_ID}> hi'"  # the bot's own messages are never emptied


async def test_close_4000_resumes_and_replays_missed_events_once(fake: FakeDiscord) -> None:
    async def reply(message: discord.Message) -> None:
        await message.channel.send(f"re: {message.content}")

    async with running(fake) as client:
        client.on_message_hook = reply
        before = await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="before")
        await client.wait_event("message", lambda m: m.id == before)
        await fake.wait_for_posted(1)

        await fake.close_gateway(4000)
        missed = await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="missed")
        await fake.wait_for_resume(STEP)
        await client.wait_event("resumed")
        await client.wait_event("message", lambda m: m.id == missed)
        after = await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="after")
        await client.wait_event("message", lambda m: m.id == after)

        ids = [m.id for m in client.seen("message")]
        assert (ids.count(before), ids.count(missed), ids.count(after)) == (1, 1, 1)
        assert (fake.identify_count, fake.resume_count) == (1, 1)
        assert fake.replayed_frames >= 1
        posts = await fake.wait_for_posted(3)
        assert [p.content for p in posts] == ["re: before", "re: missed", "re: after"]


async def test_dm_message_reply_and_dm_channel_routes(fake: FakeDiscord) -> None:
    dm = fake.add_dm(ALICE)

    async def reply(message: discord.Message) -> None:
        await message.channel.send("dm reply")

    async with running(fake) as client:
        client.on_message_hook = reply
        mid = await fake.send_message(channel_id=dm, author_id=ALICE, content="hi bot")
        incoming = await client.wait_event("message", lambda m: m.id == mid)
        assert isinstance(incoming.channel, discord.DMChannel)
        assert incoming.guild is None
        [post] = await fake.wait_for_posted(1)
        assert (post.channel_id, post.content) == (dm, "dm reply")

        user = await client.fetch_user(ALICE)
        assert user.name == "alice"
        channel = await user.create_dm()
        assert channel.id == dm
        fetched = await client.fetch_channel(dm)
        assert isinstance(fetched, discord.DMChannel)
        assert fetched.recipient is not None
        assert fetched.recipient.id == ALICE


async def test_rich_payloads_through_the_real_client(fake: FakeDiscord) -> None:
    async with running(fake) as client:
        first = await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="question")
        second = await fake.send_message(
            channel_id=GENERAL,
            guild_id=GUILD,
            author_id=ALICE,
            content="with embed",
            reply_to=first,
            embeds=[{"type": "rich", "title": "T", "description": "D"}],
            mentions_bot=True,
        )
        msg = await client.wait_event("message", lambda m: m.id == second)
        assert msg.embeds[0].title == "T"
        assert msg.reference.resolved.content == "question"
        assert client.user is not None
        assert client.user in msg.mentions

        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        sent = await channel.send("file", file=discord.File(io.BytesIO(b"abc"), filename="a.txt"))
        assert sent.attachments[0].filename == "a.txt"
        assert sent.attachments[0].size == 3
        with_embed = await channel.send(embed=discord.Embed(title="card"))
        assert with_embed.embeds[0].title == "card"
        assert [(p.content, p.files) for p in fake.posted] == [("file", [("a.txt", b"abc")]), ("", [])]
        assert fake.posted[1].embeds[0]["title"] == "card"

        fetched = await channel.fetch_message(second)
        assert fetched.content == "with embed"
        history = [m.id async for m in channel.history(limit=10)]
        assert history == [with_embed.id, sent.id, second, first]
        assert isinstance(await client.fetch_channel(GENERAL), discord.TextChannel)

        await client.change_presence(activity=discord.Game("testing"))
        await fake.wait_until(lambda: len(fake.presence_updates) == 1, STEP, "presence update")

        fake.add_guild(20, "Second Guild", {21: "lobby"})
        joined = await client.wait_event("guild_join")
        assert joined.id == 20
        assert [c.name for c in joined.text_channels] == ["lobby"]


async def test_rejects_messages_discord_would_reject(fake: FakeDiscord) -> None:
    async with running(fake) as client:
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        with pytest.raises(discord.HTTPException) as too_long:
            await channel.send("x" * 2001)
        assert too_long.value.code == 50035
        assert fake.posted == []
        assert len(fake.rejected) == 1


async def test_rest_content_type_auth_and_unhandled_routes(fake: FakeDiscord) -> None:
    auth = {"Authorization": f"Bot {fake.token}"}
    async with aiohttp.ClientSession() as http:
        async with http.get(fake.api_base + "/users/@me", headers=auth) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"] == "application/json"
            assert (await resp.json())["id"] == str(BOT_ID)
        async with http.get(fake.api_base + "/users/@me", headers={"Authorization": "Bot nope"}) as resp:
            assert resp.status == 401
            assert set(await resp.json()) == {"message", "code"}
        async with http.post(fake.api_base + f"/channels/{GENERAL}/typing", headers=auth) as resp:
            assert resp.status == 204
        async with http.get(fake.api_base + "/nothing/here", headers=auth) as resp:
            assert resp.status == 404
    assert fake.unhandled == ["GET /api/v10/nothing/here"]
    fake.unhandled.clear()


async def test_raw_gateway_plain_text_identify_and_4004(fake: FakeDiscord) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(fake.gateway_url + "?v=10&encoding=json") as ws:
            hello = await ws.receive_json(timeout=STEP)
            assert hello["op"] == 10
            assert hello["d"]["heartbeat_interval"] > 0
            await ws.send_json({"op": 1, "d": None})
            assert (await ws.receive_json(timeout=STEP))["op"] == 11
            await ws.send_json({"op": 2, "d": {"token": "bad", "intents": 513, "properties": {}}})
            closing = await ws.receive(timeout=STEP)
            assert closing.type is aiohttp.WSMsgType.CLOSE
            assert closing.data == 4004

        async with http.ws_connect(fake.gateway_url + "?v=10&encoding=json&compress=zlib-stream") as ws:
            inflate = zlib.decompressobj()

            async def receive() -> dict[str, Any]:
                msg = await ws.receive(timeout=STEP)
                assert msg.type is aiohttp.WSMsgType.BINARY
                assert msg.data.endswith(b"\x00\x00\xff\xff")
                result: dict[str, Any] = json.loads(inflate.decompress(msg.data))
                return result

            assert (await receive())["op"] == 10
            await ws.send_json({"op": 2, "d": {"token": fake.token, "intents": 513, "properties": {}}})
            ready, guild = await receive(), await receive()
            assert (ready["t"], ready["s"], guild["t"], guild["s"]) == ("READY", 1, "GUILD_CREATE", 2)
            assert ready["d"]["resume_gateway_url"] == fake.gateway_url
            assert ready["d"]["guilds"] == [{"id": str(GUILD), "unavailable": True}]
    assert fake.identify_count == 1


async def test_sharded_client_and_member_chunking() -> None:
    async with serve(allow_members=True) as fake:
        fake.add_user(ALICE, "alice")
        fake.add_guild(GUILD, "Test Guild", {GENERAL: "general"})
        async with running(fake, RecordingShardedClient(members=True)) as client:
            assert fake.requests[-1] == "GET /api/v10/gateway/bot"
            guild = client.get_guild(GUILD)
            assert guild is not None
            assert guild.chunked
            assert guild.shard_id == 0
            async with asyncio.timeout(STEP):
                members = await guild.chunk()
            assert sorted(m.id for m in members) == [ALICE, BOT_ID]


async def test_resume_of_unknown_session_is_invalidated(fake: FakeDiscord) -> None:
    async with aiohttp.ClientSession() as http, http.ws_connect(fake.gateway_url + "?v=10&encoding=json") as ws:
        assert (await ws.receive_json(timeout=STEP))["op"] == 10
        await ws.send_json({"op": 6, "d": {"token": fake.token, "session_id": "nope", "seq": 3}})
        assert await ws.receive_json(timeout=STEP) == {"op": 9, "d": False, "s": None, "t": None}
    assert fake.resume_count == 0


# -- channel history, permissions, lost sessions and hooks (what a catch-up after downtime needs) ----


async def test_history_pages_before_and_after_through_the_real_client(fake: FakeDiscord) -> None:
    # Said while no bot was connected: kept, and only the history has it. Two are backdated.
    old = datetime.now(UTC) - timedelta(days=3)
    older_ids = [
        await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content=f"old {n}", at=old)
        for n in range(2)
    ]
    ids = [
        await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content=f"m{n}")
        for n in range(230)
    ]
    await fake.send_message(channel_id=RANDOM, guild_id=GUILD, author_id=ALICE, content="elsewhere")
    assert older_ids[0] < older_ids[1] < ids[0]  # backdated ids sort by their time, and stay unique
    async with running(fake) as client:
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        newest_first = [m.id async for m in channel.history(limit=None)]
        assert newest_first == [*reversed(ids), *reversed(older_ids)]
        assert [m.id async for m in channel.history(limit=150, after=discord.Object(ids[9]))] == ids[10:160]
        after_newest_first = [
            m.id async for m in channel.history(limit=None, after=discord.Object(ids[9]), oldest_first=False)
        ]
        assert after_newest_first == list(reversed(ids[10:]))
        assert [m.id async for m in channel.history(limit=5, before=discord.Object(ids[5]))] == [
            ids[4],
            ids[3],
            ids[2],
            ids[1],
            ids[0],
        ]
        since = datetime.now(UTC) - timedelta(hours=1)
        recent = [m async for m in channel.history(limit=None, after=since)]
        assert [m.content for m in recent] == [f"m{n}" for n in range(230)]
        assert recent[0].created_at > since
    pages = [q for cid, q in fake.history_queries if cid == GENERAL]
    assert all(1 <= int(q["limit"]) <= 100 for q in pages)
    auth = {"Authorization": f"Bot {fake.token}"}
    url = fake.api_base + f"/channels/{GENERAL}/messages?limit=101"
    async with aiohttp.ClientSession() as http, http.get(url, headers=auth) as resp:
        assert resp.status == 400
        assert (await resp.json())["code"] == 50035


async def test_denied_history_is_visible_to_the_client_and_enforced(fake: FakeDiscord) -> None:
    await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="secret")
    await fake.send_message(channel_id=RANDOM, guild_id=GUILD, author_id=ALICE, content="hidden")
    fake.deny_everyone(GENERAL, READ_MESSAGE_HISTORY)
    fake.deny_everyone(RANDOM, VIEW_CHANNEL)
    async with running(fake) as client:
        guild = client.get_guild(GUILD)
        assert guild is not None
        general, random = client.get_channel(GENERAL), client.get_channel(RANDOM)
        assert isinstance(general, discord.TextChannel)
        assert isinstance(random, discord.TextChannel)
        mine = general.permissions_for(guild.me)
        assert (mine.view_channel, mine.read_message_history) == (True, False)
        assert not random.permissions_for(guild.me).view_channel
        assert [m async for m in general.history(limit=10)] == []  # as Discord: no history, no error
        with pytest.raises(discord.Forbidden) as refused:
            [m async for m in random.history(limit=10)]
        assert refused.value.code == 50001
    fake.rejected.clear()


async def test_a_dropped_session_cannot_resume_and_loses_its_events(fake: FakeDiscord) -> None:
    class QuickClient(RecordingClient):
        async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
            return None  # discord.py waits 5 s before a second IDENTIFY; the fake needs no pause

    async with running(fake, QuickClient()) as client:
        await fake.drop_session()
        lost = await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="lost")
        await fake.wait_for_identify(STEP, count=2)
        await fake.wait_for_delivered(STEP)
        await client.wait_event("ready", lambda _: len(client.seen("ready")) == 2)  # a new session's READY
        kept = await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="kept")
        await client.wait_event("message", has_id(kept))
        assert lost not in [m.id for m in client.seen("message")]
        assert (fake.identify_count, fake.resume_count) == (2, 0)
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        assert [m.id async for m in channel.history(limit=10)] == [kept, lost]  # the history still has it


async def test_hooks_see_a_post_before_it_is_answered_and_a_history_page_before_it_is_sent(
    fake: FakeDiscord,
) -> None:
    first = await fake.send_message(channel_id=GENERAL, guild_id=GUILD, author_id=ALICE, content="first")
    seen: list[tuple[str, object]] = []

    async def on_post(post: PostedMessage) -> None:
        seen.append(("post", post.content))

    async def on_history(channel_id: int, ids: list[int]) -> None:
        seen.append(("history", (channel_id, ids)))
        await fake.delete_message(first)  # deleted after the page was read: the page still has it

    fake.on_post = on_post
    fake.on_history = on_history
    async with running(fake) as client:
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        await channel.send("hello")
        assert [m.content async for m in channel.history(limit=1, before=discord.Object(first + 1))] == ["first"]
        await client.wait_event("raw_message_delete", lambda e: e.message_id == first)
    assert seen == [("post", "hello"), ("history", (GENERAL, [first]))]


@pytest.mark.parametrize(("allow", "expected"), [(True, True), (False, False)])
async def test_application_flags_say_whether_the_message_content_intent_is_allowed(
    allow: bool,
    expected: bool,
) -> None:
    async with serve(allow_message_content=allow) as fake:
        client = RecordingClient()
        try:
            await client.login(fake.token)
            info = await client.application_info()  # the real client's own reading of the flags
        finally:
            await client.close()
        assert info.id == BOT_ID
        assert info.flags.gateway_message_content_limited is expected
        assert info.flags.gateway_message_content is False
        assert info.flags.gateway_guild_members_limited is False

        fake.application_flags = 0  # a compatible server whose flags do not follow its intents
        client = RecordingClient()
        try:
            await client.login(fake.token)
            assert (await client.application_info()).flags.value == 0
        finally:
            await client.close()


async def test_route_and_global_429s_are_what_discord_py_retries(fake: FakeDiscord) -> None:
    async with running(fake) as client:
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        # A route's limit: discord.py sleeps the body's retry_after and tries again (five tries in all).
        fake.rate_limit(2, 0.01, channel_id=GENERAL)
        await channel.send("after two 429s")
        assert fake.rate_limited == [f"POST /api/v10/channels/{GENERAL}/messages"] * 2
        # Only that channel's messages: typing and other channels are not limited.
        fake.rate_limit(1, 0.01, channel_id=GENERAL)
        await channel.typing()
        random = client.get_channel(RANDOM)
        assert isinstance(random, discord.TextChannel)
        await random.send("elsewhere")
        assert len(fake.rate_limited) == 2
        fake.rate_limits.clear()
        # Five in a row and discord.py gives up: the 429 and its headers reach the caller.
        fake.rate_limit(5, 0.01)
        with pytest.raises(discord.HTTPException) as refused:
            await channel.send("never sent")
        assert refused.value.status == 429
        headers = refused.value.response.headers
        assert (headers["Via"], headers["Retry-After"]) == ("1.1 google", "1")
        assert headers["X-RateLimit-Reset-After"] == "0.010"
        # The global limit: every request, typing too, and discord.py holds every request meanwhile.
        fake.rate_limit(2, 0.01, is_global=True)
        await channel.typing()
        await channel.send("after the global limit")
        assert fake.rate_limited[-2:] == [f"POST /api/v10/channels/{GENERAL}/typing"] * 2
        fake.rate_limit(5, 0.01, is_global=True)
        with pytest.raises(discord.HTTPException) as globally:
            await channel.send("never sent")
        assert (globally.value.status, globally.value.response.headers["X-RateLimit-Global"]) == (429, "true")
        assert "X-RateLimit-Reset-After" not in globally.value.response.headers
        assert [p.content for p in fake.posted] == ["after two 429s", "elsewhere", "after the global limit"]


@pytest.mark.parametrize("accepted", [True, False])
async def test_a_post_reset_after_or_before_it_is_accepted(fake: FakeDiscord, accepted: bool) -> None:
    async with running(fake) as client:
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        fake.reset_next_post(accepted=accepted)
        with pytest.raises((aiohttp.ClientError, OSError)):  # the answer never comes (a reset, not a FIN)
            await channel.send("lost on the way", nonce="n-1")
        assert fake.resets == ["accepted" if accepted else "refused"]
        assert [p.content for p in fake.posted] == (["lost on the way"] if accepted else [])
        history = [m async for m in channel.history(limit=5)]
        assert [(m.content, m.nonce) for m in history] == ([("lost on the way", None)] if accepted else [])
        if accepted:  # the gateway's echo carries the nonce; what is read back never does (as on Discord)
            echo = await client.wait_event("message", lambda m: m.content == "lost on the way")
            assert echo.nonce == "n-1"
        # The next POST is answered again.
        assert (await channel.send("answered")).content == "answered"


async def test_enforce_nonce_returns_the_message_the_nonce_made(fake: FakeDiscord) -> None:
    async with running(fake) as client:
        channel = client.get_channel(GENERAL)
        assert isinstance(channel, discord.TextChannel)
        first = await channel.send("once", nonce="same")  # discord.py always sends enforce_nonce
        again = await channel.send("once", nonce="same")
        other = await channel.send("once", nonce="other")
        assert first.id == again.id != other.id
        assert first.nonce == "same"
        assert [p.content for p in fake.posted] == ["once", "once"]
        assert fake.nonce_hits == 1


BAD_FRAMES: dict[str, Callable[[FakeDiscord], Awaitable[None]]] = {
    "not JSON": lambda fake: fake.send_raw_frame("<html>502</html>", plain=True),
    "truncated JSON": lambda fake: fake.send_raw_frame('{"op":0,"t":"MESS'),
    "corrupt zlib": lambda fake: fake.send_raw_frame(CORRUPT_ZLIB_FRAME),
    "MESSAGE_CREATE without channel_id": lambda fake: fake.dispatch_raw("MESSAGE_CREATE", {"id": "1"}),
}


@pytest.mark.parametrize("kind", list(BAD_FRAMES))
async def test_a_bad_frame_ends_an_unguarded_client(fake: FakeDiscord, kind: str) -> None:
    """Why the app reads frames through app/runtime/discord/frames.py: discord.py as it comes lets one
    unreadable frame after READY end `start()` (reconnect=True notwithstanding)."""
    client = RecordingClient()
    task = asyncio.create_task(client.start(fake.token))
    try:
        await client.wait_event("ready")
        await BAD_FRAMES[kind](fake)
        async with asyncio.timeout(STEP):
            with pytest.raises((ValueError, zlib.error, KeyError)):
                await task
    finally:
        await client.close()
        if not task.done():
            task.cancel()
