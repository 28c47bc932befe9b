"""The "Why did it say that" pane on the real runtime: replies made through the real openai client against
the fake LLM (and the real discord.py client against the fake Discord), opened from Chat and the
Dashboard; the demo familiar for the states, the lorebook action, the models and the screenshots."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QObject, Qt, QUrl, Slot
from PySide6.QtGui import QColor, QDesktopServices, QPalette
from PySide6.QtWidgets import QApplication, QMenu
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.memory.facts import NewFact
from app.memory.records import NewTurn
from app.runtime.api.views import ExplainedDrop, ExplainedLayer, Explanation, PlaceRef
from app.runtime.events import ActivityKind
from app.runtime.service import Familiar
from app.ui import main_window
from app.ui.dialogs.forget_dialog import ForgetDialog
from app.ui.main_window import MainWindow
from app.ui.models.explain_models import RecalledFactRow, RecalledTurnRow
from app.ui.models.roles import RecordRole
from app.ui.panes.base import PaneState
from app.ui.panes.chat import WHY
from app.ui.panes.explain import ExplainPane, explanation_diff, left_out_text
from app.ui.panes.lorebook import LorebookPane
from app.ui.widgets.token_waterfall import waterfall_rows
from tests.conftest import ALICE, GENERAL, GUILD_ID, TOKEN, write_character_toml
from tests.demo_familiar import GENERAL_PLACE, seed_demo
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM
from tests.ui.support import QT_STRICT, WAIT_MS, Run, settle

pytestmark = [*QT_STRICT[1:], pytest.mark.timeout(90)]

LIVE_WAIT_MS = 10_000
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
KETTLE_LORE = '[[entries]]\ntitle = "Kettle lore"\nkeys = ["kettle"]\ncontent = "The kettle sings in D minor."\n'
Live = tuple[MainWindow, Familiar, FakeDiscord, FakeLLM]


@pytest.fixture
def live(qtbot: QtBot, run: Run[Any], tmp_path: Path) -> Iterator[Live]:
    discord = FakeDiscord(token=TOKEN)
    discord.add_user(ALICE, "alice")
    discord.add_guild(GUILD_ID, "Lantern Club", {GENERAL: "general"})
    llm = FakeLLM()
    run(discord.start())
    run(llm.start())
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(paths, discord.api_base, discord.gateway_url, llm.base_url)
    paths.lorebook_toml.write_text(KETTLE_LORE, encoding="utf-8")
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    familiar = run(Familiar.open(paths, secrets, env={"DISCORD_TOKEN": TOKEN}))
    window = MainWindow(familiar)
    qtbot.addWidget(window)
    window.resize(1100, 800)
    window.show()
    try:
        yield window, familiar, discord, llm
    finally:
        run(window.shutdown())
        run(familiar.close())
        run(llm.close())
        run(discord.close())
    assert discord.unhandled == []
    assert discord.errors == []
    assert llm.unhandled == []


@pytest.fixture
def demo(qtbot: QtBot, real_familiar: Familiar) -> dict[str, int]:
    seeding = asyncio.ensure_future(seed_demo(real_familiar))
    qtbot.waitUntil(seeding.done, timeout=60_000)
    return seeding.result().turns


def say(qtbot: QtBot, window: MainWindow, llm: FakeLLM, text: str, reply: str) -> None:
    chat = window.chat
    window.show_pane("chat")
    qtbot.waitUntil(lambda: chat.is_loaded and not chat.is_waiting, timeout=LIVE_WAIT_MS)
    llm.script(reply)
    chat.input.setText(text)
    chat.send_button.click()
    qtbot.waitUntil(lambda: chat.transcript_model.rowCount() > 0 and _last_is(window, reply), timeout=LIVE_WAIT_MS)


def _last_is(window: MainWindow, reply: str) -> bool:
    entry = window.chat.transcript_model.records[-1]
    return getattr(entry, "content", None) == reply


def explain_pane(window: MainWindow) -> ExplainPane:
    return window.pane_of(ExplainPane)


def wait_shown(qtbot: QtBot, pane: ExplainPane, turn_id: int | None = None) -> None:
    qtbot.waitUntil(
        lambda: (
            pane.is_loaded and pane.explanation is not None and (turn_id is None or pane.explanation.turn_id == turn_id)
        ),
        timeout=LIVE_WAIT_MS,
    )
    settle(qtbot)


def fact_texts(pane: ExplainPane) -> list[str]:
    return [row.content for row in pane.facts_model.records]


def test_a_chat_reply_opened_from_its_menu_shows_what_went_into_it(qtbot: QtBot, run: Run[Any], live: Live) -> None:
    window, familiar, _discord, llm = live
    outcome = run(
        familiar.history.insert_fact(
            NewFact("Alice takes her tea black.", "semantic", 6, 1.0, (f"discord:{ALICE}",), "local", origin="remember")
        )
    )
    assert outcome.fact is not None
    run(familiar.history.facts_index.flush())

    say(qtbot, window, llm, "good morning", "Morning! The club is quiet today.")
    say(qtbot, window, llm, "is the kettle on for tea?", "It is, and it sings in D minor.")
    rows = window.chat.transcript_model.rowCount()
    own = window.chat.message_menu(rows - 2)
    assert own is not None
    assert [a.text() for a in own.actions()] == ["Copy"]  # the owner's own line has no "why"
    menu = window.chat.message_menu(rows - 1)
    assert isinstance(menu, QMenu)
    assert [a.text() for a in menu.actions()] == ["Copy", f"{WHY}\tCtrl+I", "Regenerate\tCtrl+R"]
    menu.actions()[1].trigger()

    pane = explain_pane(window)
    assert window.current_pane is pane
    reply_turn = window.chat.transcript_model.records[-1].turn_id  # type: ignore[union-attr]
    wait_shown(qtbot, pane, reply_turn)
    explanation = pane.explanation
    assert explanation is not None
    assert pane.turn_field.text() == str(reply_turn)
    window.show_pane("chat")  # by keyboard: Ctrl+I in Chat opens the last reply
    window.chat.input.setFocus()
    qtbot.keyClick(window.chat.input, Qt.Key.Key_I, Qt.KeyboardModifier.ControlModifier)
    assert window.current_pane is pane
    wait_shown(qtbot, pane, reply_turn)

    # The waterfall: one row per layer, each starting where the one before ended, adding up to the total.
    rows_drawn = pane.waterfall.rows
    assert [r.name for r in rows_drawn] == [layer.name for layer in explanation.layers]
    assert all(b.start == a.start + a.tokens for a, b in itertools.pairwise(rows_drawn))
    assert pane.waterfall.total == sum(layer.tokens for layer in explanation.layers) > 0
    assert "lorebook" in pane.waterfall.summary()

    # The lore that fired, on its key, highlighted in the message it answered.
    assert [(r.lore.title, r.lore.key, r.matched_in) for r in pane.lore_model.records] == [
        ("Kettle lore", "kettle", "the message it answered")
    ]
    assert pane.answered is not None
    assert pane.answered.content == "is the kettle on for tea?"
    assert pane.highlighted_spans() == [(7, 13)]
    assert ">kettle</span>" in pane.answered_label.text()

    # Against the reply before in the same place: the lore is new.
    assert pane.previous is not None
    assert ("lore", "Kettle lore", "added") in [(r.kind, r.name, r.change) for r in pane.diff_model.records]
    assert pane.diff_model.rowCount() == len(explanation_diff(explanation, pane.previous))

    # Forget a recalled fact through the preview dialog; Undo brings it back.
    assert fact_texts(pane) == ["Alice takes her tea black."]
    pane.facts_view.setCurrentIndex(pane.facts_model.index(0, 0))
    assert pane.forget_button.isEnabled()
    pane.forget_button.click()
    found: list[ForgetDialog] = []
    qtbot.waitUntil(lambda: bool(found.extend(window.findChildren(ForgetDialog)) or found), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: found[0].forget_button.isEnabled(), timeout=WAIT_MS)
    found[0].forget_button.click()
    qtbot.waitUntil(lambda: fact_texts(pane) == ["(forgotten)"], timeout=LIVE_WAIT_MS)
    assert [s.fact_id for s in run(familiar.memory.scheduled_forgets())] == [outcome.fact.id]
    assert run(window.undo.undo())
    qtbot.waitUntil(lambda: fact_texts(pane) == ["Alice takes her tea black."], timeout=LIVE_WAIT_MS)
    assert run(familiar.memory.scheduled_forgets()) == []

    # Pause recall in this place, reflected in the controls; Undo resumes it.
    assert pane.pause_button.text() == "Pause recall here"
    pane.pause_button.click()
    qtbot.waitUntil(lambda: pane.pause_button.text() == "Resume recall here", timeout=LIVE_WAIT_MS)
    assert run(familiar.controls.state()).paused("recall", "local")
    assert run(window.undo.undo())
    qtbot.waitUntil(lambda: pane.pause_button.text() == "Pause recall here", timeout=LIVE_WAIT_MS)
    assert not run(familiar.controls.state()).paused("recall", "local")
    settle(qtbot)


def test_a_discord_reply_opens_from_the_dashboards_activity_log(qtbot: QtBot, run: Run[Any], live: Live) -> None:
    window, _familiar, discord, llm = live
    dashboard = window.dashboard
    dashboard.start_button.click()
    qtbot.waitUntil(lambda: dashboard.state_indicator.text() == "Connected", timeout=LIVE_WAIT_MS)
    llm.script("The kettle is on, alice.")
    run(
        discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="kettle?", mentions_bot=True
        )
    )
    qtbot.waitUntil(
        lambda: any(a.kind is ActivityKind.REPLY_OUT for a in dashboard.activity_model.records), timeout=LIVE_WAIT_MS
    )
    # A second reply in the same channel: the first one's line must still open the first one.
    llm.script("Tea is brewing.")
    run(
        discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="and tea?", mentions_bot=True
        )
    )
    qtbot.waitUntil(
        lambda: sum(a.kind is ActivityKind.REPLY_OUT for a in dashboard.activity_model.records) == 2,
        timeout=LIVE_WAIT_MS,
    )
    records = dashboard.activity_model.records
    assert not dashboard.explain_activity(0) or records[0].kind is ActivityKind.REPLY_OUT
    replies = [(i, a) for i, a in enumerate(records) if a.kind is ActivityKind.REPLY_OUT]
    row, first = min(replies, key=lambda pair: pair[1].turn_id or 0)
    assert first.place == f"guild:{GUILD_ID}/{GENERAL}"
    assert first.turn_id is not None
    assert dashboard.explain_activity(row)
    pane = explain_pane(window)
    assert window.current_pane is pane
    wait_shown(qtbot, pane, first.turn_id)
    assert pane.explanation is not None
    assert pane.explanation.turn_id == first.turn_id  # that reply, not the channel's newest
    assert pane.explanation.place.name == "Lantern Club #general"
    assert [r.lore.key for r in pane.lore_model.records] == ["kettle"]
    assert pane.answered is not None
    assert pane.answered.content == "kettle?"
    assert pane.highlighted_spans() == [(0, 6)]
    dashboard.stop_button.click()
    qtbot.waitUntil(lambda: dashboard.state_indicator.text() == "Stopped", timeout=LIVE_WAIT_MS)
    settle(qtbot)


def test_empty_then_newest_then_an_unknown_turn_id(qtbot: QtBot, run: Run[Any], real_familiar: Familiar) -> None:
    window = MainWindow(real_familiar, pane="explain")
    qtbot.addWidget(window)
    window.show()
    pane = explain_pane(window)
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    assert pane.state is PaneState.EMPTY
    assert pane.state_text() == (
        "No replies yet. When the familiar answers, open a reply here to see what went into it."
    )

    seeding = asyncio.ensure_future(seed_demo(real_familiar))
    qtbot.waitUntil(seeding.done, timeout=60_000)
    turns = seeding.result().turns
    pane.newest_button.click()
    wait_shown(qtbot, pane, turns["lighthouse_reply"])
    assert pane.state is PaneState.READY

    qtbot.keyClicks(pane.turn_field, "987654")
    pane.turn_field.clear()
    qtbot.keyClicks(pane.turn_field, "987654")
    qtbot.keyClick(pane.turn_field, "\r")
    qtbot.waitUntil(lambda: pane.is_loaded and pane.state is PaneState.ERROR, timeout=WAIT_MS)
    assert "turn 987654 has no explanation" in pane.state_text()
    assert pane.turn_field.isVisible()  # the id can be corrected from the error state

    pane.turn_field.setText(str(turns["vet_reply"]))
    pane.open_button.click()
    wait_shown(qtbot, pane, turns["vet_reply"])
    assert pane.previous is None
    assert pane.diff_model.rowCount() == 0
    assert "first reply kept for this place" in pane.diff_view.placeholder()
    run(window.shutdown())


def test_the_demo_reply_dropped_lore_diff_models_and_edit_entry(
    qtbot: QtBot,
    run: Run[Any],
    real_familiar: Familiar,
    demo: dict[str, int],
    qtmodeltester: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A window without the Lorebook pane, for Edit entry's other way: lorebook.toml itself.
    monkeypatch.setattr(main_window, "PANES", tuple(p for p in main_window.PANES if p.name != "lorebook"))
    window = MainWindow(real_familiar)
    qtbot.addWidget(window)
    window.show()
    window.dashboard.navigate_requested.emit("explain", GENERAL_PLACE)  # a place: its newest reply
    pane = explain_pane(window)
    wait_shown(qtbot, pane, demo["lighthouse_reply"])
    assert next((d.title, d.reason) for d in pane.dropped_model.records) == ("Harbour market", "entry cap")
    assert pane.dropped_model.index(0, 2).data() == "the lorebook takes at most 2 entries"  # the engine's own words
    matched = {r.lore.title: r.matched_in for r in pane.lore_model.records}
    assert matched == {"Wisp": "always on (constant)", "The lighthouse": "the message it answered"}
    assert pane.answered is not None
    at = pane.answered.content.index("lighthouse")  # carol's question
    assert pane.highlighted_spans() == [(at, at + len("lighthouse"))]
    changes = [(r.kind, r.name, r.change) for r in pane.diff_model.records]
    assert ("dropped", "Harbour market", "now left out (entry cap)") in changes
    assert any(kind == "layer" and name == "history" for kind, name, _c in changes)
    assert all(r.used for r in pane.facts_model.records)
    assert {r.content for r in pane.facts_model.records} >= {"bob's cat Pepper is fourteen years old."}
    assert "general" in pane.header.text()

    for model in (pane.lore_model, pane.dropped_model, pane.facts_model, pane.turns_model, pane.diff_model):
        assert model.rowCount() > 0 or model is pane.turns_model
        qtmodeltester.check(model, force_py=True)
    assert isinstance(pane.facts_model.index(0, 0).data(RecordRole), RecalledFactRow)
    vet = run(real_familiar.memory.sources([demo["vet"]]))[0]
    pane.turns_model.set_records(
        [
            RecalledTurnRow(vet.turn_id, vet.author, vet.content, vet.created_at, 0.5, {"bm25": 0.5}),
            RecalledTurnRow(vet.turn_id, None, "(deleted)", None, 0.25, {}, used=False),
        ]
    )
    qtmodeltester.check(pane.turns_model, force_py=True)
    assert pane.turns_model.index(0, 1).data() == "bob"
    assert pane.turns_model.index(1, 4).data() == "no: just below the cutoff"

    # Edit entry: no Lorebook pane in this window, so lorebook.toml itself (the URL, not the OS action).
    opened: list[QUrl] = []

    class Catcher(QObject):
        @Slot(QUrl)
        def open(self, url: QUrl) -> None:
            opened.append(url)

    catcher = Catcher()
    QDesktopServices.setUrlHandler("file", catcher, "open")
    try:
        row = next(i for i, r in enumerate(pane.lore_model.records) if r.lore.title == "The lighthouse")
        pane.lore_view.setCurrentIndex(pane.lore_model.index(row, 0))
        assert pane.edit_lore_button.isEnabled()
        pane.edit_lore_button.click()
    finally:
        QDesktopServices.unsetUrlHandler("file")
    assert [u.toLocalFile() for u in opened] == [str(real_familiar.home / "lorebook.toml")]
    run(window.shutdown())


def _dark_palette() -> QPalette:
    palette = QPalette()
    for role, colour in (
        (QPalette.ColorRole.Window, "#202124"),
        (QPalette.ColorRole.WindowText, "#e8eaed"),
        (QPalette.ColorRole.Base, "#2a2b2e"),
        (QPalette.ColorRole.AlternateBase, "#323336"),
        (QPalette.ColorRole.Text, "#e8eaed"),
        (QPalette.ColorRole.Button, "#303134"),
        (QPalette.ColorRole.ButtonText, "#e8eaed"),
    ):
        palette.setColor(role, QColor(colour))
    return palette


def test_explain_pane_screenshots(qtbot: QtBot, real_familiar: Familiar, demo: dict[str, int]) -> None:
    """The demo's newest reply, light and dark, small and large: for a human to look at."""
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    light = app.palette()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        for theme, palette in (("light", light), ("dark", _dark_palette())):
            app.setPalette(palette)
            window = MainWindow(real_familiar, pane="explain")
            qtbot.addWidget(window)
            for width, height in ((900, 600), (1400, 900)):
                window.resize(width, height)
                window.show()
                pane = explain_pane(window)
                wait_shown(qtbot, pane, demo["lighthouse_reply"])
                path = ARTIFACTS / f"explain_pane_{theme}_{width}x{height}.png"
                assert window.grab().save(str(path))
                assert path.stat().st_size > 10_000
            window.close()
    finally:
        app.setPalette(light)


