"""The context layers of a reply, in their default order.

Each layer builds one block of the prompt within its token budget (`[budget.<tier>]`) and says what
went in and what the budget dropped, for the reply's explanation. `invalidation_key` is cheap (no
I/O: it reads the context the assembler prepared, including the store's change counters), so the
assembler can reuse a layer's last output while nothing it depends on has changed.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from app.config.settings import BudgetTier
from app.lore.macros import expand, has_user_macro
from app.memory.derived import Projections
from app.memory.policy import visible_scopes
from app.memory.records import Turn
from app.runtime.context.budget import count_tokens, pack, truncate_to_budget
from app.runtime.context.fence import escape, fence
from app.runtime.llm import ChatMessage
from app.runtime.retrieval import Retriever

SELF_KEY = "familiar:self"
DEFAULT_ORDER = ("character", "lorebook", "summary", "reflections", "dossiers", "memory", "history")
MEMORY_LAYERS = frozenset({"summary", "reflections", "dossiers", "memory"})
MESSAGE_OVERHEAD = 4  # role and separators of one chat message


@dataclass(frozen=True, slots=True)
class ReplyContext:
    place: str
    display_name: str
    tier: str
    budget: BudgetTier
    recent: tuple[Turn, ...]  # the channel's recent window, oldest first
    recall_paused: bool
    versions: Mapping[str, int]  # change counters of the store
    now: datetime

    @property
    def query(self) -> str:
        """The cue for recall: the last few things other people said."""
        said = [t.content for t in self.recent if t.author_key != SELF_KEY]
        return "\n".join(said[-3:])

    @property
    def participants(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for turn in self.recent:
            if turn.author_key != SELF_KEY:
                seen[turn.author_key] = None
        return tuple(seen)

    @property
    def speaker(self) -> str:
        """Who the reply answers: the last person (not the familiar) to speak in the window."""
        for turn in reversed(self.recent):
            if turn.author_key != SELF_KEY:
                return turn.author_name
        return "User"

    def scan_texts(self) -> list[str]:
        return [f"{t.author_name}: {t.content}" for t in self.recent]


@dataclass(frozen=True, slots=True)
class LayerOutput:
    name: str
    text: str = ""  # a block of the system prompt ("" = nothing)
    messages: tuple[ChatMessage, ...] = ()  # the history layer's chat messages
    cost: int = 0
    budget: int = 0
    items: tuple[dict[str, Any], ...] = ()  # what went in, for the explanation
    dropped: tuple[dict[str, Any], ...] = ()  # what the budget or a cap left out
    note: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)  # layer-specific facts for the explanation


class Layer(Protocol):
    name: str

    async def build(self, ctx: ReplyContext) -> LayerOutput: ...

    def invalidation_key(self, ctx: ReplyContext) -> Hashable | None:
        """Equal keys mean equal output; None means never reuse."""
        ...


def describe_place(place: str) -> str:
    if place == "local":
        return "the owner's private test chat in the Familiar window"
    if place.startswith("dm:"):
        return "a direct message conversation"
    return "a channel of a Discord server"


class CharacterLayer:
    name = "character"

    def __init__(self, persona: str) -> None:
        """The persona may use SillyTavern's name macros ({{char}}, {{user}}, <BOT>, <USER>): cards bring them."""
        self._persona = persona.strip()
        self._digest = hashlib.sha256(self._persona.encode()).hexdigest()
        self._per_speaker = has_user_macro(self._persona)

    def invalidation_key(self, ctx: ReplyContext) -> Hashable:
        speaker = ctx.speaker if self._per_speaker else ""
        return (self._digest, ctx.display_name, speaker, describe_place(ctx.place), ctx.budget.character_tokens)

    async def build(self, ctx: ReplyContext) -> LayerOutput:
        persona = expand(self._persona, ctx.display_name, ctx.speaker)
        situation = (
            f"You are {ctx.display_name}. You are talking in {describe_place(ctx.place)}. "
            "Each user message starts with the speaker's name. Reply with your message only, without a name prefix."
        )
        budget = ctx.budget.character_tokens
        # The situation line is kept whole; the persona gives way when the budget is tight.
        text = truncate_to_budget(persona, budget, lambda kept: f"{kept}\n\n{situation}".strip())
        if not text:
            text = situation if count_tokens(situation) <= budget else ""
        dropped = () if text.startswith(persona) else ({"what": "persona", "reason": "budget (shortened)"},)
        return LayerOutput(self.name, text=text, cost=count_tokens(text), budget=budget, dropped=dropped)


