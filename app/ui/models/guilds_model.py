"""The guilds (servers) the bot is in, replaced wholesale on every GuildsChanged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from PySide6.QtCore import QObject

from app.runtime.events import GuildInfo
from app.ui.models.base import RIGHT, Column, RecordTableModel
from app.ui.theme import monospace_font

COLUMNS: Final[tuple[Column[GuildInfo], ...]] = (
    Column("Name", lambda g: g.name),
    Column("Id", lambda g: str(g.id), font=lambda _g: monospace_font()),
    Column("Members", lambda g: f"{g.member_count:,}", align=RIGHT),
)
NAME, ID, MEMBERS = range(len(COLUMNS))


class GuildsModel(RecordTableModel[GuildInfo]):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(COLUMNS, key=lambda g: g.id, parent=parent)

    @property
    def guilds(self) -> tuple[GuildInfo, ...]:
        return self.records

    def set_guilds(self, guilds: Iterable[GuildInfo]) -> None:
        self.set_records(guilds)
