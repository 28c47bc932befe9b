"""One as-of control of the facts timeline: a label, a time slider, a typed date for each handle (two when
comparing) and a "Now" button for each (the handle then follows the clock)."""

from __future__ import annotations

from datetime import UTC, datetime

from PySide6.QtCore import QDateTime
from PySide6.QtWidgets import QDateTimeEdit, QLabel, QPushButton, QWidget

from app.ui.widgets.time_slider import TimeSlider

DATE_FORMAT = "d MMM yyyy HH:mm"


def to_qt(moment: datetime) -> QDateTime:
    return QDateTime.fromSecsSinceEpoch(int(moment.timestamp()))


def from_qt(value: QDateTime) -> datetime:
    return datetime.fromtimestamp(value.toSecsSinceEpoch(), UTC)


class DateEdit(QDateTimeEdit):
    """A typed date and time; Tab leaves it (Left / Right move between its day, month, year... instead)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.shown = 0  # the time it was last set to show (seconds): anything else was typed

    def focusNextPrevChild(self, forward: bool) -> bool:
        return QWidget.focusNextPrevChild(self, forward)


class AsOfControl:
    """The widgets of one as-of control (the pane lays them out in its grid)."""

    def __init__(self, title: str, colours: tuple[str, str], tip: str) -> None:
        self.label = QLabel(title)
        self.slider = TimeSlider(title.replace("&", ""), colours)
        self.label.setBuddy(self.slider)
        self.label.setToolTip(tip)
        self.edits = (DateEdit(), DateEdit())
        self.now_buttons = (QPushButton("Now"), QPushButton("Now"))
        for edit, letter in zip(self.edits, "AB", strict=True):
            edit.setDisplayFormat(DATE_FORMAT)
            edit.setCalendarPopup(True)
            edit.setKeyboardTracking(False)
            edit.setToolTip(f"Type a date and time ({letter}), then Enter")
        for button in self.now_buttons:
            button.setCheckable(True)
            button.setMaximumWidth(64)
            button.setToolTip("Follow the clock (N on the slider)")
        self.to_label = QLabel("compared with B:")

    def show_time(self, handle: int, moment: datetime | None, now: datetime) -> None:
        """The typed date and the Now button of a handle say where it is (None: at now)."""
        edit = self.edits[handle]
        edit.blockSignals(True)
        edit.setDateTime(to_qt(moment or now))
        edit.blockSignals(False)
        edit.shown = edit.dateTime().toSecsSinceEpoch()
        self.now_buttons[handle].setChecked(moment is None)

    def typed(self, handle: int) -> datetime | None:
        """The date typed into a handle's box; None when it was left as shown (at "now" too)."""
        edit = self.edits[handle]
        if edit.dateTime().toSecsSinceEpoch() == edit.shown:
            return None
        return from_qt(edit.dateTime())
