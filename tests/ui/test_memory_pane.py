"""Memory controls on the real runtime over a real store: the switches by click and by keyboard with
their inheritance shown, the status-bar light, tombstones (Lift and its undo), receipts, the forgets
still in their undo window; qtmodeltester on every model; a screenshot for review."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from app.memory.catalog import Catalog
from app.memory.facts import NewFact
from app.memory.records import NewTurn
from app.runtime.api.views import FactView
from app.runtime.errors import FamiliarError
from app.runtime.service import Familiar
from app.ui import fact_actions
from app.ui.main_window import MainWindow
from app.ui.models.forgetting_models import short_time
from app.ui.models.switches_model import LEARNING, PLACE, RECALL, SwitchesModel
from app.ui.panes.memory import MemoryPane
from app.ui.widgets.pause_light import PauseLight
from tests.demo_familiar import seed_demo
from tests.ui.support import QT_STRICT, WAIT_MS, Run, make_context, settle

pytestmark = QT_STRICT

GENERAL = "guild:500/501"
HOME = "guild:500/502"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def say(run: Run[Any], familiar: Familiar, place: str, text: str, message_id: int) -> int:
    channel = int(place.rsplit("/", 1)[1]) if place.startswith("guild:") else 0
    turn = run(
        familiar.history.append_turn(
            NewTurn(
                platform="discord", place=place, guild_id=500 if place.startswith("guild:") else None,
                channel_id=channel, message_id=message_id, author_key="discord:7001", author_name="alice",
                content=text, created_at=datetime.now(UTC),
            )
        )
    )  # fmt: skip
    assert turn is not None
    return turn.id


def lantern_club(run: Run[Any], familiar: Familiar) -> None:
    """Two channels of a named server and a DM, known from what was said there."""
    run(Catalog(familiar.history.store).name_places({"guild:500": "Lantern Club", GENERAL: "general", HOME: "home"}))
    say(run, familiar, GENERAL, "good evening", 1)
    say(run, familiar, HOME, "is anyone here?", 2)
    say(run, familiar, "dm:7001", "a quiet word", 3)


def open_pane(qtbot: QtBot, familiar: Familiar) -> MemoryPane:
    pane = MemoryPane(make_context(qtbot, familiar))
    qtbot.addWidget(pane)
    pane.resize(1000, 700)
    pane.show()
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    settle(qtbot)
    return pane


def cells(model: SwitchesModel) -> dict[str, tuple[str, str]]:
    """Place -> (learning, recall), as shown."""

    def shown(row: int, column: int) -> str:
        return str(model.data(model.index(row, column)))

    return {shown(r, PLACE).strip(): (shown(r, LEARNING), shown(r, RECALL)) for r in range(model.rowCount())}


def click(qtbot: QtBot, pane: MemoryPane, place: str, column: int) -> None:
    row = next(r for r in range(pane.switches.rowCount()) if pane.switches.record(r).name == place)
    view = pane.switch_view
    where = view.visualRect(pane.switches.index(row, column)).center()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=where)
    settle(qtbot)


def key(qtbot: QtBot, pane: MemoryPane, which: Qt.Key) -> None:
    qtbot.keyClick(pane.switch_view, which)
    settle(qtbot)


def current(pane: MemoryPane) -> tuple[str, int]:
    index = pane.switch_view.currentIndex()
    return pane.switches.record(index.row()).name, index.column()


def test_a_new_familiar_has_the_everywhere_switches_and_says_where_places_come_from(
    qtbot: QtBot, real_familiar: Familiar
) -> None:
    pane = open_pane(qtbot, real_familiar)
    assert cells(pane.switches) == {"Everywhere": ("● On", "● On")}
    assert pane.no_places.isVisible()
    assert "appear here once the familiar has heard something there" in pane.no_places.text()
    assert pane.tombstone_view.placeholder().startswith("Nothing forgotten yet")
    assert pane.tabs.tabText(0) == "Tombstones (0)"
    assert not pane.lift_button.isEnabled()
    assert not pane.keep_button.isEnabled()


def test_switches_by_click_and_by_keys_show_what_each_place_inherits(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar
) -> None:
    lantern_club(run, real_familiar)
    pane = open_pane(qtbot, real_familiar)
    ModelTester(qtbot).check(pane.switches)
    assert list(cells(pane.switches)) == ["Everywhere", "DM with alice", "Lantern Club", "#general", "#home"]
    assert set(cells(pane.switches).values()) == {("● On", "● On")}
    assert current(pane) == ("Everywhere", LEARNING)  # the cursor starts on a switch: keys work at once

    # A click on the server's recall switch: its channels show they follow it.
    click(qtbot, pane, "Lantern Club", RECALL)
    assert run(real_familiar.controls.state()).recall == ("guild:500",)
    shown = cells(pane.switches)
    assert shown["Lantern Club"][1] == "❚❚ Paused"
    assert shown["#general"][1] == shown["#home"][1] == "❚❚ Paused by the server switch"
    assert shown["DM with alice"][1] == "● On"

    # By keys: down to #general; R there cannot flip an inherited pause, it goes to the server's switch.
    pane.switch_view.setFocus()
    pane.switch_view.setCurrentIndex(pane.switches.index(3, LEARNING))
    key(qtbot, pane, Qt.Key.Key_R)
    assert current(pane) == ("Lantern Club", RECALL)
    assert "paused by its server's switch" in pane.hint.text()
    assert run(real_familiar.controls.state()).recall == ("guild:500",)  # nothing flipped
    key(qtbot, pane, Qt.Key.Key_Space)  # the server's switch: resumed
    assert run(real_familiar.controls.state()).recall == ()
    assert cells(pane.switches)["#general"][1] == "● On"

    # L pauses learning in one channel only; Ctrl+Z (the window's undo) flips it back.
    pane.switch_view.setCurrentIndex(pane.switches.index(3, PLACE))
    key(qtbot, pane, Qt.Key.Key_L)
    assert run(real_familiar.controls.state()).learning == (GENERAL,)
    assert cells(pane.switches)["#general"][0] == "❚❚ Paused"
    assert cells(pane.switches)["#home"][0] == "● On"
    assert current(pane) == ("#general", LEARNING)
    assert run(pane.context.undo.undo())
    settle(qtbot)
    assert run(real_familiar.controls.state()).learning == ()
    assert cells(pane.switches)["#general"][0] == "● On"

    # Everywhere, by Enter on its cell: every place says so.
    pane.switch_view.setCurrentIndex(pane.switches.index(0, RECALL))
    key(qtbot, pane, Qt.Key.Key_Return)
    assert run(real_familiar.controls.state()).recall == ("*",)
    shown = cells(pane.switches)
    assert shown["Everywhere"][1] == "❚❚ Paused"
    assert {shown[p][1] for p in ("DM with alice", "Lantern Club", "#general")} == {
        "❚❚ Paused by the everywhere switch"
    }
    ModelTester(qtbot).check(pane.switches)


def test_the_status_bar_light_shows_any_pause_on_every_pane_and_opens_the_controls(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar
) -> None:
    lantern_club(run, real_familiar)
    window = MainWindow(real_familiar)
    qtbot.addWidget(window)
    window.show()
    settle(qtbot)
    light = window.pause_light
    assert window.current_pane.name == "dashboard"
    assert not light.isVisible()

    run(real_familiar.controls.pause("learning", HOME))  # from elsewhere (a CLI command, another pane)
    qtbot.waitUntil(lambda: light.isVisible(), timeout=WAIT_MS)
    assert light.text() == "● Learning paused in Lantern Club #home"
    run(real_familiar.controls.pause("recall"))
    qtbot.waitUntil(lambda: "recall" in light.text(), timeout=WAIT_MS)
    assert light.text() == "● Learning paused in Lantern Club #home; recall paused everywhere"
    assert "Recall paused everywhere" in light.toolTip()
    assert "Click to open Memory controls" in light.toolTip()

    window.show_pane("chat")
    assert light.isVisible()  # on every pane
    qtbot.mouseClick(light, Qt.MouseButton.LeftButton)
    assert window.current_pane.name == "memory"
    light.setFocus()
    window.show_pane("dashboard")
    qtbot.keyClick(light, Qt.Key.Key_Space)  # by keyboard too
    assert window.current_pane.name == "memory"
    settle(qtbot)

    run(real_familiar.controls.resume("recall"))
    run(real_familiar.controls.resume("learning", HOME))
    qtbot.waitUntil(lambda: not light.isVisible(), timeout=WAIT_MS)
    settle(qtbot)


def remembered(run: Run[Any], familiar: Familiar, text: str, message_id: int) -> FactView:
    turn_id = say(run, familiar, GENERAL, f"psst: {text}", message_id)
    outcome = run(
        familiar.history.insert_fact(
            NewFact(text, "episodic", 6, 0.9, ("discord:7001",), GENERAL, source_turn_ids=(turn_id,))
        )
    )
    assert outcome.fact is not None
    return run(familiar.memory.fact(outcome.fact.id)).fact


def shown_text(model: Any) -> str:
    return json.dumps(
        [
            [str(model.data(model.index(r, c))) for c in range(model.columnCount())]
            + [str(model.data(model.index(r, c), Qt.ItemDataRole.ToolTipRole)) for c in range(model.columnCount())]
            for r in range(model.rowCount())
        ]
    )


def test_tombstones_and_receipts_are_content_free_and_lift_is_undoable(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar
) -> None:
    lantern_club(run, real_familiar)
    secret = remembered(run, real_familiar, "alice's vault code is 4417", 10)
    run(real_familiar.memory.forget(secret.id, redact_sources=True))
    pane = open_pane(qtbot, real_familiar)
    for model in (pane.tombstones, pane.receipts, pane.waiting):
        ModelTester(qtbot).check(model)

    assert pane.tabs.tabText(0) == "Tombstones (1)"
    row = [str(pane.tombstones.data(pane.tombstones.index(0, c))) for c in range(pane.tombstones.columnCount())]
    assert row[1:] == ["alice", "Lantern Club", "#1", "Yes"]  # learned in #general, recalled server-wide
    assert row[0] == short_time(run(real_familiar.memory.tombstones())[0].created_at)  # "1 Dec 14:05", local
    assert "4417" not in shown_text(pane.tombstones)

    pane.tabs.setCurrentIndex(1)
    assert pane.tabs.tabText(1) == "Receipts (1)"
    erased = str(pane.receipts.data(pane.receipts.index(0, 4)))
    assert "1 version of the fact" in erased
    assert "1 message it came from (text erased)" in erased
    assert "4417" not in shown_text(pane.receipts)
    pane.receipt_view.setCurrentIndex(pane.receipts.index(0, 0))
    assert "Receipt #1: a fact about alice in Lantern Club, forgotten" in pane.receipt_detail.text()
    assert "  1 entry in the facts search index" in pane.receipt_detail.text()

    # Lift by keyboard (Del on the tombstone): it leaves the list; Ctrl+Z puts it back in force.
    pane.tabs.setCurrentIndex(0)
    pane.tombstone_view.setFocus()
    assert pane.tombstone_view.currentIndex().row() == 0  # the cursor is on the first row already
    assert pane.lift_button.isEnabled()
    qtbot.keyClick(pane.tombstone_view, Qt.Key.Key_Delete)
    qtbot.waitUntil(lambda: pane.tombstones.rowCount() == 0, timeout=WAIT_MS)
    assert run(real_familiar.memory.tombstones()) == []
    assert pane.context.undo.notices.notices()[-1].text.startswith("Lifted the tombstone “alice · Lantern Club")
    assert run(pane.context.undo.undo())
    qtbot.waitUntil(lambda: pane.tombstones.rowCount() == 1, timeout=WAIT_MS)
    with pytest.raises(FamiliarError, match="tombstone"):
        run(real_familiar.memory.remember("alice's vault code is 4417", GENERAL, subjects=("discord:7001",)))


def test_a_tombstone_without_its_key_says_it_cannot_block(qtbot: QtBot, run: Run[Any], real_familiar: Familiar) -> None:
    lantern_club(run, real_familiar)
    run(real_familiar.memory.forget(remembered(run, real_familiar, "alice hums off key", 11).id))
    # As an import without the key leaves it (app.memory.tombstone_keys): hashed with a key not on this machine.
    run(real_familiar.history.store.write([("UPDATE tombstones SET key_id = ?", ("0123456789abcdef",))]))
    pane = open_pane(qtbot, real_familiar)
    blocks = pane.tombstones.index(0, 4)
    assert pane.tombstones.data(blocks) == "No: its key is not on this machine"
    assert "cannot stop it being learned again" in pane.tombstones.data(blocks, Qt.ItemDataRole.ToolTipRole)


def test_a_forget_in_its_undo_window_is_listed_and_can_be_kept(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar
) -> None:
    lantern_club(run, real_familiar)
    fact = remembered(run, real_familiar, "alice's cat is called Ash", 12)
    pane = open_pane(qtbot, real_familiar)
    assert pane.tabs.tabText(2) == "Being forgotten (0)"
    step = fact_actions.forget(real_familiar.memory, fact, undo_seconds=60)
    run(pane.context.undo.perform(step))
    qtbot.waitUntil(lambda: pane.waiting.rowCount() == 1, timeout=WAIT_MS)
    assert pane.tabs.tabText(2) == "Being forgotten (1)"
    row = [str(pane.waiting.data(pane.waiting.index(0, c))) for c in range(3)]
    assert row[0] == "“alice's cat is called Ash”"
    assert row[1].startswith("in ")
    assert row[2] == "kept"
    ModelTester(qtbot).check(pane.waiting)

    pane.tabs.setCurrentIndex(2)
    qtbot.mouseClick(pane.keep_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: pane.waiting.rowCount() == 0, timeout=WAIT_MS)
    assert run(real_familiar.memory.scheduled_forgets()) == []
    assert run(real_familiar.memory.fact(fact.id)).fact.status == "active"
    assert run(pane.context.undo.undo())  # forgotten again, with a fresh undo window
    qtbot.waitUntil(lambda: pane.waiting.rowCount() == 1, timeout=WAIT_MS)
    assert [s.fact_id for s in run(real_familiar.memory.scheduled_forgets())] == [fact.id]
    run(real_familiar.memory.cancel_forget(run(real_familiar.memory.scheduled_forgets())[0].id))
    settle(qtbot)


def test_memory_controls_screenshot(qtbot: QtBot, run: Run[Any], real_familiar: Familiar) -> None:
    """The demo familiar with recall paused on its server: for a human to look at, at two sizes."""
    seeding = asyncio.ensure_future(seed_demo(real_familiar))
    qtbot.waitUntil(seeding.done, timeout=60_000)
    seeding.result()
    run(real_familiar.controls.pause("recall", "guild:500"))
    window = MainWindow(real_familiar, pane="memory")
    qtbot.addWidget(window)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for size, name in (((1100, 700), "memory_pane.png"), ((900, 600), "memory_pane_small.png")):
        window.resize(*size)
        window.show()
        qtbot.waitUntil(lambda: window.current_pane.is_loaded, timeout=WAIT_MS)
        settle(qtbot)
        qtbot.waitUntil(lambda: window.pause_light.isVisible(), timeout=WAIT_MS)
        assert window.grab().save(str(ARTIFACTS / name))
    pane = window.pane_of(MemoryPane)
    pane.tabs.setCurrentIndex(1)
    pane.receipt_view.setCurrentIndex(pane.receipts.index(0, 0))
    assert window.grab().save(str(ARTIFACTS / "memory_pane_receipts.png"))
    fact = run(real_familiar.memory.list_facts())[0]
    run(window.undo.perform(fact_actions.forget(real_familiar.memory, fact, undo_seconds=60)))
    qtbot.waitUntil(lambda: pane.waiting.rowCount() == 1, timeout=WAIT_MS)
    pane.tabs.setCurrentIndex(2)
    assert window.grab().save(str(ARTIFACTS / "memory_pane_forgetting.png"))
    run(window.undo.undo())
    assert cells(pane.switches)["#general"] == ("● On", "❚❚ Paused by the server switch")
    assert cells(pane.switches)["#familiar-home"] == ("❚❚ Paused", "❚❚ Paused by the server switch")
    assert isinstance(window.pause_light, PauseLight)
    assert (
        window.pause_light.text() == "● Learning paused in Lantern Club #familiar-home; recall paused in Lantern Club"
    )
    run(window.shutdown())
