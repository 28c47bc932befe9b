"""A stretch of conversation as the memory workers show it to the model, and how quiet it is."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from app.memory.records import SELF_KEY, Turn
from app.runtime.projectors.extraction import Batch, BatchTurn


def quote_turn(turn: Turn, *, with_id: bool = False) -> str:
    """One turn as one prompt line; its own line breaks are indented so a message cannot fake the
    line of another turn (or another speaker)."""
    head = f"[T#{turn.id}] " if with_id else ""
    return f"{head}{turn.author_name}: " + turn.content.replace("\r", "").replace("\n", "\n    ")


def quiet_for(turns: Sequence[Turn], now: datetime) -> float:
    """Seconds from the newest of `turns` to `now` (0 for no turns)."""
    if not turns:
        return 0.0
    return (now - max(t.created_at for t in turns)).total_seconds()


def batch_of(place: str, turns: Sequence[Turn], display_name: str) -> Batch:
    """Turns as an extraction batch, the familiar's own turns under its key and display name."""
    return Batch(place, tuple(BatchTurn.from_turn(t) for t in turns), self_key=SELF_KEY, self_name=display_name)


def participants_line(batch: Batch) -> str:
    """Who is talking, by name and canonical key (the familiar included), for the prompt."""
    return "Participants: " + ", ".join(f"{name} ({key})" for key, name in batch.participants.items())
