"""The tables of the "Why did it say that" pane: lore that fired and lore dropped, facts recalled (and
the few just below the cutoff), older messages recalled, and the differences from the reply before.

Rows are frozen records built by the pane from one Explanation (with the texts it looked up); the
models only draw them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor

from app.runtime.api.views import ExplainedLore, ExplainedLoreDrop, FactView, PersonRef
from app.ui.models.base import RIGHT, Column, RecordTableModel
from app.ui.models.forgetting_models import short_time
from app.ui.theme import AMBER, DIFF_ADDED, DIFF_REMOVED, EXPLAIN_DIFF_TEXT, MUTED_GREY, OK_GREEN, themed

SIGNAL_NAMES: Final[dict[str, str]] = {
    "bm25": "words",
    "embedding": "meaning",
    "recency": "recency",
    "importance": "importance",
}


def signals_text(signals: Mapping[str, float | None]) -> str:
    """ "words 0.42 · meaning 0.31": each signal's score (— for one that did not apply)."""
    return " · ".join(
        f"{SIGNAL_NAMES.get(name, name)} {'—' if value is None else f'{value:.2f}'}" for name, value in signals.items()
    )


def entry_name(index: int, title: str) -> str:
    """An entry as people count them: its title, else "entry 3" (1-based)."""
    return title or f"entry {index + 1}"


# -- lore ------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FiredLore:
    lore: ExplainedLore
    matched_in: str  # "carol's message", "an earlier message", "always on"...


LORE_COLUMNS: Final[tuple[Column[FiredLore], ...]] = (
    Column("Entry", lambda r: entry_name(r.lore.index, r.lore.title), tooltip=lambda r: f"entry {r.lore.index + 1}"),
    Column(
        "Fired by",
        lambda r: r.lore.key + (f" + {r.lore.secondary}" if r.lore.secondary else ""),
        tooltip=lambda r: "the key that matched, and the secondary key with it" if r.lore.secondary else None,
    ),
    Column("Matched in", lambda r: r.matched_in),
    Column("Tokens", lambda r: f"{r.lore.tokens:,}", align=RIGHT),
    Column("Priority", lambda r: str(r.lore.priority), align=RIGHT),
)


class FiredLoreModel(RecordTableModel[FiredLore]):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(LORE_COLUMNS, key=lambda r: r.lore.index, parent=parent)


DROP_COLUMNS: Final[tuple[Column[ExplainedLoreDrop], ...]] = (
    Column("Entry", lambda d: entry_name(d.index, d.title)),
    Column("Matched key", lambda d: d.key),
    Column(
        "Why it was left out", lambda d: d.detail or DROP_REASONS.get(d.reason, d.reason), tooltip=lambda d: d.reason
    ),
)
DROP_REASONS: Final[dict[str, str]] = {
    "budget": "no room left in the lorebook's token budget",
    "entry cap": "the most entries one reply may take had been reached",
    "probability": "its probability roll failed",
    "group": "another entry of its inclusion group won",
    "cooldown": "cooling down after it fired",
    "delay": "the conversation is not long enough yet",
    "disabled": "the entry is disabled",
}


class DroppedLoreModel(RecordTableModel[ExplainedLoreDrop]):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(DROP_COLUMNS, parent=parent)


# -- facts -----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RecalledFactRow:
    fact_id: int
    content: str  # "(forgotten)" once forgotten
    score: float
    signals: Mapping[str, float | None]
    used: bool  # False: just below the cutoff (left out by the budget)
    fact: FactView | None  # as it is now (None: forgotten): what Forget acts on


def _fact_colour(row: RecalledFactRow) -> QColor | None:
    return themed(MUTED_GREY) if not row.used or row.fact is None else None


FACT_COLUMNS: Final[tuple[Column[RecalledFactRow], ...]] = (
    Column("Fact", lambda r: r.content, foreground=_fact_colour, tooltip=lambda r: f"fact #{r.fact_id}"),
    Column("Score", lambda r: f"{r.score:.3f}", align=RIGHT, foreground=_fact_colour),
    Column("Signals", lambda r: signals_text(r.signals), foreground=_fact_colour),
    Column(
        "In the reply",
        lambda r: "yes" if r.used else "no: just below the cutoff",
        foreground=lambda r: themed(OK_GREEN) if r.used else themed(AMBER),
    ),
)


class RecalledFactsModel(RecordTableModel[RecalledFactRow]):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(FACT_COLUMNS, key=lambda r: (r.fact_id, r.used), parent=parent)


# -- older messages ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RecalledTurnRow:
    turn_id: int
    author: PersonRef | None  # None: the message is gone
    content: str
    created_at: datetime | None
    score: float
    signals: Mapping[str, float | None]
    used: bool = True


TURN_COLUMNS: Final[tuple[Column[RecalledTurnRow], ...]] = (
    Column("When", lambda r: "—" if r.created_at is None else short_time(r.created_at)),
    Column("Who", lambda r: "—" if r.author is None else r.author.name),
    Column("Message", lambda r: r.content, tooltip=lambda r: r.content),
    Column("Score", lambda r: f"{r.score:.3f}", align=RIGHT, tooltip=lambda r: signals_text(r.signals)),
    Column("In the reply", lambda r: "yes" if r.used else "no: just below the cutoff"),
)


class RecalledTurnsModel(RecordTableModel[RecalledTurnRow]):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(TURN_COLUMNS, key=lambda r: (r.turn_id, r.used), parent=parent)


# -- the reply before ----------------------------------------------------------------------------------------
DiffKind = Literal["layer", "lore", "fact", "dropped"]


@dataclass(frozen=True, slots=True)
class DiffRow:
    kind: DiffKind
    name: str
    change: str  # "+63 tokens", "added", "removed", "now dropped"
    sign: int  # +1 added / grew, -1 removed / shrank


def _diff_background(row: DiffRow) -> QColor:
    return QColor(DIFF_ADDED if row.sign > 0 else DIFF_REMOVED)


DIFF_COLUMNS: Final[tuple[Column[DiffRow], ...]] = (
    Column("What", lambda r: {"layer": "Layer", "lore": "Lore", "fact": "Fact", "dropped": "Lore left out"}[r.kind]),
    Column("Name", lambda r: r.name),
    Column("Change", lambda r: r.change, background=_diff_background, foreground=lambda _r: QColor(EXPLAIN_DIFF_TEXT)),
)


class ExplanationDiffModel(RecordTableModel[DiffRow]):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(DIFF_COLUMNS, parent=parent)
