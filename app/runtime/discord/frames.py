"""Gateway frames the client cannot read: each is dropped with one line saying what it was, or, when it
breaks the compressed stream, the connection is reset and resumed. Never the process.

discord.py reads a frame in `DiscordWebSocket.received_message` (decompress, decode the JSON, run the
event's parser) with no try, and `Client.connect` only reconnects on network errors: a truncated or
non-JSON frame, a corrupt zlib frame or an event its parser cannot read (a MESSAGE_CREATE without an
author) ends the connection task, and with it `run --headless`. A Discord-compatible server
(`[discord] api_base` / `gateway_url`) makes such frames likelier.

Two narrow hooks, both on this client's own objects; discord.py's classes are left as they are:
- the client's `ConnectionState` is a `GuardedState`, whose parser of each event drops an event it
  cannot read (KeyError, TypeError, ValueError, AttributeError, IndexError: what a missing or mistyped
  field raises) with one line naming the event;
- each websocket the state is told of (`_update_references`, called as discord.py makes the websocket,
  before it reads a frame) reads its frames through `_FrameReader`: a frame that is not JSON, or not a
  gateway payload, is dropped; a compressed frame that does not decompress leaves the zlib stream
  broken for good, so the websocket is closed and discord.py resumes the session (`ReconnectWebSocket`,
  as for Discord's own RECONNECT), and the server replays the events after the last one read.
What is dropped is said through `report(problem, resumed)`; never the frame's text (it may be a message).
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import discord
from discord.gateway import DiscordWebSocket, ReconnectWebSocket
from discord.state import ConnectionState

_log = logging.getLogger(__name__)

# What a parser raises on a payload with a field missing or of the wrong type.
_UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError)

Report = Callable[[str, bool], None]  # (what happened, whether the connection was reset and resumed)
_ClientT = TypeVar("_ClientT", bound=discord.Client)


def _why(exc: BaseException) -> str:
    name = "zlib" if isinstance(exc, zlib.error) else type(exc).__name__  # zlib's class is just "error"
    text = " ".join(str(exc).split())[:160]
    return f"{name}: {text}" if text else name


class GuardedState(ConnectionState[_ClientT]):
    """discord.py's connection state, whose parsers and websockets drop what they cannot read."""

    def __init__(self, *, report: Report, **options: Any) -> None:
        super().__init__(**options)
        self._report = report
        for event, parse in self.parsers.items():
            self.parsers[event] = self._guarded(event, parse)

    def _guarded(self, event: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
        def guarded(data: Any) -> None:
            try:
                parse(data)
            except _UNREADABLE as exc:
                _log.debug("unreadable %s", event, exc_info=True)  # no payload: it may hold a message's text
                self._report(f"Discord sent a {event} event that cannot be read ({_why(exc)}); it was dropped", False)

        return guarded

    def _update_references(self, ws: DiscordWebSocket) -> None:
        super()._update_references(ws)
        if not isinstance(ws.received_message, _FrameReader):
            ws.received_message = _FrameReader(ws, ws.received_message, self._report)  # type: ignore[method-assign]


class _FrameReader:
    """One websocket's frame reader: discord.py's own, with a frame it cannot read dropped or, when
    the zlib stream broke, the connection resumed."""

    def __init__(self, ws: DiscordWebSocket, read: Callable[[Any], Awaitable[None]], report: Report) -> None:
        self._ws = ws
        self._read = read
        self._report = report

    async def __call__(self, msg: Any, /) -> None:
        compressed = isinstance(msg, bytes)
        kind = "compressed frame" if compressed else "frame"
        try:
            await self._read(msg)
        except (zlib.error, UnicodeDecodeError) as exc:  # decompressing failed: the zlib stream is broken
            await self._reset(f"Discord sent a {kind} that does not decompress ({_why(exc)})")
        except json.JSONDecodeError as exc:  # orjson's error subclasses it too
            self._report(f"Discord sent a {kind} that is not JSON ({_why(exc)}); it was dropped", False)
        except _UNREADABLE as exc:  # JSON, but not a gateway payload (not an object, a HELLO without its interval)
            _log.debug("unreadable gateway frame", exc_info=True)
            self._report(f"Discord sent a {kind} that cannot be read ({_why(exc)}); it was dropped", False)

    async def _reset(self, problem: str) -> None:
        await self._ws.close(code=4000)
        if self._ws.session_id is None:
            # No session to resume yet (the first HELLO): a network-like error, which discord.py answers
            # by connecting again after a backoff.
            self._report(f"{problem}; connecting again", True)
            raise ConnectionResetError(problem)
        self._report(f"{problem}; the connection was reset and resumed", True)
        raise ReconnectWebSocket(self._ws.shard_id, resume=True)
