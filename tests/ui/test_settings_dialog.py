"""Settings on the real runtime against the fake LLM: each value in force with where it comes from (character.toml,
the OS keyring, the environment); a value the environment sets is read-only and is the one Test tries; Test saves
nothing; Save applies at once to the reply path and the background memory workers; a bad value is one line and
changes nothing; "Run the welcome again" opens the welcome flow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QLineEdit
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.config.ui_prefs import UiPreferencesFile
from app.runtime.service import Familiar
from app.ui.dialogs.settings_dialog import SettingsDialog
from app.ui.main_window import MainWindow
from app.ui.theme import ERROR_RED, OK_GREEN
from tests.conftest import write_character_toml
from tests.fakes.keyring_backend import MemoryKeyring
from tests.fakes.llm_server import FakeLLM, RecordedRequest
from tests.runtime.projectors.helpers import Brain, add_turns, learning, prompt, requests_of, turn, worker_of
from tests.ui.support import QT_STRICT, Run, settle

pytestmark = [*QT_STRICT[1:], pytest.mark.timeout(60)]

NO_DISCORD = "http://127.0.0.1:9/api"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
WAIT_MS = 10_000


@pytest.fixture
def llms(run: Run[Any]) -> Iterator[tuple[FakeLLM, FakeLLM]]:
    first, other = FakeLLM(), FakeLLM()
    run(first.start())
    run(other.start())
    try:
        yield first, other
    finally:
        run(first.close())
        run(other.close())
    assert first.unhandled == other.unhandled == []


def open_familiar(
    run: Run[Any], tmp_path: Path, llm: FakeLLM, env: dict[str, str], *, keyring: bool = False, extra: str = ""
) -> tuple[Familiar, FamiliarPaths]:
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(paths, NO_DISCORD, "ws://127.0.0.1:9/", llm.base_url, extra)
    store = SecretStore("default", paths.secrets_file, use_keyring=keyring)
    store.set("llm_api_key", "sk-old-key-c0de")
    return run(Familiar.open(paths, store, env=env)), paths


@pytest.fixture
def closing(run: Run[Any]) -> Iterator[list[Familiar]]:
    opened: list[Familiar] = []
    yield opened
    for familiar in opened:
        run(familiar.close())


def make_dialog(qtbot: QtBot, familiar: Familiar) -> SettingsDialog:
    dialog = SettingsDialog(familiar)
    qtbot.addWidget(dialog)
    dialog.show()
    settle(qtbot)
    return dialog


def click(qtbot: QtBot, button: Any) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    settle(qtbot)


def save(qtbot: QtBot, dialog: SettingsDialog) -> None:
    click(qtbot, dialog.buttons.button(QDialogButtonBox.StandardButton.Save))


def test_each_value_shows_where_it_comes_from_and_an_environment_one_is_read_only(
    qtbot: QtBot,
    run: Run[Any],
    tmp_path: Path,
    llms: tuple[FakeLLM, FakeLLM],
    memory_keyring: MemoryKeyring,
    closing: list[Familiar],
) -> None:
    first, other = llms
    env = {"FAMILIAR_LLM_BASE_URL": other.base_url}
    familiar, paths = open_familiar(run, tmp_path, first, env, keyring=True)
    closing.append(familiar)

    dialog = make_dialog(qtbot, familiar)

    assert dialog.base_url.text() == other.base_url, "the value in force, not the file's"
    assert dialog.base_url.isReadOnly()
    assert dialog.sources["base_url"].text() == "set by FAMILIAR_LLM_BASE_URL (environment)"
    assert (dialog.model.text(), dialog.sources["model"].text()) == ("test-model", "from character.toml")
    assert not dialog.model.isReadOnly()
    assert dialog.api_key.text() == "", "a secret is never read back"
    assert dialog.api_key.echoMode() == QLineEdit.EchoMode.Password
    assert dialog.sources["api_key"].text() == "saved in the OS keyring (…c0de)"
    assert dialog.sources["bot_token"].text() == "not set"
    assert dialog.background_base_url.text() == ""
    assert dialog.background_base_url.placeholderText() == "empty: follows the reply endpoint"
    assert dialog.display_name.text() == "Wisp"
    assert str(paths.character_toml) in dialog.where_label.text()
    assert "OS keyring" in dialog.where_label.text()
    ARTIFACTS.mkdir(exist_ok=True)
    assert dialog.grab().save(str(ARTIFACTS / "settings_sources.png"))


def test_test_tries_the_environment_endpoint_that_is_really_used(
    qtbot: QtBot, run: Run[Any], tmp_path: Path, llms: tuple[FakeLLM, FakeLLM], closing: list[Familiar]
) -> None:
    first, other = llms
    familiar, _paths = open_familiar(run, tmp_path, first, {"FAMILIAR_LLM_BASE_URL": other.base_url})
    closing.append(familiar)
    dialog = make_dialog(qtbot, familiar)
    dialog.base_url.setText(first.base_url)  # read-only for a user; even set from code it is not what is used

    click(qtbot, dialog.test_button)

    assert dialog.test_result.text().startswith(f"OK: model 'test-model' at {other.base_url} answered in ")
    assert OK_GREEN in dialog.test_result.styleSheet()
    assert len(other.requests) == 1
    assert first.requests == []


def test_test_tries_typed_values_and_saves_nothing(
    qtbot: QtBot, run: Run[Any], tmp_path: Path, llms: tuple[FakeLLM, FakeLLM], closing: list[Familiar]
) -> None:
    first, other = llms
    familiar, paths = open_familiar(run, tmp_path, first, {})
    closing.append(familiar)
    before = paths.character_toml.read_bytes()
    dialog = make_dialog(qtbot, familiar)
    dialog.base_url.setText(other.base_url)
    dialog.model.setText("typed-model")

    click(qtbot, dialog.test_button)

    assert dialog.test_result.text().startswith(f"OK: model 'typed-model' at {other.base_url}")
    assert [r.model for r in other.requests] == ["typed-model"]
    assert other.requests[0].headers["Authorization"] == "Bearer sk-old-key-c0de", "the saved key is kept"
    assert paths.character_toml.read_bytes() == before

    dialog.base_url.setText("http://127.0.0.1:9/v1")
    click(qtbot, dialog.test_button)
    assert dialog.test_result.text() == (
        "Cannot reach the LLM endpoint http://127.0.0.1:9/v1 (connection refused). Is the server running?"
    )
    assert ERROR_RED in dialog.test_result.styleSheet()


def _learn(run: Run[Any], familiar: Familiar, llm: FakeLLM, text: str) -> RecordedRequest:
    """The background worker's request about a message added now."""
    run(add_turns(familiar, turn(text)))
    run(familiar.learn_now())
    asked = [r for r in requests_of(llm, "rich_note") if text in prompt(r)]
    assert len(asked) == 1, "the memory worker did not ask the model about the new message"
    return asked[0]


