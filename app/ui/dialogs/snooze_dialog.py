"""Snooze until a date and time the owner picks (the "Pick a date…" of the pending queue's snooze menu)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from PySide6.QtCore import QDateTime, Qt
from PySide6.QtWidgets import QDateTimeEdit, QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from app.ui.dialogs.modal import window_modal
from app.ui.theme import small_label

DEFAULT_HOUR = 9
MINIMUM_AHEAD = timedelta(minutes=5)
DISPLAY_FORMAT = "ddd d MMM yyyy HH:mm"


def default_until(now: datetime) -> datetime:
    """Tomorrow at 09:00, local time."""
    local = now.astimezone()
    return datetime.combine(local.date() + timedelta(days=1), time(DEFAULT_HOUR), tzinfo=local.tzinfo)


class SnoozeDialog(QDialog):
    def __init__(self, text: str, parent: QWidget | None = None, *, now: datetime | None = None) -> None:
        super().__init__(parent)
        moment = now or datetime.now(UTC)
        self.setWindowTitle("Snooze until…")
        what = QLabel(text)
        what.setWordWrap(True)
        what.setTextFormat(Qt.TextFormat.PlainText)
        self.edit = QDateTimeEdit()
        self.edit.setCalendarPopup(True)
        self.edit.setDisplayFormat(DISPLAY_FORMAT)
        self.edit.setMinimumDateTime(QDateTime.fromSecsSinceEpoch(int((moment + MINIMUM_AHEAD).timestamp())))
        self.edit.setDateTime(QDateTime.fromSecsSinceEpoch(int(default_until(moment).timestamp())))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Snooze")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(what)
        layout.addWidget(small_label("It leaves the queue and comes back at this time (your local time)."))
        layout.addWidget(self.edit)
        layout.addWidget(buttons)
        self.edit.setFocus()

    def until(self) -> datetime:
        """The chosen moment, as an aware UTC datetime."""
        return datetime.fromtimestamp(self.edit.dateTime().toSecsSinceEpoch(), tz=UTC)


async def ask_snooze_until(text: str, parent: QWidget | None) -> datetime | None:
    """Show the dialog (window-modal, no nested event loop); the chosen time, or None when cancelled."""
    dialog = SnoozeDialog(text, parent)
    result = await window_modal(dialog)
    return dialog.until() if result == QDialog.DialogCode.Accepted.value else None
