"""tantivy side-indexes: the index files, blocking (executor only).

One `FtsIndex` is one index folder: open, search, stage and commit documents. A lock or a permission
is never taken for corruption: an owner that meets one raises IndexLockedError and leaves every file as
it is. Only an index that is really damaged (tantivy reports corruption, its format file is garbage) or
of another format needs a rebuild, and a rebuild never touches the old index: the new one is built in
a sibling folder (`IndexBuild`, `<name>.building`) and swapped in with two renames once complete. A
crash between the renames is finished at the next open, and a build a crash or a close cut short can
be resumed. `app/memory/committer.py` feeds an index from SQL.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tantivy

from app.memory import query_plan
from app.memory.cjk import CJK_RUN, bigram_field, bigrams, split_cjk
from app.memory.errors import (
    IndexCommitError,
    IndexDiskFullError,
    IndexLockedError,
    IndexUnavailableError,
    StoreError,
    is_disk_full,
)

_log = logging.getLogger(__name__)

_TRANSIENT = re.compile(
    r"PermissionDenied|Access is denied|os error 5\b|os error 32\b|LockBusy|lock busy"
    r"|Operation not permitted|os error 1\b|Permission denied|Read-only file system|index writer was killed",
    re.IGNORECASE,
)
# OS errors that say "not now" rather than "broken": permissions, locks, sharing violations.
_LOCK_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EBUSY, errno.EROFS, errno.ETXTBSY, errno.EAGAIN})
_LOCK_WINERRORS = frozenset({5, 32, 33})  # access denied, sharing violation, lock violation
# A writer whose worker thread met an I/O error (a lock, while it wrote a segment) takes nothing more
# until it is replaced (`FtsIndex.recover_writer`).
WRITER_KILLED = "index writer was killed"
_META = "familiar-index.json"  # the index format; in a build folder, written once the build is complete
_BUILD_PROGRESS = "familiar-build.json"  # how far a build has got (SQL id), to resume it
CJK_FIELD = "cjk"
INLINE_SEARCH_LIMIT = 32
"""Searches for at most this many hits run on the event loop (see `IndexCommitter.search`)."""

OpenOutcome = Literal["opened", "created", "missing", "incompatible", "corrupt", "locked"]


def is_transient(error: BaseException) -> bool:
    """tantivy raises plain ValueError; a transient file lock is recognised by its message."""
    return isinstance(error, ValueError) and bool(_TRANSIENT.search(str(error)))


def is_lock_error(error: BaseException) -> bool:
    """A lock or a permission (tantivy's message, or an OSError of ours): try again later, never rebuild."""
    if isinstance(error, OSError):
        return error.errno in _LOCK_ERRNOS or getattr(error, "winerror", None) in _LOCK_WINERRORS
    return is_transient(error)


def writer_killed(error: BaseException) -> bool:
    """tantivy's writer died under this error: it takes nothing more until it is replaced (`recover_writer`)."""
    return isinstance(error, ValueError) and WRITER_KILLED in str(error)


def write_failure(error: ValueError) -> StoreError:
    """tantivy's plain ValueError from a write, classified once by its message (the only thing tantivy
    gives), as the typed error it stands for, with tantivy's as its cause: IndexLockedError (a lock or a
    permission, a writer a lock killed: try again), IndexDiskFullError (no room: try again once there
    is), or IndexCommitError (anything else). A lock is named first: a full disk that killed the writer
    reads as a lock (`IndexHealth.disk_full` still says the cause)."""
    text = one_line(error)
    failure: StoreError
    if is_transient(error):
        failure = IndexLockedError(text)
    elif is_disk_full(error):
        failure = IndexDiskFullError(text)
    else:
        failure = IndexCommitError(text)
    # Kept as the cause without its traceback: the frames of the failed commit hold tantivy's writer, and a
    # writer the error killed must be gone before a new one can take tantivy's lock (`recover_writer`).
    failure.__cause__ = error.with_traceback(None)
    return failure


@dataclass(frozen=True, slots=True)
class IndexSpec:
    name: str
    schema_version: int
    build_schema: Callable[[], tantivy.Schema]
    search_fields: tuple[str, ...]
    cjk_sources: tuple[str, ...] = ()  # text fields whose CJK runs are indexed as bigrams in CJK_FIELD


def _turn_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("id", stored=True, indexed=True, fast=True)
    builder.add_text_field("place", stored=False, tokenizer_name="raw")
    builder.add_text_field("author", stored=False, tokenizer_name="default")
    builder.add_text_field("content", stored=False, tokenizer_name="default")
    builder.add_text_field(CJK_FIELD, stored=False, tokenizer_name="whitespace")
    return builder.build()


# Version 2: CJK runs are indexed as character bigrams (app/memory/cjk.py).
TURNS = IndexSpec(
    name="turns",
    schema_version=2,
    build_schema=_turn_schema,
    search_fields=("content", "author"),
    cjk_sources=("content", "author"),
)


def _fact_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("id", stored=True, indexed=True, fast=True)
    builder.add_text_field("place", stored=False, tokenizer_name="raw")  # the fact's scope
    builder.add_text_field("content", stored=False, tokenizer_name="default")
    builder.add_text_field(CJK_FIELD, stored=False, tokenizer_name="whitespace")
    return builder.build()


FACTS = IndexSpec(
    name="facts", schema_version=2, build_schema=_fact_schema, search_fields=("content",), cjk_sources=("content",)
)


def _document(spec: IndexSpec, doc: dict[str, Any]) -> tantivy.Document:
    """A tantivy document; the CJK runs of its text fields move to the bigram field (text without CJK
    is indexed exactly as given)."""
    runs: list[str] = []
    for name in spec.cjk_sources:
        text = doc.get(name)
        if isinstance(text, str) and CJK_RUN.search(text) is not None:
            if not runs:
                doc = dict(doc)
            doc[name], found = split_cjk(text)
            runs.extend(found)
    if runs:
        doc[CJK_FIELD] = bigram_field(runs)
    return tantivy.Document(**doc)


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)


