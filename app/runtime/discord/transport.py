"""The Discord connection itself, over discord.py's http and gateway layers: pointed at Discord or at
a Discord-compatible server (`[discord] api_base`, `gateway_url`), logged in, connected (discord.py
reconnects and resumes by itself), ready within a time limit, its latency measured, and closed.

Failures become one line a user can act on (`explain_start_failure`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import aiohttp
import discord
import discord.gateway
import discord.http
import yarl

from app.config.redaction import redact_urls
from app.config.settings import DiscordSection
from app.runtime.hints import RESTART, Advice

PORTAL = "https://discord.com/developers/applications"


def explain_start_failure(exc: BaseException, settings: DiscordSection) -> str:
    """One line a user can act on, for anything `login`/`connect` can raise."""
    where = redact_urls(settings.api_base) or "Discord"
    if isinstance(exc, discord.LoginFailure):
        return "Discord rejected the bot token. Copy a fresh token from the Developer Portal (Bot > Reset Token)."
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return Advice(
            "Discord refused the Message Content intent. In the Developer Portal, open your application > Bot and "
            "switch on 'Message Content Intent' under Privileged Gateway Intents,",
            RESTART,
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


class DiscordTransport:
    def __init__(self, settings: DiscordSection, token: str, *, ready_timeout: float) -> None:
        self._settings = settings
        self._token = token
        self._ready_timeout = ready_timeout
        self._task: asyncio.Task[None] | None = None
        self._ended: Callable[[asyncio.Task[None]], None] | None = None
        self._saved_endpoints: tuple[str, yarl.URL] | None = None

    def intents(self) -> discord.Intents:
        intents = discord.Intents.default()
        intents.message_content = self._settings.message_content_intent
        return intents

    async def connect(self, client: discord.Client, ready: asyncio.Event) -> None:
        """Log in and connect; returns once `ready` is set (the session's guilds are in). Raises what
        logging in or connecting raised, or TimeoutError past the ready time limit."""
        self._point_at_server()
        await client.login(self._token)
        task = asyncio.create_task(client.connect(reconnect=True), name="discord-connect")
        self._task = task
        waiter = asyncio.create_task(ready.wait(), name="discord-ready")
        done, _pending = await asyncio.wait(
            {task, waiter}, timeout=self._ready_timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            waiter.cancel()
            if task in done:
                raise task.exception() or RuntimeError("the connection ended")
            raise TimeoutError("ready")

    def when_ended(self, callback: Callable[[asyncio.Task[None]], None]) -> None:
        """Call `callback` with the connection's task if it ends by itself (a fatal close after start)."""
        if self._task is not None:
            self._ended = callback
            self._task.add_done_callback(callback)

    async def watch_latency(self, client: discord.Client, report: Callable[[float], None]) -> None:
        """Report the gateway latency in milliseconds: soon after connecting (the first heartbeat ACK),
        then every 5 s, until cancelled."""
        measured = False
        while True:
            latency = client.latency
            if latency == latency and latency != float("inf"):  # not NaN / inf before the first ACK
                report(latency * 1000)
                measured = True
            await asyncio.sleep(5.0 if measured else 0.1)

    async def close(self, client: discord.Client | None) -> None:
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
        task, self._task = self._task, None
        if task is not None:
            if self._ended is not None:
                task.remove_done_callback(self._ended)
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._ended = None
        self._restore_endpoints()

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
