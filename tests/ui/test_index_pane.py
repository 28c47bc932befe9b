"""The index health pane (issue 9, pane 5) on the real runtime (real SQLite and tantivy in tmp_path):
each index against the store, a lock shown amber live with its attempts and green again with the retries
it took, a rebuild and a re-embed with determinate progress, each cancelled half-way through the pane
with searches (and vectors) exactly as before, coverage and a model mismatch, keys, qtmodeltester, and
screenshots saved to tests/artifacts/ for a human to look at."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QPushButton, QWidget
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.memory.facts import NewFact
from app.memory.fts import TURNS
from app.runtime.api.indexes import REBUILD_ELSEWHERE
from app.runtime.events import ChangeKind
from app.runtime.service import Familiar
from app.ui.bridge import THROTTLE_MS
from app.ui.main_window import MainWindow
from app.ui.models.index_health import IndexMetricsModel, Level
from app.ui.panes import index as index_module
from app.ui.panes.index import (
    REBUILD_CANCELLED,
    REBUILD_KEY,
    REBUILD_TEXT,
    REEMBED_CANCELLED,
    REEMBED_KEY,
    REEMBED_TEXT,
    IndexPane,
)
from app.ui.progress import BlockingProgress
from app.ui.screenshot import save_screenshot
from app.ui.theme import DARK, LIGHT
from tests.memory.test_fts import fill
from tests.memory.test_index_lock import Gate, HoldingIndex, immutable, snapshot
from tests.runtime.index_support import HASH_EMBEDDINGS, HeldEmbedder, open_familiar, workers
from tests.ui.support import QT_STRICT, WAIT_MS, make_context, settle

pytestmark = QT_STRICT

T = TypeVar("T")
LONG_MS = 20_000  # what the runtime does on a loaded machine: a lock's retries, a rebuild, a model load
SLOW = pytest.mark.timeout(90)
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
PLACE = "guild:500/501"
ALICE = "discord:7001"
QUERIES = ("lantern", "quay", "glows", "number3")


class Runtime:
    """Runs coroutines on the session's qasync loop from a sync test, with a generous bound, and closes
    the familiars it opened."""

    def __init__(self, qtbot: QtBot, paths: FamiliarPaths) -> None:
        self.qtbot = qtbot
        self.paths = paths
        self.opened: list[Familiar] = []

    def __call__(self, coroutine: Coroutine[Any, Any, T], timeout: int = LONG_MS) -> T:
        task = asyncio.ensure_future(coroutine)
        self.qtbot.waitUntil(task.done, timeout=timeout)
        return task.result()

    def open(self, extra: str = "", **knobs: Any) -> Familiar:
        familiar = self(open_familiar(self.paths, extra, **knobs))
        self.opened.append(familiar)
        return familiar

    def close(self, familiar: Familiar) -> None:
        self.opened.remove(familiar)
        self(familiar.close())


@pytest.fixture
def runtime(qtbot: QtBot, tmp_path: Path) -> Iterator[Runtime]:
    made = Runtime(qtbot, FamiliarPaths(root=tmp_path / "home", name="default"))
    yield made
    for familiar in reversed(made.opened):
        made(familiar.close())


def shown_pane(qtbot: QtBot, familiar: Familiar) -> IndexPane:
    pane = IndexPane(make_context(qtbot, familiar))
    qtbot.addWidget(pane)
    pane.resize(1000, 700)
    pane.show()
    activate(qtbot, pane)  # its keys work in the active window
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=LONG_MS)
    return pane


def activate(qtbot: QtBot, window: QWidget) -> None:
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=WAIT_MS)


def cell(pane: IndexPane, row: str, column: str) -> str:
    model = pane.metrics_model
    headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    found = model.row_of(row)
    assert found is not None, row
    return str(model.index(found, headers.index(column)).data())


def remember(runtime: Runtime, familiar: Familiar, *texts: str) -> list[int]:
    ids = []
    for text in texts:
        outcome = runtime(
            familiar.history.insert_fact(
                NewFact(text, "semantic", 5, 1.0, (ALICE,), PLACE, speaker=ALICE, origin="remember")
            )
        )
        assert outcome.fact is not None
        ids.append(outcome.fact.id)
    return ids


def answers(runtime: Runtime, familiar: Familiar) -> list[Any]:
    """What searches answer now, through the facade: message hits and recalled facts, with scores."""
    out: list[Any] = []
    for query in QUERIES:
        out.append([(h.turn_id, round(h.score, 6)) for h in runtime(familiar.search_turns(query, limit=100))])
        out.append([(r.fact.id, round(r.score, 6)) for r in runtime(familiar.memory.recall(query, PLACE))])
    return out


def progress_dialog(pane: IndexPane) -> BlockingProgress | None:
    dialog = pane.context.window.findChild(BlockingProgress)
    return dialog if dialog is not None and dialog.appeared else None


def cancel_button(dialog: BlockingProgress) -> QPushButton:
    (button,) = [b for b in dialog.findChildren(QPushButton) if b.text() == "Cancel"]
    return button


def grab(pane: IndexPane, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    assert pane.grab().save(str(path)), f"could not save {path}"
    return path


def events(pane: IndexPane) -> list[str]:
    return [e.text for e in pane.events_model.records]


# -- what it shows ---------------------------------------------------------------------------------------


def test_each_index_against_the_store_and_every_model_passes_the_model_tester(
    qtbot: QtBot, runtime: Runtime, qtmodeltester: ModelTester
) -> None:
    familiar = runtime.open(HASH_EMBEDDINGS + workers("fact_embedding"))
    runtime(fill(familiar.history, 12))
    remember(runtime, familiar, "Alice keeps a lantern on the quay", "Alice sings in the harbour choir")
    runtime(familiar.learn_now())
    runtime(familiar.indexes.catch_up())
    pane = shown_pane(qtbot, familiar)

    assert pane.state_text() == ""  # the body shows, not a state page
    assert cell(pane, "state", "Messages") == "Up to date"
    assert cell(pane, "indexed", "Messages") == "12 of 12"
    assert cell(pane, "indexed", "Facts") == "2 of 2"
    assert cell(pane, "indexed", "Embeddings") == "2 of 2 facts (100%)"
    assert cell(pane, "waiting", "Messages") == "none"
    assert cell(pane, "size", "Messages").endswith("KB")
    assert "(just now)" in cell(pane, "last_commit", "Messages") or "s ago)" in cell(pane, "last_commit", "Messages")
    assert pane.headline_label.text().startswith("All indexes are up to date")
    assert [(m.model, m.vectors, m.active) for m in pane.models_model.records] == [("hash:256", 2, True)]
    assert pane.reembed_button.isEnabled()
    for model in (pane.metrics_model, pane.models_model, pane.events_model):
        qtmodeltester.check(model)

    # More talk: the pane follows by itself (a MemoryChanged, then one reload a second later).
    runtime(fill(familiar.history, 3, word="beacon", start=100))
    qtbot.waitUntil(lambda: cell(pane, "indexed", "Messages") == "15 of 15", timeout=LONG_MS)
    qtmodeltester.check(pane.metrics_model)


@SLOW
def test_a_lock_shows_amber_live_with_its_attempts_then_green_with_the_retries_it_took(
    qtbot: QtBot, runtime: Runtime, qtmodeltester: ModelTester
) -> None:
    """The antivirus race, for real on Linux: the turns folder refuses every change for a while."""
    familiar = runtime.open()
    runtime(fill(familiar.history, 3))
    runtime(familiar.indexes.catch_up())
    pane = shown_pane(qtbot, familiar)
    assert pane.headline_label.text().startswith("All indexes are up to date")
    with immutable(runtime.paths.fts / TURNS.name):
        runtime(fill(familiar.history, 4, word="beacon", start=50))
        locked = "Locked, retrying (attempt"
        qtbot.waitUntil(lambda: cell(pane, "state", "Messages").startswith(locked), timeout=LONG_MS)
        assert pane.views["turns"].state == "catching_up"
        assert pane.headline_label.text().startswith("The messages index is locked")
        assert "Retrying (attempt" in pane.headline_label.text()
        assert pane.metrics_model.record(pane.metrics_model.row_of("state") or 0).cells[0].level is Level.BUSY
        assert "a commit was refused; retrying (attempt 2)" in events(pane)
        assert "locked: retrying, while searches read history.db" in events(pane)
        refused = next(e for e in pane.events_model.records if e.text.startswith("a commit was refused"))
        assert refused.detail is not None  # the error, as the tooltip
        first = pane.views["turns"].locked_attempts
        qtbot.waitUntil(lambda: pane.views["turns"].locked_attempts > first, timeout=LONG_MS)  # live, no reload
        assert cell(pane, "refusal", "Messages").startswith("locked now (attempt")
        qtbot.waitUntil(lambda: cell(pane, "waiting", "Messages").startswith("4 (oldest"), timeout=LONG_MS)
        grab(pane, "index_pane_locked.png")
    qtbot.waitUntil(lambda: cell(pane, "state", "Messages") == "Up to date", timeout=LONG_MS)
    qtbot.waitUntil(lambda: cell(pane, "indexed", "Messages") == "7 of 7", timeout=LONG_MS)
    took = pane.views["turns"].recovered_after
    assert took >= 6  # five refused commits, then at least one refused try of the locked index
    assert cell(pane, "refusal", "Messages").startswith(f"refused {took} tries, then landed ")
    assert any(e == f"commits land again, after {took} refused tries" for e in events(pane))
    assert "the lock is gone: indexing again" in events(pane)
    assert pane.headline_label.text().startswith("All indexes are up to date")
    qtmodeltester.check(pane.events_model)


def test_a_stopped_background_loop_turns_the_pane_red_and_names_it(
    qtbot: QtBot, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memory workers, the change poll, an index committer: if one of their tasks dies while the window
    is open, the headline (and its dot) says so in red, naming it, within a few seconds, without a reload."""
    monkeypatch.setattr(index_module, "LIVENESS_MS", 100)
    familiar = runtime.open(workers("rolling_summary"))
    runtime(familiar.start_learning())
    familiar.start_watching()
    pane = shown_pane(qtbot, familiar)
    assert pane.headline_label.text().startswith("All indexes are up to date")
    assert all(t.problem is None for t in pane.tasks)

    async def broken() -> frozenset[ChangeKind]:
        raise RuntimeError("Cannot enter into task while another task is being executed")

    monkeypatch.setattr(familiar.changes, "check", broken)
    qtbot.waitUntil(lambda: pane.headline_label.text().startswith("Stopped: "), timeout=LONG_MS)
    text = pane.headline_label.text()
    assert "the change poll" in text
    assert "Cannot enter into task" in text
    assert DARK.error in pane.headline_dot.styleSheet() or LIGHT.error in pane.headline_dot.styleSheet()
    assert "stopped: the change poll" in " ".join(events(pane))
    assert cell(pane, "state", "Facts") == "Up to date"

    committer = familiar.history.facts_index
    assert committer._task is not None
    committer._task.cancel()
    qtbot.waitUntil(lambda: cell(pane, "state", "Facts") == "Stopped", timeout=LONG_MS)
    state = pane.metrics_model.record(pane.metrics_model.row_of("state") or 0)
    assert state.cells[1].level is Level.FAILING
    assert "the facts index committer" in pane.headline_label.text()
    assert "the change poll" in pane.headline_label.text()
    grab(pane, "index_pane_stopped.png")
    settle(qtbot)


