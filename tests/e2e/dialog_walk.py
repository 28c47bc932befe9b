"""The window as `familiar` starts it, with a walk through every dialog and drop-down menu it has (issue 18).

Run by tests/e2e/test_dialogs_keep_the_loop.py as its own process (`python -m tests.e2e.dialog_walk`, with
FAMILIAR_HOME set to a demo familiar). Once the familiar is live, the walk opens each dialog the way a user
does (a menu action, a button, a key), checks that asyncio tasks keep running while it is open, cancels it,
and goes on. All the while a Qt timer notes the depth of the event loops it runs in: a dialog or menu
started with exec() (a nested loop) shows as a depth above 1. At the end it writes through the runtime and
waits for the index to take it (its committer still alive), prints one JSON line of what it saw, and
quits through File > Quit, answering Discard to the unsaved-edits question: the process must then exit.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import shiboken6
from PySide6.QtCore import Qt, QThread, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QFileDialog,
    QInputDialog,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPushButton,
    QWidget,
)

import app.ui.main_window as main_window
from app.ui import progress
from app.ui.dialogs.book_settings_dialog import BookSettingsDialog
from app.ui.dialogs.edit_fact_dialog import EditFactDialog
from app.ui.dialogs.familiars import NewFamiliarDialog, OpenFamiliarDialog
from app.ui.dialogs.forget_dialog import ForgetDialog
from app.ui.dialogs.lore_import_dialog import ImportDialog
from app.ui.dialogs.settings_dialog import SettingsDialog
from app.ui.dialogs.shortcut_sheet import ShortcutSheet
from app.ui.dialogs.snooze_dialog import SnoozeDialog
from app.ui.dialogs.welcome_dialog import WelcomeDialog
from app.ui.progress import BlockingProgress

W = TypeVar("W", bound=QWidget)

WAIT_S = 20.0
WATCHDOG_MS = 90_000
TICK_S = 0.02


class Seen(logging.Handler):
    """Every ERROR the app logs, and every record that names a task entered twice."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.problems: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += f" ({record.exc_info[1]!r})"
        if record.levelno >= logging.ERROR or "Cannot enter into task" in text:
            self.problems.append(f"{record.name}: {text}")


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _open(widget: QWidget) -> bool:
    return shiboken6.isValid(widget) and widget.isVisible()


