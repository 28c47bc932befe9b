"""A locked index folder at start-up is never taken for corruption, and a rebuild never touches the
old index before the new one is complete (issue 8, item 3; issue 9, pane 5's rebuild semantics).

Real tantivy and SQLite under tmp_path. Locks are real where the OS can make them (`chattr +i`, which
stops root too; `chmod`, which does not stop root); the Windows antivirus refusal is injected at the
one seam that opens index files, with the message tantivy gives.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import tantivy

from app.memory.errors import IndexUnavailableError, RebuildCancelledError
from app.memory.facts import NewFact
from app.memory.fts import FACTS, TURNS, FtsIndex, IndexBuild, IndexSpec, IndexTiming
from app.memory.history import History
from app.memory.records import IndexHealth
from tests.memory.helpers import PLACE, T0, turn
from tests.memory.test_fts import FLUSH, Folder, _immutable, assert_fully_indexed, fill, ids_for, wait_for

QUICK = IndexTiming(poll_interval=0.05, locked_retry_first=0.05, locked_retry_max=0.2)
# What tantivy says when Windows refuses a file an antivirus scanner holds, opening an index.
OPEN_ACCESS_DENIED = (
    "Failed to open file for read: 'IoError { io_error: Custom { kind: PermissionDenied, error: PathError {"
    ' path: "C:\\\\Users\\\\owner\\\\AppData\\\\Local\\\\Familiar\\\\default\\\\fts\\\\turns\\\\meta.json",'
    ' err: Os { code: 5, kind: PermissionDenied, message: "Access is denied." } } }\''
)


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path / "familiar")


def snapshot(path: Path) -> dict[str, str]:
    """Every file under `path` with a digest of its bytes."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() for p in path.rglob("*") if p.is_file()
    }


async def with_data(folder: Folder) -> tuple[list[int], int]:
    """A familiar with 20 lantern turns and one fact, both indexes caught up; closed again."""
    history = await folder.open()
    try:
        ids = await fill(history, 20)
        outcome = await history.insert_fact(
            NewFact("alice keeps a lantern on the quay", "episodic", 6, 0.9, ("discord:7001",), PLACE)
        )
        assert outcome.fact is not None
        await history.catch_up(FLUSH)
        return ids, outcome.fact.id
    finally:
        await history.close()


@contextmanager
def immutable(*paths: Path) -> Iterator[None]:
    """chattr +i on each path (skips the test where the filesystem cannot); always undone."""
    done: list[Path] = []
    try:
        for path in paths:
            if not _immutable(path, True):
                pytest.skip("chattr +i is not available on this filesystem")
            done.append(path)
        yield
    finally:
        for path in done:
            _immutable(path, False)


def states(healths: list[IndexHealth], name: str) -> list[str]:
    seen: list[str] = []
    for health in healths:
        if health.name == name and (not seen or seen[-1] != health.state):
            seen.append(health.state)
    return seen


# -- a locked folder at start-up --------------------------------------------------------------------------


@pytest.mark.parametrize("unfinished_rebuild", [False, True], ids=["plain", "rebuild-flag-left-by-a-one-shot-command"])
@pytest.mark.asyncio
async def test_an_immutable_index_folder_at_start_up_degrades_and_heals(
    folder: Folder, unfinished_rebuild: bool
) -> None:
    """The antivirus race on Linux: the index folders refuse every change while the familiar starts.
    With the rebuild flag set (what a one-shot command used to leave behind), the old code took the
    refusal for corruption, tried to delete the folder and died with a traceback."""
    kept, fact_id = await with_data(folder)
    if unfinished_rebuild:
        history = await folder.open()
        await history.store.set_index_state(
            "turns", watermark=kept[-1], schema_version=TURNS.schema_version, rebuilding=True
        )
        await history.close()
    turns_dir, facts_dir = folder.fts / "turns", folder.fts / "facts"
    before = snapshot(turns_dir), snapshot(facts_dir)
    with immutable(turns_dir, facts_dir):
        history = await folder.open(index_timing=QUICK)
        try:
            # It started: SQL is the truth, and conversation goes on.
            added = await fill(history, 4, word="beacon", start=100)
            await wait_for(lambda: history.turns_index.state == "locked")
            health = history.index_health()
            assert health.locked_attempts >= 1
            # The refused file, or the writer a worker thread's refusal killed (replaced on the next try).
            assert any(m in (health.last_error or "") for m in ("Operation not permitted", "index writer was killed"))
            assert health.state_line().startswith(f"locked, retrying (attempt {health.locked_attempts}), last error: ")
            # Searches answer: the index for what it has, the store for what it lacks.
            assert await ids_for(history, "beacon") == added
            assert await ids_for(history, "lantern") == kept
            assert [f.id for f, _s in await history.recall("lantern", PLACE)] == [fact_id]
            with pytest.raises(IndexUnavailableError, match="locked"):
                await history.turns_index.flush(FLUSH)  # nobody waits for a lock
            await history.catch_up(FLUSH)  # returns at once: searches answer from the store meanwhile
            assert (snapshot(turns_dir), snapshot(facts_dir)) == before, "the locked index was left as it was"
        except BaseException:
            await history.close()
            raise
    # The lock goes: the index heals by itself and holds everything.
    try:
        await wait_for(lambda: history.turns_index.state == "ready", timeout=FLUSH)
        await history.catch_up(FLUSH)
        await assert_fully_indexed(history)
        hits = await asyncio.to_thread(history.turns_index.index.search, "beacon", 100)
        assert sorted(i for i, _s in hits) == added
        assert history.index_health().locked_attempts == 0
        assert (await history.store.index_state("turns"))[2] is False
    finally:
        await history.close()
    seen = states(folder.healths, "turns")
    assert "locked" in seen
    assert seen[-1] == "ready"


