"""`familiar screenshot --pane timeline` over the demo familiar, through the real entry point: the PNG
shows the loaded timeline (its bars in the statuses' colours and the world-time line), not a loading state."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QImage

from app.ui.theme import TIMELINE_STATUS_COLOURS, TIMELINE_WORLD_CURSOR
from tests.demo_familiar import make_demo_familiar
from tests.e2e.test_screenshot_command import ARTIFACTS, MIN_PNG_BYTES, familiar_command

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("timeline") / "home"
    asyncio.run(make_demo_familiar(root))
    return root


def _pixels(image: QImage, colour: str) -> int:
    wanted = QColor(colour).rgb()
    return sum(
        1 for y in range(0, image.height(), 2) for x in range(0, image.width(), 2) if image.pixel(x, y) == wanted
    )


@pytest.mark.parametrize("size", ["1100x700", "900x600"])
def test_the_timeline_screenshot_shows_the_facts_drawn(demo_home: Path, size: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / f"screenshot_timeline_{size}.png"
    out.unlink(missing_ok=True)
    done = familiar_command(demo_home, "screenshot", "--pane", "timeline", "--out", str(out), "--size", size)
    assert done.returncode == 0, done.stderr
    assert "the timeline pane" in done.stdout
    image = QImage(str(out))
    assert f"{image.width()}x{image.height()}" == size
    assert out.stat().st_size > MIN_PNG_BYTES
    assert _pixels(image, TIMELINE_STATUS_COLOURS["active"]) > 100  # active facts' bars
    assert _pixels(image, TIMELINE_STATUS_COLOURS["pending"]) > 100  # the queue's
    assert _pixels(image, TIMELINE_WORLD_CURSOR) > 40  # the world-time line and its handle