def test_what_the_other_budgets_left_out_is_said_in_words() -> None:
    def explanation(*drops: ExplainedDrop) -> Explanation:
        return Explanation(
            turn_id=1,
            explanation_id=1,
            place=PlaceRef("local", "Local chat"),
            created_at=datetime.now(UTC),
            tier="text",
            recall_paused=False,
            assembly_ms=1.0,
            layers=(),
            lore=(),
            facts=(),
            turns=(),
            dropped=drops,
        )

    assert left_out_text(explanation()) == ""
    text = left_out_text(
        explanation(
            ExplainedDrop("history", "budget", {"turn_id": 3}),
            ExplainedDrop("history", "budget", {"turn_id": 4}),
            ExplainedDrop("summary", "budget", {"what": "summary"}),
            ExplainedDrop("dossiers", "budget", {"person": "discord:1"}),
            ExplainedDrop("lorebook", "budget", {"index": 0}),  # in its own table
        )
    )
    assert text == (
        "Also left out for lack of room: 2 older messages of the conversation (history);"
        " the conversation's summary (summary); 1 person's dossier (dossiers)."
    )


def test_recall_paused_by_the_server_is_not_resumed_from_here(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, demo: dict[str, int]
) -> None:
    run(real_familiar.controls.pause("recall", "guild:500"))
    window = MainWindow(real_familiar, pane="explain")
    qtbot.addWidget(window)
    window.show()
    pane = explain_pane(window)
    wait_shown(qtbot, pane, demo["lighthouse_reply"])
    assert pane.pause_button.text() == "Recall paused from above"
    assert not pane.pause_button.isEnabled()
    assert "its server's switch" in pane.pause_button.toolTip()
    run(real_familiar.controls.resume("recall", "guild:500"))
    qtbot.waitUntil(lambda: pane.pause_button.text() == "Pause recall here", timeout=WAIT_MS)  # reloaded on the change
    run(window.shutdown())


