"""The table and list models: qtmodeltester on every change, snapshots, roles, and the PySide6 None-refcount trap."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import pytest
from PySide6.QtCore import QAbstractItemModel, Qt
from PySide6.QtGui import QColor, QFont
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from app.runtime.api.facade import ChatLine
from app.runtime.events import Activity, ActivityKind, GuildInfo
from app.ui.models import activity_model, guilds_model
from app.ui.models.activity_model import ActivityLogModel
from app.ui.models.chat_model import ChatGreeting, ChatNotice, ChatTranscriptModel, entry_text
from app.ui.models.guilds_model import GuildsModel
from app.ui.models.roles import RecordRole
from app.ui.theme import ERROR_RED
from tests.ui.support import QT_STRICT

pytestmark = QT_STRICT

DISPLAY = Qt.ItemDataRole.DisplayRole
UNKNOWN_ROLE = Qt.ItemDataRole.UserRole + 99
AT = datetime(2025, 3, 1, 12, 30, 5, tzinfo=UTC)


def activity(number: int, kind: ActivityKind = ActivityKind.MESSAGE_IN) -> Activity:
    return Activity(kind=kind, where=f"guild:1/{number}", summary=f"message {number}", at=AT)


def chat_line(number: int, *, from_familiar: bool = False) -> ChatLine:
    author = "Wisp" if from_familiar else "You"
    return ChatLine(turn_id=number, author=author, content=f"line {number}", from_familiar=from_familiar, created_at=AT)


GUILDS = (GuildInfo(101, "Lantern Club", 1_234), GuildInfo(202, "Moth Society", 7))


# -- ActivityLogModel ---------------------------------------------------------------------------


def test_activity_model_appends_and_drops_oldest_beyond_capacity(qtmodeltester: ModelTester, qtbot: QtBot) -> None:
    model = ActivityLogModel(capacity=5)
    qtmodeltester.check(model)

    for number in range(5):
        model.append(activity(number))
    with (
        qtbot.waitSignal(model.rowsRemoved, timeout=1_000) as removed,
        qtbot.waitSignal(model.rowsInserted, timeout=1_000) as inserted,
    ):
        model.append(activity(5))

    assert removed.args[1:] == [0, 0]
    assert inserted.args[1:] == [4, 4]
    assert model.rowCount() == 5
    assert [record.summary for record in model.records] == [f"message {n}" for n in range(1, 6)]

    model.extend(activity(n) for n in range(6, 9))
    assert [record.summary for record in model.records] == [f"message {n}" for n in range(4, 9)]

    model.clear()
    assert model.rowCount() == 0
    model.append(activity(9))
    assert model.rowCount() == 1


def test_activity_model_columns_and_roles(qtmodeltester: ModelTester) -> None:
    model = ActivityLogModel()
    qtmodeltester.check(model)
    model.append(activity(1))
    model.append(activity(2, ActivityKind.ERROR))

    assert [model.headerData(c, Qt.Orientation.Horizontal, DISPLAY) for c in range(4)] == [
        "Time",
        "Kind",
        "Where",
        "What",
    ]
    assert model.headerData(0, Qt.Orientation.Vertical, DISPLAY) is None
    assert model.index(0, activity_model.TIME).data(DISPLAY) == f"{AT.astimezone():%H:%M:%S}"
    assert model.index(0, activity_model.KIND).data(DISPLAY) == "Message"
    assert model.index(0, activity_model.WHERE).data(DISPLAY) == "guild:1/1"
    assert model.index(0, activity_model.WHAT).data(DISPLAY) == "message 1"
    assert model.index(1, activity_model.WHAT).data(RecordRole) == activity(2, ActivityKind.ERROR)
    assert model.index(1, activity_model.WHAT).data(Qt.ItemDataRole.ForegroundRole) == QColor(ERROR_RED)
    assert "message 1" in model.index(0, activity_model.WHAT).data(Qt.ItemDataRole.ToolTipRole)
    assert model.index(0, activity_model.WHAT).data(UNKNOWN_ROLE) is None


def test_activity_model_capacity() -> None:
    assert ActivityLogModel().capacity == 1_000
    with pytest.raises(ValueError, match="capacity"):
        ActivityLogModel(capacity=0)


# -- GuildsModel --------------------------------------------------------------------------------


def test_guilds_model_is_replaced_wholesale(qtmodeltester: ModelTester, qtbot: QtBot) -> None:
    model = GuildsModel()
    qtmodeltester.check(model)

    with qtbot.waitSignal(model.modelReset, timeout=1_000):
        model.set_guilds(GUILDS)
    assert model.rowCount() == 2
    assert model.columnCount() == 3
    assert model.row_of(202) == 1
    assert model.index(0, guilds_model.NAME).data(DISPLAY) == "Lantern Club"
    assert model.index(0, guilds_model.ID).data(DISPLAY) == "101"
    assert model.index(0, guilds_model.MEMBERS).data(DISPLAY) == "1,234"
    assert isinstance(model.index(0, guilds_model.ID).data(Qt.ItemDataRole.FontRole), QFont)
    assert model.index(1, guilds_model.NAME).data(RecordRole) == GUILDS[1]

    model.set_guilds(GUILDS[1:])
    assert model.guilds == GUILDS[1:]
    assert model.row_of(101) is None
    model.set_guilds(())
    assert model.rowCount() == 0


# -- ChatTranscriptModel ------------------------------------------------------------------------


def test_chat_model_appends_prepends_and_replaces(qtmodeltester: ModelTester) -> None:
    model = ChatTranscriptModel()
    qtmodeltester.check(model)

    model.append(chat_line(3))
    model.append(chat_line(4, from_familiar=True))
    model.prepend([chat_line(1), chat_line(2, from_familiar=True)])
    model.prepend([])
    model.append(ChatNotice("The LLM endpoint did not answer."))

    assert [model.index(row, 0).data(DISPLAY) for row in range(model.rowCount())] == [
        "You: line 1",
        "Wisp: line 2",
        "You: line 3",
        "Wisp: line 4",
        "⚠ The LLM endpoint did not answer.",
    ]
    assert model.index(4, 0).data(Qt.ItemDataRole.ForegroundRole) == QColor(ERROR_RED)
    assert model.index(1, 0).data(Qt.ItemDataRole.BackgroundRole) is not None
    assert model.index(0, 0).data(Qt.ItemDataRole.BackgroundRole) is None
    assert model.index(2, 0).data(RecordRole) == chat_line(3)

    model.replace([chat_line(9)])
    assert model.rowCount() == 1
    model.replace([])
    assert model.rowCount() == 0


def test_chat_model_holds_the_greeting_and_changes_rows_in_place(qtmodeltester: ModelTester) -> None:
    model = ChatTranscriptModel()
    model.append(ChatNotice("Could not load earlier messages: locked."))
    greeting = ChatGreeting("Wisp", ("Welcome!", "Stormy night?"))
    model.insert_entry(0, greeting)
    qtmodeltester.check(model)
    assert model.index(0, 0).data(DISPLAY) == "Wisp: Welcome!"
    assert model.index(0, 0).data(Qt.ItemDataRole.BackgroundRole) is not None

    model.set_entry(0, greeting.moved(1))
    assert model.index(0, 0).data(DISPLAY) == "Wisp: Stormy night?"
    assert greeting.moved(-1).content == "Stormy night?"  # round the ends
    model.set_entry(0, greeting.line())
    sent = model.index(0, 0).data(RecordRole)
    assert isinstance(sent, ChatLine)
    assert sent.greeting
    assert sent.from_familiar
    assert entry_text(sent) == "Welcome!"
    model.remove_entry(1)
    assert model.rowCount() == 1
    with pytest.raises(IndexError):
        model.set_entry(3, greeting)
    qtmodeltester.check(model)


# -- PySide6 6.12 regression: returning None from data() must not leak a reference to None --------


def _filled_models() -> list[QAbstractItemModel]:
    activities = ActivityLogModel()
    activities.append(activity(1))
    guilds = GuildsModel()
    guilds.set_guilds(GUILDS)
    chat = ChatTranscriptModel()
    chat.append(chat_line(1))
    return [activities, guilds, chat]


@pytest.mark.parametrize("which", [0, 1, 2], ids=["activity", "guilds", "chat"])
def test_none_refcount_does_not_fall_across_data_calls(which: int) -> None:
    model = _filled_models()[which]
    index = model.index(0, 0)
    assert index.data(UNKNOWN_ROLE) is None

    before = sys.getrefcount(None)
    for _ in range(1_000):
        index.data(UNKNOWN_ROLE)
    after = sys.getrefcount(None)

    assert after >= before, f"lost {before - after} references to None (PySide6 6.12 none_dealloc bug)"
