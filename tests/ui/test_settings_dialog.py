"""Settings dialog: Save passes the fields (None when empty); Test shows the endpoint's one-line answer."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QLineEdit
from pytestqt.qtbot import QtBot

from app.ui.dialogs.settings_dialog import SAVE_AND_TEST_LABEL, TEST_LABEL, SettingsDialog
from app.ui.theme import ERROR_RED
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, settle

pytestmark = QT_STRICT


def make_dialog(qtbot: QtBot, facade: FakeFacade) -> SettingsDialog:
    dialog = SettingsDialog(facade)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def click_save(qtbot: QtBot, dialog: SettingsDialog) -> None:
    button = dialog.buttons.button(QDialogButtonBox.StandardButton.Save)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    settle(qtbot)


def test_fields_hide_secrets_and_hint_the_default_endpoint(qtbot: QtBot, facade: FakeFacade) -> None:
    dialog = make_dialog(qtbot, facade)

    assert dialog.bot_token.echoMode() == QLineEdit.EchoMode.Password
    assert dialog.api_key.echoMode() == QLineEdit.EchoMode.Password
    assert dialog.base_url.echoMode() == QLineEdit.EchoMode.Normal
    assert dialog.base_url.placeholderText() == "http://127.0.0.1:11434/v1"
    assert not dialog.isModal()


def test_save_passes_values_and_none_for_empty_fields(qtbot: QtBot, facade: FakeFacade) -> None:
    dialog = make_dialog(qtbot, facade)
    qtbot.keyClicks(dialog.bot_token, "  MTIz.abc.def  ")
    qtbot.keyClicks(dialog.base_url, "http://127.0.0.1:11434/v1")
    qtbot.keyClicks(dialog.model, "   ")

    with qtbot.waitSignal(dialog.saved, timeout=3_000):
        click_save(qtbot, dialog)

    assert facade.calls[-1].name == "save_credentials"
    assert facade.calls[-1].kwargs == {
        "bot_token": "MTIz.abc.def",
        "llm_base_url": "http://127.0.0.1:11434/v1",
        "llm_api_key": None,
        "llm_model": None,
    }
    assert not dialog.isVisible()


def test_a_failed_save_keeps_the_dialog_open_with_the_message(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.save_error = "The OS keyring is locked. Unlock it and try again."
    dialog = make_dialog(qtbot, facade)
    qtbot.keyClicks(dialog.bot_token, "token")

    click_save(qtbot, dialog)

    assert dialog.isVisible()
    assert dialog.error_label.text() == "The OS keyring is locked. Unlock it and try again."
    assert not dialog.error_label.isHidden()
    assert dialog.buttons.button(QDialogButtonBox.StandardButton.Save).isEnabled()


def test_test_button_shows_the_result(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.endpoint_result = "OK: llama3.1:8b answered in 0.4 s"
    dialog = make_dialog(qtbot, facade)
    assert dialog.test_button.text() == TEST_LABEL

    qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    settle(qtbot)

    assert dialog.test_result.text() == "OK: llama3.1:8b answered in 0.4 s"
    assert facade.call_names()[-1] == "test_llm_endpoint"
    assert "save_credentials" not in facade.call_names()


def test_test_button_shows_the_error_on_one_line(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.endpoint_error = "Cannot reach http://127.0.0.1:11434/v1:\nconnection refused."
    dialog = make_dialog(qtbot, facade)

    qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    settle(qtbot)

    assert dialog.test_result.text() == "Cannot reach http://127.0.0.1:11434/v1: connection refused."
    assert ERROR_RED in dialog.test_result.styleSheet()
    assert dialog.test_button.isEnabled()


def test_test_saves_edited_endpoint_fields_first(qtbot: QtBot, facade: FakeFacade) -> None:
    dialog = make_dialog(qtbot, facade)
    qtbot.keyClicks(dialog.bot_token, "not-saved-by-test")
    qtbot.keyClicks(dialog.model, "qwen2.5:7b")
    assert dialog.test_button.text() == SAVE_AND_TEST_LABEL

    qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    settle(qtbot)

    assert facade.call_names()[-2:] == ["save_credentials", "test_llm_endpoint"]
    assert facade.calls[-2].kwargs == {
        "bot_token": None,
        "llm_base_url": None,
        "llm_api_key": None,
        "llm_model": "qwen2.5:7b",
    }
    assert dialog.isVisible()
    dialog.model.clear()
    assert dialog.test_button.text() == TEST_LABEL


def test_cancel_is_ignored_while_saving(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.gate = asyncio.Event()
    dialog = make_dialog(qtbot, facade)
    qtbot.keyClicks(dialog.bot_token, "token")
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Save), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "save_credentials" in facade.call_names(), timeout=WAIT_MS)

    assert not dialog.buttons.button(QDialogButtonBox.StandardButton.Cancel).isEnabled()
    dialog.reject()
    assert dialog.isVisible()

    facade.gate.set()
    settle(qtbot)
    assert not dialog.isVisible()


def test_the_dialog_says_where_secrets_are_kept(qtbot: QtBot, facade: FakeFacade) -> None:
    from PySide6.QtWidgets import QLabel

    dialog = make_dialog(qtbot, facade)
    texts = " ".join(label.text() for label in dialog.findChildren(QLabel))
    assert f"stored in: {facade.secrets_location}" in texts
