"""`facade.memory`, people: who the familiar knows, and each person's dossier per scope with the
current facts behind it."""

from __future__ import annotations

from app.runtime.api.memory_base import MemoryBase
from app.runtime.api.view_builder import fact_view
from app.runtime.api.views import DossierView, PersonDossiers, PersonView

MAX_FACTS_PER_PERSON = 2000


class PeopleMixin(MemoryBase):
    async def people(self, limit: int = 1000) -> list[PersonView]:
        """Everyone who has spoken, most recently seen first (the familiar itself last: it speaks after everyone
        it answers), with how many current facts are about them."""
        async with self._explained():
            found = await self._deps.catalog.people(limit)
        names = await self._views.names.table(
            people=[p.participant.canonical_key for p in found], places=[s for p in found for s in p.dossier_scopes]
        )
        return [
            PersonView(
                person=names.person(p.participant.canonical_key),
                is_self=p.participant.is_self,
                first_seen=p.participant.first_seen,
                last_seen=p.participant.last_seen,
                current_facts=p.current_facts,
                dossier_scopes=tuple(names.place(s) for s in p.dossier_scopes),
            )
            for p in sorted(found, key=lambda p: p.participant.is_self)  # stable: the rest keep their order
        ]

    async def dossiers(self, person_key: str) -> PersonDossiers:
        """A person's dossier in every scope it was written for, and in every scope holding current facts
        about them, with those facts (a scope without a dossier yet has `text` None)."""
        async with self._explained():
            written = await self._deps.catalog.dossiers_of(person_key)
            facts = await self._history.facts.list_facts(
                status="active", subject=person_key, limit=MAX_FACTS_PER_PERSON
            )
        scopes = sorted({scope for scope, _text, _at in written} | {f.scope for f in facts})
        people = {person_key} | {s for f in facts for s in f.subjects} | {f.speaker for f in facts if f.speaker}
        names = await self._views.names.table(people=people, places=scopes)
        texts = {scope: (text, at) for scope, text, at in written}
        return PersonDossiers(
            person=names.person(person_key),
            dossiers=tuple(
                DossierView(
                    scope=names.place(scope),
                    text=texts[scope][0] if scope in texts else None,
                    updated_at=texts[scope][1] if scope in texts else None,
                    facts=tuple(fact_view(f, names) for f in facts if f.scope == scope),
                )
                for scope in scopes
            ),
        )
