"""Catching up on what the familiar missed while it was off or cut off.

At start and after a reconnect that could not resume (a new session: a new READY), each readable
channel's messages after the last stored one are fetched, within `[discord] backfill_hours` and
`backfill_messages`, and stored as turns without being answered; the familiar's own messages among
them are its replies (a reply Discord accepted just before a crash is stored this way).

While a channel is being caught up, its live messages wait, so the store keeps each channel's
messages in the order they were said and a reply's history already holds what was missed.

The same catch-up runs for the channels that missed messages while the disk was full, once there is
room again (`catch_up`, driven by app/runtime/outage.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

import aiohttp
import discord

from app.config.settings import DiscordSection
from app.runtime.errors import DiskFullError
from app.runtime.events import ActivityKind
from app.runtime.messages import IncomingMessage

_log = logging.getLogger(__name__)

# Bounds on waiting: a live message never waits longer than this for its channel's catch-up, and
# one channel's fetch gives up after CHANNEL_SECONDS (the rest of the channels still run).
GATE_SECONDS = 300.0
CHANNEL_SECONDS = 120.0


class BackfillSink(Protocol):
    """What the familiar provides for a catch-up."""

    async def backfill_point(self, place: str) -> int | None: ...

    async def known_dm_channels(self) -> list[tuple[str, int, str | None]]: ...

    async def on_backfill(self, place: str, messages: Sequence[IncomingMessage]) -> int: ...


@dataclass(frozen=True, slots=True)
class _Channel:
    place: str
    channel: discord.abc.Messageable
    channel_id: int
    where: str  # for the activity log: "Lantern Club #general"
    label: str  # in the summary: "#general"
    after: int  # fetch the messages after this id


class Backfill:
    """The catch-up of each new session, and the gates that hold live messages back meanwhile."""

    def __init__(
        self,
        settings: DiscordSection,
        sink: BackfillSink,
        incoming: Callable[[discord.Message, str], IncomingMessage],
        activity: Callable[[ActivityKind, str, str], None],
    ) -> None:
        self._settings = settings
        self._sink = sink
        self._incoming = incoming
        self._activity = activity
        self._session_known = asyncio.Event()  # cleared from a new session until its channels are gated
        self._session_known.set()
        self._gates: dict[int, asyncio.Event] = {}  # channel id -> set once its catch-up is stored
        self._task: asyncio.Task[Collection[str]] | None = None

    @property
    def enabled(self) -> bool:
        return self._settings.backfill_hours > 0 and self._settings.backfill_messages > 0

    # -- the session's life ------------------------------------------------------------------------
    def session_started(self) -> None:
        """A new session (READY; never on a RESUME): what came before it may be lost. Called
        before any event of the session is handled, so its live messages wait for the catch-up
        (a live message stored first would also hide what was missed before it)."""
        self._cancel()
        self._open_all()  # messages of the old session that still wait go on
        if self.enabled:
            self._session_known.clear()

    def session_ready(self, client: discord.Client) -> None:
        """The session's guilds are in: catch up in the background. The gate stays closed until
        the catch-up has put a gate on each of its channels."""
        self._cancel()
        if not self.enabled:
            self._open_all()
            return
        self._task = asyncio.create_task(self._run(client), name="discord-backfill")

    async def catch_up(self, client: discord.Client, places: Mapping[str, int]) -> Collection[str]:
        """Catch up on these places only (place -> channel id), now, as a session's catch-up does:
        after a full disk. Returns the places it cannot catch up on (switched off, the channel gone or
        no longer readable). A session's catch-up under way covers them: it is waited for instead."""
        running = self._task
        if running is not None and not running.done():
            await asyncio.wait({running}, timeout=GATE_SECONDS)
            return ()
        if not self.enabled:
            return tuple(places)
        task = asyncio.create_task(self._run(client, places), name="discord-catch-up")
        self._task = task
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        return () if task.cancelled() else task.result()

    async def close(self) -> None:
        task = self._cancel()
        self._open_all()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _cancel(self) -> asyncio.Task[Collection[str]] | None:
        """Stop a catch-up in progress (its own gates open as it ends)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
        return task

    def _open_all(self) -> None:
        for gate in self._gates.values():
            gate.set()
        self._gates.clear()
        self._session_known.set()

    async def wait_turn(self, channel_id: int) -> None:
        """Hold a live message until its channel's missed messages are stored (bounded)."""
        try:
            async with asyncio.timeout(GATE_SECONDS):
                await self._session_known.wait()
                gate = self._gates.get(channel_id)
                if gate is not None:
                    await gate.wait()
        except TimeoutError:
            _log.warning("a message in channel %s waited %.0f s for the catch-up; going on", channel_id, GATE_SECONDS)

    # -- the catch-up ------------------------------------------------------------------------------
    async def _run(self, client: discord.Client, only: Mapping[str, int] | None = None) -> Collection[str]:
        """Catch up on every readable channel, or on `only` those places; returns those of `only` it
        could not find."""
        gates: dict[int, asyncio.Event] = {}
        unknown: Collection[str] = ()
        try:
            try:
                channels = await self._channels(client, only)
                if only is not None:
                    unknown = set(only) - {each.place for each in channels}
                for each in channels:
                    gates[each.channel_id] = self._gates[each.channel_id] = asyncio.Event()
            finally:
                if self._task is asyncio.current_task():  # not when a newer session replaced this one
                    self._session_known.set()
            total, places = 0, 0
            for each in channels:
                try:
                    stored = await self._one(each)
                finally:
                    self._open(each.channel_id, gates.pop(each.channel_id))
                total += stored
                places += stored > 0
            if total:
                self._activity(
                    ActivityKind.INFO,
                    "discord",
                    f"caught up: {_messages(total)} missed, stored from {places} channel(s)",
                )
            else:
                self._activity(ActivityKind.INFO, "discord", f"caught up: nothing missed in {len(channels)} channel(s)")
        except DiskFullError as exc:  # what is left waits for room (app/runtime/outage.py says when)
            _log.info("the catch-up stopped: %s", exc)
            self._activity(ActivityKind.INFO, "discord", f"catching up stopped: {exc}; it goes on once there is room")
        except Exception as exc:  # noqa: BLE001 - the catch-up must never take the connection down
            _log.warning("the catch-up stopped: %s: %s", type(exc).__name__, exc)
            self._activity(ActivityKind.ERROR, "discord", f"could not catch up on missed messages: {exc}")
        finally:
            for channel_id, gate in gates.items():
                self._open(channel_id, gate)
        return unknown

    def _open(self, channel_id: int, gate: asyncio.Event) -> None:
        gate.set()
        if self._gates.get(channel_id) is gate:  # a newer session's gate stays
            del self._gates[channel_id]

    async def _channels(self, client: discord.Client, only: Mapping[str, int] | None = None) -> list[_Channel]:
        """Every guild text channel the familiar may read the history of, and the DMs it has had,
        each with where to fetch from, read while the session's live messages still wait; or those
        of `only` (a DM there that nothing stored names yet is found by its channel id)."""
        floor = discord.utils.time_snowflake(
            datetime.now(UTC) - timedelta(hours=self._settings.backfill_hours), high=False
        )

        async def after(place: str) -> int:
            return max(floor, await self._sink.backfill_point(place) or 0)

        out: list[_Channel] = []
        for guild in sorted(client.guilds, key=lambda g: g.id):
            me = guild.me
            for channel in guild.text_channels:
                permissions = channel.permissions_for(me)
                if not (permissions.view_channel and permissions.read_message_history):
                    continue
                place = f"guild:{guild.id}/{channel.id}"
                if only is not None and place not in only:
                    continue
                where = f"{guild.name} #{channel.name}"
                out.append(_Channel(place, channel, channel.id, where, f"#{channel.name}", await after(place)))
        dms = await self._sink.known_dm_channels()
        if only is not None:
            known = {place for place, _channel, _name in dms}
            dms = [d for d in dms if d[0] in only]
            dms += [(p, c, None) for p, c in sorted(only.items()) if p.startswith("dm:") and p not in known]
        for place, channel_id, known_name in dms:
            partial = client.get_partial_messageable(channel_id, type=discord.ChannelType.private)
            name = known_name or place
            out.append(
                _Channel(place, partial, channel_id, f"DM with {name}", f"the DM with {name}", await after(place))
            )
        return out

    async def _one(self, each: _Channel) -> int:
        """Fetch and store one channel's missed messages; returns how many were new."""
        after = discord.Object(id=each.after)
        try:
            async with asyncio.timeout(CHANNEL_SECONDS):
                # Newest first, so a cap keeps the most recent ones; stored oldest first.
                fetched = [
                    m
                    async for m in each.channel.history(
                        limit=self._settings.backfill_messages, after=after, oldest_first=False
                    )
                ]
        except discord.Forbidden as exc:  # the permission went away since the guild was loaded
            _log.info("no access to the history of %s: %s", each.where, exc.text or exc)
            return 0
        except (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            text = f"could not fetch missed messages in {each.label}: {type(exc).__name__}: {exc}"
            _log.warning("%s", text)
            self._activity(ActivityKind.ERROR, each.where, text[:300])
            return 0
        fetched.reverse()
        messages: list[IncomingMessage] = []
        for message in fetched:
            incoming = self._incoming(message, each.place)
            if incoming.from_familiar and incoming.reply_to is None and messages and messages[-1].from_familiar:
                # The later pieces of a long reply answer what its first piece answered.
                incoming = replace(incoming, reply_to=messages[-1].reply_to)
            messages.append(incoming)
        stored = await self._sink.on_backfill(each.place, messages)
        if stored:
            self._activity(ActivityKind.INFO, each.where, f"backfilled {_messages(stored)} in {each.label}")
        _log.info("catch-up of %s: %d fetched, %d new", each.where, len(messages), stored)
        return stored


def _messages(count: int) -> str:
    return f"{count} message" if count == 1 else f"{count} messages"
