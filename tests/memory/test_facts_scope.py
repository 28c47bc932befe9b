"""Scope: where a fact may be recalled. A DM's facts stay in that DM, a guild's in that guild (or that
channel), the familiar's own everywhere; quarantined facts nowhere. Real SQLite and tantivy files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from app.memory.facts import Fact, NewFact
from app.memory.history import History
from app.memory.policy import fact_scope, visible_scopes
from tests.memory.helpers import turn

pytestmark = pytest.mark.asyncio

FLUSH = 15.0
WORD = "heron"


@pytest_asyncio.fixture
async def history(tmp_path: Path) -> AsyncIterator[History]:
    opened = await History.open(tmp_path / "history.db", tmp_path / "fts", tmp_path / "backups")
    yield opened
    await opened.close()


async def remember(history: History, label: str, place: str, *, channel_scoped: bool = False, **extra: object) -> Fact:
    new = NewFact(
        content=f"the {WORD} note {label}",
        type=str(extra.get("type", "episodic")),
        importance=5,
        confidence=0.9,
        subjects=("discord:7001",),
        place=place,
        origin=str(extra.get("origin", "remember")),
        channel_scoped=channel_scoped,
    )
    outcome = await history.insert_fact(new)
    assert outcome.outcome == "inserted"
    assert outcome.fact is not None
    return outcome.fact


async def recalled(history: History, where: str) -> set[str]:
    hits = await history.recall(WORD, where, limit=50)
    assert all(score > 0 for _f, score in hits)
    return {f.content.rsplit(" ", 1)[-1] for f, _s in hits}


async def test_recall_keeps_each_fact_in_its_place(history: History) -> None:
    placed = {
        "a": await remember(history, "a", "dm:7001"),
        "b": await remember(history, "b", "dm:7002"),
        "fam": await remember(history, "fam", "familiar"),
        "g1": await remember(history, "g1", "guild:500/501"),  # the guild is not channel-scoped
        "g1c1": await remember(history, "g1c1", "guild:500/501", channel_scoped=True),
        "g1c2": await remember(history, "g1c2", "guild:500/502", channel_scoped=True),
        "g1top": await remember(history, "g1top", "guild:500", channel_scoped=True),
        "g2": await remember(history, "g2", "guild:600/601"),
        "loc": await remember(history, "loc", "local"),
    }
    assert {k: f.scope for k, f in placed.items()} == {
        "a": "dm:7001",
        "b": "dm:7002",
        "fam": "familiar",
        "g1": "guild:500",
        "g1c1": "guild:500/501",
        "g1c2": "guild:500/502",
        "g1top": "guild:500",
        "g2": "guild:600",
        "loc": "local",
    }
    await history.facts_index.flush(FLUSH)
    assert await recalled(history, "dm:7001") == {"a", "fam"}
    assert await recalled(history, "dm:7002") == {"b", "fam"}
    assert await recalled(history, "dm:9999") == {"fam"}
    assert await recalled(history, "guild:500/501") == {"g1", "g1top", "g1c1", "fam"}
    assert await recalled(history, "guild:500/502") == {"g1", "g1top", "g1c2", "fam"}
    assert await recalled(history, "guild:500/503") == {"g1", "g1top", "fam"}
    assert await recalled(history, "guild:500") == {"g1", "g1top", "fam"}
    assert await recalled(history, "guild:600/601") == {"g2", "fam"}
    assert await recalled(history, "guild:700/701") == {"fam"}
    assert await recalled(history, "local") == {"loc", "fam"}
    for bad in ("familiar", "nowhere", "", "dm:", "guild:500/501/502", "quarantine"):
        with pytest.raises(ValueError, match="not a place"):
            await history.recall(WORD, bad)


async def test_recall_reads_only_active_current_heads(history: History) -> None:
    active = await remember(history, "active", "dm:7001")
    await remember(history, "pending", "dm:7001", type="semantic", origin="extraction")
    rejected = await remember(history, "rejected", "dm:7001", type="semantic", origin="extraction")
    await history.decisions.decide(rejected.id, rejected.revision, "reject")
    archived = await remember(history, "archived", "dm:7001")
    await history.decisions.decide(archived.id, archived.revision, "archive")
    old = await remember(history, "old", "dm:7001")
    await history.edit_fact(old.id, old.revision, f"the {WORD} note new")
    await history.facts_index.flush(FLUSH)
    assert await recalled(history, "dm:7001") == {"active", "new"}
    assert active.status == "active"


async def test_quarantined_facts_are_never_recalled(history: History) -> None:
    assert fact_scope("nowhere", channel_scoped=False) == "quarantine"
    assert fact_scope("guild:1/2/3", channel_scoped=True) == "quarantine"
    assert fact_scope("dm:alice", channel_scoped=False) == "quarantine"
    places = ("dm:7001", "dm:7002", "guild:500", "guild:500/501", "local")
    for where in places:
        assert "quarantine" not in visible_scopes(where)
    # insert refuses a bad place outright (FactError, see the bad-input tests), so a quarantined row
    # comes from elsewhere (an import, an older schema): mark two facts so, one of them edited after
    dm_fact = await remember(history, "dm", "dm:7001")
    guild_fact = await remember(history, "guild", "guild:500/501", channel_scoped=True)
    await history.store.write(
        [("UPDATE facts SET scope = 'quarantine' WHERE id IN (?, ?)", (dm_fact.id, guild_fact.id))]
    )
    refreshed = await history.facts.get(guild_fact.id)
    assert refreshed is not None
    assert refreshed.scope == "quarantine"
    edited = await history.edit_fact(guild_fact.id, refreshed.revision, f"the {WORD} note edited")
    assert edited.scope == "quarantine"  # an edit does not move a fact out of quarantine
    visible = await remember(history, "visible", "familiar")
    await history.facts_index.flush(FLUSH)
    for where in places:
        assert await recalled(history, where) == {"visible"}
    assert visible.scope == "familiar"


async def test_a_fact_whose_sources_disagree_about_where_it_was_said_is_quarantined(history: History) -> None:
    """Real input, no SQL surgery: the insert itself compares the fact's place with its sources'."""
    ids = await history.append_turns(
        [
            turn("I keep bees", message_id=1, place="guild:500/501"),
            turn("on the roof", message_id=2, place="guild:500/502"),
            turn("in secret", message_id=3, place="dm:7001"),
            turn("elsewhere", message_id=4, place="guild:600/601"),
        ]
    )

    async def learnt(label: str, place: str, sources: tuple[int, ...], *, channel_scoped: bool = False) -> str:
        new = NewFact(
            f"the {WORD} note {label}",
            "episodic",
            5,
            0.9,
            ("discord:7001",),
            place,
            source_turn_ids=sources,
            origin="extraction",
            channel_scoped=channel_scoped,
        )
        outcome = await history.insert_fact(new)
        assert outcome.fact is not None, outcome
        return outcome.fact.scope

    assert await learnt("guildwide", "guild:500/501", (ids[0], ids[1])) == "guild:500"  # two channels, one guild
    assert await learnt("channel", "guild:500/501", (ids[0],), channel_scoped=True) == "guild:500/501"
    assert await learnt("twochannels", "guild:500/501", (ids[0], ids[1]), channel_scoped=True) == "quarantine"
    assert await learnt("dmleak", "guild:500/501", (ids[0], ids[2])) == "quarantine"
    assert await learnt("otherguild", "guild:500/501", (ids[0], ids[3])) == "quarantine"
    assert await learnt("dm", "dm:7001", (ids[2],)) == "dm:7001"
    assert await learnt("dmfromguild", "dm:7001", (ids[0],)) == "quarantine"
    await history.facts_index.flush(FLUSH)
    assert await recalled(history, "guild:500/501") == {"guildwide", "channel"}
    assert await recalled(history, "guild:500/502") == {"guildwide"}
    assert await recalled(history, "dm:7001") == {"dm"}
    assert await recalled(history, "guild:600/601") == set()