def test_a_recorded_span_is_highlighted_rather_than_every_occurrence_of_the_key(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar
) -> None:
    """The lorebook engine may record where a key matched (ExplainedLore.span): that span is what is
    highlighted, not each occurrence of the key; a span in an earlier message shows that message too."""
    at = datetime.now(UTC)
    earlier = run(real_familiar.history.append_turn(NewTurn("local", "local", 0, "local:owner", "You", "A lamp.", at)))
    asked = run(
        real_familiar.history.append_turn(
            NewTurn("local", "local", 0, "local:owner", "You", "kettle or kettle?", at + timedelta(seconds=1))
        )
    )
    reply = run(
        real_familiar.history.append_turn(
            NewTurn("local", "local", 0, "familiar:self", "Wisp", "The second.", at + timedelta(seconds=2))
        )
    )
    assert earlier is not None
    assert asked is not None
    assert reply is not None
    body = {
        "tier": "text",
        "layers": [{"name": "lorebook", "tokens": 12, "budget": 800}],
        "lorebook": [
            {
                "index": 0,
                "title": "Kettle",
                "key": "kettle",
                "priority": 1,
                "tokens": 6,
                "via": "key",
                "span": {"source": "message", "start": 10, "end": 16, "turn_id": asked.id, "position": 1},
            },
            {
                "index": 1,
                "title": "Lamp",
                "key": "lamp",
                "priority": 1,
                "tokens": 6,
                "via": "key",
                "span": {"source": "message", "start": 2, "end": 6, "turn_id": earlier.id, "position": 0},
            },
        ],
    }
    run(real_familiar.explanations.save("local", body, [reply.id]))
    window = MainWindow(real_familiar, pane="explain")
    qtbot.addWidget(window)
    window.show()
    pane = explain_pane(window)
    wait_shown(qtbot, pane, reply.id)
    assert pane.answered is not None
    assert pane.answered.turn_id == asked.id
    assert pane.highlighted_spans() == [(10, 16)]  # the second "kettle" only
    matched = [r.matched_in for r in pane.lore_model.records]
    assert matched[0] == "the message it answered"
    assert matched[1].startswith("your message of ")
    assert "Earlier:" in pane.answered_label.text()
    assert ">lamp</span>" in pane.answered_label.text()
    run(window.shutdown())


