"""The local chat transcript: ChatLine records, the greeting it opens with while it can still be changed,
and notices (failed sends) shown as red lines.

One column: the chat view (app/ui/widgets/chat_view.py) draws each row as a message."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Final

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor

from app.runtime.api.facade import ChatLine
from app.ui.models.base import ALL_ROLES, ROOT, Column, RecordTableModel
from app.ui.theme import colours


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ChatNotice:
    """A line the window adds to the transcript itself, e.g. why a message got no reply. `retry`: the chat
    can try again what failed (its Retry button)."""

    message: str
    at: datetime = field(default_factory=_now)
    retry: bool = False


@dataclass(frozen=True, slots=True)
class ChatGreeting:
    """The greeting an empty chat opens with, before the owner's first message: `choices` (the greeting,
    then a card's alternate greetings), of which `index` is shown. Stored once the first message is sent."""

    author: str
    choices: tuple[str, ...]
    index: int = 0
    at: datetime = field(default_factory=_now)

    @property
    def content(self) -> str:
        return self.choices[self.index]

    def moved(self, step: int) -> ChatGreeting:
        """The next (step 1) or the previous (-1) greeting, round the ends."""
        return replace(self, index=(self.index + step) % len(self.choices))

    def line(self) -> ChatLine:
        """The greeting as the line it becomes once sent (not stored yet: no turn id)."""
        return ChatLine(
            turn_id=0, author=self.author, content=self.content, from_familiar=True, created_at=self.at, greeting=True
        )


TranscriptEntry = ChatLine | ChatNotice | ChatGreeting


def entry_text(entry: TranscriptEntry) -> str:
    """The entry's text as written (its Markdown source): what Copy copies."""
    return entry.message if isinstance(entry, ChatNotice) else entry.content


def entry_time(entry: TranscriptEntry) -> datetime:
    if isinstance(entry, ChatNotice):
        return entry.at
    return entry.at if isinstance(entry, ChatGreeting) else entry.created_at


def _text(entry: TranscriptEntry) -> str:
    if isinstance(entry, ChatNotice):
        return f"⚠ {entry.message}"
    return f"{entry.author}: {entry.content}"


def _when(entry: TranscriptEntry) -> str:
    return f"{entry_time(entry).astimezone():%Y-%m-%d %H:%M:%S}"


def _from_familiar(entry: TranscriptEntry) -> bool:
    return isinstance(entry, ChatGreeting) or (isinstance(entry, ChatLine) and entry.from_familiar)


COLUMNS: Final[tuple[Column[TranscriptEntry], ...]] = (
    Column(
        "Message",
        _text,
        tooltip=_when,
        foreground=lambda e: QColor(colours().error) if isinstance(e, ChatNotice) else None,
        background=lambda e: QColor(colours().familiar_line_background) if _from_familiar(e) else None,
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

    def set_entry(self, row: int, entry: TranscriptEntry) -> None:
        """Put `entry` in `row` (a reply regenerated, the greeting changed or sent)."""
        records = self.records
        if not 0 <= row < len(records):
            raise IndexError(row)
        self._records = (*records[:row], entry, *records[row + 1 :])
        self.dataChanged.emit(self.index(row, 0), self.index(row, 0), ALL_ROLES)

    def remove_entry(self, row: int) -> None:
        """Take `row` out (a notice whose failure is being retried)."""
        records = self.records
        if not 0 <= row < len(records):
            raise IndexError(row)
        self.beginRemoveRows(ROOT, row, row)
        self._records = (*records[:row], *records[row + 1 :])
        self.endRemoveRows()

    def insert_entry(self, row: int, entry: TranscriptEntry) -> None:
        """Put `entry` before `row` (the greeting above what a failed history load said)."""
        records = self.records
        row = max(0, min(row, len(records)))
        self.beginInsertRows(ROOT, row, row)
        self._records = (*records[:row], entry, *records[row:])
        self.endInsertRows()
