"""`facade.explain(turn_id)`: one reply's recorded explanation as a typed record.

Explanations keep ids only (never text); a fact's text is looked up now, so a forgotten fact shows
as "(forgotten)".
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from app.memory.errors import StoreError
from app.memory.explanations import Explanations
from app.memory.facts import FactBook
from app.runtime.api.views import (
    ExplainedDrop,
    ExplainedFact,
    ExplainedLayer,
    ExplainedLore,
    ExplainedLoreDrop,
    ExplainedTurn,
    Explanation,
    JsonValue,
    LoreSpan,
)
from app.runtime.errors import FamiliarError
from app.runtime.names import Names

FORGOTTEN = "(forgotten)"


def lore_span(raw: Any) -> LoreSpan | None:
    """A span as the lorebook layer records it (see lore_layer._span), typed; None for anything else."""
    if not isinstance(raw, Mapping) or raw.get("source") not in ("message", "author", "lore", "text"):
        return None
    return LoreSpan(
        source=raw["source"],
        start=int(raw.get("start", 0)),
        end=int(raw.get("end", 0)),
        turn_id=_number(raw.get("turn_id")),
        entry=_number(raw.get("entry")),
        position=_number(raw.get("position")),
    )


def _number(value: Any) -> int | None:
    return None if value is None else int(value)


def explained_lore(entry: Mapping[str, Any]) -> ExplainedLore:
    via = entry.get("via")
    return ExplainedLore(
        index=int(entry["index"]),
        title=str(entry.get("title") or ""),
        key=str(entry.get("key") or ""),
        secondary=None if entry.get("secondary") is None else str(entry["secondary"]),
        priority=int(entry.get("priority", 0)),
        tokens=int(entry.get("tokens", 0)),
        via=via if via in ("key", "constant", "sticky", "decorator") else "key",
        step=int(entry.get("step", 0)),
        span=lore_span(entry.get("span")),
        roll=None if entry.get("roll") is None else float(entry["roll"]),
    )


def explained_lore_drop(entry: Mapping[str, Any]) -> ExplainedLoreDrop:
    return ExplainedLoreDrop(
        index=int(entry.get("index", -1)),
        title=str(entry.get("title") or ""),
        key=str(entry.get("key") or ""),
        reason=str(entry.get("reason", "")),
        detail=str(entry.get("detail", "")),
        step=int(entry.get("step", 0)),
        span=lore_span(entry.get("span")),
    )


def _signals(item: Mapping[str, Any]) -> dict[str, float | None]:
    raw = item.get("signals") or {}
    return {str(k): None if v is None else float(v) for k, v in raw.items()}


async def explain(explanations: Explanations, facts: FactBook, names: Names, turn_id: int) -> Explanation:
    try:
        found = await explanations.of_turn(turn_id)
        if found is None:
            raise FamiliarError(f"turn {turn_id} has no explanation: it is not a reply of this familiar")
        fact_items: list[dict[str, Any]] = list(found.get("facts", []))
        stored = await facts.get_many([int(f["fact_id"]) for f in fact_items])
    except StoreError as exc:
        raise FamiliarError(str(exc)) from exc
    table = await names.table(places=[str(found["place"])])
    activation: Mapping[str, Any] = found.get("lorebook_activation") or {}
    explained_facts = []
    for item in fact_items:
        fact = stored.get(int(item["fact_id"]))
        live = fact is not None and fact.status != "forgotten"
        explained_facts.append(
            ExplainedFact(
                fact_id=int(item["fact_id"]),
                score=float(item.get("score", 0.0)),
                signals=_signals(item),
                content=fact.content if fact is not None and live else FORGOTTEN,
                status=fact.status if fact is not None else "forgotten",
            )
        )
    return Explanation(
        turn_id=turn_id,
        explanation_id=int(found["explanation_id"]),
        place=table.place(str(found["place"])),
        created_at=datetime.fromisoformat(str(found["created_at"])),
        tier=str(found.get("tier", "")),
        recall_paused=bool(found.get("recall_paused", False)),
        assembly_ms=float(found.get("assembly_ms", 0.0)),
        layers=tuple(
            ExplainedLayer(
                name=str(layer["name"]),
                tokens=int(layer["tokens"]),
                budget=int(layer["budget"]),
                cached=bool(layer.get("cached", False)),
                note=str(layer.get("note", "")),
            )
            for layer in found.get("layers", [])
        ),
        lore=tuple(explained_lore(entry) for entry in found.get("lorebook", [])),
        facts=tuple(explained_facts),
        turns=tuple(
            ExplainedTurn(turn_id=int(t["turn_id"]), score=float(t.get("score", 0.0)), signals=_signals(t))
            for t in found.get("turns", [])
        ),
        dropped=tuple(
            ExplainedDrop(
                layer=str(d.get("layer", "")),
                reason=str(d.get("reason", "")),
                details={str(k): cast(JsonValue, v) for k, v in d.items() if k not in ("layer", "reason")},
            )
            for d in found.get("dropped", [])
        ),
        lore_dropped=tuple(
            explained_lore_drop(d) for d in found.get("dropped", []) if d.get("layer") == "lorebook" and "index" in d
        ),
        lore_seed=None if activation.get("seed") is None else int(activation["seed"]),
        lore_clock=None if activation.get("clock") is None else int(activation["clock"]),
        lore_steps=tuple(tuple(int(i) for i in step) for step in activation.get("steps", [])),
    )
