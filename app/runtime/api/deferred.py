"""A facade the window can be built on before the familiar has opened, so the window shows at once.

Opening a familiar imports the Discord and LLM clients and the search index and opens the store: most
of a cold start. The window needs none of that to draw. The bootstrap builds the window on a
`DeferredFacade`, shows it, opens the familiar, then calls `go_live(familiar)` (or `fail(message)`).

Until then: `get_status()` says STARTING; every async call (a pane's load, a button) waits for the
familiar and then runs on it, so panes show their loading state meanwhile; `subscribe` is remembered and
moved onto the familiar when it is live, which then sends each subscriber its connection state. After a
`fail`, waiting and later calls raise FamiliarError with the reason.

No Qt, no heavy imports: this module is on the window's path to its first paint.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from app.runtime.api.facade import (
    CharacterApi,
    ChatCleared,
    ChatLine,
    ControlsApi,
    FamiliarFacade,
    IndexesApi,
    LoreApi,
    MemoryApi,
    SetupApi,
    StatusSnapshot,
    TurnHit,
)
from app.runtime.errors import FamiliarError
from app.runtime.events import ConnectionChanged, ConnectionState, RuntimeEvent

if TYPE_CHECKING:
    from app.runtime.api.views import CharacterDraft, Explanation, FieldProblem, SourceMessage

STARTING_SECRETS = "(known once the familiar has opened)"


class DeferredFacade:
    """A FamiliarFacade standing in for one that is still opening (see the module doc)."""

    def __init__(self, name: str, home: Path, display_name: str | None = None) -> None:
        """`display_name`: what the familiar goes by until it is live (None: read from its character.toml now,
        else its folder name)."""
        self._name = name
        self._home = home
        self._display_name = display_name or _peek_display_name(home / "character.toml") or name
        self._live: FamiliarFacade | None = None
        self._failure: str | None = None
        self._settled = asyncio.Event()
        self._subscribers: list[Callable[[RuntimeEvent], None]] = []
        self._unsubscribers: dict[int, Callable[[], None]] = {}

    # -- becoming live -----------------------------------------------------------------------------
    @property
    def live(self) -> FamiliarFacade | None:
        return self._live

    @property
    def failure(self) -> str | None:
        return self._failure

    def go_live(self, familiar: FamiliarFacade) -> None:
        """The familiar has opened: calls waiting for it run now, and subscribers move onto it."""
        if self._settled.is_set():
            raise RuntimeError("the deferred facade is already settled")
        self._live = familiar
        waiting, self._subscribers = self._subscribers, []
        for callback in waiting:
            self._unsubscribers[id(callback)] = familiar.subscribe(callback)
        self._settled.set()
        state = familiar.get_status().state
        for callback in waiting:
            callback(ConnectionChanged(state=state))

    def fail(self, message: str) -> None:
        """The familiar could not open: calls waiting for it (and later ones) raise FamiliarError(message)."""
        if self._settled.is_set():
            return
        self._failure = message
        self._settled.set()

    async def wait_live(self) -> FamiliarFacade:
        await self._settled.wait()
        if self._live is None:
            raise FamiliarError(self._failure or "The familiar could not start.")
        return self._live

    def _call(self, name: str) -> Callable[..., Awaitable[Any]]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            live = await self.wait_live()
            return await getattr(live, name)(*args, **kwargs)

        return call

    # -- FamiliarFacade ------------------------------------------------------------------------------
    @property
    def familiar_name(self) -> str:
        return self._name

    @property
    def display_name(self) -> str:
        return self._live.display_name if self._live is not None else self._display_name

    @property
    def home(self) -> Path:
        return self._home

    @property
    def secrets_location(self) -> str:
        return self._live.secrets_location if self._live is not None else STARTING_SECRETS

    @property
    def memory(self) -> MemoryApi:
        return self._live.memory if self._live is not None else cast(MemoryApi, _DeferredApi(self, "memory"))

    @property
    def controls(self) -> ControlsApi:
        return self._live.controls if self._live is not None else cast(ControlsApi, _DeferredApi(self, "controls"))

    @property
    def indexes(self) -> IndexesApi:
        return self._live.indexes if self._live is not None else cast(IndexesApi, _DeferredApi(self, "indexes"))

    @property
    def setup(self) -> SetupApi:
        return self._live.setup if self._live is not None else cast(SetupApi, _DeferredApi(self, "setup"))

    @property
    def lore(self) -> LoreApi:
        return self._live.lore if self._live is not None else cast(LoreApi, _DeferredLore(self, "lore"))

    @property
    def character(self) -> CharacterApi:
        if self._live is not None:
            return self._live.character
        return cast(CharacterApi, _DeferredCharacter(self, "character", self._home / "character.toml"))

    async def explain(self, turn_id: int) -> Explanation:
        return cast("Explanation", await self._call("explain")(turn_id))

    async def newest_reply(self, place: str | None = None) -> int | None:
        return cast("int | None", await self._call("newest_reply")(place))

    async def previous_explanation(self, turn_id: int) -> Explanation | None:
        return cast("Explanation | None", await self._call("previous_explanation")(turn_id))

    async def answered_message(self, turn_id: int) -> SourceMessage | None:
        return cast("SourceMessage | None", await self._call("answered_message")(turn_id))

    def subscribe(self, callback: Callable[[RuntimeEvent], None]) -> Callable[[], None]:
        if self._live is not None:
            return self._live.subscribe(callback)
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)
            moved = self._unsubscribers.pop(id(callback), None)
            if moved is not None:
                moved()

        return unsubscribe

    def get_status(self) -> StatusSnapshot:
        if self._live is not None:
            return self._live.get_status()
        return StatusSnapshot(
            state=ConnectionState.STOPPED if self._failure else ConnectionState.STARTING,
            guilds=(),
            latency_ms=None,
            last_error=self._failure,
            configured=True,  # not known yet: no set-up hint until it is
            missing=(),
        )

    async def start(self) -> None:
        await self._call("start")()

    async def stop(self) -> None:
        if self._live is not None:  # nothing runs before it is live: nothing to stop
            await self._live.stop()

    async def chat_local(self, text: str, *, greeting: str | None = None) -> ChatLine:
        return cast(ChatLine, await self._call("chat_local")(text, greeting=greeting))

    async def load_local_history(self, limit: int = 50) -> list[ChatLine]:
        return cast(list[ChatLine], await self._call("load_local_history")(limit))

    async def local_greetings(self) -> list[str]:
        return cast(list[str], await self._call("local_greetings")())

    async def regenerate_local(self, turn_id: int) -> ChatLine:
        return cast(ChatLine, await self._call("regenerate_local")(turn_id))

    async def clear_local(self) -> ChatCleared:
        return cast(ChatCleared, await self._call("clear_local")())

    async def restore_local(self, cleared: ChatCleared) -> int:
        return cast(int, await self._call("restore_local")(cleared))

    async def search_turns(self, query: str, limit: int = 20) -> list[TurnHit]:
        return cast(list[TurnHit], await self._call("search_turns")(query, limit))

    async def test_llm_endpoint(self) -> str:
        return cast(str, await self._call("test_llm_endpoint")())

    async def diagnostics(self, extra_versions: Mapping[str, str] | None = None) -> str:
        return cast(str, await self._call("diagnostics")(extra_versions))


def _peek_display_name(character_toml: Path) -> str | None:
    """The display name character.toml gives, read without the settings' loader (None: no file, or it does
    not read: the familiar's opening will say why)."""
    import tomllib

    try:
        table = tomllib.loads(character_toml.read_text(encoding="utf-8")).get("familiar")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    name = table.get("display_name") if isinstance(table, dict) else None
    return (name.strip() or None) if isinstance(name, str) else None


