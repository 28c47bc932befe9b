"""A stalled model request holds up its own place only.

The endpoint accepts some prompts and never answers them (the fake LLM's `stall()`), with the
familiar's own timeout at 60 s, as in the fault probe; every other place's reply must still start at
once. Real discord.py against the wire-level fake Discord, the real openai client against the fake
LLM, real SQLite and tantivy.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.service import Familiar
from tests.conftest import ALICE, BOB, GENERAL, GUILD_ID, HOME, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord, PostedMessage
from tests.fakes.llm_server import FakeLLM

pytestmark = pytest.mark.asyncio

CELLAR = 503
LIBRARY = 504
LLM_TIMEOUT = 60.0  # as in the probe: a stall holds its request this long before it fails
AT_ONCE = 10.0  # the longest an unstalled place's reply may take here (far below the timeout)


@pytest_asyncio.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    """The shared fake Discord's guild with two more channels, so four places can talk at once."""
    fake = FakeDiscord(token=TOKEN)
    fake.add_user(ALICE, "alice")
    fake.add_user(BOB, "bob")
    channels = {GENERAL: "general", HOME: "familiar-home", CELLAR: "cellar", LIBRARY: "library"}
    fake.add_guild(GUILD_ID, "Lantern Club", channels)
    await fake.start()
    yield fake
    await fake.close()
    assert fake.unhandled == [], f"the fake Discord saw unhandled routes: {fake.unhandled}"
    assert fake.errors == [], f"the fake Discord hit errors: {fake.errors}"


async def _open(
    paths: FamiliarPaths,
    fake_discord: FakeDiscord,
    fake_llm: FakeLLM,
    *,
    timeout: float = LLM_TIMEOUT,
    extra: str = "",
) -> Familiar:
    """A familiar with the default concurrency cap and (by default) the probe's 60 s model timeout."""
    write_character_toml(paths, fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url)
    text = paths.character_toml.read_text(encoding="utf-8")
    text = text.replace("timeout = 5.0\n", f"timeout = {timeout}\n", 1) + extra
    paths.character_toml.write_text(text, encoding="utf-8")
    secrets = SecretStore("default", paths.secrets_file, use_keyring=False)
    return await Familiar.open(paths, secrets, env={"DISCORD_TOKEN": TOKEN})


@pytest_asyncio.fixture
async def familiar(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> AsyncIterator[Familiar]:
    instance = await _open(familiar_paths, fake_discord, fake_llm)
    yield instance
    await instance.close()


def _answered(posted: list[PostedMessage]) -> dict[int, str]:
    out: dict[int, str] = {}
    for post in posted:
        assert post.message_reference is not None, f"a reply that answers no message: {post.content!r}"
        out[int(post.message_reference["message_id"])] = post.content
    return out


async def _mention(fake_discord: FakeDiscord, channel_id: int, content: str) -> int:
    return await fake_discord.send_message(
        channel_id=channel_id, guild_id=GUILD_ID, author_id=ALICE, content=content, mentions_bot=True
    )


async def test_two_stalled_requests_do_not_hold_up_the_replies_elsewhere(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    await familiar.start()
    fake_llm.stall("never answered")
    stuck = [
        await _mention(fake_discord, GENERAL, "a question never answered in general"),
        await _mention(fake_discord, CELLAR, "a question never answered in the cellar"),
    ]
    await fake_llm.wait_for_stalled(2)  # as many as the default cap (2): every slot of a shared pool
    loop = asyncio.get_running_loop()
    asked = loop.time()
    home = await fake_discord.send_message(channel_id=HOME, guild_id=GUILD_ID, author_id=BOB, content="hi home")
    library = await _mention(fake_discord, LIBRARY, "what is on the shelf?")
    posted = await fake_discord.wait_for_posted(2, timeout=AT_ONCE)
    waited = loop.time() - asked
    assert _answered(posted) == {home: "echo: bob: hi home", library: "echo: alice: what is on the shelf?"}
    assert waited < AT_ONCE < LLM_TIMEOUT
    assert fake_llm.stalled == 2  # the stalled ones are still waiting for their answers
    assert set(stuck).isdisjoint(_answered(fake_discord.posted))


async def test_a_stalled_place_goes_on_answering_in_order_once_its_request_fails(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """Within a place the line holds (the next reply's prompt must end at its own message), and only
    there: the stalled place's next message is answered once the stalled request gives up."""
    familiar = await _open(familiar_paths, fake_discord, fake_llm, timeout=1.0)  # gives up within the test
    try:
        await familiar.start()
        fake_llm.stall("never answered")
        await _mention(fake_discord, GENERAL, "a question never answered")
        await fake_llm.wait_for_stalled(1)
        later = await _mention(fake_discord, GENERAL, "and an easy one")
        elsewhere = await _mention(fake_discord, CELLAR, "hello cellar")
        [first] = await fake_discord.wait_for_posted(1, timeout=AT_ONCE)
        assert _answered([first]) == {elsewhere: "echo: alice: hello cellar"}
        posted = await fake_discord.wait_for_posted(2, timeout=AT_ONCE)
        assert _answered(posted)[later] == "echo: alice: and an easy one"
    finally:
        await familiar.close()


async def test_stalled_background_work_does_not_hold_up_a_reply(
    familiar_paths: FamiliarPaths, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    learning = '\n[providers.memory]\nprojectors = ["rolling_summary"]\n\n[memory.learning]\nsummary_turns = 1\n'
    familiar = await _open(familiar_paths, fake_discord, fake_llm, extra=learning)
    try:
        await familiar.start()
        await _mention(fake_discord, GENERAL, "the kettle is on")
        await fake_discord.wait_for_posted(1)  # said and answered: two turns for the summary worker
        fake_llm.stall("Previous summary:")  # the summary worker's prompt
        tick = asyncio.create_task(familiar.learn_now())
        try:
            await fake_llm.wait_for_stalled(1)
            asked = await _mention(fake_discord, CELLAR, "is the kettle on?")
            posted = await fake_discord.wait_for_posted(2, timeout=AT_ONCE)
            assert _answered(posted)[asked] == "echo: alice: is the kettle on?"
        finally:
            tick.cancel()
            await asyncio.wait({tick}, timeout=AT_ONCE)
    finally:
        await familiar.close()
