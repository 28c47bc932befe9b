"""The entry point as a windowed executable starts it: with no console, sys.stdout and sys.stderr are None."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_WINDOWED = """
import sys
sys.stdout = None
sys.stderr = None
sys.argv = ["familiar", "--familiar", "not a name!", "turns", "search", "x"]
from app.__main__ import main
main()
"""


def test_a_windowed_start_without_a_console_still_answers_with_its_exit_code(tmp_path: Path) -> None:
    env = {**os.environ, "FAMILIAR_HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", _WINDOWED], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    # The bad name is a configuration error (2); writing its message to a missing console must not crash (1).
    assert result.returncode == 2, result.stderr
