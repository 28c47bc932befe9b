"""The runtime's own message types: what a chat platform's adapter hands the familiar (and what it
gets back), the `MessageSink` it feeds, and reply splitting. Nothing here knows a platform's library:
an adapter (the Discord one: runtime/discord/adapter.py) translates its objects into these."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from app.config.settings import DiscordSection
from app.runtime.events import ChannelInfo, ConnectionState, GuildInfo

DISCORD_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    platform: str  # "discord"; a person on it is "<platform>:<author id>"
    message_id: int
    place: str  # "guild:<guild id>/<channel id>" or "dm:<user id>"
    guild_id: int | None
    channel_id: int
    author_id: int
    author_name: str
    author_is_bot: bool
    content: str
    created_at: datetime
    mentions_familiar: bool
    replies_to_familiar: bool
    reply_to: int | None
    from_familiar: bool = False  # its own message (seen in history fetched after a restart)
    guild_name: str | None = None  # the server's and the channel's names, kept so views can say where
    channel_name: str | None = None


@dataclass(frozen=True, slots=True)
class SentMessage:
    """One message of a reply as the platform accepted it (a long reply is several)."""

    message_id: int
    content: str
    created_at: datetime


class MessageSink(Protocol):
    """What the familiar does with the conversation a platform adapter hands it."""

    async def on_message(self, message: IncomingMessage) -> None:
        """A message said where the familiar can see it (stored; the adapter decides whether to answer)."""
        ...

    async def reply_for(self, message: IncomingMessage) -> str | None:
        """The reply text (None = stay silent). Called inside the typing indicator."""
        ...

    async def on_reply_sent(self, message: IncomingMessage, sent: SentMessage) -> int | None:
        """One message of the reply to `message` was accepted by the platform."""
        ...

    async def on_edit(self, platform: str, message_id: int, content: str, edited_at: datetime) -> None: ...

    async def on_delete(self, platform: str, message_id: int) -> None: ...

    async def backfill_point(self, place: str) -> int | None:
        """The message id after which `place` may have missed messages (None: nothing stored there)."""
        ...

    async def known_dm_channels(self) -> list[tuple[str, int, str | None]]:
        """(place, channel id, the other person's name) of each DM conversation the familiar has had."""
        ...

    async def on_backfill(self, place: str, messages: Sequence[IncomingMessage]) -> int:
        """Messages missed while offline, oldest first, stored and never answered; returns how many were new."""
        ...


class ChatConnection(Protocol):
    """A running connection to a chat platform that feeds a MessageSink (the Discord adapter is one)."""

    @property
    def state(self) -> ConnectionState: ...

    @property
    def guilds(self) -> tuple[GuildInfo, ...]: ...

    @property
    def latency_ms(self) -> float | None: ...

    async def start(self) -> None:
        """Connect; returns once ready. Raises FamiliarError with one line a user can act on."""
        ...

    async def stop(self) -> None: ...

    async def wait_closed(self) -> BaseException | None:
        """Wait until the connection ends by itself; returns the error that ended it, if any."""
        ...

    def text_channels(self) -> tuple[ChannelInfo, ...] | None:
        """The text channels of every server it is in now, from what it knows (no request); None
        while not connected."""
        ...

    def use_answering_rules(self, settings: DiscordSection) -> None:
        """Answer by these settings from the next message on; its connection settings wait for the
        next start."""
        ...

    async def catch_up(self, places: Mapping[str, int]) -> Collection[str]:
        """Fetch and store, now, what these places (place -> channel id) missed, as the start-up
        catch-up does (after a full disk); returns the places it can never catch up on."""
        ...


def place_for(guild_id: int | None, channel_id: int, author_id: int) -> str:
    return f"guild:{guild_id}/{channel_id}" if guild_id is not None else f"dm:{author_id}"


def clip_message(text: str, limit: int) -> str:
    """A message's text cut to at most `limit` characters, with a marker saying so; whole when it fits."""
    if len(text) <= limit:
        return text
    marker = f"\n[message cut: it had {len(text)} characters; only the first ones are kept]"
    if limit < 2 * len(marker):
        raise ValueError(f"a clipped message needs room for more than its marker ({limit} characters)")
    return text[: limit - len(marker)] + marker


# Ends the last message of a reply that was longer than the familiar may send at once.
REPLY_CUT = "\n\n[reply cut: too long to send whole]"


def split_reply(text: str, limit: int = DISCORD_LIMIT, max_pieces: int | None = None) -> list[str]:
    """Split text into pieces of at most `limit` characters, cleanly.

    Prefers paragraph breaks, then line breaks, then sentence ends, then spaces; never cuts inside
    a word unless a single word is longer than the limit. A fenced code block cut in two is closed
    at the end of one piece and reopened (with its language) at the start of the next.

    With `max_pieces`, a reply that needs more is cut: only the first `max_pieces` are kept and the
    last of them ends with REPLY_CUT (still within `limit`).
    """
    parts = split_parts(text, limit)
    if max_pieces is None or len(parts) <= max_pieces:
        return [opening + body + closing for opening, body, closing in parts]
    if max_pieces < 1:
        raise ValueError("a reply needs room for at least one piece")
    # Split again with room for the marker in every piece, so the last kept one has it.
    kept = split_parts(text, limit - len(REPLY_CUT))[:max_pieces]
    pieces = [opening + body + closing for opening, body, closing in kept]
    pieces[-1] += REPLY_CUT
    return pieces


_CLOSING = "\n```"
# The language of a fence's opening line (```python): a short word; anything after it is code.
_FENCE_LANGUAGE = re.compile(r"```([A-Za-z0-9_+#.-]{1,20})(?=\s|$)")


def split_parts(text: str, limit: int = DISCORD_LIMIT) -> list[tuple[str, str, str]]:
    """The pieces of `split_reply` as (reopened fence, text of the reply, closing fence).

    Joining the middle parts gives back the reply, less the whitespace at the cuts.
    """
    if limit < 64:
        raise ValueError("a piece must have room for at least 64 characters")
    text = text.strip()
    parts: list[tuple[str, str, str]] = []
    reopen = ""
    while text:
        if len(reopen) + len(text) <= limit:
            parts.append((reopen, text, ""))
            break
        # Always leave room for a closing fence: whether one is needed depends on where the cut lands.
        window = text[: limit - len(reopen) - len(_CLOSING)]
        cut = _best_cut(window)
        head = text[:cut].rstrip()
        rest = text[cut:]
        opening = _open_fence(reopen + head) if head.strip() else (reopen.rstrip("\n") or None)
        # Inside a code block the next line keeps its indentation; elsewhere leading spaces go.
        text = rest.lstrip("\n") if opening is not None else rest.lstrip("\n ")
        if not head.strip():
            continue
        parts.append((reopen, head, _CLOSING if opening is not None else ""))
        reopen = opening + "\n" if opening is not None else ""
    return parts


def _best_cut(window: str) -> int:
    floor = len(window) // 3
    for sep in ("\n\n", "\n", ". ", "! ", "? ", " "):
        at = window.rfind(sep)
        if at > floor:
            return at + len(sep)
    return len(window)


def _open_fence(text: str) -> str | None:
    """How to reopen a ``` fence left open at the end of `text` ("```" plus its language), if any."""
    opening: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("```") or (len(stripped) > 6 and stripped.endswith("```")):
            continue  # not a fence line, or a whole block on one line
        if opening is not None:
            opening = None
        else:
            language = _FENCE_LANGUAGE.match(stripped)
            opening = "```" + (language.group(1) if language else "")
    return opening
