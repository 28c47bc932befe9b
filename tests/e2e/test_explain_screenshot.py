"""`familiar screenshot --pane explain` shows the newest reply's explanation: the real entry point in a
fresh process, offscreen, over the demo familiar. The PNG is kept in tests/artifacts/ to look at."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QImage

from app.ui.theme import LAYER_COLOURS
from tests.demo_familiar import make_demo_familiar
from tests.e2e.test_screenshot_command import ARTIFACTS, familiar_command

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_the_explain_screenshot_shows_the_newest_replys_waterfall(tmp_path: Path) -> None:
    """The demo familiar's newest reply, its waterfall drawn (each layer's own colour, app.ui.theme)."""
    home = tmp_path / "home"
    asyncio.run(make_demo_familiar(home))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / "screenshot_explain_demo.png"
    done = familiar_command(home, "screenshot", "--pane", "explain", "--out", str(out), "--size", "1100x700")
    assert done.returncode == 0, done.stderr
    image = QImage(str(out))
    seen = {
        (image.pixelColor(x, y).red(), image.pixelColor(x, y).green(), image.pixelColor(x, y).blue())
        for y in range(0, image.height(), 3)
        for x in range(0, image.width(), 3)
    }
    for layer in ("character", "lorebook", "history"):
        colour = QColor(LAYER_COLOURS[layer])
        assert (colour.red(), colour.green(), colour.blue()) in seen, layer
