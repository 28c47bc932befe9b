"""Creating the QApplication where Qt's platform plugin cannot start: one line and exit 1, never Qt's abort.

Run in a subprocess (the failure ends the process): the xcb plugin asked for a display nobody answers at. Whether
the plugin fails to load (a library missing) or to connect, Qt's fatal message is what the guard catches.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_platform_check import silent_display

REPO = Path(__file__).resolve().parents[2]

_START = "from app.ui.platform_guard import start_application; start_application(['familiar']); print('started')"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's xcb plugin is Linux's")
def test_a_platform_plugin_that_cannot_start_is_one_line_not_an_abort() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QT_", "WAYLAND_"))}
    env.update({"QT_QPA_PLATFORM": "xcb", "DISPLAY": silent_display(), "PYTHONPATH": str(REPO)})
    result = subprocess.run(
        [sys.executable, "-c", _START], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode != -signal.SIGABRT, f"Qt aborted: {result.stderr}"
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: cannot open a window: Qt could not start its platform plugin")
    assert line.endswith("To run without a window: familiar run --headless")
    assert "xcb-cursor0 or libxcb-cursor0 is needed" not in line


def test_a_platform_that_starts_gives_the_application() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", _START], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "started\n"
