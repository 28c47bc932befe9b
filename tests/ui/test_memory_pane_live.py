"""The switches' effect, through the window, on what the familiar does next: the real Familiar against the
wire-level fake Discord and fake LLM. A recall paused in the Memory controls pane leaves the memory
layers empty in the next reply's prompt; learning paused there means no memory worker asks the model
about what is said there; resuming (by keys, or undo) brings both back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from app.ui.main_window import MainWindow
from app.ui.models.switches_model import LEARNING, RECALL
from app.ui.panes.memory import MemoryPane
from tests.conftest import ALICE, GENERAL, GUILD_ID, HOME, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM, RecordedRequest
from tests.runtime.projectors.helpers import learning, requests_of, worker_of
from tests.ui.support import QT_STRICT, Run, settle

pytestmark = [*QT_STRICT[1:], pytest.mark.timeout(90)]

LIVE_WAIT_MS = 10_000
FACT = "The lantern keeper of the Lantern Club is named Orla"

Live = tuple[MainWindow, Familiar, FakeDiscord, FakeLLM]


@pytest.fixture
def live(qtbot: QtBot, run: Run[Any], tmp_path: Path) -> Iterator[Live]:
    discord = FakeDiscord(token=TOKEN)
    discord.add_user(ALICE, "alice")
    discord.add_guild(GUILD_ID, "Lantern Club", {GENERAL: "general", HOME: "familiar-home"})
    llm = FakeLLM()
    run(discord.start())
    run(llm.start())
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(
        paths, discord.api_base, discord.gateway_url, llm.base_url, learning("rich_note", batch_turns=1)
    )
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    familiar = run(Familiar.open(paths, secrets, env={"DISCORD_TOKEN": TOKEN}))
    window = MainWindow(familiar)
    qtbot.addWidget(window)
    window.resize(1100, 700)
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


def replies(llm: FakeLLM) -> list[RecordedRequest]:
    return [r for r in llm.requests if worker_of(r.messages) is None]


def whole_prompt(request: RecordedRequest) -> str:
    return "\n".join(str(m.get("content")) for m in request.messages)


def ask(run: Run[Any], discord: FakeDiscord, llm: FakeLLM, text: str) -> str:
    """Alice asks the familiar in #general; the prompt of the reply it sends."""
    before, posted = len(replies(llm)), len(discord.posted)
    run(discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=text, mentions_bot=True))
    run(discord.wait_for_posted(posted + 1))
    asked = replies(llm)
    assert len(asked) == before + 1
    return whole_prompt(asked[-1])


def row_of(pane: MemoryPane, name: str) -> int:
    return next(r for r in range(pane.switches.rowCount()) if pane.switches.record(r).name == name)


def test_a_recall_paused_in_the_pane_keeps_memory_out_of_the_next_reply(
    qtbot: QtBot, run: Run[Any], live: Live
) -> None:
    window, familiar, discord, llm = live
    run(familiar.start())
    run(familiar.memory.remember(FACT, f"guild:{GUILD_ID}"))
    run(familiar.indexes.catch_up())  # searchable now, not after the index's next commit
    assert "Orla" in ask(run, discord, llm, "who keeps the lantern?")  # recalled while recall is on

    pane = window.show_pane("memory")
    assert isinstance(pane, MemoryPane)
    qtbot.waitUntil(lambda: any(r.name == "#general" for r in pane.switches.records), timeout=LIVE_WAIT_MS)
    server = row_of(pane, "Lantern Club")
    where = pane.switch_view.visualRect(pane.switches.index(server, RECALL)).center()
    qtbot.mouseClick(pane.switch_view.viewport(), Qt.MouseButton.LeftButton, pos=where)
    settle(qtbot)
    assert run(familiar.controls.state()).recall == (f"guild:{GUILD_ID}",)
    assert pane.switches.record(row_of(pane, "#general")).recall.source == "server"
    qtbot.waitUntil(lambda: window.pause_light.isVisible(), timeout=LIVE_WAIT_MS)

    prompt = ask(run, discord, llm, "who keeps the lantern?")
    assert "Orla" not in prompt  # the memory layers rendered nothing
    assert "who keeps the lantern?" in prompt  # the conversation itself still goes in

    # By keys, from the channel's row: R goes to the server's switch, Space resumes it.
    pane.switch_view.setFocus()
    pane.switch_view.setCurrentIndex(pane.switches.index(row_of(pane, "#general"), LEARNING))
    qtbot.keyClick(pane.switch_view, Qt.Key.Key_R)
    qtbot.keyClick(pane.switch_view, Qt.Key.Key_Space)
    settle(qtbot)
    assert run(familiar.controls.state()).recall == ()
    assert "Orla" in ask(run, discord, llm, "and who keeps the lantern now?")
    qtbot.waitUntil(lambda: not window.pause_light.isVisible(), timeout=LIVE_WAIT_MS)


def test_learning_paused_in_the_pane_asks_the_model_nothing_about_that_channel(
    qtbot: QtBot, run: Run[Any], live: Live
) -> None:
    window, familiar, discord, llm = live
    run(familiar.start())
    ask(run, discord, llm, "hello there")  # the channel becomes known
    run(familiar.learn_now())
    learned = len(requests_of(llm, "rich_note"))
    assert learned >= 1  # learning runs there while it is on

    pane = window.show_pane("memory")
    assert isinstance(pane, MemoryPane)
    qtbot.waitUntil(lambda: any(r.name == "#general" for r in pane.switches.records), timeout=LIVE_WAIT_MS)
    pane.switch_view.setFocus()
    pane.switch_view.setCurrentIndex(pane.switches.index(row_of(pane, "#general"), RECALL))
    qtbot.keyClick(pane.switch_view, Qt.Key.Key_L)
    settle(qtbot)
    assert run(familiar.controls.state()).learning == (f"guild:{GUILD_ID}/{GENERAL}",)

    ask(run, discord, llm, "I keep bees on the roof")
    run(familiar.learn_now())
    assert len(requests_of(llm, "rich_note")) == learned  # nothing learned there: no model request
    assert familiar.get_status().state.value == "connected"  # the conversation went on

    assert run(window.undo.undo())  # Ctrl+Z: learning resumes, and catches up on what was said
    settle(qtbot)
    assert run(familiar.controls.state()).learning == ()
    run(familiar.learn_now())
    caught_up = requests_of(llm, "rich_note")[learned:]
    assert any("I keep bees on the roof" in whole_prompt(r) for r in caught_up)
