"""Window-wide undo: one QUndoStack, Ctrl+Z / Ctrl+Shift+Z, and an "Undo" notice for what was just done.

An action is something `Reversible`: async `redo()` (do it) and `undo()`, each a facade call that
carries the revision it saw, so an undo of something that changed meanwhile is refused, not forced.
Panes do not call the facade for a state-changing action directly; they build the action (see
app/ui/fact_actions.py) and hand it to `UndoCentre.perform`, which does it, records it on the stack
and shows its notice:

    outcome = await self.ops.run("accept the fact", lambda: context.undo.perform(accept(memory, fact, self)))

The stack holds the history (texts, order); the centre does the async work first and moves the
stack after, so the stack never claims an undo that did not happen. An action undone from its notice
while others were done after it is marked obsolete (Ctrl+Z then skips it). An action with an undo
window (a forget: applied once it ends) becomes obsolete when the window ends. A failed undo is
shown as a notice and the action leaves the stack (it cannot be undone any more).

Notices: an action with an undo window (a forget) has a notice of its own for as long as the window
lasts, whose Undo undoes that action wherever it is on the stack. Other actions done one after the
other (a queue triaged by keys) share one notice: it names the latest, which its Undo undoes, and says
how many earlier ones Ctrl+Z undoes in turn; it stays UNDO_NOTICE_MS after the latest. (A stack of
notices shifting at every key cost the window most of its time while triaging: bench_ui_stall triage.)
A notice follows Ctrl+Z and Ctrl+Shift+Z: once its action is undone it says so and no longer offers an
Undo that would do nothing (a shared one names the earlier action its Undo now undoes, if any), and a
redo offers it again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence, QUndoCommand, QUndoStack
from shiboken6 import isValid

from app.runtime.errors import FamiliarError
from app.ui.async_slot import async_slot
from app.ui.error_text import one_line
from app.ui.widgets.notices import MESSAGE_NOTICE_MS, UNDO_NOTICE_MS, Notice, NoticeArea

_log = logging.getLogger(__name__)


class Reversible(Protocol):
    @property
    def label(self) -> str:
        """What was done, for the notice and the Edit menu ("Accepted “Alice keeps bees”")."""
        ...

    @property
    def undo_window(self) -> float | None:
        """Seconds after which it can no longer be undone (None: no limit)."""
        ...

    async def redo(self) -> None:
        """Do it (the first time too)."""
        ...

    async def undo(self) -> None: ...


class _Command(QUndoCommand):
    """A stack entry; the centre performs the work, so redo() and undo() here do nothing."""

    def __init__(self, action: Reversible) -> None:
        super().__init__(action.label)
        self.action = action
        self.expiry: QTimer | None = None
        self.notice: Notice | None = None  # its own notice (an action with an undo window); else the shared one

    def redo(self) -> None:
        return None

    def undo(self) -> None:
        return None


class _SharedNotice:
    """The notice a run of actions shares: the run's actions still done, oldest first (its Undo undoes the
    latest, Ctrl+Z the earlier ones in turn), and those Ctrl+Z undid, latest last (Ctrl+Shift+Z redoes them)."""

    def __init__(self, notice: Notice, command: _Command) -> None:
        self.notice = notice
        self.done: list[_Command] = [command]
        self.undone: list[_Command] = []

    @property
    def command(self) -> _Command | None:
        """What its Undo undoes: the latest action of the run still done."""
        return self.done[-1] if self.done else None


def undone_text(label: str) -> str:
    """A notice's words once its action was undone."""
    return f"Undone: {label}"


def shared_text(label: str, earlier: int) -> str:
    """A shared notice's words: the latest action, and how many earlier ones Ctrl+Z undoes."""
    if not earlier:
        return label
    return f"{label} · {earlier} earlier: Ctrl+Z"


