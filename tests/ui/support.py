"""Shared constants for the UI tests (kept out of conftest.py so tests can import them)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest
from PySide6.QtWidgets import QApplication, QDialog, QMessageBox, QWidget
from pytestqt.qtbot import QtBot

from app.runtime.api.facade import FamiliarFacade
from app.ui.async_slot import running_slots
from app.ui.bridge import RuntimeBridge
from app.ui.panes.base import PaneContext
from app.ui.progress import StatusProgress
from app.ui.undo import UndoCentre
from app.ui.widgets.notices import NoticeArea

T = TypeVar("T")
Run = Callable[[Coroutine[Any, Any, T]], T]

WAIT_MS = 3_000
"""Upper bound for every qtbot wait; the waits normally end within milliseconds."""

QT_STRICT = [
    pytest.mark.timeout(20),
    pytest.mark.qt_log_level_fail("WARNING"),
    # The offscreen platform plugin says this when a top-level widget is shown or raised.
    pytest.mark.qt_log_ignore(r"This plugin does not support (propagateSizeHints|raise)\(\)"),
]
"""`pytestmark` for UI test modules: a Qt warning fails the test."""


def settle(qtbot: QtBot) -> None:
    """Wait until every async handler the window started has finished."""
    qtbot.waitUntil(lambda: not running_slots(), timeout=WAIT_MS)


def make_context(qtbot: QtBot, facade: FamiliarFacade) -> PaneContext:
    """What a window gives its panes, for building one pane alone: a bridge, undo with its notices
    (on a host widget), status-bar progress."""
    host = QWidget()
    qtbot.addWidget(host)
    # qtbot only holds widgets weakly: keep the host (and so the bridge and undo on it) for the test.
    qtbot.__dict__.setdefault("_kept_hosts", []).append(host)
    bridge = RuntimeBridge(facade, host)
    notices = NoticeArea(host)
    return PaneContext(
        facade=facade, bridge=bridge, undo=UndoCentre(notices, host), status=StatusProgress(host), window=host
    )


D = TypeVar("D", bound=QDialog)


def open_dialog(qtbot: QtBot, kind: type[D]) -> D:
    """The dialog of that kind the window has just opened (window-modal, without a nested loop), once shown."""
    found: list[D] = []

    def shown() -> bool:
        found[:] = [w for w in QApplication.topLevelWidgets() if isinstance(w, kind) and w.isVisible()]
        return bool(found)

    qtbot.waitUntil(shown, timeout=WAIT_MS)
    assert len(found) == 1, found
    return found[0]


def press(box: QMessageBox, button: QMessageBox.StandardButton) -> None:
    """Press one of a message box's standard buttons, as a click would."""
    pressed = box.button(button)
    assert pressed is not None, f"the box has no {button} button"
    pressed.click()