def test_edit_entry_opens_the_lorebook_pane_on_the_entry_when_there_is_one(
    qtbot: QtBot, real_familiar: Familiar, demo: dict[str, int]
) -> None:
    window = MainWindow(real_familiar, pane="explain")
    qtbot.addWidget(window)
    window.show()
    pane = explain_pane(window)
    wait_shown(qtbot, pane, demo["lighthouse_reply"])
    row = next(i for i, r in enumerate(pane.lore_model.records) if r.lore.title == "The lighthouse")
    pane.lore_view.setCurrentIndex(pane.lore_model.index(row, 0))
    pane.lore_view.setFocus()
    qtbot.keyClick(pane.lore_view, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)  # Edit entry's key
    lorebook = window.pane_of(LorebookPane)
    assert window.current_pane is lorebook
    qtbot.waitUntil(lambda: lorebook.selected_positions() == [0], timeout=WAIT_MS)  # its place in the book
    assert lorebook.entries[0].title == "The lighthouse"
    assert pane.lorebook_url is None  # not the file
    settle(qtbot)


def test_the_waterfall_says_each_layer_in_words() -> None:
    rows = waterfall_rows(
        (
            ExplainedLayer("character", 100, 1500, cached=True),
            ExplainedLayer("history", 900, 800, cached=False),
        )
    )
    assert [(r.start, r.tokens) for r in rows] == [(0, 100), (100, 900)]
    assert rows[0].tooltip(1000) == (
        "character: 100 tokens of a 1,500-token budget (10% of the prompt)\n"
        "Reused from the reply before (nothing in it had changed)."
    )
    assert rows[1].over
    assert rows[1].value_text() == "900 / 800"
    assert "Over its budget." in rows[1].tooltip(1000)
