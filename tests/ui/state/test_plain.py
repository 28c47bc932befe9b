"""app/ui/state is plain Python: every module of it loads in a process that never imports Qt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

LOAD_THEM_ALL = """
import importlib, pkgutil, sys
import app.ui.state as state
names = [m.name for m in pkgutil.iter_modules(state.__path__)]
for name in names:
    importlib.import_module(f"app.ui.state.{name}")
qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "qasync"))
assert names and not qt, (names, qt)
"""


def test_the_state_modules_load_without_qt() -> None:
    result = subprocess.run(
        [sys.executable, "-c", LOAD_THEM_ALL], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
