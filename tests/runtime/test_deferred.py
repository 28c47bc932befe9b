"""DeferredFacade: the window's facade while the familiar opens behind it (cold start, issue 11 item 7)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.api.deferred import DeferredFacade
from app.runtime.api.facade import CharacterApi, ControlsApi, FamiliarFacade, IndexesApi, LoreApi, MemoryApi, SetupApi
from app.runtime.errors import FamiliarError
from app.runtime.events import ConnectionChanged, ConnectionState, RuntimeEvent
from app.runtime.service import Familiar

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def opened(tmp_path: Path) -> AsyncIterator[Familiar]:
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={})
    yield familiar
    await familiar.close()


async def test_calls_made_while_starting_wait_and_then_run_on_the_familiar(opened: Familiar, tmp_path: Path) -> None:
    deferred = DeferredFacade("default", opened.home)
    assert deferred.get_status().state is ConnectionState.STARTING
    assert deferred.get_status().configured  # no set-up hint before anything is known
    history = asyncio.ensure_future(deferred.load_local_history())
    pending = asyncio.ensure_future(deferred.memory.pending())
    pause = asyncio.ensure_future(deferred.controls.state())
    await asyncio.sleep(0.05)
    assert not history.done()
    assert not pending.done()

    deferred.go_live(opened)

    assert await asyncio.wait_for(history, 5) == []
    assert (await asyncio.wait_for(pending, 5)).items == ()
    assert (await asyncio.wait_for(pause, 5)).learning == ()
    assert deferred.get_status() == opened.get_status()
    assert deferred.memory is opened.memory  # once live, the familiar's own sub-APIs
    assert deferred.secrets_location == opened.secrets_location


async def test_subscribers_move_to_the_familiar_and_hear_its_state(opened: Familiar) -> None:
    deferred = DeferredFacade("default", opened.home)
    heard: list[RuntimeEvent] = []
    dropped: list[RuntimeEvent] = []
    deferred.subscribe(heard.append)
    unsubscribe = deferred.subscribe(dropped.append)
    unsubscribe()

    deferred.go_live(opened)
    assert heard == [ConnectionChanged(state=ConnectionState.STOPPED, at=heard[0].at)]
    opened.publish(ConnectionChanged(ConnectionState.CONNECTING))
    assert len(heard) == 2
    assert dropped == []

    late: list[RuntimeEvent] = []
    stop_late = deferred.subscribe(late.append)
    opened.publish(ConnectionChanged(ConnectionState.CONNECTED))
    stop_late()
    opened.publish(ConnectionChanged(ConnectionState.STOPPED))
    assert len(late) == 1


async def test_unsubscribing_after_going_live_unsubscribes_from_the_familiar(opened: Familiar) -> None:
    deferred = DeferredFacade("default", opened.home)
    heard: list[RuntimeEvent] = []
    unsubscribe = deferred.subscribe(heard.append)
    deferred.go_live(opened)
    unsubscribe()
    opened.publish(ConnectionChanged(ConnectionState.CONNECTING))
    assert len(heard) == 1  # only the state it was sent when the familiar went live


async def test_a_familiar_that_cannot_open_fails_every_waiting_call_with_the_reason(tmp_path: Path) -> None:
    deferred = DeferredFacade("default", tmp_path)
    waiting = asyncio.ensure_future(deferred.memory.pending())
    await asyncio.sleep(0)
    deferred.fail("character.toml, line 3: broken")
    with pytest.raises(FamiliarError, match="line 3: broken"):
        await asyncio.wait_for(waiting, 5)
    with pytest.raises(FamiliarError, match="line 3: broken"):
        await deferred.start()
    status = deferred.get_status()
    assert status.state is ConnectionState.STOPPED
    assert status.last_error == "character.toml, line 3: broken"
    await deferred.stop()  # nothing runs: nothing to stop, no error


# -- conformance: every member of the facade's Protocol, before the familiar is live ------------------------
def _protocol_members(protocol: type) -> list[str]:
    return sorted(
        name
        for klass in protocol.__mro__
        if klass is not object and getattr(klass, "_is_protocol", False)
        for name in vars(klass)
        if not name.startswith("_")
    )


SUB_APIS = {"memory": MemoryApi, "controls": ControlsApi, "indexes": IndexesApi, "setup": SetupApi}
SUB_APIS |= {"lore": LoreApi, "character": CharacterApi}


async def test_the_deferred_facade_defines_every_member_of_the_protocol_itself(tmp_path: Path) -> None:
    """No member is left to a catch-all: before the familiar is live, `facade.lore` was a plain function
    (issue 18 item 3) because __getattr__ answered everything it did not define."""
    assert "__getattr__" not in vars(DeferredFacade)
    for name in _protocol_members(FamiliarFacade):
        declared = inspect.getattr_static(FamiliarFacade, name)
        mine = inspect.getattr_static(DeferredFacade, name, None)
        assert mine is not None, f"DeferredFacade lacks {name}"
        assert isinstance(mine, property) == isinstance(declared, property), name
        if not isinstance(declared, property):
            assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(declared), name
            assert list(inspect.signature(mine).parameters) == list(inspect.signature(declared).parameters), name


@pytest.mark.parametrize("api", sorted(SUB_APIS))
async def test_each_sub_api_before_the_familiar_is_live_answers_as_its_protocol_says(api: str, tmp_path: Path) -> None:
    """Members without I/O answer at once with their value; the others are calls to await."""
    protocol = SUB_APIS[api]
    sub = getattr(DeferredFacade("default", tmp_path), api)
    for name in _protocol_members(protocol):
        declared = inspect.getattr_static(protocol, name)
        if isinstance(declared, property):
            assert isinstance(inspect.getattr_static(type(sub), name, None), property), f"{api}.{name}"
            continue
        member = getattr(sub, name)
        if inspect.iscoroutinefunction(declared):
            assert inspect.iscoroutinefunction(member), f"{api}.{name}"
        else:
            assert inspect.getattr_static(type(sub), name, None) is not None, f"{api}.{name} is not defined"
            wanted = list(inspect.signature(declared).parameters)[1:]
            assert list(inspect.signature(member).parameters) == wanted, f"{api}.{name}"


async def test_the_lore_and_the_character_load_once_the_familiar_is_live_and_count_before(
    opened: Familiar, tmp_path: Path
) -> None:
    deferred = DeferredFacade("default", opened.home)
    assert deferred.lore.problem is None
    assert deferred.lore.count_tokens("a lantern in the harbour") == opened.lore.count_tokens(
        "a lantern in the harbour"
    )
    assert deferred.lore.check_key("/[/") == opened.lore.check_key("/[/")
    book = asyncio.ensure_future(deferred.lore.load())
    character = asyncio.ensure_future(deferred.character.load())
    await asyncio.sleep(0.05)
    assert not book.done()
    deferred.go_live(opened)
    assert (await asyncio.wait_for(book, 10)).revision == (await opened.lore.load()).revision
    view = await asyncio.wait_for(character, 10)
    assert deferred.character.check(view.draft) == opened.character.check(view.draft)
    assert deferred.character.count_tokens("hello there") == opened.character.count_tokens("hello there")


async def test_the_name_it_goes_by_is_read_from_character_toml_until_it_is_live(
    opened: Familiar, tmp_path: Path
) -> None:
    """The window's title says the familiar's name from the first paint, not its folder's (issue 18 item 6)."""
    opened.paths.character_toml.write_text('[familiar]\ndisplay_name = "Moth"\n', encoding="utf-8")
    deferred = DeferredFacade("default", opened.home)
    assert (deferred.familiar_name, deferred.display_name) == ("default", "Moth")
    assert DeferredFacade("default", tmp_path / "nowhere").display_name == "default"  # unreadable: the folder's
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "character.toml").write_text("[familiar\n", encoding="utf-8")
    assert DeferredFacade("default", broken).display_name == "default"
    await opened.reconfigure()
    deferred.go_live(opened)
    assert deferred.display_name == opened.display_name == "Moth"
    greetings = asyncio.ensure_future(DeferredFacade("default", opened.home).local_greetings())
    await asyncio.sleep(0.05)
    assert not greetings.done(), "a call made before the familiar is live waits for it"
    greetings.cancel()
