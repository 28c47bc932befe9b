"""`facade.character`: the character's files read, checked with the loader's own messages, saved
round-trip against a revision and put in force for the next reply; the servers and channels by name.
Real files, the real store, the real discord.py and openai clients against the fakes."""

from __future__ import annotations

import dataclasses

import pytest

from app.config.paths import FamiliarPaths
from app.runtime.errors import CharacterChangedError, FamiliarError
from app.runtime.service import Familiar
from tests.conftest import ALICE, GENERAL, GUILD_ID, HOME
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM, RecordedRequest
from tests.runtime.projectors.helpers import worker_of

pytestmark = pytest.mark.asyncio


def _replies(fake_llm: FakeLLM) -> list[RecordedRequest]:
    return [r for r in fake_llm.requests if worker_of(r.messages) is None]


def _system(request: RecordedRequest) -> str:
    return str(request.messages[0]["content"])


async def test_load_gives_the_files_values_and_a_revision(familiar: Familiar, familiar_paths: FamiliarPaths) -> None:
    familiar_paths.character_md.write_text("You are a lantern spirit.\n", encoding="utf-8")
    view = await familiar.character.load()
    assert view.draft.display_name == "Wisp"
    assert view.draft.persona == "You are a lantern spirit.\n"
    assert view.draft.home_channels == (HOME,)
    assert view.draft.model == "test-model"
    assert view.draft.temperature == familiar.settings.llm.temperature
    assert view.folder == familiar_paths.folder
    assert view.persona_budgets["text"] == familiar.settings.budget.text.character_tokens
    assert await familiar.character.revision() == view.revision

    familiar_paths.character_md.write_text("You are a storm.\n", encoding="utf-8")
    assert await familiar.character.revision() != view.revision


async def test_check_uses_the_loaders_messages_naming_the_key(familiar: Familiar) -> None:
    draft = (await familiar.character.load()).draft
    assert familiar.character.check(draft) == ()
    assert familiar.character.check(dataclasses.replace(draft, temperature="0.3", max_tokens="1_000")) == ()

    bad = dataclasses.replace(draft, temperature="7", max_tokens="lots", budget_tier="huge")
    problems = {p.field: p.message for p in familiar.character.check(bad)}
    assert problems == {
        "temperature": "key 'llm.temperature': 7.0 is out of range (0 to 2)",
        "max_tokens": "key 'llm.max_tokens': expected a whole number, got str",
        "budget_tier": "key 'budget.tier': 'huge' is not one of: 'text', 'compact'",
    }


async def test_a_saved_persona_reaches_the_next_reply_and_comments_survive(
    familiar: Familiar, familiar_paths: FamiliarPaths, fake_llm: FakeLLM
) -> None:
    familiar_paths.character_md.write_text("You are a lighthouse keeper.\n", encoding="utf-8")
    text = familiar_paths.character_toml.read_text(encoding="utf-8")
    familiar_paths.character_toml.write_text(
        text.replace("[llm]", "# the model we pay for\n[llm]  # keep this\n"),
        encoding="utf-8",
    )
    view = await familiar.character.load()
    draft = dataclasses.replace(
        view.draft,
        persona="You are a ship's cat.\nYou hate storms.\n",
        display_name="Ember",
        temperature="0.3",
        greeting='Well met.\nMind the "tide".',
    )

    saved = await familiar.character.save(draft, view.revision)

    toml = familiar_paths.character_toml.read_text(encoding="utf-8")
    assert "# the model we pay for" in toml
    assert "[llm]  # keep this" in toml
    assert "# test familiar" in toml
    assert 'display_name = "Ember"' in toml
    assert "temperature = 0.3" in toml
    assert familiar_paths.character_md.read_text(encoding="utf-8") == "You are a ship's cat.\nYou hate storms.\n"
    assert saved.view.draft.display_name == "Ember"
    assert saved.view.draft.greeting == 'Well met.\nMind the "tide".'
    assert saved.view.revision == await familiar.character.revision()

    line = await familiar.chat_local("hello")
    request = _replies(fake_llm)[-1]
    assert "ship's cat" in _system(request)
    assert "lighthouse" not in _system(request)
    assert request.temperature == 0.3
    assert line.author == "Ember"

    restored = await familiar.character.restore(saved.before, saved.view.revision)
    assert restored.draft.display_name == "Wisp"
    assert familiar_paths.character_md.read_text(encoding="utf-8") == "You are a lighthouse keeper.\n"
    await familiar.chat_local("hello again")
    assert "lighthouse" in _system(_replies(fake_llm)[-1])


async def test_a_save_over_files_changed_on_disk_is_refused(familiar: Familiar, familiar_paths: FamiliarPaths) -> None:
    view = await familiar.character.load()
    familiar_paths.character_md.write_text("Edited by hand.\n", encoding="utf-8")
    toml = familiar_paths.character_toml.read_text(encoding="utf-8")

    with pytest.raises(CharacterChangedError, match=r"character\.md changed on disk.*reload"):
        await familiar.character.save(dataclasses.replace(view.draft, persona="Mine."), view.revision)

    assert familiar_paths.character_md.read_text(encoding="utf-8") == "Edited by hand.\n"
    assert familiar_paths.character_toml.read_text(encoding="utf-8") == toml


async def test_an_invalid_draft_saves_nothing(familiar: Familiar, familiar_paths: FamiliarPaths) -> None:
    view = await familiar.character.load()
    before = familiar_paths.character_toml.read_bytes(), familiar_paths.character_md.read_bytes()
    with pytest.raises(FamiliarError, match=r"key 'llm\.temperature': 7\.0 is out of range.*nothing was saved"):
        await familiar.character.save(dataclasses.replace(view.draft, temperature="7", persona="x"), view.revision)
    assert (familiar_paths.character_toml.read_bytes(), familiar_paths.character_md.read_bytes()) == before


async def test_channels_by_name_and_a_home_channel_chosen_is_answered_without_a_mention(
    familiar: Familiar, familiar_paths: FamiliarPaths, fake_discord: FakeDiscord
) -> None:
    offline = await familiar.character.channels((HOME, 123))
    assert not offline.connected
    assert [c.name for c in offline.unseen] == ["channel 502 (not seen)", "channel 123 (not seen)"]

    await familiar.start()
    catalog = await familiar.character.channels((HOME, 123))
    assert catalog.connected
    [server] = catalog.servers
    assert server.server.name == "Lantern Club"
    assert {(c.channel_id, c.name) for c in server.channels} == {(GENERAL, "#general"), (HOME, "#familiar-home")}
    assert [c.place.name for c in server.channels if c.place] == [
        "Lantern Club #familiar-home",
        "Lantern Club #general",
    ]
    assert [c.channel_id for c in catalog.unseen] == [123]

    await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="just chatting")
    view = await familiar.character.load()
    await familiar.character.save(dataclasses.replace(view.draft, home_channels=(HOME, GENERAL)), view.revision)
    assert f"home_channels = [{HOME}, {GENERAL}]" in familiar_paths.character_toml.read_text(encoding="utf-8")

    await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="anyone here?")
    posted = await fake_discord.wait_for_posted(1)
    assert posted[0].channel_id == GENERAL
