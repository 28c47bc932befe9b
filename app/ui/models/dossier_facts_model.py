"""The facts behind a person's dossier in one place: current ones, and those still waiting in the pending
queue, each with the messages it came from (read with the rest, so `data()` never asks for them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from PySide6.QtCore import QObject

from app.runtime.api.views import FactView, PersonDossiers, PlaceRef, SourceMessage
from app.ui.local_time import short_day, short_when
from app.ui.models.base import Column, RecordTableModel

FACT, STATUS, LEARNED = range(3)


@dataclass(frozen=True, slots=True)
class FactRow:
    fact: FactView
    sources: tuple[SourceMessage, ...]

    @property
    def is_pending(self) -> bool:
        return self.fact.status == "pending"


def status_text(row: FactRow, now: datetime | None = None) -> str:
    fact = row.fact
    moment = now or datetime.now(UTC)
    if fact.snoozed(moment) and fact.snoozed_until is not None:
        return f"snoozed until {short_day(fact.snoozed_until, now=moment)}"
    return {"active": "current", "pending": "pending"}.get(fact.status, fact.status)


def kind_text(row: FactRow) -> str:
    """'semantic · importance 5 · 90% sure'."""
    fact = row.fact
    return f"{fact.type} · importance {fact.importance} · {fact.confidence:.0%} sure"


class DossierFactsModel(RecordTableModel[FactRow]):
    """Three columns (the fact, its status, when it was learned); its kind is in the tooltip and beside
    its sources, so the text keeps the room at a small window size."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column("Fact", lambda r: r.fact.content, tooltip=lambda r: f"{r.fact.content}\n{kind_text(r)}"),
                Column("Status", status_text),
                Column(
                    "Learned", lambda r: short_day(r.fact.created_at), tooltip=lambda r: short_when(r.fact.created_at)
                ),
            ),
            key=lambda r: r.fact.id,
            parent=parent,
        )


@dataclass(frozen=True, slots=True)
class ScopeFacts:
    """A person's dossier in one place and the facts behind it."""

    scope: PlaceRef
    dossier: str | None  # None: not written for this place yet
    updated_at: datetime | None
    rows: tuple[FactRow, ...]


def scopes_of(
    dossiers: PersonDossiers, pending: Sequence[FactView], sources: Sequence[SourceMessage]
) -> tuple[ScopeFacts, ...]:
    """Every place with a dossier or facts about the person: the dossier, its current facts, then those
    still pending there; places with a dossier first, then by name."""
    by_turn = {s.turn_id: s for s in sources}

    def row(fact: FactView) -> FactRow:
        return FactRow(fact, tuple(by_turn[t] for t in fact.source_turn_ids if t in by_turn))

    scopes: dict[str, ScopeFacts] = {
        d.scope.key: ScopeFacts(d.scope, d.text, d.updated_at, tuple(row(f) for f in d.facts))
        for d in dossiers.dossiers
    }
    for fact in pending:
        known = scopes.get(fact.scope.key) or ScopeFacts(fact.scope, None, None, ())
        scopes[fact.scope.key] = ScopeFacts(known.scope, known.dossier, known.updated_at, (*known.rows, row(fact)))
    return tuple(sorted(scopes.values(), key=lambda s: (s.dossier is None, -len(s.rows), s.scope.name.casefold())))
