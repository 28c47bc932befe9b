"""Chat pane: history on first show, Enter sends, the reply or the error appears, input waits for the reply."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from pytestqt.qtbot import QtBot

from app.runtime.facade import ChatLine
from app.ui.models.chat_model import ChatNotice
from app.ui.panes.chat import ChatPane
from app.ui.theme import ERROR_RED
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, make_context, settle

pytestmark = QT_STRICT


def make_pane(qtbot: QtBot, facade: FakeFacade) -> ChatPane:
    pane = ChatPane(make_context(qtbot, facade))
    qtbot.addWidget(pane)
    pane.show()
    settle(qtbot)  # the history load started by the first show
    return pane


def texts(pane: ChatPane) -> list[str]:
    model = pane.transcript_model
    return [model.index(row, 0).data(Qt.ItemDataRole.DisplayRole) for row in range(model.rowCount())]


def send(qtbot: QtBot, pane: ChatPane, text: str) -> None:
    qtbot.keyClicks(pane.input, text)
    qtbot.keyClick(pane.input, Qt.Key.Key_Return)


def test_history_is_loaded_once_when_first_shown(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.history = [
        facade.line("You", "are you there?", from_familiar=False),
        facade.line("Wisp", "Always.", from_familiar=True),
    ]
    pane = make_pane(qtbot, facade)

    assert texts(pane) == ["You: are you there?", "Wisp: Always."]
    pane.hide()
    pane.show()
    settle(qtbot)
    assert facade.call_names().count("load_local_history") == 1
    assert pane.input.isEnabled()


def test_enter_sends_and_the_reply_appears(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.replies = ["Hello! I remember you from the Lantern Club."]
    pane = make_pane(qtbot, facade)

    send(qtbot, pane, "hello wisp")
    settle(qtbot)

    assert texts(pane) == ["You: hello wisp", "Wisp: Hello! I remember you from the Lantern Club."]
    assert facade.calls[-1].kwargs == {"text": "hello wisp", "greeting": None}
    assert pane.input.text() == ""
    assert pane.input.isEnabled()


def test_input_is_disabled_while_waiting_for_the_reply(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make_pane(qtbot, facade)
    facade.gate = asyncio.Event()

    send(qtbot, pane, "slow question")
    qtbot.waitUntil(lambda: pane.is_waiting, timeout=WAIT_MS)

    assert texts(pane) == ["You: slow question"]  # shown before the reply arrives
    assert not pane.input.isEnabled()
    assert not pane.send_button.isEnabled()
    assert not pane.waiting_label.isHidden()

    facade.gate.set()
    settle(qtbot)
    assert texts(pane) == ["You: slow question", "Wisp: You said: slow question"]
    assert pane.input.isEnabled()
    assert pane.waiting_label.isHidden()


def test_an_error_shows_as_a_red_line_and_input_comes_back(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.chat_error = "The LLM endpoint did not answer within 30 s. Is it running?"
    pane = make_pane(qtbot, facade)

    send(qtbot, pane, "hello?")
    settle(qtbot)

    assert texts(pane) == ["You: hello?", "⚠ The LLM endpoint did not answer within 30 s. Is it running?"]
    last = pane.transcript_model.index(1, 0)
    assert last.data(Qt.ItemDataRole.ForegroundRole) == QColor(ERROR_RED)
    assert pane.input.isEnabled()


def test_the_send_button_sends_and_blank_text_does_not(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make_pane(qtbot, facade)

    qtbot.keyClicks(pane.input, "   ")
    qtbot.mouseClick(pane.send_button, Qt.MouseButton.LeftButton)
    settle(qtbot)
    assert "chat_local" not in facade.call_names()

    pane.input.setText("by button")
    qtbot.mouseClick(pane.send_button, Qt.MouseButton.LeftButton)
    settle(qtbot)
    assert texts(pane) == ["You: by button", "Wisp: You said: by button"]
    user_line = pane.transcript_model.entries[0]
    assert isinstance(user_line, ChatLine)
    assert not user_line.from_familiar


def test_a_history_failure_is_a_notice_not_a_crash(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.history_error = "The memory store is locked by another Familiar."
    pane = make_pane(qtbot, facade)

    entries = pane.transcript_model.entries
    assert len(entries) == 1
    assert isinstance(entries[0], ChatNotice)
    assert "locked by another Familiar" in entries[0].message
    assert pane.input.isEnabled()
