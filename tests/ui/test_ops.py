"""Operations: one way to run a facade call from a slot (busy state, banner, progress, cancel)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton, QWidget
from pytestqt.qtbot import QtBot

from app.runtime.api.views import Progress
from app.runtime.errors import FamiliarError
from app.ui.ops import Cancelled, Failed, Operations, Outcome, Skipped, Succeeded
from app.ui.progress import MIN_SHOW_MS, BlockingProgress, StatusProgress
from tests.ui.support import QT_STRICT, WAIT_MS, Run

pytestmark = QT_STRICT


class Host:
    def __init__(self, qtbot: QtBot) -> None:
        self.window = QWidget()
        qtbot.addWidget(self.window)
        self.status = StatusProgress(self.window)
        self.errors: list[str] = []
        self.cleared = 0
        self.ops = Operations(
            show_error=self.errors.append,
            clear_error=self._clear,
            status=self.status,
            dialog_parent=self.window,
            parent=self.window,
        )

    def _clear(self) -> None:
        self.cleared += 1


def start(coroutine: Awaitable[Outcome[Any]]) -> asyncio.Future[Outcome[Any]]:
    return asyncio.ensure_future(coroutine)


def gated(gate: asyncio.Event, value: object = "done") -> Callable[[], Awaitable[object]]:
    async def call() -> object:
        await gate.wait()
        return value

    return call


def test_success_returns_the_value_and_clears_the_banner(qtbot: QtBot, run: Run[Any]) -> None:
    host = Host(qtbot)

    async def call() -> int:
        return 42

    assert run(host.ops.run("count", call)) == Succeeded(42)
    assert host.cleared == 1
    assert host.errors == []


def test_a_familiar_error_is_its_one_line_in_the_banner(qtbot: QtBot, run: Run[Any]) -> None:
    host = Host(qtbot)

    async def call() -> None:
        raise FamiliarError("The LLM endpoint did not answer.\nIs it running?")

    outcome = run(host.ops.run("test the endpoint", call))
    assert isinstance(outcome, Failed)
    assert outcome.message == "The LLM endpoint did not answer. Is it running?"
    assert isinstance(outcome.error, FamiliarError)
    assert host.errors == [outcome.message]
    seen: list[str] = []
    run(host.ops.run("test the endpoint", call, report=seen.append))  # a caller can show it its own way
    assert seen == [outcome.message]
    assert len(host.errors) == 1


@pytest.mark.logs_errors(r"app\.ui\.ops: frobnicate failed unexpectedly")
def test_anything_else_is_logged_and_said_in_words(qtbot: QtBot, run: Run[Any]) -> None:
    host = Host(qtbot)

    async def call() -> None:
        raise KeyError("missing")

    outcome = run(host.ops.run("frobnicate", call))
    assert isinstance(outcome, Failed)
    assert host.errors == ["Could not frobnicate: 'missing'"]


def test_busy_state_disables_widgets_and_a_second_run_of_the_same_call_is_skipped(qtbot: QtBot) -> None:
    host = Host(qtbot)
    button = QPushButton("Go", host.window)
    flips: list[bool] = []
    host.ops.busy_changed.connect(flips.append)
    gate = asyncio.Event()

    first = start(host.ops.run("go", gated(gate), busy=[button]))
    qtbot.waitUntil(lambda: host.ops.is_running("go"), timeout=WAIT_MS)
    assert host.ops.busy
    assert not button.isEnabled()
    second = start(host.ops.run("go", gated(gate)))
    qtbot.waitUntil(second.done, timeout=WAIT_MS)
    assert second.result() == Skipped()
    other = start(host.ops.run("something else", gated(gate, "other")))  # a different call may run beside it

    gate.set()
    qtbot.waitUntil(lambda: first.done() and other.done(), timeout=WAIT_MS)
    assert first.result() == Succeeded("done")
    assert other.result() == Succeeded("other")
    assert button.isEnabled()
    assert not host.ops.busy
    assert flips == [True, False]


def test_background_progress_shows_in_the_status_bar_and_hides_after(qtbot: QtBot) -> None:
    host = Host(qtbot)
    gate = asyncio.Event()
    host.window.show()

    async def work(report: Callable[[Progress], None]) -> str:
        report(Progress("Rebuilding the facts index", 0, None))
        await asyncio.sleep(0)
        report(Progress("Rebuilding the facts index", 40, 100))
        await gate.wait()
        return "rebuilt"

    task = start(host.ops.run_with_progress("rebuild", work, label="Rebuilding", blocking=False))
    qtbot.waitUntil(lambda: host.status.label.text().endswith("40%"), timeout=WAIT_MS)
    assert host.status.isVisible()
    assert host.status.label.text() == "Rebuilding the facts index — 40%"
    assert host.status.bar.value() == 40
    gate.set()
    qtbot.waitUntil(task.done, timeout=WAIT_MS)
    assert task.result() == Succeeded("rebuilt")
    assert not host.status.isVisible()


def test_a_short_blocking_job_never_shows_its_dialog(qtbot: QtBot, run: Run[Any]) -> None:
    host = Host(qtbot)
    host.window.show()
    seen: list[bool] = []

    async def work(report: Callable[[Progress], None]) -> str:
        report(Progress("Quick", 1, 2))
        seen.extend(d.appeared for d in host.window.findChildren(BlockingProgress))
        report(Progress("Quick", 2, 2))
        return "quick"

    assert run(host.ops.run_with_progress("quick", work, label="Quick", blocking=True)) == Succeeded("quick")
    assert seen == [False]  # it existed while the job ran, but had not appeared
    qtbot.wait(MIN_SHOW_MS + 100)  # past the moment it would have appeared
    assert all(not d.isVisible() for d in host.window.findChildren(BlockingProgress))


def test_a_long_blocking_job_shows_a_dialog_whose_cancel_cancels_it(qtbot: QtBot) -> None:
    host = Host(qtbot)
    host.window.show()
    gate = asyncio.Event()
    cancelled = asyncio.Event()

    async def work(report: Callable[[Progress], None]) -> str:
        report(Progress("Re-embedding facts", 3, 10))
        try:
            await gate.wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    task = start(host.ops.run_with_progress("re-embed", work, label="Re-embedding", blocking=True))
    qtbot.waitUntil(lambda: any(d.appeared for d in host.window.findChildren(BlockingProgress)), timeout=WAIT_MS)
    (dialog,) = host.window.findChildren(BlockingProgress)
    assert dialog.value() == 30
    assert dialog.labelText() == "Re-embedding facts"
    cancel_button = dialog.findChild(QPushButton)
    assert cancel_button is not None
    assert cancel_button.text() == "Cancel"
    qtbot.mouseClick(cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(task.done, timeout=WAIT_MS)
    assert task.result() == Cancelled()
    assert cancelled.is_set()
    assert host.errors == []
    assert not host.ops.busy


def test_cancelling_the_slot_cancels_the_work_too(qtbot: QtBot) -> None:
    host = Host(qtbot)
    gate = asyncio.Event()
    stopped = asyncio.Event()

    async def call() -> None:
        try:
            await gate.wait()
        finally:
            stopped.set()

    slot = start(host.ops.run("wait", call))
    qtbot.waitUntil(lambda: host.ops.is_running("wait"), timeout=WAIT_MS)
    slot.cancel()
    qtbot.waitUntil(slot.done, timeout=WAIT_MS)
    assert slot.cancelled()
    assert stopped.is_set()
    assert not host.ops.busy
