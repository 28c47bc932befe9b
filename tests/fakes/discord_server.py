"""A wire-level fake Discord (REST + gateway) for driving the real discord.py client.

The unmodified client is pointed at the fake through two class attributes::

    discord.http.Route.BASE = fake.api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(fake.gateway_url)

Protocol facts (content type, close codes, READY/GUILD_CREATE keys, RESUME replay) follow
shared/notes/discord-fake-server.md, checked against discord.py 2.7.1.  Every JSON payload the fake
emits is built by the ``build_*`` functions in the "Payload builders" section below.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import json
import math
import re
import socket
import struct
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import BodyPartReader, WSMsgType, web

JSON = dict[str, Any]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

API_PREFIX = "/api/v10"
DISCORD_EPOCH_MS = 1_420_070_400_000
HEARTBEAT_INTERVAL_MS = 41_250
APP_OWNER_ID = 100
MAX_CONTENT_LENGTH = 2000

# Gateway intents (https://discord.com/developers/docs/events/gateway#gateway-intents).
INTENT_GUILDS = 1 << 0
INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_PRESENCES = 1 << 8
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15

# Application flags: a privileged intent switched on in the Developer Portal, for a bot in fewer than
# 100 servers (https://discord.com/developers/docs/resources/application#application-object-application-flags).
APP_FLAG_PRESENCE_LIMITED = 1 << 13
APP_FLAG_GUILD_MEMBERS_LIMITED = 1 << 15
APP_FLAG_MESSAGE_CONTENT_LIMITED = 1 << 19

VIEW_CHANNEL = 1 << 10
READ_MESSAGE_HISTORY = 1 << 16

# Permissions granted to @everyone in every fake guild.
EVERYONE_PERMISSIONS = (
    (1 << 6)  # ADD_REACTIONS
    | VIEW_CHANNEL
    | (1 << 11)  # SEND_MESSAGES
    | (1 << 14)  # EMBED_LINKS
    | (1 << 15)  # ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | (1 << 31)  # USE_APPLICATION_COMMANDS
    | (1 << 38)  # SEND_MESSAGES_IN_THREADS
)

# Exceptions that mean a bug in the fake (or a malformed request): recorded in FakeDiscord.errors.
FAKE_BUGS = (KeyError, ValueError, TypeError, AttributeError, IndexError, AssertionError)

# A BINARY frame no zlib stream can decompress ("invalid block type"); it ends in the Z_SYNC_FLUSH
# suffix, so the client decompresses it at once.
CORRUPT_ZLIB_FRAME = b"\xff\xff\xff\xff\x00\x00\xff\xff"

# Gateway opcodes.
OP_DISPATCH, OP_HEARTBEAT, OP_IDENTIFY, OP_PRESENCE = 0, 1, 2, 3
OP_RESUME, OP_REQUEST_MEMBERS, OP_INVALID_SESSION, OP_HELLO, OP_HEARTBEAT_ACK = 6, 8, 9, 10, 11


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


# --------------------------------------------------------------------------------------------------
# Payload builders: every JSON object sent over REST or the gateway is made here.
# --------------------------------------------------------------------------------------------------


def build_user(user_id: int, name: str, *, bot: bool = False) -> JSON:
    return {
        "id": str(user_id),
        "username": name,
        "discriminator": "0",
        "global_name": None if bot else name,
        "avatar": None,
        "bot": bot,
        "system": False,
        "public_flags": 0,
    }


def build_current_user(user: JSON) -> JSON:
    """``GET /users/@me`` and READY ``user``."""
    return {**user, "verified": True, "mfa_enabled": False, "email": None, "locale": "en-US", "flags": 0}


def build_application(bot: JSON, owner: JSON, flags: int = 0) -> JSON:
    """``GET /oauth2/applications/@me``; ``flags`` carries the privileged intents switched on."""
    return {
        "id": bot["id"],
        "name": bot["username"],
        "description": "",
        "icon": None,
        "bot_public": False,
        "bot_require_code_grant": False,
        "owner": owner,
        "verify_key": "0" * 64,
        "flags": flags,
        "team": None,
        "bot": bot,
    }


def build_everyone_role(guild_id: int) -> JSON:
    return {
        "id": str(guild_id),  # @everyone shares the guild's id
        "name": "@everyone",
        "permissions": str(EVERYONE_PERMISSIONS),
        "position": 0,
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": False,
        "icon": None,
        "unicode_emoji": None,
        "flags": 0,
    }


def build_permission_overwrite(target_id: int, allow: int, deny: int) -> JSON:
    """A role overwrite (type 0); @everyone's role id is the guild id."""
    return {"id": str(target_id), "type": 0, "allow": str(allow), "deny": str(deny)}


def build_guild_channel(channel_id: int, guild_id: int, name: str, position: int, denied: int = 0) -> JSON:
    return {
        "id": str(channel_id),
        "type": 0,
        "guild_id": str(guild_id),
        "name": name,
        "position": position,
        "permission_overwrites": [build_permission_overwrite(guild_id, 0, denied)] if denied else [],
        "parent_id": None,
        "topic": None,
        "nsfw": False,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "flags": 0,
    }


def build_dm_channel(channel_id: int, recipient: JSON) -> JSON:
    return {"id": str(channel_id), "type": 1, "recipients": [recipient], "last_message_id": None, "flags": 0}


def build_partial_member(joined_at: str) -> JSON:
    """The ``member`` of a guild MESSAGE_CREATE (no ``user`` key)."""
    return {
        "roles": [],
        "joined_at": joined_at,
        "nick": None,
        "avatar": None,
        "premium_since": None,
        "deaf": False,
        "mute": False,
        "pending": False,
        "flags": 0,
        "communication_disabled_until": None,
    }


def build_member(user: JSON, joined_at: str) -> JSON:
    return {**build_partial_member(joined_at), "user": user}


