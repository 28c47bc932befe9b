"""The window and a command beside it share one database (issue 18, blocker 1), as real processes.

Saving settings in the window reconfigures its runtime. That used to open and close history.db with a
plain descriptor of its own, which drops every POSIX lock the window's process held on the file,
SQLite's too: the next command then took the database for unused, deleted the window's -wal and -shm
at its exit, and from then on the two no longer saw each other's writes; a kill -9 of the window lost
every decision since. Here the real window (offscreen) saves its settings, a command runs beside it,
the window decides, the command must see the decisions, and they must survive a kill -9 of the window.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_memory import _propose

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]

# The window as `familiar` starts it. Once the familiar is live, the harness saves the settings as
# Settings > Save does (through the facade the dialog calls), says so, then makes the decisions it is
# sent on stdin through the same facade the pending pane uses, and says each one is done.
_WINDOW = """
import asyncio, sys
import app.ui.main_window as main_window
from app.runtime.api.setup_views import SettingsUpdate
ready = main_window.MainWindow.familiar_ready
kept = []
async def serve(window):
    facade = window._facade
    await facade.setup.save(SettingsUpdate(llm_model="model-after-save"))
    print("saved", flush=True)
    while line := await asyncio.to_thread(sys.stdin.readline):
        verb, fact_id, revision = line.split()
        try:
            view = await getattr(facade.memory, verb)(int(fact_id), int(revision))
        except Exception as exc:
            print(f"error: {exc}", flush=True)
        else:
            print(f"{verb} {view.id} {view.status}", flush=True)
def familiar_ready(self):
    ready(self)
    kept.append(asyncio.ensure_future(serve(self)))
main_window.MainWindow.familiar_ready = familiar_ready
from app.__main__ import main
main()
"""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
    env.update({"FAMILIAR_HOME": str(home), "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)})
    # Configured, so the welcome does not open: nothing here reaches either address.
    env.update({"DISCORD_TOKEN": "x" * 59, "FAMILIAR_LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    return env


def _command(home: Path, *argv: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "app", *argv, "--json"],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _facts(home: Path) -> dict[int, tuple[str, int]]:
    """Each fact's status and revision, as a command beside the window reads them."""
    listed = _command(home, "facts", "list", "--status", "all")["facts"]
    return {f["id"]: (f["status"], f["revision"]) for f in listed}


def _statuses(home: Path) -> dict[int, str]:
    return {fact_id: status for fact_id, (status, _revision) in _facts(home).items()}


@pytest.fixture
def window_process() -> Iterator[list[subprocess.Popen[str]]]:
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)


def _ask(window: subprocess.Popen[str], line: str) -> str:
    assert window.stdin is not None
    assert window.stdout is not None
    window.stdin.write(line + "\n")
    window.stdin.flush()
    return window.stdout.readline().strip()  # blocks until it answers (the test's timeout bounds it)


def test_decisions_made_in_the_window_after_a_settings_save_reach_commands_and_survive_a_kill(
    tmp_path: Path, window_process: list[subprocess.Popen[str]]
) -> None:
    home = tmp_path / "home"
    (a, _), (b, _), (c, _) = _propose(home, "Alice owns a cat", "Alice prefers tea", "Alice plays chess")
    window = subprocess.Popen(
        [sys.executable, "-c", _WINDOW],
        env=_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    window_process.append(window)
    assert window.stdout is not None
    saved = window.stdout.readline()
    assert saved == "saved\n", window.stderr.read() if window.stderr and not saved else saved
    folder = home / "familiars" / "default"
    assert "model-after-save" in (folder / "character.toml").read_text(encoding="utf-8")

    seen = _facts(home)  # a command beside the window
    assert {fact_id: status for fact_id, (status, _) in seen.items()} == {a: "pending", b: "pending", c: "pending"}
    wal = folder / "history.db-wal"
    assert wal.exists(), "the command deleted the WAL the window still writes to"

    assert _ask(window, f"accept {a} {seen[a][1]}") == f"accept {a} active"
    assert _ask(window, f"reject {b} {seen[b][1]}") == f"reject {b} rejected"
    assert _statuses(home) == {a: "active", b: "rejected", c: "pending"}  # seen by the next command
    assert _ask(window, f"accept {c} {seen[c][1]}") == f"accept {c} active"

    window.send_signal(signal.SIGKILL)  # the window dies with its last decision only in the WAL
    window.communicate(timeout=30)
    assert window.returncode == -signal.SIGKILL
    assert _statuses(home) == {a: "active", b: "rejected", c: "active"}