class Walk:
    def __init__(self, window: main_window.MainWindow, lore_file: Path) -> None:
        self.window = window
        self.lore_file = lore_file
        self.ticks = 0
        self.max_depth = 0
        self.opened: list[str] = []
        self.seen = Seen()
        logging.getLogger().addHandler(self.seen)
        self._depth = QTimer()
        self._depth.timeout.connect(self._note_depth)
        self._depth.start(10)
        # A Qt timer, not a task: it fires inside a nested loop too, where the walk's own task may be stuck.
        self._watchdog = QTimer()
        self._watchdog.setSingleShot(True)
        self._watchdog.timeout.connect(self._give_up)
        self._watchdog.start(WATCHDOG_MS)

    def stop_watching(self) -> None:
        self._watchdog.stop()

    def _give_up(self) -> None:
        report = {"failed": "the walk did not finish", "opened": self.opened, "max_depth": self.max_depth}
        _say(json.dumps(report | {"problems": self.seen.problems}))
        os._exit(3)

    def _note_depth(self) -> None:
        self.max_depth = max(self.max_depth, QThread.currentThread().loopLevel())

    async def tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            self.ticks += 1

    # -- waiting -------------------------------------------------------------------------------------
    async def until(self, done: Callable[[], object], what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"gave up waiting for {what}")
            await asyncio.sleep(TICK_S)

    async def shown(self, kind: type[W], what: str) -> W:
        found: list[W] = []

        def visible() -> bool:
            found[:] = [w for w in QApplication.topLevelWidgets() if isinstance(w, kind) and w.isVisible()]
            return bool(found)

        await self.until(visible, f"{what} to open")
        return found[-1]

    async def keeps_ticking(self, what: str) -> None:
        """asyncio tasks go on (no nested loop holds them): the ticker moves on by several ticks."""
        before = self.ticks
        await self.until(lambda: self.ticks >= before + 5, f"asyncio ticks while {what}")

    # -- one dialog ----------------------------------------------------------------------------------
    async def dialog(
        self,
        what: str,
        kind: type[W],
        open_it: Callable[[], object],
        inside: Callable[[W], Awaitable[None]] | None = None,
    ) -> None:
        """Open a dialog as the user would, check the loop goes on, cancel it, check again."""
        open_it()
        dialog = await self.shown(kind, what)
        self.opened.append(type(dialog).__name__)
        await self.keeps_ticking(f"{what} is open")
        if inside is not None:
            await inside(dialog)
        if _open(dialog):
            QTest.keyClick(dialog, Qt.Key.Key_Escape)  # what a user cancelling with the keyboard does
        if _open(dialog) and isinstance(dialog, QDialog):
            dialog.reject()
        await self.until(lambda: not _open(dialog), f"{what} to close")
        await self.keeps_ticking(f"{what} was cancelled")
        _say(f"opened and cancelled {what}")

    async def item(self, what: str, button: QWidget, title: str) -> Callable[[], None]:
        """Drop the button's menu down (a click), check the loop goes on, and return what clicks `title` in it
        (which closes the menu, as a click on an item does)."""
        QTest.mouseClick(button, Qt.MouseButton.LeftButton)
        menu = await self.shown(QMenu, what)
        await self.keeps_ticking(f"{what} is open")
        action = next((a for a in menu.actions() if a.text() == title), None)
        if action is None:
            raise AssertionError(f"{what} has no item {title!r}: {[a.text() for a in menu.actions()]}")

        def click() -> None:
            QTest.mouseClick(menu, Qt.MouseButton.LeftButton, pos=menu.actionGeometry(action).center())

        return click

    async def pane(self, name: str) -> Any:
        pane = self.window.show_pane(name)
        await self.until(lambda: pane.is_loaded, f"the {name} pane to load")
        return pane

    # -- the walk ------------------------------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        window = self.window
        desktop = window.desktop
        await self.dialog("Settings", SettingsDialog, window.settings_action.trigger)

        async def card_file(welcome: QWidget) -> None:
            await self.dialog("the welcome's card file", QFileDialog, welcome.card_button.click)  # type: ignore[attr-defined]

        await self.dialog("the welcome", WelcomeDialog, window.open_welcome, card_file)
        await self.dialog("About", QMessageBox, desktop.about_action.trigger)
        await self.dialog("Open familiar", OpenFamiliarDialog, desktop.open_familiar_action.trigger)

        async def browse(new: QWidget) -> None:
            new.from_card.setChecked(True)  # type: ignore[attr-defined]
            await self.dialog("New familiar's card file", QFileDialog, new.browse_button.click)  # type: ignore[attr-defined]

        await self.dialog("New familiar", NewFamiliarDialog, desktop.new_familiar_action.trigger, browse)

        pending = await self.pane("pending")
        await self.until(lambda: pending.current_item() is not None, "a pending item")
        pick_date = await self.item("the snooze menu", pending.buttons["snooze"], "&Pick a date…")
        await self.dialog("Snooze until a date", SnoozeDialog, pick_date)
        await self.dialog("the keys sheet", ShortcutSheet, pending.keys_action.trigger)
        await self.dialog("Forget (pending)", ForgetDialog, pending.forget_action.trigger)

        timeline = await self.pane("timeline")
        timeline.view.set_current_row(0)
        await self.until(lambda: timeline.detail is not None, "a fact in the timeline")
        await self.until(lambda: timeline.panel.edit_button.isEnabled(), "Edit in the timeline")
        await self.dialog("Edit the fact", EditFactDialog, timeline.panel.edit_button.click)

        lore = await self.pane("lorebook")
        await self.until(lambda: lore.book is not None, "the lorebook to be read")
        for title, kind in (("Book settings…", BookSettingsDialog), ("Import…", QFileDialog), ("Export…", QFileDialog)):
            await self.dialog(f"Book > {title}", kind, await self.item("the Book menu", lore.book_button, title))

        async def pick_file(chooser: QWidget) -> None:
            assert isinstance(chooser, QFileDialog)
            typed = chooser.findChild(QLineEdit, "fileNameEdit")  # where the user types the file's path
            assert typed is not None
            typed.setText(str(self.lore_file))
            await self.dialog("the import preview", ImportDialog, chooser.accept)

        import_item = await self.item("the Book menu", lore.book_button, "Import…")
        await self.dialog("Book > Import… of a file", QFileDialog, import_item, pick_file)

        await self.rebuild_and_cancel()

        chat = await self.pane("chat")
        await self.until(lambda: chat.clear_button.isEnabled(), "Clear in the chat")
        await self.dialog("the chat's Clear question", QMessageBox, chat.clear_button.click)
        if not chat.transcript_model.rowCount():
            raise AssertionError("Cancel on the Clear question cleared the chat")

        lore.select_positions([0, 1])
        for title in ("Set a field…", "Add a key…", "Remove a key…"):
            picked = await self.item("the Selected menu", lore.bulk_button, title)
            await self.dialog(f"Selected > {title}", QInputDialog, picked)

        await lore.set_field([0], "priority", 7)  # an unsaved edit: closing asks first
        await self.dialog("the unsaved-edits question", QMessageBox, window.close)
        if not window.isVisible():
            raise AssertionError("Cancel on the unsaved-edits question closed the window")

        # The runtime's background work is alive: a remembered fact reaches the facts index.
        facade = window._facade
        await facade.memory.remember("The walk went through every dialog", "guild:500/501")

        async def indexed() -> bool:
            status = await facade.indexes.status()
            return all(each.pending == 0 for each in status)

        deadline = time.monotonic() + WAIT_S
        while not await indexed():
            if time.monotonic() > deadline:
                raise TimeoutError("the index did not take the remembered fact")
            await asyncio.sleep(0.1)
        return {
            "ticks": self.ticks,
            "max_depth": self.max_depth,
            "opened": self.opened,
            "problems": self.seen.problems,
        }

    async def rebuild_and_cancel(self) -> None:
        """Index health > Rebuild, cancelled from its progress dialog: the buttons come back, it says so."""
        index = await self.pane("index")
        reembed = index.reembed_button.isEnabled()  # off while embeddings are off

        async def cancel(progress: QWidget) -> None:
            button = progress.findChild(QPushButton)
            assert button is not None
            assert button.text() == "Cancel"
            button.click()

        await self.dialog("the rebuild's progress", BlockingProgress, index.rebuild_button.click, cancel)
        await self.until(lambda: index.rebuild_button.isEnabled(), "Rebuild to be enabled again after Cancel")
        await self.until(lambda: "cancel" in index.result_label.text().lower(), "the pane to say it was cancelled")
        if index.reembed_button.isEnabled() != reembed:
            raise AssertionError("Re-embed did not come back as it was after the rebuild was cancelled")

    async def quit(self) -> None:
        """File > Quit; the unsaved-edits question answered Discard."""
        self.window.quit_action.trigger()
        box = await self.shown(QMessageBox, "the unsaved-edits question at Quit")
        discard = box.button(QMessageBox.StandardButton.Discard)
        assert discard is not None
        discard.click()


kept: list[asyncio.Future[None]] = []


async def _walk(window: main_window.MainWindow, lore_file: Path) -> None:
    walk = Walk(window, lore_file)
    ticker = asyncio.ensure_future(walk.tick())
    try:
        report = await walk.run()
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the test reads it from the report
        traceback.print_exc()
        report = {"failed": f"{type(exc).__name__}: {exc}", "opened": walk.opened, "problems": walk.seen.problems}
        report["max_depth"] = walk.max_depth
    _say(json.dumps(report))
    ticker.cancel()
    walk.stop_watching()
    await walk.quit()


def main() -> None:
    progress.MIN_SHOW_MS = 0  # the rebuild's progress dialog appears at once (not after half a second)
    lore_file = Path(sys.argv[1])
    del sys.argv[1:]  # the rest of the command line is the window's own (none)
    ready = main_window.MainWindow.familiar_ready

    def familiar_ready(self: main_window.MainWindow) -> None:
        ready(self)
        kept.append(asyncio.ensure_future(_walk(self, lore_file)))

    main_window.MainWindow.familiar_ready = familiar_ready  # type: ignore[method-assign]
    from app.__main__ import main as familiar

    familiar()


if __name__ == "__main__":
    main()
