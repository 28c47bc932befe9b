"""The chat platforms a familiar can live on, by name: each a factory of its ChatConnection, loaded when the
familiar connects. The service names a platform, never an adapter's class; only this module imports an
adapter (an import-linter contract keeps it so), and it imports it when asked, so the window and the
commands start without the platform's library (discord.py and aiohttp for Discord).

A second platform is a room beside app/runtime/discord/ with a `connect(...)` of the same shape, and a line
in PLATFORMS (see docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from app.config.settings import Secrets, Settings
    from app.runtime.events import RuntimeEvent
    from app.runtime.messages import ChatConnection, MessageSink


class Connect(Protocol):
    def __call__(
        self, settings: Settings, secrets: Secrets, sink: MessageSink, publish: Callable[[RuntimeEvent], None]
    ) -> ChatConnection: ...


# platform -> the module whose `connect` makes its connection
PLATFORMS: dict[str, str] = {"discord": "app.runtime.discord.adapter"}


def connection_for(
    platform: str,
    settings: Settings,
    secrets: Secrets,
    sink: MessageSink,
    publish: Callable[[RuntimeEvent], None],
) -> ChatConnection:
    """A new, unstarted connection of `platform` feeding `sink`. KeyError names an unknown platform."""
    try:
        module = PLATFORMS[platform]
    except KeyError:
        raise KeyError(f"no chat platform {platform!r} (known: {', '.join(sorted(PLATFORMS))})") from None
    connect: Connect = importlib.import_module(module).connect
    return connect(settings, secrets, sink, publish)


__all__ = ["PLATFORMS", "Connect", "connection_for"]
