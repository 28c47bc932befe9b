"""The status bar's pause light: hidden while the familiar learns and recalls everywhere; an amber dot
and a few words ("Learning paused in Lantern Club #familiar-home") while anything is paused, on every
pane. Clicking it (or Enter / Space when it has focus) emits `clicked`: the window opens Memory controls.

It asks `facade.controls.state()` when `refresh()` is called (the window does at its first show) and
again after every change of the switches (a MemoryChanged touching PAUSE, whoever made it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton, QWidget
from shiboken6 import isValid

from app.runtime.api.facade import FamiliarFacade
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind, MemoryChanged
from app.ui.async_slot import async_slot
from app.ui.bridge import RuntimeBridge
from app.ui.error_text import one_line
from app.ui.theme import PAUSE_LIGHT_STYLE

if TYPE_CHECKING:  # for annotations only: this module is on the window's path to its first paint
    from app.runtime.api.views import PauseKind, PauseView


_log = logging.getLogger(__name__)

EVERYWHERE = "*"


def _where(view: PauseView, chosen: tuple[str, ...]) -> str:
    if EVERYWHERE in chosen:
        return "everywhere"
    names = {p.place.key: p.place.name for p in view.places}
    if len(chosen) == 1:
        return f"in {names.get(chosen[0], chosen[0])}"
    return f"in {len(chosen)} places"


def summary(view: PauseView) -> str:
    """ "Learning paused in Lantern Club #familiar-home", "Learning and recall paused everywhere"..."""
    switches: tuple[tuple[PauseKind, tuple[str, ...]], ...] = (("learning", view.learning), ("recall", view.recall))
    parts = [(kind, _where(view, chosen)) for kind, chosen in switches if chosen]
    if not parts:
        return ""
    if len(parts) == 2 and parts[0][1] == parts[1][1]:
        return f"Learning and recall paused {parts[0][1]}"
    return "; ".join(f"{kind.capitalize() if n == 0 else kind} paused {where}" for n, (kind, where) in enumerate(parts))


def details(view: PauseView) -> str:
    """Every switch that is set, by name, one per line, then what clicking does."""
    names = {p.place.key: p.place.name for p in view.places}
    lines: list[str] = []
    for kind, chosen in (("Learning", view.learning), ("Recall", view.recall)):
        for key in chosen:
            lines.append(f"{kind} paused {'everywhere' if key == EVERYWHERE else 'in ' + names.get(key, key)}")
    lines.append("Click to open Memory controls.")
    return "\n".join(lines)


class PauseLight(QToolButton):
    def __init__(self, facade: FamiliarFacade, bridge: RuntimeBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._facade = facade
        self.setObjectName("pauseLight")
        self.setStyleSheet(PAUSE_LIGHT_STYLE)
        self.setAutoRaise(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccessibleName("Memory paused")
        self.view: PauseView | None = None
        self._asked = asyncio.Event()  # set once a refresh has settled (answered or failed)
        self.setVisible(False)
        bridge.memory_changed.connect(self._on_bridge_memory_changed)

    @property
    def lit(self) -> bool:
        return self.view is not None and self.view.anything_paused

    def show_state(self, view: PauseView) -> None:
        self.view = view
        self.setText(f"● {summary(view)}" if view.anything_paused else "")
        self.setToolTip(details(view) if view.anything_paused else "")
        self.setVisible(view.anything_paused)

    @async_slot()
    async def refresh(self) -> None:
        try:
            view = await self._facade.controls.state()
        except FamiliarError as error:
            _log.warning("could not read the pause switches: %s", one_line(error))
            return
        finally:
            self._asked.set()
        if isValid(self):  # the window may have closed meanwhile
            self.show_state(view)

    async def settled(self) -> None:
        """Wait until the first refresh has answered (for a screenshot)."""
        await self._asked.wait()

    def _on_bridge_memory_changed(self, change: MemoryChanged) -> None:
        if ChangeKind.PAUSE in change.kinds:
            self.refresh()
