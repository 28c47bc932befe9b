"""`familiar run --headless` says what is wrong with lorebook.toml in its log, and when the file is fixed."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from tests.e2e.test_headless import _start, home, reaper

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]
__all__ = ["home", "reaper"]  # fixtures shared with test_headless


async def test_headless_logs_a_broken_lorebook_and_its_fix(
    home: Path, reaper: list[asyncio.subprocess.Process]
) -> None:
    lorebook = home / "familiars" / "default" / "lorebook.toml"
    lorebook.write_text('[[entries]]\ntitle = "Owl"\nkyes = ["owl"]\n', encoding="utf-8")
    process = await _start(home)
    reaper.append(process.process)
    line = await process.wait_for_line("key 'kyes'")
    assert line.endswith(
        f"{lorebook}, line 3, entry 1 \"Owl\", key 'kyes': unknown key (did you mean 'keys'?); keep anything else "
        "under [entries.extensions] (the last good lorebook stays in use until this is fixed)"
    )
    assert "WARNING" in line
    await process.wait_for_line("is running")
    lorebook.write_text('[[entries]]\ntitle = "Owl"\nkeys = ["owl"]\n', encoding="utf-8")
    await process.wait_for_line(f"{lorebook} reads again: it is the lorebook in use")
    process.process.send_signal(signal.SIGTERM)
    assert await process.wait(timeout=20) == 0