def _new_writer(index: tantivy.Index) -> tantivy.IndexWriter:
    return index.writer(heap_size=64_000_000, num_threads=1)


class FtsIndex:
    """One tantivy index directory. Every method blocks: call them from an executor thread."""

    def __init__(self, path: Path, spec: IndexSpec) -> None:
        self.path = path
        self.spec = spec
        self._schema = spec.build_schema()
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._owner = _OwnerLock(path.with_name(path.name + ".owner.lock"))
        self.writable = False
        self.problem: str | None = None  # why the index is not open, in a few words
        self.common_floor = query_plan.COMMON_FLOOR  # see app/memory/query_plan.py (tests lower them)
        self.common_window = query_plan.COMMON_WINDOW
        self._newest_id: int | None = None  # the highest id in the index, once looked up (see _newest)
        self._newest_query: tuple[int | None, tantivy.Query | None] = (None, None)

    @property
    def owned(self) -> bool:
        """This process holds the index's owner lock: it alone writes, rebuilds and repairs it."""
        return self._owner.held

    @property
    def owned_elsewhere(self) -> bool:
        """The last try to take the owner lock found another process holding it."""
        return self._owner.taken

    @property
    def is_open(self) -> bool:
        return self._index is not None

    @property
    def building_path(self) -> Path:
        return self.path.with_name(self.path.name + ".building")

    @property
    def retired_path(self) -> Path:
        return self.path.with_name(self.path.name + ".old")

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, *, writable: bool = True) -> OpenOutcome:
        """Open the live index, for writing when this process can own it.

        Returns "opened"; "created" when there was no index (an owner makes an empty one: there is
        nothing to lose); or why the index cannot serve: "missing" (a reader), "incompatible"
        (another format), "corrupt" (tantivy cannot read it), or, for a reader, "locked". An index
        is never wiped here: a rebuild is built beside it (`begin_build`) and swapped in
        (`swap_in`). An owner that meets a lock or a permission raises IndexLockedError.
        """
        self._close_index()
        self.problem = None
        if writable:
            try:
                writable = self._owner.acquire()
            except OSError as exc:
                raise IndexLockedError(f"cannot take {self._owner.path}: {one_line(exc)}") from exc
        try:
            if writable:
                self._recover_swap()
            outcome = self._check()
            if outcome == "missing" and writable:
                self._create()
                outcome = "created"
            elif outcome != "opened":
                return outcome
            else:
                self._index = self._open_tantivy(self.path)
            if writable:
                assert self._index is not None
                self._writer = _new_writer(self._index)
                self.writable = True
            return outcome
        except (OSError, ValueError) as exc:
            self._close_index()
            if isinstance(exc, ValueError) and not is_transient(exc):
                self.problem = one_line(exc)
                return "corrupt"
            # A lock, a permission, or another I/O failure: not the index's fault; try again later.
            if writable:
                raise IndexLockedError(one_line(exc)) from exc
            self.problem = one_line(exc)
            return "locked"

    def _create(self) -> None:
        """A new, empty index where there is none (or an empty folder)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._index = tantivy.Index(self._schema, path=str(self.path), reuse=False)
        _write_json(self.path / _META, {"schema_version": self.spec.schema_version})

    def _open_tantivy(self, path: Path) -> tantivy.Index:
        """The one call that opens index files; a seam for fault-injection tests."""
        return tantivy.Index(self._schema, path=str(path), reuse=True)

    def _check(self) -> OpenOutcome:
        """Whether the live folder holds an index of this format (OSError: cannot tell now)."""
        if not self.path.is_dir():
            if self.path.exists() or self.path.is_symlink():
                self.problem = "a file stands where the index folder should be"
                return "corrupt"
            self.problem = "there is no index yet"
            return "missing"
        if not (self.path / "meta.json").is_file():
            self.problem = "its meta.json is missing"
            return "missing" if not any(self.path.iterdir()) else "corrupt"
        try:
            recorded = json.loads((self.path / _META).read_text(encoding="utf-8")).get("schema_version")
        except FileNotFoundError:
            self.problem = f"{_META} is missing"
            return "incompatible"
        except (ValueError, AttributeError):
            self.problem = f"{_META} is unreadable"
            return "corrupt"
        if recorded != self.spec.schema_version:
            self.problem = f"it is in index format {recorded}; this Familiar uses format {self.spec.schema_version}"
            return "incompatible"
        return "opened"

    def _build_complete(self, path: Path) -> bool:
        try:
            recorded = json.loads((path / _META).read_text(encoding="utf-8")).get("schema_version")
        except FileNotFoundError:
            return False
        except (ValueError, AttributeError):
            return False
        return bool(recorded == self.spec.schema_version)

    def _recover_swap(self) -> None:
        """Finish or undo a swap a crash cut short (the owner only, before opening)."""
        live, building, retired = self.path, self.building_path, self.retired_path
        if not (live.exists() or live.is_symlink()) and retired.exists():
            if building.is_dir() and self._build_complete(building):
                self._rename(building, live)
                _log.warning("index %s: finished swapping in the rebuilt index a crash had interrupted", self.spec.name)
            else:
                self._rename(retired, live)
                _log.warning("index %s: put back the index a crash had left aside during a swap", self.spec.name)
        if retired.exists() and (live.exists() or live.is_symlink()):
            try:
                _remove(retired)
            except OSError as exc:  # removed at the next start
                _log.info("index %s: could not remove %s yet: %s", self.spec.name, retired, exc)

    def _rename(self, source: Path, target: Path) -> None:
        """The one call that moves index folders; a seam for fault-injection tests."""
        source.rename(target)

    def close(self) -> None:
        self._close_index()
        self._owner.release()

    def _close_index(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(ValueError):
                self._writer.wait_merging_threads()
        self._writer = None
        self._index = None
        self.writable = False
        self._newest_id = None

    # -- rebuilding beside -------------------------------------------------------------------
    def begin_build(self, *, resume: bool) -> IndexBuild:
        """A new index in the sibling building folder; a build a crash or a close cut short is
        resumed when `resume` and it is of this format (else it starts afresh)."""
        return IndexBuild(self, resume=resume)

    def leftover_build(self) -> bool:
        return self.building_path.exists()

    def discard_leftover_build(self) -> None:
        """A build nobody will finish (the live index is good and no rebuild was asked for)."""
        try:
            _remove(self.building_path)
        except OSError as exc:
            _log.info("index %s: could not remove %s yet: %s", self.spec.name, self.building_path, exc)

    def swap_in(self, build: IndexBuild) -> None:
        """Make a complete build the live index: two renames, the old index kept until they are done.

        When a rename is refused (a lock), the old index is put back and opened again, and
        IndexLockedError is raised; the build is left in its folder.
        """
        build.complete()
        self._close_index()
        live, retired = self.path, self.retired_path
        moved = False
        try:
            if retired.exists() or retired.is_symlink():
                _remove(retired)
            if live.exists() or live.is_symlink():
                self._rename(live, retired)
                moved = True
            self._rename(build.path, live)
        except OSError as exc:
            if moved and not live.exists():
                with contextlib.suppress(OSError):
                    self._rename(retired, live)
            with contextlib.suppress(IndexLockedError):
                self.open()
            raise IndexLockedError(f"cannot swap in the rebuilt {self.spec.name} index: {one_line(exc)}") from exc
        try:
            _remove(retired)
        except OSError as exc:  # removed at the next start
            _log.info("index %s: could not remove the old index yet: %s", self.spec.name, exc)
        outcome = self.open()
        if outcome != "opened":
            raise ValueError(f"the rebuilt {self.spec.name} index cannot be opened: {self.problem}")

    # -- writing -----------------------------------------------------------------------------
    def _require_writer(self) -> tantivy.IndexWriter:
        if self._writer is None and self.writable and self._index is not None:
            self._writer = _new_writer(self._index)  # the replacement of a writer that died
        if self._writer is None:
            raise ValueError(f"index {self.spec.name} is not open for writing")
        return self._writer

    def stage(self, docs: Sequence[dict[str, Any]], delete_ids: Sequence[int], *, upsert: bool) -> None:
        _stage(self.spec, self._require_writer(), docs, delete_ids, upsert=upsert)
        if docs and self._newest_id is not None:
            self._newest_id = max(self._newest_id, max(int(doc["id"]) for doc in docs))

    def commit(self) -> None:
        self._commit_writer(self._require_writer())
        assert self._index is not None
        self._index.reload()

    def stage_compaction(self) -> None:
        """Start rewriting the whole index: every document is dropped, and the caller stages the live ones.

        A deleted document's words stay in its segment's files until tantivy merges that segment; tantivy-py
        cannot ask for a merge, so a compaction rewrites the index in one commit, after which the old
        segments (and every word of the deleted documents) are gone. A rollback undoes it whole.
        """
        self._require_writer().delete_all_documents()

    def collect_garbage(self) -> None:
        with contextlib.suppress(ValueError):  # a file still locked is collected next time
            self._require_writer().garbage_collect_files()

    def deleted_docs(self) -> int:
        """Documents deleted but still in their segments' files (tantivy records them in meta.json)."""
        try:
            meta = json.loads((self.path / "meta.json").read_text(encoding="utf-8"))
            return sum(int((seg.get("deletes") or {}).get("num_deleted_docs", 0)) for seg in meta.get("segments", []))
        except (OSError, ValueError, TypeError, AttributeError):
            return 0

    def doc_freq(self, field_name: str, word: str) -> int:
        """How many documents the index files still hold with `word` (deleted ones included until merged)."""
        index = self._index
        if index is None:
            return 0
        index.reload()
        return int(index.searcher().doc_freq(field_name, word))

    def _commit_writer(self, writer: tantivy.IndexWriter) -> None:
        """The one call that touches the files; a seam for fault-injection tests."""
        writer.commit()

    def rollback(self) -> None:
        if self._writer is not None:
            self._writer.rollback()

    def recover_writer(self) -> None:
        """Replace a writer whose worker thread died: dropping it releases tantivy's writer lock."""
        if self._index is None or not self.writable:
            return
        self._writer = None
        self._writer = _new_writer(self._index)

    # -- reading -----------------------------------------------------------------------------
    def search(self, text: str, limit: int, place: str | tuple[str, ...] | None = None) -> list[tuple[int, float]]:
        """BM25 hits (id, score), best first; `place` keeps documents of that place (or of any of several).

        Raises IndexUnavailableError when the index is not open (see `IndexCommitter.unavailable_reason`).
        """
        index = self._index
        if index is None:
            raise IndexUnavailableError(f"the {self.spec.name} search index is not open ({self.problem or 'closed'})")
        if limit <= 0:  # tantivy panics (PanicException, a BaseException) on a limit of 0
            return []
        searcher = index.searcher()
        planned = query_plan.plan(
            self._schema,
            searcher,
            text,
            self.spec.search_fields,
            self._newest(searcher),
            floor=self.common_floor,
        )
        if planned is not None:
            hits = self._top(searcher, planned.query, limit, place)
            if not planned.windowed or len(hits) >= limit:
                return hits
        return self._top(searcher, self._query(index, text), limit, place)

    def _top(
        self, searcher: tantivy.Searcher, query: tantivy.Query, limit: int, place: str | tuple[str, ...] | None
    ) -> list[tuple[int, float]]:
        if place is not None:
            places = (place,) if isinstance(place, str) else place
            where = tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "place", p)) for p in places]
            )
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), (tantivy.Occur.Must, where)])
        result = searcher.search(query, limit, count=False)
        hits = result.hits
        ids = searcher.fast_field_values("id", [address for _score, address in hits])
        return [(int(i), float(score)) for (score, _a), i in zip(hits, ids, strict=True) if i is not None]

    def _newest(self, searcher: tantivy.Searcher) -> tantivy.Query | None:
        """A query for the newest documents (query_plan.newest_ids). The highest id is found by sorting the
        id column once per open (tens of ms at a million documents), then follows what this process stages."""
        if int(searcher.num_docs) < self.common_floor:
            return None  # nothing is common in an index this small: no plan needs it
        if self._newest_id is None:
            found = searcher.search(tantivy.Query.all_query(), 1, count=False, order_by_field="id").hits
            ids = searcher.fast_field_values("id", [address for _order, address in found])
            self._newest_id = int(ids[0]) if ids and ids[0] is not None else None
        if self._newest_id is None:
            return None
        if self._newest_query[0] != self._newest_id:
            self._newest_query = (
                self._newest_id,
                query_plan.newest_ids(self._schema, self._newest_id, self.common_window),
            )
        return self._newest_query[1]

    def _query(self, index: tantivy.Index, text: str) -> tantivy.Query:
        """The user's words over the search fields; each CJK run, the phrase of its bigrams (any one
        of them may match, as any one word may)."""
        fields = list(self.spec.search_fields)
        # The user's words never name a field: "0:*" would be an exists-query on a field "0", which the
        # lenient parser accepts and the search then refuses (ValueError). The tokenizer splits at ":" anyway.
        text = text.replace(":", " ")
        if not self.spec.cjk_sources or CJK_RUN.search(text) is None:
            query, _errors = index.parse_query_lenient(text, fields)
            return query
        rest, runs = split_cjk(text)
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        if rest.strip():
            latin, _errors = index.parse_query_lenient(rest, fields)
            clauses.append((tantivy.Occur.Should, latin))
        for run in dict.fromkeys(runs):
            clauses.append((tantivy.Occur.Should, self._run_query(run)))
        return tantivy.Query.boolean_query(clauses)

    def _run_query(self, run: str) -> tantivy.Query:
        grams = bigrams(run)
        if len(run) == 1:  # a one-character word: alone, or in any bigram
            return tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, CJK_FIELD, run)),
                    (tantivy.Occur.Should, tantivy.Query.regex_query(self._schema, CJK_FIELD, f"{run}.|.{run}")),
                ]
            )
        if len(grams) == 1:
            return tantivy.Query.term_query(self._schema, CJK_FIELD, grams[0])
        words: list[str | tuple[int, str]] = list(grams)
        return tantivy.Query.phrase_query(self._schema, CJK_FIELD, words)

    def num_docs(self) -> int:
        index = self._index
        if index is None:
            return 0
        index.reload()
        return int(index.searcher().num_docs)

    def all_ids(self) -> set[int]:
        """Every document id in the index (for the reconciler)."""
        index = self._index
        if index is None:
            return set()
        index.reload()
        return _all_ids(index)

    def committed_at(self) -> float | None:
        """When the files last took a commit (tantivy rewrites meta.json with each), as a POSIX time;
        None when there is no index yet. Survives a restart, unlike the committer's own clock."""
        try:
            return (self.path / "meta.json").stat().st_mtime
        except OSError:
            return None

    def disk_usage(self) -> int:
        """Bytes the index's files take: the live folder, and a rebuild's folder while there is one."""
        total = 0
        for folder in (self.path, self.building_path):
            total += _folder_bytes(folder)
        return total


