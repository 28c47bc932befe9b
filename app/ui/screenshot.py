"""`familiar screenshot`: the window rendered offscreen on one pane, over the familiar's real data,
once that pane has loaded, saved as a PNG."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from PySide6.QtCore import QSize

from app.runtime.api.facade import FamiliarFacade
from app.runtime.errors import FamiliarError
from app.ui.main_window import MainWindow, check_pane_name

_log = logging.getLogger(__name__)

LOAD_TIMEOUT = 30.0


SETTLE_SECONDS = 0.1


async def save_screenshot(
    facade: FamiliarFacade, pane: str, out: Path, size: tuple[int, int], *, timeout: float = LOAD_TIMEOUT
) -> Path:
    """Show the window on `pane`, wait (at most `timeout` s) until it has loaded, grab it, write `out`."""
    check_pane_name(pane)
    window = MainWindow(facade, pane=pane)
    try:
        window.resize(QSize(*size))
        shown = window.current_pane
        loaded = asyncio.Event()
        shown.loaded.connect(loaded.set)
        window.show()
        if not shown.is_loaded:
            try:
                await asyncio.wait_for(loaded.wait(), timeout)
            except TimeoutError:
                raise FamiliarError(f"the {pane} pane did not finish loading within {timeout:g} s") from None
        try:
            await asyncio.wait_for(window.pause_light.settled(), timeout)  # the status bar's pause light too
        except TimeoutError:
            raise FamiliarError(f"the pause switches could not be read within {timeout:g} s") from None
        # Let the layout settle after the last rows arrived, and what a pane lays out on the loop's next
        # turn (the pending queue's sources) be drawn.
        await asyncio.sleep(SETTLE_SECONDS)
        if not window.grab().save(str(out), "PNG"):
            raise FamiliarError(f"cannot write {out}: check that its folder exists and is writable")
        return out
    finally:
        await window.shutdown()
        window.close()
        window.deleteLater()