def test_saving_a_key_reaches_the_background_workers_next_request_at_once(
    qtbot: QtBot, run: Run[Any], tmp_path: Path, llms: tuple[FakeLLM, FakeLLM], closing: list[Familiar]
) -> None:
    first, _other = llms
    first.default_reply = Brain()
    familiar, _paths = open_familiar(run, tmp_path, first, {}, extra=learning("rich_note", batch_turns=1))
    closing.append(familiar)
    assert _learn(run, familiar, first, "I keep bees.").headers["Authorization"] == "Bearer sk-old-key-c0de"

    dialog = make_dialog(qtbot, familiar)
    dialog.api_key.setText("sk-new")
    save(qtbot, dialog)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    assert _learn(run, familiar, first, "I keep goats.").headers["Authorization"] == "Bearer sk-new"

    dialog = make_dialog(qtbot, familiar)
    assert dialog.sources["api_key"].text().startswith("saved in ")
    dialog.background_api_key.setText("sk-background")
    dialog.background_model.setText("cheap-model")
    save(qtbot, dialog)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)

    worker = _learn(run, familiar, first, "I keep hens.")
    assert (worker.headers["Authorization"], worker.model) == ("Bearer sk-background", "cheap-model")
    run(familiar.chat_local("hello"))
    reply = [r for r in first.requests if worker_of(r.messages) is None][-1]
    assert (reply.headers["Authorization"], reply.model) == ("Bearer sk-new", "test-model")


