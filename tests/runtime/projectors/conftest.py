"""Fixtures for the projector tests: familiars opened (and reopened) with chosen settings against the
fake LLM, with real SQLite and tantivy; a worker that logs an error fails the test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from tests.conftest import write_character_toml
from tests.fakes.llm_server import FakeLLM
from tests.runtime.projectors.helpers import Brain

NO_DISCORD = "http://127.0.0.1:9/api"  # never contacted: these familiars are not started


class Familiars:
    """Opens familiars on one home folder; closes whatever is still open at the end of the test."""

    def __init__(self, paths: FamiliarPaths, fake_llm: FakeLLM) -> None:
        self._paths = paths
        self._fake_llm = fake_llm
        self._open: list[Familiar] = []
        self._extra = ""
        self._background: str | None = None

    async def open(self, extra: str | None = None, *, background_url: str | None = None) -> Familiar:
        """Write character.toml (`extra` appended; the background model at `background_url` when given) and
        open the familiar. Without arguments, the settings of the last open."""
        if extra is not None:
            self._extra, self._background = extra, background_url
        tail = self._extra
        if self._background is not None:
            tail += f'\n[llm.background]\nbase_url = "{self._background}"\n'
        write_character_toml(self._paths, NO_DISCORD, "ws://127.0.0.1:9/", self._fake_llm.base_url, tail)
        secrets = SecretStore("default", self._paths.secrets_file, use_keyring=False)
        familiar = await Familiar.open(self._paths, secrets)
        self._open.append(familiar)
        return familiar

    async def close(self, familiar: Familiar) -> None:
        self._open.remove(familiar)
        await familiar.close()

    async def reopen(
        self, familiar: Familiar, extra: str | None = None, *, background_url: str | None = None
    ) -> Familiar:
        """Close and open again (the same settings unless new ones are given): a restart."""
        await self.close(familiar)
        return await self.open(extra, background_url=background_url)

    async def close_all(self) -> None:
        while self._open:
            await self.close(self._open[-1])


@pytest.fixture
def brain(fake_llm: FakeLLM) -> Brain:
    answers = Brain()
    fake_llm.default_reply = answers
    return answers


@pytest_asyncio.fixture
async def familiars(familiar_paths: FamiliarPaths, fake_llm: FakeLLM, brain: Brain) -> AsyncIterator[Familiars]:
    opened = Familiars(familiar_paths, fake_llm)
    yield opened
    await opened.close_all()
