"""DeferredFacade: the window's facade while the familiar opens behind it (cold start, issue 11 item 7)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.deferred import DeferredFacade
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
