"""Screenshots of the pending queue over the demo familiar, saved to tests/artifacts/ (gitignored) for a human
to look at: what `familiar screenshot --pane pending` writes (at the default and a small size), an item with
its word diff on a dark palette, and the all-caught-up state."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from pytestqt.qtbot import QtBot

from app.runtime.service import Familiar
from app.ui.main_window import MainWindow
from app.ui.panes.pending import PendingPane
from app.ui.screenshot import save_screenshot
from tests.demo_familiar import seed_demo
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import WAIT_MS, Run, settle

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.qt_log_level_fail("WARNING"),
    pytest.mark.qt_log_ignore(r"This plugin does not support (propagateSizeHints|raise)\(\)"),
]

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
MIN_PNG_BYTES = 10_000
SEED_MS = 30_000


def seeded(qtbot: QtBot, familiar: Familiar) -> None:
    task = asyncio.ensure_future(seed_demo(familiar))
    qtbot.waitUntil(task.done, timeout=SEED_MS)
    task.result()


@pytest.mark.parametrize(("size", "name"), [((1100, 700), "pending_pane.png"), ((900, 600), "pending_pane_small.png")])
def test_familiar_screenshot_of_the_pending_pane(
    qtbot: QtBot, real_familiar: Familiar, size: tuple[int, int], name: str
) -> None:
    seeded(qtbot, real_familiar)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    task = asyncio.ensure_future(save_screenshot(real_familiar, "pending", ARTIFACTS / name, size))
    qtbot.waitUntil(task.done, timeout=WAIT_MS * 3)
    path = task.result()
    assert path.stat().st_size > MIN_PNG_BYTES


def dark_palette() -> QPalette:
    palette = QPalette()
    for role, colour in (
        (QPalette.ColorRole.Window, "#202124"),
        (QPalette.ColorRole.WindowText, "#e8eaed"),
        (QPalette.ColorRole.Base, "#17181a"),
        (QPalette.ColorRole.AlternateBase, "#232427"),
        (QPalette.ColorRole.Text, "#e8eaed"),
        (QPalette.ColorRole.Button, "#303134"),
        (QPalette.ColorRole.ButtonText, "#e8eaed"),
        (QPalette.ColorRole.Highlight, "#3b6fd4"),
        (QPalette.ColorRole.HighlightedText, "#ffffff"),
        (QPalette.ColorRole.PlaceholderText, "#9aa0a6"),
    ):
        palette.setColor(role, QColor(colour))
    return palette


def test_an_item_with_its_word_diff_on_a_dark_palette(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    seeded(qtbot, real_familiar)
    window = MainWindow(memory_facade)
    qtbot.addWidget(window)
    window.setPalette(dark_palette())
    window.resize(1000, 640)
    window.show()
    pane = window.show_pane("pending")
    assert isinstance(pane, PendingPane)
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    pane.move_focus(4)  # "bob's cat Pepper is 14 and climbs curtains.": two facts it could replace
    pane.model.toggle_mark(1)
    settle(qtbot)
    qtbot.waitUntil(lambda: not pane.detail.context_pending, timeout=WAIT_MS)
    qtbot.waitExposed(window)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / "pending_pane_dark.png"
    assert window.grab().save(str(path))
    assert path.stat().st_size > MIN_PNG_BYTES
    assert "Could replace" in pane.detail.browser.toPlainText()
    run(window.shutdown())


def test_all_caught_up_screenshot(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    seeded(qtbot, real_familiar)
    for item in run(real_familiar.memory.pending()).items:
        run(real_familiar.memory.accept(item.fact.id, item.fact.revision))
    window = MainWindow(memory_facade, pane="pending")
    qtbot.addWidget(window)
    window.resize(900, 600)
    window.show()
    pane = window.current_pane
    assert isinstance(pane, PendingPane)
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    qtbot.waitExposed(window)
    assert pane.is_caught_up
    path = ARTIFACTS / "pending_caught_up.png"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert window.grab().save(str(path))
    assert pane.caught_up_title.text() == "All caught up"
    assert pane.counter.text() == "0 pending, 1 snoozed"
    assert Qt.AlignmentFlag.AlignCenter & pane.caught_up_text.alignment()
    run(window.shutdown())