@pytest.mark.asyncio
async def test_an_immutable_fts_folder_without_an_index_starts_and_builds_once_free(folder: Folder) -> None:
    """Nothing to open and no room to make anything (not even the owner lock): start, answer from the
    store, and build the index when the folder lets go."""
    history = await folder.open()
    ids = await fill(history, 6)
    await history.close()
    for child in list(folder.fts.iterdir()):
        if child.is_dir():
            import shutil

            shutil.rmtree(child)
        else:
            child.unlink()
    with immutable(folder.fts):
        history = await folder.open(index_timing=QUICK)
        try:
            assert history.turns_index.state == "locked"
            assert not history.turns_index.owns_index
            assert await ids_for(history, "lantern") == ids
            await history.append_turn(turn("a late lantern", message_id=50))
        except BaseException:
            await history.close()
            raise
    try:
        await wait_for(lambda: history.turns_index.state == "ready", timeout=FLUSH)
        assert history.turns_index.owns_index
        await history.catch_up(FLUSH)
        await assert_fully_indexed(history)
        assert len(await ids_for(history, "lantern")) == 7
    finally:
        await history.close()


def _writes_refused(folder: Path) -> bool:
    probe = folder / ".probe"
    try:
        probe.write_bytes(b"x")
    except OSError:
        return True
    probe.unlink()
    return False


@pytest.mark.asyncio
async def test_a_read_only_index_folder_degrades_and_heals(folder: Folder) -> None:
    """chmod a-w on the index folders. As root chmod stops nothing, so there the folders are also made
    immutable (chattr), and the test is skipped where neither refuses a write."""
    kept, _fact = await with_data(folder)
    folders = [folder.fts / "turns", folder.fts / "facts"]
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in folders}
    before = [snapshot(p) for p in folders]
    for path in folders:
        path.chmod(0o555)
    chattred: list[Path] = []
    try:
        if not _writes_refused(folders[0]):  # root: chmod is not enough
            for path in folders:
                if not _immutable(path, True):
                    pytest.skip("writes are not refused here: running as root and chattr +i is not available")
                chattred.append(path)
        history = await folder.open(index_timing=QUICK)
        try:
            added = await fill(history, 3, word="beacon", start=100)
            await wait_for(lambda: history.turns_index.state == "locked")
            assert await ids_for(history, "beacon") == added
            assert [snapshot(p) for p in folders] == before
        except BaseException:
            await history.close()
            raise
    finally:
        for path in chattred:
            _immutable(path, False)
        for path, mode in modes.items():
            path.chmod(mode)
    try:
        await wait_for(lambda: history.turns_index.state == "ready", timeout=FLUSH)
        await history.catch_up(FLUSH)
        await assert_fully_indexed(history)
        assert await ids_for(history, "lantern") == kept
    finally:
        await history.close()


class RefusingIndex(FtsIndex):
    """A real index that refuses to open, as Windows does while an antivirus scanner holds its files."""

    def __init__(self, path: Path, spec: IndexSpec, refusals: int) -> None:
        super().__init__(path, spec)
        self.refusals = refusals
        self.opens = 0

    def _open_tantivy(self, path: Path) -> tantivy.Index:
        self.opens += 1
        if self.refusals > 0:
            self.refusals -= 1
            raise ValueError(OPEN_ACCESS_DENIED)
        return super()._open_tantivy(path)


