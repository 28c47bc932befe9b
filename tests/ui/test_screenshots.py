"""Screenshots of the window on the fake facade, saved to tests/artifacts/ (gitignored) for a human to look at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.memory.facts import NewFact
from app.runtime.events import Activity, ActivityKind, GuildInfo, LatencyMeasured
from app.runtime.service import Familiar
from app.ui import fact_actions
from app.ui.main_window import MainWindow
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, Run, settle

pytestmark = QT_STRICT

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
MIN_PNG_BYTES = 10_000  # a blank or broken grab compresses to far less

GUILDS = (
    GuildInfo(871234567890123456, "Lantern Club", 1_234),
    GuildInfo(902345678901234567, "Moth Society", 48),
    GuildInfo(913456789012345678, "The Quiet Library", 7),
)
ACTIVITY = (
    (ActivityKind.INFO, "local", "Connected as Wisp#4821"),
    (ActivityKind.MESSAGE_IN, "Lantern Club #general", "alice: has anyone seen the lantern keeper today?"),
    (ActivityKind.REPLY_OUT, "Lantern Club #general", "Wisp: She went down to the harbour at dawn, alice."),
    (ActivityKind.MESSAGE_IN, "Moth Society #familiar-home", "bob: remember that I am allergic to moth dust"),
    (ActivityKind.REPLY_OUT, "Moth Society #familiar-home", "Wisp: Noted, bob. No moth dust near you."),
    (ActivityKind.EDIT, "Moth Society #familiar-home", "bob edited: remember that I am allergic to cat dander"),
    (ActivityKind.ERROR, "local", "The LLM endpoint answered 503; retrying in 2 s"),
    (ActivityKind.DELETE, "Lantern Club #general", "carol deleted a message"),
)


def grab(widget: QWidget, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    assert widget.grab().save(str(path)), f"could not save {path}"
    return path


def test_main_window_screenshot(qtbot: QtBot) -> None:
    facade = FakeFacade(name="Wisp", guilds_on_start=GUILDS, latency_on_start=38.0)
    window = MainWindow(facade)
    qtbot.addWidget(window)
    window.resize(1100, 700)
    window.show()
    window.dashboard.start_button.click()
    settle(qtbot)
    start = datetime(2025, 3, 1, 9, 14, 2, tzinfo=UTC)
    for offset, (kind, where, summary) in enumerate(ACTIVITY):
        facade.publish(Activity(kind, where, summary, at=start + timedelta(seconds=17 * offset)))
    facade.publish(LatencyMeasured(41.0))
    qtbot.waitExposed(window)

    path = grab(window, "main_window.png")

    assert path.stat().st_size > MIN_PNG_BYTES
    assert window.dashboard.activity_model.rowCount() == len(ACTIVITY)


def test_chat_pane_screenshot(qtbot: QtBot) -> None:
    facade = FakeFacade(name="Wisp")
    facade.history = [
        facade.line("You", "Good evening, Wisp.", from_familiar=False),
        facade.line("Wisp", "Good evening! The lanterns are lit and the club is quiet tonight.", from_familiar=True),
    ]
    facade.replies = ["Bob mentioned it this morning: he is allergic to cat dander, not moth dust."]
    facade.chat_error = None
    window = MainWindow(facade)
    qtbot.addWidget(window)
    window.resize(1100, 700)
    window.show()
    window.show_pane("Chat")
    settle(qtbot)
    window.chat.input.setText("What is Bob allergic to?")
    window.chat.send_button.click()
    settle(qtbot)
    facade.chat_error = "The LLM endpoint did not answer within 30 s. Is it running?"
    window.chat.input.setText("And Alice?")
    window.chat.send_button.click()
    settle(qtbot)
    window.chat.input.setText("Are you still there?")
    qtbot.waitExposed(window)

    path = grab(window, "chat_pane.png")

    assert path.stat().st_size > MIN_PNG_BYTES
    assert window.chat.transcript_model.rowCount() == 6


def test_dashboard_needing_attention_screenshot(qtbot: QtBot) -> None:
    """Not set up yet, and the last start failed: the set-up hint and the error banner."""
    facade = FakeFacade(name="Wisp", configured=False, missing=("bot token", "LLM endpoint"))
    facade.start_error = "No bot token is set. Open Settings and paste the token from the Discord developer portal."
    window = MainWindow(facade)
    qtbot.addWidget(window)
    window.resize(1100, 700)
    window.show()
    window.dashboard.start_button.click()
    settle(qtbot)
    qtbot.waitExposed(window)

    path = grab(window, "dashboard_attention.png")

    assert path.stat().st_size > MIN_PNG_BYTES
    assert not window.dashboard.error_banner.isHidden()
    assert not window.dashboard.setup_hint.isHidden()


def test_settings_dialog_screenshot(qtbot: QtBot, real_familiar: Familiar) -> None:
    """Settings over a real, unconfigured familiar: each value in force with where it comes from."""
    facade = FakeFacade(configured=False, missing=("bot token", "LLM endpoint"), backing=real_familiar)
    window = MainWindow(facade)
    qtbot.addWidget(window)
    window.show()
    dialog = window.open_settings()
    settle(qtbot)
    dialog.bot_token.setText("MTIz.not.a.real.token")
    dialog.model.setText("llama3.1:8b")
    qtbot.waitExposed(dialog)

    path = grab(dialog, "settings_dialog.png")

    assert path.stat().st_size > MIN_PNG_BYTES // 2
    assert dialog.sources["bot_token"].text() == "not set"
    assert dialog.sources["display_name"].text() == "from character.toml"


def test_undo_notices_screenshot(qtbot: QtBot, run: Run[Any], real_familiar: Familiar) -> None:
    """Two actions just done over the real store: their Undo notices stacked at the bottom right."""
    facade = FakeFacade(name="Wisp", backing=real_familiar)
    window = MainWindow(facade, pane="chat")
    qtbot.addWidget(window)
    window.resize(1100, 700)
    window.show()
    settle(qtbot)
    outcome = run(
        real_familiar.history.insert_fact(
            NewFact("Bob is allergic to cat dander", "semantic", 6, 0.9, ("discord:7002",), "guild:500/501")
        )
    )
    assert outcome.fact is not None
    pending = run(real_familiar.memory.fact(outcome.fact.id)).fact
    kept = run(real_familiar.memory.remember("Alice's locker code is 4242", "guild:500/501")).fact
    run(window.undo.perform(fact_actions.accept(facade.memory, pending)))
    run(window.undo.perform(fact_actions.forget(facade.memory, kept)))
    qtbot.waitExposed(window)

    path = grab(window, "undo_notices.png")

    assert path.stat().st_size > MIN_PNG_BYTES
    notices = window.notices.notices()
    assert [n.text for n in notices] == [
        "Accepted “Bob is allergic to cat dander”",
        "Forgot “Alice's locker code is 4242”",
    ]
    assert all(n.isVisible() for n in notices)
    run(window.shutdown())
