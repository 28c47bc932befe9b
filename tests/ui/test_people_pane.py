"""The People pane over the real runtime and the demo familiar: each person by name, their dossier per place,
the facts behind it with their sources, forget from there, open a pending one in the queue; the empty state;
qtmodeltester on its models; a screenshot."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from app.runtime.api.views import FactView, PersonRef, PersonView, PlaceRef, SourceMessage
from app.runtime.service import Familiar
from app.ui.dialogs.forget_dialog import ForgetDialog
from app.ui.main_window import MainWindow
from app.ui.models.dossier_facts_model import DossierFactsModel, FactRow, status_text
from app.ui.models.people_model import PeopleModel
from app.ui.panes.base import PaneState
from app.ui.panes.pending import PendingPane
from app.ui.panes.people import PeoplePane
from app.ui.screenshot import save_screenshot
from tests.demo_familiar import DemoFacts, seed_demo
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import WAIT_MS, Run, settle

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.qt_log_level_fail("WARNING"),
    pytest.mark.qt_log_ignore(r"This plugin does not support (propagateSizeHints|raise)\(\)"),
]

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
SEED_MS = 30_000


def seeded(qtbot: QtBot, familiar: Familiar) -> DemoFacts:
    task = asyncio.ensure_future(seed_demo(familiar))
    qtbot.waitUntil(task.done, timeout=SEED_MS)
    return task.result()


class Windows:
    def __init__(self, qtbot: QtBot, facade: FakeFacade) -> None:
        self.qtbot = qtbot
        self.facade = facade
        self.opened: list[MainWindow] = []

    def open(self) -> PeoplePane:
        window = MainWindow(self.facade)
        # Shut down (cancel what its handlers still run) before pytest-qt closes and deletes it.
        self.qtbot.addWidget(window, before_close_func=self._shut)
        window.resize(1100, 700)
        self.opened.append(window)
        with self.qtbot.waitActive(window, timeout=WAIT_MS):
            window.show()
            window.activateWindow()
        pane = window.show_pane("people")
        assert isinstance(pane, PeoplePane)
        self.qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
        settle(self.qtbot)
        # carol asked the demo's last question; these tests read bob's dossiers: choose him.
        row = next((r for r, name in enumerate(names(pane)) if name == "bob"), None)
        if row is not None and pane.person_name.text() != "bob":
            pane.people_view.setCurrentIndex(pane.proxy.index(row, 0))
            self.qtbot.waitUntil(lambda: pane.person_name.text() == "bob", timeout=WAIT_MS)
            settle(self.qtbot)
        return pane

    @property
    def window(self) -> MainWindow:
        return self.opened[-1]

    def _shut(self, window: QWidget) -> None:
        assert isinstance(window, MainWindow)
        task = asyncio.ensure_future(window.shutdown())
        self.qtbot.waitUntil(task.done, timeout=WAIT_MS)


@pytest.fixture
def windows(qtbot: QtBot, memory_facade: FakeFacade) -> Windows:
    return Windows(qtbot, memory_facade)


def names(pane: PeoplePane) -> list[str]:
    return [pane.proxy.index(r, 0).data() for r in range(pane.proxy.rowCount())]


def tabs(pane: PeoplePane) -> list[str]:
    return [pane.scope_tabs.tabText(i) for i in range(pane.scope_tabs.count())]


def facts(pane: PeoplePane) -> list[tuple[str, str]]:
    model = pane.facts_model
    return [(model.index(r, 0).data(), model.index(r, 1).data()) for r in range(model.rowCount())]


def test_each_person_by_name_with_a_dossier_per_place_and_the_facts_behind_it(
    qtbot: QtBot, real_familiar: Familiar, windows: Windows
) -> None:
    seeded(qtbot, real_familiar)
    pane = windows.open()
    assert names(pane) == ["carol", "bob", "alice", "Wisp (this familiar)"]  # most recently seen first
    assert pane.person_name.text() == "bob"  # chosen by the test
    assert tabs(pane) == ["Lantern Club", "DM with bob"]
    assert pane.dossier.text() == "bob: owns Pepper, a fourteen-year-old cat; shops at the harbour market."
    assert facts(pane) == [
        ("bob's cat Pepper is fourteen years old.", "current"),
        ("bob has a cat called Pepper.", "current"),
        ("Always call bob 'Captain Bob' in #familiar-home.", "pending"),
        ("bob's cat Pepper is 14 and climbs curtains.", "pending"),
        ("bob's cat Pepper has a cough.", "pending"),
    ]
    sources = pane.sources.toPlainText()
    assert "Pepper is fourteen now and still climbs the curtains." in sources
    assert "bob in Lantern Club #general" in sources

    pane.facts_view.setCurrentIndex(pane.facts_model.index(4, 0))
    assert "Does anyone know a good vet near the harbour? Pepper has a cough." in pane.sources.toPlainText()
    assert pane.open_button.isEnabled()

    pane.scope_tabs.setCurrentIndex(1)  # the DM: a dossier of its own, recalled only there
    assert pane.dossier.text() == "bob (in DMs): trusts Wisp with secrets; is planning something for carol."
    assert facts(pane) == [("bob is planning a surprise party for carol on the 14th.", "pending")]
    assert "Between us: I am planning a surprise party" in pane.sources.toPlainText()


def test_choosing_and_filtering_people(qtbot: QtBot, real_familiar: Familiar, windows: Windows) -> None:
    seeded(qtbot, real_familiar)
    pane = windows.open()
    assert pane.choose_person("alice")
    qtbot.waitUntil(lambda: pane.person_name.text() == "alice", timeout=WAIT_MS)
    settle(qtbot)
    assert tabs(pane) == ["Lantern Club"]
    assert pane.dossier.text().startswith("alice: moved from Porto to Lisbon")
    assert facts(pane) == [
        ("alice lives in Lisbon.", "current"),
        ("alice prefers green tea in the mornings.", "pending"),
    ]
    assert "Big news: I am moving again, to Lisbon this time" in pane.sources.toPlainText()

    assert pane.choose_person("carol")
    qtbot.waitUntil(lambda: pane.person_name.text() == "carol", timeout=WAIT_MS)
    settle(qtbot)
    assert "No dossier written for carol in Lantern Club yet" in pane.dossier.text()
    assert facts(pane)[0] == ("carol is vegetarian.", "current")

    qtbot.keyClick(pane.people_view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert pane.filter.hasFocus()
    qtbot.keyClicks(pane.filter, "AL")
    assert names(pane) == ["alice"]
    qtbot.keyClicks(pane.filter, "x")
    assert names(pane) == []


def test_forget_a_fact_from_a_dossier_and_undo_it(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    pane.facts_view.setFocus()
    pane.facts_view.setCurrentIndex(pane.facts_model.index(1, 0))  # "bob has a cat called Pepper."
    qtbot.keyClick(pane.facts_view, Qt.Key.Key_Delete)
    found: list[ForgetDialog] = []
    window = windows.window
    qtbot.waitUntil(lambda: bool(found.extend(window.findChildren(ForgetDialog)) or found), timeout=WAIT_MS)
    qtbot.waitUntil(found[0].forget_button.isEnabled, timeout=WAIT_MS)
    found[0].forget_button.click()
    qtbot.waitUntil(lambda: "bob has a cat called Pepper." not in [f for f, _s in facts(pane)], timeout=WAIT_MS)
    assert [s.fact_id for s in run(real_familiar.memory.scheduled_forgets())] == [demo.active["pepper"]]
    window.undo.undo_action.trigger()
    qtbot.waitUntil(lambda: "bob has a cat called Pepper." in [f for f, _s in facts(pane)], timeout=WAIT_MS)
    settle(qtbot)
    assert run(real_familiar.memory.scheduled_forgets()) == []


def test_o_opens_a_pending_fact_in_the_pending_queue(qtbot: QtBot, real_familiar: Familiar, windows: Windows) -> None:
    demo = seeded(qtbot, real_familiar)
    pane = windows.open()
    pane.facts_view.setFocus()
    pane.facts_view.setCurrentIndex(pane.facts_model.index(4, 0))  # "bob's cat Pepper has a cough." (pending)
    qtbot.keyClick(pane.facts_view, Qt.Key.Key_O)
    window = windows.window
    pending = window.current_pane
    assert isinstance(pending, PendingPane)
    qtbot.waitUntil(lambda: pending.is_loaded and pending.current_item() is not None, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: pending.current_item().fact.id == demo.pending["vet"], timeout=WAIT_MS)  # type: ignore[union-attr]
    assert pending.list_view.hasFocus()


def test_o_on_a_snoozed_fact_shows_the_snoozed_in_the_queue(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, windows: Windows
) -> None:
    demo = seeded(qtbot, real_familiar)
    vet = run(real_familiar.memory.fact(demo.pending["vet"])).fact
    run(real_familiar.memory.snooze(vet.id, vet.revision, datetime.now(UTC) + timedelta(days=3)))
    pane = windows.open()
    row = next(r for r in range(pane.facts_model.rowCount()) if pane.facts_model.record(r).fact.id == vet.id)
    assert pane.facts_model.index(row, 1).data().startswith("snoozed until")
    pane.facts_view.setCurrentIndex(pane.facts_model.index(row, 0))
    pane.open_button.click()
    pending = windows.window.current_pane
    assert isinstance(pending, PendingPane)
    qtbot.waitUntil(
        lambda: pending.current_item() is not None and pending.current_item().fact.id == vet.id, timeout=WAIT_MS
    )  # type: ignore[union-attr]
    assert pending.show_snoozed_box.isChecked()


def test_the_familiars_own_name_fits_in_a_small_window(qtbot: QtBot, real_familiar: Familiar, windows: Windows) -> None:
    seeded(qtbot, real_familiar)
    pane = windows.open()
    windows.window.resize(900, 600)
    settle(qtbot)
    view = pane.people_view
    wisp = view.fontMetrics().horizontalAdvance("Wisp (this familiar)")
    assert view.columnWidth(0) >= wisp + 8  # not elided to "Wisp (this ..."
    assert view.viewport().width() >= sum(view.columnWidth(c) for c in range(3))  # nor scrolled sideways


def test_nobody_yet(qtbot: QtBot, real_familiar: Familiar, windows: Windows) -> None:
    pane = windows.open()
    assert pane.state is PaneState.EMPTY
    assert pane.state_text().startswith("Nobody yet. People appear here once they talk")


def test_people_pane_screenshot(qtbot: QtBot, real_familiar: Familiar) -> None:
    seeded(qtbot, real_familiar)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for size, name in (((1100, 700), "people_pane.png"), ((900, 600), "people_pane_small.png")):
        task = asyncio.ensure_future(save_screenshot(real_familiar, "people", ARTIFACTS / name, size))
        qtbot.waitUntil(task.done, timeout=WAIT_MS * 3)
        assert task.result().stat().st_size > 10_000


NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BOB = PersonRef("discord:7002", "bob")


def fact(fact_id: int, status: str = "active") -> FactView:
    return FactView(
        id=fact_id, content=f"bob fact {fact_id}", type="semantic", importance=5, confidence=0.9, subjects=(BOB,),
        speaker=BOB, scope=PlaceRef("guild:500", "Lantern Club"), status=status, revision=1,  # type: ignore[arg-type]
        origin="extraction", created_at=NOW, superseded_at=None, superseded_by=None, valid_from=None, valid_to=None,
        snoozed_until=None, source_turn_ids=(fact_id,),
    )  # fmt: skip


def test_people_and_dossier_facts_models(qtmodeltester: ModelTester) -> None:
    people = PeopleModel()
    qtmodeltester.check(people, force_py=True)
    people.set_records(
        [
            PersonView(BOB, False, NOW - timedelta(days=9), NOW, 2, ()),
            PersonView(PersonRef("familiar:self", "Wisp"), True, NOW, NOW, 0, ()),
        ]
    )
    assert people.index(1, 0).data() == "Wisp (this familiar)"
    assert people.index(0, 1).data() == "2"
    people.set_records([])

    rows = DossierFactsModel()
    source = SourceMessage(1, BOB, PlaceRef("guild:500/501", "Lantern Club #general"), "hi", NOW, redacted=False)
    rows.set_records([FactRow(fact(1), (source,)), FactRow(fact(2, "pending"), ())])
    assert status_text(rows.record(0)) == "current"
    assert rows.index(1, 1).data() == "pending"
    assert rows.record(1).is_pending


def test_people_models_pass_the_model_tester(qtmodeltester: ModelTester) -> None:
    rows = DossierFactsModel()
    rows.set_records([FactRow(fact(1), ()), FactRow(fact(2, "pending"), ())])
    qtmodeltester.check(rows, force_py=True)
    rows.replace_record(FactRow(fact(2), ()))
    rows.remove_keys([1])
    rows.set_records([])
