"""The one change broadcast reaching the window: a write by the CLI in another process marks a hidden
pane that watches it stale within about a second, and it reloads when shown; the window's own write
(with the pane as initiator) does not reload it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from app.runtime.events import ChangeKind, MemoryChanged
from app.runtime.service import Familiar
from app.ui.panes.base import Pane, PaneContext
from tests.ui.support import QT_STRICT, WAIT_MS, Run, make_context

pytestmark = [*QT_STRICT[1:], pytest.mark.timeout(90)]

REPO = Path(__file__).resolve().parents[2]


class FactsProbe(Pane):
    name = "probe"
    title = "Probe"
    watches = frozenset({ChangeKind.FACTS})

    def __init__(self, context: PaneContext) -> None:
        super().__init__(context)
        self.set_body(QLabel("facts"))
        self.contents: list[str] = []

    async def load(self) -> bool:
        self.contents = [f.content for f in await self.facade.memory.list_facts()]
        return bool(self.contents)


@pytest.mark.slow
def test_a_cli_write_beside_the_window_reaches_it_within_a_second(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, tmp_path: Path
) -> None:
    real_familiar.start_watching()
    pane = FactsProbe(make_context(qtbot, real_familiar))
    qtbot.addWidget(pane)
    pane.show()
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    assert pane.contents == []
    pane.hide()
    seen: list[MemoryChanged] = []
    pane.context.bridge.memory_changed.connect(seen.append)

    env = {**os.environ, "FAMILIAR_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "app", "facts", "remember", "The lantern keeper sings at dusk", "--where", "local"]
    done = asyncio.ensure_future(
        asyncio.to_thread(subprocess.run, command, env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    )
    qtbot.waitUntil(done.done, timeout=60_000)
    finished = time.monotonic()
    assert done.result().returncode == 0, done.result().stderr
    qtbot.waitUntil(lambda: pane.is_stale, timeout=2_000)
    assert time.monotonic() - finished < 1.5
    assert any(ChangeKind.FACTS in e.kinds and e.initiator is None for e in seen)

    with qtbot.waitSignal(pane.loaded, timeout=WAIT_MS):
        pane.show()  # refresh on show
    assert pane.contents == ["The lantern keeper sings at dusk"]

    # Its own write: published with the pane as initiator, so it does not reload.
    loads_before = len(seen)
    run(real_familiar.memory.remember("The keeper's lamp is green", "local", initiator=pane))
    qtbot.waitUntil(lambda: len(seen) > loads_before, timeout=WAIT_MS)
    with qtbot.assertNotEmitted(pane.loaded, wait=400):
        pass
    assert not pane.is_stale