def build_guild_create(
    guild_id: int, name: str, channels: list[JSON], members: list[JSON], member_count: int, joined_at: str
) -> JSON:
    return {
        "id": str(guild_id),
        "name": name,
        "icon": None,
        "splash": None,
        "discovery_splash": None,
        "banner": None,
        "description": None,
        "owner_id": str(APP_OWNER_ID),
        "afk_channel_id": None,
        "afk_timeout": 300,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
        "premium_tier": 0,
        "premium_subscription_count": 0,
        "premium_progress_bar_enabled": False,
        "preferred_locale": "en-US",
        "features": [],
        "application_id": None,
        "system_channel_id": None,
        "system_channel_flags": 0,
        "rules_channel_id": None,
        "public_updates_channel_id": None,
        "vanity_url_code": None,
        "max_members": 500_000,
        "joined_at": joined_at,
        "large": False,
        "lazy": True,
        "member_count": member_count,
        "roles": [build_everyone_role(guild_id)],
        "channels": channels,
        "members": members,
        "emojis": [],
        "stickers": [],
        "threads": [],
        "voice_states": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
    }


def build_ready(user: JSON, guild_ids: list[int], session_id: str, resume_url: str, shard: list[int] | None) -> JSON:
    ready: JSON = {
        "v": 10,
        "user": user,
        "guilds": [{"id": str(gid), "unavailable": True} for gid in guild_ids],
        "session_id": session_id,
        "session_type": "normal",
        "resume_gateway_url": resume_url,
        "application": {"id": user["id"], "flags": 0},
        "private_channels": [],
        "relationships": [],
        "presences": [],
        "user_settings": {},
        "_trace": ["fake-discord"],
    }
    if shard is not None:
        ready["shard"] = shard
    return ready


def build_attachment(attachment_id: int, filename: str, size: int, url: str, content_type: str | None) -> JSON:
    return {
        "id": str(attachment_id),
        "filename": filename,
        "size": size,
        "url": url,
        "proxy_url": url,
        "content_type": content_type,
        "flags": 0,
    }


def build_message(
    *,
    message_id: int,
    channel_id: int,
    guild_id: int | None,
    author: JSON,
    member: JSON | None,
    content: str,
    mentions: list[JSON],
    embeds: list[JSON],
    attachments: list[JSON],
    reference: JSON | None,
    referenced: JSON | None,
    nonce: str | int | None = None,
    timestamp: str | None = None,
) -> JSON:
    """A full message object: REST replies, MESSAGE_CREATE and (with ``edited_timestamp``) MESSAGE_UPDATE."""
    msg: JSON = {
        "id": str(message_id),
        "channel_id": str(channel_id),
        "type": 19 if reference is not None else 0,
        "content": content,
        "author": author,
        "timestamp": timestamp or now_iso(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions,
        "mention_roles": [],
        "attachments": attachments,
        "embeds": embeds,
        "components": [],
        "pinned": False,
        "flags": 0,
    }
    if guild_id is not None:
        msg["guild_id"] = str(guild_id)
        if member is not None:
            msg["member"] = member
    if nonce is not None:
        msg["nonce"] = nonce
    if reference is not None:
        msg["message_reference"] = reference
        if referenced is not None:
            referenced = {k: v for k, v in referenced.items() if k != "referenced_message"}
        msg["referenced_message"] = referenced
    return msg


def build_message_reference(message_id: int, channel_id: int, guild_id: int | None) -> JSON:
    ref: JSON = {"type": 0, "message_id": str(message_id), "channel_id": str(channel_id)}
    if guild_id is not None:
        ref["guild_id"] = str(guild_id)
    return ref


def build_message_delete(message_id: int, channel_id: int, guild_id: int | None) -> JSON:
    data: JSON = {"id": str(message_id), "channel_id": str(channel_id)}
    if guild_id is not None:
        data["guild_id"] = str(guild_id)
    return data


def build_members_chunk(guild_id: int, members: list[JSON], nonce: str | None) -> JSON:
    return {"guild_id": str(guild_id), "members": members, "chunk_index": 0, "chunk_count": 1, "nonce": nonce}


def build_hello() -> JSON:
    return {"op": OP_HELLO, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS, "_trace": ["fake-discord"]}}


def build_heartbeat_ack() -> JSON:
    return {"op": OP_HEARTBEAT_ACK, "d": None, "s": None, "t": None}


def build_invalid_session() -> JSON:
    return {"op": OP_INVALID_SESSION, "d": False, "s": None, "t": None}


def build_gateway_bot(url: str) -> JSON:
    limit = {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}
    return {"url": url, "shards": 1, "session_start_limit": limit}


def build_error(message: str, code: int) -> JSON:
    return {"message": message, "code": code}


def build_rate_limited(retry_after: float, *, is_global: bool) -> JSON:
    """The body of a 429 (https://discord.com/developers/docs/topics/rate-limits#exceeding-a-rate-limit)."""
    return {"message": "You are being rate limited.", "retry_after": retry_after, "global": is_global, "code": 0}


def rate_limit_headers(retry_after: float, *, is_global: bool) -> dict[str, str]:
    """A 429's headers as Discord sends them: ``Via`` (without it discord.py takes the 429 for a Cloudflare
    ban and does not retry), ``Retry-After`` in whole seconds; a route's limit also says
    ``X-RateLimit-Reset-After`` to the millisecond, the global one ``X-RateLimit-Global``."""
    headers = {
        "Content-Type": "application/json",
        "Via": "1.1 google",
        "Retry-After": str(math.ceil(retry_after)),
        "X-RateLimit-Scope": "global" if is_global else "user",
    }
    if is_global:
        headers["X-RateLimit-Global"] = "true"
    else:
        headers["X-RateLimit-Reset-After"] = f"{retry_after:.3f}"
    return headers


def _stored(msg: JSON) -> JSON:
    """A message as Discord keeps it: the nonce is only in the create answer and MESSAGE_CREATE, never
    in what is read back (history, GET message)."""
    return {k: v for k, v in msg.items() if k != "nonce"}


# --------------------------------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------------------------------


@dataclass
class PostedMessage:
    """A message the bot created with ``POST /channels/{id}/messages`` (``at`` is ``time.monotonic()``)."""

    channel_id: int
    content: str
    message_id: int
    message_reference: JSON | None
    at: float
    embeds: list[JSON] = field(default_factory=list)
    files: list[tuple[str, bytes]] = field(default_factory=list)
    payload: JSON = field(default_factory=dict)