class SummaryLayer:
    name = "summary"

    def __init__(self, projections: Projections) -> None:
        self._projections = projections

    def invalidation_key(self, ctx: ReplyContext) -> Hashable:
        return (ctx.place, ctx.recall_paused, ctx.versions.get("summaries"), ctx.budget.summary_tokens)

    async def build(self, ctx: ReplyContext) -> LayerOutput:
        budget = ctx.budget.summary_tokens
        if ctx.recall_paused:
            return LayerOutput(self.name, budget=budget, note="recall paused")
        summary = await self._projections.summary(ctx.place)
        if summary is None or not summary.text.strip():
            return LayerOutput(self.name, budget=budget)
        text = truncate_to_budget(
            escape(summary.text.strip()), budget, lambda body: fence("Conversation so far", [body])
        )
        items = ({"summary_of": ctx.place, "up_to_turn": summary.last_turn_id},) if text else ()
        dropped = () if text else ({"what": "summary", "reason": "budget"},)
        return LayerOutput(self.name, text=text, cost=count_tokens(text), budget=budget, items=items, dropped=dropped)


class ReflectionsLayer:
    name = "reflections"

    def __init__(self, projections: Projections) -> None:
        self._projections = projections

    def invalidation_key(self, ctx: ReplyContext) -> Hashable:
        return (
            ctx.place,
            ctx.recall_paused,
            ctx.versions.get("reflections"),
            ctx.versions.get("facts"),  # a retired cited fact flips the stale flag
            ctx.budget.reflection_tokens,
            ctx.budget.max_reflections,
        )

    async def build(self, ctx: ReplyContext) -> LayerOutput:
        budget = ctx.budget.reflection_tokens
        if ctx.recall_paused:
            return LayerOutput(self.name, budget=budget, note="recall paused")
        rows = await self._projections.reflections([ctx.place], ctx.budget.max_reflections * 2)
        lines = []
        for r in rows:
            crumbs = ", ".join([*(f"T#{t}" for t in r.cited_turn_ids), *(f"F#{f}" for f in r.cited_fact_ids)])
            lines.append(f"- {'(stale) ' if r.stale else ''}{escape(r.text)} [{crumbs}]")
        packed = pack(
            lines, budget, lambda kept: fence("Reflections", list(kept)), max_items=ctx.budget.max_reflections
        )
        items = tuple({"reflection_id": rows[i].id, "stale": rows[i].stale} for i in packed.included)
        dropped = tuple({"reflection_id": rows[i].id, "reason": "budget"} for i in packed.dropped)
        return LayerOutput(self.name, text=packed.text, cost=packed.cost, budget=budget, items=items, dropped=dropped)


class DossiersLayer:
    name = "dossiers"

    def __init__(self, projections: Projections) -> None:
        self._projections = projections

    def invalidation_key(self, ctx: ReplyContext) -> Hashable:
        return (
            ctx.place,
            ctx.recall_paused,
            ctx.participants,
            ctx.versions.get("people_dossiers"),
            ctx.budget.dossier_tokens,
        )

    async def build(self, ctx: ReplyContext) -> LayerOutput:
        budget = ctx.budget.dossier_tokens
        if ctx.recall_paused:
            return LayerOutput(self.name, budget=budget, note="recall paused")
        # Only dossiers written from facts visible here: a DM's dossier never shows in a guild.
        rows = await self._projections.dossiers(ctx.participants, visible_scopes(ctx.place))
        names = {t.author_key: t.author_name for t in ctx.recent}
        lines = [f"- {escape(names.get(d.canonical_key, d.canonical_key))}: {escape(d.text)}" for d in rows]
        packed = pack(lines, budget, lambda kept: fence("People here", list(kept)))
        items = tuple({"person": rows[i].canonical_key, "scope": rows[i].scope} for i in packed.included)
        dropped = tuple({"person": rows[i].canonical_key, "reason": "budget"} for i in packed.dropped)
        return LayerOutput(self.name, text=packed.text, cost=packed.cost, budget=budget, items=items, dropped=dropped)


