"""The Discord adapter: a `ChatConnection` that puts the familiar on Discord.

Its parts are kept apart as discord.py keeps its own: the connection (transport.py), what is
known of it (state.py), the event client (client.py), the catch-up after downtime
(backfill.py), and discord.py's objects in the runtime's terms (messages.py). The adapter
itself decides what a message needs (stored always, answered when it should be) and keeps each
channel's replies in the order the messages came; what the familiar does with them is the
`MessageSink`'s business, in the runtime's own message types.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import discord

from app.config.settings import DiscordSection, Secrets, Settings
from app.runtime.discord.backfill import Backfill
from app.runtime.discord.client import FamiliarClient
from app.runtime.discord.messages import (
    PLATFORM,
    describe,
    describe_channel,
    incoming,
    searchable_text,
    sent,
)
from app.runtime.discord.send import RetryWindow, keep_typing, send
from app.runtime.discord.state import DiscordState
from app.runtime.discord.transport import DiscordTransport, explain_start_failure
from app.runtime.errors import DiskFullError, FamiliarError
from app.runtime.events import ActivityKind, ChannelInfo, ConnectionState, GuildInfo, RuntimeEvent
from app.runtime.messages import IncomingMessage, MessageSink, split_reply

_log = logging.getLogger(__name__)

# The longest a reply waits for the one before it in its channel (or for its message to be stored).
REPLY_WAIT_SECONDS = 600.0


@dataclass(frozen=True, slots=True)
class _Reply:
    """A message to answer, with where it goes: its channel, looked up and described once."""

    message: discord.Message
    incoming: IncomingMessage
    channel: discord.abc.Messageable
    where: str  # for the activity log: "Lantern Club #general"
    familiar_id: int  # the familiar's own user: a sent message whose answer was lost is found by it


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
        self._sink = sink
        self._transport = DiscordTransport(settings, token, ready_timeout=ready_timeout)
        self._state = DiscordState(publish)
        self._backfill = Backfill(settings, sink, self._incoming, self._state.activity)
        self._client: FamiliarClient | None = None
        self._latency_task: asyncio.Task[None] | None = None
        self._reply_tasks: set[asyncio.Task[None]] = set()
        self._channel_tails: dict[int, asyncio.Task[None]] = {}  # the last reply queued in each channel
        self._ready = asyncio.Event()
        self._ended = asyncio.Event()
        self._end_error: BaseException | None = None

    @property
    def state(self) -> ConnectionState:
        return self._state.state

    @property
    def guilds(self) -> tuple[GuildInfo, ...]:
        return self._state.guilds

    @property
    def latency_ms(self) -> float | None:
        return self._state.latency_ms

    def text_channels(self) -> tuple[ChannelInfo, ...] | None:
        """The text channels of every server the bot is in now, from discord.py's cache (no request);
        None while not connected."""
        client = self._client
        if client is None or self.state is not ConnectionState.CONNECTED:
            return None
        return tuple(
            ChannelInfo(guild_id=g.id, guild_name=g.name, channel_id=c.id, name=c.name)
            for g in client.guilds
            for c in g.text_channels
        )

    def use_answering_rules(self, settings: DiscordSection) -> None:
        """Answer by these settings from the next message on (home channels, DMs, other bots, reply
        length, how long a send is retried); the connection's own settings (servers, intents,
        backfill) wait for the next start."""
        self._settings = dataclasses.replace(
            self._settings,
            home_channels=settings.home_channels,
            allow_dms=settings.allow_dms,
            respond_to_bots=settings.respond_to_bots,
            max_reply_messages=settings.max_reply_messages,
            send_retry_seconds=settings.send_retry_seconds,
        )

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Log in and connect; returns once the familiar is ready in its guilds. Raises FamiliarError."""
        if self._client is not None:
            return
        self._ready.clear()
        client = FamiliarClient(
            self, intents=self._transport.intents(), guild_ready_timeout=self._settings.guild_ready_timeout
        )
        self._client = client
        self._state.set_state(ConnectionState.CONNECTING, "logging in")
        try:
            await self._transport.connect(client, self._ready)
        except BaseException as exc:
            message = explain_start_failure(exc, self._settings)
            await self._teardown()
            self._state.set_state(ConnectionState.FAILED, message)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise FamiliarError(message) from exc
        self._transport.when_ended(self._on_connection_ended)
        self._latency_task = asyncio.create_task(
            self._transport.watch_latency(client, self._state.set_latency), name="discord-latency"
        )

    async def stop(self) -> None:
        await self._teardown()
        self._state.set_state(ConnectionState.STOPPED, "")

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
        await self._transport.close(client)
        self._state.forget_connection()

    async def catch_up(self, places: Mapping[str, int]) -> Collection[str]:
        """Fetch and store what these places (place -> channel id) missed, now, as at start: after a
        full disk. Returns the places it cannot catch up on; none while not connected (try again later)."""
        client = self._client
        if client is None or self.state is not ConnectionState.CONNECTED:
            return ()
        return await self._backfill.catch_up(client, places)

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
            self._state.set_state(ConnectionState.STOPPED, "disconnected")
            return
        message = explain_start_failure(exc, self._settings)
        self._state.set_state(ConnectionState.FAILED, message)
        self._state.activity(ActivityKind.ERROR, "discord", message)

    # -- DiscordEvents: what the event client tells ------------------------------------------------
    def session_started(self) -> None:
        self._backfill.session_started()

    async def ready(self) -> None:
        self.guilds_changed()
        self._state.set_state(ConnectionState.CONNECTED, f"{len(self._state.guilds)} guild(s)")
        self._ready.set()
        if self._client is not None:
            self._backfill.session_ready(self._client)

    def resumed(self) -> None:
        self._state.set_state(ConnectionState.CONNECTED, "resumed")

    def disconnected(self) -> None:
        if self._client is not None and not self._client.is_closed() and self.state == ConnectionState.CONNECTED:
            self._state.set_state(ConnectionState.RECONNECTING, "connection lost; resuming")

    def guilds_changed(self) -> None:
        if self._client is not None:
            self._state.set_guilds(self._client.guilds)

    async def message(self, message: discord.Message) -> None:
        client = self._client
        if client is None or client.user is None or message.author.id == client.user.id:
            return  # our own replies are recorded when sent
        await self._backfill.wait_turn(message.channel.id)
        if self._client is not client:
            return  # stopped while it waited
        said = self._incoming(message)
        where = describe_channel(message)
        # The reply takes its place in the channel's line now, in the order messages arrived; it
        # starts once this message is stored (its prompt ends at it) and the earlier replies are out.
        stored: asyncio.Future[bool] | None = None
        if self.should_answer(said):
            stored = asyncio.get_running_loop().create_future()
            self._queue_reply(_Reply(message, said, message.channel, where, client.user.id), stored)
        ok = False
        try:
            await self._sink.on_message(said)
            ok = True
        except DiskFullError as exc:  # not stored: it is fetched again once there is room
            problem = f"a message was not stored yet: {exc}; it is fetched again from Discord once there is room"
            self._state.activity(ActivityKind.ERROR, where, problem, said.message_id, disk_full=True)
            return
        finally:
            if stored is not None and not stored.done():
                stored.set_result(ok)
        summary = f"{said.author_name}: {said.content[:120]}"
        self._state.activity(ActivityKind.MESSAGE_IN, where, summary, said.message_id)

    async def edited(self, payload: discord.RawMessageUpdateEvent) -> None:
        # An embed unfurl or a pin also arrives here; the store ignores an update whose text is unchanged.
        # An edit waits for its channel's catch-up like a message: it may edit one that is being fetched.
        await self._backfill.wait_turn(payload.channel_id)
        edited = payload.data.get("edited_timestamp")
        edited_at = datetime.fromisoformat(edited) if isinstance(edited, str) else datetime.now(UTC)
        content = searchable_text(payload.message)
        try:
            await self._sink.on_edit(PLATFORM, payload.message_id, content, edited_at)
        except DiskFullError as exc:  # the edit is stored once there is room
            where = self._where(payload.channel_id)
            self._state.activity(ActivityKind.ERROR, where, f"an edit was not stored yet: {exc}", payload.message_id)
            return
        author = payload.message.author.display_name
        summary = f"{author} edited: {content[:120]}"
        self._state.activity(ActivityKind.EDIT, self._where(payload.channel_id), summary, payload.message_id)

    async def deleted(self, channel_id: int, message_id: int, cached: discord.Message | None) -> None:
        if not await self._delete(channel_id, message_id):
            return
        who = f"{cached.author.display_name}'s message" if cached is not None else "a message"
        self._state.activity(ActivityKind.DELETE, self._where(channel_id), f"{who} was deleted")

    async def bulk_deleted(self, channel_id: int, message_ids: Sequence[int]) -> None:
        done = [await self._delete(channel_id, message_id) for message_id in message_ids]
        if not all(done):
            return
        count = len(message_ids)
        self._state.activity(ActivityKind.DELETE, self._where(channel_id), f"{count} messages were deleted at once")

    async def _delete(self, channel_id: int, message_id: int) -> bool:
        try:
            await self._sink.on_delete(PLATFORM, message_id)
        except DiskFullError as exc:  # the message is redacted once there is room
            self._state.activity(
                ActivityKind.ERROR, self._where(channel_id), f"a deletion was not stored yet: {exc}", message_id
            )
            return False
        return True

    def failed(self, event_method: str) -> None:
        self._state.activity(ActivityKind.ERROR, "discord", f"error while handling {event_method}")

    def bad_frame(self, problem: str, resumed: bool) -> None:
        # A dropped event may have been a message: an error line. A resumed connection loses nothing
        # (the events after the last one read are sent again).
        self._state.activity(ActivityKind.INFO if resumed else ActivityKind.ERROR, "discord", problem)

    # -- messages ----------------------------------------------------------------------------
    def _incoming(self, message: discord.Message, place: str | None = None) -> IncomingMessage:
        return incoming(message, self._client.user if self._client is not None else None, place)

    def should_answer(self, said: IncomingMessage) -> bool:
        if said.author_is_bot and not self._settings.respond_to_bots:
            return False
        if said.guild_id is None:
            return self._settings.allow_dms
        return said.mentions_familiar or said.replies_to_familiar or said.channel_id in self._settings.home_channels

    def _queue_reply(self, reply: _Reply, stored: asyncio.Future[bool]) -> None:
        """Replies in one channel go out one after another, in message order; channels do not wait
        for each other."""
        channel_id = reply.incoming.channel_id
        previous = self._channel_tails.get(channel_id)
        task = asyncio.create_task(self._answer_in_turn(previous, reply, stored), name=f"reply-{reply.message.id}")
        self._channel_tails[channel_id] = task
        self._reply_tasks.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._reply_tasks.discard(finished)
            if self._channel_tails.get(channel_id) is finished:
                del self._channel_tails[channel_id]

        task.add_done_callback(done)

    async def _answer_in_turn(
        self, previous: asyncio.Task[None] | None, reply: _Reply, stored: asyncio.Future[bool]
    ) -> None:
        if previous is not None:
            # Bounded: a reply that hangs past every timeout must not silence the channel for good.
            # One Discord keeps refusing is tried for send_retry_seconds, and this one waits for it.
            await asyncio.wait({previous}, timeout=REPLY_WAIT_SECONDS + self._settings.send_retry_seconds)
        done, _pending = await asyncio.wait({stored}, timeout=REPLY_WAIT_SECONDS)
        if stored not in done or not stored.result():
            return  # not stored (the failure is reported by the message handler): nothing to answer from
        await self._answer(reply)

    async def _written(self, reply: _Reply) -> str | None:
        """The reply's text, with the typing indicator on while it is written."""
        typing = asyncio.create_task(keep_typing(reply.channel), name=f"typing-{reply.message.id}")
        try:
            return await self._sink.reply_for(reply.incoming)
        finally:
            typing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await typing

    async def _answer(self, reply: _Reply) -> None:
        said = reply.incoming
        try:
            text = await self._written(reply)
            if not text:
                return
            window = RetryWindow(self._settings.send_retry_seconds)  # one for the whole reply
            first: int | None = None  # the reply's first message, as stored: its explanation opens from the log
            after = reply.message.id
            for index, piece in enumerate(split_reply(text, max_pieces=self._settings.max_reply_messages)):
                message = await send(
                    reply.channel,
                    piece,
                    answering=reply.message if index == 0 else None,  # the first answers; the rest follow it
                    after=after,
                    familiar_id=reply.familiar_id,
                    window=window,
                )
                after = message.id
                stored_id = await self._sink.on_reply_sent(said, sent(message))
                first = stored_id if first is None else first
            self._state.activity(
                ActivityKind.REPLY_OUT, reply.where, text[:120], said.message_id, said.place, turn_id=first
            )
        except asyncio.CancelledError:
            raise
        except FamiliarError as exc:
            # The activity and failure events below tell the window and the console; this line is the file's.
            _log.warning("no reply to %s: %s", said.message_id, exc, extra={"console": False})
            self._state.activity(ActivityKind.ERROR, said.place, str(exc))
            self._state.failure(str(exc))
        except discord.HTTPException as exc:
            problem = f"Discord refused the reply ({exc.status}): {exc.text or exc}"
            _log.warning("%s", problem, extra={"console": False})
            self._state.activity(ActivityKind.ERROR, said.place, problem)
            self._state.failure(problem)  # e.g. a missing Send Messages permission: the owner must act
        except Exception as exc:  # noqa: BLE001 - a reply task must never end silently
            _log.exception("reply to %s failed", said.message_id)
            problem = f"Could not answer {said.author_name}: {type(exc).__name__}: {' '.join(str(exc).split())}"
            self._state.activity(ActivityKind.ERROR, said.place, problem[:300])
            self._state.failure(problem[:300])

    def _where(self, channel_id: int) -> str:
        """A channel in words for the activity log, from its id alone (raw events carry no objects)."""
        channel = self._client.get_channel(channel_id) if self._client is not None else None
        return (describe(channel) if channel is not None else None) or f"channel {channel_id}"


def connect(
    settings: Settings, secrets: Secrets, sink: MessageSink, publish: Callable[[RuntimeEvent], None]
) -> DiscordAdapter:
    """The Discord connection of a familiar with these settings (app/runtime/platforms.py calls it)."""
    return DiscordAdapter(settings.discord, secrets.discord_token, sink, publish)
