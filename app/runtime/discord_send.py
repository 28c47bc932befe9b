"""Sending a reply's messages as surely as Discord allows, in discord.py's terms.

- Rate limits. discord.py tries a request five times, sleeping the 429's retry_after in between,
  then raises. A message refused so is tried again after the wait Discord asks for
  (`X-RateLimit-Reset-After`, else `Retry-After`), for as long as `[discord] send_retry_seconds`
  allows, counted from the reply's first refusal (`RetryWindow`). The adapter sends one channel's
  replies one after another, so the replies queued behind a rate-limited one wait for it.
- The typing indicator is best effort: a refused or lost typing request never holds up a reply, and
  one is never cancelled half-way (see `keep_typing`).
Given up, `send` raises `SendGaveUpError`, whose text says why, for the activity log and the window.
"""

from __future__ import annotations

import asyncio
import logging
import secrets

import aiohttp
import discord

from app.runtime.discord_messages import SAFE_MENTIONS
from app.runtime.errors import FamiliarError

_log = logging.getLogger(__name__)

# What a request whose answer never came raises.
_LOST = (aiohttp.ClientError, OSError, TimeoutError)
_TYPING_EVERY = 5.0  # Discord shows the indicator for 10 s


class SendGaveUpError(FamiliarError):
    """A reply's message was not sent within the retry window."""


class RetryWindow:
    """How long one reply may keep trying: `seconds` from its first refusal (0: never again)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._started: float | None = None

    def allows(self, wait: float) -> bool:
        """Whether trying again after `wait` seconds is still within the window (starts it)."""
        now = asyncio.get_running_loop().time()
        if self._started is None:
            self._started = now
        return now + wait <= self._started + self.seconds


def retry_after(exc: discord.HTTPException) -> float:
    """The seconds a 429 asks to wait: `X-RateLimit-Reset-After` (a route's limit, to the millisecond),
    else `Retry-After` (whole seconds; the global limit), else 1."""
    headers = exc.response.headers
    for name in ("X-RateLimit-Reset-After", "Retry-After"):
        try:
            wait = float(headers.get(name, ""))
        except ValueError:
            continue
        if wait == wait and 0 <= wait < float("inf"):  # not NaN
            return wait
    return 1.0


async def send(
    channel: discord.abc.Messageable,
    text: str,
    *,
    answering: discord.Message | None,
    window: RetryWindow,
) -> discord.Message:
    """Send one message of a reply (`answering`: the message it replies to, for the first one). Raises
    `SendGaveUpError`, or what Discord refused it with (a missing permission, a message too long)."""
    nonce = str(secrets.randbits(63))  # the same on every try: Discord makes one message of it
    limited = False
    while True:
        try:
            return await _post(channel, text, answering, nonce)
        except discord.HTTPException as exc:
            if exc.status != 429:
                raise
            wait = retry_after(exc)
            if not window.allows(wait):
                raise SendGaveUpError(
                    f"Discord rate-limited the reply (429) for longer than [discord] send_retry_seconds allows"
                    f" ({window.seconds:g} s); it was not sent"
                ) from exc
            if not limited:
                limited = True
                _log.info("Discord rate-limits a reply (429): trying again in %.2f s", wait)
            await asyncio.sleep(wait)


async def _post(
    channel: discord.abc.Messageable, text: str, answering: discord.Message | None, nonce: str
) -> discord.Message:
    if answering is not None:  # the first message answers the one asked; the rest follow it
        return await channel.send(
            text, reference=answering, mention_author=False, allowed_mentions=SAFE_MENTIONS, nonce=nonce
        )
    return await channel.send(text, allowed_mentions=SAFE_MENTIONS, nonce=nonce)


async def keep_typing(channel: discord.abc.Messageable) -> None:
    """Show the typing indicator until cancelled, best effort."""
    while True:
        # Shielded: a request cancelled while discord.py sleeps out a global 429 never opens its global
        # lock again (it is set after the sleep, not in a finally), and every later request of the
        # client waits for ever. The reply is ready long before a typing request gives up.
        await asyncio.shield(_type_once(channel))
        await asyncio.sleep(_TYPING_EVERY)


async def _type_once(channel: discord.abc.Messageable) -> None:
    try:
        await channel.typing()  # one request
    except (discord.HTTPException, *_LOST) as exc:
        _log.debug("no typing indicator: %s", _why(exc))


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:160]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