# -- rebuild -----------------------------------------------------------------------------------------------


def held_familiar(runtime: Runtime, gate: Gate) -> Familiar:
    """A familiar whose messages index build stops after `gate.hold_after` commits of 3 documents."""
    index = HoldingIndex(runtime.paths.fts / TURNS.name, TURNS, gate)
    familiar = runtime.open(index=index, batch_size=3)
    runtime(fill(familiar.history, 20))
    remember(runtime, familiar, "Alice keeps a lantern on the quay", "Alice's lantern glows green")
    runtime(familiar.indexes.catch_up())
    return familiar


@SLOW
def test_a_rebuild_cancelled_half_way_through_the_pane_leaves_searches_exactly_as_before(
    qtbot: QtBot, runtime: Runtime
) -> None:
    gate = Gate(hold_after=3)
    familiar = held_familiar(runtime, gate)
    before = answers(runtime, familiar)
    files = snapshot(runtime.paths.fts / TURNS.name)
    pane = shown_pane(qtbot, familiar)
    try:
        qtbot.mouseClick(pane.rebuild_button, Qt.MouseButton.LeftButton)
        assert runtime(asyncio.to_thread(gate.reached.wait, 15))
        qtbot.waitUntil(lambda: progress_dialog(pane) is not None, timeout=LONG_MS)
        dialog = progress_dialog(pane)
        assert dialog is not None
        assert dialog.labelText() == "Rebuilding the messages index (1 of 2)"
        qtbot.waitUntil(lambda: dialog.value() > 0, timeout=WAIT_MS)
        assert 0 < dialog.value() < 100, "determinate, half-way"
        assert dialog.maximum() == 100
        assert answers(runtime, familiar) == before, "searches answer from the old index meanwhile"
        qtbot.mouseClick(cancel_button(dialog), Qt.MouseButton.LeftButton)
    finally:
        gate.release.set()
    qtbot.waitUntil(lambda: pane.result_label.text() == REBUILD_CANCELLED, timeout=LONG_MS)
    settle(qtbot)
    assert answers(runtime, familiar) == before
    assert snapshot(runtime.paths.fts / TURNS.name) == files
    assert not (runtime.paths.fts / "turns.building").exists()
    qtbot.waitUntil(lambda: cell(pane, "state", "Messages") == "Up to date", timeout=LONG_MS)
    assert pane.error_banner.isHidden()
    assert pane.rebuild_button.isEnabled()


