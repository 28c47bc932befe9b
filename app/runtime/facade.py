"""The facade the window and the CLI talk to. The UI depends on this Protocol, never on internals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from app.runtime.events import ConnectionState, GuildInfo, RuntimeEvent


@dataclass(frozen=True, slots=True)
class StatusSnapshot:
    state: ConnectionState
    guilds: tuple[GuildInfo, ...]
    latency_ms: float | None
    last_error: str | None
    configured: bool  # a bot token and an LLM endpoint are both set
    missing: tuple[str, ...]  # what is still missing, in words ("bot token", "LLM endpoint")


@dataclass(frozen=True, slots=True)
class TurnHit:
    turn_id: int
    where: str  # "guild:<id>/<channel id>", "dm:<user id>" or "local"
    author: str  # display name
    content: str
    created_at: datetime
    score: float


@dataclass(frozen=True, slots=True)
class ChatLine:
    """One line of the local chat transcript."""

    turn_id: int
    author: str
    content: str
    from_familiar: bool
    created_at: datetime


class FamiliarFacade(Protocol):
    """Everything a pane or a CLI command can do. All I/O is async; `get_*` never does I/O."""

    @property
    def familiar_name(self) -> str: ...

    @property
    def home(self) -> Path: ...

    @property
    def secrets_location(self) -> str:
        """Where the bot token and API key are kept, in words ("OS keyring", or the fallback file)."""
        ...

    def subscribe(self, callback: Callable[[RuntimeEvent], None]) -> Callable[[], None]:
        """Call `callback` (on the event loop's thread) for every event; returns an unsubscribe."""
        ...

    def get_status(self) -> StatusSnapshot: ...

    async def start(self) -> None:
        """Connect to Discord. Failures are published as FailureReported and raised as FamiliarError."""
        ...

    async def stop(self) -> None: ...

    async def chat_local(self, text: str) -> ChatLine:
        """Send `text` in the window's local chat; returns the familiar's reply line."""
        ...

    async def load_local_history(self, limit: int = 50) -> list[ChatLine]: ...

    async def search_turns(self, query: str, limit: int = 20) -> list[TurnHit]: ...

    async def save_credentials(
        self, *, bot_token: str | None, llm_base_url: str | None, llm_api_key: str | None, llm_model: str | None
    ) -> None:
        """Store secrets in the keyring and the endpoint in character.toml (round-trip preserving)."""
        ...

    async def test_llm_endpoint(self) -> str:
        """Send a tiny request to the configured endpoint; returns a one-line result, raises FamiliarError."""
        ...
