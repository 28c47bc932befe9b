"""The two ways the window shows long work, both fed the one `Progress` type (label, done, total or None):

- `StatusProgress`, in the status bar, for background work the user may ignore;
- `BlockingProgress`, a window-modal dialog with Cancel, for work that must block editing. It only
  appears once the work has lasted `MIN_SHOW_MS` (short jobs do not flash), and is safe to tick
  before it has appeared or after it has gone.
A `total` of None shows a busy bar without a percentage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QProgressDialog, QWidget

from app.ui.theme import SPACE_S

if TYPE_CHECKING:  # for annotations only: this module is on the window's path to its first paint
    from app.runtime.api.views import Progress


MIN_SHOW_MS = 500
BAR_WIDTH = 160


def _percent(progress: Progress) -> int | None:
    fraction = progress.fraction
    return None if fraction is None else round(fraction * 100)


class StatusJob:
    """One piece of background work shown in the status bar: `report` its progress, `end` it."""

    def __init__(self, owner: StatusProgress, job: int) -> None:
        self._owner = owner
        self._job = job

    def report(self, progress: Progress) -> None:
        self._owner._report(self._job, progress)

    def end(self) -> None:
        self._owner._end(self._job)


class StatusProgress(QWidget):
    """A label and a bar for the status bar; hidden while nothing runs. Several jobs may report:
    the one that reported last is shown, and the widget hides when every job has ended."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.bar = QProgressBar()
        self.bar.setFixedWidth(BAR_WIDTH)
        self.bar.setTextVisible(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(SPACE_S)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        self._jobs: dict[int, Progress] = {}
        self._next_job = 0
        self.setVisible(False)

    def begin(self, label: str) -> StatusJob:
        job = self._next_job
        self._next_job += 1
        from app.runtime.api.views import Progress  # loaded with the first job, not on the way to the first paint

        self._report(job, Progress(label, 0, None), new=True)
        return StatusJob(self, job)

    @property
    def current(self) -> Progress | None:
        return next(reversed(self._jobs.values()), None)

    def _report(self, job: int, progress: Progress, *, new: bool = False) -> None:
        if job not in self._jobs and not new:
            return  # ended already
        self._jobs.pop(job, None)
        self._jobs[job] = progress  # the last to report is shown
        self._show(progress)

    def _end(self, job: int) -> None:
        self._jobs.pop(job, None)
        current = self.current
        if current is None:
            self.setVisible(False)
        else:
            self._show(current)

    def _show(self, progress: Progress) -> None:
        percent = _percent(progress)
        self.label.setText(progress.label if percent is None else f"{progress.label} — {percent}%")
        if percent is None:
            self.bar.setRange(0, 0)
        else:
            self.bar.setRange(0, 100)
            self.bar.setValue(percent)
        self.setVisible(True)


class BlockingProgress(QProgressDialog):
    """A window-modal progress dialog with Cancel that appears only after `MIN_SHOW_MS`."""

    def __init__(self, label: str, on_cancel: Callable[[], None], parent: QWidget | None) -> None:
        super().__init__(label, "Cancel", 0, 0, parent)
        self.setWindowTitle("Familiar")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setAutoClose(False)
        self.setAutoReset(False)
        self.setMinimumDuration(1_000_000)  # never auto-shown by Qt's own estimate: the timer below decides
        self.canceled.connect(on_cancel)
        self._finished = False
        self._show_timer = QTimer(self)
        self._show_timer.setSingleShot(True)
        self._show_timer.setInterval(MIN_SHOW_MS)
        self._show_timer.timeout.connect(self._appear)
        self._show_timer.start()

    def report(self, progress: Progress) -> None:
        """Safe whether or not the dialog has appeared yet, and after it finished."""
        if self._finished:
            return
        self.setLabelText(progress.label)
        percent = _percent(progress)
        if percent is None:
            self.setRange(0, 0)
        else:
            self.setRange(0, 100)
            self.setValue(percent)

    def _appear(self) -> None:
        if not self._finished:
            self.show()

    @property
    def appeared(self) -> bool:
        return self.isVisible()

    def finish(self) -> None:
        self._finished = True
        self._show_timer.stop()
        self.hide()
        self.deleteLater()