@SLOW
def test_a_rebuild_through_the_pane_shows_its_progress_and_what_it_rebuilt(qtbot: QtBot, runtime: Runtime) -> None:
    gate = Gate(hold_after=2)
    familiar = held_familiar(runtime, gate)
    before = answers(runtime, familiar)
    pane = shown_pane(qtbot, familiar)
    try:
        pane.metrics_view.setFocus()
        qtbot.keyClick(pane.metrics_view, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)  # Ctrl+R
        assert runtime(asyncio.to_thread(gate.reached.wait, 15))
        qtbot.waitUntil(lambda: progress_dialog(pane) is not None, timeout=LONG_MS)
        dialog = progress_dialog(pane)
        assert dialog is not None
        qtbot.waitUntil(lambda: 0 < dialog.value() < 100, timeout=WAIT_MS)
        assert not pane.rebuild_button.isEnabled()
        assert not pane.reembed_action.isEnabled()
    finally:
        gate.release.set()
    qtbot.waitUntil(lambda: pane.result_label.text().startswith("Rebuilt at "), timeout=LONG_MS)
    assert pane.result_label.text().endswith(": 20 messages, 2 facts.")
    settle(qtbot)
    assert [sorted(a) for a in answers(runtime, familiar)] == [sorted(a) for a in before]
    qtbot.waitUntil(lambda: cell(pane, "indexed", "Messages") == "20 of 20", timeout=LONG_MS)
    qtbot.wait(3 * THROTTLE_MS)  # the live reports the bridge held back have come in too
    settle(qtbot)
    rebuilt = [(e.index, e.text) for e in pane.events_model.records if e.text == "rebuilt and swapped in"]
    assert sorted(rebuilt) == [("facts", "rebuilt and swapped in"), ("turns", "rebuilt and swapped in")]  # once each


