"""People the familiar knows, by name, most recently seen first (snapshots of `PersonView`)."""

from __future__ import annotations

from PySide6.QtCore import QObject

from app.runtime.api.views import PersonView
from app.ui.local_time import short_day
from app.ui.models.base import RIGHT, Column, RecordTableModel

NAME, FACTS, LAST_SEEN = range(3)


def person_name(person: PersonView) -> str:
    return f"{person.person.name} (this familiar)" if person.is_self else person.person.name


class PeopleModel(RecordTableModel[PersonView]):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column("Name", person_name, tooltip=lambda p: f"{person_name(p)} ({p.person.key})"),
                Column(
                    "Facts",
                    lambda p: f"{p.current_facts:,}",
                    align=RIGHT,
                    tooltip=lambda _p: "current facts about them",
                ),
                Column("Last seen", lambda p: short_day(p.last_seen)),
            ),
            key=lambda p: p.person.key,
            parent=parent,
        )
