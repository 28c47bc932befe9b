"""The window shown before the familiar has opened (cold start): a DeferredFacade, panes loading, then live."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from app.runtime.api.deferred import DeferredFacade
from app.runtime.service import Familiar
from app.ui.async_slot import running_slots
from app.ui.main_window import MainWindow
from app.ui.panes.base import PaneState
from tests.ui.support import QT_STRICT, WAIT_MS, settle

pytestmark = QT_STRICT


def test_panes_wait_in_their_loading_state_then_show_the_familiar(qtbot: QtBot, real_familiar: Familiar) -> None:
    deferred = DeferredFacade("default", real_familiar.home)
    window = MainWindow(deferred, pane="chat")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.chat.state is PaneState.LOADING, timeout=WAIT_MS)
    assert window.connection_indicator.text() == "Starting…"
    assert window.dashboard.state_indicator.text() == "Starting…"

    deferred.go_live(real_familiar)
    window.familiar_ready()

    qtbot.waitUntil(lambda: window.chat.is_loaded, timeout=WAIT_MS)
    assert window.chat.state is not PaneState.ERROR
    assert window.connection_indicator.text() == "Stopped"
    assert window.dashboard.state_indicator.text() == "Stopped"
    assert not window.dashboard.setup_hint.isHidden()  # not configured: now it is known
    settle(qtbot)


def test_a_familiar_that_cannot_open_shows_the_reason_in_the_waiting_panes(qtbot: QtBot, tmp_path: Path) -> None:
    deferred = DeferredFacade("default", tmp_path)
    window = MainWindow(deferred, pane="chat")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.chat.state is PaneState.LOADING, timeout=WAIT_MS)

    deferred.fail("character.toml, line 3, key 'llm.model': not a string")

    qtbot.waitUntil(lambda: window.chat.is_loaded, timeout=WAIT_MS)
    model = window.chat.transcript_model  # the chat says a failed history load as a line of its transcript
    said = " ".join(str(model.index(row, 0).data()) for row in range(model.rowCount()))
    assert "line 3, key 'llm.model'" in said
    assert window.dashboard.state_indicator.text() == "Starting…"  # the bootstrap then shows the error and quits
    settle(qtbot)


def test_the_first_paint_is_awaitable(qtbot: QtBot, real_familiar: Familiar) -> None:
    deferred = DeferredFacade("default", real_familiar.home)
    window = MainWindow(deferred)
    qtbot.addWidget(window)
    painted = window.first_paint()
    window.show()
    qtbot.waitUntil(painted.done, timeout=WAIT_MS)
    # What waited for the familiar (the pause light's first look) answers once it is live.
    deferred.go_live(real_familiar)
    qtbot.waitUntil(lambda: not running_slots(), timeout=WAIT_MS)