@pytest.mark.asyncio
async def test_an_index_refused_at_open_is_retried_with_backoff_not_rebuilt(folder: Folder) -> None:
    """The Windows antivirus race at start-up: three refusals, then the file is free. The old code
    took the first refusal for an unreadable index and wiped it."""
    kept, _fact = await with_data(folder)
    before = snapshot(folder.fts / "turns")
    index = RefusingIndex(folder.fts / "turns", TURNS, refusals=3)
    history = await folder.open(index=index, index_timing=QUICK)
    try:
        assert history.turns_index.state == "locked"
        assert await ids_for(history, "lantern") == kept  # the store answers meanwhile
        added = await fill(history, 2, word="beacon", start=100)
        await wait_for(lambda: history.turns_index.state == "ready", timeout=FLUSH)
        locked = [h for h in folder.healths if h.name == "turns" and h.state == "locked"]
        assert [h.locked_attempts for h in locked][:1] == [1]
        assert max(h.locked_attempts for h in locked) == 3
        assert all("Access is denied" in (h.last_error or "") for h in locked)
        assert index.opens == 4
        health = history.index_health()
        assert health.rebuilt_at_start is False, "a lock is not corruption"
        assert (health.state, health.locked_attempts, health.last_error) == ("ready", 0, None)
        await history.catch_up(FLUSH)
        await assert_fully_indexed(history)
        assert await ids_for(history, "beacon") == added
        health = history.index_health()
        assert health.documents_committed == len(added), "nothing but the new turns was indexed: no rebuild"
        assert set(before) <= set(snapshot(folder.fts / "turns")), "no file of the old index was removed"
    finally:
        await history.close()


# -- real corruption still rebuilds, beside the old index ---------------------------------------------------


class Gate:
    def __init__(self, hold_after: int = 1) -> None:
        self.hold_after = hold_after
        self.commits = 0
        self.reached = threading.Event()
        self.release = threading.Event()

    async def wait_reached(self) -> None:
        assert await asyncio.to_thread(self.reached.wait, FLUSH), "the build never got there"


class HeldBuild(IndexBuild):
    """A build that stops after its first commits until the test lets it go on."""

    def __init__(self, live: FtsIndex, *, resume: bool, gate: Gate) -> None:
        super().__init__(live, resume=resume)
        self.gate = gate

    def _commit_writer(self, writer: tantivy.IndexWriter) -> None:
        super()._commit_writer(writer)
        self.gate.commits += 1
        if self.gate.commits >= self.gate.hold_after:
            self.gate.reached.set()
            assert self.gate.release.wait(FLUSH), "the test never let the build go on"


class HoldingIndex(FtsIndex):
    def __init__(self, path: Path, spec: IndexSpec, gate: Gate) -> None:
        super().__init__(path, spec)
        self.gate = gate

    def begin_build(self, *, resume: bool) -> IndexBuild:
        return HeldBuild(self, resume=resume, gate=self.gate)


@pytest.mark.asyncio
async def test_a_corrupt_index_is_rebuilt_beside_and_the_old_folder_stays_until_the_swap(folder: Folder) -> None:
    kept, _fact = await with_data(folder)
    (folder.fts / "turns" / "meta.json").write_text("{not json", encoding="utf-8")
    before = snapshot(folder.fts / "turns")
    gate = Gate()
    index = HoldingIndex(folder.fts / "turns", TURNS, gate)
    history = await folder.open(index=index, batch_size=5)
    try:
        assert history.index_health().rebuilt_at_start is True
        await gate.wait_reached()
        assert history.turns_index.state == "rebuilding"
        assert snapshot(folder.fts / "turns") == before, "the old index is untouched until the new one is complete"
        assert (folder.fts / "turns.building").is_dir()
        assert await ids_for(history, "lantern") == kept  # the store answers while it is rebuilt
        gate.release.set()
        await history.turns_index.flush(FLUSH)
        assert history.turns_index.state == "ready"
        await assert_fully_indexed(history)
        assert not (folder.fts / "turns.building").exists()
        assert not (folder.fts / "turns.old").exists()
        assert (await history.store.index_state("turns"))[1:] == (TURNS.schema_version, False)
    finally:
        gate.release.set()
        await history.close()


# -- a rebuild the owner asks for: the old index answers until the swap; a cancel changes nothing --------


QUERIES = ("lantern", "number7", "alice", "lantern number3", "beacon")


