"""Reconfiguration as one step: a saved key, an edited persona or new settings reach every part of a
running familiar (replies, the background memory workers, recall) at once, without a restart, and bad
settings change nothing. Real store, the real openai client against the fake LLM server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.api.setup_views import SettingsUpdate
from app.runtime.errors import FamiliarError
from app.runtime.service import Familiar
from tests.conftest import write_character_toml
from tests.fakes.llm_server import FakeLLM, RecordedRequest, ScriptedReply
from tests.runtime.projectors.helpers import Brain, add_turns, learning, prompt, requests_of, turn, worker_of

pytestmark = pytest.mark.asyncio

NO_DISCORD = "http://127.0.0.1:9/api"  # never contacted: these familiars are not started
WORKERS = learning("rich_note", batch_turns=1)


def _write_settings(paths: FamiliarPaths, fake_llm: FakeLLM, extra: str = WORKERS) -> None:
    write_character_toml(paths, NO_DISCORD, "ws://127.0.0.1:9/", fake_llm.base_url, extra)


@pytest.fixture
def secrets(familiar_paths: FamiliarPaths) -> SecretStore:
    store = SecretStore("default", familiar_paths.secrets_file, use_keyring=False)
    store.set("llm_api_key", "old-key")
    return store


@pytest_asyncio.fixture
async def familiar(familiar_paths: FamiliarPaths, fake_llm: FakeLLM, secrets: SecretStore) -> AsyncIterator[Familiar]:
    _write_settings(familiar_paths, fake_llm)
    familiar_paths.character_md.write_text("You are a lighthouse keeper who loves storms.\n", encoding="utf-8")
    fake_llm.default_reply = Brain()
    instance = await Familiar.open(familiar_paths, secrets, env={})
    yield instance
    await instance.close()


def _key(request: RecordedRequest) -> str:
    return request.headers.get("Authorization", "")


def _system(request: RecordedRequest) -> str:
    assert request.messages[0]["role"] == "system"
    return str(request.messages[0]["content"])


def _replies(fake_llm: FakeLLM) -> list[RecordedRequest]:
    return [r for r in fake_llm.requests if worker_of(r.messages) is None]


async def _learn_from_a_new_message(familiar: Familiar, fake_llm: FakeLLM, text: str) -> RecordedRequest:
    """The request the memory worker made about a message added now (chats are learnt from too)."""
    await add_turns(familiar, turn(text))
    await familiar.learn_now()
    asked = [r for r in requests_of(fake_llm, "rich_note") if text in prompt(r)]
    assert len(asked) == 1, "the memory worker did not ask the model about the new message"
    return asked[0]


async def test_a_new_key_reaches_the_background_workers_next_request(familiar: Familiar, fake_llm: FakeLLM) -> None:
    assert _key(await _learn_from_a_new_message(familiar, fake_llm, "I keep bees.")) == "Bearer old-key"

    await familiar.setup.save(SettingsUpdate(llm_api_key="new-key"))

    assert _key(await _learn_from_a_new_message(familiar, fake_llm, "I keep goats too.")) == "Bearer new-key"
    await familiar.chat_local("hello")
    assert _key(_replies(fake_llm)[-1]) == "Bearer new-key"


async def test_a_persona_edit_reaches_the_next_reply(
    familiar: Familiar, familiar_paths: FamiliarPaths, fake_llm: FakeLLM
) -> None:
    await familiar.chat_local("hello")
    assert "lighthouse keeper" in _system(_replies(fake_llm)[-1])

    familiar_paths.character_md.write_text("You are a ship's cat who hates storms.\n", encoding="utf-8")
    text = familiar_paths.character_toml.read_text(encoding="utf-8")
    familiar_paths.character_toml.write_text(text.replace('"Wisp"', '"Ember"'), encoding="utf-8")
    await familiar.reconfigure()

    line = await familiar.chat_local("hello again")
    system = _system(_replies(fake_llm)[-1])
    assert "ship's cat" in system
    assert "lighthouse" not in system
    assert "You are Ember." in system
    assert line.author == "Ember"
    assert familiar.settings.familiar.display_name == "Ember"


async def test_the_background_work_can_have_its_own_endpoint_model_and_key(
    familiar: Familiar, familiar_paths: FamiliarPaths, fake_llm: FakeLLM, secrets: SecretStore
) -> None:
    async with FakeLLM() as cheap:
        cheap.default_reply = Brain()
        background = f'\n[llm.background]\nbase_url = "{cheap.base_url}"\nmodel = "cheap-model"\n'
        _write_settings(familiar_paths, fake_llm, WORKERS + background)
        secrets.set("llm_background_api_key", "cheap-key")
        await familiar.reconfigure()

        await add_turns(familiar, turn("I keep bees."))
        await familiar.learn_now()
        await familiar.chat_local("hello")

        assert requests_of(cheap, "rich_note")
        for learnt in requests_of(cheap, "rich_note"):
            assert (learnt.model, _key(learnt)) == ("cheap-model", "Bearer cheap-key")
        assert requests_of(fake_llm, "rich_note") == []
        reply = _replies(fake_llm)[-1]
        assert (reply.model, _key(reply)) == ("test-model", "Bearer old-key")
        assert _replies(cheap) == []

        # Without its own key the background work uses the reply key.
        secrets.set("llm_background_api_key", "")
        await familiar.reconfigure()
        assert _key(await _learn_from_a_new_message(familiar, cheap, "I keep goats too.")) == "Bearer old-key"


async def test_the_environment_gives_the_background_key(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM, secrets: SecretStore
) -> None:
    _write_settings(familiar_paths, fake_llm)
    fake_llm.default_reply = Brain()
    env = {"FAMILIAR_LLM_BACKGROUND_API_KEY": "env-key"}
    familiar = await Familiar.open(familiar_paths, secrets, env=env)
    try:
        assert _key(await _learn_from_a_new_message(familiar, fake_llm, "I keep bees.")) == "Bearer env-key"
        await familiar.chat_local("hello")
        assert _key(_replies(fake_llm)[-1]) == "Bearer old-key"
    finally:
        await familiar.close()


async def test_bad_settings_change_nothing(
    familiar: Familiar, familiar_paths: FamiliarPaths, fake_llm: FakeLLM
) -> None:
    good = familiar_paths.character_toml.read_text(encoding="utf-8")
    familiar_paths.character_toml.write_text(good + "\n[llm]\nmodel = 5\n", encoding="utf-8")
    familiar_paths.character_md.write_text("You are a ship's cat.\n", encoding="utf-8")

    with pytest.raises(FamiliarError, match=r"character\.toml.*line") as raised:
        await familiar.reconfigure()
    assert "\n" not in str(raised.value)

    await familiar.chat_local("hello")
    assert "lighthouse keeper" in _system(_replies(fake_llm)[-1])
    assert _key(await _learn_from_a_new_message(familiar, fake_llm, "I keep bees.")) == "Bearer old-key"


async def test_workers_chosen_in_new_settings_start_running(
    familiar_paths: FamiliarPaths, fake_llm: FakeLLM, secrets: SecretStore
) -> None:
    _write_settings(familiar_paths, fake_llm, learning())  # no memory workers at all
    fake_llm.default_reply = Brain()
    familiar = await Familiar.open(familiar_paths, secrets, env={})
    try:
        await familiar.start_learning()
        await add_turns(familiar, turn("I keep bees."))
        assert familiar.learning.names == ()

        _write_settings(familiar_paths, fake_llm, learning("rich_note", batch_turns=1))
        await familiar.reconfigure()

        assert familiar.learning.names == ("rich_note",)
        [asked] = await fake_llm.wait_for_requests(1)  # the running timer picked the new worker up
        assert worker_of(asked.messages) == "rich_note"
    finally:
        await familiar.close()


async def test_a_reply_under_way_when_the_settings_change_still_arrives(familiar: Familiar, fake_llm: FakeLLM) -> None:
    fake_llm.script(ScriptedReply(content="a slow answer", delay=0.5))
    replying = asyncio.create_task(familiar.chat_local("hello"))
    await fake_llm.wait_for_requests(1)

    await familiar.setup.save(SettingsUpdate(llm_api_key="new-key"))

    line = await asyncio.wait_for(replying, timeout=10)
    assert line.content == "a slow answer"
    await familiar.chat_local("and now?")
    assert _key(_replies(fake_llm)[-1]) == "Bearer new-key"