def test_a_familiar_that_does_not_write_the_indexes_points_at_the_rebuild_that_exists(
    qtbot: QtBot, runtime: Runtime
) -> None:
    """`familiar index rebuild` beside the running window is refused with directions to this pane's button."""
    runtime.open()  # the writer, as the window would be
    reader = runtime.open()
    assert f"{IndexPane.title}, then {REBUILD_TEXT}" in REBUILD_ELSEWHERE
    pane = shown_pane(qtbot, reader)
    assert pane.rebuild_button.text() == REBUILD_TEXT
    assert not pane.rebuild_button.isEnabled()
    assert "Another Familiar process writes these indexes" in pane.rebuild_button.toolTip()
    assert pane.headline_label.text().startswith("Another Familiar process writes these indexes")


# -- embeddings ----------------------------------------------------------------------------------------------


def test_coverage_per_model_and_a_model_mismatch_are_shown(
    qtbot: QtBot, runtime: Runtime, qtmodeltester: ModelTester
) -> None:
    familiar = runtime.open(HASH_EMBEDDINGS + workers("fact_embedding"))
    ids = remember(runtime, familiar, "Alice keeps a lantern", "Alice sings in a choir", "Alice moved to Lisbon")
    runtime(familiar.learn_now())
    runtime(familiar.embeddings.put("fastembed:an-earlier-model", 4, [(i, [1.0, 0.0, 0.0, 0.0]) for i in ids[:2]]))
    pane = shown_pane(qtbot, familiar)
    assert cell(pane, "indexed", "Embeddings") == "3 of 3 facts (100%)"
    assert cell(pane, "state", "Embeddings") == "Up to date"
    model = pane.models_model
    rows = [tuple(model.index(r, c).data() for c in range(3)) for r in range(model.rowCount())]
    assert rows == [("fastembed:an-earlier-model", "2 facts", "not used"), ("hash:256", "3 facts", "in use")]
    assert pane.mismatch_label.isVisible()
    assert pane.mismatch_label.text().startswith("Model mismatch: 2 vectors of earlier models are not used")
    qtmodeltester.check(pane.models_model)

    # A new fact the worker has not embedded yet: amber while it catches up.
    remember(runtime, familiar, "Alice drinks tea at dawn")
    runtime(familiar.changes.check())  # what the window's poll publishes: facts changed
    qtbot.waitUntil(lambda: cell(pane, "indexed", "Embeddings") == "3 of 4 facts (75%)", timeout=LONG_MS)


