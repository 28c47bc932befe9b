"""Searches that scan the store, for when a search index cannot answer (locked, being rebuilt).

SQL is the truth, so a search never fails for want of its index: each word of the query (a CJK run
is one word) is looked for as a substring, and a row scores the share of the query's distinct words
it holds, newest first among equals. The scan covers the newest `SCAN_ROWS` rows, so a reply waits a bounded
time even in a history of millions of messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.memory.cjk import query_words
from app.memory.store import Store

SCAN_ROWS = 100_000


def _like(word: str) -> str:
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _score_sql(columns: Sequence[str], words: Sequence[str]) -> tuple[str, list[str]]:
    """SQL summing, per word, whether any of `columns` holds it; and the parameters."""
    parts: list[str] = []
    params: list[str] = []
    for word in words:
        pattern = _like(word)
        parts.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns) + ")")
        params.extend(pattern for _c in columns)
    return " + ".join(parts), params


async def scan_turns(
    store: Store, query: str, limit: int, place: str | None = None, *, after_id: int | None = None
) -> list[tuple[int, float]]:
    """(turn id, score) of indexable turns holding words of `query`, best first; only rows past
    `after_id` when given (what an index that is behind lacks)."""
    words = query_words(query)
    if not words or limit <= 0:
        return []
    score, params = _score_sql(("content", "author_name"), words)
    where = ["superseded = 0", "redacted = 0"]
    args: list[object] = [*params]
    if after_id is not None:
        where.append("id > ?")
        args.append(after_id)
    where.append(f"id > (SELECT COALESCE(MAX(id), 0) FROM turns) - {SCAN_ROWS}")
    if place is not None:
        where.append("place = ?")
        args.append(place)
    args.append(limit)
    rows = await store.read_all(
        f"SELECT id, score FROM (SELECT id, {score} AS score FROM turns WHERE {' AND '.join(where)})"
        " WHERE score > 0 ORDER BY score DESC, id DESC LIMIT ?",
        args,
    )
    return [(int(r[0]), float(r[1]) / len(words)) for r in rows]


async def scan_facts(
    store: Store,
    query: str,
    limit: int,
    scopes: Sequence[str] | None = None,
    *,
    after_id: int | None = None,
) -> list[tuple[int, float]]:
    """(fact id, score) of facts with text holding words of `query`, best first; of `scopes` only
    when given, and only rows past `after_id` when given."""
    words = query_words(query)
    if not words or limit <= 0:
        return []
    score, params = _score_sql(("content",), words)
    where = ["status != 'forgotten'", f"id > (SELECT COALESCE(MAX(id), 0) FROM facts) - {SCAN_ROWS}"]
    args: list[object] = [*params]
    if after_id is not None:
        where.append("id > ?")
        args.append(after_id)
    if scopes is not None:
        if not scopes:
            return []
        where.append(f"scope IN ({','.join('?' * len(scopes))})")
        args.extend(scopes)
    args.append(limit)
    rows = await store.read_all(
        f"SELECT id, score FROM (SELECT id, {score} AS score FROM facts WHERE {' AND '.join(where)})"
        " WHERE score > 0 ORDER BY score DESC, id DESC LIMIT ?",
        args,
    )
    return [(int(r[0]), float(r[1]) / len(words)) for r in rows]


def merge_hits(
    indexed: Sequence[tuple[int, float]], scanned: Sequence[tuple[int, float]], limit: int
) -> list[tuple[int, float]]:
    """An index's BM25 hits and a scan of the rows it lacks, in one list: a scanned row's score (its
    share of the query's words) times the best BM25 score, so a row holding every word ranks with the
    best hit."""
    if not scanned:
        return list(indexed[:limit])
    best = max((s for _i, s in indexed), default=1.0) or 1.0
    seen = {i for i, _s in indexed}
    merged = [*indexed, *((i, s * best) for i, s in scanned if i not in seen)]
    merged.sort(key=lambda pair: -pair[1])  # stable: the index's own order among equals is kept
    return merged[:limit]
