"""What the window says about the familiar's state stays true, on the real runtime against the fake Discord and
fake LLM: after a failed start the Dashboard and the status bar say the same (Failed); the banner of a start
refused for a missing LLM endpoint goes once Settings has saved one."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.events import ConnectionState
from app.runtime.service import Familiar
from app.ui.main_window import MainWindow
from tests.conftest import TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM
from tests.ui.support import QT_STRICT, Run, settle

pytestmark = [*QT_STRICT[1:], pytest.mark.timeout(60)]

WAIT_MS = 10_000
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@dataclass
class Live:
    window: MainWindow
    familiar: Familiar
    discord: FakeDiscord
    llm: FakeLLM


def open_live(qtbot: QtBot, run: Run[Any], tmp_path: Path, *, token: str, llm_url: bool) -> Iterator[Live]:
    discord = FakeDiscord(token=TOKEN)
    llm = FakeLLM()
    run(discord.start())
    run(llm.start())
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(paths, discord.api_base, discord.gateway_url, llm.base_url if llm_url else "")
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    secrets.set("discord_token", token)
    familiar = run(Familiar.open(paths, secrets, env={}))
    window = MainWindow(familiar)
    qtbot.addWidget(window)
    window.show()
    try:
        yield Live(window, familiar, discord, llm)
    finally:
        run(window.shutdown())
        run(familiar.close())
        run(llm.close())
        run(discord.close())
    assert discord.unhandled == []
    assert llm.unhandled == []


@pytest.fixture
def wrong_token(qtbot: QtBot, run: Run[Any], tmp_path: Path) -> Iterator[Live]:
    yield from open_live(qtbot, run, tmp_path, token="MTIz.a-revoked.token", llm_url=True)


@pytest.fixture
def no_endpoint(qtbot: QtBot, run: Run[Any], tmp_path: Path) -> Iterator[Live]:
    yield from open_live(qtbot, run, tmp_path, token=TOKEN, llm_url=False)


def test_after_a_failed_start_the_dashboard_and_the_status_bar_both_say_failed(qtbot: QtBot, wrong_token: Live) -> None:
    window, dashboard = wrong_token.window, wrong_token.window.dashboard

    qtbot.mouseClick(dashboard.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dashboard.error_banner.isVisible(), timeout=WAIT_MS)
    settle(qtbot)

    assert "rejected the bot token" in dashboard.error_banner.text()
    assert window.connection_indicator.text() == "Failed"
    assert dashboard.state_indicator.text() == "Failed", "one truth: the Dashboard says what the status bar says"
    assert wrong_token.familiar.get_status().state is ConnectionState.FAILED
    assert "rejected the bot token" in dashboard.state_indicator.toolTip(), "why it failed stays beside it"
    assert dashboard.start_button.isEnabled()
    assert not dashboard.stop_button.isEnabled()

    ARTIFACTS.mkdir(exist_ok=True)
    assert window.grab().save(str(ARTIFACTS / "dashboard_failed_start.png"))  # to look at
    wrong_token.window.familiar_ready()  # any later re-read of the status says the same
    assert (window.connection_indicator.text(), dashboard.state_indicator.text()) == ("Failed", "Failed")


def test_the_no_llm_endpoint_banner_goes_once_settings_saved_one(qtbot: QtBot, no_endpoint: Live) -> None:
    window, dashboard = no_endpoint.window, no_endpoint.window.dashboard
    qtbot.mouseClick(dashboard.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dashboard.error_banner.isVisible(), timeout=WAIT_MS)
    settle(qtbot)
    assert dashboard.error_banner.text().startswith("No LLM endpoint")

    dialog = window.open_settings()
    settle(qtbot)
    dialog.base_url.setText(no_endpoint.llm.base_url)
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Save), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    settle(qtbot)

    assert dashboard.error_banner.isHidden(), "the endpoint is saved: the banner saying there is none has gone"
    assert no_endpoint.familiar.get_status().last_error is None
    assert dashboard.setup_hint.isHidden()
    dashboard.refresh_status()
    assert dashboard.error_banner.isHidden(), "and does not come back at the next re-read"
