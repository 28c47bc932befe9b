"""Property: whatever facts were learned where, recall at a place returns exactly the active facts that
place may see, and never a DM's facts outside that DM or a guild's facts in another guild.

A sync test driving each example with `asyncio.run`, each in a fresh temporary History.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.memory.facts import NewFact
from app.memory.history import History
from app.memory.policy import FACT_TYPES, visible_scopes

WORD = "lantern"
VOCAB = ("amber", "birch", "cedar", "dune", "ember", "fjord")
LEARNED_AT = ("dm:1", "dm:2", "guild:10", "guild:10/11", "guild:10/12", "guild:20/21", "local", "familiar")
ASKED_AT = (
    "dm:1",
    "dm:2",
    "dm:3",
    "guild:10",
    "guild:10/11",
    "guild:10/12",
    "guild:10/13",
    "guild:20",
    "guild:20/21",
    "guild:30/31",
    "local",
)
SCENARIO_TIMEOUT = 30.0

fact_specs = st.tuples(
    st.sampled_from(LEARNED_AT),
    st.booleans(),  # channel_scoped
    st.sampled_from(FACT_TYPES),
    st.sampled_from(("remember", "extraction", "extraction")),
    st.floats(min_value=0.5, max_value=1.0),
    st.lists(st.sampled_from(VOCAB), max_size=3),
    st.booleans(),  # quarantined afterwards (an imported row of ambiguous scope)
)


def scope_of(place: str, channel_scoped: bool) -> str:
    """An oracle written apart from policy.fact_scope."""
    if place.startswith("guild:") and "/" in place and not channel_scoped:
        return place.split("/")[0]
    return place


def may_see(asked_at: str, scope: str) -> bool:
    if scope == "familiar" or scope == asked_at:
        return True
    return asked_at.startswith("guild:") and "/" in asked_at and scope == asked_at.split("/")[0]


def guild_of(place: str) -> str:
    return place.split("/")[0]


async def scenario(specs: list[tuple[str, bool, str, str, float, list[str], bool]], asked: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="facts-scope-") as folder:
        root = Path(folder)
        history = await History.open(root / "history.db", root / "fts", root / "backups")
        try:
            expected: dict[int, tuple[str, str]] = {}  # id -> (scope, status)
            for i, (place, channel_scoped, kind, origin, confidence, words, quarantined) in enumerate(specs):
                outcome = await history.insert_fact(
                    NewFact(
                        content=" ".join([WORD, f"item{i}", *words]),
                        type=kind,
                        importance=5,
                        confidence=confidence,
                        subjects=(f"discord:{i % 3 + 1}",),
                        place=place,
                        origin=origin,
                        channel_scoped=channel_scoped,
                    )
                )
                assert outcome.outcome == "inserted"
                assert outcome.fact is not None
                assert outcome.fact.scope == scope_of(place, channel_scoped)
                scope = outcome.fact.scope
                if quarantined:
                    await history.store.write(
                        [("UPDATE facts SET scope = 'quarantine' WHERE id = ?", (outcome.fact.id,))]
                    )
                    scope = "quarantine"
                expected[outcome.fact.id] = (scope, outcome.fact.status)
            await history.facts_index.flush(SCENARIO_TIMEOUT / 2)
            for where in asked:
                hits = await history.recall(WORD, where, limit=len(specs) + 5)
                seen = set()
                for fact, score in hits:
                    seen.add(fact.id)
                    assert score > 0
                    assert fact.scope in visible_scopes(where), (fact.scope, where)
                    assert fact.scope != "quarantine"
                    assert fact.status == "active"
                    assert fact.is_head
                    if fact.scope.startswith("dm:"):
                        assert fact.scope == where, f"a DM fact of {fact.scope} was recalled at {where}"
                    if fact.scope.startswith("guild:"):
                        assert where.startswith("guild:"), f"a guild fact was recalled at {where}"
                        assert guild_of(fact.scope) == guild_of(where), f"{fact.scope} leaked into {where}"
                    if fact.scope == "local":
                        assert where == "local"
                wanted = {
                    fact_id
                    for fact_id, (scope, status) in expected.items()
                    if status == "active" and may_see(where, scope)
                }
                assert seen == wanted, (where, expected)
        finally:
            await history.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(fact_specs, min_size=1, max_size=14),
    asked=st.lists(st.sampled_from(ASKED_AT), min_size=1, max_size=5, unique=True),
)
def test_recall_never_crosses_places(
    specs: list[tuple[str, bool, str, str, float, list[str], bool]], asked: list[str]
) -> None:
    asyncio.run(asyncio.wait_for(scenario(specs, asked), SCENARIO_TIMEOUT))
