"""discord.py's objects in the runtime's terms: a message as an `IncomingMessage` (its text with
mentions by name, embeds, components and attachments flattened to searchable text), a channel in
words for the activity log, and the mentions a reply may make."""

from __future__ import annotations

import re
from typing import Any

import discord

from app.memory.store import MAX_CONTENT_CHARS
from app.runtime.messages import IncomingMessage, SentMessage, clip_message, place_for

PLATFORM = "discord"
# A familiar's reply must never ping @everyone or roles because a model wrote them.
SAFE_MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True, replied_user=False)

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


def searchable_text(message: discord.Message) -> str:
    """What of a message is stored: its flattened text, cut to what the store keeps."""
    return clip_message(flatten_message(message), MAX_CONTENT_CHARS)


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


def incoming(message: discord.Message, me: discord.ClientUser | None, place: str | None = None) -> IncomingMessage:
    """The familiar's view of a message (`me`: the familiar's own user, once logged in); `place`
    overrides where it was said (a DM's own messages, seen in fetched history, belong to the other
    person's DM)."""
    guild_id = message.guild.id if message.guild is not None else None
    reference = message.reference
    replied = False
    if reference is not None and me is not None:
        resolved = reference.resolved
        replied = isinstance(resolved, discord.Message) and resolved.author.id == me.id
    return IncomingMessage(
        platform=PLATFORM,
        message_id=message.id,
        place=place or place_for(guild_id, message.channel.id, message.author.id),
        guild_id=guild_id,
        channel_id=message.channel.id,
        author_id=message.author.id,
        author_name=message.author.display_name,
        author_is_bot=message.author.bot,
        content=searchable_text(message),
        created_at=message.created_at,
        mentions_familiar=me is not None and me.mentioned_in(message) and not message.mention_everyone,
        replies_to_familiar=replied,
        reply_to=reference.message_id if reference is not None else None,
        from_familiar=me is not None and message.author.id == me.id,
        guild_name=message.guild.name if message.guild is not None else None,
        channel_name=getattr(message.channel, "name", None),
    )


def sent(message: discord.Message) -> SentMessage:
    return SentMessage(message_id=message.id, content=message.content, created_at=message.created_at)


def describe(channel: object) -> str | None:
    """A channel in words for the activity log ("Lantern Club #general", "DM with alice"), if it says."""
    guild = getattr(channel, "guild", None)
    if isinstance(guild, discord.Guild):  # a text channel or a thread
        return f"{guild.name} #{getattr(channel, 'name', None) or getattr(channel, 'id', '?')}"
    if isinstance(channel, discord.DMChannel) and channel.recipient is not None:
        return f"DM with {channel.recipient.display_name}"
    return None


def describe_channel(message: discord.Message) -> str:
    """Where a message was, in words for the activity log."""
    return describe(message.channel) or f"DM with {message.author.display_name}"
