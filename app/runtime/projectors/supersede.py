"""fact_supersede: retires what a newly active fact replaces, and clears the subjects' dossiers.

For each fact that became active past the watermark (the status log), the current facts of the
same scope sharing a subject are shown to the background model, which names the ones the new fact
replaces. Only those ids can be retired (the answer is checked); the retired facts' and the new
fact's subjects lose their dossiers, so the dossier worker rebuilds them clean. While learning is
paused in a place, a fact said there is neither considered nor shown beside another; a fact met
then is noted, and considered again, beside everything, once the pause lifts.
"""

from __future__ import annotations

from typing import TypeGuard

from app.memory.facts import Fact
from app.memory.pauses import PauseState
from app.runtime.projectors.asking import GarbageAnswerError, ask_parsed, one_key_object
from app.runtime.projectors.base import Deferrals, ProjectorBase, ProjectorDeps
from app.runtime.textdiff import relation

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

    def __init__(self, deps: ProjectorDeps) -> None:
        super().__init__(deps)
        self._deferrals = Deferrals(self.name, deps)
        self._asked = 0  # facts shown to the model this tick

    async def tick(self, pause: PauseState) -> None:
        deps = self._deps
        mark = await deps.marks.get(self.name)
        # Facts passed over while learning was paused, looked at again now the switches have changed
        # (first, in the order they became active: before the new ones).
        retry = sorted((await self._deferrals.due(pause)).items(), key=lambda pair: pair[1])
        rows = await deps.facts.activations_after(mark, MAX_PER_TICK)
        facts = await deps.history.facts.get_many([int(item) for item, _p in retry] + [row.fact_id for row in rows])
        start = mark
        defer: dict[str, int] = {}
        done: list[str] = []
        self._asked = 0
        looked = True
        try:
            for item, _position in retry:
                if self._asked >= MAX_PER_TICK:  # the rest next tick
                    looked = False
                    break
                fact = facts.get(int(item))
                if not _standing(fact) or not await self._consider(fact, pause, whole=True):
                    done.append(item)
            for row in rows:
                fact = facts.get(row.fact_id)
                if _standing(fact) and await self._consider(fact, pause, whole=False):
                    defer[str(row.fact_id)] = row.position  # considered (again) once learning resumes there
                mark = row.position
        finally:
            # Once per tick; after a crash the facts since are considered again, and retiring a fact
            # already retired is skipped, never re-linked.
            await self._deferrals.settle(watermark=mark if mark > start else None, defer=defer, done=done)
        if looked:
            self._deferrals.looked(pause)

    async def _consider(self, fact: Fact, pause: PauseState, *, whole: bool) -> bool:
        """Show the model the new fact and the current facts it may replace, and retire what it names.

        Returns whether the fact is held by a pause: it, or an earlier fact it would be shown beside,
        was said where learning is paused. A held fact is not shown; held earlier facts are left
        out, and with `whole` (a fact passed over before) nothing is asked until none is held."""
        deps = self._deps
        if pause.paused("learning", fact.scope):
            return True
        # Only the earlier facts it could replace (the same attribute, or nearly the same words): what the
        # pending queue showed the owner as "could replace" is exactly what may be retired here.
        priors = [
            p for p in await deps.history.facts.related_current(fact, limit=8) if relation(p.content, fact.content)
        ]
        held = await deps.held_by_pause(pause, {fact.id: fact.scope, **{p.id: p.scope for p in priors}})
        shown = [p for p in priors if p.id not in held]
        if fact.id in held or (held and whole) or not shown:
            return bool(held)
        self._asked += 1
        user = f"New fact: [F#{fact.id}] {fact.content}\n\nEarlier facts:\n" + "\n".join(
            f"[F#{p.id}] {p.content}" for p in shown
        )
        try:
            retire = await ask_parsed(
                deps.llm, SYSTEM, user, lambda a: parse_retire(a, {p.id for p in shown}), errors=(SupersedeError,)
            )
        except GarbageAnswerError as exc:
            self.report(f"F#{fact.id}: left as is ({exc})")
            return bool(held)
        retired = [old for old in retire if await deps.history.corrections.supersede(old, fact.id) == "superseded"]
        if retired:
            subjects = {s for p in shown if p.id in retired for s in p.subjects} | set(fact.subjects)
            await deps.projections.drop_dossiers(sorted(subjects))
            self.report(f"F#{fact.id} retired {', '.join(f'F#{i}' for i in retired)}")
        return bool(held)


def _standing(fact: Fact | None) -> TypeGuard[Fact]:
    """Still what a newly active fact was: active, and not replaced since."""
    return fact is not None and fact.status == "active" and fact.is_head
