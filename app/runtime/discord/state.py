"""What is known of the Discord connection, as the window shows it: its state, the guilds, the
latency. Each change is published as it happens (ConnectionChanged, GuildsChanged, LatencyMeasured),
and so are the adapter's activity lines and failures."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import discord

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


class DiscordState:
    def __init__(self, publish: Callable[[RuntimeEvent], None]) -> None:
        self._publish = publish
        self.state = ConnectionState.STOPPED
        self.guilds: tuple[GuildInfo, ...] = ()
        self.latency_ms: float | None = None

    def set_state(self, state: ConnectionState, detail: str) -> None:
        self.state = state
        self._publish(ConnectionChanged(state=state, detail=detail))

    def set_guilds(self, guilds: Iterable[discord.Guild]) -> None:
        self.guilds = tuple(
            GuildInfo(id=g.id, name=g.name, member_count=g.member_count or 0)
            for g in sorted(guilds, key=lambda g: g.name.lower())
        )
        self._publish(GuildsChanged(guilds=self.guilds))

    def forget_connection(self) -> None:
        """The connection is gone: no guilds (published if there were any), no latency."""
        if self.guilds:
            self.guilds = ()
            self._publish(GuildsChanged(guilds=()))
        self.latency_ms = None

    def set_latency(self, milliseconds: float) -> None:
        self.latency_ms = milliseconds
        self._publish(LatencyMeasured(milliseconds=milliseconds))

    def activity(
        self,
        kind: ActivityKind,
        where: str,
        summary: str,
        message_id: int | None = None,
        place: str | None = None,
        *,
        turn_id: int | None = None,
        disk_full: bool = False,
    ) -> None:
        self._publish(
            Activity(
                kind=kind,
                where=where,
                summary=summary,
                message_id=message_id,
                place=place,
                turn_id=turn_id,
                disk_full=disk_full,
            )
        )

    def failure(self, message: str) -> None:
        """Something the owner must act on (a bad token, a missing permission)."""
        self._publish(FailureReported(message=message))
