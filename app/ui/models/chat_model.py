"""The local chat transcript: ChatLine records, plus notices (failed sends) shown as red lines.

One column, shown in a QListView."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor

from app.runtime.facade import ChatLine
from app.ui.models.base import Column, RecordTableModel
from app.ui.theme import colours


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ChatNotice:
    """A line the window adds to the transcript itself, e.g. why a message got no reply."""

    message: str
    at: datetime = field(default_factory=_now)


TranscriptEntry = ChatLine | ChatNotice


def _text(entry: TranscriptEntry) -> str:
    if isinstance(entry, ChatNotice):
        return f"⚠ {entry.message}"
    return f"{entry.author}: {entry.content}"


def _when(entry: TranscriptEntry) -> str:
    moment = entry.at if isinstance(entry, ChatNotice) else entry.created_at
    return f"{moment.astimezone():%Y-%m-%d %H:%M:%S}"


COLUMNS: Final[tuple[Column[TranscriptEntry], ...]] = (
    Column(
        "Message",
        _text,
        tooltip=_when,
        foreground=lambda e: QColor(colours().error) if isinstance(e, ChatNotice) else None,
        background=lambda e: (
            QColor(colours().familiar_line_background) if isinstance(e, ChatLine) and e.from_familiar else None
        ),
    ),
)


class ChatTranscriptModel(RecordTableModel[TranscriptEntry]):
    """Transcript entries, oldest first."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(COLUMNS, parent=parent)

    @property
    def entries(self) -> tuple[TranscriptEntry, ...]:
        return self.records

    def replace(self, entries: Iterable[TranscriptEntry]) -> None:
        self.set_records(entries)
