"""One window per familiar, as real processes: a second launch brings the first window forward instead of
opening the store twice; a crashed first window (kill -9) leaves nothing that blocks the next start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config.paths import FamiliarPaths, create_familiar

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]

# The window as `familiar` starts it; the harness says when it is shown and when it is asked to come forward.
_FIRST = """
import app.ui.main_window as main_window
shown, forward = main_window.MainWindow.show, main_window.MainWindow.bring_forward
said = []
def show(self):
    shown(self)
    if not said:
        said.append(print("window shown", flush=True))
def bring_forward(self, pane=None):
    forward(self, pane)
    print(f"brought forward on {self.current_pane.name}", flush=True)
main_window.MainWindow.show, main_window.MainWindow.bring_forward = show, bring_forward
from app.__main__ import main
main()
"""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
    env.update({"FAMILIAR_HOME": str(home), "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)})
    return env


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)


def _first_window(home: Path, started: list[subprocess.Popen[str]], *argv: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", _FIRST, *argv], env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    started.append(process)
    assert process.stdout is not None
    assert process.stdout.readline() == "window shown\n"  # blocks until it is (the test's timeout bounds it)
    return process


def _launch(home: Path, *argv: str, probe: bool = False) -> subprocess.CompletedProcess[str]:
    env = _env(home)
    if probe:
        env["FAMILIAR_BENCH_EXIT_WHEN_SHOWN"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "app", *argv], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_second_launch_brings_the_first_window_forward_and_a_crash_blocks_nothing(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    home = tmp_path / "home"
    create_familiar(FamiliarPaths(root=home, name="default"))
    create_familiar(FamiliarPaths(root=home, name="rook"))
    first = _first_window(home, started)

    second = _launch(home, "--pane", "chat")
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Familiar 'default' is already open: its window was brought forward.\n"
    assert first.stdout is not None
    assert first.stdout.readline() == "brought forward on chat\n"

    other = _launch(home, "--familiar", "rook", probe=True)  # another familiar has a window of its own
    assert other.returncode == 0, other.stderr
    assert "window shown" in other.stdout

    first.send_signal(signal.SIGKILL)  # a crash: its lock file and its socket stay behind
    first.communicate(timeout=30)
    assert (home / "familiars" / "default" / ".window.lock").exists()
    after = _launch(home, probe=True)
    assert after.returncode == 0, after.stderr
    assert "window shown" in after.stdout
    assert "familiar open" in after.stdout