async def answers(history: History) -> list[Any]:
    out: list[Any] = []
    for query in QUERIES:
        out.append([(h.turn.id, round(h.score, 6)) for h in await history.search_turns(query, limit=100)])
    out.append([(f.id, round(s, 6)) for f, s in await history.search_facts("lantern quay")])
    return out


@pytest.mark.parametrize("how", ["callback", "task"])
@pytest.mark.asyncio
async def test_a_cancelled_rebuild_leaves_the_old_index_answering_exactly_as_before(folder: Folder, how: str) -> None:
    await with_data(folder)
    gate = Gate()
    history = await folder.open(index=HoldingIndex(folder.fts / "turns", TURNS, gate), batch_size=4)
    try:
        await history.catch_up(FLUSH)
        before = await answers(history)
        state_before = await history.store.index_state("turns")
        files_before = snapshot(folder.fts / "turns")
        progress: list[tuple[int, int]] = []
        cancel = threading.Event()
        rebuild = asyncio.create_task(
            history.turns_index.rebuild(lambda d, t: progress.append((d, t)), cancelled=cancel.is_set)
        )
        await gate.wait_reached()
        assert history.turns_index.state == "rebuilding"
        assert await answers(history) == before, "searches answer from the old index during the rebuild"
        if how == "callback":
            cancel.set()
            gate.release.set()
            with pytest.raises(RebuildCancelledError, match="old index answers as before"):
                await rebuild
            assert progress  # it had reported progress before the cancel
        else:
            rebuild.cancel()
            gate.release.set()
            with pytest.raises(asyncio.CancelledError):
                await rebuild
        assert await answers(history) == before
        assert snapshot(folder.fts / "turns") == files_before
        assert not (folder.fts / "turns.building").exists()
        assert await history.store.index_state("turns") == state_before
        assert history.turns_index.state == "ready"
        # The committer goes on as before.
        added = await fill(history, 2, word="beacon", start=100)
        await history.turns_index.flush(FLUSH)
        assert await ids_for(history, "beacon") == added
        await assert_fully_indexed(history)
    finally:
        gate.release.set()
        await history.close()
    # And nothing is resumed at the next start: the cancel cleared the rebuild.
    again = await folder.open()
    try:
        assert again.index_health().rebuilt_at_start is False
    finally:
        await again.close()


@pytest.mark.asyncio
async def test_a_rebuild_answers_from_the_old_index_then_swaps_the_new_one_in(folder: Folder) -> None:
    kept, _fact = await with_data(folder)
    gate = Gate()
    history = await folder.open(index=HoldingIndex(folder.fts / "turns", TURNS, gate), batch_size=4)
    try:
        await history.catch_up(FLUSH)
        await history.redact_message("discord", 3, T0)
        await history.turns_index.flush(FLUSH)
        before = await answers(history)
        rebuild = asyncio.create_task(history.turns_index.rebuild())
        await gate.wait_reached()
        late = await history.append_turn(turn("a lantern lit during the rebuild", message_id=300))
        assert late is not None
        during = await answers(history)
        # The old index answers as before; what it lacks (it takes nothing until the swap) the store adds.
        assert [[hit for hit in hits if hit[0] != late.id] for hits in during] == before
        assert late.id in [i for i, _s in during[0]]
        gate.release.set()
        assert await rebuild == len(kept) - 1 + 1  # the redacted one left out, the late one in
        await history.turns_index.flush(FLUSH)
        await assert_fully_indexed(history)
        assert late.id in await ids_for(history, "lantern")
        assert not (folder.fts / "turns.building").exists()
        assert not (folder.fts / "turns.old").exists()
    finally:
        gate.release.set()
        await history.close()


# -- a crash in the middle ---------------------------------------------------------------------------


def _build_beside(live: Path, spec: IndexSpec, docs: list[dict[str, Any]], *, complete: bool) -> None:
    """A build folder as a rebuild leaves it (complete: the format file written)."""
    owner = FtsIndex(live, spec)
    build = IndexBuild(owner, resume=False)
    build.add(docs, max(d["id"] for d in docs), upsert=False)
    if complete:
        build.complete()
    else:
        build.close()