def _folder_bytes(folder: Path) -> int:
    """The size of every file under `folder` (0 when it is not there; a file that vanishes meanwhile counts 0)."""
    total = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                total += _folder_bytes(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


def _all_ids(index: tantivy.Index) -> set[int]:
    searcher = index.searcher()
    total = int(searcher.num_docs)
    if total == 0:
        return set()
    hits = searcher.search(tantivy.Query.all_query(), total, count=False).hits
    return {int(i) for i in searcher.fast_field_values("id", [a for _s, a in hits]) if i is not None}


def _stage(
    spec: IndexSpec,
    writer: tantivy.IndexWriter,
    docs: Sequence[dict[str, Any]],
    delete_ids: Sequence[int],
    *,
    upsert: bool,
) -> None:
    for doc_id in delete_ids:
        writer.delete_documents_by_term("id", doc_id)
    for doc in docs:
        if upsert:
            writer.delete_documents_by_term("id", doc["id"])
        writer.add_document(_document(spec, doc))


class IndexBuild:
    """A new index built from SQL in the sibling folder `<name>.building`; blocking, executor only.

    Its progress (the SQL id it has reached) is written beside its files after each commit, so a build
    a crash or a close cut short resumes where it stopped; the first batch after resuming is replayed
    as upserts (the commit may have landed before its progress was written). `complete()` writes the
    format file, which marks the folder as a usable index for the swap (and for finishing a swap a
    crash interrupted).
    """

    def __init__(self, live: FtsIndex, *, resume: bool) -> None:
        self.path = live.building_path
        self.spec = live.spec
        self.watermark = 0
        self.resumed = False
        self._schema = live.spec.build_schema()
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None
        try:
            if not (resume and self._resume()):
                if self.path.exists() or self.path.is_symlink():
                    _remove(self.path)
                self.path.mkdir(parents=True)
                self._index = tantivy.Index(self._schema, path=str(self.path), reuse=False)
            assert self._index is not None
            self._writer = _new_writer(self._index)
        except (OSError, ValueError) as exc:
            self.close()
            if isinstance(exc, ValueError) and not is_transient(exc):
                raise
            raise IndexLockedError(
                f"cannot build the {self.spec.name} index beside the old one: {one_line(exc)}"
            ) from exc

    def _resume(self) -> bool:
        try:
            progress = json.loads((self.path / _BUILD_PROGRESS).read_text(encoding="utf-8"))
            if progress.get("schema_version") != self.spec.schema_version:
                return False
            watermark = int(progress["watermark"])
        except FileNotFoundError:
            return False
        except (ValueError, KeyError, TypeError, AttributeError):
            return False
        try:
            self._index = tantivy.Index(self._schema, path=str(self.path), reuse=True)
        except ValueError as exc:
            if is_transient(exc):
                raise
            return False
        self.watermark = watermark
        self.resumed = watermark > 0
        _log.info("index %s: resuming the build beside the live index from row %d", self.spec.name, watermark)
        return True

    def add(self, docs: Sequence[dict[str, Any]], reached: int, *, upsert: bool) -> None:
        """Stage and commit `docs`, then record that the build reached SQL id `reached`."""
        writer = self._require_writer()
        try:
            _stage(self.spec, writer, docs, [], upsert=upsert)
            self._commit_writer(writer)
        except ValueError:
            with contextlib.suppress(ValueError):
                writer.rollback()
            raise
        _write_json(self.path / _BUILD_PROGRESS, {"schema_version": self.spec.schema_version, "watermark": reached})
        self.watermark = reached

    def _commit_writer(self, writer: tantivy.IndexWriter) -> None:
        """The one call that commits build files; a seam for tests that hold a build half-way."""
        writer.commit()

    def _require_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            raise ValueError(f"the {self.spec.name} index build is closed")
        return self._writer

    def complete(self) -> None:
        """Close the build's writer and mark the folder as a complete index of this format."""
        if self._writer is not None:
            self._writer.wait_merging_threads()
            self._writer = None
        self._index = None
        _write_json(self.path / _META, {"schema_version": self.spec.schema_version})

    def num_docs(self) -> int:
        if self._index is None:
            return 0
        self._index.reload()
        return int(self._index.searcher().num_docs)

    def close(self) -> None:
        """Stop writing; the folder stays to be resumed."""
        if self._writer is not None:
            with contextlib.suppress(ValueError):
                self._writer.wait_merging_threads()
        self._writer = None
        self._index = None

    def abandon(self) -> None:
        """Stop and remove the folder: the live index stays exactly as it was."""
        self.close()
        try:
            _remove(self.path)
        except OSError as exc:  # cleaned at the next start
            _log.info("index %s: could not remove the abandoned build yet: %s", self.spec.name, exc)


class _OwnerLock:
    """An OS file lock held by the one process that writes an index, for its whole life.

    It is taken before anything in the index folder is touched, so a second process (the CLI while
    the window runs, or another version of Familiar) can never wipe or rebuild a live index. The OS
    releases it when the process dies, even on kill -9.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self.taken = False  # the last acquire found it held by another process

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        """True when taken (or already held); False when another process holds it. OSError when the
        lock file cannot be made or opened (a locked or read-only folder)."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if sys.platform == "win32":
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            self.taken = True
            return False
        self._fd = fd
        self.taken = False
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if sys.platform == "win32":
                import msvcrt

                with contextlib.suppress(OSError):
                    msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            else:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class IndexTiming:
    """How often a committer looks at SQL for other processes' writes, compacts after removals, and
    compares itself with SQL; and how long it waits before trying a locked index again: the first
    wait, doubled after each refusal up to the longest (seconds)."""

    poll_interval: float = 1.0
    compact_after: float = 5.0
    reconcile_every: float = 300.0
    locked_retry_first: float = 0.5
    locked_retry_max: float = 15.0