@SLOW
def test_reembed_through_the_pane_cancelled_half_way_keeps_the_old_vectors_then_completes(
    qtbot: QtBot, runtime: Runtime
) -> None:
    familiar = runtime.open(HASH_EMBEDDINGS + workers())  # no worker: nothing makes the vectors
    texts = [f"Alice keeps lantern number {n} on the quay" for n in range(150)]
    remember(runtime, familiar, *texts)
    pane = shown_pane(qtbot, familiar)
    assert cell(pane, "state", "Embeddings") == "Vectors missing"
    assert pane.views  # loaded
    assert "press Re-embed facts" in pane.headline_label.text()
    assert pane.metrics_model.record(pane.metrics_model.row_of("state") or 0).cells[2].level is Level.FAILING
    rows = runtime(familiar.history.store.read_all("SELECT * FROM fact_embeddings"))
    assert rows == []

    held = HeldEmbedder(familiar.embedder, hold_at=2)  # the same model (hash:256), held before its 2nd batch
    try:
        pane.metrics_view.setFocus()
        qtbot.keyClick(pane.metrics_view, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)  # Ctrl+E
        assert runtime(asyncio.to_thread(held.reached.wait, 15))
        qtbot.waitUntil(lambda: progress_dialog(pane) is not None, timeout=LONG_MS)
        dialog = progress_dialog(pane)
        assert dialog is not None
        assert dialog.labelText() == "Re-embedding facts with hash:256"
        qtbot.waitUntil(lambda: 0 < dialog.value() < 100, timeout=WAIT_MS)
        qtbot.mouseClick(cancel_button(dialog), Qt.MouseButton.LeftButton)
    finally:
        held.release.set()
    qtbot.waitUntil(lambda: pane.result_label.text() == REEMBED_CANCELLED, timeout=LONG_MS)
    settle(qtbot)
    assert runtime(familiar.history.store.read_all("SELECT * FROM fact_embeddings")) == rows
    held.hold_at = 0  # never again

    qtbot.mouseClick(pane.reembed_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: pane.result_label.text().startswith("Re-embedded at "), timeout=LONG_MS)
    assert pane.result_label.text().endswith(": 150 facts.")
    qtbot.waitUntil(lambda: cell(pane, "state", "Embeddings") == "Up to date", timeout=LONG_MS)
    assert cell(pane, "indexed", "Embeddings") == "150 of 150 facts (100%)"
    settle(qtbot)


@pytest.mark.timeout(180)
def test_reembed_with_the_offline_fastembed_model(qtbot: QtBot, runtime: Runtime) -> None:
    familiar = runtime.open('[providers.embedding]\nbackend = "fastembed"\n' + workers())
    remember(runtime, familiar, "Alice keeps a lantern on the quay", "Bob bakes rye bread on Saturdays")
    pane = shown_pane(qtbot, familiar)
    assert cell(pane, "indexed", "Embeddings") == "0 of 2 facts (0%)"
    qtbot.mouseClick(pane.reembed_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: pane.result_label.text().startswith("Re-embedded at "), timeout=120_000)
    qtbot.waitUntil(lambda: cell(pane, "indexed", "Embeddings") == "2 of 2 facts (100%)", timeout=LONG_MS)
    assert [m.model for m in pane.models_model.records] == ["fastembed:sentence-transformers/all-MiniLM-L6-v2"]
    settle(qtbot)


# -- keys and looks ------------------------------------------------------------------------------------------