class _DeferredApi:
    """A sub-API (memory, controls, indexes) of a familiar still opening: each method waits for it."""

    def __init__(self, owner: DeferredFacade, api: str) -> None:
        self._owner = owner
        self._api = api

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name.startswith("_"):
            raise AttributeError(name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            live = await self._owner.wait_live()
            return await getattr(getattr(live, self._api), name)(*args, **kwargs)

        return call


class _DeferredLore(_DeferredApi):
    """The lorebook API before the familiar is live: its members without I/O answer at once."""

    @property
    def problem(self) -> str | None:
        return None  # not read yet: the pane shows the book's problem once it has loaded it

    def check_key(self, key: str) -> str | None:
        from app.lore.keys import key_problem

        return key_problem(key)

    def count_tokens(self, text: str) -> int:
        from app.runtime.context.budget import count_tokens

        return count_tokens(text)


class _DeferredCharacter(_DeferredApi):
    """The character API before the familiar is live: its members without I/O answer at once."""

    def __init__(self, owner: DeferredFacade, api: str, character_toml: Path) -> None:
        super().__init__(owner, api)
        self._character_toml = character_toml

    def check(self, draft: CharacterDraft) -> tuple[FieldProblem, ...]:
        from app.runtime.api.character import check_draft

        return check_draft(draft, self._character_toml)

    def count_tokens(self, text: str) -> int:
        from app.runtime.api.character import count_character_tokens

        return count_character_tokens(text)