@dataclass
class MemoryLayer:
    """Retrieved memory: facts fused from BM25, recency, importance and embeddings, plus older
    messages of this channel outside the recent window."""

    retriever: Retriever
    name: str = field(default="memory", init=False)

    def invalidation_key(self, ctx: ReplyContext) -> Hashable:
        oldest = ctx.recent[0].id if ctx.recent else 0
        return (
            ctx.place,
            ctx.query,
            oldest,
            ctx.recall_paused,
            ctx.versions.get("facts"),
            ctx.versions.get("fact_embeddings"),
            ctx.budget.memory_tokens,
        )

    async def build(self, ctx: ReplyContext) -> LayerOutput:
        budget = ctx.budget.memory_tokens
        if ctx.recall_paused:
            return LayerOutput(self.name, budget=budget, note="recall paused")
        query = ctx.query
        before = ctx.recent[0].id if ctx.recent else 2**62
        facts, turns = await asyncio.gather(
            self.retriever.facts(query, ctx.place),
            self.retriever.turns(query, ctx.place, before, window=len(ctx.recent)),
        )
        lines = [f"- [F#{s.fact.id}] {escape(s.fact.content)}" for s in facts]
        lines += [f"- [T#{s.turn.id}] {escape(s.turn.author_name)} said: {escape(s.turn.content)}" for s in turns]
        packed = pack(lines, budget, lambda kept: fence("What you remember", list(kept)))
        kept = set(packed.included)
        items: list[dict[str, Any]] = []
        dropped: list[dict[str, Any]] = []
        for i, s in enumerate(facts):
            # Ids, never text: a stored explanation must not keep what the owner later forgets.
            record = {"fact_id": s.fact.id, "score": s.score, "signals": s.signals}
            (items if i in kept else dropped).append(record if i in kept else {**record, "reason": "budget"})
        for j, t in enumerate(turns):
            i = len(facts) + j
            record = {"turn_id": t.turn.id, "score": t.score, "signals": t.signals}
            (items if i in kept else dropped).append(record if i in kept else {**record, "reason": "budget"})
        return LayerOutput(
            self.name, text=packed.text, cost=packed.cost, budget=budget, items=tuple(items), dropped=tuple(dropped)
        )


class HistoryLayer:
    name = "history"

    def invalidation_key(self, ctx: ReplyContext) -> Hashable:
        return (ctx.place, tuple((t.id, t.revision) for t in ctx.recent), ctx.budget.history_tokens)

    async def build(self, ctx: ReplyContext) -> LayerOutput:
        budget = ctx.budget.history_tokens
        rendered = [_message(t) for t in ctx.recent]
        costs = [count_tokens(m["content"]) + MESSAGE_OVERHEAD for m in rendered]
        kept: list[int] = []
        spent = 0
        for i in range(len(rendered) - 1, -1, -1):  # newest first
            if spent + costs[i] > budget:
                break
            spent += costs[i]
            kept.append(i)
        if not kept and rendered:
            # The message being answered is too long for the budget on its own: send its beginning
            # rather than no user message at all.
            newest = len(rendered) - 1
            head = f"{ctx.recent[newest].author_name}: " if ctx.recent[newest].author_key != SELF_KEY else ""
            body = ctx.recent[newest].content
            text = truncate_to_budget(body, budget - MESSAGE_OVERHEAD, lambda cut: head + cut)
            if text:
                rendered[newest] = {"role": rendered[newest]["role"], "content": text}
                spent = count_tokens(text) + MESSAGE_OVERHEAD
                kept.append(newest)
        kept.reverse()
        first = kept[0] if kept else len(rendered)
        dropped = tuple({"turn_id": ctx.recent[i].id, "reason": "budget"} for i in range(first))
        items = tuple({"turn_id": ctx.recent[i].id} for i in kept)
        return LayerOutput(
            self.name,
            messages=tuple(rendered[i] for i in kept),
            cost=spent,
            budget=budget,
            items=items,
            dropped=dropped,
        )


def _message(turn: Turn) -> ChatMessage:
    if turn.author_key == SELF_KEY:
        return {"role": "assistant", "content": turn.content}
    return {"role": "user", "content": f"{turn.author_name}: {turn.content}"}


def check_layer_names(names: Sequence[str]) -> str | None:
    """A problem with a prompt_layers list, or None."""
    unknown = [n for n in names if n not in DEFAULT_ORDER]
    if unknown:
        return f"unknown layer {unknown[0]!r} (known layers: {', '.join(DEFAULT_ORDER)})"
    if len(set(names)) != len(names):
        return "a layer is listed twice"
    return None
