"""Searches over words most documents hold (app/memory/query_plan.py): cheaper, with the same best hits.

A real tantivy index; `common_floor` is lowered so a few hundred documents behave as a big index does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.memory.fts import TURNS, FtsIndex
from app.memory.query_plan import plain_words

HOME = "discord:guild:1/10"
AWAY = "discord:guild:1/20"
AS_WRITTEN = 10**9  # a floor no test index reaches: every query is searched as written


def _docs(first: int, count: int, place: str) -> list[dict[str, object]]:
    return [
        {"id": i, "place": place, "author": "alice", "content": f"tea by the fire, note {i}"}
        for i in range(first, first + count)
    ]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[FtsIndex]:
    fts = FtsIndex(tmp_path / "turns", TURNS)
    assert fts.open() == "created"
    docs = _docs(1, 250, AWAY) + _docs(251, 50, HOME)  # the newest 50 are all HOME's
    docs[6]["content"] = "the kettle sings for tea by the fire"  # id 7: the one document with "kettle"
    fts.stage(docs, [], upsert=False)
    fts.commit()
    fts.common_floor = 10  # "tea", "by", "the", "fire" and "note" are in every document: common
    fts.common_window = 40
    yield fts
    fts.close()


def _as_written(index: FtsIndex, text: str, limit: int, place: str | None = None) -> list[tuple[int, float]]:
    floor = index.common_floor
    index.common_floor = AS_WRITTEN
    try:
        return index.search(text, limit, place)
    finally:
        index.common_floor = floor


def test_a_rare_word_is_required_and_the_common_ones_still_score(index: FtsIndex) -> None:
    written = _as_written(index, "kettle tea fire", 10)
    planned = index.search("kettle tea fire", 10)
    # As written, nine documents that share only "tea" and "fire" fill the page behind the one that
    # matters; planned, the document with the rare word comes first with the very same score, alone.
    assert len(written) == 10
    assert written[0][0] == 7
    assert [i for i, _s in planned] == [7]
    assert planned[0][1] == pytest.approx(written[0][1])


def test_a_query_of_common_words_only_reads_the_newest_documents(index: FtsIndex) -> None:
    hits = index.search("tea fire", 10)
    assert len(hits) == 10
    assert all(i > 300 - 40 for i, _s in hits), hits
    assert all(i <= 250 for i, _s in _as_written(index, "tea fire", 10))  # as written: the oldest win ties


def test_too_few_in_the_newest_window_searches_the_whole_index(index: FtsIndex) -> None:
    # The newest 40 documents are all HOME's: AWAY's matches are older, found by the search as written.
    hits = index.search("tea", 10, place=AWAY)
    assert len(hits) == 10
    assert hits == _as_written(index, "tea", 10, place=AWAY)


def test_the_window_follows_what_is_staged(index: FtsIndex) -> None:
    index.search("tea", 5)  # the newest id is looked up once
    index.stage(_docs(301, 20, HOME), [], upsert=False)
    index.commit()
    hits = index.search("tea", 10)
    # The window is now the 40 ids up to 320 (up to 300 before the new documents were staged).
    assert len(hits) == 10
    assert {i for i, _s in hits} <= set(range(281, 321))


@pytest.mark.parametrize("query", ['"kettle tea"', "content:kettle tea", "+kettle tea", "kettle -tea", "kettle OR tea"])
def test_a_query_with_syntax_is_searched_as_written(index: FtsIndex, query: str) -> None:
    assert index.search(query, 10) == _as_written(index, query, 10)


def test_a_small_index_is_searched_as_written(index: FtsIndex) -> None:
    index.common_floor = 301  # one more than the index holds: nothing is common
    assert index.search("kettle tea", 10) == _as_written(index, "kettle tea", 10)


def test_plain_words_are_the_tokenizers_words() -> None:
    assert plain_words("Hello, World? hello") == ["hello", "world"]
    assert plain_words("  ") == []
    assert plain_words("don't") is None  # tantivy reads "don't" as a phrase: searched as written
    assert plain_words("e-mail") is None
    assert plain_words('say "hi"') is None
    assert plain_words("tea AND cake") is None
    assert plain_words("x" * 41) == []  # the tokenizer drops words over 40 bytes


WORDS = ["tea ", "kettle ", "fire ", "note ", "7 ", "ember ", "! ", ", "]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=8).map("".join))
def test_planned_searches_keep_every_rare_match_first(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    """Whatever the mix of words, the documents with a rare word come first, in the as-written order."""
    fts = _property_index(tmp_path_factory)
    planned = fts.search(text, 10)
    written = _as_written(fts, text, 10)
    words = plain_words(text) or []
    if "kettle" in words:  # the one rare word some document holds ("7" and "ember" are in none)
        assert planned == [hit for hit in written if hit[0] in {i for i, _s in planned}][: len(planned)]
        assert planned[:1] == written[:1]


_PROPERTY: dict[int, FtsIndex] = {}


def _property_index(factory: pytest.TempPathFactory) -> FtsIndex:
    key = id(factory)
    if key not in _PROPERTY:
        fts = FtsIndex(factory.mktemp("plan") / "turns", TURNS)
        fts.open()
        docs = _docs(1, 120, HOME)
        docs[6]["content"] = "the kettle sings for tea by the fire"
        fts.stage(docs, [], upsert=False)
        fts.commit()
        fts.common_floor = 10
        fts.common_window = 30
        _PROPERTY.clear()
        _PROPERTY[key] = fts
    return _PROPERTY[key]