@dataclass
class RateLimit:
    """Requests the fake answers 429 (see ``FakeDiscord.rate_limit``)."""

    count: int | None  # how many more; None: until removed from ``FakeDiscord.rate_limits``
    retry_after: float
    is_global: bool
    channel_id: int | None

    def applies(self, method: str, path: str) -> bool:
        if self.count == 0:
            return False
        if self.is_global:
            return True  # Discord's global limit: every request of the bot
        if method != "POST" or not re.fullmatch(API_PREFIX + r"/channels/\d+/messages", path):
            return False
        return self.channel_id is None or path.split("/")[-2] == str(self.channel_id)


@dataclass
class _Channel:
    channel_id: int
    guild_id: int | None
    name: str
    position: int = 0
    recipient_id: int | None = None  # DM channels only
    denied: int = 0  # permissions an overwrite denies @everyone (the bot included) here


@dataclass
class _Guild:
    guild_id: int
    name: str
    channel_ids: list[int]
    joined_at: str


class _Connection:
    """One gateway websocket; zlib-stream compressed (one compressor per connection) when asked."""

    def __init__(self, ws: web.WebSocketResponse, compress: bool) -> None:
        self.ws = ws
        self._zlib = zlib.compressobj() if compress else None
        self._lock = asyncio.Lock()

    async def send(self, payload: JSON) -> None:
        await self.send_text(json.dumps(payload, separators=(",", ":")))

    async def send_text(self, raw: str, *, plain: bool = False) -> None:
        """``raw`` as one frame: through the connection's zlib stream as BINARY when it is compressed,
        else (or when ``plain``) as TEXT, which the client accepts on any connection."""
        async with self._lock:
            if self._zlib is None or plain:
                await self.ws.send_str(raw)
            else:
                data = self._zlib.compress(raw.encode()) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
                await self.ws.send_bytes(data)

    async def send_raw_bytes(self, data: bytes) -> None:
        """``data`` as one BINARY frame, outside the zlib stream."""
        async with self._lock:
            await self.ws.send_bytes(data)


@dataclass
class _Session:
    session_id: str
    intents: int
    frames: list[JSON] = field(default_factory=list)  # frames[i] has "s" == i + 1
    delivered: int = 0  # highest seq sent on the current connection
    conn: _Connection | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def seq(self) -> int:
        return len(self.frames)


class _GatewayClose(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code} {reason}")
        self.code = code
        self.reason = reason


