"""The runtime is platform-neutral: only the Discord adapter knows discord.py, and it loads only when
the familiar connects (the window and the CLI's memory commands start without it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _modules_loaded_by(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.split()


def test_importing_the_runtime_facade_does_not_import_discord() -> None:
    loaded = _modules_loaded_by("import app.runtime.service")
    assert "app.runtime.service" in loaded
    assert [m for m in loaded if m == "discord" or m.startswith(("discord.", "app.runtime.discord"))] == []


def test_the_adapter_is_what_brings_discord_in() -> None:
    """The check above can fail: the adapter module does load discord.py."""
    loaded = _modules_loaded_by("import app.runtime.discord.adapter")
    assert "discord" in loaded
