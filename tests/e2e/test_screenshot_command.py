"""`familiar screenshot --pane NAME --out FILE.png [--size WxH]` and `familiar --pane NAME`: the real
entry point in a fresh process, offscreen, over a familiar's real data. The PNGs are kept in
tests/artifacts/ for a human to look at."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QImage

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.memory.records import NewTurn
from app.runtime.service import Familiar
from app.ui.main_window import pane_names
from app.ui.theme import AMBER

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
MIN_PNG_BYTES = 10_000


def familiar_command(
    home: Path, *argv: str, probe: bool = False, scale: int | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_", "QT_SCALE"))}
    env.update({"FAMILIAR_HOME": str(home), "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)})
    if scale is not None:
        env["QT_SCALE_FACTOR"] = str(scale)
    if probe:
        env["FAMILIAR_BENCH_EXIT_WHEN_SHOWN"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "app", *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A familiar with a local conversation in its store."""
    root = tmp_path_factory.mktemp("screenshots") / "home"

    async def seed() -> None:
        paths = FamiliarPaths(root=root, name="default")
        familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={})
        start = datetime(2025, 3, 1, 20, 0, tzinfo=UTC)
        lines = [
            ("local:owner", "You", "Good evening, Wisp. Are the lanterns lit?"),
            ("familiar:self", "Wisp", "Every one of them, and the harbour bell has rung nine."),
            ("local:owner", "You", "What did Bob say he was allergic to?"),
            ("familiar:self", "Wisp", "Cat dander, not moth dust. He corrected himself this morning."),
        ]
        try:
            for minute, (key, name, text) in enumerate(lines):
                await familiar.history.append_turn(
                    NewTurn("local", "local", 0, key, name, text, start + timedelta(minutes=minute))
                )
        finally:
            await familiar.close()

    asyncio.run(seed())
    return root


@pytest.mark.parametrize("pane", pane_names())
def test_a_screenshot_of_each_pane_over_real_data(home: Path, pane: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / f"screenshot_{pane}.png"
    out.unlink(missing_ok=True)
    done = familiar_command(home, "screenshot", "--pane", pane, "--out", str(out), "--size", "1000x640")
    assert done.returncode == 0, done.stderr
    assert f"the {pane} pane" in done.stdout
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1000, 640)
    assert out.stat().st_size > MIN_PNG_BYTES


@pytest.mark.parametrize(("theme", "pane"), [("dark", "dashboard"), ("dark", "chat"), ("light", "chat")])
def test_screenshots_at_200_percent_in_the_theme_of_ui_toml(home: Path, theme: str, pane: str) -> None:
    """Readable at 200%: the window rendered with QT_SCALE_FACTOR=2 is twice the size, text and all (look at
    the PNGs), in the theme the owner chose in ui.toml."""
    ui = home / "ui.toml"
    ui.write_text(f'theme = "{theme}"\n', encoding="utf-8")
    try:
        out = ARTIFACTS / f"screenshot_{pane}_{theme}_200.png"
        out.unlink(missing_ok=True)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        done = familiar_command(home, "screenshot", "--pane", pane, "--out", str(out), "--size", "900x600", scale=2)
        assert done.returncode == 0, done.stderr
    finally:
        ui.unlink()
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1800, 1200)
    corner = image.pixelColor(image.width() - 40, image.height() // 2)  # the pane's background
    assert (corner.lightness() < 128) == (theme == "dark")


def test_the_chat_screenshot_waited_for_the_history(home: Path) -> None:
    """The chat pane's history arrives asynchronously: the PNG must show it, not the loading state."""
    out = ARTIFACTS / "screenshot_chat_history.png"
    done = familiar_command(home, "screenshot", "--pane", "chat", "--out", str(out))
    assert done.returncode == 0, done.stderr
    image = QImage(str(out))
    # The familiar's lines are drawn on their own tint: some row of the transcript carries it.
    tint = (0xEE, 0xF3, 0xFB)
    tinted = sum(
        1
        for y in range(0, image.height(), 4)
        if any(
            (image.pixelColor(x, y).red(), image.pixelColor(x, y).green(), image.pixelColor(x, y).blue()) == tint
            for x in range(300, 900, 50)
        )
    )
    assert tinted >= 4


def test_the_screenshot_shows_the_pause_light_once_anything_is_paused(tmp_path: Path) -> None:
    """The light asks the switches on its own: the PNG must show it lit, not the moment before."""
    home = tmp_path / "home"
    assert familiar_command(home, "new", "default").returncode == 0
    assert familiar_command(home, "pause", "recall").returncode == 0
    out = ARTIFACTS / "screenshot_memory_paused.png"
    done = familiar_command(home, "screenshot", "--pane", "memory", "--out", str(out), "--size", "900x600")
    assert done.returncode == 0, done.stderr
    image = QImage(str(out))
    colour = QColor(AMBER)  # the light's text, in the status bar at the bottom
    amber = (colour.red(), colour.green(), colour.blue())
    lit = [
        x
        for y in range(image.height() - 30, image.height())
        for x in range(0, image.width(), 2)
        if (image.pixelColor(x, y).red(), image.pixelColor(x, y).green(), image.pixelColor(x, y).blue()) == amber
    ]
    assert len(lit) > 20


def test_an_unknown_pane_is_refused_listing_the_names(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "never.png"
    done = familiar_command(home, "screenshot", "--pane", "timeline-of-doom", "--out", str(out))
    assert done.returncode == 2
    names = ", ".join(pane_names())
    assert names.startswith("dashboard, chat")
    assert done.stderr.strip() == f"error: there is no pane 'timeline-of-doom'; choose one of: {names}"
    assert not out.exists()
    done = familiar_command(home, "--pane", "nowhere", probe=True)
    assert done.returncode == 2
    assert f"choose one of: {names}" in done.stderr
    bad_size = familiar_command(home, "screenshot", "--pane", "chat", "--out", str(out), "--size", "huge")
    assert bad_size.returncode == 2
    assert "not a size like 1100x700" in bad_size.stderr
    unwritable = familiar_command(home, "screenshot", "--pane", "chat", "--out", str(tmp_path / "no" / "dir.png"))
    assert unwritable.returncode == 1
    assert "cannot write" in unwritable.stderr


def test_familiar_pane_opens_the_window_on_that_pane(home: Path) -> None:
    done = familiar_command(home, "--pane", "chat", probe=True)
    assert done.returncode == 0, done.stderr
    shown, opened = done.stdout.splitlines()
    assert " on the chat pane; peak memory " in shown
    assert opened.startswith("familiar open after")  # the probe waits for the familiar behind the window
    done = familiar_command(home, probe=True)  # without --pane the window comes back to the last pane
    assert done.returncode == 0, done.stderr
    assert " on the chat pane; " in done.stdout.splitlines()[0]
    done = familiar_command(home, "--pane", "dashboard", probe=True)
    assert " on the dashboard pane; " in done.stdout.splitlines()[0]
