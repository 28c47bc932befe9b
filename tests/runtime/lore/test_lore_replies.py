"""SillyTavern parity acted on in real replies: name macros in the prompt the fake LLM receives, timed effects
kept per place across a restart, and the reply's explanation saying which key fired where and what was left out.

The real familiar (real store, real files) against the fake Discord and the fake LLM.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.api.views import LoreSpan
from app.runtime.errors import FamiliarError
from app.runtime.service import Familiar
from tests.conftest import ALICE, GENERAL, GUILD_ID, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM

pytestmark = pytest.mark.asyncio


def system_prompt(fake_llm: FakeLLM) -> str:
    content = fake_llm.requests[-1].messages[0]["content"]
    assert isinstance(content, str)
    return content


async def open_familiar(paths: FamiliarPaths) -> Familiar:
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    return await Familiar.open(paths, secrets, env={"DISCORD_TOKEN": TOKEN})


@pytest_asyncio.fixture
async def configured(familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM) -> FamiliarPaths:
    write_character_toml(familiar_paths, fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url)
    return familiar_paths


@pytest_asyncio.fixture
async def opened(configured: FamiliarPaths) -> AsyncIterator[Familiar]:
    familiar = await open_familiar(configured)
    yield familiar
    await familiar.close()


async def test_name_macros_in_lore_and_persona_reach_the_llm_as_names(
    configured: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    configured.character_md.write_text("You are {{char}}. Be kind to {{User}}, always.\n", encoding="utf-8")
    configured.lorebook_toml.write_text(
        '[[entries]]\ntitle = "Lantern"\nkeys = ["lantern"]\n'
        'content = "{{char}} guards the lantern for {{user}}. <BOT> trusts <USER>."\n',
        encoding="utf-8",
    )
    familiar = await open_familiar(configured)
    try:
        await familiar.start()
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="is the lantern lit?", mentions_bot=True
        )
        await fake_discord.wait_for_posted(1, timeout=10)
    finally:
        await familiar.close()
    prompt = system_prompt(fake_llm)
    assert "You are Wisp. Be kind to alice, always." in prompt
    assert "Wisp guards the lantern for alice. Wisp trusts alice." in prompt
    assert "{{" not in prompt
    assert "<BOT>" not in prompt


STICKY = (
    'scan_depth = 1\n\n[[entries]]\ntitle = "Curse"\nkeys = ["curse"]\nsticky = 2\n'
    'content = "A curse lies on the house."\n'
)


async def test_a_sticky_entry_stays_across_a_restart_then_ends(configured: FamiliarPaths, fake_llm: FakeLLM) -> None:
    configured.lorebook_toml.write_text(STICKY, encoding="utf-8")
    familiar = await open_familiar(configured)
    try:
        await familiar.chat_local("they say there is a curse")  # message 1 of the local chat: fires, sticky to 3
        assert "A curse lies on the house." in system_prompt(fake_llm)
        effects = await familiar.lore.timed("local")
        assert [(e.title, e.kind, e.start, e.end) for e in effects] == [("Curse", "sticky", 1, 3)]
    finally:
        await familiar.close()

    familiar = await open_familiar(configured)  # a restart: the effect is in history.db
    try:
        line = await familiar.chat_local("anyway, hello")  # message 3: held by the sticky effect
        assert "A curse lies on the house." in system_prompt(fake_llm)
        explained = await familiar.explain(line.turn_id)
        assert [(lore.title, lore.via, lore.key) for lore in explained.lore] == [("Curse", "sticky", "(sticky)")]
        assert explained.lore_clock == 3
        await familiar.chat_local("and goodbye")  # message 5: the effect has ended
        assert "curse" not in system_prompt(fake_llm).lower()
        assert await familiar.lore.timed("local") == []
    finally:
        await familiar.close()


async def test_a_cooldown_can_be_cleared_from_the_lore_api(opened: Familiar, fake_llm: FakeLLM) -> None:
    opened.lorebook_layer.file.path.write_text(
        '[[entries]]\ntitle = "Bell"\nkeys = ["bell"]\ncooldown = 10\ncontent = "The bell rings."\n',
        encoding="utf-8",
    )
    await opened.chat_local("ring the bell")
    assert "The bell rings." in system_prompt(fake_llm)
    line = await opened.chat_local("ring the bell again")
    assert "The bell rings." not in system_prompt(fake_llm)
    explained = await opened.explain(line.turn_id)
    assert [(d.title, d.reason, d.detail) for d in explained.lore_dropped] == [
        ("Bell", "cooldown", "cooling down: it cannot activate again until message 12")
    ]
    assert await opened.lore.clear_timed("local") == 1
    await opened.chat_local("the bell, once more")
    assert "The bell rings." in system_prompt(fake_llm)


async def test_the_explanation_says_where_each_key_fired_and_why_the_rest_was_left_out(
    opened: Familiar, fake_llm: FakeLLM
) -> None:
    opened.lorebook_layer.file.path.write_text(
        "token_budget = 40\n\n"
        '[[entries]]\ntitle = "Owl"\nkeys = ["owl"]\ncontent = "The owl watches the moon."\npriority = 300\n\n'
        '[[entries]]\ntitle = "Moon"\nkeys = ["moon"]\ncontent = "The moon is full tonight."\npriority = 200\n\n'
        '[[entries]]\ntitle = "Never"\nkeys = ["owl"]\nprobability = 0\ncontent = "x"\n\n'
        '[[entries]]\ntitle = "Off"\nkeys = ["owl"]\nenabled = false\ncontent = "x"\n\n'
        '[[entries]]\ntitle = "Long"\nkeys = ["owl"]\npriority = 1\n'
        f'content = "{"Owls are many and varied and this is very long. " * 6}"\n',
        encoding="utf-8",
    )
    line = await opened.chat_local("I saw an owl")
    explained = await opened.explain(line.turn_id)
    said = (await opened.load_local_history(2))[0]
    owl, moon = explained.lore
    assert (owl.title, owl.key, owl.step) == ("Owl", "owl", 0)
    assert owl.span == LoreSpan("message", 9, 12, turn_id=said.turn_id, position=0)
    assert (moon.title, moon.key, moon.step) == ("Moon", "moon", 1)  # recursion: found in the Owl's content
    assert moon.span == LoreSpan("lore", 20, 24, entry=0)
    assert explained.lore_steps == ((0, 4), (1,))  # activated (Long then gave way to the budget)
    assert explained.lore_seed is not None
    reasons = {d.title: d.reason for d in explained.lore_dropped}
    assert reasons == {"Never": "probability", "Off": "disabled", "Long": "budget"}
    assert all(d.span is not None and d.span.turn_id == said.turn_id for d in explained.lore_dropped)
    layer = next(layer for layer in explained.layers if layer.name == "lorebook")
    assert layer.tokens <= 40


async def test_familiar_explain_names_the_lore_left_out(opened: Familiar) -> None:
    from app.cli import _explain

    opened.lorebook_layer.file.path.write_text(
        '[[entries]]\ntitle = "Owl"\nkeys = ["owl"]\ncontent = "An owl."\n\n'
        '[[entries]]\ntitle = "Never"\nkeys = ["owl"]\nprobability = 0\ncontent = "x"\n',
        encoding="utf-8",
    )
    line = await opened.chat_local("an owl")
    document, text = await _explain(opened, argparse.Namespace(turn_id=line.turn_id))
    assert "  lore: Owl (fired by 'owl')" in text.splitlines()
    assert any(row.startswith("  lore left out: Never ('owl'): probability, rolled ") for row in text.splitlines())
    assert "dropped from lorebook" not in text
    assert [d["title"] for d in document["lorebook_dropped"]] == ["Never"]
    assert document["lorebook_activation"]["clock"] == 1


async def test_fired_counts_the_replies_each_entry_went_into_and_follows_a_moved_entry(opened: Familiar) -> None:
    path = opened.lorebook_layer.file.path
    path.write_text(
        "scan_depth = 1\n\n"  # each reply looks at the message it answers only
        '[[entries]]\ntitle = "Owl"\nkeys = ["owl"]\ncontent = "An owl."\n\n'
        '[[entries]]\ntitle = "Moon"\nkeys = ["moon"]\ncontent = "A moon."\n\n'
        '[[entries]]\ntitle = "Never"\nkeys = ["owl"]\nprobability = 0\ncontent = "x"\n',
        encoding="utf-8",
    )
    assert await opened.lore.fired() == []
    await opened.chat_local("an owl")
    await opened.chat_local("the owl and the moon")
    await opened.chat_local("nothing here")
    fired = {f.title: (f.entry, f.replies) for f in await opened.lore.fired()}
    assert fired == {"Owl": (0, 2), "Moon": (1, 1)}  # "Never" matched but never went in
    book = await opened.lore.load()
    owl, moon, never = book.entries
    await opened.lore.save([moon, never, owl], book.revision)  # the Owl moves to the end
    moved = {f.title: (f.entry, f.replies) for f in await opened.lore.fired()}
    assert moved == {"Moon": (0, 1), "Owl": (2, 2)}
    newest = max(f.last for f in await opened.lore.fired())
    assert newest.tzinfo is not None
    with pytest.raises(FamiliarError, match="days must be above 0"):
        await opened.lore.fired(0)
