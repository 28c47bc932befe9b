"""The guilds (servers) the bot is in, replaced wholesale on every GuildsChanged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

from app.runtime.events import GuildInfo
from app.ui.models.roles import RecordRole
from app.ui.theme import monospace_font

AnyIndex = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()

COLUMNS: Final = ("Name", "Id", "Members")
NAME, ID, MEMBERS = range(len(COLUMNS))


class GuildsModel(QAbstractTableModel):
    """An immutable tuple of GuildInfo plus an id -> row map."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._guilds: tuple[GuildInfo, ...] = ()
        self._rows: dict[int, int] = {}

    @property
    def guilds(self) -> tuple[GuildInfo, ...]:
        return self._guilds

    def row_of(self, guild_id: int) -> int | None:
        return self._rows.get(guild_id)

    def set_guilds(self, guilds: Iterable[GuildInfo]) -> None:
        self.beginResetModel()
        self._guilds = tuple(guilds)
        self._rows = {guild.id: row for row, guild in enumerate(self._guilds)}
        self.endResetModel()

    # Qt overrides

    def rowCount(self, parent: AnyIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._guilds)

    def columnCount(self, parent: AnyIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.TextAlignmentRole
            and section == MEMBERS
        ):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.DisplayRole
            and 0 <= section < len(COLUMNS)
        ):
            return COLUMNS[section]
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._guilds):
            return None
        guild = self._guilds[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == NAME:
                return guild.name
            if column == ID:
                return str(guild.id)
            if column == MEMBERS:
                return f"{guild.member_count:,}"
            return None
        if role == Qt.ItemDataRole.FontRole and column == ID:
            return monospace_font()
        if role == Qt.ItemDataRole.TextAlignmentRole and column == MEMBERS:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == RecordRole:
            return guild
        return None
