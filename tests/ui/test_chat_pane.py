"""Chat pane: history on first show, Enter sends, the reply or the error appears, input waits for the reply; the
name it goes by, the greeting, each message's time and actions, Markdown, and Clear (issue 18 items 6 and 7)."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QContextMenuEvent
from PySide6.QtWidgets import QApplication, QMenu, QMessageBox
from pytestqt.qtbot import QtBot

from app.runtime.api.facade import ChatLine
from app.runtime.events import SettingsReloaded
from app.ui.models.chat_model import ChatNotice
from app.ui.panes.chat import ChatPane
from app.ui.theme import ERROR_RED
from app.ui.time_text import when
from app.ui.widgets.chat_view import ChatAction, MessageWidget
from tests.ui.fake_facade import Call, FakeFacade
from tests.ui.support import QT_STRICT, WAIT_MS, make_context, open_dialog, press, settle

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


# -- issue 18 items 6 and 7: the name, the greeting, each message's time and actions, Markdown, Clear ----------
def message(pane: ChatPane, row: int) -> MessageWidget:
    return pane.chat_view.message(row)


def offered(pane: ChatPane, row: int) -> set[ChatAction]:
    return {action for action, button in message(pane, row).buttons.items() if not button.isHidden()}


def click(qtbot: QtBot, pane: ChatPane, row: int, action: ChatAction) -> None:
    button = message(pane, row).buttons[action]
    assert not button.isHidden(), f"row {row} offers no {action}"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    settle(qtbot)


def test_the_chat_says_the_name_the_familiar_goes_by_not_its_folder(qtbot: QtBot) -> None:
    facade = FakeFacade(name="default", display_name="Moth")
    pane = make_pane(qtbot, facade)
    assert "Talk to Moth here" in pane.intro.text()
    assert pane.input.placeholderText() == "Message Moth…"
    assert pane.waiting_label.text() == "Moth is thinking…"
    assert "default" not in pane.intro.text() + pane.input.placeholderText()

    facade.greetings = ["Ember is here."]
    facade.publish(SettingsReloaded(display_name="Ember"))  # a Character save
    settle(qtbot)
    assert pane.input.placeholderText() == "Message Ember…"
    assert pane.greeting is not None
    assert pane.greeting.content == "Ember is here."


def test_each_message_shows_its_time_and_who_said_it(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.history = [
        facade.line("You", "are you there?", from_familiar=False),
        facade.line("Wisp", "Always.", from_familiar=True),
    ]
    pane = make_pane(qtbot, facade)
    for row, line in enumerate(facade.history):
        shown = message(pane, row)
        assert shown.author.text() == line.author
        assert shown.time.text() == when(line.created_at)
        assert f"{line.created_at.astimezone():%H:%M:%S}" in shown.time.toolTip()


def test_copy_puts_the_message_as_written_on_the_clipboard(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.history = [facade.line("Wisp", "The key is ||under the **mat**||.", from_familiar=True)]
    pane = make_pane(qtbot, facade)
    QApplication.clipboard().clear()
    click(qtbot, pane, 0, ChatAction.COPY)
    assert QApplication.clipboard().text() == "The key is ||under the **mat**||."
    assert message(pane, 0).buttons[ChatAction.COPY].text() == "Copied"


def test_markdown_shows_as_discord_renders_it_and_a_spoiler_opens_on_a_click(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.history = [
        facade.line("Wisp", "**Bold**, *soft*, `code` and ||the secret||", from_familiar=True),
        facade.line("You", "<b>not bold</b> <img src=x onerror=alert(1)>", from_familiar=False),
    ]
    pane = make_pane(qtbot, facade)
    body = message(pane, 0).body
    assert body.textFormat() == Qt.TextFormat.RichText
    assert "<b>Bold</b>" in body.text()
    assert "<i>soft</i>" in body.text()
    assert ">code</code>" in body.text()
    assert "secret" not in body.text()

    body.linkActivated.emit("spoiler:0")  # what a click on the hidden bar does

    assert "the secret" in body.text()
    hostile = message(pane, 1).body.text()
    assert "&lt;b&gt;not bold&lt;/b&gt; &lt;img src=x onerror=alert(1)&gt;" in hostile
    assert "<img" not in hostile
    assert "<b>" not in hostile


def test_an_empty_chat_opens_with_the_greeting_to_pick_until_the_first_message(
    qtbot: QtBot, facade: FakeFacade
) -> None:
    facade.greetings = ["*waves* Welcome!", "Stormy night, isn't it?", "Back again?"]
    facade.replies = ["It is. Come in."]
    pane = make_pane(qtbot, facade)
    assert texts(pane) == ["Wisp: *waves* Welcome!"]
    assert offered(pane, 0) == {ChatAction.COPY, ChatAction.PREVIOUS, ChatAction.NEXT}
    assert message(pane, 0).position.text() == "1 / 3"

    click(qtbot, pane, 0, ChatAction.NEXT)
    assert texts(pane) == ["Wisp: Stormy night, isn't it?"]
    qtbot.keyClick(pane.input, Qt.Key.Key_Right)  # ← and → in the empty message box, as in SillyTavern
    qtbot.keyClick(pane.input, Qt.Key.Key_Right)
    assert texts(pane) == ["Wisp: *waves* Welcome!"]
    qtbot.keyClick(pane.input, Qt.Key.Key_Left)
    assert message(pane, 0).position.text() == "3 / 3"
    qtbot.keyClick(pane.input, Qt.Key.Key_Right)
    qtbot.keyClick(pane.input, Qt.Key.Key_Right)

    send(qtbot, pane, "It is!")
    settle(qtbot)

    assert facade.calls[-1].kwargs == {"text": "It is!", "greeting": "Stormy night, isn't it?"}
    assert texts(pane) == ["Wisp: Stormy night, isn't it?", "You: It is!", "Wisp: It is. Come in."]
    first = pane.transcript_model.entries[0]
    assert isinstance(first, ChatLine)
    assert first.greeting
    assert pane.greeting is None
    assert offered(pane, 0) == {ChatAction.COPY}  # neither Why (not a reply) nor a swipe
    assert not pane.swipe_greeting(1)
    qtbot.keyClick(pane.input, Qt.Key.Key_Right)
    assert texts(pane)[0] == "Wisp: Stormy night, isn't it?"


def test_a_chat_with_history_opens_on_it_without_a_greeting(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.greetings = ["Welcome!"]
    facade.history = [facade.line("You", "hello", from_familiar=False)]
    pane = make_pane(qtbot, facade)
    assert texts(pane) == ["You: hello"]
    assert "local_greetings" not in facade.call_names()


def test_the_last_reply_can_be_regenerated_and_the_new_one_replaces_it(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.replies = ["The lamp room is open.", "The lamp room is locked.", "Tea?"]
    pane = make_pane(qtbot, facade)
    send(qtbot, pane, "is the lamp room open?")
    settle(qtbot)
    reply = pane.transcript_model.entries[-1]
    assert isinstance(reply, ChatLine)
    assert offered(pane, 0) == {ChatAction.COPY}
    assert offered(pane, 1) == {ChatAction.COPY, ChatAction.WHY, ChatAction.REGENERATE}

    click(qtbot, pane, 1, ChatAction.REGENERATE)

    assert facade.calls[-1] == Call("regenerate_local", {"turn_id": reply.turn_id})
    assert texts(pane) == ["You: is the lamp room open?", "Wisp: The lamp room is locked."]
    new = pane.transcript_model.entries[-1]
    assert isinstance(new, ChatLine)
    assert new.turn_id != reply.turn_id

    pane.input.setFocus()
    qtbot.keyClick(pane.input, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)  # Ctrl+R: the same
    settle(qtbot)
    assert texts(pane)[-1] == "Wisp: Tea?"
    send(qtbot, pane, "thanks")
    settle(qtbot)
    assert ChatAction.REGENERATE not in offered(pane, 1)  # only the last reply
    assert ChatAction.REGENERATE in offered(pane, 3)


def test_a_failed_regenerate_keeps_the_reply_and_says_why(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make_pane(qtbot, facade)
    send(qtbot, pane, "hello")
    settle(qtbot)
    facade.regenerate_error = "The LLM endpoint did not answer within 30 s. Is it running?"
    click(qtbot, pane, 1, ChatAction.REGENERATE)
    assert texts(pane) == ["You: hello", "Wisp: You said: hello"]
    assert "did not answer" in pane.error_banner.text()
    assert ChatAction.REGENERATE in offered(pane, 1)


def test_retry_answers_the_stored_message_of_a_failed_reply(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.chat_error = "The LLM endpoint did not answer within 30 s. Is it running?"
    pane = make_pane(qtbot, facade)
    send(qtbot, pane, "hello?")
    settle(qtbot)
    said = pane.transcript_model.entries[0]
    assert isinstance(said, ChatLine)
    assert said.turn_id != 0
    assert offered(pane, 1) == {ChatAction.COPY, ChatAction.RETRY}

    facade.chat_error = None
    click(qtbot, pane, 1, ChatAction.RETRY)

    assert facade.calls[-1] == Call("regenerate_local", {"turn_id": said.turn_id})
    assert facade.call_names().count("chat_local") == 1  # not sent twice
    assert texts(pane) == ["You: hello?", "Wisp: You said: hello?"]


def test_retry_sends_again_a_message_that_was_refused_before_it_was_stored(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.chat_refused = "No LLM endpoint yet: set them in Settings."
    facade.greetings = ["Welcome!"]
    pane = make_pane(qtbot, facade)
    send(qtbot, pane, "hello?")
    settle(qtbot)
    assert texts(pane) == ["Wisp: Welcome!", "You: hello?", "⚠ No LLM endpoint yet: set them in Settings."]
    assert pane.greeting is not None  # nothing was stored: the greeting can still change

    facade.chat_refused = None
    click(qtbot, pane, 2, ChatAction.RETRY)

    assert [c.kwargs for c in facade.calls if c.name == "chat_local"] == [
        {"text": "hello?", "greeting": "Welcome!"}
    ] * 2
    assert texts(pane) == ["Wisp: Welcome!", "You: hello?", "Wisp: You said: hello?"]
    assert pane.greeting is None


def test_why_is_offered_on_replies_only_and_opens_the_explanation(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.history = [
        facade.line("Wisp", "Welcome!", from_familiar=True, greeting=True),
        facade.line("You", "hi", from_familiar=False),
        facade.line("Wisp", "Hello.", from_familiar=True),
    ]
    pane = make_pane(qtbot, facade)
    assert [ChatAction.WHY in offered(pane, row) for row in range(3)] == [False, False, True]
    with qtbot.waitSignal(pane.navigate_requested) as opened:
        click(qtbot, pane, 2, ChatAction.WHY)
    assert opened.args == ["explain", facade.history[2].turn_id]
    menu = pane.message_menu(2)
    assert menu is not None
    assert [a.text() for a in menu.actions()] == ["Copy", "Why did it say that?\tCtrl+I", "Regenerate\tCtrl+R"]


def test_clear_asks_saying_it_clears_the_local_chat_only_and_undo_brings_it_back(
    qtbot: QtBot, facade: FakeFacade
) -> None:
    facade.greetings = ["Welcome!"]
    facade.history = [facade.line("You", "remember the kettle", from_familiar=False)]
    pane = make_pane(qtbot, facade)
    assert pane.clear_button.text() == "Clear local chat…"
    assert "local chat only" in pane.clear_button.toolTip()
    assert "Discord" in pane.clear_button.toolTip()

    qtbot.mouseClick(pane.clear_button, Qt.MouseButton.LeftButton)
    box = open_dialog(qtbot, QMessageBox)
    assert "Only the local chat is cleared" in box.text()
    assert "Discord history" in box.text()
    assert "untouched" in box.text()
    assert "Undo" in box.text()
    assert box.button(QMessageBox.StandardButton.Ok).text() == "Clear local chat"
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
    press(box, QMessageBox.StandardButton.Cancel)
    settle(qtbot)
    assert "clear_local" not in facade.call_names()
    assert texts(pane) == ["You: remember the kettle"]

    qtbot.mouseClick(pane.clear_button, Qt.MouseButton.LeftButton)
    press(open_dialog(qtbot, QMessageBox), QMessageBox.StandardButton.Ok)
    settle(qtbot)
    assert "clear_local" in facade.call_names()
    assert texts(pane) == ["Wisp: Welcome!"]  # afresh, with its greeting
    assert not pane.clear_button.isEnabled()
    assert pane.context.undo.stack.undoText() == "Cleared the local chat (1 message)"

    assert run_undo(qtbot, pane)
    assert [c.name for c in facade.calls][-2:] == ["restore_local", "load_local_history"]
    assert texts(pane) == ["You: remember the kettle"]


def run_undo(qtbot: QtBot, pane: ChatPane) -> bool:
    undone = asyncio.ensure_future(pane.context.undo.undo())
    qtbot.waitUntil(undone.done, timeout=WAIT_MS)
    settle(qtbot)
    return undone.result()


@pytest.mark.qt_log_ignore(  # the offscreen plugin, as the window shows and a menu pops up
    r"This plugin does not support (propagateSizeHints|raise)\(\)",
    r"This plugin does not support grabbing the keyboard",
)
def test_a_right_click_on_a_message_opens_its_menu(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.history = [facade.line("You", "hi", from_familiar=False), facade.line("Wisp", "Hello.", from_familiar=True)]
    pane = make_pane(qtbot, facade)
    body = message(pane, 1).body  # on the text too: the label's own menu gives way to the message's
    at = QPoint(4, 4)
    QApplication.sendEvent(body, QContextMenuEvent(QContextMenuEvent.Reason.Mouse, at, body.mapToGlobal(at)))

    def opened() -> list[QMenu]:
        return [w for w in QApplication.topLevelWidgets() if isinstance(w, QMenu) and w.isVisible()]

    qtbot.waitUntil(lambda: bool(opened()), timeout=WAIT_MS)
    (menu,) = opened()
    assert [a.text() for a in menu.actions()] == ["Copy", "Why did it say that?\tCtrl+I", "Regenerate\tCtrl+R"]
    menu.close()


def test_a_card_s_name_that_looks_like_html_shows_as_text(qtbot: QtBot) -> None:
    facade = FakeFacade(name="default", display_name="<b>Moth</b>")
    facade.history = [facade.line("<b>Moth</b>", "hello", from_familiar=True)]
    pane = make_pane(qtbot, facade)
    for label in (pane.intro, pane.waiting_label, message(pane, 0).author):
        assert label.textFormat() == Qt.TextFormat.PlainText
    assert "<b>Moth</b>" in pane.intro.text()