def test_shortcuts_are_shown_and_the_tab_order_runs_down_the_pane(qtbot: QtBot, runtime: Runtime) -> None:
    familiar = runtime.open(HASH_EMBEDDINGS)
    pane = shown_pane(qtbot, familiar)
    assert pane.rebuild_button.toolTip().endswith(f"({REBUILD_KEY})")
    assert pane.reembed_button.toolTip().endswith(f"({REEMBED_KEY})")
    assert pane.reembed_button.text() == REEMBED_TEXT
    assert pane.refresh_button.toolTip().endswith("(F5)")
    chain = [pane.rebuild_button]
    while len(chain) < 6:
        chain.append(chain[-1].nextInFocusChain())
        while not chain[-1].focusPolicy() & Qt.FocusPolicy.TabFocus:
            chain[-1] = chain[-1].nextInFocusChain()
    assert chain == [
        pane.rebuild_button,
        pane.reembed_button,
        pane.refresh_button,
        pane.metrics_view,
        pane.models_view,
        pane.events_view,
    ]
    loads = []
    pane.loaded.connect(lambda: loads.append(1))
    pane.metrics_view.setFocus()
    qtbot.keyClick(pane.metrics_view, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: bool(loads), timeout=LONG_MS)


def test_the_keys_work_wherever_the_focus_is_while_the_pane_shows_and_not_when_it_is_hidden(
    qtbot: QtBot, runtime: Runtime
) -> None:
    """In the window, after picking the pane in the navigation list (the focus stays in the list)."""
    familiar = runtime.open()
    window = MainWindow(familiar)
    qtbot.addWidget(window)
    window.show()
    activate(qtbot, window)
    pane = window.pane_of(IndexPane)
    loads: list[int] = []
    pane.loaded.connect(lambda: loads.append(1))
    window.navigation.setFocus()
    qtbot.keyClick(window.navigation, Qt.Key.Key_F5)  # the dashboard shows: not this pane's key
    settle(qtbot)
    assert loads == []
    window.show_pane("index")
    qtbot.waitUntil(lambda: pane.is_loaded and bool(loads), timeout=LONG_MS)
    window.navigation.setFocus()
    before = len(loads)
    qtbot.keyClick(window.navigation, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: len(loads) > before, timeout=LONG_MS)
    runtime(window.shutdown())


def test_the_metrics_model_is_a_snapshot(qtmodeltester: ModelTester) -> None:
    model = IndexMetricsModel()
    qtmodeltester.check(model)
    assert model.columnCount() == 4
    assert [model.headerData(c, Qt.Orientation.Horizontal) for c in range(4)] == ["", "Messages", "Facts", "Embeddings"]


def test_screenshots_of_the_pane_over_the_demo_familiar(qtbot: QtBot, runtime: Runtime, tmp_path: Path) -> None:
    """`familiar screenshot --pane index` over the demo familiar, embeddings on, after a backend change."""
    from tests.demo_familiar import seed_demo

    familiar = runtime.open(HASH_EMBEDDINGS + workers("fact_embedding"))
    runtime(seed_demo(familiar))
    runtime(familiar.learn_now())
    facts = runtime(familiar.memory.list_facts(limit=3))
    runtime(familiar.embeddings.put("fastembed:an-earlier-model", 4, [(f.id, [0.0, 1.0, 0.0, 0.0]) for f in facts]))
    runtime(familiar.indexes.catch_up())
    for size, name in (((1100, 700), "index_pane.png"), ((900, 600), "index_pane_small.png")):
        out = ARTIFACTS / name
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        runtime(save_screenshot(familiar, "index", out, size))
        assert out.stat().st_size > 10_000
    window = MainWindow(familiar, pane="index")
    qtbot.addWidget(window)
    pane = window.pane_of(IndexPane)
    window.show()
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=LONG_MS)
    assert pane.headline_label.text().startswith("All indexes are up to date")
    assert pane.mismatch_label.isVisible()
    runtime(window.shutdown())


def test_a_reembed_whose_model_cannot_load_says_why_in_one_line_and_changes_nothing(
    qtbot: QtBot, runtime: Runtime, tmp_path: Path
) -> None:
    missing = tmp_path / "no-model-here"
    familiar = runtime.open(f'[providers.embedding]\nbackend = "fastembed"\nmodel_dir = "{missing.as_posix()}"\n')
    remember(runtime, familiar, "Alice keeps a lantern on the quay")
    pane = shown_pane(qtbot, familiar)
    qtbot.mouseClick(pane.reembed_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: pane.result_label.text().startswith("The re-embed did not finish"), timeout=LONG_MS)
    assert pane.error_banner.isVisible()
    message = pane.error_banner.text()
    assert f"the embedding model folder {missing} does not exist" in message
    assert "\n" not in message
    assert runtime(familiar.history.store.read_all("SELECT * FROM fact_embeddings")) == []
    assert cell(pane, "indexed", "Embeddings") == "0 of 1 facts (0%)"
    settle(qtbot)
