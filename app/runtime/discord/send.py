"""Sending a reply's messages as surely as Discord allows, in discord.py's terms.

- Rate limits. discord.py tries a request five times, sleeping the 429's retry_after in between,
  then raises. A message refused so is tried again after the wait Discord asks for
  (`X-RateLimit-Reset-After`, else `Retry-After`), for as long as `[discord] send_retry_seconds`
  allows, counted from the reply's first refusal (`RetryWindow`). The adapter sends one channel's
  replies one after another, so the replies queued behind a rate-limited one wait for it.
- A lost answer. When the connection drops after Discord took the POST (a TCP reset), aiohttp raises
  and the message may or may not exist. The channel's history says: the familiar's own message after
  the one before it, with this text (and, the first of a reply, answering the same message), is the
  one sent; Discord keeps no nonce in history, so the text is what identifies it. When it is not
  there, the message is sent again with the same nonce, which Discord (discord.py always asks
  `enforce_nonce`) answers with the message that nonce made, never a second one.
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

from app.runtime.discord.messages import SAFE_MENTIONS
from app.runtime.errors import SendGaveUpError

_log = logging.getLogger(__name__)

# What a send whose answer never came raises: the message may exist or not.
_LOST = (aiohttp.ClientError, OSError, TimeoutError)
_LOST_PAUSE = 1.0  # seconds before a message not found after a lost answer is sent again
_HISTORY_LOOK = 100  # messages read after the one before, looking for one whose answer was lost
_TYPING_EVERY = 5.0  # Discord shows the indicator for 10 s


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
    after: int,
    familiar_id: int | None,
    window: RetryWindow,
) -> discord.Message:
    """Send one message of a reply (`answering`: the message it replies to, for the first one; `after`:
    the id of the message before it, which the sent one must follow). Raises `SendGaveUpError`, or what
    Discord refused it with (a missing permission, a message too long)."""
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
        except _LOST as exc:
            why = _why(exc)
            found = await _find_sent(channel, text, answering, after, familiar_id)
            if found is not None:
                _log.info("the answer to a reply's message was lost (%s); it was sent: message %s", why, found.id)
                return found
            if not window.allows(_LOST_PAUSE):
                raise SendGaveUpError(
                    f"The connection to Discord was lost while sending the reply ({why}), and it is not in the"
                    f" channel within [discord] send_retry_seconds ({window.seconds:g} s); it was not sent"
                ) from exc
            _log.info("the answer to a reply's message was lost (%s) and it is not in the channel: sending again", why)
            await asyncio.sleep(_LOST_PAUSE)


async def _post(
    channel: discord.abc.Messageable, text: str, answering: discord.Message | None, nonce: str
) -> discord.Message:
    if answering is not None:  # the first message answers the one asked; the rest follow it
        return await channel.send(
            text, reference=answering, mention_author=False, allowed_mentions=SAFE_MENTIONS, nonce=nonce
        )
    return await channel.send(text, allowed_mentions=SAFE_MENTIONS, nonce=nonce)


async def _find_sent(
    channel: discord.abc.Messageable,
    text: str,
    answering: discord.Message | None,
    after: int,
    familiar_id: int | None,
) -> discord.Message | None:
    """The familiar's message with this text after `after` (answering `answering`), if Discord has it;
    None when it is not there or the history cannot be read now."""
    if familiar_id is None:
        return None
    wanted = text.strip()
    try:
        async for message in channel.history(limit=_HISTORY_LOOK, after=discord.Object(after), oldest_first=True):
            if message.author.id != familiar_id or message.content.strip() != wanted:
                continue
            reference = message.reference
            if answering is None or (reference is not None and reference.message_id == answering.id):
                return message
    except (discord.HTTPException, *_LOST) as exc:
        _log.info("could not read the channel's history to find a reply's message: %s", _why(exc))
    return None


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
