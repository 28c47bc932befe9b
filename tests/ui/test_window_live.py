"""The main window on the real runtime: the real Familiar against the wire-level fake Discord and fake LLM.

The other window tests use the fake facade; this one proves the window and the runtime agree: what the
Dashboard shows after Start, a message, Stop and a failed start comes from the events the real runtime
publishes, and the Chat pane talks to the real familiar.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.events import ActivityKind, ConnectionState
from app.runtime.service import Familiar
from app.ui.main_window import MainWindow
from tests.conftest import ALICE, GENERAL, GUILD_ID, HOME, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM
from tests.ui.support import QT_STRICT, Run, open_dialog, press, settle

pytestmark = [*QT_STRICT[1:], pytest.mark.timeout(60)]

LIVE_WAIT_MS = 10_000
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@pytest.fixture
def live(qtbot: QtBot, run: Run[Any], tmp_path: Path) -> Iterator[tuple[MainWindow, Familiar, FakeDiscord, FakeLLM]]:
    discord = FakeDiscord(token=TOKEN)
    discord.add_user(ALICE, "alice")
    discord.add_guild(GUILD_ID, "Lantern Club", {GENERAL: "general", HOME: "familiar-home"})
    llm = FakeLLM()
    run(discord.start())
    run(llm.start())
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(paths, discord.api_base, discord.gateway_url, llm.base_url)
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    familiar = run(Familiar.open(paths, secrets, env={"DISCORD_TOKEN": TOKEN}))
    window = MainWindow(familiar)
    qtbot.addWidget(window)
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


def test_start_message_stop_and_a_failed_start_as_the_user_sees_them(
    qtbot: QtBot, run: Run[Any], live: tuple[MainWindow, Familiar, FakeDiscord, FakeLLM]
) -> None:
    window, familiar, discord, llm = live
    dashboard = window.dashboard

    qtbot.mouseClick(dashboard.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dashboard.state_indicator.text() == "Connected", timeout=LIVE_WAIT_MS)
    qtbot.waitUntil(lambda: dashboard.guilds_model.rowCount() == 1, timeout=LIVE_WAIT_MS)
    assert [g.name for g in dashboard.guilds_model.guilds] == ["Lantern Club"]
    qtbot.waitUntil(lambda: dashboard.latency_label.text().endswith(" ms"), timeout=LIVE_WAIT_MS)
    assert window.connection_indicator.text() == "Connected"

    llm.script("The kettle is on, alice.")
    run(discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="tea?", mentions_bot=True))
    run(discord.wait_for_posted(1))

    def logged() -> list[tuple[ActivityKind, str, str]]:
        return [(a.kind, a.where, a.summary) for a in dashboard.activity_model.records]

    qtbot.waitUntil(lambda: any(kind is ActivityKind.REPLY_OUT for kind, _, _ in logged()), timeout=LIVE_WAIT_MS)
    assert (ActivityKind.MESSAGE_IN, "Lantern Club #general", "alice: tea?") in logged()
    assert (ActivityKind.REPLY_OUT, "Lantern Club #general", "The kettle is on, alice.") in logged()
    ARTIFACTS.mkdir(exist_ok=True)
    assert window.grab().save(str(ARTIFACTS / "main_window_live.png"))  # for a human to look at

    qtbot.mouseClick(dashboard.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dashboard.state_indicator.text() == "Stopped", timeout=LIVE_WAIT_MS)
    settle(qtbot)
    assert dashboard.guilds_model.rowCount() == 0, "Stop leaves no server listed"
    assert dashboard.latency_label.text() == "Latency: —"
    run(discord.wait_until(lambda: discord.open_connections == 0, what="the gateway to close"))

    discord.token = "a-revoked-token"
    qtbot.mouseClick(dashboard.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dashboard.error_banner.isVisible(), timeout=LIVE_WAIT_MS)
    settle(qtbot)
    banner = dashboard.error_banner.text()
    assert "rejected the bot token" in banner
    assert "\n" not in banner
    assert dashboard.guilds_model.rowCount() == 0
    assert dashboard.start_button.isEnabled()
    assert familiar.get_status().state is ConnectionState.FAILED
    assert dashboard.state_indicator.text() == window.connection_indicator.text() == "Failed"


def test_the_chat_pane_talks_to_the_real_familiar(
    qtbot: QtBot, live: tuple[MainWindow, Familiar, FakeDiscord, FakeLLM]
) -> None:
    window, familiar, _discord, llm = live
    window.show_pane("Chat")
    settle(qtbot)
    llm.script("I am right here, in the window.")
    qtbot.keyClicks(window.chat.input, "where are you?")
    qtbot.keyClick(window.chat.input, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.chat.transcript_model.rowCount() == 2, timeout=LIVE_WAIT_MS)
    shown = [
        window.chat.transcript_model.data(window.chat.transcript_model.index(row, 0))
        for row in range(window.chat.transcript_model.rowCount())
    ]
    assert "where are you?" in str(shown[0])
    assert "I am right here, in the window." in str(shown[1])
    # The request carried the persona from character.md, and the exchange is in the store's local channel.
    assert "You are Wisp" in llm.requests[0].messages[0]["content"]
    assert familiar.get_status().state is ConnectionState.STOPPED  # no Discord needed for this


def test_the_chat_greets_regenerates_and_clears_on_the_real_familiar(
    qtbot: QtBot, run: Run[Any], live: tuple[MainWindow, Familiar, FakeDiscord, FakeLLM]
) -> None:
    """Issue 18 items 6 and 7 end to end: a card's greetings open the chat, the chosen one is stored with the
    first message, the last reply is regenerated in place, and Clear (after asking) empties the chat and
    Undo brings it back, against the real runtime and store."""
    window, familiar, _discord, llm = live
    view = run(familiar.character.load())
    run(familiar.character.save(replace(view.draft, display_name="Moth", greeting="*{{char}} lands.*"), view.revision))
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Moth", "first_mes": "*Moth lands.*"}}
    card["data"]["alternate_greetings"] = ["||Psst.|| Over **here**, {{user}}."]
    familiar.home.joinpath("card.json").write_text(json.dumps(card), encoding="utf-8")
    assert window.windowTitle() == "Familiar — Moth"

    chat = window.chat
    window.show_pane("Chat")
    qtbot.waitUntil(lambda: chat.greeting is not None, timeout=LIVE_WAIT_MS)
    settle(qtbot)
    assert chat.greeting is not None
    assert chat.greeting.choices == ("*Moth lands.*", "||Psst.|| Over **here**, You.")
    assert chat.swipe_greeting(1)
    llm.script("Hello there.", "Hello again, better this time.")
    qtbot.keyClicks(chat.input, "hi Moth")
    qtbot.keyClick(chat.input, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: chat.transcript_model.rowCount() == 3 and not chat.is_waiting, timeout=LIVE_WAIT_MS)
    settle(qtbot)
    stored = run(familiar.load_local_history())
    assert [(line.content, line.greeting) for line in stored] == [
        ("||Psst.|| Over **here**, You.", True),
        ("hi Moth", False),
        ("Hello there.", False),
    ]
    assert "Psst." not in chat.chat_view.message(0).body.text()  # a spoiler, hidden until clicked

    chat.regenerate_action.trigger()
    qtbot.waitUntil(lambda: "better this time" in str(chat.transcript_model.entries[-1]), timeout=LIVE_WAIT_MS)
    settle(qtbot)
    assert chat.transcript_model.rowCount() == 3
    assert [line.content for line in run(familiar.load_local_history())][-1] == "Hello again, better this time."
    ARTIFACTS.mkdir(exist_ok=True)
    assert window.grab().save(str(ARTIFACTS / "chat_live.png"))  # for a human to look at

    qtbot.mouseClick(chat.clear_button, Qt.MouseButton.LeftButton)
    press(open_dialog(qtbot, QMessageBox), QMessageBox.StandardButton.Ok)
    qtbot.waitUntil(lambda: chat.greeting is not None and chat.transcript_model.rowCount() == 1, timeout=LIVE_WAIT_MS)
    settle(qtbot)
    assert run(familiar.load_local_history()) == []
    window.undo.undo_action.trigger()
    qtbot.waitUntil(lambda: chat.transcript_model.rowCount() == 3, timeout=LIVE_WAIT_MS)
    settle(qtbot)
    assert len(run(familiar.load_local_history())) == 3