def test_a_bad_value_is_one_line_and_changes_nothing(
    qtbot: QtBot, run: Run[Any], tmp_path: Path, llms: tuple[FakeLLM, FakeLLM], closing: list[Familiar]
) -> None:
    first, _other = llms
    familiar, paths = open_familiar(run, tmp_path, first, {})
    closing.append(familiar)
    before = paths.character_toml.read_bytes()
    dialog = make_dialog(qtbot, familiar)
    dialog.base_url.setText("localhost:11434")
    dialog.api_key.setText("sk-would-be-saved")

    save(qtbot, dialog)

    assert dialog.isVisible()
    assert dialog.error_label.text() == (
        "The LLM endpoint must be a web address starting with http:// or https:// (got 'localhost:11434')."
    )
    assert paths.character_toml.read_bytes() == before
    assert "sk-would-be-saved" not in paths.secrets_file.read_text(encoding="utf-8")


def test_run_the_welcome_again_opens_the_welcome(
    qtbot: QtBot, run: Run[Any], tmp_path: Path, llms: tuple[FakeLLM, FakeLLM], closing: list[Familiar]
) -> None:
    familiar, _paths = open_familiar(run, tmp_path, llms[0], {})
    closing.append(familiar)
    window = MainWindow(familiar)
    qtbot.addWidget(window)
    window.show()
    try:
        dialog = window.open_settings()
        settle(qtbot)
        click(qtbot, dialog.welcome_button)
        assert not dialog.isVisible()
        welcome = window.welcome_dialog
        assert welcome is not None
        assert welcome.isVisible()
        assert welcome.step == "name"
    finally:
        run(window.shutdown())


def test_an_empty_endpoint_is_labelled_not_set(
    qtbot: QtBot, run: Run[Any], tmp_path: Path, closing: list[Familiar]
) -> None:
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(paths, NO_DISCORD, "ws://127.0.0.1:9/", "")  # base_url = "" in the file
    familiar = run(Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={}))
    closing.append(familiar)

    dialog = make_dialog(qtbot, familiar)

    assert dialog.base_url.text() == ""
    assert dialog.sources["base_url"].text() == "not set", "an empty value in the file sets nothing"
    assert dialog.sources["model"].text() == "from character.toml"


def test_settings_is_as_tall_as_its_wrapped_text_needs(
    qtbot: QtBot, run: Run[Any], tmp_path: Path, llms: tuple[FakeLLM, FakeLLM], closing: list[Familiar]
) -> None:
    """The paths under the fields and the Window section's note wrap: the dialog grows for them rather than
    squeezing them into the rows around (which cut their text)."""
    familiar, _paths = open_familiar(run, tmp_path, llms[0], {})
    closing.append(familiar)
    window = MainWindow(familiar, prefs=UiPreferencesFile(tmp_path / "a-rather-long-folder-name" / "ui.toml"))
    qtbot.addWidget(window)
    window.show()
    try:
        dialog = window.open_settings()
        settle(qtbot)
        layout = dialog.layout()
        assert layout is not None
        qtbot.waitUntil(lambda: dialog.height() >= layout.totalHeightForWidth(dialog.width()), timeout=WAIT_MS)
        ARTIFACTS.mkdir(exist_ok=True)
        assert dialog.grab().save(str(ARTIFACTS / "settings_window_section.png"))
        dialog.close()
        settle(qtbot)
    finally:
        run(window.shutdown())
