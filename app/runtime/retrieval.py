"""Retrieval fusion: which facts and older messages recall puts into a reply.

BM25 over-fetches candidates (only active, current, in-scope heads survive the SQL filter), then
four signals are fused with the weights from `[memory.retrieval]`:

- bm25: the best score in the batch maps to 1.0;
- recency: min-max over the batch's ids (newest = 1.0; a batch of one = 1.0);
- importance: importance / 10;
- embedding: (cosine + 1) / 2 against the cue, only when the weight is on, an embedder is set and at
  least one candidate has a vector for the active model (so a cold side-index costs no embedding).
A missing signal is the neutral 0.5, never 0. The weighted sum is divided by the total weight and
multiplied by the fact's type weight (semantic 1.0, procedural 0.9, episodic 0.7).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.config.settings import RetrievalSection
from app.memory.cjk import cue_words, has_cjk
from app.memory.embeddings import Embedder, EmbeddingIndex, cosine
from app.memory.facts import Fact
from app.memory.history import History
from app.memory.policy import TYPE_WEIGHTS
from app.memory.records import Turn

NEUTRAL = 0.5
SIGNALS = ("bm25", "recency", "importance", "embedding")
MAX_TERMS = 16
_WORD = re.compile(r"\w+", re.UNICODE)
STOP_WORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just let me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves hey hi hello ok okay yes yeah oh um uh lol like just really
    get got going gonna know think""".split()  # noqa: SIM905 - a word list reads better as text
)


def search_terms(cue: str) -> str:
    """The words of a cue worth a full-text search: distinct, no stop words, newest first, capped.
    (A chatty cue full of "the" and "you" costs tantivy ten times more and ranks no better.)"""
    seen: dict[str, None] = {}
    for line in reversed(cue.splitlines()):
        for found in _WORD.findall(line.lower()):
            # A CJK sentence is one \w+ run: its bigrams are its words (app/memory/cjk.py).
            for word in cue_words(found) if has_cjk(found) else (found,):
                if word not in STOP_WORDS and (len(word) > 1 or not word.isascii()):
                    seen.setdefault(word, None)
    return " ".join(list(seen)[:MAX_TERMS])


@dataclass(frozen=True, slots=True)
class ScoredFact:
    fact: Fact
    score: float
    signals: dict[str, float | None] = field(default_factory=dict)  # None = missing (counted as 0.5)


@dataclass(frozen=True, slots=True)
class ScoredTurn:
    turn: Turn
    score: float
    signals: dict[str, float | None] = field(default_factory=dict)


def _minmax(values: Sequence[float]) -> list[float]:
    if not values:
        return []
    low, high = min(values), max(values)
    if high <= low:
        return [1.0 for _ in values]
    return [(v - low) / (high - low) for v in values]


def _fuse(signals: dict[str, float | None], weights: dict[str, float]) -> float:
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return (
        sum(w * (NEUTRAL if signals.get(k) is None else float(signals[k] or 0.0)) for k, w in weights.items()) / total
    )


class Retriever:
    def __init__(
        self,
        history: History,
        settings: RetrievalSection,
        embedder: Embedder | None = None,
        embeddings: EmbeddingIndex | None = None,
    ) -> None:
        self._history = history
        self._settings = settings
        self._embedder = embedder
        self._embeddings = embeddings

    def _weights(self) -> dict[str, float]:
        s = self._settings
        return {
            "bm25": s.bm25_weight,
            "recency": s.recency_weight,
            "importance": s.importance_weight,
            "embedding": s.embedding_weight,
        }

    async def facts(self, query: str, where: str, limit: int | None = None) -> list[ScoredFact]:
        """The facts recall may use at `where` for `query`, best first, each with its signals."""
        limit = self._settings.max_facts if limit is None else limit
        found, _best_of_all = await self._history.recall_candidates(
            search_terms(query), where, limit * self._settings.overfetch
        )
        if not found:
            return []
        bm25 = {fact.id: score for fact, score in found}
        candidates = [fact for fact, _score in found]
        best = max(bm25.values()) or 1.0
        recency = _minmax([float(f.id) for f in candidates])
        cosines = await self._cosines(query, [f.id for f in candidates])
        weights = self._weights()
        scored: list[ScoredFact] = []
        for fact, recent in zip(candidates, recency, strict=True):
            signals: dict[str, float | None] = {
                "bm25": bm25[fact.id] / best,
                "recency": recent,
                "importance": fact.importance / 10.0,
                "embedding": cosines.get(fact.id),
            }
            score = _fuse(signals, weights) * TYPE_WEIGHTS[fact.type]
            scored.append(ScoredFact(fact=fact, score=score, signals=signals))
        scored.sort(key=lambda s: (-s.score, -s.fact.id))
        return scored[:limit]

    async def _cosines(self, query: str, fact_ids: Sequence[int]) -> dict[int, float]:
        if self._settings.embedding_weight <= 0 or self._embedder is None or self._embeddings is None:
            return {}
        embedder = self._embedder
        vectors = await self._embeddings.vectors(fact_ids, embedder.name)
        if not vectors:
            return {}  # a cold side-index pays no embedding
        (cue,) = await asyncio.to_thread(embedder.embed, [query])
        return {i: (cosine(cue, v) + 1.0) / 2.0 for i, v in vectors.items()}

    async def turns(
        self, query: str, place: str, before_id: int, limit: int | None = None, *, window: int = 0
    ) -> list[ScoredTurn]:
        """Older messages of the same place (the recent window, ids >= before_id, excluded), fused
        from BM25 and recency with the same weights (importance and embedding are neutral).

        The cue comes from the recent window, so its own messages rank first: `window` more hits
        are fetched so they cannot crowd the older ones out."""
        limit = self._settings.max_turns if limit is None else limit
        if not query.strip() or limit <= 0:
            return []
        terms = search_terms(query)
        if not terms:
            return []
        hits = await self._history.search_turns(terms, limit * self._settings.overfetch + window, place)
        candidates = [h for h in hits if h.turn.id < before_id]
        if not candidates:
            return []
        best = max(h.score for h in candidates) or 1.0
        recency = _minmax([float(h.turn.id) for h in candidates])
        weights = {k: w for k, w in self._weights().items() if k in ("bm25", "recency")}
        scored = [
            ScoredTurn(
                turn=h.turn,
                score=_fuse({"bm25": h.score / best, "recency": r}, weights),
                signals={"bm25": h.score / best, "recency": r},
            )
            for h, r in zip(candidates, recency, strict=True)
        ]
        scored.sort(key=lambda s: (-s.score, -s.turn.id))
        return scored[:limit]
