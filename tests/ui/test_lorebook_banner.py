"""The Dashboard's lorebook banner: what is wrong with lorebook.toml, shown until the file reads again."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from app.runtime.events import FailureReported, LorebookStatus
from app.ui.panes.dashboard import DashboardPane
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import QT_STRICT, make_context

pytestmark = QT_STRICT

PROBLEM = (
    "/home/me/familiars/default/lorebook.toml, line 4, entry 1 \"Owl\", key 'kyes': unknown key "
    "(did you mean 'keys'?); keep anything else under [entries.extensions]"
)


def make_pane(qtbot: QtBot, facade: FakeFacade) -> DashboardPane:
    pane = DashboardPane(make_context(qtbot, facade))
    qtbot.addWidget(pane)
    pane.show()
    return pane


def test_a_broken_lorebook_shows_a_banner_that_a_fixed_file_clears(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make_pane(qtbot, facade)
    assert pane.lore_banner.isHidden()

    facade.publish(LorebookStatus("lorebook.toml", PROBLEM, 4))
    assert not pane.lore_banner.isHidden()
    assert pane.lore_banner.text() == f"{PROBLEM} (the last good lorebook stays in use until this is fixed)"

    facade.publish(FailureReported("The LLM endpoint is unreachable."))  # another failure: its own banner
    assert pane.error_banner.text() == "The LLM endpoint is unreachable."
    assert "kyes" in pane.lore_banner.text()

    facade.publish(LorebookStatus("lorebook.toml", None))
    assert pane.lore_banner.isHidden()
    assert not pane.error_banner.isHidden()


def test_keys_that_never_match_are_shown_with_a_count(qtbot: QtBot, facade: FakeFacade) -> None:
    pane = make_pane(qtbot, facade)
    warnings = (
        'lorebook.toml entry 3 "Moon": key "/(/" never matches: invalid regex: missing ), unterminated subpattern',
        'lorebook.toml entry 5: key "" never matches: an empty key never matches',
    )
    facade.publish(LorebookStatus("lorebook.toml", None, warnings=warnings))
    assert pane.lore_banner.text() == warnings[0] + " (and 1 more)"


def test_a_problem_known_before_the_window_opened_is_shown(qtbot: QtBot, facade: FakeFacade) -> None:
    facade.publish(LorebookStatus("lorebook.toml", PROBLEM, 4))
    pane = make_pane(qtbot, facade)
    assert PROBLEM in pane.lore_banner.text()
