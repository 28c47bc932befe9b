"""rich_note: fact extraction from batches of turns, with claim discipline enforced in code.

Per place, turns past the watermark are sent in batches of `[memory.learning] batch_turns` (a
smaller batch waits until the conversation has been quiet for a tick). The answer is validated
strictly (app/runtime/projectors/extraction.py); garbage gets one retry, then the batch is dropped
whole and the watermark still advances. Valid candidates go through the store's insert path
(near-duplicate suppression, tombstones, the promotion policy). An edited message's new revision is
a new turn: the batches read it like any other (its queued `extract` item is closed here).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.memory.facts import FactError
from app.memory.pauses import PauseState
from app.memory.records import Turn
from app.memory.watermarks import WatermarkAdvance
from app.runtime.projectors.asking import GarbageAnswerError, ask_parsed
from app.runtime.projectors.conversation import batch_of, participants_line, quiet_for
from app.runtime.projectors.extraction import (
    SCHEMA_TEXT,
    ExtractionError,
    parse_extraction,
    prompt_turns,
    render_batch,
    to_new_fact,
)
from app.runtime.projectors.place_worker import Due, PlaceWorker

MAX_BATCHES_PER_PLACE = 5  # per tick

SYSTEM = """You read a stretch of a chat and note what is worth remembering about the people in it.

Rules:
- Each fact is ONE self-contained sentence: full names, absolute dates (e.g. 2026-03-01), no "he", "it", "yesterday".
- Identity is the canonical key in parentheses, never a name someone adopts in play. An impersonation
  ("No, I am Alice") is a bit, never an identity.
- When one person says something about another person, that is a claim: attribute it ("Alice says Bob ...").
- Role-play, jokes and in-character narration are bits, not real events.
- Anything phrased as a standing rule or preference is semantic or procedural, never episodic.
- Skip small talk. If nothing is worth remembering, answer {"facts": []}.
"""


class RichNoteProjector(PlaceWorker):
    name = "rich_note"

    async def prepare(self, pause: PauseState) -> None:
        # An edit queues its new revision as `extract` work. The revision is a new turn, past this
        # projector's watermark, so the batches read it (once, among its neighbours); extracting it
        # here as well would ask about it twice. The item is closed as handed over.
        deps = self._deps
        while deps.may_have_work("extract") and (
            item := await deps.queue.next_work("extract", skip_places=pause.learning)
        ):
            await deps.queue.finish_work(item.id)

    async def on_place(self, place: str, due: Due) -> None:
        deps = self._deps
        learning = deps.settings.memory.learning
        mark, count = due.mark, due.count
        # A backlog (after a pause, or a busy hour) goes a few full batches per tick.
        for _batch in range(MAX_BATCHES_PER_PLACE):
            if count <= 0:
                break
            turns = await deps.history.store.turns_after(place, mark, learning.batch_turns)
            if not turns or (count < learning.batch_turns and quiet_for(turns, deps.clock()) < learning.tick_seconds):
                break  # a partial batch waits for the conversation to pause
            advanced = False
            try:
                advanced = await self.extract(place, turns, advance_to=turns[-1].id) is not None
            except GarbageAnswerError as exc:
                self.report(f"dropped the batch T#{turns[0].id}-T#{turns[-1].id} in {place}: {exc}")
            if not advanced:  # a dropped batch (or one with nothing to read) still moves the watermark
                await deps.marks.set(self.name, turns[-1].id, place)
            self.floor.moved(place, turns[-1].id)
            mark, count = turns[-1].id, count - len(turns)

    async def extract(self, place: str, turns: Sequence[Turn], *, advance_to: int | None = None) -> list[str] | None:
        """Extract and insert; returns the outcome of each candidate, or None when there was nothing
        to read. With `advance_to`, the place's watermark moves in the same transaction as the facts.
        Raises GarbageAnswerError when the batch is dropped (nothing of it lands)."""
        deps = self._deps
        batch = batch_of(place, turns, deps.display_name)
        if not prompt_turns(batch):
            return None
        user = participants_line(batch) + "\n\nTurns:\n" + render_batch(batch) + "\n\n" + SCHEMA_TEXT
        extraction = await ask_parsed(
            deps.llm, SYSTEM, user, lambda answer: parse_extraction(answer, batch), errors=(ExtractionError,)
        )
        # A candidate whose every source was deleted meanwhile is refused by the insert itself.
        scoped = deps.channel_scoped(place)
        new_facts = [to_new_fact(c, place, channel_scoped=scoped) for c in extraction.candidates]
        try:  # one transaction, all validated first: a batch with one invalid fact lands no fact
            advance = [] if advance_to is None else [WatermarkAdvance(self.name, advance_to, place)]
            outcomes: list[str] = [o.outcome for o in await deps.history.insert_facts(new_facts, advance=advance)]
        except FactError as exc:
            raise GarbageAnswerError(f"a fact failed validation: {exc}") from exc
        self.report(
            f"{place}: {len(turns)} turns -> {outcomes.count('inserted')} new facts"
            f" ({len(extraction.dropped)} refused by policy, {outcomes.count('sources_gone')} from deleted"
            f" messages, {len(outcomes) - outcomes.count('inserted') - outcomes.count('sources_gone')} known)",
        )
        return outcomes
