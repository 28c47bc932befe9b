"""The welcome flow on the real runtime, against the wire-level fake Discord and fake LLM: a good token gives the
bot's name and the invite link, a wrong one "invalid token" (said once), the intent off a clear verdict; the
endpoint's models are listed and picked, an endpoint that is down says so; every step can be skipped; Back is
disabled on step 1; "Try it without Discord" leads to the language model, then Chat, and is remembered so the
welcome does not come back at each launch; a familiar made from a card has its name and goes on to Discord and the
model; what is saved is in force at once. Screenshots of each step go to tests/artifacts/ (to look at)."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.config.ui_prefs import UiPreferencesFile
from app.runtime.cards import create_familiar_from_card
from app.runtime.service import Familiar
from app.ui.dialogs.welcome_dialog import CHAT_LABEL, FINISH_LABEL, WelcomeDialog
from app.ui.main_window import MainWindow
from app.ui.theme import ERROR_RED, OK_GREEN
from tests.conftest import TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM
from tests.ui.support import QT_STRICT, Run, settle

pytestmark = [*QT_STRICT[1:], pytest.mark.timeout(60)]

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
SAMPLES = Path(__file__).resolve().parents[1] / "runtime" / "samples"
INVITE = "https://discord.com/oauth2/authorize?client_id=1000&scope=bot&permissions=68608"
WAIT_MS = 10_000


@dataclass
class Live:
    window: MainWindow
    familiar: Familiar
    discord: FakeDiscord
    llm: FakeLLM
    paths: FamiliarPaths
    prefs: Path  # ui.toml

    def welcome(self) -> WelcomeDialog:
        dialog = self.window.welcome_dialog
        assert dialog is not None
        return dialog


def open_live(qtbot: QtBot, run: Run[Any], tmp_path: Path, *, intent: bool = True) -> Iterator[Live]:
    discord = FakeDiscord(token=TOKEN, bot_name="Wisp", allow_message_content=intent)
    llm = FakeLLM(models=("qwen2.5:7b", "llama3.1:8b"))
    run(discord.start())
    run(llm.start())
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(paths, discord.api_base, discord.gateway_url, "")  # no endpoint and no token yet
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    familiar = run(Familiar.open(paths, secrets, env={}))
    prefs = tmp_path / "home" / "ui.toml"
    window = MainWindow(familiar, prefs=UiPreferencesFile(prefs))
    qtbot.addWidget(window)
    window.show()
    try:
        yield Live(window, familiar, discord, llm, paths, prefs)
    finally:
        run(window.shutdown())
        run(familiar.close())
        run(llm.close())
        run(discord.close())
    assert discord.unhandled == []
    assert discord.errors == []
    assert llm.unhandled == []


@pytest.fixture
def live(qtbot: QtBot, run: Run[Any], tmp_path: Path) -> Iterator[Live]:
    yield from open_live(qtbot, run, tmp_path)


@pytest.fixture
def intent_off(qtbot: QtBot, run: Run[Any], tmp_path: Path) -> Iterator[Live]:
    yield from open_live(qtbot, run, tmp_path, intent=False)


def click(qtbot: QtBot, button: Any) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    settle(qtbot)


def fits(dialog: WelcomeDialog) -> bool:
    """The dialog is as tall as its step needs at its width (wrapped text counted): no row squeezed."""
    layout = dialog.layout()
    assert layout is not None
    return dialog.height() >= layout.totalHeightForWidth(dialog.width())


def shot(qtbot: QtBot, dialog: WelcomeDialog, name: str) -> None:
    qtbot.waitUntil(lambda: fits(dialog), timeout=WAIT_MS)  # as a person sees it once it has laid itself out
    ARTIFACTS.mkdir(exist_ok=True)
    assert dialog.grab().save(str(ARTIFACTS / f"welcome_{name}.png"))


def test_the_whole_welcome_names_checks_the_token_picks_a_model_and_it_is_in_force(
    qtbot: QtBot, run: Run[Any], live: Live
) -> None:
    assert live.window.maybe_show_first_run()
    dialog = live.welcome()
    settle(qtbot)
    assert dialog.isVisible()
    assert live.window.settings_dialog is None, "the welcome, not a bare Settings dialog"
    assert dialog.step == "name"
    assert dialog.name_field.text() == "Wisp"
    assert not dialog.back_button.isEnabled(), "there is no step before the first"

    dialog.name_field.setText("Lantern")
    shot(qtbot, dialog, "1_name")
    click(qtbot, dialog.next_button)
    assert dialog.step == "discord"
    assert dialog.back_button.isEnabled()

    dialog.token_field.setText(TOKEN)
    dialog.check_button.setFocus()
    click(qtbot, dialog.check_button)
    assert dialog.verdict_label.text() == "OK: this is the bot Wisp."
    assert dialog.focusWidget() is dialog.check_button, "the focus stays: Enter must not press 'without Discord'"
    assert not dialog.without_discord_button.autoDefault()
    assert OK_GREEN in dialog.verdict_label.styleSheet()
    assert dialog.invite_label.isVisible()
    assert INVITE in dialog.invite_label.text()
    shot(qtbot, dialog, "2_discord")
    click(qtbot, dialog.next_button)
    assert dialog.step == "llm"
    assert dialog.next_button.text() == FINISH_LABEL

    dialog.preset_combo.setCurrentText("llama.cpp")
    assert dialog.url_field.text() == "http://127.0.0.1:8080/v1", "a preset fills in its usual address"
    dialog.url_field.setText(live.llm.base_url)
    dialog.model_combo.setEditText("")
    click(qtbot, dialog.models_button)
    listed = [dialog.model_combo.itemText(i) for i in range(dialog.model_combo.count())]
    assert listed == ["llama3.1:8b", "qwen2.5:7b"]
    assert dialog.model_combo.currentText() == "llama3.1:8b"
    assert dialog.llm_result.text().startswith(f"2 models listed. OK: model 'llama3.1:8b' at {live.llm.base_url}")
    shot(qtbot, dialog, "3_llm_tested")
    dialog.model_combo.setCurrentText("qwen2.5:7b")
    assert dialog.llm_result.text() == "", "the test was of another model: its result is not left beside this one"
    shot(qtbot, dialog, "3_llm")
    click(qtbot, dialog.next_button)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)

    status = live.familiar.get_status()
    assert status.configured, status.missing
    assert live.window.dashboard.setup_hint.isHidden()
    settings = tomllib.loads(live.paths.character_toml.read_text(encoding="utf-8"))
    assert settings["familiar"]["display_name"] == "Lantern"
    assert (settings["llm"]["base_url"], settings["llm"]["model"]) == (live.llm.base_url, "qwen2.5:7b")
    assert TOKEN in live.paths.secrets_file.read_text(encoding="utf-8")
    reply = run(live.familiar.chat_local("hello"))  # in force at once: no restart
    assert reply
    assert live.llm.requests[-1].body["model"] == "qwen2.5:7b"


def test_a_wrong_token_says_invalid_token_and_is_not_saved(qtbot: QtBot, live: Live) -> None:
    dialog = live.window.open_welcome()
    settle(qtbot)
    click(qtbot, dialog.skip_button)

    dialog.token_field.setText("MTIz.not-the-token")
    click(qtbot, dialog.next_button)  # Next checks a token not checked yet

    assert dialog.step == "discord", "a rejected token keeps the step open"
    assert dialog.verdict_label.text().startswith("Discord rejected this token")
    assert dialog.verdict_label.text().endswith("Skip to go on without saving it.")
    assert ERROR_RED in dialog.verdict_label.styleSheet()
    assert not dialog.invite_label.isVisible()
    said = [label.text() for label in dialog.findChildren(QLabel) if label.isVisible()]
    assert sum(text.count("Discord rejected this token") for text in said) == 1, f"said once only: {said}"
    shot(qtbot, dialog, "2_discord_invalid")
    click(qtbot, dialog.next_button)  # Next again on the same token: still said once
    said = [label.text() for label in dialog.findChildren(QLabel) if label.isVisible()]
    assert sum(text.count("Discord rejected this token") for text in said) == 1, f"said once only: {said}"
    assert "discord_token" not in live.paths.secrets_file.read_text(encoding="utf-8")
    assert "bot token" in live.familiar.get_status().missing


def test_the_message_content_intent_off_is_a_clear_verdict(qtbot: QtBot, intent_off: Live) -> None:
    dialog = intent_off.window.open_welcome()
    settle(qtbot)
    click(qtbot, dialog.skip_button)
    dialog.token_field.setText(TOKEN)

    click(qtbot, dialog.check_button)

    assert "its Message Content intent is off" in dialog.verdict_label.text()
    assert "switch on 'Message Content Intent'" in dialog.verdict_label.text()
    assert ERROR_RED in dialog.verdict_label.styleSheet()
    assert INVITE in dialog.invite_label.text(), "the token is good: the invite link is shown"
    shot(qtbot, dialog, "2_discord_intent_off")
    click(qtbot, dialog.next_button)  # the token logs in: it is saved, the intent is for the Portal
    assert dialog.step == "llm"
    assert TOKEN in intent_off.paths.secrets_file.read_text(encoding="utf-8")


def test_an_endpoint_that_is_down_says_so_and_nothing_is_listed(qtbot: QtBot, live: Live) -> None:
    dialog = live.window.open_welcome()
    settle(qtbot)
    click(qtbot, dialog.skip_button)
    click(qtbot, dialog.skip_button)
    assert dialog.step == "llm"
    down = "http://127.0.0.1:9/v1"
    dialog.url_field.setText(down)

    click(qtbot, dialog.models_button)

    assert (
        dialog.llm_result.text() == f"Cannot reach the LLM endpoint {down} (connection refused). Is the server running?"
    )
    assert ERROR_RED in dialog.llm_result.styleSheet()
    assert dialog.model_combo.count() == 0
    assert live.llm.requests == []


def test_every_step_can_be_skipped_and_nothing_is_saved(qtbot: QtBot, live: Live) -> None:
    before = live.paths.character_toml.read_bytes()
    dialog = live.window.open_welcome()
    settle(qtbot)
    dialog.name_field.setText("Not this")
    for step in ("name", "discord", "llm"):
        assert dialog.step == step
        click(qtbot, dialog.skip_button)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    assert live.paths.character_toml.read_bytes() == before
    assert live.window.maybe_show_first_run(), "not configured yet: the welcome comes back"
    settle(qtbot)


def test_try_it_without_discord_chooses_a_model_then_opens_chat_and_is_remembered(
    qtbot: QtBot, run: Run[Any], live: Live
) -> None:
    assert live.window.maybe_show_first_run()
    dialog = live.welcome()
    settle(qtbot)
    click(qtbot, dialog.next_button)  # the name as it is: nothing to save

    click(qtbot, dialog.without_discord_button)

    assert dialog.isVisible(), "Chat needs a language model first: the welcome goes on to it"
    assert dialog.step == "llm"
    assert dialog.chat_note.isVisible()
    assert dialog.next_button.text() == CHAT_LABEL
    shot(qtbot, dialog, "3_llm_without_discord")
    dialog.url_field.setText(live.llm.base_url)
    click(qtbot, dialog.models_button)
    assert dialog.model_combo.currentText() == "llama3.1:8b"
    click(qtbot, dialog.next_button)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)

    assert live.window.current_pane.name == "chat"
    live.llm.script("Hello from here.")
    chat = live.window.chat
    qtbot.waitUntil(lambda: chat.is_loaded, timeout=WAIT_MS)
    qtbot.keyClicks(chat.input, "hello")
    qtbot.keyClick(chat.input, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: chat.transcript_model.rowCount() == 2, timeout=WAIT_MS)
    assert "Hello from here." in str(chat.transcript_model.index(1, 0).data()), "the first chat has its model"
    assert live.familiar.get_status().missing == ("bot token",)

    # The next launch: a chat-only familiar with its model is not asked for a token again.
    assert UiPreferencesFile(live.prefs).prefs.without_discord == ("default",)
    again = MainWindow(live.familiar, prefs=UiPreferencesFile(live.prefs))
    qtbot.addWidget(again)
    try:
        assert not again.maybe_show_first_run()
        assert again.welcome_dialog is None
    finally:
        run(again.shutdown())


def test_back_from_the_model_step_returns_to_discord_and_the_usual_ending(qtbot: QtBot, live: Live) -> None:
    dialog = live.window.open_welcome()
    settle(qtbot)
    click(qtbot, dialog.skip_button)
    click(qtbot, dialog.without_discord_button)
    assert (dialog.step, dialog.next_button.text()) == ("llm", CHAT_LABEL)

    click(qtbot, dialog.back_button)

    assert dialog.step == "discord"
    assert not dialog.without_discord
    click(qtbot, dialog.skip_button)
    assert (dialog.step, dialog.next_button.text()) == ("llm", FINISH_LABEL)
    assert not dialog.chat_note.isVisible()
    click(qtbot, dialog.skip_button)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    assert live.window.current_pane.name == "dashboard", "no Chat asked for"


def test_without_discord_but_no_model_the_welcome_comes_back(qtbot: QtBot, live: Live) -> None:
    dialog = live.window.open_welcome()
    settle(qtbot)
    click(qtbot, dialog.skip_button)
    click(qtbot, dialog.without_discord_button)

    click(qtbot, dialog.skip_button)  # no model: Chat opens as asked, but cannot answer yet

    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    assert live.window.current_pane.name == "chat"
    assert UiPreferencesFile(live.prefs).prefs.without_discord == (), "nothing to remember: it cannot chat yet"
    assert live.window.maybe_show_first_run()
    settle(qtbot)


def test_a_character_card_becomes_the_familiar(qtbot: QtBot, run: Run[Any], live: Live) -> None:
    dialog = live.window.open_welcome()
    settle(qtbot)

    dialog.choose_card(SAMPLES / "rook_v3.json")
    settle(qtbot)
    assert dialog.name_field.text() == "Captain Rook"
    assert "3 lore entries" in dialog.card_label.text()
    shot(qtbot, dialog, "1_card")
    click(qtbot, dialog.next_button)

    assert dialog.step == "discord"
    settings = tomllib.loads(live.paths.character_toml.read_text(encoding="utf-8"))
    assert settings["familiar"]["display_name"] == "Captain Rook"
    assert run(live.familiar.setup.current()).display_name == "Captain Rook", "in force at once"

    def files() -> dict[str, bytes]:
        return {
            p.name: p.read_bytes()
            for p in live.paths.folder.iterdir()
            if p.is_file() and not p.name.startswith("history.db")
        }

    before = files()
    click(qtbot, dialog.back_button)
    assert dialog.name_field.text() == "Captain Rook"
    click(qtbot, dialog.next_button)  # the card is applied already: nothing is made again, nothing asked
    assert dialog.step == "discord"
    assert files() == before
    click(qtbot, dialog.without_discord_button)
    assert dialog.step == "llm", "the card brought no model settings: the model step follows"


def test_a_familiar_made_from_a_card_is_not_asked_its_name_and_gets_to_the_model_step(
    qtbot: QtBot, run: Run[Any], tmp_path: Path
) -> None:
    root = tmp_path / "home"
    made = create_familiar_from_card(SAMPLES / "rook_v3.json", root)  # File > New familiar, from a card
    paths = FamiliarPaths(root=root, name=made.name)
    llm = FakeLLM(models=("qwen2.5:7b",))
    run(llm.start())
    familiar = run(Familiar.open(paths, SecretStore(paths.name, paths.secrets_file, use_keyring=False), env={}))
    window = MainWindow(familiar)
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.maybe_show_first_run()
        dialog = window.welcome_dialog
        assert dialog is not None
        settle(qtbot)
        assert dialog.step == "discord", "the card named it: the name step is done"
        assert dialog.step_label.text() == "Step 2 of 3"
        shot(qtbot, dialog, "2_discord_from_card")
        click(qtbot, dialog.back_button)
        assert (dialog.step, dialog.name_field.text()) == ("name", "Captain Rook")
        assert "Made from a character card" in dialog.card_label.text()
        assert not dialog.back_button.isEnabled()
        shot(qtbot, dialog, "1_name_from_card")
        click(qtbot, dialog.next_button)
        assert dialog.step == "discord"
        click(qtbot, dialog.skip_button)
        assert (dialog.step, dialog.next_button.text()) == ("llm", FINISH_LABEL)
        dialog.url_field.setText(llm.base_url)
        click(qtbot, dialog.models_button)
        click(qtbot, dialog.next_button)
        qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
        assert familiar.get_status().missing == ("bot token",), "it has its model now"
        settings = tomllib.loads(paths.character_toml.read_text(encoding="utf-8"))
        assert (settings["familiar"]["display_name"], settings["llm"]["model"]) == ("Captain Rook", "qwen2.5:7b")
    finally:
        run(window.shutdown())
        run(familiar.close())
        run(llm.close())


def test_a_file_that_is_not_a_card_is_one_line_and_changes_nothing(qtbot: QtBot, live: Live) -> None:
    dialog = live.window.open_welcome()
    settle(qtbot)
    before = live.paths.character_toml.read_bytes()

    dialog.choose_card(live.paths.character_toml)
    settle(qtbot)

    assert dialog.error_label.isVisible()
    assert "\n" not in dialog.error_label.text()
    assert dialog.name_field.text() == "Wisp"
    click(qtbot, dialog.next_button)
    assert live.paths.character_toml.read_bytes() == before


def test_values_the_environment_sets_are_read_only_and_are_the_ones_used(
    qtbot: QtBot, run: Run[Any], tmp_path: Path
) -> None:
    discord = FakeDiscord(token=TOKEN, bot_name="Wisp")
    llm = FakeLLM(models=("env-model",))
    run(discord.start())
    run(llm.start())
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(paths, discord.api_base, discord.gateway_url, "")
    env = {"DISCORD_TOKEN": TOKEN, "FAMILIAR_LLM_BASE_URL": llm.base_url}
    familiar = run(Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env=env))
    dialog = WelcomeDialog(familiar)
    qtbot.addWidget(dialog)
    dialog.show()
    try:
        settle(qtbot)
        click(qtbot, dialog.skip_button)
        assert dialog.token_field.isReadOnly()
        assert dialog.token_field.placeholderText() == "set by DISCORD_TOKEN"
        click(qtbot, dialog.check_button)
        assert dialog.verdict_label.text() == "OK: this is the bot Wisp.", "the environment's token was checked"
        click(qtbot, dialog.next_button)
        assert "discord_token" not in paths.secrets_file.read_text(encoding="utf-8")

        assert dialog.url_field.isReadOnly()
        assert dialog.url_field.text() == llm.base_url
        assert not dialog.preset_combo.isEnabled()
        click(qtbot, dialog.models_button)
        assert dialog.model_combo.currentText() == "env-model"
        assert dialog.llm_result.text().startswith(f"1 model listed. OK: model 'env-model' at {llm.base_url}")
        click(qtbot, dialog.next_button)
        qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
        settings = tomllib.loads(paths.character_toml.read_text(encoding="utf-8"))
        assert settings["llm"] == {**settings["llm"], "base_url": "", "model": "env-model"}, "the URL is not saved"
    finally:
        run(familiar.close())
        run(llm.close())
        run(discord.close())