class FakeDiscord:
    def __init__(
        self,
        *,
        token: str = "test-token",
        bot_id: int = 1000,
        bot_name: str = "Familiar",
        allow_message_content: bool = True,
        allow_members: bool = False,
        allow_presences: bool = False,
    ) -> None:
        self.token = token
        self.bot_id = bot_id
        self.bot_name = bot_name
        self.allowed_privileged = (
            (INTENT_MESSAGE_CONTENT if allow_message_content else 0)
            | (INTENT_GUILD_MEMBERS if allow_members else 0)
            | (INTENT_GUILD_PRESENCES if allow_presences else 0)
        )
        # None: the application's flags say which privileged intents are allowed, as on Discord; an int is
        # sent as it is (a Discord-compatible server whose flags do not follow its intents).
        self.application_flags: int | None = None
        self.posted: list[PostedMessage] = []
        self.bot_edits: list[PostedMessage] = []  # PATCHes of the bot's own messages
        self.bot_deletes: list[int] = []  # ids of messages the bot DELETEd
        self.typing_events: list[int] = []
        self.unhandled: list[str] = []  # "METHOD path" of routes (or "GATEWAY op N") the fake does not know
        self.errors: list[str] = []  # exceptions inside the fake itself: tests should assert it stays empty
        self.rejected: list[str] = []  # requests answered 4xx on purpose (bad token, empty or too long message)
        self.muted_channels: set[int] = set()  # where the bot lacks Send Messages: posts get 403 50013
        self.requests: list[str] = []  # every REST "METHOD path"
        self.gateway_queries: list[dict[str, str]] = []  # query string of every gateway connection
        self.presence_updates: list[JSON] = []
        self.history_queries: list[tuple[int, dict[str, str]]] = []  # (channel id, query) of each history GET
        # Awaited inside ``POST /channels/{id}/messages`` once the message exists, before it is
        # dispatched and answered: a test can kill the client there (a reply sent, never confirmed).
        self.on_post: Callable[[PostedMessage], Awaitable[None]] | None = None
        # Awaited inside ``GET /channels/{id}/messages`` with the ids of the page, before answering.
        self.on_history: Callable[[int, list[int]], Awaitable[None]] | None = None
        # Requests to answer 429 (``rate_limit``), and the "METHOD path" of each request answered so.
        self.rate_limits: list[RateLimit] = []
        self.rate_limited: list[str] = []
        # What to do with each coming message POST (``reset_next_post``): None answer it; True reset its
        # TCP connection once the message is created and dispatched (the answer lost), False before.
        self._resets: list[bool | None] = []
        self.resets: list[str] = []  # "accepted" / "refused" for each POST reset so far
        self._nonces: dict[tuple[int, str], int] = {}  # (channel id, nonce) -> id of the bot's message with it
        self.nonce_hits = 0  # POSTs answered with the message their nonce already made (enforce_nonce)
        self.identify_count = 0
        self.resume_count = 0
        self.replayed_frames = 0  # frames re-sent because a RESUME asked for them
        self._users: dict[int, JSON] = {bot_id: build_user(bot_id, bot_name, bot=True)}
        self._guilds: dict[int, _Guild] = {}
        self._channels: dict[int, _Channel] = {}
        self._dms: dict[int, int] = {}  # user id -> DM channel id
        self._messages: dict[int, JSON] = {}
        self._channel_ids: dict[int, list[int]] = {}  # channel id -> its message ids, ascending
        self._sessions: dict[str, _Session] = {}
        self._conns: list[_Connection] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_id = 0
        self._change = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # ---- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        @web.middleware
        async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
            return await self._api_middleware(request, handler)

        app = web.Application(middlewares=[middleware])
        r = app.router
        api = API_PREFIX
        r.add_get("/", self._gateway)
        r.add_get(api + "/gateway", self._get_gateway)
        r.add_get(api + "/gateway/bot", self._get_gateway)
        r.add_get(api + "/users/@me", self._get_me)
        r.add_get(api + r"/users/{user_id:\d+}", self._get_user)
        r.add_post(api + "/users/@me/channels", self._create_dm)
        r.add_get(api + "/oauth2/applications/@me", self._get_application)
        r.add_get(api + r"/channels/{channel_id:\d+}", self._get_channel)
        r.add_post(api + r"/channels/{channel_id:\d+}/typing", self._typing)
        r.add_get(api + r"/channels/{channel_id:\d+}/messages", self._history)
        r.add_post(api + r"/channels/{channel_id:\d+}/messages", self._post_message)
        r.add_get(api + r"/channels/{channel_id:\d+}/messages/{message_id:\d+}", self._get_message)
        r.add_patch(api + r"/channels/{channel_id:\d+}/messages/{message_id:\d+}", self._patch_message)
        r.add_delete(api + r"/channels/{channel_id:\d+}/messages/{message_id:\d+}", self._delete_message)
        r.add_route("*", "/{tail:.*}", self._unknown_route)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def close(self) -> None:
        for conn in list(self._conns):
            await conn.ws.close(code=1001, message=b"fake server shutting down")
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeDiscord.start() has not been awaited")
        return self._port

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}{API_PREFIX}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    # ---- world setup -----------------------------------------------------------------------------

    def add_user(self, user_id: int, name: str, *, bot: bool = False) -> None:
        """Known users are members of every guild (sent in GUILD_CREATEs made after this call)."""
        self._users[user_id] = build_user(user_id, name, bot=bot)

    def add_guild(self, guild_id: int, name: str, channels: dict[int, str]) -> None:
        """Text channels ``{id: name}``. After login the guild is dispatched as GUILD_CREATE (guild_join)."""
        self._guilds[guild_id] = _Guild(guild_id, name, list(channels), now_iso())
        for position, (channel_id, channel_name) in enumerate(channels.items()):
            self._channels[channel_id] = _Channel(channel_id, guild_id, channel_name, position)
        if self._sessions:
            self._dispatch_soon("GUILD_CREATE", self._guild_payload(guild_id))

    def deny_everyone(self, channel_id: int, permissions: int) -> None:
        """An overwrite denying ``permissions`` to @everyone (the bot too) in a guild channel, e.g.
        VIEW_CHANNEL or READ_MESSAGE_HISTORY. Sent in GUILD_CREATEs made after this call; the history
        route honours it at once (403 Missing Access without VIEW_CHANNEL, an empty page without
        READ_MESSAGE_HISTORY, as Discord answers)."""
        channel = self._channels[channel_id]
        if channel.guild_id is None:
            raise ValueError("overwrites exist in guild channels only")
        channel.denied |= permissions

    def add_dm(self, user_id: int) -> int:
        """The DM channel between the bot and a known user (created once); returns its id."""
        if user_id not in self._users:
            raise KeyError(f"unknown user {user_id}: call add_user() first")
        if user_id not in self._dms:
            channel_id = self._snowflake()
            self._channels[channel_id] = _Channel(channel_id, None, "", recipient_id=user_id)
            self._dms[user_id] = channel_id
        return self._dms[user_id]

    # ---- events from "other users" ---------------------------------------------------------------

    async def send_message(
        self,
        *,
        channel_id: int,
        author_id: int,
        content: str,
        guild_id: int | None = None,
        mentions_bot: bool = False,
        reply_to: int | None = None,
        embeds: list[JSON] | None = None,
        at: datetime | None = None,
    ) -> int:
        """Dispatch MESSAGE_CREATE from ``author_id``; ``guild_id=None`` means a DM channel (``add_dm``).

        The bot counts as mentioned when ``mentions_bot`` is set or ``content`` contains ``<@bot_id>``.
        ``at`` backdates the message (its id and timestamp), for history said long ago. With no
        session connected the message is only kept, as Discord keeps what is said while a bot is off.
        """
        channel = self._channels.get(channel_id)
        if channel is None or channel.guild_id != guild_id:
            raise KeyError(f"channel {channel_id} does not exist in guild {guild_id}")
        author = self._users.get(author_id)
        if author is None:
            raise KeyError(f"unknown user {author_id}: call add_user() first")
        # As Discord does: every <@id> of a known user in the text is a mention.
        mentioned_ids = {int(uid) for uid in re.findall(r"<@!?(\d+)>", content) if int(uid) in self._users}
        if mentions_bot:
            mentioned_ids.add(self.bot_id)
        msg = self._make_message(
            channel=channel,
            author=author,
            content=content,
            mentions=[self._users[uid] for uid in sorted(mentioned_ids)],
            embeds=embeds or [],
            attachments=[],
            reply_to=reply_to,
            at=at,
        )
        await self._dispatch("MESSAGE_CREATE", msg)
        return int(msg["id"])

    async def edit_message(self, message_id: int, content: str) -> None:
        msg = self._messages[message_id] = {
            **self._messages[message_id],
            "content": content,
            "edited_timestamp": now_iso(),
        }
        await self._dispatch("MESSAGE_UPDATE", msg)

    async def delete_message(self, message_id: int) -> None:
        msg = self._forget_message(message_id)
        guild_id = int(msg["guild_id"]) if "guild_id" in msg else None
        await self._dispatch("MESSAGE_DELETE", build_message_delete(message_id, int(msg["channel_id"]), guild_id))

    async def delete_messages(self, message_ids: list[int]) -> None:
        """A moderator's bulk delete (MESSAGE_DELETE_BULK) of messages in one channel."""
        msgs = [self._forget_message(mid) for mid in message_ids]
        channel_ids = {int(m["channel_id"]) for m in msgs}
        if len(channel_ids) != 1:
            raise ValueError("a bulk delete is in one channel")
        data: JSON = {"ids": [str(mid) for mid in message_ids], "channel_id": str(channel_ids.pop())}
        if "guild_id" in msgs[0]:
            data["guild_id"] = msgs[0]["guild_id"]
        await self._dispatch("MESSAGE_DELETE_BULK", data)

    @property
    def open_connections(self) -> int:
        """Gateway websockets currently open."""
        return len(self._conns)

    async def close_gateway(self, code: int = 4000) -> None:
        """Close the newest gateway connection with ``code``; events dispatched from now on are
        buffered for the session and replayed when the client RESUMEs."""
        if not self._conns:
            raise RuntimeError("no open gateway connection")
        conn = self._conns[-1]
        for session in self._sessions.values():
            if session.conn is conn:
                session.conn = None
        await conn.ws.close(code=code, message=b"closed by FakeDiscord.close_gateway")

    async def drop_session(self) -> None:
        """Close the newest gateway connection and forget its session, so the client's RESUME is
        answered INVALID_SESSION and it must IDENTIFY anew (discord.py waits 5 s first). Events from
        now until the new READY reach no session: they are lost, as on Discord, and only the
        channel history still has the messages."""
        if not self._conns:
            raise RuntimeError("no open gateway connection")
        conn = self._conns[-1]
        for session_id in [sid for sid, s in self._sessions.items() if s.conn is conn]:
            del self._sessions[session_id]
        await conn.ws.close(code=4000, message=b"session dropped by FakeDiscord.drop_session")

    # ---- misbehaviour on purpose ----------------------------------------------------------------

    def rate_limit(
        self, count: int | None, retry_after: float, *, channel_id: int | None = None, is_global: bool = False
    ) -> RateLimit:
        """Answer the next ``count`` message POSTs (to ``channel_id`` only, if given) 429 with
        ``retry_after`` seconds, as a route's limit is; with ``is_global``, the next ``count`` requests of
        any kind (typing too), as Discord's global limit is. ``count=None``: until the returned limit is
        removed from ``rate_limits``."""
        limit = RateLimit(count, retry_after, is_global, channel_id)
        self.rate_limits.append(limit)
        return limit

    def reset_next_post(self, *, accepted: bool = True, after: int = 0) -> None:
        """Reset the TCP connection of the next message POST (or the one after ``after`` more) instead
        of answering it: once the message is created and dispatched (``accepted``: the client never
        learns it was sent), or before."""
        self._resets.extend([None] * after + [accepted])

    async def send_raw_frame(self, frame: str | bytes, *, plain: bool = False) -> None:
        """One frame as it is on the newest gateway connection, outside any session's sequence (never
        replayed): text through the connection's zlib stream (or, ``plain``, as a TEXT frame); bytes as
        a BINARY frame outside the stream (corrupt data breaks the client's zlib stream for good)."""
        if not self._conns:
            raise RuntimeError("no open gateway connection")
        conn = self._conns[-1]
        if isinstance(frame, bytes):
            await conn.send_raw_bytes(frame)
        else:
            await conn.send_text(frame, plain=plain)

    async def dispatch_raw(self, event: str, data: Any) -> None:
        """Dispatch ``data`` as ``event`` to every session as it is, with no builder and no intent filter:
        a malformed payload, as a faulty Discord-compatible server sends. It takes a sequence number
        and is replayed on RESUME like any event."""
        for session in list(self._sessions.values()):
            self._append(session, event, copy.deepcopy(data))
            await self._flush(session)

    def _reset(self, request: web.Request, *, accepted: bool) -> web.Response:
        """Reset the request's TCP connection (RST, not FIN): the client gets no answer at all."""
        transport = request.transport
        assert transport is not None
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
        self.resets.append("accepted" if accepted else "refused")
        return web.Response(status=204)  # never reaches the client

    # ---- waiting ---------------------------------------------------------------------------------

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            change = self._change
            if predicate():
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(
                    f"FakeDiscord: no {what} within {timeout}s (identify={self.identify_count}, "
                    f"resume={self.resume_count}, posted={len(self.posted)}, unhandled={self.unhandled}, "
                    f"errors={self.errors}, rejected={self.rejected})"
                )
            try:
                async with asyncio.timeout(remaining):
                    await change.wait()
            except TimeoutError:
                pass

    async def wait_for_posted(self, n: int, timeout: float = 5.0) -> list[PostedMessage]:
        await self.wait_until(lambda: len(self.posted) >= n, timeout, f"{n} bot post(s)")
        return list(self.posted)

    async def wait_for_identify(self, timeout: float = 5.0, *, count: int = 1) -> None:
        await self.wait_until(lambda: self.identify_count >= count, timeout, f"IDENTIFY #{count}")

    async def wait_for_resume(self, timeout: float = 5.0, *, count: int = 1) -> None:
        await self.wait_until(lambda: self.resume_count >= count, timeout, f"RESUME #{count}")

    async def wait_for_typing(self, n: int = 1, timeout: float = 5.0) -> None:
        await self.wait_until(lambda: len(self.typing_events) >= n, timeout, f"{n} typing call(s)")

    async def wait_for_delivered(self, timeout: float = 5.0) -> None:
        """Until some session is connected and has been sent every frame buffered for it."""

        def delivered() -> bool:
            return any(s.conn is not None and s.delivered == s.seq for s in self._sessions.values())

        await self.wait_until(delivered, timeout, "connected session with all events delivered")

    def _notify(self) -> None:
        self._change.set()
        self._change = asyncio.Event()

    # ---- internals: ids, messages, payloads -------------------------------------------------------

    def _snowflake(self, at: datetime | None = None) -> int:
        if at is not None:  # a backdated id: unique, never moves the clock of new ids
            candidate = (int(at.timestamp() * 1000) - DISCORD_EPOCH_MS) << 22
            while candidate in self._messages:
                candidate += 1
            return candidate
        candidate = (int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22
        self._last_id = max(candidate, self._last_id + 1)
        return self._last_id

    def _make_message(
        self,
        *,
        channel: _Channel,
        author: JSON,
        content: str,
        mentions: list[JSON],
        embeds: list[JSON],
        attachments: list[JSON],
        reply_to: int | None,
        nonce: str | int | None = None,
        at: datetime | None = None,
    ) -> JSON:
        reference = None
        referenced = None
        if reply_to is not None:
            reference = build_message_reference(reply_to, channel.channel_id, channel.guild_id)
            referenced = self._messages.get(reply_to)
        member = None
        if channel.guild_id is not None:
            member = build_partial_member(self._guilds[channel.guild_id].joined_at)
        msg = build_message(
            message_id=self._snowflake(at),
            channel_id=channel.channel_id,
            guild_id=channel.guild_id,
            author=author,
            member=member,
            content=content,
            mentions=mentions,
            embeds=embeds,
            attachments=attachments,
            reference=reference,
            referenced=referenced,
            nonce=nonce,
            timestamp=at.isoformat() if at is not None else None,
        )
        self._messages[int(msg["id"])] = msg
        bisect.insort(self._channel_ids.setdefault(channel.channel_id, []), int(msg["id"]))
        return msg

    def _forget_message(self, message_id: int) -> JSON:
        msg = self._messages.pop(message_id)
        self._channel_ids[int(msg["channel_id"])].remove(message_id)
        return msg

    def _channel_payload(self, channel: _Channel) -> JSON:
        if channel.guild_id is None:
            assert channel.recipient_id is not None
            return build_dm_channel(channel.channel_id, self._users[channel.recipient_id])
        return build_guild_channel(channel.channel_id, channel.guild_id, channel.name, channel.position, channel.denied)

    def _guild_payload(self, guild_id: int) -> JSON:
        guild = self._guilds[guild_id]
        members = [build_member(user, guild.joined_at) for user in self._users.values()]
        channels = [self._channel_payload(self._channels[cid]) for cid in guild.channel_ids]
        return build_guild_create(guild_id, guild.name, channels, members, len(members), guild.joined_at)

    def _owner_payload(self) -> JSON:
        return self._users.get(APP_OWNER_ID, build_user(APP_OWNER_ID, "owner"))

    # ---- internals: dispatch with per-session buffers -------------------------------------------

    def _filter_for(self, session: _Session, event: str, data: JSON) -> JSON | None:
        """What Discord would send this session for ``event`` (None = not sent), honouring intents."""
        intents = session.intents
        if event in ("MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE", "MESSAGE_DELETE_BULK"):
            in_guild = "guild_id" in data
            if not intents & (INTENT_GUILD_MESSAGES if in_guild else INTENT_DIRECT_MESSAGES):
                return None
            if not event.startswith("MESSAGE_DELETE") and in_guild and not intents & INTENT_MESSAGE_CONTENT:
                own = int(data["author"]["id"]) == self.bot_id
                mentioned = any(int(u["id"]) == self.bot_id for u in data.get("mentions", []))
                if not (own or mentioned):
                    data = {**data, "content": "", "embeds": [], "attachments": [], "components": []}
        elif event == "GUILD_CREATE":
            if not intents & INTENT_GUILDS:
                return None
            if not intents & INTENT_GUILD_MEMBERS:
                data = {**data, "members": [m for m in data["members"] if int(m["user"]["id"]) == self.bot_id]}
        return copy.deepcopy(data)

    def _append(self, session: _Session, event: str, data: JSON) -> None:
        session.frames.append({"op": OP_DISPATCH, "t": event, "s": session.seq + 1, "d": data})

    def _queue_dispatch(self, event: str, data: JSON) -> list[_Session]:
        targets = []
        for session in self._sessions.values():
            filtered = self._filter_for(session, event, data)
            if filtered is not None:
                self._append(session, event, filtered)
                targets.append(session)
        return targets

    async def _dispatch(self, event: str, data: JSON) -> None:
        for session in self._queue_dispatch(event, data):
            await self._flush(session)

    def _dispatch_soon(self, event: str, data: JSON) -> None:
        for session in self._queue_dispatch(event, data):
            self._spawn(self._flush(session))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.errors.append(f"background task: {task.exception()!r}")

    async def _flush(self, session: _Session) -> None:
        """Send the session every buffered frame after ``delivered``, in order, on its connection."""
        async with session.lock:
            while session.conn is not None and session.delivered < session.seq:
                conn = session.conn
                frame = session.frames[session.delivered]
                try:
                    await conn.send(frame)
                except (ConnectionError, RuntimeError):
                    if session.conn is conn:
                        session.conn = None
                    break
                session.delivered = frame["s"]
        self._notify()

    # ---- gateway ---------------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.gateway_queries.append(dict(request.query))
        conn = _Connection(ws, compress=request.query.get("compress") == "zlib-stream")
        self._conns.append(conn)
        session: _Session | None = None
        try:
            if request.query.get("encoding", "json") != "json":
                raise _GatewayClose(4002, "Only encoding=json is supported by FakeDiscord.")
            await conn.send(build_hello())
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    raise _GatewayClose(4002, f"Unexpected frame type {msg.type!r}.")
                session = await self._on_gateway_payload(conn, session, json.loads(msg.data))
                self._notify()
        except _GatewayClose as close:
            await ws.close(code=close.code, message=close.reason.encode())
        except ConnectionError:
            pass
        except FAKE_BUGS as exc:  # a bug in the fake: make it visible
            self.errors.append(f"gateway: {exc!r}")
            await ws.close(code=1011)
        finally:
            self._conns.remove(conn)
            for s in self._sessions.values():
                if s.conn is conn:
                    s.conn = None
            self._notify()
        return ws

    async def _on_gateway_payload(self, conn: _Connection, session: _Session | None, payload: JSON) -> _Session | None:
        op = payload.get("op")
        d: Any = payload.get("d")
        if op == OP_HEARTBEAT:
            await conn.send(build_heartbeat_ack())
            return session
        if op == OP_IDENTIFY:
            if session is not None:
                raise _GatewayClose(4005, "Already authenticated.")
            return await self._identify(conn, d)
        if op == OP_RESUME:
            return await self._resume(conn, d)
        if session is None:
            raise _GatewayClose(4003, "Not authenticated.")
        if op == OP_PRESENCE:
            self.presence_updates.append(d)
        elif op == OP_REQUEST_MEMBERS:
            guild_id = int(d["guild_id"])
            members = self._guild_payload(guild_id)["members"]
            self._append(session, "GUILD_MEMBERS_CHUNK", build_members_chunk(guild_id, members, d.get("nonce")))
            await self._flush(session)
        else:
            self.unhandled.append(f"GATEWAY op {op}")
        return session

    async def _identify(self, conn: _Connection, d: JSON) -> _Session:
        if d.get("token") != self.token:
            raise _GatewayClose(4004, "Authentication failed.")
        intents = int(d.get("intents", 0))
        privileged = INTENT_GUILD_MEMBERS | INTENT_GUILD_PRESENCES | INTENT_MESSAGE_CONTENT
        if intents & privileged & ~self.allowed_privileged:
            raise _GatewayClose(4014, "Disallowed intent(s).")
        self.identify_count += 1
        session = _Session(session_id=uuid.uuid4().hex, intents=intents, conn=conn)
        self._sessions[session.session_id] = session
        me = build_current_user(self._users[self.bot_id])
        ready = build_ready(me, list(self._guilds), session.session_id, self.gateway_url, d.get("shard"))
        self._append(session, "READY", ready)
        for guild_id in self._guilds:
            data = self._filter_for(session, "GUILD_CREATE", self._guild_payload(guild_id))
            if data is not None:
                self._append(session, "GUILD_CREATE", data)
        await self._flush(session)
        return session

    async def _resume(self, conn: _Connection, d: JSON) -> _Session | None:
        session = self._sessions.get(str(d.get("session_id")))
        if session is None or d.get("token") != self.token:
            await conn.send(build_invalid_session())
            return None
        self.resume_count += 1
        async with session.lock:
            session.conn = conn
            session.delivered = min(int(d.get("seq") or 0), session.seq)
            self.replayed_frames += session.seq - session.delivered
        self._append(session, "RESUMED", {"_trace": ["fake-discord"]})
        await self._flush(session)
        return session

    # ---- REST ------------------------------------------------------------------------------------

    @staticmethod
    def _json(data: JSON | list[JSON], status: int = 200) -> web.Response:
        # Exactly "application/json": web.json_response adds "; charset=utf-8", which discord.py rejects.
        return web.Response(status=status, body=json.dumps(data).encode(), headers={"Content-Type": "application/json"})

    def _reject(self, request: web.Request, status: int, message: str, code: int) -> web.Response:
        self.rejected.append(f"{request.method} {request.path}: {status} {code} {message}")
        return self._json(build_error(message, code), status)

    async def _api_middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX + "/"):
            return await handler(request)
        self.requests.append(f"{request.method} {request.path}")
        if request.headers.get("Authorization") != f"Bot {self.token}":
            return self._reject(request, 401, "401: Unauthorized", 0)
        for limit in self.rate_limits:
            if limit.applies(request.method, request.path):
                if limit.count is not None:
                    limit.count -= 1
                self.rate_limited.append(f"{request.method} {request.path}")
                self._notify()
                body = json.dumps(build_rate_limited(limit.retry_after, is_global=limit.is_global)).encode()
                headers = rate_limit_headers(limit.retry_after, is_global=limit.is_global)
                return web.Response(status=429, body=body, headers=headers)
        try:
            return await handler(request)
        except FAKE_BUGS as exc:  # a bug in the fake; 4xx so discord.py does not retry for seconds
            self.errors.append(f"{request.method} {request.path}: {exc!r}")
            return self._json(build_error(f"FakeDiscord error: {exc!r}", 0), 400)
        finally:
            self._notify()

    async def _unknown_route(self, request: web.Request) -> web.StreamResponse:
        self.unhandled.append(f"{request.method} {request.path}")
        return self._json(build_error("404: Not Found", 0), 404)

    def _find_channel(self, request: web.Request) -> _Channel | None:
        return self._channels.get(int(request.match_info["channel_id"]))

    def _find_message(self, request: web.Request) -> JSON | None:
        msg = self._messages.get(int(request.match_info["message_id"]))
        if msg is None or msg["channel_id"] != request.match_info["channel_id"]:
            return None
        return msg

    async def _get_gateway(self, request: web.Request) -> web.Response:
        return self._json(build_gateway_bot(self.gateway_url))

    async def _get_me(self, request: web.Request) -> web.Response:
        return self._json(build_current_user(self._users[self.bot_id]))

    async def _get_user(self, request: web.Request) -> web.Response:
        user = self._users.get(int(request.match_info["user_id"]))
        if user is None:
            return self._reject(request, 404, "Unknown User", 10013)
        return self._json(user)

    async def _get_application(self, request: web.Request) -> web.Response:
        flags = self.application_flags
        if flags is None:
            allowed = self.allowed_privileged
            flags = (
                (APP_FLAG_MESSAGE_CONTENT_LIMITED if allowed & INTENT_MESSAGE_CONTENT else 0)
                | (APP_FLAG_GUILD_MEMBERS_LIMITED if allowed & INTENT_GUILD_MEMBERS else 0)
                | (APP_FLAG_PRESENCE_LIMITED if allowed & INTENT_GUILD_PRESENCES else 0)
            )
        return self._json(build_application(self._users[self.bot_id], self._owner_payload(), flags))

    async def _create_dm(self, request: web.Request) -> web.Response:
        user_id = int((await request.json())["recipient_id"])
        if user_id not in self._users:
            return self._reject(request, 400, "Invalid Recipient(s)", 50033)
        return self._json(self._channel_payload(self._channels[self.add_dm(user_id)]))

    async def _get_channel(self, request: web.Request) -> web.Response:
        channel = self._find_channel(request)
        if channel is None:
            return self._reject(request, 404, "Unknown Channel", 10003)
        return self._json(self._channel_payload(channel))

    async def _typing(self, request: web.Request) -> web.Response:
        channel = self._find_channel(request)
        if channel is None:
            return self._reject(request, 404, "Unknown Channel", 10003)
        self.typing_events.append(channel.channel_id)
        return web.Response(status=204)

    async def _history(self, request: web.Request) -> web.Response:
        """``GET /channels/{id}/messages``: ``limit`` 1-100 (default 50); ``before`` gives the newest
        messages older than it, ``after`` the oldest ones newer than it; always newest first."""
        channel = self._find_channel(request)
        if channel is None:
            return self._reject(request, 404, "Unknown Channel", 10003)
        q = request.query
        self.history_queries.append((channel.channel_id, dict(q)))
        if "around" in q:
            self.unhandled.append(f"{request.method} {request.path}?around")
            return self._json(build_error("FakeDiscord does not implement around", 0), 400)
        limit = int(q.get("limit", "50"))
        if not 1 <= limit <= 100:
            return self._reject(request, 400, "Invalid Form Body (limit: must be between 1 and 100)", 50035)
        if channel.denied & VIEW_CHANNEL:
            return self._reject(request, 403, "Missing Access", 50001)
        if channel.denied & READ_MESSAGE_HISTORY:
            return self._json([])  # as Discord: the channel is visible, its history is not
        before, after = int(q.get("before", "0")) or None, int(q.get("after", "0")) or None
        ids = self._channel_ids.get(channel.channel_id, [])
        end = bisect.bisect_left(ids, before) if before is not None else len(ids)
        if after is not None:
            start = bisect.bisect_right(ids, after)
            chosen = ids[start : min(end, start + limit)]  # the oldest ones after it
        else:
            chosen = ids[max(0, end - limit) : end]  # the newest ones (before it)
        page = [_stored(self._messages[i]) for i in reversed(chosen)]  # newest first; read now, before the hook
        if self.on_history is not None:
            await self.on_history(channel.channel_id, [int(m["id"]) for m in page])
        return self._json(page)

    async def _get_message(self, request: web.Request) -> web.Response:
        msg = self._find_message(request)
        if msg is None:
            return self._reject(request, 404, "Unknown Message", 10008)
        return self._json(_stored(msg))

    async def _read_message_body(self, request: web.Request) -> tuple[JSON, list[tuple[str, bytes, str | None]]]:
        """JSON body, or multipart ``payload_json`` + ``files[n]`` (as discord.py sends uploads)."""
        if not request.content_type.startswith("multipart/"):
            return await request.json(), []
        body: JSON = {}
        files: list[tuple[str, bytes, str | None]] = []
        async for part in await request.multipart():
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "payload_json":
                body = json.loads(await part.text())
            else:
                data = await part.read()
                files.append((part.filename or "file", bytes(data), part.headers.get("Content-Type")))
        return body, files

    async def _post_message(self, request: web.Request) -> web.Response:
        channel = self._find_channel(request)
        if channel is None:
            return self._reject(request, 404, "Unknown Channel", 10003)
        if channel.channel_id in self.muted_channels:
            return self._reject(request, 403, "Missing Permissions", 50013)
        reset = self._resets.pop(0) if self._resets else None
        if reset is False:
            return self._reset(request, accepted=False)
        body, files = await self._read_message_body(request)
        nonce = body.get("nonce")
        if body.get("enforce_nonce") and nonce is not None:
            # As Discord: the bot's message with this nonce (sent again after a lost answer) is
            # returned, not made twice.
            existing = self._nonces.get((channel.channel_id, str(nonce)))
            if existing is not None and existing in self._messages:
                self.nonce_hits += 1
                return self._json(self._messages[existing])
        content = body.get("content") or ""
        embeds = body.get("embeds") or []
        if not content and not embeds and not files and not body.get("sticker_ids"):
            return self._reject(request, 400, "Cannot send an empty message", 50006)
        if len(content) > MAX_CONTENT_LENGTH:
            return self._reject(request, 400, "Invalid Form Body (content: Must be 2000 or fewer in length.)", 50035)
        ref: JSON | None = body.get("message_reference")
        reply_to = int(ref["message_id"]) if ref else None
        missing = reply_to is not None and reply_to not in self._messages
        if ref and missing and ref.get("fail_if_not_exists", True):
            return self._reject(request, 400, "Invalid Form Body (message_reference: Unknown message)", 50035)
        attachments = []
        for filename, data, content_type in files:
            aid = self._snowflake()
            url = f"http://127.0.0.1:{self.port}/attachments/{channel.channel_id}/{aid}/{filename}"
            attachments.append(build_attachment(aid, filename, len(data), url, content_type))
        mentions = [self._users[int(uid)] for uid in re.findall(r"<@!?(\d+)>", content) if int(uid) in self._users]
        msg = self._make_message(
            channel=channel,
            author=self._users[self.bot_id],
            content=content,
            mentions=mentions,
            embeds=embeds,
            attachments=attachments,
            reply_to=reply_to,
            nonce=nonce,
        )
        if nonce is not None:
            self._nonces[(channel.channel_id, str(nonce))] = int(msg["id"])
        posted = PostedMessage(
            channel_id=channel.channel_id,
            content=content,
            message_id=int(msg["id"]),
            message_reference=ref,
            at=time.monotonic(),
            embeds=embeds,
            files=[(name, data) for name, data, _ in files],
            payload=body,
        )
        self.posted.append(posted)
        if self.on_post is not None:
            await self.on_post(posted)
        await self._dispatch("MESSAGE_CREATE", msg)
        if reset:
            return self._reset(request, accepted=True)
        return self._json(msg)

    async def _patch_message(self, request: web.Request) -> web.Response:
        msg = self._find_message(request)
        if msg is None:
            return self._reject(request, 404, "Unknown Message", 10008)
        if int(msg["author"]["id"]) != self.bot_id:
            return self._reject(request, 403, "Cannot edit a message authored by another user", 50005)
        body, _ = await self._read_message_body(request)
        changes = {k: body[k] for k in ("content", "embeds", "flags") if body.get(k) is not None}
        if len(changes.get("content", "")) > MAX_CONTENT_LENGTH:
            return self._reject(request, 400, "Invalid Form Body (content: Must be 2000 or fewer in length.)", 50035)
        msg = self._messages[int(msg["id"])] = {**msg, **changes, "edited_timestamp": now_iso()}
        self.bot_edits.append(
            PostedMessage(
                channel_id=int(msg["channel_id"]),
                content=msg["content"],
                message_id=int(msg["id"]),
                message_reference=msg.get("message_reference"),
                at=time.monotonic(),
                embeds=msg["embeds"],
                payload=body,
            )
        )
        await self._dispatch("MESSAGE_UPDATE", msg)
        return self._json(msg)

    async def _delete_message(self, request: web.Request) -> web.Response:
        msg = self._find_message(request)
        if msg is None:
            return self._reject(request, 404, "Unknown Message", 10008)
        if int(msg["author"]["id"]) != self.bot_id:
            return self._reject(request, 403, "Missing Permissions", 50013)
        message_id = int(msg["id"])
        self.bot_deletes.append(message_id)
        await self.delete_message(message_id)
        return web.Response(status=204)
