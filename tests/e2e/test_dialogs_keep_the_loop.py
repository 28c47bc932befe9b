"""No dialog or menu of the window runs a nested event loop (issue 18, blocker 2), in the real app process.

A static file dialog, message box or input dialog, `QDialog.exec()`, or a QToolButton's own menu starts a
nested Qt loop; under qasync every asyncio task resumed inside it fails with "Cannot enter into task", the
runtime's background work dies, and Quit no longer ends the process. tests/e2e/dialog_walk.py opens and
cancels every dialog and drop-down menu of the window over a demo familiar; this test reads what it saw and
checks that File > Quit then ends the process.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PySide6.QtWidgets import QDialog

import app.ui
from app.config.secrets import SecretStore
from app.memory.records import NewTurn
from app.runtime.service import Familiar
from tests.demo_familiar import make_demo_familiar

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]

WORLD_INFO = {"entries": {"0": {"uid": 0, "key": ["dragon"], "comment": "Dragons", "content": "Big."}}}
# Enough history that a rebuild of the index lasts long enough to be cancelled from its progress dialog
# (about a second and a half here; the walk shows that dialog at once rather than after half a second).
HISTORY_TURNS = 120_000
WORDS = ("lantern", "harbour", "market", "kettle", "wisp", "tide", "rope", "gull")


async def _demo_with_history(home: Path) -> None:
    paths = await make_demo_familiar(home, local_chat=True)  # with a chat to (not) clear
    familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={})
    try:
        start = datetime(2025, 1, 1, tzinfo=UTC)
        turns = [
            NewTurn(
                platform="discord", place="guild:500/501", guild_id=500, channel_id=501, message_id=10_000_000 + n,
                author_key="discord:7001", author_name="alice", created_at=start + timedelta(seconds=n),
                content=f"message {n} about the {WORDS[n % 8]} and the {WORDS[(n // 8) % 8]}",
            )
            for n in range(HISTORY_TURNS)
        ]  # fmt: skip
        await familiar.history.append_turns(turns)
    finally:
        await familiar.close()


def _dialog_classes() -> set[str]:
    """Every QDialog the window's code defines and opens: not a base the others share (FittingDialog), which is
    walked through them."""
    found: dict[str, type] = {}
    for module in pkgutil.walk_packages(app.ui.__path__, "app.ui."):
        loaded = importlib.import_module(module.name)
        for name, value in inspect.getmembers(loaded, inspect.isclass):
            if issubclass(value, QDialog) and value.__module__ == loaded.__name__:
                found[name] = value
    bases = {name for name, kind in found.items() if any(o is not kind and issubclass(o, kind) for o in found.values())}
    return set(found) - bases


def test_every_dialog_opens_and_cancels_while_the_runtime_goes_on_and_quit_exits(tmp_path: Path) -> None:
    home = tmp_path / "home"
    asyncio.run(_demo_with_history(home))
    lore_file = tmp_path / "world.json"
    lore_file.write_text(json.dumps(WORLD_INFO), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
    env.update({"FAMILIAR_HOME": str(home), "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)})
    env.update({"DISCORD_TOKEN": "x" * 59, "FAMILIAR_LLM_BASE_URL": "http://127.0.0.1:9/v1"})  # configured: no welcome
    done = subprocess.run(
        [sys.executable, "-m", "tests.e2e.dialog_walk", str(lore_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert reports, f"no report; rc {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    report = reports[-1]
    assert "failed" not in report, f"{report}\n{done.stderr[-3000:]}"
    assert report["max_depth"] == 1, "a dialog or menu ran a nested event loop"
    assert report["problems"] == []
    assert done.returncode == 0, f"Quit did not end the process cleanly: {done.stderr[-3000:]}"
    assert _dialog_classes() <= set(report["opened"]), "a dialog of the window is not in the walk"
