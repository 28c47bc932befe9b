"""Retrieval fusion over a real History (SQLite + tantivy): signals, neutral values, type weights,
scope, and the recent-window exclusion for older messages."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from app.config.settings import RetrievalSection
from app.memory.embeddings import EmbeddingIndex, HashEmbedder
from app.memory.facts import NewFact
from app.memory.history import History
from app.memory.records import NewTurn
from app.runtime.retrieval import Retriever

pytestmark = pytest.mark.asyncio

PLACE = "guild:500/501"
ALICE = "discord:7001"


@pytest_asyncio.fixture
async def history(tmp_path: Path) -> AsyncIterator[History]:
    opened = await History.open(tmp_path / "history.db", tmp_path / "fts", tmp_path / "backups")
    yield opened
    await opened.close()


async def remember(
    history: History, text: str, *, place: str = PLACE, importance: int = 5, kind: str = "semantic"
) -> int:
    outcome = await history.insert_fact(
        NewFact(
            content=text,
            type=kind,
            importance=importance,
            confidence=1.0,
            subjects=(ALICE,),
            place=place,
            origin="remember",
        )
    )
    assert outcome.fact is not None
    return outcome.fact.id


async def ready(history: History) -> None:
    await history.facts_index.flush()
    await history.turns_index.flush()


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return super().embed(texts)


async def test_importance_breaks_a_bm25_tie_and_signals_are_reported(history: History) -> None:
    low = await remember(history, "Alice owns a green kettle.", importance=2)
    high = await remember(history, "Alice owns a brass kettle.", importance=9)
    await ready(history)
    scored = await Retriever(history, RetrievalSection()).facts("kettle", PLACE)
    assert [s.fact.id for s in scored] == [high, low]
    top = scored[0].signals
    assert top["importance"] == pytest.approx(0.9)
    assert top["embedding"] is None  # no embedder: missing, counted as the neutral 0.5
    assert 0.0 <= top["bm25"] <= 1.0
    assert 0.0 <= top["recency"] <= 1.0


async def test_type_weights_rank_semantic_over_procedural_over_episodic(history: History) -> None:
    episodic = await remember(history, "Alice baked bread with rye.", kind="episodic")
    procedural = await remember(history, "Alice bakes bread with rye at dawn.", kind="procedural")
    semantic = await remember(history, "Alice loves bread with rye.", kind="semantic")
    await ready(history)
    settings = RetrievalSection(bm25_weight=0.0, importance_weight=1.0)  # only the type weight differs
    scored = await Retriever(history, settings).facts("bread rye", PLACE)
    assert [s.fact.id for s in scored] == [semantic, procedural, episodic]
    assert [round(s.score, 3) for s in scored] == [0.5, 0.45, 0.35]


async def test_only_active_current_in_scope_heads_are_recalled(history: History) -> None:
    kept = await remember(history, "Alice sings in the choir.")
    await remember(history, "Alice sings in another server's choir.", place="guild:900/901")
    await remember(history, "Alice sings in the choir in a DM.", place="dm:7001")
    old = await remember(history, "Alice sings in the old choir.")
    newer = await remember(history, "Alice sings alto in the choir.")
    await history.corrections.supersede(old, newer)
    pending = await history.insert_fact(
        NewFact("Alice always sings in the choir.", "semantic", 5, 0.5, (ALICE,), PLACE)
    )
    assert pending.fact is not None
    assert pending.fact.status == "pending"
    await ready(history)
    found = {s.fact.id for s in await Retriever(history, RetrievalSection()).facts("choir", PLACE)}
    assert found == {kept, newer}


async def test_recency_is_min_max_over_the_batch(history: History) -> None:
    ids = [await remember(history, f"Alice visited the lighthouse, trip {i}.") for i in range(3)]
    await ready(history)
    settings = RetrievalSection(bm25_weight=0.0, importance_weight=0.0, recency_weight=1.0)
    scored = await Retriever(history, settings).facts("lighthouse", PLACE)
    assert [s.fact.id for s in scored] == list(reversed(ids))
    assert [s.signals["recency"] for s in scored] == [1.0, 0.5, 0.0]


async def test_embedding_signal_with_neutral_for_facts_without_vectors(history: History) -> None:
    near = await remember(history, "Alice adores the violin concerto.")
    far = await remember(history, "Alice repairs the violin case hinge.")
    unembedded = await remember(history, "Alice tunes the violin before dawn.")
    embedder = CountingEmbedder()
    index = EmbeddingIndex(history.store)
    vectors = embedder.embed(["Alice adores the violin concerto.", "Alice repairs the violin case hinge."])
    await index.put(embedder.name, embedder.dim, [(near, vectors[0]), (far, vectors[1])])
    await ready(history)
    settings = RetrievalSection(bm25_weight=0.0, importance_weight=0.0, embedding_weight=1.0)
    scored = await Retriever(history, settings, embedder, index).facts("adores the violin concerto", PLACE)
    signals = {s.fact.id: s.signals["embedding"] for s in scored}
    assert signals[unembedded] is None
    assert signals[near] is not None
    assert signals[far] is not None
    assert signals[near] > signals[far]
    assert scored[0].fact.id == near


async def test_a_cold_embedding_index_costs_no_embedding(history: History) -> None:
    await remember(history, "Alice collects sea glass.")
    await ready(history)
    embedder = CountingEmbedder()
    settings = RetrievalSection(embedding_weight=1.0)
    scored = await Retriever(history, settings, embedder, EmbeddingIndex(history.store)).facts("sea glass", PLACE)
    assert scored
    assert scored[0].signals["embedding"] is None
    assert embedder.calls == 0


async def test_older_messages_exclude_the_recent_window_and_other_places(history: History) -> None:
    start = datetime(2024, 5, 1, tzinfo=UTC)

    def turn(text: str, minutes: int, place: str = PLACE) -> NewTurn:
        return NewTurn(
            platform="discord",
            place=place,
            channel_id=int(place.rsplit("/", 1)[-1]),
            guild_id=500,
            author_key=ALICE,
            author_name="alice",
            content=text,
            created_at=start + timedelta(minutes=minutes),
        )

    ids = await history.append_turns(
        [
            turn("the harbour bell rang twice", 0),
            turn("the harbour bell rang in the other channel", 1, "guild:500/502"),
            turn("talking about the weather", 2),
            turn("the harbour bell again", 3),
        ]
    )
    await ready(history)
    retriever = Retriever(history, RetrievalSection())
    recent_window_starts_at = ids[2]
    found = [s.turn.id for s in await retriever.turns("harbour bell", PLACE, recent_window_starts_at)]
    assert found == [ids[0]]
    assert await retriever.turns("   ", PLACE, 10**9) == []


async def test_search_terms_keep_distinct_content_words_newest_first_and_capped() -> None:
    from app.runtime.retrieval import MAX_TERMS, search_terms

    assert search_terms("what is the lantern for?\nand where is the LANTERN oil") == "lantern oil"
    assert search_terms("hi, how are you?") == ""
    many = " ".join(f"word{i}" for i in range(40))
    assert len(search_terms(many).split()) == MAX_TERMS
    # A CJK sentence is one \w+ run: its character bigrams are its words (app/memory/cjk.py).
    assert search_terms("猫が好き") == "猫が が好 好き"
    assert search_terms("Discordのサーバー") == "discord のサ サー ーバ バー"


async def test_a_cue_of_only_small_talk_recalls_nothing(history: History) -> None:
    await remember(history, "Alice is how she is.")
    await ready(history)
    assert await Retriever(history, RetrievalSection()).facts("hi, how are you?", PLACE) == []


async def test_the_recent_window_cannot_crowd_out_older_messages(history: History) -> None:
    start = datetime(2024, 5, 1, tzinfo=UTC)

    def turn(text: str, minutes: int) -> NewTurn:
        return NewTurn("discord", PLACE, 501, ALICE, "alice", text, start + timedelta(minutes=minutes), guild_id=500)

    [old] = await history.append_turns([turn("the dragon hoard is under the old mill by the river", 0)])
    recent = await history.append_turns([turn(f"dragon dragon {i}", 10 + i) for i in range(20)])
    await ready(history)
    retriever = Retriever(history, RetrievalSection())
    found = await retriever.turns("dragon", PLACE, recent[0], window=len(recent))
    assert [s.turn.id for s in found] == [old]