@pytest.mark.parametrize("complete", [True, False], ids=["between-the-renames", "before-the-build-was-complete"])
@pytest.mark.asyncio
async def test_a_crash_during_a_swap_is_finished_or_undone_at_the_next_start(folder: Folder, complete: bool) -> None:
    kept, _fact = await with_data(folder)
    live = folder.fts / "turns"
    docs = [{"id": i, "place": PLACE, "author": "alice", "content": f"lantern zephyr number{i}"} for i in kept]
    _build_beside(live, TURNS, docs, complete=complete)
    live.rename(folder.fts / "turns.old")  # the crash came right after the first rename
    history = await folder.open()
    try:
        assert live.is_dir()
        assert not (folder.fts / "turns.old").exists()
        assert history.index_health().rebuilt_at_start is False
        await history.catch_up(FLUSH)
        await assert_fully_indexed(history)
        assert await ids_for(history, "lantern") == kept
        # A complete build became the live index (its words are there); an incomplete one was dropped.
        assert await ids_for(history, "zephyr") == (kept if complete else [])
        assert not (folder.fts / "turns.building").exists()
    finally:
        await history.close()


@pytest.mark.asyncio
async def test_a_build_cut_short_by_a_close_is_resumed_at_the_next_start(folder: Folder) -> None:
    kept, _fact = await with_data(folder)
    history = await folder.open()
    await history.store.set_index_state("turns", watermark=kept[-1], schema_version=1, rebuilding=False)
    await history.close()
    gate = Gate(hold_after=2)
    index = HoldingIndex(folder.fts / "turns", TURNS, gate)
    history = await folder.open(index=index, batch_size=6)
    try:
        await gate.wait_reached()
        assert history.turns_index.state == "rebuilding"
    finally:
        closing = asyncio.create_task(history.close())
        await asyncio.sleep(0)
        gate.release.set()
        await closing
    progress = json.loads((folder.fts / "turns.building" / "familiar-build.json").read_text(encoding="utf-8"))
    assert 0 < progress["watermark"] < kept[-1]
    resumed = await folder.open()
    try:
        await resumed.catch_up(FLUSH)
        await assert_fully_indexed(resumed)  # every document exactly once
        assert resumed.turns_index.state == "ready"
        assert (await resumed.store.index_state("turns"))[1:] == (TURNS.schema_version, False)
        assert not (folder.fts / "turns.building").exists()
    finally:
        await resumed.close()


# -- another process: "being rebuilt by another Familiar process" only when that is true --------------------


@pytest.mark.asyncio
async def test_a_reader_says_being_rebuilt_only_while_the_writer_rebuilds(folder: Folder) -> None:
    kept, _fact = await with_data(folder)
    (folder.fts / "turns" / "meta.json").write_text("{not json", encoding="utf-8")
    gate = Gate()
    writer = await folder.open(index=HoldingIndex(folder.fts / "turns", TURNS, gate), batch_size=5)
    try:
        await gate.wait_reached()
        reader = await History.open(folder.db, folder.fts, folder.root / "backups")
        try:
            assert reader.turns_index.state == "reader"
            assert "being rebuilt by another Familiar process" in reader.turns_index.unavailable_reason()
            assert await ids_for(reader, "lantern") == kept  # the store answers
        finally:
            await reader.close()
        gate.release.set()
        await writer.turns_index.flush(FLUSH)
        reader = await History.open(folder.db, folder.fts, folder.root / "backups")
        try:
            assert reader.turns_index.index.is_open
            assert await ids_for(reader, "lantern") == kept
        finally:
            await reader.close()
        # A reader of another index format is not told the index is being rebuilt: it is not.
        newer = FtsIndex(
            folder.fts / "turns", IndexSpec("turns", TURNS.schema_version + 1, TURNS.build_schema, ("content",))
        )
        other = await History.open(folder.db, folder.fts, folder.root / "backups", index=newer)
        try:
            reason = other.turns_index.unavailable_reason()
            assert "being rebuilt" not in reason
            assert f"this Familiar uses format {TURNS.schema_version + 1}" in reason
            assert await ids_for(other, "lantern") == kept
        finally:
            await other.close()
    finally:
        gate.release.set()
        await writer.close()


@pytest.mark.asyncio
async def test_a_reader_adds_what_the_writer_has_not_indexed_yet_from_the_store(folder: Folder) -> None:
    kept, _fact = await with_data(folder)
    # A writer that does not look at SQL for other processes' rows (as if it were locked or busy).
    writer = await folder.open(index_timing=IndexTiming(poll_interval=600))
    try:
        reader = await History.open(folder.db, folder.fts, folder.root / "backups")
        try:
            assert reader.turns_index.state == "reader"
            late = await reader.append_turn(turn("a lantern nobody indexed", message_id=400))
            assert late is not None
            assert late.id not in {
                i for i, _s in await asyncio.to_thread(reader.turns_index.index.search, "lantern", 99)
            }
            assert await ids_for(reader, "lantern") == [*kept, late.id]
        finally:
            await reader.close()
    finally:
        await writer.close()


