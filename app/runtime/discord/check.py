"""Checking a bot token before it is used: does it log in, and would the Message Content intent be allowed?

Two REST calls, the same two discord.py makes at login: `GET /users/@me` (the bot's name; 401 = the
token is wrong) and `GET /oauth2/applications/@me` (the application id for the invite link, and its
`flags`, where Discord says which privileged intents the Developer Portal switches on:
GATEWAY_MESSAGE_CONTENT for a bot in 100 servers or more, GATEWAY_MESSAGE_CONTENT_LIMITED below).
When the flags say the intent is off, or a Discord-compatible server sends none, a short gateway
IDENTIFY asking for the intent settles it: Discord closes with 4014 when it is not allowed.

Plain aiohttp against the configured API base, not a discord.Client: discord.py points every client at
another server through process-wide class attributes, which a running familiar holds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import platform
import re
from typing import Any

import aiohttp
import discord
import yarl

from app.config.redaction import redact_urls
from app.config.settings import DiscordSection
from app.runtime.api.setup_views import DiscordCheck, TokenVerdict

_log = logging.getLogger(__name__)

DISCORD_API = "https://discord.com/api/v10"
CHECK_TIMEOUT = 15.0
INVITE_PERMISSIONS = discord.Permissions(view_channel=True, send_messages=True, read_message_history=True)
"""What the familiar needs in a server: View Channels, Send Messages and Read Message History."""

_TOKEN_SHAPE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_CLOSE_INVALID_TOKEN = 4004
_CLOSE_DISALLOWED_INTENTS = 4014
_OP_DISPATCH, _OP_IDENTIFY, _OP_HELLO = 0, 2, 10

INVALID_TOKEN_TEXT = (
    "Discord rejected this token: copy a fresh one from the Developer Portal (your application > Bot > Reset Token)."
)


class _RefusedError(Exception):
    """Discord answered, but not with what the check needs; the message is the verdict's."""

    def __init__(self, verdict: TokenVerdict, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message


def invite_url(application_id: int) -> str:
    """The link that adds the bot to a server with the permissions it needs (scope: bot)."""
    return discord.utils.oauth_url(application_id, permissions=INVITE_PERMISSIONS, scopes=("bot",))


def token_problem(token: str) -> str | None:
    """Why `token` cannot be a bot token, checked without sending it anywhere; None if it may be one."""
    if not token:
        return "Paste the bot token first."
    if token.lower().startswith("bot "):
        return "Paste the token alone, without the word 'Bot' in front of it."
    if not _TOKEN_SHAPE.match(token):
        return (
            "That is not a bot token: a token is one line of letters, digits, dots, dashes and underscores."
            " Copy it again from the Developer Portal (Bot > Reset Token)."
        )
    return None


async def check_bot_token(token: str, settings: DiscordSection, *, timeout: float = CHECK_TIMEOUT) -> DiscordCheck:
    """Ask Discord (or the server at `[discord] api_base`) about `token`; never raises for what Discord
    answers, the verdict says it. Takes at most `timeout` seconds."""
    token = token.strip()
    problem = token_problem(token)
    if problem is not None:
        return DiscordCheck(TokenVerdict.MALFORMED, problem)
    where = redact_urls(settings.api_base) or "Discord"
    try:
        async with asyncio.timeout(timeout), aiohttp.ClientSession(headers=_headers(token)) as session:
            return await _check(session, token, settings)
    except _RefusedError as refused:
        return DiscordCheck(refused.verdict, refused.message)
    except TimeoutError:
        return DiscordCheck(
            TokenVerdict.UNREACHABLE, f"{where} did not answer within {timeout:g} s. Check the network."
        )
    except (aiohttp.ClientError, OSError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        return DiscordCheck(TokenVerdict.UNREACHABLE, f"Cannot reach {where} ({reason}). Check the network.")


def _headers(token: str) -> dict[str, str]:
    agent = f"DiscordBot (https://github.com/Rapptz/discord.py {discord.__version__}) Familiar"
    return {"Authorization": f"Bot {token}", "User-Agent": agent}


async def _check(session: aiohttp.ClientSession, token: str, settings: DiscordSection) -> DiscordCheck:
    api = (settings.api_base or DISCORD_API).rstrip("/")
    me = await _get(session, f"{api}/users/@me")
    app = await _get(session, f"{api}/oauth2/applications/@me")
    name = str(me.get("global_name") or me.get("username") or "?")
    try:
        bot_id = int(me["id"])
        application_id = int(app["id"])
    except (KeyError, TypeError, ValueError):
        raise _RefusedError(
            TokenVerdict.ERROR, f"{redact_urls(settings.api_base) or 'Discord'} sent an answer without ids."
        ) from None
    if me.get("bot") is False:
        raise _RefusedError(
            TokenVerdict.INVALID, "That token belongs to a user account, not a bot: use the bot's token."
        )
    invite = invite_url(application_id)
    found = DiscordCheck(TokenVerdict.OK, "", name, bot_id, application_id, invite)
    if not settings.message_content_intent:
        return _with(
            found,
            TokenVerdict.OK,
            f"OK: this is the bot {name}. (character.toml does not ask for the"
            " Message Content intent: the familiar reads only messages that mention it.)",
        )
    flags = discord.ApplicationFlags._from_value(int(app.get("flags") or 0))
    allowed = flags.gateway_message_content or flags.gateway_message_content_limited
    if not allowed:
        # The flags say off, or a compatible server does not keep them: the gateway has the last word.
        allowed = await _identify_allows_message_content(session, token, settings, api)
    if not allowed:
        return _with(
            found,
            TokenVerdict.INTENT_OFF,
            f"The token is good (the bot {name}), but its Message Content intent is off, so Discord would refuse"
            " it. In the Developer Portal open your application > Bot, switch on 'Message Content Intent',"
            " save, and check again.",
        )
    return _with(found, TokenVerdict.OK, f"OK: this is the bot {name}.")


def _with(check: DiscordCheck, verdict: TokenVerdict, message: str) -> DiscordCheck:
    return DiscordCheck(verdict, message, check.bot_name, check.bot_id, check.application_id, check.invite_url)


async def _get(session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with session.get(url) as response:
        text = await response.text()
        if response.status == 401:
            raise _RefusedError(TokenVerdict.INVALID, INVALID_TOKEN_TEXT)
        if response.status == 429:
            raise _RefusedError(
                TokenVerdict.ERROR, "Discord is rate limiting these checks: wait a minute and try again."
            )
        if response.status != 200:
            detail = _message_of(text)
            said = f": {detail}" if detail else ""
            raise _RefusedError(TokenVerdict.ERROR, f"Discord answered {response.status}{said}.")
    data = _json_object(text)
    if data is None:
        raise _RefusedError(
            TokenVerdict.ERROR, f"{url} did not answer with Discord's JSON: is that a Discord API address?"
        )
    return data


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _message_of(text: str) -> str:
    data = _json_object(text)
    message = data.get("message") if data is not None else None
    return " ".join(str(message).split())[:200] if message else ""


async def _gateway_url(session: aiohttp.ClientSession, settings: DiscordSection, api: str) -> str:
    if settings.gateway_url:
        return settings.gateway_url
    data = await _get(session, f"{api}/gateway/bot")
    url = data.get("url")
    if not isinstance(url, str) or not url:
        raise _RefusedError(TokenVerdict.ERROR, "Discord did not say where its gateway is.")
    return url


async def _identify_allows_message_content(
    session: aiohttp.ClientSession, token: str, settings: DiscordSection, api: str
) -> bool:
    """Connect to the gateway and IDENTIFY asking for the familiar's intents; READY = allowed,
    close 4014 = not. The session is closed at once."""
    intents = discord.Intents.default()
    intents.message_content = True
    url = yarl.URL(await _gateway_url(session, settings, api)).update_query(v="10", encoding="json")
    identify = {
        "op": _OP_IDENTIFY,
        "d": {
            "token": token,
            "intents": intents.value,
            "properties": {"os": platform.system().lower(), "browser": "familiar", "device": "familiar"},
        },
    }
    async with session.ws_connect(url, autoping=True, heartbeat=None) as ws:
        sent = False
        async for message in ws:
            if message.type is not aiohttp.WSMsgType.TEXT:
                break
            payload = _json_object(str(message.data)) or {}
            if payload.get("op") == _OP_HELLO and not sent:
                await ws.send_str(json.dumps(identify))
                sent = True
            elif payload.get("op") == _OP_DISPATCH and payload.get("t") == "READY":
                await ws.close(code=1000)
                return True
        code = ws.close_code
    if code == _CLOSE_DISALLOWED_INTENTS:
        return False
    if code == _CLOSE_INVALID_TOKEN:
        raise _RefusedError(TokenVerdict.INVALID, INVALID_TOKEN_TEXT)
    raise _RefusedError(TokenVerdict.ERROR, f"Discord's gateway closed the check's connection (code {code}).")
