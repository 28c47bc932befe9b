"""The Character pane on the real runtime: the real Familiar against the wire-level fake Discord and fake
LLM, real character files. Edits are typed and ticked as a user would, saved with Ctrl+S, and checked
where they land: the files on disk, the next reply's prompt, the next message answered in Discord."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from app.ui.main_window import MainWindow
from app.ui.panes.base import PaneState
from app.ui.panes.character import CharacterPane
from tests.conftest import ALICE, GENERAL, GUILD_ID, HOME, TOKEN, write_character_toml
from tests.demo_familiar import seed_demo
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM, RecordedRequest
from tests.runtime.projectors.helpers import worker_of
from tests.ui.support import QT_STRICT, WAIT_MS, Run, open_dialog, press, settle

pytestmark = [*QT_STRICT[1:], pytest.mark.timeout(60)]

LIVE_WAIT_MS = 10_000
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
UNSEEN = 123
PERSONA = "You are a lighthouse keeper who loves storms.\n"

Live = tuple[MainWindow, CharacterPane, Familiar, FakeDiscord, FakeLLM, FamiliarPaths]


@pytest.fixture
def live(qtbot: QtBot, run: Run[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Live]:
    discord = FakeDiscord(token=TOKEN)
    discord.add_user(ALICE, "alice")
    discord.add_guild(GUILD_ID, "Lantern Club", {GENERAL: "general", HOME: "familiar-home"})
    llm = FakeLLM()
    run(discord.start())
    run(llm.start())
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(
        paths, discord.api_base, discord.gateway_url, llm.base_url, "\n[providers.memory]\nprojectors = []\n"
    )
    toml = paths.character_toml.read_text(encoding="utf-8")
    paths.character_toml.write_text(
        toml.replace(f"home_channels = [{HOME}]", f"home_channels = [{HOME}, {UNSEEN}]  # the home and an old one"),
        encoding="utf-8",
    )
    paths.character_md.write_text(PERSONA, encoding="utf-8")
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    familiar = run(Familiar.open(paths, secrets, env={"DISCORD_TOKEN": TOKEN}))
    familiar.changes.start()  # as the window's start does: the change broadcast says when the files change
    window = MainWindow(familiar, pane="character")
    qtbot.addWidget(window)
    window.show()
    pane = window.pane_of(CharacterPane)
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=LIVE_WAIT_MS)
    try:
        yield window, pane, familiar, discord, llm, paths
    finally:
        run(window.shutdown())
        run(familiar.close())
        run(llm.close())
        run(discord.close())
    assert discord.unhandled == []
    assert discord.errors == []
    assert llm.unhandled == []


def _replies(llm: FakeLLM) -> list[RecordedRequest]:
    return [r for r in llm.requests if worker_of(r.messages) is None]


def _save(qtbot: QtBot, pane: CharacterPane) -> None:
    assert pane.save_button.isEnabled(), pane.state_label.text()
    pane.persona.setFocus()
    qtbot.keyClick(pane.persona, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not pane.dirty and pane.state_label.text().startswith("Saved"), timeout=LIVE_WAIT_MS)
    settle(qtbot)


def test_a_persona_typed_and_saved_reaches_the_next_reply_and_a_save_undoes(
    qtbot: QtBot, run: Run[Any], live: Live
) -> None:
    window, pane, familiar, _discord, llm, paths = live
    assert pane.state is PaneState.READY
    assert pane.persona.toPlainText() == PERSONA
    assert pane.display_name.text() == "Wisp"
    assert not pane.save_button.isEnabled()
    assert pane.state_label.text() == "", "nothing was saved yet: the bar says nothing, not 'Saved'"

    pane.persona.selectAll()
    qtbot.keyClicks(pane.persona, "You are a ship's cat who hates storms.")
    assert pane.dirty
    assert pane.state_label.text() == "● Unsaved changes"
    qtbot.waitUntil(lambda: pane.tokens_label.text().startswith("13 of 1,500 tokens"), timeout=WAIT_MS)
    assert "(text budget)" in pane.tokens_label.text()
    _save(qtbot, pane)

    assert paths.character_md.read_text(encoding="utf-8") == "You are a ship's cat who hates storms."
    toml = paths.character_toml.read_text(encoding="utf-8")
    assert toml.startswith("# test familiar")
    assert "# the home and an old one" in toml  # the file's comments survive a save
    run(familiar.chat_local("hello"))
    system = str(_replies(llm)[-1].messages[0]["content"])
    assert "ship's cat" in system
    assert "lighthouse" not in system

    assert run(window.undo.undo())  # the save as one step: the files as they were, in force again
    qtbot.waitUntil(lambda: pane.persona.toPlainText() == PERSONA, timeout=WAIT_MS)
    assert paths.character_md.read_text(encoding="utf-8") == PERSONA
    assert not pane.dirty
    assert pane.state_label.text() == "Undone: the files as they were are in use from the next reply"
    pane.refresh()  # loaded again: nothing saved since
    qtbot.waitUntil(lambda: pane.is_loaded and pane.state_label.text() == "", timeout=WAIT_MS)
    run(familiar.chat_local("hello again"))
    assert "lighthouse" in str(_replies(llm)[-1].messages[0]["content"])


def test_an_invalid_value_shows_the_loaders_message_inline_and_save_stays_disabled(
    qtbot: QtBot, run: Run[Any], live: Live
) -> None:
    _window, pane, familiar, _discord, _llm, paths = live
    before = paths.character_toml.read_bytes()
    problem = pane.field_problems["temperature"]

    pane.temperature.clear()
    qtbot.keyClicks(pane.temperature, "7")
    qtbot.waitUntil(problem.isVisible, timeout=WAIT_MS)
    assert problem.text() == "key 'llm.temperature': 7.0 is out of range (0 to 2)"
    assert not pane.save_button.isEnabled()
    assert pane.state_label.text() == "● Fix before saving: Temperature"

    pane.temperature.clear()
    qtbot.keyClicks(pane.temperature, "warm")
    expected = {p.field: p.message for p in familiar.character.check(pane.draft())}["temperature"]
    qtbot.waitUntil(lambda: problem.text() == expected, timeout=WAIT_MS)
    assert expected.startswith("key 'llm.temperature': ")
    qtbot.keyClick(pane.temperature, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    settle(qtbot)
    assert paths.character_toml.read_bytes() == before

    pane.temperature.clear()
    qtbot.keyClicks(pane.temperature, "0.4")
    qtbot.waitUntil(lambda: not problem.isVisible(), timeout=WAIT_MS)
    _save(qtbot, pane)
    assert "temperature = 0.4" in paths.character_toml.read_text(encoding="utf-8")
    assert familiar.settings.llm.temperature == 0.4


def test_home_channels_ticked_by_name_are_answered_without_a_mention(
    qtbot: QtBot, run: Run[Any], live: Live, qtmodeltester: Any
) -> None:
    _window, pane, familiar, discord, llm, paths = live
    names = [item.text(0) for item in pane.channel_items()]
    assert f"channel {UNSEEN} (not seen)" in names
    assert "#familiar-home" not in names  # offline, and never heard in: not listed until the bot connects

    run(familiar.start())
    qtbot.waitUntil(lambda: "#general" in [i.text(0) for i in pane.channel_items()], timeout=LIVE_WAIT_MS)
    settle(qtbot)
    qtmodeltester.check(pane.channels.model(), force_py=True)
    items = {item.text(0): item for item in pane.channel_items()}
    assert items["#familiar-home"].checkState(0) == Qt.CheckState.Checked
    assert items[f"channel {UNSEEN} (not seen)"].checkState(0) == Qt.CheckState.Checked
    assert items["#general"].checkState(0) == Qt.CheckState.Unchecked
    assert pane.channels.topLevelItem(0).text(0) == "Lantern Club"  # type: ignore[union-attr]

    items["#general"].setCheckState(0, Qt.CheckState.Checked)
    items[f"channel {UNSEEN} (not seen)"].setCheckState(0, Qt.CheckState.Unchecked)
    assert pane.home_channels() == (HOME, GENERAL)
    _save(qtbot, pane)
    assert f"home_channels = [{HOME}, {GENERAL}]" in paths.character_toml.read_text(encoding="utf-8")

    llm.script("The kettle is on, alice.")
    run(discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="tea, anyone?"))
    posted = run(discord.wait_for_posted(1))
    assert posted[0].channel_id == GENERAL
    run(familiar.stop())
    settle(qtbot)


def test_an_edit_on_disk_is_reloaded_or_offered_as_a_reload(qtbot: QtBot, run: Run[Any], live: Live) -> None:
    _window, pane, _familiar, _discord, _llm, paths = live

    paths.character_md.write_text("Edited by hand, nothing open here.\n", encoding="utf-8")
    qtbot.waitUntil(lambda: pane.persona.toPlainText() == "Edited by hand, nothing open here.\n", timeout=WAIT_MS)
    assert not pane.disk_banner.isVisible()

    qtbot.keyClicks(pane.display_name, "o")
    assert pane.dirty
    paths.character_md.write_text("Edited by hand again.\n", encoding="utf-8")
    qtbot.waitUntil(pane.disk_banner.isVisible, timeout=WAIT_MS)
    assert "changed on disk" in pane.disk_label.text()
    assert pane.display_name.text() == "Wispo"  # nothing typed here is thrown away unasked

    qtbot.mouseClick(pane.save_button, Qt.MouseButton.LeftButton)  # a save over the edit on disk is refused
    qtbot.waitUntil(lambda: "changed on disk" in pane.error_banner.text(), timeout=WAIT_MS)
    assert paths.character_md.read_text(encoding="utf-8") == "Edited by hand again.\n"
    assert 'display_name = "Wisp"' in paths.character_toml.read_text(encoding="utf-8")

    qtbot.mouseClick(pane.reload_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: pane.persona.toPlainText() == "Edited by hand again.\n", timeout=WAIT_MS)
    assert pane.display_name.text() == "Wisp"
    assert not pane.disk_banner.isVisible()
    assert not pane.dirty
    settle(qtbot)


def test_revert_and_open_data_folder(qtbot: QtBot, live: Live) -> None:
    _window, pane, _familiar, _discord, _llm, paths = live
    opened: list[QUrl] = []
    pane.open_url = opened.append
    qtbot.mouseClick(pane.folder_button, Qt.MouseButton.LeftButton)
    assert opened == [QUrl.fromLocalFile(str(paths.folder))]

    qtbot.keyClicks(pane.model, "-large")
    qtbot.waitUntil(lambda: pane.revert_button.isEnabled(), timeout=WAIT_MS)
    qtbot.mouseClick(pane.revert_button, Qt.MouseButton.LeftButton)
    assert pane.model.text() == "test-model"
    assert not pane.dirty
    assert not pane.save_button.isEnabled()


def test_closing_the_window_with_unsaved_changes_asks_first(
    qtbot: QtBot, live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, pane, _familiar, _discord, _llm, _paths = live
    assert pane.unsaved_work() is None
    qtbot.keyClicks(pane.model, "-large")
    qtbot.waitUntil(lambda: pane.dirty, timeout=WAIT_MS)
    window.show_pane("dashboard")
    monkeypatch.setattr(window, "ask_before_discarding", True)
    assert not window.close()
    box = open_dialog(qtbot, QMessageBox)
    assert window.current_pane is pane  # shown, to save from
    assert box.text().startswith("The character has unsaved changes (Save is Ctrl+S in the Character pane).")
    press(box, QMessageBox.StandardButton.Cancel)
    settle(qtbot)
    assert window.isVisible()
    qtbot.mouseClick(pane.revert_button, Qt.MouseButton.LeftButton)
    assert pane.unsaved_work() is None


def test_character_pane_screenshot(qtbot: QtBot, run: Run[Any], real_familiar: Familiar) -> None:
    """The demo familiar, a home channel chosen and the persona being edited: for a human to look at."""
    seeding = asyncio.ensure_future(seed_demo(real_familiar))
    qtbot.waitUntil(seeding.done, timeout=60_000)
    seeding.result()
    view = run(real_familiar.character.load())
    run(real_familiar.character.save(dataclasses.replace(view.draft, home_channels=(502, 990001)), view.revision))
    window = MainWindow(real_familiar, pane="character")
    qtbot.addWidget(window)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    window.resize(1100, 700)
    window.show()
    pane = window.pane_of(CharacterPane)
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    settle(qtbot)
    assert window.grab().save(str(ARTIFACTS / "character_pane.png"))
    pane.persona.moveCursor(pane.persona.textCursor().MoveOperation.End)
    pane.persona.insertPlainText("\nYou are afraid of moths.")
    pane.temperature.setText("2.5")
    pane.check_now()
    window.resize(900, 600)
    settle(qtbot)
    assert window.grab().save(str(ARTIFACTS / "character_pane_small.png"))
    assert pane.field_problems["temperature"].isVisible()
    run(window.shutdown())


def test_a_file_broken_on_disk_is_named_and_the_pane_comes_back_once_it_is_fixed(
    qtbot: QtBot, run: Run[Any], live: Live
) -> None:
    _window, pane, _familiar, _discord, _llm, paths = live
    good = paths.character_toml.read_text(encoding="utf-8")
    paths.character_toml.write_text(good.replace("[llm]", "[llm"), encoding="utf-8")
    qtbot.waitUntil(lambda: pane.state is PaneState.ERROR, timeout=WAIT_MS)
    assert str(paths.character_toml) in pane.state_text()
    assert "line " in pane.state_text()

    paths.character_toml.write_text(good, encoding="utf-8")
    qtbot.mouseClick(pane._error_page.button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: pane.state is PaneState.READY, timeout=WAIT_MS)
    assert pane.display_name.text() == "Wisp"
    settle(qtbot)
