"""Search plans for words that most documents hold, so a search stays fast at a million turns.

tantivy-py collects every match of a query (its collector cannot skip, as tantivy's own top-k can), so a
word held by most turns ("the", or a running joke) costs a walk over most of the index: about 20 ms at a
million turns. Words that common say almost nothing about which turn is meant (BM25 gives them a weight
near zero), so, as Lucene's common-terms query and Elasticsearch's `cutoff_frequency` do:

- when the query also has rarer words (held by at least one document), a turn must hold one of those, and
  the common words only add to its score (a turn sharing nothing but common words with the query is not
  a match);
- when every word is common, the newest `COMMON_WINDOW` turns are searched (their ranking over the whole
  history carries no information), and the whole index only when they hold too few matches.

Below `COMMON_FLOOR` documents nothing counts as common: a small index is searched as written. A query
with query syntax (quotes, fields, +/-, operators) or with CJK text is always searched as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import tantivy

COMMON_FLOOR = 20_000  # a word in fewer documents than this is never "common"
COMMON_SHARE = 20  # ... nor one in fewer than 1 in COMMON_SHARE documents
COMMON_WINDOW = 2_000  # the newest ids an all-common query searches first
_MAX_TOKEN_BYTES = 40  # tantivy's default tokenizer drops longer tokens
_WORD = re.compile(r"[^\W_]+")
_SYNTAX = re.compile(r"""[:"'+\-()\[\]{}^~*\\]|\b(?:AND|OR|NOT|IN)\b""")


@dataclass(frozen=True, slots=True)
class Plan:
    query: tantivy.Query
    windowed: bool  # only the newest ids: search as written when it finds fewer than asked


def plain_words(text: str) -> list[str] | None:
    """The words of a query without syntax, as tantivy's default tokenizer makes them; None when the
    query has syntax, or a chunk the parser would read as a phrase ("o'clock", "e-mail")."""
    if _SYNTAX.search(text) is not None:
        return None
    words: list[str] = []
    for chunk in text.split():
        tokens = [t for t in _WORD.findall(chunk.lower()) if len(t.encode()) <= _MAX_TOKEN_BYTES]
        if len(tokens) > 1:
            return None
        words.extend(tokens)
    return list(dict.fromkeys(words))


def newest_ids(schema: tantivy.Schema, newest_id: int, window: int = COMMON_WINDOW) -> tantivy.Query:
    """The documents with the `window` highest ids up to `newest_id` (a query kept until the next commit)."""
    return tantivy.Query.term_set_query(schema, "id", list(range(max(0, newest_id - window + 1), newest_id + 1)))


def plan(
    schema: tantivy.Schema,
    searcher: tantivy.Searcher,
    text: str,
    fields: Sequence[str],
    newest: tantivy.Query | None,
    *,
    floor: int = COMMON_FLOOR,
) -> Plan | None:
    """A cheaper query with the same best hits for `text`, or None to search it as written. `newest`
    matches the newest documents (`newest_ids`), for a query of common words only."""
    total = int(searcher.num_docs)
    if total < floor:
        return None
    words = plain_words(text)
    if not words:
        return None
    cutoff = max(floor, total // COMMON_SHARE)
    frequency = {w: sum(int(searcher.doc_freq(f, w)) for f in fields) for w in words}
    common = [w for w in words if frequency[w] >= cutoff]
    if not common:
        return None

    def either_field(word: str) -> tantivy.Query:
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, f, word)) for f in fields]
        )

    rare = [w for w in words if 0 < frequency[w] < cutoff]  # a word no document holds changes nothing
    scoring = [(tantivy.Occur.Should, either_field(w)) for w in common]
    if rare:
        required = tantivy.Query.boolean_query([(tantivy.Occur.Should, either_field(w)) for w in rare])
        return Plan(tantivy.Query.boolean_query([(tantivy.Occur.Must, required), *scoring]), windowed=False)
    if newest is None:
        return None
    words_query = tantivy.Query.boolean_query(scoring)
    clauses = [(tantivy.Occur.Must, words_query), (tantivy.Occur.Must, tantivy.Query.const_score_query(newest, 0.0))]
    return Plan(tantivy.Query.boolean_query(clauses), windowed=True)
