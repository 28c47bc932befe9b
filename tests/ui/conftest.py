"""UI test fixtures: offscreen Qt, one session-wide qasync loop, and the fake facade.

The loop is created with `already_running=True` on pytest-qt's QApplication (pattern 1 of the stack notes):
`@asyncSlot` handlers then run while a sync test waits with `qtbot.waitUntil(...)`. It is never stopped (that
would make every later qtbot wait return at once); it is only marked as the running loop while a UI test runs,
so async tests elsewhere in the session can still start their own loops.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
import qasync
import shiboken6
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from app.ui.async_slot import running_slots
from app.ui.theme import ThemeController
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import WAIT_MS, Run

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # read when pytest-qt creates the QApplication

T = TypeVar("T")

_loops: list[asyncio.AbstractEventLoop] = []  # keeps the session loop alive to the very end of the process


@pytest.fixture(scope="session")
def qasync_loop(qapp: QApplication) -> Iterator[asyncio.AbstractEventLoop]:
    if not _loops:
        loop: asyncio.AbstractEventLoop = qasync.QEventLoop(qapp, already_running=True)
        asyncio.events._set_running_loop(None)  # set per test below
        _loops.append(loop)
    # The default executor runs getaddrinfo and to_thread calls on QThreads. The loop is never closed (see
    # above), so shut the executor down ourselves: a QThread still running when Python exits aborts it.
    executor = qasync.QThreadExecutor()
    _loops[0].set_default_executor(executor)
    yield _loops[0]
    executor.shutdown(wait=True)


@pytest.fixture(scope="session", autouse=True)
def _runtime_clients_loaded() -> None:
    """The window loads the LLM and Discord clients' packages behind itself once the familiar is open
    (app/bootstrap.py `_warm_imports`), and the timeline book before it opens it (`_open_behind_window`);
    these tests open the familiar themselves, so they load them here, rather than on the first reply or
    slice, where importing them would eat the waits' time on a busy machine."""
    importlib.import_module("openai")
    importlib.import_module("app.runtime.discord.client")
    importlib.import_module("app.memory.timeline")


@pytest.fixture(autouse=True)
def _closing_never_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window closed at a test's end with edits left unsaved would ask in a modal box that nobody answers:
    it may close. A test of the question turns `ask_before_discarding` on again for its window."""
    from app.ui.main_window import MainWindow

    monkeypatch.setattr(MainWindow, "ask_before_discarding", False)


@pytest.fixture(autouse=True)
def _qasync_running(qasync_loop: asyncio.AbstractEventLoop, qtbot: QtBot) -> Iterator[None]:
    asyncio.events._set_running_loop(qasync_loop)
    try:
        yield
        leftover = running_slots()
        for task in leftover:
            task.cancel()
        qtbot.waitUntil(lambda: all(task.done() for task in leftover), timeout=WAIT_MS)
        assert not leftover, f"the test left handler tasks running: {leftover}"
    finally:
        asyncio.events._set_running_loop(None)


@pytest.fixture
def run(qtbot: QtBot) -> Run[Any]:
    """Run a coroutine on the qasync loop from a sync test and return its result."""

    def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
        task = asyncio.ensure_future(coroutine)
        qtbot.waitUntil(task.done, timeout=WAIT_MS)
        return task.result()

    return run_coroutine


@pytest.fixture
def facade() -> FakeFacade:
    return FakeFacade()


@pytest.fixture
def real_familiar(run: Run[Any], tmp_path: Path) -> Iterator[Familiar]:
    """The real runtime over a real store in a tmp folder (no Discord, no LLM needed)."""
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    familiar = run(Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={}))
    try:
        yield familiar
    finally:
        run(familiar.close())


@pytest.fixture
def memory_facade(real_familiar: Familiar) -> FakeFacade:
    """The fake facade over a real familiar: scripted connection and chat, real memory sub-APIs."""
    return FakeFacade(backing=real_familiar)


@pytest.fixture
def themes(qapp: QApplication) -> Iterator[Callable[..., ThemeController]]:
    """ThemeControllers on the test's QApplication (`themes(choice, system=...)`); the application's own look is
    put back afterwards."""
    style, palette, sheet = qapp.style().name(), QPalette(qapp.palette()), qapp.styleSheet()
    made: list[ThemeController] = []

    def make(choice: Any = "system", system: Callable[[], Literal["light", "dark"]] | None = None) -> ThemeController:
        controller = ThemeController(qapp, choice, system=system)
        made.append(controller)
        return controller

    yield make
    for controller in made:
        shiboken6.delete(controller)
    qapp.setStyle(style)
    qapp.setPalette(palette)
    qapp.setStyleSheet(sheet)