# -- forget while the index is locked ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_forget_while_the_facts_index_is_locked_succeeds_and_the_text_leaves_it_once_free(
    folder: Folder,
) -> None:
    _kept, fact_id = await with_data(folder)
    facts_dir = folder.fts / "facts"
    with immutable(facts_dir):
        history = await folder.open(index_timing=QUICK)
        try:
            receipt = await history.forget_fact(fact_id)  # never waits for the lock, never raises
            assert receipt.fact_ids == (fact_id,)
            assert await history.search_facts("quay") == []
            assert await history.recall("lantern quay", PLACE) == []
            assert await asyncio.to_thread(history.facts_index.index.doc_freq, "content", "quay") == 1
        except BaseException:
            await history.close()
            raise
    try:
        await wait_for(lambda: history.facts_index.state == "ready", timeout=FLUSH)
        await history.facts_index.purge(FLUSH)
        assert await asyncio.to_thread(history.facts_index.index.doc_freq, "content", "quay") == 0
    finally:
        await history.close()


def test_index_specs_have_a_new_format_for_the_cjk_field() -> None:
    assert (TURNS.schema_version, FACTS.schema_version) == (2, 2)
    assert os.path.basename(str(FtsIndex(Path("x/turns"), TURNS).building_path)) == "turns.building"


REBUILD_CHILD = """
import asyncio, sys
from pathlib import Path
from app.memory.history import History

async def main(root: Path) -> None:
    history = await History.open(root / "history.db", root / "fts", root / "backups", batch_size=40)
    await history.catch_up(60)
    print("ready", flush=True)
    await history.turns_index.rebuild(lambda done, total: print("progress", done, total, flush=True))
    print("done", flush=True)
    await asyncio.sleep(60)

asyncio.run(main(Path(sys.argv[1])))
"""


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_rebuild_killed_half_way_leaves_the_old_index_and_is_finished_at_the_next_start(
    folder: Folder, caplog: pytest.LogCaptureFixture
) -> None:
    import signal
    import sys

    from tests.memory.test_fts import REPO_ROOT

    history = await folder.open()
    try:
        ids = await history.append_turns([turn(f"lantern note number{i}", message_id=i) for i in range(1, 801)])
        await history.catch_up(FLUSH)
    finally:
        await history.close()
    before = snapshot(folder.fts / "turns")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", REBUILD_CHILD, str(folder.root),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO_ROOT,
    )  # fmt: skip
    assert process.stdout is not None
    try:

        async def until_half_way() -> None:
            assert process.stdout is not None
            while True:
                line = (await process.stdout.readline()).decode()
                if not line:
                    raise AssertionError("the child ended early")
                if line.startswith("progress") and int(line.split()[1]) >= 400:
                    return

        await asyncio.wait_for(until_half_way(), 60)
        process.send_signal(signal.SIGKILL)
    finally:
        if process.returncode is None:
            process.kill()
        await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == -signal.SIGKILL
    # The old index is there as it was, and the half-built one beside it.
    assert snapshot(folder.fts / "turns") == before
    assert (folder.fts / "turns.building").is_dir()
    assert (await _index_state(folder))[2] is True
    old = FtsIndex(folder.fts / "turns", TURNS)
    assert old.open(writable=False) == "opened"
    try:
        assert sorted(i for i, _s in old.search("lantern", 1000)) == ids
    finally:
        old.close()
    # The next start finishes the rebuild (resuming it) and swaps it in.
    caplog.set_level("INFO", logger="app.memory.fts")
    again = await folder.open()
    try:
        assert again.index_health().rebuilt_at_start is True
        await again.catch_up(FLUSH)
        assert any("resuming the build beside the live index from row" in r.getMessage() for r in caplog.records)
        await assert_fully_indexed(again)
        assert sorted(h.turn.id for h in await again.search_turns("lantern", limit=1000)) == ids
        assert (await again.store.index_state("turns"))[2] is False
        assert not (folder.fts / "turns.building").exists()
        assert not (folder.fts / "turns.old").exists()
    finally:
        await again.close()


async def _index_state(folder: Folder) -> tuple[int, int, bool]:
    from app.memory.store import Store

    store = await Store.open(folder.db, folder.root / "backups")
    try:
        return await store.index_state("turns")
    finally:
        await store.close()
