"""The local chat transcript: ChatLine records, plus notices (failed sends) shown as red lines."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from app.runtime.facade import ChatLine
from app.ui.models.roles import RecordRole
from app.ui.theme import ERROR_RED, FAMILIAR_LINE_BACKGROUND

AnyIndex = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ChatNotice:
    """A line the window adds to the transcript itself, e.g. why a message got no reply."""

    message: str
    at: datetime = field(default_factory=_now)


TranscriptEntry = ChatLine | ChatNotice


class ChatTranscriptModel(QAbstractListModel):
    """An immutable tuple of transcript entries, oldest first."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._entries: tuple[TranscriptEntry, ...] = ()

    @property
    def entries(self) -> tuple[TranscriptEntry, ...]:
        return self._entries

    def append(self, entry: TranscriptEntry) -> None:
        row = len(self._entries)
        self.beginInsertRows(_ROOT, row, row)
        self._entries = (*self._entries, entry)
        self.endInsertRows()

    def prepend(self, entries: Iterable[TranscriptEntry]) -> None:
        """Put older entries (e.g. loaded history) above what is already there."""
        older = tuple(entries)
        if not older:
            return
        self.beginInsertRows(_ROOT, 0, len(older) - 1)
        self._entries = (*older, *self._entries)
        self.endInsertRows()

    def replace(self, entries: Iterable[TranscriptEntry]) -> None:
        self.beginResetModel()
        self._entries = tuple(entries)
        self.endResetModel()

    # Qt overrides

    def rowCount(self, parent: AnyIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._entries)

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._entries):
            return None
        entry = self._entries[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            if isinstance(entry, ChatNotice):
                return f"⚠ {entry.message}"
            return f"{entry.author}: {entry.content}"
        if role == Qt.ItemDataRole.ToolTipRole:
            moment = entry.at if isinstance(entry, ChatNotice) else entry.created_at
            return f"{moment.astimezone():%Y-%m-%d %H:%M:%S}"
        if role == Qt.ItemDataRole.ForegroundRole and isinstance(entry, ChatNotice):
            return QColor(ERROR_RED)
        if role == Qt.ItemDataRole.BackgroundRole and isinstance(entry, ChatLine) and entry.from_familiar:
            return QColor(FAMILIAR_LINE_BACKGROUND)
        if role == RecordRole:
            return entry
        return None
