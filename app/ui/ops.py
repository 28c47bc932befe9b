"""One helper to run a facade call from a slot: busy state, the error banner, progress, cancel.

    @async_slot()
    async def _on_accept_clicked(self) -> None:
        outcome = await self.ops.run("accept the fact", lambda: memory.accept(fact.id, fact.revision, initiator=self))
        if isinstance(outcome, Succeeded):
            self.model.replace_record(outcome.value)

- While a call named `what` runs, a second one with the same name is `Skipped` (a double click);
  `busy` is True while any runs (`busy_changed` says when that flips), and the widgets passed as
  `busy=` are disabled meanwhile.
- A `FamiliarError` becomes its one-line message in the banner (`show_error`); anything else is
  logged with its traceback and shown as "Could not <what>: <message>". Either way the outcome is
  `Failed(message, error)`, so a caller can still look at the error (e.g. a StaleRevisionError's
  current version). The banner is cleared when a call starts, unless `clear=False`.
- `run_with_progress` hands the work a sink for `Progress` records and shows them in the status bar
  (`blocking=False`) or in a window-modal dialog with Cancel that appears only after half a second
  (`blocking=True`). Cancel cancels the work's task: the outcome is `Cancelled`.
- If the slot itself is cancelled (the window closing), the work is cancelled too and the
  cancellation goes on up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import shiboken6
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from app.runtime.errors import FamiliarError
from app.ui.error_text import one_line
from app.ui.progress import BlockingProgress, StatusProgress

_log = logging.getLogger(__name__)

T = TypeVar("T")
if TYPE_CHECKING:  # for annotations only: this module is on the window's path to its first paint
    from app.runtime.api.views import Progress

ProgressSink = Callable[["Progress"], None]


@dataclass(frozen=True, slots=True)
class Succeeded(Generic[T]):
    value: T


@dataclass(frozen=True, slots=True)
class Failed:
    message: str  # the one line shown
    error: BaseException


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The user pressed Cancel."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """The same operation was already running."""


Outcome = Succeeded[T] | Failed | Cancelled | Skipped


class Operations(QObject):
    busy_changed = Signal(bool)

    def __init__(
        self,
        *,
        show_error: Callable[[str], None],
        clear_error: Callable[[], None] | None = None,
        status: StatusProgress | None = None,
        dialog_parent: QWidget | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._show_error = show_error
        self._clear_error = clear_error
        self._status = status
        self._dialog_parent = dialog_parent
        self._running: dict[str, asyncio.Future[Any]] = {}

    @property
    def busy(self) -> bool:
        return bool(self._running)

    def is_running(self, what: str) -> bool:
        return what in self._running

    def cancel(self, what: str) -> bool:
        """Cancel a running operation (what a progress dialog's Cancel does); returns whether one ran."""
        work = self._running.get(what)
        if work is None or work.done():
            return False
        work.cancel()
        return True

    async def run(
        self,
        what: str,
        call: Callable[[], Awaitable[T]],
        *,
        busy: Sequence[QWidget] = (),
        report: Callable[[str], None] | None = None,
        clear: bool = True,
    ) -> Outcome[T]:
        """Run `call()` as the operation `what` (words that fit "Could not <what>")."""
        return await self._execute(what, call, busy=busy, report=report, clear=clear)

    async def run_with_progress(
        self,
        what: str,
        work: Callable[[ProgressSink], Awaitable[T]],
        *,
        label: str,
        blocking: bool,
        busy: Sequence[QWidget] = (),
        report: Callable[[str], None] | None = None,
    ) -> Outcome[T]:
        """Run `work(sink)`, showing what it reports through `sink` (see the module docstring)."""
        if what in self._running:
            return Skipped()
        if blocking:

            def cancel() -> None:
                self.cancel(what)

            dialog = BlockingProgress(label, cancel, self._dialog_parent)
            try:
                return await self._execute(what, lambda: work(dialog.report), busy=busy, report=report, clear=True)
            finally:
                dialog.finish()
        if self._status is None:
            return await self._execute(what, lambda: work(_ignore), busy=busy, report=report, clear=True)
        job = self._status.begin(label)
        try:
            return await self._execute(what, lambda: work(job.report), busy=busy, report=report, clear=True)
        finally:
            job.end()

    async def _execute(
        self,
        what: str,
        call: Callable[[], Awaitable[T]],
        *,
        busy: Sequence[QWidget],
        report: Callable[[str], None] | None,
        clear: bool,
    ) -> Outcome[T]:
        if what in self._running:
            return Skipped()
        was_busy = self.busy
        inner: asyncio.Future[T] = asyncio.ensure_future(call())
        self._running[what] = inner
        for widget in busy:
            widget.setEnabled(False)
        if not was_busy:
            self.busy_changed.emit(True)
        if clear and self._clear_error is not None:
            self._clear_error()
        try:
            try:
                return Succeeded(await asyncio.shield(inner))
            except asyncio.CancelledError:
                if inner.cancelled():
                    return Cancelled()  # the user's Cancel
                inner.cancel()  # the slot itself is being cancelled: take the work down with it
                await asyncio.gather(inner, return_exceptions=True)
                raise
            except FamiliarError as error:
                return self._failed(one_line(error), error, report)
            except Exception as error:  # noqa: BLE001 (a bug must not take the window down; logged with its traceback)
                _log.exception("%s failed unexpectedly", what)
                return self._failed(f"Could not {what}: {one_line(error)}", error, report)
        finally:
            del self._running[what]
            for widget in busy:
                if shiboken6.isValid(widget):  # a dialog closed meanwhile takes its widgets with it
                    widget.setEnabled(True)
            if not self.busy:
                self.busy_changed.emit(False)

    def _failed(self, message: str, error: BaseException, report: Callable[[str], None] | None) -> Failed:
        (report or self._show_error)(message)
        return Failed(message, error)


def _ignore(_progress: Progress) -> None:
    return None
