"""Store records -> view records, names resolved in one batch per call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from app.memory.facts import Fact
from app.memory.records import Turn
from app.memory.store import Store
from app.runtime.api.views import FactStatus, FactType, FactView, PersonRef, SourceMessage
from app.runtime.names import Names, NameTable


def fact_view(fact: Fact, names: NameTable) -> FactView:
    return FactView(
        id=fact.id,
        content=fact.content,
        type=cast(FactType, fact.type),
        importance=fact.importance,
        confidence=fact.confidence,
        subjects=tuple(names.person(s) for s in fact.subjects),
        speaker=names.person(fact.speaker) if fact.speaker else None,
        scope=names.place(fact.scope),
        status=cast(FactStatus, fact.status),
        revision=fact.revision,
        origin=fact.origin,
        created_at=fact.created_at,
        superseded_at=fact.superseded_at,
        superseded_by=fact.superseded_by,
        valid_from=fact.valid_from,
        valid_to=fact.valid_to,
        snoozed_until=fact.snoozed_until,
        source_turn_ids=fact.source_turn_ids,
    )


def source_message(turn: Turn, names: NameTable) -> SourceMessage:
    return SourceMessage(
        turn_id=turn.id,
        author=PersonRef(turn.author_key, turn.author_name or names.person(turn.author_key).name),
        place=names.place(turn.place),
        content=turn.content,
        created_at=turn.created_at,
        redacted=turn.redacted,
    )


class ViewBuilder:
    def __init__(self, store: Store, names: Names) -> None:
        self._store = store
        self.names = names

    async def table_for(self, facts: Sequence[Fact] = (), turns: Sequence[Turn] = ()) -> NameTable:
        people = {s for f in facts for s in f.subjects} | {f.speaker for f in facts if f.speaker}
        people |= {t.author_key for t in turns}
        places = {f.scope for f in facts} | {t.place for t in turns}
        return await self.names.table(people=people, places=places)

    async def facts(self, facts: Sequence[Fact]) -> list[FactView]:
        table = await self.table_for(facts)
        return [fact_view(f, table) for f in facts]

    async def fact(self, fact: Fact) -> FactView:
        (view,) = await self.facts([fact])
        return view

    async def turns(self, turn_ids: Sequence[int]) -> list[Turn]:
        return await self._store.turns_by_ids(list(turn_ids))
