"""The fake facade is a real implementation of the Protocol: check that it behaves like one."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from app.runtime.api.facade import CharacterApi, ControlsApi, FamiliarFacade, IndexesApi, LoreApi, MemoryApi, SetupApi
from app.runtime.errors import FamiliarError
from app.runtime.events import (
    ConnectionChanged,
    ConnectionState,
    FailureReported,
    GuildInfo,
    GuildsChanged,
    LatencyMeasured,
    RuntimeEvent,
)
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, Run

pytestmark = QT_STRICT

GUILDS = (GuildInfo(1, "Lantern Club", 12),)


def test_start_publishes_connecting_then_connected_and_guilds(run: Run[Any]) -> None:
    facade = FakeFacade(guilds_on_start=GUILDS, latency_on_start=40.0)
    seen: list[RuntimeEvent] = []
    facade.subscribe(seen.append)

    run(facade.start())

    assert [type(event) for event in seen] == [ConnectionChanged, ConnectionChanged, GuildsChanged, LatencyMeasured]
    assert [event.state for event in seen if isinstance(event, ConnectionChanged)] == [
        ConnectionState.CONNECTING,
        ConnectionState.CONNECTED,
    ]
    status = facade.get_status()
    assert status.state is ConnectionState.CONNECTED
    assert status.guilds == GUILDS
    assert status.latency_ms == 40.0


def test_start_failure_publishes_and_raises(run: Run[Any]) -> None:
    facade = FakeFacade()
    facade.start_error = "Discord rejected the bot token."
    seen: list[RuntimeEvent] = []
    facade.subscribe(seen.append)

    with pytest.raises(FamiliarError, match="rejected the bot token"):
        run(facade.start())

    last = seen[-1]
    assert isinstance(last, FailureReported)
    assert last.message == "Discord rejected the bot token."
    assert facade.get_status().state is ConnectionState.FAILED
    assert facade.get_status().last_error == "Discord rejected the bot token."


def test_unsubscribe_stops_delivery() -> None:
    facade = FakeFacade()
    seen: list[RuntimeEvent] = []
    unsubscribe = facade.subscribe(seen.append)
    unsubscribe()
    unsubscribe()  # twice is harmless

    facade.publish(LatencyMeasured(10.0))

    assert seen == []
    assert facade.subscriber_count == 0
    assert facade.call_names() == ["subscribe", "unsubscribe", "unsubscribe"]


def test_chat_replies_in_script_order_then_echoes(run: Run[Any]) -> None:
    facade = FakeFacade(name="Wisp")
    facade.replies = ["Hello!"]

    first = run(facade.chat_local("hi"))
    second = run(facade.chat_local("again"))

    assert (first.author, first.content, first.from_familiar) == ("Wisp", "Hello!", True)
    assert second.content == "You said: again"
    assert first.turn_id < second.turn_id


def _protocol_members(protocol: type) -> list[str]:
    return sorted(
        name
        for klass in protocol.__mro__
        if klass is not object and getattr(klass, "_is_protocol", False)
        for name in vars(klass)
        if not name.startswith("_")
    )


@pytest.mark.parametrize(
    "protocol", [FamiliarFacade, MemoryApi, ControlsApi, IndexesApi, SetupApi, LoreApi, CharacterApi]
)
def test_the_fake_over_a_real_familiar_has_every_member_with_its_signature(
    protocol: type, memory_facade: FakeFacade
) -> None:
    """mypy checks app/ only: this keeps the fake (and the sub-APIs it hands out) honest at run time."""
    target: object = {
        FamiliarFacade: memory_facade,
        MemoryApi: memory_facade.memory,
        ControlsApi: memory_facade.controls,
        IndexesApi: memory_facade.indexes,
        SetupApi: memory_facade.setup,
        LoreApi: memory_facade.lore,
        CharacterApi: memory_facade.character,
    }[protocol]
    for name in _protocol_members(protocol):
        declared = inspect.getattr_static(protocol, name)
        assert hasattr(target, name), f"{type(target).__name__} lacks {name}"
        if isinstance(declared, property):
            continue
        wanted = inspect.signature(declared)
        have = inspect.signature(getattr(target, name))
        assert list(wanted.parameters)[1:] == [
            p
            for p in have.parameters
            if have.parameters[p].default is inspect.Parameter.empty or p in wanted.parameters
        ], f"{name}: {have} does not match {wanted}"
        assert inspect.iscoroutinefunction(declared) == inspect.iscoroutinefunction(getattr(target, name)), name


def test_without_a_backing_familiar_the_memory_sub_apis_say_so() -> None:
    with pytest.raises(AssertionError, match="backing="):
        _ = FakeFacade().memory


def test_without_a_backing_familiar_the_switches_are_kept_in_memory(run: Run[Any]) -> None:
    facade = FakeFacade()
    for name in _protocol_members(ControlsApi):
        wanted = inspect.signature(inspect.getattr_static(ControlsApi, name))
        assert list(wanted.parameters)[1:] == list(inspect.signature(getattr(facade.controls, name)).parameters)
    seen: list[RuntimeEvent] = []
    facade.subscribe(seen.append)
    assert not run(facade.controls.state()).anything_paused
    assert run(facade.controls.pause("recall", "guild:1")).recall == ("guild:1",)
    assert run(facade.controls.resume("recall", "guild:1")).recall == ()
    assert len(seen) == 2
