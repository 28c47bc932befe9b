"""Turn builders shared by the store tests, and the fact objects over a bare store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from app.memory.corrections import Corrections
from app.memory.decisions import Decisions
from app.memory.erasure import Erasure
from app.memory.facts import FactBook
from app.memory.intake import FactIntake
from app.memory.records import NewTurn
from app.memory.store import Store
from app.memory.tombstones import Tombstones

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
GUILD = 500
GENERAL = 501
HOME = 502
PLACE = f"guild:{GUILD}/{GENERAL}"
OTHER_PLACE = f"guild:{GUILD}/{HOME}"


def turn(
    content: str,
    *,
    message_id: int | None = None,
    place: str = PLACE,
    author: int = 7001,
    name: str = "alice",
    minutes: float = 0,
    platform: str = "discord",
    created_at: datetime | None = None,
) -> NewTurn:
    channel = int(place.rsplit("/", 1)[-1]) if place.startswith("guild:") else 0
    return NewTurn(
        platform=platform,
        place=place,
        channel_id=channel,
        author_key=f"discord:{author}",
        author_name=name,
        content=content,
        created_at=created_at or T0 + timedelta(minutes=minutes),
        guild_id=GUILD if place.startswith("guild:") else None,
        message_id=message_id,
    )


@dataclass(frozen=True)
class FactTables:
    """The fact objects a History builds, over a bare store (no search indexes)."""

    facts: FactBook
    intake: FactIntake
    decisions: Decisions
    corrections: Corrections
    erasure: Erasure

    @classmethod
    def over(cls, store: Store) -> FactTables:
        tombstones = Tombstones(store)
        facts = FactBook(store)
        return cls(
            facts=facts,
            intake=FactIntake(store, tombstones),
            decisions=Decisions(store, facts),
            corrections=Corrections(store, facts, tombstones),
            erasure=Erasure(store, facts, tombstones),
        )
