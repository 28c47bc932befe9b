"""fact_supersede: retires what a newly active fact replaces, and clears the subjects' dossiers.

For each fact that became active past the watermark (the status log), the current facts of the
same scope sharing a subject are shown to the background model, which names the ones the new fact
replaces. Only those ids can be retired (the answer is checked); the retired facts' and the new
fact's subjects lose their dossiers, so the dossier worker rebuilds them clean.
"""

from __future__ import annotations

from app.memory.facts import Fact
from app.runtime.projectors.asking import GarbageAnswerError, ask_parsed, one_key_object
from app.runtime.projectors.base import ProjectorBase

SYSTEM = (
    "You keep a list of facts current. Given one new fact and earlier facts about the same people,"
    " name the earlier facts the new one replaces: the same attribute with a newer value, or a"
    " correction. Facts that merely differ are not replaced. Answer with JSON only:"
    ' {"retire": [ids]}, or {"retire": []}.'
)
MAX_PER_TICK = 20


class SupersedeError(ValueError):
    pass


def parse_retire(raw: str, allowed: set[int]) -> list[int]:
    ids = one_key_object(raw, "retire", SupersedeError)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise SupersedeError("retire must list fact ids")
    stray = [i for i in ids if i not in allowed]
    if stray:
        raise SupersedeError(f"fact {stray[0]} was not one of the earlier facts shown")
    return list(dict.fromkeys(ids))


class FactSupersedeProjector(ProjectorBase):
    name = "fact_supersede"

    async def run(self) -> None:
        deps = self._deps
        pause = await self._learning()
        if pause is None:
            return
        mark = await deps.projections.watermark(self.name)
        rows = await deps.history.store.read_all(
            "SELECT l.rowid, l.fact_id FROM fact_status_log l WHERE l.rowid > ? AND l.status = 'active'"
            " ORDER BY l.rowid LIMIT ?",
            (mark, MAX_PER_TICK),
        )
        facts = await deps.history.facts.get_many([int(fact_id) for _rowid, fact_id in rows])
        start = mark
        try:
            for rowid, fact_id in rows:
                fact = facts.get(int(fact_id))
                if fact is not None and fact.status == "active" and fact.is_head:
                    if pause.paused("learning", fact.scope):
                        break  # resume here when learning does
                    await self._consider(fact)
                mark = int(rowid)
        finally:
            # Once per tick; after a crash the facts since are considered again, and retiring a fact
            # already retired is skipped, never re-linked.
            if mark > start:
                await deps.projections.set_watermark(self.name, mark)

    async def _consider(self, fact: Fact) -> list[int]:
        deps = self._deps
        priors = await deps.history.facts.related_current(fact, limit=8)
        if not priors:
            return []
        user = f"New fact: [F#{fact.id}] {fact.content}\n\nEarlier facts:\n" + "\n".join(
            f"[F#{p.id}] {p.content}" for p in priors
        )
        try:
            retire = await ask_parsed(
                deps.llm, SYSTEM, user, lambda a: parse_retire(a, {p.id for p in priors}), errors=(SupersedeError,)
            )
        except GarbageAnswerError as exc:
            deps.report(self.name, f"F#{fact.id}: left as is ({exc})")
            return []
        retired = [old for old in retire if await deps.history.corrections.supersede(old, fact.id) == "superseded"]
        if retired:
            subjects = {s for p in priors if p.id in retired for s in p.subjects} | set(fact.subjects)
            await deps.projections.drop_dossiers(sorted(subjects))
            deps.report(self.name, f"F#{fact.id} retired {', '.join(f'F#{i}' for i in retired)}")
        return retired
