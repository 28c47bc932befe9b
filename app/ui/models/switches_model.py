"""The pause switches as a table: one row per place (everywhere first, then the local chat, DMs, each
server followed by its channels), a column each for learning and recall, saying whether the place is
on, paused by its own switch, or paused by its server's or the everywhere switch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor, QFont

from app.runtime.api.views import PauseKind, PauseView, PlaceRef, Switch
from app.ui.models.base import Column, RecordTableModel
from app.ui.theme import AMBER, HINT_BACKGROUND, INHERITED_BACKGROUND, MUTED_GREY, OK_GREEN, themed

EVERYWHERE = "*"
PLACE, LEARNING, RECALL = range(3)
KIND_OF_COLUMN: dict[int, PauseKind] = {LEARNING: "learning", RECALL: "recall"}

WORDS: dict[str | None, str] = {
    None: "● On",
    "here": "❚❚ Paused",
    "server": "❚❚ Paused by the server switch",
    "everywhere": "❚❚ Paused by the everywhere switch",
}


@dataclass(frozen=True, slots=True)
class SwitchRow:
    key: str  # "*" for everywhere, else the place key
    name: str  # what the row says: "Everywhere", "Lantern Club", "#general" (under its server)
    full_name: str  # "Lantern Club #general"
    level: Literal[0, 1, 2]  # everywhere, a place of its own (server, DM, local chat), a channel of a server
    learning: Switch
    recall: Switch

    def switch(self, kind: PauseKind) -> Switch:
        return self.learning if kind == "learning" else self.recall


def _here(chosen: tuple[str, ...]) -> Switch:
    return Switch(True, "here") if EVERYWHERE in chosen else Switch(False, None)


def _row(place: PlaceRef, learning: Switch, recall: Switch) -> SwitchRow:
    if place.parent is not None:
        _server, _, channel = place.name.partition(" #")
        name = f"#{channel}" if channel else place.name
        return SwitchRow(place.key, name, place.name, 2, learning, recall)
    return SwitchRow(place.key, place.name, place.name, 1, learning, recall)


def switch_rows(view: PauseView) -> list[SwitchRow]:
    """Everywhere, then every known place in the order PauseView gives (servers before their channels)."""
    rows = [SwitchRow(EVERYWHERE, "Everywhere", "everywhere", 0, _here(view.learning), _here(view.recall))]
    rows.extend(_row(p.place, p.learning, p.recall) for p in view.places)
    return rows


def _cell_text(switch: Switch) -> str:
    return WORDS[switch.source if switch.paused else None]


def _cell_colour(switch: Switch) -> QColor:
    if not switch.paused:
        return themed(OK_GREEN)
    return themed(AMBER) if switch.source == "here" else themed(MUTED_GREY)


def _cell_background(switch: Switch) -> QColor | None:
    if not switch.paused:
        return None
    return themed(HINT_BACKGROUND) if switch.source == "here" else themed(INHERITED_BACKGROUND)


def _cell_font(switch: Switch) -> QFont | None:
    if not switch.paused:
        return None
    font = QFont()
    font.setBold(switch.source == "here")
    font.setItalic(switch.source != "here")
    return font


def _cell_tooltip(row: SwitchRow, kind: PauseKind) -> str:
    switch = row.switch(kind)
    where = "everywhere" if row.key == EVERYWHERE else f"in {row.full_name}"
    key = "L" if kind == "learning" else "R"
    if not switch.paused:
        return f"{kind.capitalize()} is on {where}. Click, Space or {key} to pause it {where}."
    if switch.source == "here":
        return f"{kind.capitalize()} is paused {where}. Click, Space or {key} to resume it."
    ruler = "its server's switch" if switch.source == "server" else "the everywhere switch"
    return f"{kind.capitalize()} is paused {where} by {ruler}. Click, Space or {key} to go to that switch."


def _name_font(row: SwitchRow) -> QFont | None:
    if row.level == 2:
        return None
    font = QFont()
    font.setBold(True)
    return font


class SwitchesModel(RecordTableModel[SwitchRow]):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column(
                    "Place",
                    lambda r: ("      " if r.level == 2 else "") + r.name,
                    tooltip=lambda r: r.full_name if r.key != EVERYWHERE else "Every place, now and to come",
                    font=_name_font,
                ),
                Column(
                    "Learning",
                    lambda r: _cell_text(r.learning),
                    foreground=lambda r: _cell_colour(r.learning),
                    background=lambda r: _cell_background(r.learning),
                    font=lambda r: _cell_font(r.learning),
                    tooltip=lambda r: _cell_tooltip(r, "learning"),
                ),
                Column(
                    "Recall",
                    lambda r: _cell_text(r.recall),
                    foreground=lambda r: _cell_colour(r.recall),
                    background=lambda r: _cell_background(r.recall),
                    font=lambda r: _cell_font(r.recall),
                    tooltip=lambda r: _cell_tooltip(r, "recall"),
                ),
            ),
            key=lambda r: r.key,
            parent=parent,
        )
