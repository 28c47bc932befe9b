"""`facade.indexes` for the index health pane (issue 9, pane 5), on the real runtime (real SQLite and
tantivy in tmp_path): what each index holds against the store, its backlog's age, its last commit and
size; a lock shown as amber with its attempts, then the retries it took; the embeddings' coverage per
model and a model mismatch; a re-embed with progress that swaps its vectors in whole, or, cancelled
half-way, leaves the old ones exactly as they were."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.memory.facts import NewFact
from app.runtime.api.views import IndexStatusView, Progress
from app.runtime.errors import FamiliarError
from app.runtime.events import ChangeKind, IndexHealthReport, MemoryChanged, RuntimeEvent
from app.runtime.index_health import CATCH_UP_GRACE, with_report
from app.runtime.service import Familiar
from tests.memory.test_fts import FLUSH, fill, wait_for
from tests.memory.test_index_lock import immutable
from tests.runtime.index_support import HASH_EMBEDDINGS, HeldEmbedder, open_familiar, workers

pytestmark = pytest.mark.asyncio

PLACE = "guild:500/501"
ALICE = "discord:7001"


class Opened:
    """Opens familiars on one home; closes what is still open at the end."""

    def __init__(self, paths: FamiliarPaths) -> None:
        self.paths = paths
        self.open: list[Familiar] = []

    async def __call__(self, extra: str = "", **knobs: Any) -> Familiar:
        familiar = await open_familiar(self.paths, extra, **knobs)
        self.open.append(familiar)
        return familiar

    async def close(self, familiar: Familiar) -> None:
        self.open.remove(familiar)
        await familiar.close()


@pytest_asyncio.fixture
async def opened(familiar_paths: FamiliarPaths) -> AsyncIterator[Opened]:
    made = Opened(familiar_paths)
    yield made
    for familiar in reversed(made.open):
        await familiar.close()


async def views(familiar: Familiar) -> dict[str, IndexStatusView]:
    return {v.name: v for v in await familiar.indexes.status()}


def files_bytes(folder: Any) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


async def remember(familiar: Familiar, *texts: str) -> list[int]:
    ids = []
    for text in texts:
        outcome = await familiar.history.insert_fact(
            NewFact(text, "semantic", 5, 1.0, (ALICE,), PLACE, speaker=ALICE, origin="remember")
        )
        assert outcome.fact is not None
        ids.append(outcome.fact.id)
    return ids


# -- the search indexes -------------------------------------------------------------------------------


async def test_status_counts_what_each_index_holds_against_the_store(opened: Opened) -> None:
    familiar = await opened()
    started = datetime.now(UTC)
    await fill(familiar.history, 12)
    await remember(familiar, "Alice keeps a lantern on the quay")
    await familiar.indexes.catch_up(FLUSH)
    found = await views(familiar)
    turns, facts = found["turns"], found["facts"]
    assert (turns.indexed, turns.source_rows) == (12, 12)
    assert (facts.indexed, facts.source_rows) == (1, 1)
    assert turns.size_bytes == files_bytes(opened.paths.fts / "turns") > 0
    assert turns.last_commit_at is not None
    assert started <= turns.last_commit_at <= datetime.now(UTC)
    assert (turns.state, turns.backlog_since, turns.pending) == ("ok", None, 0)

    # A deleted message leaves the index at once; its words stay in the files until a compaction.
    await familiar.history.redact_message("discord", 1, datetime.now(UTC))
    await familiar.indexes.catch_up(FLUSH)
    turns = (await views(familiar))["turns"]
    assert (turns.indexed, turns.source_rows) == (11, 11)
    assert turns.awaiting_purge == 1


async def test_a_locked_index_is_amber_with_its_attempts_and_says_how_many_retries_it_took(opened: Opened) -> None:
    """The antivirus race on Linux: the folder refuses every change for a while. The old status called
    it "failing" (red) although it heals by itself while searches read the store."""
    familiar = await opened()
    reports: list[IndexHealthReport] = []

    def listen(event: RuntimeEvent) -> None:
        if isinstance(event, IndexHealthReport) and event.name == "turns":
            reports.append(event)

    familiar.subscribe(listen)
    kept = await fill(familiar.history, 3)
    await familiar.indexes.catch_up(FLUSH)
    with immutable(opened.paths.fts / "turns"):
        added = await fill(familiar.history, 4, word="beacon", start=50)
        await wait_for(lambda: familiar.history.turns_index.state == "locked", FLUSH)
        turns = (await views(familiar))["turns"]
        assert turns.state == "catching_up"
        assert turns.health_state == "locked"
        assert turns.locked_attempts >= 1
        assert turns.state_line.startswith(f"locked, retrying (attempt {turns.locked_attempts})")
        assert (turns.to_add, turns.pending) == (4, 4)
        assert turns.backlog_since is not None
        assert turns.indexed == 3  # what it held before the lock still answers
        assert any(r.live_attempt >= 2 for r in reports), "each refused commit was reported live"
        assert any(r.state == "locked" and r.locked_attempts >= 1 for r in reports)
        assert sorted(h.turn_id for h in await familiar.search_turns("beacon")) == added
    await wait_for(lambda: familiar.history.turns_index.state == "ready", FLUSH)
    await familiar.indexes.catch_up(FLUSH)
    turns = (await views(familiar))["turns"]
    assert turns.state == "ok"
    assert (turns.indexed, turns.source_rows) == (7, 7)
    # Five refused commits, then at least one refused try of the locked index.
    assert turns.recovered_after >= 6
    assert turns.recovered_at is not None
    assert turns.last_error is None
    assert turns.backlog_since is None
    assert reports[-1].recovered_after == turns.recovered_after
    assert sorted(h.turn_id for h in await familiar.search_turns("lantern")) == kept


async def test_a_live_report_is_folded_into_the_last_status(opened: Opened) -> None:
    familiar = await opened()
    await fill(familiar.history, 2)
    await familiar.indexes.catch_up(FLUSH)
    now = datetime.now(UTC)
    view = (await views(familiar))["turns"]
    base = IndexHealthReport(
        name="turns", commits=5, documents_committed=2, retries=1, live_attempt=0, failures=0, last_error=None,
        pending=0, lag=0,
    )  # fmt: skip
    retrying = with_report(view, replace(base, live_attempt=2, last_error="Access is denied. (os error 5)"), now)
    assert (retrying.state, retrying.live_attempt, retrying.retries) == ("catching_up", 2, 1)
    assert (retrying.indexed, retrying.source_rows) == (view.indexed, view.source_rows)
    behind = replace(view, pending=30, to_add=30)
    fresh = replace(base, pending=30, lag=30, backlog_since=now - timedelta(seconds=1))
    assert with_report(behind, fresh, now).state == "ok"  # a message just arrived: the index is doing its job
    stale = replace(fresh, backlog_since=now - CATCH_UP_GRACE - timedelta(seconds=1))
    assert with_report(behind, stale, now).state == "catching_up"
    failing = replace(stale, failures=1, last_error="No space left on device (os error 28)")
    assert with_report(behind, failing, now).state == "failing"
    caught_up = with_report(behind, replace(base, recovered_after=3, recovered_at=now), now)
    assert (caught_up.state, caught_up.pending, caught_up.to_add, caught_up.recovered_after) == ("ok", 0, 0, 3)


async def test_a_rebuild_asked_of_a_process_that_does_not_write_the_indexes_says_where_to_do_it(
    opened: Opened,
) -> None:
    writer = await opened()
    reader = await opened()
    assert not reader.history.turns_index.owns_index
    with pytest.raises(FamiliarError, match=r"Index health, then Rebuild indexes") as refused:
        await reader.indexes.rebuild()
    assert "\n" not in str(refused.value)
    assert writer.history.turns_index.state == "ready"


# -- embeddings ----------------------------------------------------------------------------------------


async def test_embedding_coverage_per_model_and_a_model_mismatch(opened: Opened) -> None:
    familiar = await opened(HASH_EMBEDDINGS + workers("fact_embedding"))
    assert familiar.embedder is not None
    model, dim = familiar.embedder.name, familiar.embedder.dim
    ids = await remember(familiar, "Alice keeps a lantern", "Alice sings in a choir", "Alice moved to Lisbon")
    first = await familiar.memory.fact(ids[0])
    view = await familiar.indexes.embeddings()
    assert (view.backend, view.model, view.worker_enabled) == ("hash", model, True)
    assert (view.state, view.facts, view.covered, view.missing) == ("catching_up", 3, 0, 3)
    assert view.oldest_missing_at == first.fact.created_at
    assert view.state_line == f"3 facts still to embed with {model}"

    await familiar.learn_now()
    view = await familiar.indexes.embeddings()
    assert (view.state, view.covered, view.missing, view.coverage) == ("ok", 3, 0, 1.0)
    assert view.oldest_missing_at is None
    assert view.last_written_at is not None
    assert [(m.model, m.vectors, m.current, m.active) for m in view.models] == [(model, 3, 3, True)]
    assert view.size_bytes == 3 * dim * 4

    # Vectors another backend left: not used by any read, shown as a mismatch.
    await familiar.embeddings.put("fastembed:an-earlier-model", 4, [(i, [1.0, 0.0, 0.0, 0.0]) for i in ids[:2]])
    view = await familiar.indexes.embeddings()
    assert view.state == "ok"
    assert view.unused_vectors == 2
    assert [(m.model, m.vectors, m.active) for m in view.models] == [
        ("fastembed:an-earlier-model", 2, False),
        (model, 3, True),
    ]

    # Embeddings off: nothing is missing, every stored vector is unused.
    await opened.close(familiar)
    familiar = await opened()
    view = await familiar.indexes.embeddings()
    assert (view.state, view.model, view.covered, view.missing, view.unused_vectors) == ("off", None, 0, 0, 5)
    assert "5 vectors of an earlier model are not used" in view.state_line

    # The hash backend without the worker: facts without a vector stay so, and that is an error to fix.
    await opened.close(familiar)
    familiar = await opened(HASH_EMBEDDINGS + workers())
    await remember(familiar, "Alice drinks tea in the morning")
    view = await familiar.indexes.embeddings()
    assert (view.state, view.missing, view.worker_enabled) == ("failing", 1, False)
    assert "fact_embedding" in view.state_line


async def test_reembed_recomputes_every_vector_with_progress_and_swaps_them_in_whole(opened: Opened) -> None:
    familiar = await opened(HASH_EMBEDDINGS + workers())
    embedder = familiar.embedder
    assert embedder is not None
    texts = [f"Alice keeps lantern number {n} on the quay" for n in range(150)]
    ids = await remember(familiar, *texts)
    await familiar.embeddings.put(embedder.name, embedder.dim, [(ids[0], [0.0] * embedder.dim)])  # a stale one
    changes: list[MemoryChanged] = []
    familiar.subscribe(lambda e: changes.append(e) if isinstance(e, MemoryChanged) else None)
    steps: list[Progress] = []
    token = object()

    assert await familiar.indexes.reembed(steps.append, initiator=token) == 150

    label = f"Re-embedding facts with {embedder.name}"
    assert steps[0] == Progress(label, 0, 150)
    assert steps[-1] == Progress(label, 150, 150)
    assert [s.done for s in steps] == sorted(s.done for s in steps)
    assert len(steps) == 4  # batches of 64
    stored = await familiar.embeddings.vectors(ids, embedder.name)
    for fact_id, vector in zip(ids, embedder.embed(texts), strict=True):
        assert stored[fact_id] == pytest.approx(vector, abs=1e-6)
    view = await familiar.indexes.embeddings()
    assert [(m.model, m.vectors) for m in view.models] == [(embedder.name, 150)]
    assert any(c.initiator is token and ChangeKind.EMBEDDINGS in c.kinds for c in changes)


async def test_a_reembed_cancelled_half_way_leaves_the_old_vectors_exactly(opened: Opened) -> None:
    familiar = await opened(HASH_EMBEDDINGS + workers())
    assert familiar.embedder is not None
    model, dim = familiar.embedder.name, familiar.embedder.dim
    ids = await remember(familiar, *(f"Alice keeps lantern number {n}" for n in range(150)))
    await familiar.embeddings.put(model, dim, [(i, [float(i % 7)] + [0.5] * (dim - 1)) for i in ids])  # the old ones

    async def rows() -> list[tuple[Any, ...]]:
        return await familiar.history.store.read_all(
            "SELECT fact_id, model, dim, vector, created_at FROM fact_embeddings ORDER BY fact_id, model"
        )

    before = await rows()
    held = HeldEmbedder(familiar.embedder, hold_at=2)  # the same model (hash:256), held before its 2nd batch
    steps: list[Progress] = []
    task = asyncio.create_task(familiar.indexes.reembed(steps.append))
    try:
        assert await asyncio.to_thread(held.reached.wait, FLUSH)
        await wait_for(lambda: len(steps) >= 2)
        assert 0 < steps[-1].done < 150
        view = await familiar.indexes.embeddings()
        assert any(m.reembedding for m in view.models), "the first batch is staged beside the old vectors"
        assert (view.covered, view.state) == (150, "catching_up")
        assert await familiar.embeddings.vectors(ids, model) == {
            i: pytest.approx([float(i % 7)] + [0.5] * (dim - 1)) for i in ids
        }
        task.cancel()
    finally:
        held.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await rows() == before
    assert (await familiar.indexes.embeddings()).models[0].reembedding is False


async def test_reembed_with_embeddings_off_says_what_to_set(opened: Opened) -> None:
    familiar = await opened()
    with pytest.raises(FamiliarError, match=r"embeddings are off: set \[providers.embedding\] backend"):
        await familiar.indexes.reembed()


# -- the background loops ----------------------------------------------------------------------------------
async def test_a_background_loop_that_stops_is_named_with_why_by_the_index_status(
    opened: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loops the window runs (index committers, memory workers, change poll, lorebook watcher, deferred
    forgets) each report whether they run; one that died says so, with its error, until it is started again."""
    familiar = await opened(workers("rolling_summary"))
    assert [(t.name, t.running, t.problem) for t in await familiar.indexes.tasks()] == [
        ("index-committer-turns", True, None),
        ("index-committer-facts", True, None),
        ("memory-projectors", False, None),  # not started yet (a command never starts them): nothing wrong
        ("memory-change-poll", False, None),
        ("lorebook-watch", False, None),
        ("deferred-forgets", False, None),
    ]
    await familiar.start_learning()
    familiar.start_watching()
    tasks = await familiar.indexes.tasks()
    assert all(t.running and t.problem is None for t in tasks), tasks
    assert {t.what for t in tasks} >= {"the memory workers", "the facts index committer"}

    async def broken() -> frozenset[ChangeKind]:
        raise RuntimeError("Cannot enter into task <Task memory-change-poll> while another task is being executed")

    monkeypatch.setattr(familiar.changes, "check", broken)  # an error the poll does not expect kills its task
    await wait_for(lambda: familiar.changes.loop_health().problem is not None)
    committer = familiar.history.facts_index
    assert committer._task is not None
    committer._task.cancel()  # stopped from outside, not by the familiar
    await wait_for(lambda: committer.loop_health().problem is not None)
    stopped = {t.name: t for t in await familiar.indexes.tasks() if t.problem is not None}
    assert set(stopped) == {"memory-change-poll", "index-committer-facts"}
    assert stopped["memory-change-poll"].problem == (
        "stopped: RuntimeError: Cannot enter into task <Task memory-change-poll> while another task is being executed"
    )
    assert stopped["index-committer-facts"].problem == "stopped: its task was cancelled"
    assert not stopped["memory-change-poll"].running
    await familiar.close()
    opened.open.remove(familiar)
    assert all(t.problem is None for t in await familiar.indexes.tasks())  # closing stops them on purpose
