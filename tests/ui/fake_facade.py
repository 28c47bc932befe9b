"""An in-process FamiliarFacade for UI tests: scripted, observable, and honest about the Protocol.

The connection, the local chat and the settings are scripted here. The memory sub-APIs are not faked:
built with `backing=` a real Familiar over a store in a tmp folder (the `memory_facade` fixture), the
fake hands out that familiar's own `memory`, `controls`, `indexes`, `setup` and `explain`, and passes on its
MemoryChanged and IndexHealthReport events. Without one, `controls` is `FakeControls` (the window's
pause light asks it at start: nothing paused until a test pauses something).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
from app.runtime.api.views import Explanation, PauseKind, PauseView, SourceMessage, WorkersView
from app.runtime.errors import FamiliarError, ReplyFailedError
from app.runtime.events import (
    Activity,
    ActivityKind,
    ChangeKind,
    ConnectionChanged,
    ConnectionState,
    DiskFullChanged,
    FailureReported,
    GuildInfo,
    GuildsChanged,
    IndexHealthReport,
    LatencyMeasured,
    LorebookStatus,
    MemoryChanged,
    RuntimeEvent,
    SettingsReloaded,
)
from app.runtime.service import Familiar

Callback = Callable[[RuntimeEvent], None]


class FakeControls:
    """The switches as set, in memory, for a FakeFacade without a familiar (no places are known)."""

    def __init__(self, publish: Callback) -> None:
        self._publish = publish
        self._set: dict[PauseKind, tuple[str, ...]] = {"learning": (), "recall": ()}

    def _view(self) -> PauseView:
        return PauseView(learning=self._set["learning"], recall=self._set["recall"], places=())

    async def state(self) -> PauseView:
        await asyncio.sleep(0)
        return self._view()

    async def pause(self, kind: PauseKind, where: str = "*", *, initiator: object | None = None) -> PauseView:
        if where not in self._set[kind]:
            self._set[kind] = (*self._set[kind], where)
        self._publish(MemoryChanged(frozenset({ChangeKind.PAUSE}), initiator))
        return await self.state()

    async def resume(self, kind: PauseKind, where: str = "*", *, initiator: object | None = None) -> PauseView:
        self._set[kind] = tuple(w for w in self._set[kind] if w != where)
        self._publish(MemoryChanged(frozenset({ChangeKind.PAUSE}), initiator))
        return await self.state()

    async def workers(self) -> WorkersView:
        return WorkersView(projectors=(), pause=await self.state(), queued=0, failed=())


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)


class FakeFacade:
    """Implements FamiliarFacade. Configure with attributes, inspect `calls`.

    - `start()` publishes CONNECTING, then CONNECTED plus `guilds_on_start` and `latency_on_start`;
      with `start_error` set it publishes FAILED and FailureReported, then raises FamiliarError.
    - The local chat is `history` (what `load_local_history` gives): `chat_local()` adds the greeting it
      opened with (when the chat is empty), the message and the reply, which comes from `replies` in order
      (then echoes). `chat_error` makes the reply fail once the message is stored (ReplyFailedError, as an
      endpoint that times out), `chat_refused` refuse it before (FamiliarError, nothing stored).
      `regenerate_local()` replaces the last reply with the next of `replies` (or answers the last message);
      `regenerate_error` makes it raise. `clear_local()` empties `history` and `restore_local()` puts it back.
      `greetings` is what `local_greetings()` gives.
    - `gate`: when set, start / chat_local / regenerate_local / test_llm_endpoint wait
      for it first, so a test can look at the window while a call is in flight.
    """

    def __init__(
        self,
        *,
        name: str = "Wisp",
        display_name: str | None = None,
        configured: bool = True,
        missing: tuple[str, ...] = (),
        guilds_on_start: tuple[GuildInfo, ...] = (),
        latency_on_start: float | None = 42.0,
        backing: Familiar | None = None,
    ) -> None:
        self._name = name
        self._display_name = display_name or name
        self._backing = backing
        if backing is not None:
            backing.subscribe(self._from_backing)
        self._subscribers: list[Callback] = []
        self._turn_ids = iter(range(1, 1_000_000))
        self.status = StatusSnapshot(
            state=ConnectionState.STOPPED,
            guilds=(),
            latency_ms=None,
            last_error=None,
            configured=configured,
            missing=missing,
        )
        self.guilds_on_start = guilds_on_start
        self.latency_on_start = latency_on_start
        self.calls: list[Call] = []
        self.start_error: str | None = None
        self.stop_error: str | None = None
        self.chat_error: str | None = None
        self.chat_refused: str | None = None
        self.regenerate_error: str | None = None
        self.history_error: str | None = None
        self.endpoint_result = "OK: tiny-model answered in 0.2 s"
        self.endpoint_error: str | None = None
        self.replies: list[str] = []
        self.history: list[ChatLine] = []
        self.greetings: list[str] = []
        self._clears: list[tuple[ChatCleared, list[ChatLine]]] = []
        self.gate: asyncio.Event | None = None
        self.fake_controls = FakeControls(self.publish)

    # -- test helpers -------------------------------------------------------------------------

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def call_names(self) -> list[str]:
        return [call.name for call in self.calls]

    def publish(self, event: RuntimeEvent) -> None:
        """Deliver `event` to every subscriber, as the runtime does on the loop thread."""
        match event:
            case ConnectionChanged(state=state, detail=detail):
                self.status = replace(self.status, state=state, state_detail=detail)
            case GuildsChanged(guilds=guilds):
                self.status = replace(self.status, guilds=guilds)
            case LatencyMeasured(milliseconds=milliseconds):
                self.status = replace(self.status, latency_ms=milliseconds)
            case FailureReported(message=message):
                self.status = replace(self.status, last_error=message)
            case LorebookStatus(problem=problem):
                self.status = replace(self.status, lore_problem=problem)
            case SettingsReloaded(display_name=display_name):
                self._display_name = display_name
            case DiskFullChanged():
                self.status = replace(self.status, disk_full=event.banner or None)
            case Activity() | IndexHealthReport() | MemoryChanged():
                pass
        for callback in list(self._subscribers):
            callback(event)

    def publish_activity(self, kind: ActivityKind, where: str, summary: str) -> None:
        self.publish(Activity(kind=kind, where=where, summary=summary))

    def line(self, author: str, content: str, *, from_familiar: bool, greeting: bool = False) -> ChatLine:
        return ChatLine(
            turn_id=next(self._turn_ids),
            author=author,
            content=content,
            from_familiar=from_familiar,
            created_at=datetime.now(UTC),
            greeting=greeting,
        )

    def _reply_to(self, text: str) -> ChatLine:
        reply = self.replies.pop(0) if self.replies else f"You said: {text}"
        line = self.line(self._display_name, reply, from_familiar=True)
        self.history.append(line)
        return line

    def _from_backing(self, event: RuntimeEvent) -> None:
        if isinstance(event, MemoryChanged | IndexHealthReport):
            self.publish(event)

    def _real(self) -> Familiar:
        if self._backing is None:
            raise AssertionError("this FakeFacade has no memory: build it with backing=a real Familiar (memory_facade)")
        return self._backing

    async def _pass_gate(self) -> None:
        if self.gate is not None:
            await self.gate.wait()

    # -- FamiliarFacade -----------------------------------------------------------------------

    @property
    def familiar_name(self) -> str:
        return self._name

    @property
    def display_name(self) -> str:
        return self._display_name

    @property
    def home(self) -> Path:
        return Path("/nonexistent/familiar-home")

    @property
    def secrets_location(self) -> str:
        return "OS keyring"

    @property
    def memory(self) -> MemoryApi:
        return self._real().memory

    @property
    def controls(self) -> ControlsApi:
        return self.fake_controls if self._backing is None else self._backing.controls

    @property
    def indexes(self) -> IndexesApi:
        return self._real().indexes

    @property
    def setup(self) -> SetupApi:
        return self._real().setup

    @property
    def lore(self) -> LoreApi:
        return self._real().lore

    @property
    def character(self) -> CharacterApi:
        return self._real().character

    async def explain(self, turn_id: int) -> Explanation:
        self.calls.append(Call("explain", {"turn_id": turn_id}))
        return await self._real().explain(turn_id)

    async def newest_reply(self, place: str | None = None) -> int | None:
        self.calls.append(Call("newest_reply", {"place": place}))
        return await self._real().newest_reply(place)

    async def previous_explanation(self, turn_id: int) -> Explanation | None:
        self.calls.append(Call("previous_explanation", {"turn_id": turn_id}))
        return await self._real().previous_explanation(turn_id)

    async def answered_message(self, turn_id: int) -> SourceMessage | None:
        self.calls.append(Call("answered_message", {"turn_id": turn_id}))
        return await self._real().answered_message(turn_id)

    def subscribe(self, callback: Callback) -> Callable[[], None]:
        self.calls.append(Call("subscribe"))
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            self.calls.append(Call("unsubscribe"))
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def get_status(self) -> StatusSnapshot:
        return self.status

    async def start(self) -> None:
        self.calls.append(Call("start"))
        self.publish(ConnectionChanged(ConnectionState.CONNECTING))
        await self._pass_gate()
        await asyncio.sleep(0)
        if self.start_error is not None:
            self.publish(ConnectionChanged(ConnectionState.FAILED, self.start_error))
            self.publish(FailureReported(self.start_error))
            raise FamiliarError(self.start_error)
        self.publish(ConnectionChanged(ConnectionState.CONNECTED))
        self.publish(GuildsChanged(self.guilds_on_start))
        if self.latency_on_start is not None:
            self.publish(LatencyMeasured(self.latency_on_start))

    async def stop(self) -> None:
        self.calls.append(Call("stop"))
        await asyncio.sleep(0)
        if self.stop_error is not None:
            raise FamiliarError(self.stop_error)
        self.publish(ConnectionChanged(ConnectionState.STOPPED))
        self.publish(GuildsChanged(()))

    async def chat_local(self, text: str, *, greeting: str | None = None) -> ChatLine:
        self.calls.append(Call("chat_local", {"text": text, "greeting": greeting}))
        await self._pass_gate()
        await asyncio.sleep(0)
        if self.chat_refused is not None:
            raise FamiliarError(self.chat_refused)
        opened = None
        if greeting and not self.history:
            opened = self.line(self._display_name, greeting, from_familiar=True, greeting=True)
            self.history.append(opened)
        said = self.line("You", text, from_familiar=False)
        self.history.append(said)
        if self.chat_error is not None:
            raise ReplyFailedError(self.chat_error, said=said, greeting=opened)
        return self._reply_to(text)

    async def load_local_history(self, limit: int = 50) -> list[ChatLine]:
        self.calls.append(Call("load_local_history", {"limit": limit}))
        await asyncio.sleep(0)
        if self.history_error is not None:
            raise FamiliarError(self.history_error)
        return self.history[-limit:]

    async def local_greetings(self) -> list[str]:
        self.calls.append(Call("local_greetings"))
        await asyncio.sleep(0)
        return list(self.greetings)

    async def regenerate_local(self, turn_id: int) -> ChatLine:
        self.calls.append(Call("regenerate_local", {"turn_id": turn_id}))
        await self._pass_gate()
        await asyncio.sleep(0)
        if not self.history or self.history[-1].turn_id != turn_id:
            raise FamiliarError("That is no longer the chat's last message.")
        if self.regenerate_error is not None:
            raise FamiliarError(self.regenerate_error)
        last = self.history[-1]
        if not last.from_familiar:
            return self._reply_to(last.content)
        self.history.pop()
        return self._reply_to(self.history[-1].content if self.history else "")

    async def clear_local(self) -> ChatCleared:
        self.calls.append(Call("clear_local"))
        await asyncio.sleep(0)
        cleared = ChatCleared(messages=len(self.history), before=len(self._clears), after=len(self._clears) + 1)
        self._clears.append((cleared, self.history))
        self.history = []
        return cleared

    async def restore_local(self, cleared: ChatCleared) -> int:
        self.calls.append(Call("restore_local", {"cleared": cleared}))
        await asyncio.sleep(0)
        if not self._clears or self._clears[-1][0] != cleared:
            raise FamiliarError("The local chat was cleared again since.")
        _cleared, lines = self._clears.pop()
        self.history = lines + self.history
        return cleared.messages

    async def search_turns(self, query: str, limit: int = 20) -> list[TurnHit]:
        self.calls.append(Call("search_turns", {"query": query, "limit": limit}))
        await asyncio.sleep(0)
        return []

    async def test_llm_endpoint(self) -> str:
        self.calls.append(Call("test_llm_endpoint"))
        await self._pass_gate()
        await asyncio.sleep(0)
        if self.endpoint_error is not None:
            raise FamiliarError(self.endpoint_error)
        return self.endpoint_result

    async def diagnostics(self, extra_versions: Mapping[str, str] | None = None) -> str:
        self.calls.append(Call("diagnostics"))
        if self._backing is not None:
            return await self._backing.diagnostics(extra_versions)
        return f"Familiar diagnostics for '{self.familiar_name}' (scripted)\n"


def _conforms(fake: FakeFacade) -> FamiliarFacade:
    return fake  # mypy checks here that FakeFacade implements the Protocol


def _controls_conform(fake: FakeControls) -> ControlsApi:
    return fake
