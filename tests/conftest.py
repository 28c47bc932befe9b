"""Fixtures shared by the runtime and end-to-end tests: the two fakes and a configured familiar."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import keyring
import pytest
import pytest_asyncio
from keyring.backend import KeyringBackend

from app.config.paths import FamiliarPaths, ensure_familiar
from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.keyring_backend import MemoryKeyring
from tests.fakes.llm_server import FakeLLM
from tests.small_disk import SmallDisk, mounted

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

GUILD_ID = 500
GENERAL = 501
HOME = 502
ALICE = 7001
BOB = 7002
OTHER_BOT = 7999
TOKEN = "test-token"


@pytest_asyncio.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord(token=TOKEN)
    fake.add_user(ALICE, "alice")
    fake.add_user(BOB, "bob")
    fake.add_user(OTHER_BOT, "otherbot", bot=True)
    fake.add_guild(GUILD_ID, "Lantern Club", {GENERAL: "general", HOME: "familiar-home"})
    await fake.start()
    yield fake
    await fake.close()
    assert fake.unhandled == [], f"the fake Discord saw unhandled routes: {fake.unhandled}"
    assert fake.errors == [], f"the fake Discord hit errors: {fake.errors}"


@pytest_asyncio.fixture
async def fake_llm() -> AsyncIterator[FakeLLM]:
    fake = FakeLLM()
    await fake.start()
    yield fake
    await fake.close()
    assert fake.unhandled == []


def write_character_toml(paths: FamiliarPaths, discord_api: str, gateway: str, llm_url: str, extra: str = "") -> None:
    ensure_familiar(paths)
    paths.character_toml.write_text(
        f"""# test familiar
[familiar]
display_name = "Wisp"

[discord]
home_channels = [{HOME}]
api_base = "{discord_api}"
gateway_url = "{gateway}"
guild_ready_timeout = 0.1

[llm]
base_url = "{llm_url}"
model = "test-model"
timeout = 5.0
max_retries = 0
{extra}
""",
        encoding="utf-8",
    )


@pytest.fixture
def familiar_paths(tmp_path: Path) -> FamiliarPaths:
    return FamiliarPaths(root=tmp_path / "home", name="default")


@pytest_asyncio.fixture
async def familiar(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> AsyncIterator[Familiar]:
    write_character_toml(familiar_paths, fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url)
    secrets = SecretStore("default", familiar_paths.secrets_file, use_keyring=False)
    instance = await Familiar.open(familiar_paths, secrets, env={"DISCORD_TOKEN": TOKEN})
    yield instance
    await instance.close()


class _ErrorRecorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True)
def _fail_on_logged_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Any ERROR from discord.py, from our code or from an abandoned asyncio task fails the test.

    A test that provokes an error on purpose names it: `@pytest.mark.logs_errors("regex", ...)`.
    """
    recorder = _ErrorRecorder()
    watched = [
        logging.getLogger("discord"),
        # Every module of ours (event handlers, memory workers, the reply path), and the CLI's own logger.
        logging.getLogger("app"),
        logging.getLogger("familiar"),
        # A task that died with nobody looking ("Task exception was never retrieved").
        logging.getLogger("asyncio"),
    ]
    for logger in watched:
        logger.addHandler(recorder)
    yield
    for logger in watched:
        logger.removeHandler(recorder)
    expected = [re.compile(p) for m in request.node.iter_markers("logs_errors") for p in m.args]
    messages = [f"{r.name}: {r.getMessage()}" for r in recorder.records]
    unexpected = [m for m in messages if not any(p.search(m) for p in expected)]
    assert not unexpected, f"errors were logged: {unexpected}"


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    """An OS keyring that keeps passwords in memory, installed the keyring library's way for one test."""
    previous: KeyringBackend = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A 40 MB tmpfs under tmp_path, for a test to fill up and free (skipped where mounting is refused)."""
    with mounted(tmp_path / "disk") as disk:
        yield disk
