"""Notices told again in the same box: the box follows the length of its new words, both ways."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.ui.widgets.notices import UNDO_NOTICE_MS, NoticeArea
from tests.ui.support import QT_STRICT

pytestmark = QT_STRICT

SHORT = "Accepted “Alice keeps bees”"
LONG = "Accepted “" + "Alice keeps a very large number of bees in the garden behind the lighthouse " * 3 + "”"


def test_a_retold_notice_grows_and_shrinks_with_its_text_and_stays_one_box(qtbot: QtBot) -> None:
    host = QWidget()
    qtbot.addWidget(host)
    host.resize(900, 600)
    area = NoticeArea(host)
    host.show()
    notice = area.show_notice(SHORT, action=lambda: None)
    short_height = notice.height()

    area.retell(notice, LONG, UNDO_NOTICE_MS)
    assert notice.text.startswith("Accepted “Alice keeps a very large")
    assert notice.height() > short_height  # three lines of words need more room
    assert area.height() == notice.height()
    assert area.geometry().bottom() < host.height()  # still placed inside its window

    area.retell(notice, SHORT, UNDO_NOTICE_MS)
    assert notice.height() == short_height  # and back to one line
    assert area.height() == short_height
    assert area.notices() == [notice]
    assert notice.remaining_ms > UNDO_NOTICE_MS - 1_000
