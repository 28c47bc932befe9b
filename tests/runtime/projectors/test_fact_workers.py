"""The workers that read facts: fact_supersede (retires what a new fact replaces, only among what it
showed), people_dossier (one dossier per person and scope, rebuilt when dropped) and fact_embedding
(vectors keyed by fact and model, gone with a forgotten fact)."""

from __future__ import annotations

import pytest

from app.memory.facts import NewFact
from tests.fakes.llm_server import FakeLLM
from tests.runtime.projectors.conftest import Familiars
from tests.runtime.projectors.helpers import (
    ALICE,
    BOB,
    DM,
    GUILD_SCOPE,
    PLACE,
    add_turns,
    insert,
    learning,
    prompt,
    remembered,
    requests_of,
    turn,
)

pytestmark = pytest.mark.asyncio


# -- fact_supersede ------------------------------------------------------------------------------
async def test_a_fact_the_model_names_is_superseded_and_the_dossiers_dropped(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(learning("fact_supersede"))
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    await insert(familiar, remembered("Alice is saving for a boat.", place=DM))  # another scope: not shown
    await familiar.learn_now()
    assert requests_of(fake_llm, "fact_supersede") == []  # nothing earlier to replace yet
    await familiar.projections.save_dossier(ALICE, GUILD_SCOPE, "Alice works at the bakery.", bakery.id)
    await familiar.projections.save_dossier(ALICE, DM, "Alice is saving for a boat.", bakery.id + 1)
    await familiar.projections.save_dossier(BOB, GUILD_SCOPE, "Bob drinks tea.", bakery.id)

    library = await insert(familiar, remembered("Alice works at the library now."))
    fake_llm.script(f'{{"retire": [{bakery.id}]}}')
    await familiar.learn_now()

    [request] = requests_of(fake_llm, "fact_supersede")
    assert prompt(request) == (
        f"New fact: [F#{library.id}] Alice works at the library now.\n\n"
        f"Earlier facts:\n[F#{bakery.id}] Alice works at the bakery."
    )
    chain = await familiar.history.facts.chain(bakery.id)
    assert [f.id for f in chain.facts] == [bakery.id, library.id]
    assert chain.head_id == library.id
    retired = await familiar.history.facts.get(bakery.id)
    assert retired is not None
    assert retired.superseded_by == library.id
    assert retired.superseded_at is not None
    assert [f.id for f in await familiar.history.facts.list_facts(subject=ALICE)] == [library.id, bakery.id + 1]
    # Alice's dossiers (every scope) are dropped to be rebuilt clean; Bob's stays.
    assert await familiar.projections.dossiers([ALICE, BOB], [GUILD_SCOPE, DM]) == [
        await familiar.projections.dossier(BOB, GUILD_SCOPE)
    ]
    assert await familiar.projector_deps.marks.get("fact_supersede") > 0

    await familiar.learn_now()
    assert len(requests_of(fake_llm, "fact_supersede")) == 1  # each new fact is considered once


async def test_only_facts_on_the_same_attribute_are_shown_and_the_queue_offers_the_same(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    """carol learning the cello never replaces carol being vegetarian (issue 18 item 4): such a fact is
    neither shown to the model nor offered as "could replace" in the owner's queue."""
    familiar = await familiars.open(learning("fact_supersede"))
    vegetarian = await insert(familiar, remembered("Alice is vegetarian."))
    leeds = await insert(familiar, remembered("Alice lives in Leeds."))
    await familiar.learn_now()
    pending = await familiar.history.insert_fact(
        NewFact("Alice moved to York.", "semantic", 5, 0.9, (ALICE,), PLACE, speaker=ALICE)
    )
    assert pending.fact is not None
    queue = await familiar.memory.pending()
    [item] = [i for i in queue.items if i.fact.id == pending.fact.id]
    assert [(r.fact.id, r.relation, r.reason) for r in item.related] == [
        (leeds.id, "may_supersede", "both about where they live")
    ]

    await familiar.memory.accept(pending.fact.id, pending.fact.revision)
    fake_llm.script(f'{{"retire": [{leeds.id}]}}')
    await familiar.learn_now()
    [request] = requests_of(fake_llm, "fact_supersede")
    assert prompt(request) == (
        f"New fact: [F#{pending.fact.id}] Alice moved to York.\n\nEarlier facts:\n[F#{leeds.id}] Alice lives in Leeds."
    )
    assert (await familiar.history.facts.chain(leeds.id)).head_id == pending.fact.id
    assert (await familiar.history.facts.chain(vegetarian.id)).head_id == vegetarian.id

    await insert(familiar, remembered("Alice is learning the cello."))
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "fact_supersede")) == 1  # nothing it could replace: nothing asked