class UndoCentre(QObject):
    """Emits `changed` after every undo, redo or new action (so a pane can refresh what it shows)."""

    changed = Signal()

    def __init__(self, notices: NoticeArea, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.notices = notices
        self.stack = QUndoStack(self)
        self._lock = asyncio.Lock()
        self.undo_action = QAction("&Undo", self)
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.undo_action.triggered.connect(self._on_undo_triggered)
        self.redo_action = QAction("&Redo", self)
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence(QKeySequence.StandardKey.Redo)])
        self.redo_action.triggered.connect(self._on_redo_triggered)
        self.stack.indexChanged.connect(self._sync_actions)
        self._shared: _SharedNotice | None = None
        self._sync_actions()

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    def _sync_actions(self) -> None:
        self.undo_action.setEnabled(self.stack.canUndo())
        self.undo_action.setText(f"&Undo {self.stack.undoText()}" if self.stack.canUndo() else "&Undo")
        self.redo_action.setEnabled(self.stack.canRedo())
        self.redo_action.setText(f"&Redo {self.stack.redoText()}" if self.stack.canRedo() else "&Redo")

    # -- doing ------------------------------------------------------------------------------------
    async def perform(self, action: Reversible) -> Reversible:
        """Do `action` (errors go to the caller, e.g. Operations), then record it and show its notice."""
        await action.redo()
        self.record(action)
        return action

    def record(self, action: Reversible, *, quietly: bool = False) -> Notice | None:
        """Put an action that was just done on the stack, with an Undo notice (`quietly`: without one, for
        what the owner is typing, whose notice would cover the field they type in; Ctrl+Z still undoes it)."""
        command = _Command(action)
        self.stack.push(command)
        self._start_expiry(command)
        if quietly:
            self.changed.emit()
            return None
        window_ms = int(action.undo_window * 1000) if action.undo_window is not None else 0
        shared = self._shared
        showing = self.notices.notices()
        if action.undo_window is None and shared is not None and showing and showing[-1] is shared.notice:
            shared.done.append(command)
            shared.undone.clear()  # a new action: what Ctrl+Z undid before cannot be redone any more
            self._retell_shared(shared)
            self.changed.emit()
            return shared.notice
        if action.undo_window is None:
            holder: _SharedNotice  # its Undo undoes the latest of the run (bound below, before any click)
            notice = self.notices.show_notice(
                action.label, action=lambda: self._on_notice_undo(holder.command), duration_ms=UNDO_NOTICE_MS
            )
            holder = self._shared = _SharedNotice(notice, command)
        else:
            notice = self.notices.show_notice(
                action.label, action=lambda: self._on_notice_undo(command), duration_ms=max(UNDO_NOTICE_MS, window_ms)
            )
            command.notice = notice
        self.changed.emit()
        return notice

    # -- the notices follow the stack ----------------------------------------------------------------
    def _retell_shared(self, shared: _SharedNotice) -> None:
        if shared.notice.is_gone:
            return
        latest = shared.command
        if latest is not None:
            text = shared_text(latest.action.label, len(shared.done) - 1)
            self.notices.retell(shared.notice, text, UNDO_NOTICE_MS, offer=True)
        elif shared.undone:
            text = undone_text(shared.undone[-1].action.label)
            self.notices.retell(shared.notice, text, MESSAGE_NOTICE_MS, offer=False)

    def _told_undone(self, command: _Command) -> None:
        """`command` was undone (by Ctrl+Z or from its notice): its notice no longer offers to undo it."""
        notice = command.notice
        if notice is not None and not notice.is_gone:
            self.notices.retell(notice, undone_text(command.action.label), MESSAGE_NOTICE_MS, offer=False)
        shared = self._shared
        if shared is not None and any(c is command for c in shared.done):
            shared.done = [c for c in shared.done if c is not command]
            shared.undone.append(command)
            self._retell_shared(shared)

    def _told_redone(self, command: _Command) -> None:
        """`command` was redone (Ctrl+Shift+Z): a notice still showing offers its Undo again."""
        notice = command.notice
        window = command.action.undo_window
        if notice is not None and not notice.is_gone:
            duration = max(UNDO_NOTICE_MS, int(window * 1000) if window is not None else 0)
            self.notices.retell(notice, command.action.label, duration, offer=True)
        shared = self._shared
        if shared is not None and shared.undone and shared.undone[-1] is command:
            shared.undone.pop()
            shared.done.append(command)
            self._retell_shared(shared)

    def _start_expiry(self, command: _Command) -> None:
        window = command.action.undo_window
        if window is None:
            return
        if command.expiry is None:
            command.expiry = QTimer(self)
            command.expiry.setSingleShot(True)
            command.expiry.timeout.connect(lambda: self._expire(command))
        command.expiry.start(int(window * 1000))

    def _expire(self, command: _Command) -> None:
        """Its undo window ended (a forget was applied): Ctrl+Z skips it from now on."""
        if isValid(command):  # Qt may have deleted it already (dropped from the stack)
            command.setObsolete(True)
            self._prune()

    def _prune(self) -> None:
        """Drop obsolete commands from the top, so Undo names what it would really undo."""
        if not self.busy:
            self._top()
            self._sync_actions()

    # -- undoing ------------------------------------------------------------------------------------
    def _top(self) -> _Command | None:
        """The command Ctrl+Z would undo, after dropping obsolete ones above it."""
        while self.stack.canUndo():
            command = self.stack.command(self.stack.index() - 1)
            if isinstance(command, _Command) and not command.isObsolete():
                return command
            self.stack.undo()  # Qt deletes an obsolete command without calling its undo()
        return None

    def _next(self) -> _Command | None:
        """The command Ctrl+Shift+Z would redo, after dropping obsolete ones."""
        while self.stack.canRedo():
            command = self.stack.command(self.stack.index())
            if isinstance(command, _Command) and not command.isObsolete():
                return command
            self.stack.redo()
        return None

    async def undo(self) -> bool:
        """Undo the last action still undoable; returns whether one was undone."""
        async with self._lock:
            command = self._top()
            if command is None:
                return False
            if not await self._attempt(command, "undo"):
                command.setObsolete(True)
                self.stack.undo()  # it cannot be undone any more: it leaves the stack
                return False
            self.stack.undo()
            if command.expiry is not None:
                command.expiry.stop()
            self._told_undone(command)
            self._top()  # what was undone from its notice, now on top, goes
        self._sync_actions()
        self.changed.emit()
        return True

    async def redo(self) -> bool:
        async with self._lock:
            command = self._next()
            if command is None:
                return False
            if not await self._attempt(command, "redo"):
                command.setObsolete(True)
                self.stack.redo()
                return False
            self.stack.redo()
            self._start_expiry(command)
            self._told_redone(command)
            self.changed.emit()
            return True

    async def undo_this(self, command: _Command) -> bool:
        """Undo one action from its notice, wherever it is on the stack."""
        async with self._lock:
            if command.isObsolete():
                return False
            index = next((i for i in range(self.stack.count()) if self.stack.command(i) is command), None)
            if index is None or index >= self.stack.index():
                return False  # undone already
            if index != self.stack.index() - 1:
                ok = await self._attempt(command, "undo")
                command.setObsolete(True)  # either way it is not on the stack's path any more
                if ok:
                    self._told_undone(command)
                    self.changed.emit()
                return ok
        return await self.undo()

    async def _attempt(self, command: _Command, which: str) -> bool:
        action = command.action
        try:
            await (action.undo() if which == "undo" else action.redo())
        except FamiliarError as error:
            self.notices.show_message(f"Could not {which} “{action.label}”: {one_line(error)}")
            return False
        except Exception as error:  # noqa: BLE001 (a bug must not take the window down; logged with its traceback)
            _log.exception("%s of %r failed unexpectedly", which, action.label)
            self.notices.show_message(f"Could not {which} “{action.label}”: {one_line(error)}")
            return False
        return True

    @async_slot()
    async def _on_undo_triggered(self) -> None:
        await self.undo()

    @async_slot()
    async def _on_redo_triggered(self) -> None:
        await self.redo()

    @async_slot()
    async def _on_notice_undo(self, command: _Command | None) -> None:
        if command is not None:
            await self.undo_this(command)
