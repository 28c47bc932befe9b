"""The Discord adapter: a discord.py client whose events become calls on the familiar.

Transport (discord.py) stays here; what to do with a message is the familiar's business
(`MessageSink`). Raw edit/delete events are used so uncached messages are handled too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import aiohttp
import discord
import discord.gateway
import discord.http
import yarl

from app.config.settings import DiscordSection
from app.memory.store import MAX_CONTENT_CHARS
from app.runtime.backfill import Backfill, BackfillSink
from app.runtime.errors import FamiliarError
from app.runtime.events import (
    Activity,
    ActivityKind,
    ConnectionChanged,
    ConnectionState,
    FailureReported,
    GuildInfo,
    GuildsChanged,
    LatencyMeasured,
    RuntimeEvent,
)
from app.runtime.messages import IncomingMessage, clip_message, place_for, split_reply

_log = logging.getLogger(__name__)

PORTAL = "https://discord.com/developers/applications"
# The longest a reply waits for the one before it in its channel (or for its message to be stored).
REPLY_WAIT_SECONDS = 600.0


class MessageSink(BackfillSink, Protocol):
    """What the familiar does with Discord traffic."""

    async def on_discord_message(self, message: IncomingMessage) -> None: ...

    async def reply_for(self, message: IncomingMessage) -> str | None:
        """The reply text (None = stay silent). Called inside the typing indicator."""
        ...

    async def on_discord_reply_sent(self, message: IncomingMessage, sent: discord.Message) -> None: ...

    async def on_discord_edit(self, message_id: int, content: str, edited_at: datetime) -> None: ...

    async def on_discord_delete(self, message_id: int) -> None: ...


_MENTION = re.compile(r"<(@[!&]?|#)(\d+)>")


def readable_content(message: discord.Message) -> str:
    """The message text with mentions as people read them: <@123> becomes @alice, <#456> #general.

    A mention that cannot be resolved stays as it was.
    """
    guild = message.guild

    def name(match: re.Match[str]) -> str:
        kind, ident = match.group(1), int(match.group(2))
        found: str | None = None
        if kind in ("@", "@!"):
            user = discord.utils.get(message.mentions, id=ident) or (guild.get_member(ident) if guild else None)
            found = f"@{user.display_name}" if user is not None else None
        elif kind == "@&":
            role = guild.get_role(ident) if guild is not None else None
            found = f"@{role.name}" if role is not None else None
        else:
            channel = guild.get_channel_or_thread(ident) if guild is not None else None
            found = f"#{channel.name}" if channel is not None else None
        return found or match.group(0)

    return _MENTION.sub(name, message.content)


def flatten_message(message: discord.Message) -> str:
    """Message text (mentions by name) plus embeds and components flattened to searchable text."""
    parts = [readable_content(message)] if message.content else []
    for embed in message.embeds:
        line = " — ".join(p for p in (embed.title, embed.description) if p)
        fields = "; ".join(f"{f.name}: {f.value}" for f in embed.fields)
        for piece in (line, fields, embed.footer.text if embed.footer else None):
            if piece:
                parts.append(piece)
    for row in message.components:
        parts.extend(_component_text(row))
    for attachment in message.attachments:
        parts.append(f"[attachment: {attachment.filename}]")
    return "\n".join(parts)


def _component_text(component: Any) -> list[str]:
    out: list[str] = []
    for attr in ("label", "placeholder", "content", "url"):
        value = getattr(component, attr, None)
        if isinstance(value, str) and value:
            out.append(value)
    for child in getattr(component, "children", []) or []:
        out.extend(_component_text(child))
    for option in getattr(component, "options", []) or []:
        label = getattr(option, "label", None)
        if isinstance(label, str) and label:
            out.append(label)
    return out


def explain_start_failure(exc: BaseException, settings: DiscordSection) -> str:
    """One line a user can act on, for anything `login`/`connect` can raise."""
    where = settings.api_base or "Discord"
    if isinstance(exc, discord.LoginFailure):
        return "Discord rejected the bot token. Copy a fresh token from the Developer Portal (Bot > Reset Token)."
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return (
            "Discord refused the Message Content intent. In the Developer Portal, open your application > Bot and "
            "switch on 'Message Content Intent' under Privileged Gateway Intents, then press Start again."
        )
    if isinstance(exc, discord.ConnectionClosed):
        if exc.code == 4004:
            return "Discord rejected the bot token (gateway close 4004). Copy a fresh token from the Developer Portal."
        if exc.code in (4010, 4011, 4012, 4013, 4014):
            return f"Discord closed the connection with code {exc.code} ({exc.reason or 'fatal'})."
        return f"Discord closed the connection (code {exc.code})."
    if isinstance(exc, discord.HTTPException):
        return f"Discord answered {exc.status} while logging in: {exc.text or exc}."
    if isinstance(exc, aiohttp.ClientError | OSError):
        return f"Cannot reach {where} ({' '.join(str(exc).split()) or type(exc).__name__}). Check the network."
    if isinstance(exc, TimeoutError):
        return f"{where} did not finish logging in within the time limit."
    return f"Could not connect to Discord: {type(exc).__name__}: {exc}"


class _Client(discord.Client):
    """discord.Client with the familiar's handlers; never `run()` (that would start a second loop)."""

    def __init__(self, adapter: DiscordAdapter, *, intents: discord.Intents, guild_ready_timeout: float) -> None:
        super().__init__(intents=intents, guild_ready_timeout=guild_ready_timeout)
        self._adapter = adapter

    async def on_ready(self) -> None:
        await self._adapter._on_ready()

    async def on_connect(self) -> None:
        # A new session (READY), never a RESUME: events of the old one may be lost. This handler
        # runs before any of the new session's messages are handled (tasks start in order).
        self._adapter._backfill.session_started()

    async def on_resumed(self) -> None:
        self._adapter._set_state(ConnectionState.CONNECTED, "resumed")

    async def on_disconnect(self) -> None:
        self._adapter._on_disconnect()

    async def on_guild_join(self, _guild: discord.Guild) -> None:
        self._adapter._publish_guilds()

    async def on_guild_remove(self, _guild: discord.Guild) -> None:
        self._adapter._publish_guilds()

    async def on_message(self, message: discord.Message) -> None:
        await self._adapter._on_message(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self._adapter._on_raw_edit(payload)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self._adapter._sink.on_discord_delete(payload.message_id)
        cached = payload.cached_message
        who = f"{cached.author.display_name}'s message" if cached is not None else "a message"
        self._adapter._activity(ActivityKind.DELETE, self._adapter._where(payload.channel_id), f"{who} was deleted")

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        for message_id in payload.message_ids:
            await self._adapter._sink.on_discord_delete(message_id)
        count = len(payload.message_ids)
        self._adapter._activity(
            ActivityKind.DELETE, self._adapter._where(payload.channel_id), f"{count} messages were deleted at once"
        )

    async def on_error(self, event_method: str, /, *_args: Any, **_kwargs: Any) -> None:
        _log.exception("error while handling Discord event %s", event_method)
        self._adapter._activity(ActivityKind.ERROR, "discord", f"error while handling {event_method}")


class DiscordAdapter:
    def __init__(
        self,
        settings: DiscordSection,
        token: str,
        sink: MessageSink,
        publish: Callable[[RuntimeEvent], None],
        *,
        ready_timeout: float = 60.0,
    ) -> None:
        self._settings = settings
        self._token = token
        self._sink = sink
        self._publish = publish
        self._ready_timeout = ready_timeout
        self._client: _Client | None = None
        self._connect_task: asyncio.Task[None] | None = None
        self._latency_task: asyncio.Task[None] | None = None
        self._reply_tasks: set[asyncio.Task[None]] = set()
        self._channel_tails: dict[int, asyncio.Task[None]] = {}  # the last reply queued in each channel
        self._backfill = Backfill(settings, sink, self._incoming, self._activity)
        self._ready = asyncio.Event()
        self._ended = asyncio.Event()
        self._end_error: BaseException | None = None
        self._saved_endpoints: tuple[str, yarl.URL] | None = None
        self.state = ConnectionState.STOPPED
        self.guilds: tuple[GuildInfo, ...] = ()
        self.latency_ms: float | None = None

    @property
    def user_id(self) -> int | None:
        if self._client is None or self._client.user is None:
            return None
        return self._client.user.id

    # -- lifecycle ---------------------------------------------------------------------------
    def _point_at_server(self) -> None:
        """`[discord] api_base` / `gateway_url` point discord.py at a Discord-compatible server."""
        self._saved_endpoints = (discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)
        if self._settings.api_base:
            discord.http.Route.BASE = self._settings.api_base.rstrip("/")
        if self._settings.gateway_url:
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self._settings.gateway_url)

    def _restore_endpoints(self) -> None:
        if self._saved_endpoints is not None:
            discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = self._saved_endpoints
            self._saved_endpoints = None

    async def start(self) -> None:
        """Log in and connect; returns once the familiar is ready in its guilds. Raises FamiliarError."""
        if self._client is not None:
            return
        intents = discord.Intents.default()
        intents.message_content = self._settings.message_content_intent
        self._ready.clear()
        self._point_at_server()
        client = _Client(self, intents=intents, guild_ready_timeout=self._settings.guild_ready_timeout)
        self._client = client
        self._set_state(ConnectionState.CONNECTING, "logging in")
        try:
            await client.login(self._token)
            self._connect_task = asyncio.create_task(client.connect(reconnect=True), name="discord-connect")
            ready = asyncio.create_task(self._ready.wait(), name="discord-ready")
            done, _pending = await asyncio.wait(
                {self._connect_task, ready}, timeout=self._ready_timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if ready not in done:
                ready.cancel()
                if self._connect_task in done:
                    failure = self._connect_task.exception() or RuntimeError("the connection ended")
                    raise failure
                raise TimeoutError("ready")
        except BaseException as exc:
            message = explain_start_failure(exc, self._settings)
            await self._teardown()
            self._set_state(ConnectionState.FAILED, message)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise FamiliarError(message) from exc
        self._connect_task.add_done_callback(self._on_connection_ended)
        self._latency_task = asyncio.create_task(self._watch_latency(), name="discord-latency")

    async def stop(self) -> None:
        await self._teardown()
        self._set_state(ConnectionState.STOPPED, "")

    async def _teardown(self) -> None:
        client, self._client = self._client, None
        await self._backfill.close()
        for task in (self._latency_task, *self._reply_tasks):
            if task is not None:
                task.cancel()
        for task in list(self._reply_tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._reply_tasks.clear()
        self._channel_tails.clear()
        self._latency_task = None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
        if self._connect_task is not None:
            self._connect_task.remove_done_callback(self._on_connection_ended)
            if not self._connect_task.done():
                self._connect_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._connect_task
            self._connect_task = None
        self._restore_endpoints()
        if self.guilds:
            self.guilds = ()
            self._publish(GuildsChanged(guilds=()))
        self.latency_ms = None

    async def wait_closed(self) -> BaseException | None:
        """Wait until the connection ends by itself; returns the error that ended it, if any."""
        await self._ended.wait()
        return self._end_error

    def _on_connection_ended(self, task: asyncio.Task[None]) -> None:
        """connect() ended on its own: a fatal close (revoked token, intent removed) after start."""
        if task.cancelled():
            return
        exc = task.exception()
        self._end_error = exc
        self._ended.set()
        if exc is None:
            self._set_state(ConnectionState.STOPPED, "disconnected")
            return
        message = explain_start_failure(exc, self._settings)
        self._set_state(ConnectionState.FAILED, message)
        self._activity(ActivityKind.ERROR, "discord", message)

    async def _watch_latency(self) -> None:
        """Publish the gateway latency: soon after connecting (the first heartbeat ACK), then every 5 s."""
        while self._client is not None:
            latency = self._client.latency
            if latency == latency and latency != float("inf"):  # not NaN / inf before the first ACK
                self.latency_ms = latency * 1000
                self._publish(LatencyMeasured(milliseconds=self.latency_ms))
            await asyncio.sleep(5.0 if self.latency_ms is not None else 0.1)

    # -- state -------------------------------------------------------------------------------
    def _set_state(self, state: ConnectionState, detail: str) -> None:
        self.state = state
        self._publish(ConnectionChanged(state=state, detail=detail))

    def _activity(self, kind: ActivityKind, where: str, summary: str, place: str | None = None) -> None:
        self._publish(Activity(kind=kind, where=where, summary=summary, place=place))

    async def _on_ready(self) -> None:
        self._publish_guilds()
        self._set_state(ConnectionState.CONNECTED, f"{len(self.guilds)} guild(s)")
        self._ready.set()
        if self._client is not None:
            self._backfill.session_ready(self._client)

    def _on_disconnect(self) -> None:
        if self._client is not None and not self._client.is_closed() and self.state == ConnectionState.CONNECTED:
            self._set_state(ConnectionState.RECONNECTING, "connection lost; resuming")

    def _publish_guilds(self) -> None:
        if self._client is None:
            return
        self.guilds = tuple(
            GuildInfo(id=g.id, name=g.name, member_count=g.member_count or 0)
            for g in sorted(self._client.guilds, key=lambda g: g.name.lower())
        )
        self._publish(GuildsChanged(guilds=self.guilds))

    # -- messages ----------------------------------------------------------------------------
    def _incoming(self, message: discord.Message, place: str | None = None) -> IncomingMessage:
        """The familiar's view of a message; `place` overrides where it was said (a DM's own
        messages, seen in fetched history, belong to the other person's DM)."""
        me = self._client.user if self._client is not None else None
        guild_id = message.guild.id if message.guild is not None else None
        reference = message.reference
        replied = False
        if reference is not None and me is not None:
            resolved = reference.resolved
            replied = isinstance(resolved, discord.Message) and resolved.author.id == me.id
        return IncomingMessage(
            message_id=message.id,
            place=place or place_for(guild_id, message.channel.id, message.author.id),
            guild_id=guild_id,
            channel_id=message.channel.id,
            author_id=message.author.id,
            author_name=message.author.display_name,
            author_is_bot=message.author.bot,
            content=clip_message(flatten_message(message), MAX_CONTENT_CHARS),
            created_at=message.created_at,
            mentions_familiar=me is not None and me.mentioned_in(message) and not message.mention_everyone,
            replies_to_familiar=replied,
            reply_to=reference.message_id if reference is not None else None,
            from_familiar=me is not None and message.author.id == me.id,
            guild_name=message.guild.name if message.guild is not None else None,
            channel_name=getattr(message.channel, "name", None),
        )

    def should_answer(self, incoming: IncomingMessage) -> bool:
        if incoming.author_is_bot and not self._settings.respond_to_bots:
            return False
        if incoming.guild_id is None:
            return self._settings.allow_dms
        return (
            incoming.mentions_familiar
            or incoming.replies_to_familiar
            or incoming.channel_id in self._settings.home_channels
        )

    async def _on_message(self, message: discord.Message) -> None:
        client = self._client
        if client is None or client.user is None or message.author.id == client.user.id:
            return  # our own replies are recorded when sent
        await self._backfill.wait_turn(message.channel.id)
        if self._client is not client:
            return  # stopped while it waited
        incoming = self._incoming(message)
        # The reply takes its place in the channel's line now, in the order messages arrived; it
        # starts once this message is stored (its prompt ends at it) and the earlier replies are out.
        stored: asyncio.Future[bool] | None = None
        if self.should_answer(incoming):
            stored = asyncio.get_running_loop().create_future()
            self._queue_reply(message, incoming, stored)
        ok = False
        try:
            await self._sink.on_discord_message(incoming)
            ok = True
        finally:
            if stored is not None and not stored.done():
                stored.set_result(ok)
        where = _describe_channel(message)
        self._activity(ActivityKind.MESSAGE_IN, where, f"{incoming.author_name}: {incoming.content[:120]}")

    def _queue_reply(self, message: discord.Message, incoming: IncomingMessage, stored: asyncio.Future[bool]) -> None:
        """Replies in one channel go out one after another, in message order; channels do not wait
        for each other."""
        channel_id = incoming.channel_id
        previous = self._channel_tails.get(channel_id)
        task = asyncio.create_task(
            self._answer_in_turn(previous, message, incoming, stored), name=f"reply-{message.id}"
        )
        self._channel_tails[channel_id] = task
        self._reply_tasks.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._reply_tasks.discard(finished)
            if self._channel_tails.get(channel_id) is finished:
                del self._channel_tails[channel_id]

        task.add_done_callback(done)

    async def _answer_in_turn(
        self,
        previous: asyncio.Task[None] | None,
        message: discord.Message,
        incoming: IncomingMessage,
        stored: asyncio.Future[bool],
    ) -> None:
        if previous is not None:
            # Bounded: a reply that hangs past every timeout must not silence the channel for good.
            await asyncio.wait({previous}, timeout=REPLY_WAIT_SECONDS)
        done, _pending = await asyncio.wait({stored}, timeout=REPLY_WAIT_SECONDS)
        if stored not in done or not stored.result():
            return  # not stored (the failure is reported by the message handler): nothing to answer from
        await self._answer(message, incoming)

    async def _answer(self, message: discord.Message, incoming: IncomingMessage) -> None:
        try:
            async with message.channel.typing():
                reply = await self._sink.reply_for(incoming)
            if not reply:
                return
            for index, piece in enumerate(split_reply(reply, max_pieces=self._settings.max_reply_messages)):
                if index == 0:  # the first piece answers the message; the rest follow it
                    sent = await message.channel.send(
                        piece, reference=message, mention_author=False, allowed_mentions=_SAFE_MENTIONS
                    )
                else:
                    sent = await message.channel.send(piece, allowed_mentions=_SAFE_MENTIONS)
                await self._sink.on_discord_reply_sent(incoming, sent)
            self._activity(ActivityKind.REPLY_OUT, _describe_channel(message), reply[:120], incoming.place)
        except asyncio.CancelledError:
            raise
        except FamiliarError as exc:
            _log.warning("no reply to %s: %s", message.id, exc)
            self._activity(ActivityKind.ERROR, incoming.place, str(exc))
            self._publish_failure(str(exc))
        except discord.HTTPException as exc:
            text = f"Discord refused the reply ({exc.status}): {exc.text or exc}"
            _log.warning("%s", text)
            self._activity(ActivityKind.ERROR, incoming.place, text)
            self._publish_failure(text)  # e.g. a missing Send Messages permission: the owner must act
        except Exception as exc:  # noqa: BLE001 - a reply task must never end silently
            _log.exception("reply to %s failed", message.id)
            text = f"Could not answer {incoming.author_name}: {type(exc).__name__}: {' '.join(str(exc).split())}"
            self._activity(ActivityKind.ERROR, incoming.place, text[:300])
            self._publish_failure(text[:300])

    def _publish_failure(self, message: str) -> None:
        self._publish(FailureReported(message=message))

    async def _on_raw_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        # An embed unfurl or a pin also arrives here; the store ignores an update whose text is unchanged.
        # An edit waits for its channel's catch-up like a message: it may edit one that is being fetched.
        await self._backfill.wait_turn(payload.channel_id)
        edited = payload.data.get("edited_timestamp")
        edited_at = datetime.fromisoformat(edited) if isinstance(edited, str) else datetime.now(UTC)
        content = clip_message(flatten_message(payload.message), MAX_CONTENT_CHARS)
        await self._sink.on_discord_edit(payload.message_id, content, edited_at)
        author = payload.message.author.display_name
        self._activity(ActivityKind.EDIT, self._where(payload.channel_id), f"{author} edited: {content[:120]}")

    def _where(self, channel_id: int) -> str:
        """A channel in words for the activity log, from its id alone (raw events carry no objects)."""
        channel = self._client.get_channel(channel_id) if self._client is not None else None
        return (_describe(channel) if channel is not None else None) or f"channel {channel_id}"


def _describe(channel: object) -> str | None:
    """A channel in words for the activity log ("Lantern Club #general", "DM with alice"), if it says."""
    guild = getattr(channel, "guild", None)
    if isinstance(guild, discord.Guild):  # a text channel or a thread
        return f"{guild.name} #{getattr(channel, 'name', None) or getattr(channel, 'id', '?')}"
    if isinstance(channel, discord.DMChannel) and channel.recipient is not None:
        return f"DM with {channel.recipient.display_name}"
    return None


def _describe_channel(message: discord.Message) -> str:
    """Where a message was, in words for the activity log."""
    return _describe(message.channel) or f"DM with {message.author.display_name}"


# A familiar's reply must never ping @everyone or roles because a model wrote them.
_SAFE_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False)
