"""The event client: discord.py's `Client`, whose gateway events become calls on a `DiscordEvents`.

It only translates discord.py's callbacks into the adapter's public interface; what to do with them
is the adapter's business (adapter.py). Never `run()`: that would start a second loop.
Raw edit and delete events are used so messages discord.py has not cached are handled too. Its
connection state drops a gateway frame it cannot read instead of ending the connection
(frames.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol, Self

import discord
from discord.state import ConnectionState

from app.runtime.discord.frames import GuardedState

_log = logging.getLogger(__name__)


class DiscordEvents(Protocol):
    """What the event client tells the adapter."""

    def session_started(self) -> None:
        """A new session (READY), never a RESUME: events of the old one may be lost."""
        ...

    async def ready(self) -> None:
        """The session's guilds are in."""
        ...

    def resumed(self) -> None: ...

    def disconnected(self) -> None: ...

    def guilds_changed(self) -> None: ...

    async def message(self, message: discord.Message) -> None: ...

    async def edited(self, payload: discord.RawMessageUpdateEvent) -> None: ...

    async def deleted(self, channel_id: int, message_id: int, cached: discord.Message | None) -> None:
        """A message deleted (`cached`: the message, when discord.py had it)."""
        ...

    async def bulk_deleted(self, channel_id: int, message_ids: Sequence[int]) -> None: ...

    def failed(self, event_method: str) -> None:
        """Handling an event raised (already logged with its traceback)."""
        ...

    def bad_frame(self, problem: str, resumed: bool) -> None:
        """Discord sent a frame the client cannot read: dropped, or (`resumed`) the connection was
        reset and resumed; `problem` says which, in words."""
        ...


class FamiliarClient(discord.Client):
    def __init__(self, events: DiscordEvents, *, intents: discord.Intents, guild_ready_timeout: float) -> None:
        self._events = events  # before Client.__init__, which makes the state (_get_state)
        super().__init__(intents=intents, guild_ready_timeout=guild_ready_timeout)

    def _get_state(self, **options: Any) -> ConnectionState[Self]:
        return GuardedState(
            report=self._events.bad_frame,
            dispatch=self.dispatch,
            handlers=self._handlers,
            hooks=self._hooks,
            http=self.http,
            **options,
        )

    async def on_connect(self) -> None:
        # Runs before any of the new session's messages are handled (tasks start in order).
        self._events.session_started()

    async def on_ready(self) -> None:
        await self._events.ready()

    async def on_resumed(self) -> None:
        self._events.resumed()

    async def on_disconnect(self) -> None:
        self._events.disconnected()

    async def on_guild_join(self, _guild: discord.Guild) -> None:
        self._events.guilds_changed()

    async def on_guild_remove(self, _guild: discord.Guild) -> None:
        self._events.guilds_changed()

    async def on_message(self, message: discord.Message) -> None:
        await self._events.message(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self._events.edited(payload)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self._events.deleted(payload.channel_id, payload.message_id, payload.cached_message)

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self._events.bulk_deleted(payload.channel_id, list(payload.message_ids))

    async def on_error(self, event_method: str, /, *_args: Any, **_kwargs: Any) -> None:
        _log.exception("error while handling Discord event %s", event_method)
        self._events.failed(event_method)