async def test_an_id_that_was_not_shown_retires_nothing(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(learning("fact_supersede"))
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    tea = await insert(familiar, remembered("Bob drinks tea.", about=BOB))
    await familiar.learn_now()
    library = await insert(familiar, remembered("Alice works at the library now."))
    fake_llm.script(f'{{"retire": [{bakery.id}, {tea.id}]}}', f'{{"retire": [{library.id}]}}')
    reports = await familiar.learn_now()

    _first, retry = requests_of(fake_llm, "fact_supersede")
    assert f"fact {tea.id} was not one of the earlier facts shown" in retry.messages[3]["content"]
    assert "left as is" in reports["fact_supersede"]
    current = await familiar.history.facts.get_many([bakery.id, tea.id, library.id])
    assert all(f.is_head for f in current.values())
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "fact_supersede")) == 2


async def test_a_supersede_is_followed_by_a_clean_dossier(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(learning("fact_supersede", "people_dossier"))
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    await familiar.learn_now()
    before = await familiar.projections.dossier(ALICE, GUILD_SCOPE)
    assert before is not None
    assert "bakery" in before.text

    library = await insert(familiar, remembered("Alice works at the library now."))
    fake_llm.script(f'{{"retire": [{bakery.id}]}}')
    await familiar.learn_now()
    after = await familiar.projections.dossier(ALICE, GUILD_SCOPE)
    assert after is not None
    assert after.last_fact_id == library.id
    assert "library" in after.text
    assert "bakery" not in after.text
    assert "bakery" not in prompt(requests_of(fake_llm, "people_dossier")[-1])


# -- people_dossier ------------------------------------------------------------------------------
async def test_a_dossier_per_person_and_scope_and_a_dm_stays_in_the_dm(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(learning("people_dossier"))
    await add_turns(familiar, turn("hi all"))  # makes Alice a known participant
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    boat = await insert(familiar, remembered("Alice is saving for a boat.", place=DM))
    tea = await insert(familiar, remembered("Bob drinks tea.", about=BOB))
    rye = NewFact("Alice likes rye bread.", "semantic", 4, 0.9, (ALICE,), "guild:500/501", speaker=ALICE)
    assert (await insert(familiar, rye)).status == "pending"  # waits for the owner: not in a dossier
    await familiar.learn_now()

    guild = await familiar.projections.dossier(ALICE, GUILD_SCOPE)
    private = await familiar.projections.dossier(ALICE, DM)
    bob = await familiar.projections.dossier(BOB, GUILD_SCOPE)
    assert guild is not None
    assert private is not None
    assert bob is not None
    assert "bakery" in guild.text
    assert "boat" not in guild.text
    assert "rye" not in guild.text
    assert "boat" in private.text
    assert "bakery" not in private.text
    assert "tea" in bob.text
    assert "bakery" not in bob.text
    assert (guild.last_fact_id, private.last_fact_id, bob.last_fact_id) == (bakery.id, boat.id, tea.id)
    assert "Person: alice (discord:7001)" in guild.text  # the display name from the participants
    for request in requests_of(fake_llm, "people_dossier"):
        assert not ("boat" in prompt(request) and "bakery" in prompt(request))
    asked = len(requests_of(fake_llm, "people_dossier"))
    assert asked == 3

    await familiar.learn_now()
    assert len(requests_of(fake_llm, "people_dossier")) == asked  # nothing new: nothing asked


async def test_dropped_dossiers_are_rebuilt_next_tick(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(learning("people_dossier"))
    await insert(familiar, remembered("Alice works at the bakery."))
    await insert(familiar, remembered("Alice is saving for a boat.", place=DM))
    await insert(familiar, remembered("Bob drinks tea.", about=BOB))
    await familiar.learn_now()
    built = await familiar.projections.dossiers([ALICE, BOB], [GUILD_SCOPE, DM])
    assert len(built) == 3

    await familiar.history.store.write([("DELETE FROM people_dossiers", ())])
    await familiar.learn_now()
    rebuilt = await familiar.projections.dossiers([ALICE, BOB], [GUILD_SCOPE, DM])
    assert [(d.canonical_key, d.scope, d.text) for d in rebuilt] == [(d.canonical_key, d.scope, d.text) for d in built]
    assert len(requests_of(fake_llm, "people_dossier")) == 6


async def test_a_forgotten_fact_leaves_the_dossier(familiars: Familiars, fake_llm: FakeLLM) -> None:
    familiar = await familiars.open(learning("people_dossier"))
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    await insert(familiar, remembered("Alice sings in a choir."))
    await familiar.learn_now()
    await familiar.history.forget_fact(bakery.id)
    await familiar.learn_now()
    dossier = await familiar.projections.dossier(ALICE, GUILD_SCOPE)
    assert dossier is not None
    assert "choir" in dossier.text
    assert "bakery" not in dossier.text


async def test_an_archived_fact_leaves_the_dossier_and_a_quiet_tick_asks_nothing(
    familiars: Familiars, fake_llm: FakeLLM
) -> None:
    familiar = await familiars.open(learning("people_dossier"))
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    await insert(familiar, remembered("Alice sings in a choir."))
    await familiar.learn_now()
    asked = len(requests_of(fake_llm, "people_dossier"))
    await familiar.learn_now()
    assert len(requests_of(fake_llm, "people_dossier")) == asked  # nothing changed: no model call

    await familiar.history.decisions.decide(bakery.id, bakery.revision, "archive")
    await familiar.learn_now()
    dossier = await familiar.projections.dossier(ALICE, GUILD_SCOPE)
    assert dossier is not None
    assert "choir" in dossier.text
    assert "bakery" not in dossier.text
    assert len(requests_of(fake_llm, "people_dossier")) == asked + 1


# -- fact_embedding ------------------------------------------------------------------------------
EMBEDDING = '[providers.embedding]\nbackend = "hash"\n\n'


async def test_vectors_are_keyed_by_fact_and_model_and_forgetting_removes_them(familiars: Familiars) -> None:
    familiar = await familiars.open(EMBEDDING + learning("fact_embedding"))
    assert familiar.embedder is not None
    model = familiar.embedder.name
    assert model.startswith("hash:")
    bakery = await insert(familiar, remembered("Alice works at the bakery."))
    rye = NewFact("Alice likes rye bread.", "semantic", 4, 0.9, (ALICE,), "guild:500/501", speaker=ALICE)
    pending = await insert(familiar, rye)
    reports = await familiar.learn_now()
    assert reports["fact_embedding"] == f"embedded 2 facts with {model}"

    rows = await familiar.history.store.read_all("SELECT fact_id, model, dim FROM fact_embeddings ORDER BY fact_id")
    assert rows == [(bakery.id, model, familiar.embedder.dim), (pending.id, model, familiar.embedder.dim)]
    vectors = await familiar.embeddings.vectors([bakery.id, pending.id], model)
    assert vectors[bakery.id] == pytest.approx(familiar.embedder.embed(["Alice works at the bakery."])[0], abs=1e-6)

    receipt = await familiar.history.forget_fact(bakery.id)
    assert ("fact_embeddings", 1) in receipt.stores
    await familiar.learn_now()  # not embedded again
    rows = await familiar.history.store.read_all("SELECT fact_id FROM fact_embeddings")
    assert rows == [(pending.id,)]

    await familiar.history.store.write([("DELETE FROM fact_embeddings", ())])
    await familiar.learn_now()  # a dropped side-index is rebuilt from the facts
    assert set(await familiar.embeddings.vectors([bakery.id, pending.id], model)) == {pending.id}


async def test_without_a_backend_the_embedding_worker_idles(familiars: Familiars) -> None:
    familiar = await familiars.open(learning("fact_embedding"))
    await insert(familiar, remembered("Alice works at the bakery."))
    reports = await familiar.learn_now()
    assert reports["fact_embedding"].startswith("idle")
    assert await familiar.history.store.read_all("SELECT * FROM fact_embeddings") == []
