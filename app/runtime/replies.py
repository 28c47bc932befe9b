"""How the familiar answers at a place: what a reply is built from (the channel's recent window, its
budget tier, the pause switches, the store's change counters), the prompt the context layers
assemble from it, the reply model's answer, and the explanation kept for it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from app.config.settings import BudgetTier, Settings
from app.memory.derived import change_counters
from app.memory.explanations import Explanations
from app.memory.history import History
from app.memory.pauses import PauseSwitches
from app.memory.records import Turn
from app.runtime.context.assembler import Assembly
from app.runtime.context.layers import DEFAULT_ORDER, ReplyContext
from app.runtime.wiring import Parts


def channel_key(place: str) -> str:
    """The `[channels.<key>]` table that applies to a place."""
    if place.startswith("guild:") and "/" in place:
        return place.rsplit("/", 1)[1]
    if place.startswith("dm:"):
        return "dm"
    return place


class Replies:
    def __init__(
        self, history: History, pauses: PauseSwitches, explanations: Explanations, parts: Callable[[], Parts]
    ) -> None:
        """`parts` gives the settings-dependent parts in force now (they change with the settings)."""
        self._history = history
        self._pauses = pauses
        self._explanations = explanations
        self._parts = parts

    async def context_for(self, place: str, answering: Turn | None = None) -> ReplyContext:
        """What a reply at `place` is built from; for `answering`, the history window ends at that
        message, so it is the last thing said in the prompt whatever arrived after it."""
        return await self._context(self._parts(), place, answering)

    async def assemble(self, place: str, answering: Turn | None = None) -> Assembly:
        """The prompt a reply at `place` (to `answering`, else to the newest message) would get now,
        and its explanation (no LLM call)."""
        return await self._assemble(self._parts(), place, answering)

    async def answer(self, place: str, answering: Turn) -> tuple[str, int]:
        """The reply to `answering` and the id of its saved explanation (to link to the turns the
        reply becomes once sent)."""
        parts = self._parts()  # one set for the whole reply, even if the settings change meanwhile
        assembly = await self._assemble(parts, place, answering)
        text = await parts.reply_llm.complete(assembly.messages, place=place)  # waits for no other place
        explanation_id = await self._explanations.save(place, assembly.explanation, [])
        await parts.lorebook.commit(place, answering.id)  # the lore's timed effects, by the layer that chose them
        return text, explanation_id

    def budget_for(self, place: str) -> BudgetTier:
        """The budget tier in force at a place now (its channel's, else the familiar's)."""
        return _tier_for(self._parts().settings, place)[1]

    async def _assemble(self, parts: Parts, place: str, answering: Turn | None) -> Assembly:
        section = parts.settings.channels.get(channel_key(place))
        order = (section.prompt_layers if section else ()) or DEFAULT_ORDER
        return await parts.assembler.assemble(await self._context(parts, place, answering), order)

    async def _context(self, parts: Parts, place: str, answering: Turn | None) -> ReplyContext:
        settings = parts.settings
        tier, budget = _tier_for(settings, place)
        ending_at = answering.id if answering is not None else None
        recent, pause, versions = await asyncio.gather(
            self._history.recent_turns(place, settings.history.recent_turns, ending_at=ending_at),
            self._pauses.state(),
            change_counters(self._history.store),
        )
        return ReplyContext(
            place=place,
            display_name=settings.familiar.display_name,
            tier=tier,
            budget=budget,
            recent=tuple(recent),
            recall_paused=pause.paused("recall", place),
            versions=versions,
            now=datetime.now(UTC),
        )


def _tier_for(settings: Settings, place: str) -> tuple[str, BudgetTier]:
    """The budget tier in force at a place (its channel's, else the familiar's): its name and its budget."""
    section = settings.channels.get(channel_key(place))
    tier = (section.budget_tier if section else "") or settings.budget.tier
    budget: BudgetTier = getattr(settings.budget, tier)
    return tier, budget
