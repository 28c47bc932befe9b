"""CJK text is searchable by word (issue 8, item 7): a word of two or more characters finds every
turn and fact that contains it, in Japanese, Chinese and Korean, alone or beside Latin text.

Real tantivy and SQLite under tmp_path. Before format 2 a CJK sentence was one token (or none, past
40 bytes), so each search below found nothing unless given the whole sentence.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_asyncio
import tantivy

from app.memory.cjk import bigram_field, bigrams, cue_words, query_words, split_cjk
from app.memory.facts import NewFact
from app.memory.fts import FACTS, TURNS, FtsIndex
from app.memory.history import History
from app.memory.scan import scan_facts, scan_turns
from tests.memory.helpers import PLACE, turn
from tests.memory.test_fts import FLUSH, Folder, assert_fully_indexed, ids_for

TEXTS = {
    "ja": "明日の会議は東京本社で午後三時から始まります",
    "ja2": "京都の会議室は予約でいっぱいです",
    "zh": "我们下周在北京开会讨论新的项目计划",
    "ko": "내일 서울에서 회의가 있습니다",
    "mixed": "Discordのサーバーで新しいchannelを作りました",
    "mixed2": "今日はRustのmeetupに行った",
    "latin": "the lantern festival is tomorrow night",
    "kana": "カタカナのテキストとひらがな",
}


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path / "familiar")


@pytest_asyncio.fixture
async def history(folder: Folder) -> AsyncIterator[History]:
    opened = await folder.open()
    yield opened
    await opened.close()


async def seed(history: History) -> dict[str, int]:
    ids: dict[str, int] = {}
    for n, (key, text) in enumerate(TEXTS.items(), start=1):
        stored = await history.append_turn(turn(text, message_id=n))
        assert stored is not None
        ids[key] = stored.id
    await history.turns_index.flush(FLUSH)
    return ids


# -- the splitter -------------------------------------------------------------------------------------


def test_bigrams_and_runs() -> None:
    assert bigrams("会議") == ["会議"]
    assert bigrams("東京都") == ["東京", "京都"]
    assert bigrams("猫") == ["猫"]
    assert bigrams("") == []
    rest, runs = split_cjk("Discordのサーバーで新しいchannel")
    assert runs == ["のサーバーで新しい"]
    assert rest.split() == ["Discord", "channel"]
    assert split_cjk("no cjk here") == ("no cjk here", [])
    # The katakana middle dot and CJK punctuation separate runs; the prolonged sound mark does not.
    assert split_cjk("東京・大阪、ソウル")[1] == ["東京", "大阪", "ソウル"]
    assert bigram_field(["東京", "京"]) == "東京 | 京"
    assert query_words("Tokyoで会議 tokyo 会議") == ["tokyo", "で会議", "会議"]
    assert cue_words("今日はrust") == ["rust", "今日", "日は"]


# -- turns ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("会議", ["ja", "ja2"]),  # Japanese, a word in the middle of two sentences
        ("東京", ["ja"]),
        ("本社", ["ja"]),
        ("会議室", ["ja2"]),  # three characters: the phrase of its bigrams, not any one of them
        ("北京", ["zh"]),  # Chinese
        ("项目计划", ["zh"]),
        ("서울", ["ko"]),  # Korean: a particle is glued to the word
        ("회의", ["ko"]),
        ("サーバー", ["mixed"]),  # katakana with the prolonged sound mark
        ("Discord", ["mixed"]),  # a Latin word written against CJK is a word of its own
        ("channel", ["mixed"]),
        ("rust", ["mixed2"]),
        ("meetup 東京", ["ja", "mixed2"]),  # mixed query: any word may match, as for Latin
        ("lantern", ["latin"]),  # Latin text as before
        ("ひらがな", ["kana"]),
        ("猫", []),
        ("京都", ["ja2"]),  # 京都 is not in 東京本社 (東京 + 京本): no false phrase across words
    ],
)
@pytest.mark.asyncio
async def test_a_cjk_word_finds_the_turns_that_contain_it(history: History, query: str, expected: list[str]) -> None:
    ids = await seed(history)
    assert await ids_for(history, query) == sorted(ids[k] for k in expected)


@pytest.mark.asyncio
async def test_one_cjk_character_finds_the_turns_that_contain_it(history: History) -> None:
    ids = await seed(history)
    assert await ids_for(history, "議") == sorted([ids["ja"], ids["ja2"]])
    assert await ids_for(history, "京") == sorted([ids["ja"], ids["ja2"], ids["zh"]])


@pytest.mark.asyncio
async def test_a_sentence_still_ranks_the_exact_turn_first(history: History) -> None:
    ids = await seed(history)
    hits = await history.search_turns("東京本社で午後三時")
    assert hits[0].turn.id == ids["ja"]
    assert [h.turn.id for h in hits] == [ids["ja"]]


@pytest.mark.asyncio
async def test_a_cjk_author_name_is_searchable_by_part(history: History) -> None:
    stored = await history.append_turn(turn("hello", message_id=1, name="田中太郎"))
    assert stored is not None
    await history.turns_index.flush(FLUSH)
    assert await ids_for(history, "田中") == [stored.id]
    assert await ids_for(history, "太郎") == [stored.id]


@pytest.mark.asyncio
async def test_long_cjk_text_is_indexed_whole(history: History) -> None:
    """A run over 40 bytes used to be dropped by the default tokenizer: not even the sentence found it."""
    text = "吾輩は猫である名前はまだ無いどこで生れたかとんと見当がつかぬ何でも薄暗いじめじめした所で"
    stored = await history.append_turn(turn(text, message_id=1))
    assert stored is not None
    await history.turns_index.flush(FLUSH)
    assert await ids_for(history, "見当") == [stored.id]
    assert await ids_for(history, text) == [stored.id]


@pytest.mark.asyncio
async def test_the_place_filter_holds_for_cjk(history: History) -> None:
    ids = await seed(history)
    other = await history.append_turn(turn("別の会議", message_id=99, place="guild:500/502"))
    assert other is not None
    await history.turns_index.flush(FLUSH)
    assert await ids_for(history, "会議", place=PLACE) == sorted([ids["ja"], ids["ja2"]])
    assert await ids_for(history, "会議", place="guild:500/502") == [other.id]


# -- facts and recall ---------------------------------------------------------------------------------


FACTS_TEXT = {
    "tokyo": "アリスは東京に住んでいる",
    "beijing": "鲍勃在北京工作",
    "seoul": "캐럴은 서울에서 커피를 마신다",
    "mixed": "アリスはRustでDiscordのbotを書いた",
}


async def seed_facts(history: History) -> dict[str, int]:
    ids: dict[str, int] = {}
    for key, text in FACTS_TEXT.items():
        outcome = await history.insert_fact(NewFact(text, "episodic", 6, 0.9, ("discord:7001",), PLACE))
        assert outcome.fact is not None
        assert outcome.fact.status == "active"
        ids[key] = outcome.fact.id
    await history.facts_index.flush(FLUSH)
    return ids


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("東京", ["tokyo"]),
        ("北京", ["beijing"]),
        ("서울", ["seoul"]),
        ("Discord", ["mixed"]),
        ("アリス", ["tokyo", "mixed"]),
    ],
)
@pytest.mark.asyncio
async def test_a_cjk_word_finds_facts_and_recall(history: History, query: str, expected: list[str]) -> None:
    ids = await seed_facts(history)
    want = sorted(ids[k] for k in expected)
    assert sorted(f.id for f, _s in await history.search_facts(query)) == want
    assert sorted(f.id for f, _s in await history.recall(query, PLACE)) == want


@pytest.mark.asyncio
async def test_recall_from_a_japanese_sentence_finds_the_fact_it_shares_words_with(history: History) -> None:
    """A cue is a whole message: its bigrams are its words (app/runtime/retrieval.search_terms)."""
    from app.config.settings import RetrievalSection
    from app.runtime.retrieval import Retriever

    ids = await seed_facts(history)
    scored = await Retriever(history, RetrievalSection()).facts("東京の天気はどうですか", PLACE)
    assert [s.fact.id for s in scored][:1] == [ids["tokyo"]]


# -- the store answers CJK too (when the index cannot) ---------------------------------------------------


@pytest.mark.asyncio
async def test_the_store_scan_finds_cjk_words(history: History) -> None:
    ids = await seed(history)
    facts = await seed_facts(history)
    assert sorted(i for i, _s in await scan_turns(history.store, "会議", 10)) == sorted([ids["ja"], ids["ja2"]])
    assert [i for i, _s in await scan_turns(history.store, "서울", 10)] == [ids["ko"]]
    assert [i for i, _s in await scan_facts(history.store, "北京", 10)] == [facts["beijing"]]
    assert await scan_facts(history.store, "北京", 10, scopes=("dm:1",)) == []
    # LIKE wildcards in a query are plain characters.
    assert await scan_turns(history.store, "%", 10) == []


# -- existing indexes get the new format once, rebuilt beside ------------------------------------------


def _v1_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("id", stored=True, indexed=True, fast=True)
    builder.add_text_field("place", stored=False, tokenizer_name="raw")
    builder.add_text_field("author", stored=False, tokenizer_name="default")
    builder.add_text_field("content", stored=False, tokenizer_name="default")
    return builder.build()


V1_TURNS = replace(TURNS, schema_version=1, build_schema=_v1_schema, cjk_sources=())


@pytest.mark.asyncio
async def test_an_index_of_the_old_format_is_rebuilt_once_beside_and_finds_cjk(folder: Folder) -> None:
    # A familiar indexed by the previous version: CJK runs as single tokens, format 1.
    old = await folder.open(index=FtsIndex(folder.index_dir, V1_TURNS))
    try:
        ids = await seed(old)
        assert await ids_for(old, "会議") == []  # what the issue reported
        assert (await old.store.index_state("turns"))[1] == 1
    finally:
        await old.close()
    assert json.loads((folder.index_dir / "familiar-index.json").read_text(encoding="utf-8"))["schema_version"] == 1
    history = await folder.open()
    try:
        assert history.index_health().rebuilt_at_start is True
        await history.catch_up(FLUSH)
        assert await ids_for(history, "会議") == sorted([ids["ja"], ids["ja2"]])
        await assert_fully_indexed(history)
        assert (await history.store.index_state("turns"))[1:] == (TURNS.schema_version, False)
        assert not (folder.fts / "turns.building").exists()
        assert not (folder.fts / "turns.old").exists()
    finally:
        await history.close()
    again = await folder.open()
    try:
        assert again.index_health().rebuilt_at_start is False  # once
        await again.catch_up(FLUSH)
        assert again.index_health().documents_committed == 0
    finally:
        await again.close()


@pytest.mark.asyncio
async def test_latin_documents_are_indexed_exactly_as_before(tmp_path: Path) -> None:
    """Text without CJK goes to tantivy unchanged: the same words, the same BM25 scores."""
    docs = [{"id": i, "place": PLACE, "content": f"the lantern number {i} glows"} for i in range(1, 30)]
    old = FtsIndex(tmp_path / "old", replace(FACTS, schema_version=1, cjk_sources=()))
    new = FtsIndex(tmp_path / "new", FACTS)
    for index in (old, new):
        assert index.open() == "created"
        index.stage(docs, [], upsert=False)
        index.commit()
    try:
        for query in ("lantern", "number 7", "glows lantern", '"the lantern"'):
            assert await asyncio.to_thread(new.search, query, 10) == await asyncio.to_thread(old.search, query, 10)
    finally:
        old.close()
        new.close()
