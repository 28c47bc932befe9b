"""Platform-neutral messages passed from the Discord adapter to the familiar, and reply splitting."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

DISCORD_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class IncomingMessage:
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


def place_for(guild_id: int | None, channel_id: int, author_id: int) -> str:
    return f"guild:{guild_id}/{channel_id}" if guild_id is not None else f"dm:{author_id}"


def split_reply(text: str, limit: int = DISCORD_LIMIT) -> list[str]:
    """Split text into pieces of at most `limit` characters, cleanly.

    Prefers paragraph breaks, then line breaks, then sentence ends, then spaces; never cuts inside
    a word unless a single word is longer than the limit. A fenced code block cut in two is closed
    at the end of one piece and reopened (with its language) at the start of the next.
    """
    text = text.strip()
    pieces: list[str] = []
    fence_reopen = ""
    while text:
        budget = limit - len(fence_reopen)
        if len(text) <= budget:
            pieces.append(fence_reopen + text)
            break
        window = text[:budget]
        cut = _best_cut(window)
        head = text[:cut].rstrip()
        rest = text[cut:].lstrip("\n ")
        piece = fence_reopen + head
        opening = _open_fence(piece)
        if opening is not None:
            closing = "\n```"
            if len(piece) + len(closing) > limit:
                # make room for the closing fence
                overflow = len(piece) + len(closing) - limit
                head = head[: len(head) - overflow].rstrip()
                rest = text[len(head) :].lstrip("\n ")
                piece = fence_reopen + head
            piece += closing
            fence_reopen = opening + "\n"
        else:
            fence_reopen = ""
        pieces.append(piece)
        text = rest
    return [p for p in pieces if p.strip()]


def _best_cut(window: str) -> int:
    floor = len(window) // 3
    for sep in ("\n\n", "\n", ". ", "! ", "? ", " "):
        at = window.rfind(sep)
        if at > floor:
            return at + len(sep)
    return len(window)


def _open_fence(text: str) -> str | None:
    """The opening line of a ``` fence left open at the end of `text`, if any."""
    opening: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            opening = None if opening is not None else stripped
    return opening
