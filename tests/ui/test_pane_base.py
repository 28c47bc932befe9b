"""The pane base: loading / empty / error states that say what to do, staleness and refresh-on-show,
no reload for the pane's own change, and a refresh asked for during a load."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget
from pytestqt.qtbot import QtBot

from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind, MemoryChanged
from app.ui.panes.base import LOADING_TEXT, Pane, PaneContext, PaneState
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, make_context, settle

pytestmark = QT_STRICT


class ProbePane(Pane):
    name = "probe"
    title = "Probe"
    watches = frozenset({ChangeKind.FACTS})
    empty_text = "No facts yet. They appear here as the familiar learns."

    def __init__(self, context: PaneContext) -> None:
        super().__init__(context)
        self.loads = 0
        self.script: list[bool | str] = []  # True: content, False: empty, str: FamiliarError
        self.gate: asyncio.Event | None = None
        self.set_body(QLabel("the facts"))

    async def load(self) -> bool:
        self.loads += 1
        if self.gate is not None:
            await self.gate.wait()
        step = self.script.pop(0) if self.script else True
        if isinstance(step, str):
            raise FamiliarError(step)
        return step


def make(qtbot: QtBot, facade: FakeFacade, *, show: bool = True) -> ProbePane:
    pane = ProbePane(make_context(qtbot, facade))
    qtbot.addWidget(pane)
    if show:
        pane.show()
        qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    return pane


def change(*kinds: ChangeKind, initiator: object | None = None) -> MemoryChanged:
    return MemoryChanged(frozenset(kinds), initiator=initiator)


def test_the_first_show_loads_and_the_states_say_what_to_do(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make(qtbot, facade, show=False)
    pane.script = [False, "The memory store is locked by another Familiar.", True]
    pane.gate = asyncio.Event()
    assert pane.state is PaneState.LOADING
    assert not pane.is_loaded
    with qtbot.waitSignal(pane.loaded, timeout=WAIT_MS):
        pane.show()
        qtbot.waitUntil(lambda: pane.loads == 1, timeout=WAIT_MS)
        assert pane.state_text() == LOADING_TEXT
        pane.gate.set()
    pane.gate = None
    assert pane.state is PaneState.EMPTY
    assert pane.state_text() == ProbePane.empty_text

    with qtbot.waitSignal(pane.loaded, timeout=WAIT_MS):
        pane.refresh()
    assert pane.state is PaneState.ERROR
    assert "locked by another Familiar" in pane.state_text()
    retry = pane._error_page.button
    assert retry.text() == "Try again"
    with qtbot.waitSignal(pane.loaded, timeout=WAIT_MS):
        qtbot.mouseClick(retry, Qt.MouseButton.LeftButton)
    assert pane.state is PaneState.READY
    assert pane.state_text() == ""
    assert pane.loads == 3


def test_a_change_it_watches_reloads_a_visible_pane_at_once(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make(qtbot, facade)
    with qtbot.waitSignal(pane.loaded, timeout=WAIT_MS):
        facade.publish(change(ChangeKind.FACTS))
    assert pane.loads == 2


def test_its_own_change_and_changes_it_does_not_watch_do_not_reload(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make(qtbot, facade)
    facade.publish(change(ChangeKind.FACTS, initiator=pane))
    facade.publish(change(ChangeKind.TURNS, ChangeKind.PAUSE))
    with qtbot.assertNotEmitted(pane.loaded, wait=300):
        pass
    assert pane.loads == 1
    assert not pane.is_stale


def test_a_hidden_pane_goes_stale_and_reloads_when_shown(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make(qtbot, facade)
    pane.hide()
    facade.publish(change(ChangeKind.FACTS))
    settle(qtbot)
    assert pane.is_stale
    assert pane.loads == 1
    with qtbot.waitSignal(pane.loaded, timeout=WAIT_MS):
        pane.show()
    assert pane.loads == 2
    assert not pane.is_stale


def test_a_refresh_during_a_load_runs_once_more_after_it(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make(qtbot, facade)
    pane.gate = asyncio.Event()
    pane.refresh()
    qtbot.waitUntil(lambda: pane.loads == 2, timeout=WAIT_MS)
    pane.refresh()
    pane.refresh()
    assert pane.state is PaneState.READY  # a reload keeps showing what it had
    pane.gate.set()
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    assert pane.loads == 3


def test_set_body_and_an_empty_action(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make(qtbot, facade, show=False)
    pane.script = [False]
    pressed: list[bool] = []
    pane.set_empty_action("Open Settings…", lambda: pressed.append(True))
    replacement = QWidget()
    pane.set_body(replacement)
    pane.show()
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    qtbot.mouseClick(pane._empty_page.button, Qt.MouseButton.LeftButton)
    assert pressed == [True]
    pane.refresh()
    qtbot.waitUntil(lambda: pane.state is PaneState.READY, timeout=WAIT_MS)
    assert pane._pages.currentWidget() is replacement
