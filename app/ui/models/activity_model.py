"""The Dashboard's live activity log: a capped, append-only table of Activity records."""

from __future__ import annotations

from typing import Final

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor

from app.runtime.events import Activity, ActivityKind
from app.ui.models.base import Column, RecordTableModel
from app.ui.theme import colours

DEFAULT_CAPACITY: Final = 1_000

KIND_WORDS: Final[dict[ActivityKind, str]] = {
    ActivityKind.MESSAGE_IN: "Message",
    ActivityKind.REPLY_OUT: "Reply",
    ActivityKind.EDIT: "Edit",
    ActivityKind.DELETE: "Delete",
    ActivityKind.ERROR: "Error",
    ActivityKind.INFO: "Info",
}


def _tooltip(record: Activity) -> str:
    why = "\nDouble-click: why did it say that?" if record.kind is ActivityKind.REPLY_OUT else ""
    return f"{record.at.astimezone():%Y-%m-%d %H:%M:%S}  {record.where}\n{record.summary}{why}"


def _red_if_error(record: Activity) -> QColor | None:
    return QColor(colours().error) if record.kind is ActivityKind.ERROR else None


def _time_colour(record: Activity) -> QColor:
    return QColor(colours().error if record.kind is ActivityKind.ERROR else colours().muted)


COLUMNS: Final[tuple[Column[Activity], ...]] = (
    Column("Time", lambda a: f"{a.at.astimezone():%H:%M:%S}", foreground=_time_colour, tooltip=_tooltip),
    Column("Kind", lambda a: KIND_WORDS.get(a.kind, str(a.kind)), foreground=_red_if_error, tooltip=_tooltip),
    Column("Where", lambda a: a.where, foreground=_red_if_error, tooltip=_tooltip),
    Column("What", lambda a: a.summary, foreground=_red_if_error, tooltip=_tooltip),
)
TIME, KIND, WHERE, WHAT = range(len(COLUMNS))


class ActivityLogModel(RecordTableModel[Activity]):
    """Appends at the bottom and drops the oldest rows beyond `capacity`."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, parent: QObject | None = None) -> None:
        super().__init__(COLUMNS, capacity=capacity, parent=parent)
