"""The bot token check against the wire-level fake Discord: good, wrong and malformed tokens, the Message
Content intent off (by the application's flags, confirmed by a gateway IDENTIFY), a server that does not
answer, and one that is not Discord."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from app.config.settings import DiscordSection
from app.runtime.api.setup_views import TokenVerdict
from app.runtime.discord.check import check_bot_token, invite_url, token_problem
from tests.fakes.discord_server import FakeDiscord

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(20)]

TOKEN = "MTAwMA.good-token_1"
INVITE = "https://discord.com/oauth2/authorize?client_id=1000&scope=bot&permissions=68608"


@pytest_asyncio.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord(token=TOKEN, bot_name="Wisp")
    await fake.start()
    yield fake
    await fake.close()
    assert fake.errors == []


@pytest_asyncio.fixture
async def intent_off() -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord(token=TOKEN, bot_name="Wisp", allow_message_content=False)
    await fake.start()
    yield fake
    await fake.close()
    assert fake.errors == []


def section(fake: FakeDiscord, *, gateway: bool = True, message_content: bool = True) -> DiscordSection:
    return DiscordSection(
        api_base=fake.api_base, gateway_url=fake.gateway_url if gateway else "", message_content_intent=message_content
    )


async def test_a_good_token_names_the_bot_and_gives_the_invite_link(discord: FakeDiscord) -> None:
    check = await check_bot_token(f"  {TOKEN}\n", section(discord))

    assert check.verdict is TokenVerdict.OK
    assert check.message == "OK: this is the bot Wisp."
    assert (check.bot_name, check.bot_id, check.application_id) == ("Wisp", 1000, 1000)
    assert check.invite_url == INVITE
    assert discord.requests == ["GET /api/v10/users/@me", "GET /api/v10/oauth2/applications/@me"]
    assert discord.gateway_queries == [], "the flags said the intent is on: no gateway connection needed"
    assert discord.unhandled == []


async def test_the_invite_asks_for_view_channels_send_messages_and_read_history() -> None:
    # 1024 View Channels + 2048 Send Messages + 65536 Read Message History
    assert invite_url(42).endswith("client_id=42&scope=bot&permissions=68608")


async def test_a_wrong_token_is_an_invalid_token_verdict(discord: FakeDiscord) -> None:
    check = await check_bot_token("MTAwMA.revoked", section(discord))

    assert check.verdict is TokenVerdict.INVALID
    assert check.message.startswith("Discord rejected this token")
    assert not check.token_works
    assert check.invite_url == ""
    assert discord.rejected == ["GET /api/v10/users/@me: 401 0 401: Unauthorized"]
    assert discord.gateway_queries == []


@pytest.mark.parametrize("gateway", [True, False], ids=["gateway-configured", "gateway-from-rest"])
async def test_the_message_content_intent_off_is_a_clear_verdict(intent_off: FakeDiscord, gateway: bool) -> None:
    check = await check_bot_token(TOKEN, section(intent_off, gateway=gateway))

    assert check.verdict is TokenVerdict.INTENT_OFF
    assert check.token_works
    assert "Message Content intent is off" in check.message
    assert "switch on 'Message Content Intent'" in check.message
    assert "\n" not in check.message
    assert check.bot_name == "Wisp"
    assert check.invite_url == INVITE
    assert len(intent_off.gateway_queries) == 1, "the flags said off: the gateway confirmed it"
    assert intent_off.identify_count == 0  # refused with 4014
    await intent_off.wait_until(lambda: intent_off.open_connections == 0, what="the check to close its connection")
    assert intent_off.unhandled == []


async def test_flags_that_do_not_follow_the_intents_are_settled_by_the_gateway(discord: FakeDiscord) -> None:
    discord.application_flags = 0  # a Discord-compatible server: flags say nothing, the intent is allowed

    check = await check_bot_token(TOKEN, section(discord))

    assert check.verdict is TokenVerdict.OK
    assert discord.identify_count == 1
    await discord.wait_until(lambda: discord.open_connections == 0, what="the check to close its connection")


async def test_without_asking_for_the_intent_it_is_not_needed(intent_off: FakeDiscord) -> None:
    check = await check_bot_token(TOKEN, section(intent_off, message_content=False))

    assert check.verdict is TokenVerdict.OK
    assert "reads only messages that mention it" in check.message
    assert intent_off.gateway_queries == []


@pytest.mark.parametrize(
    ("token", "says"),
    [
        ("", "Paste the bot token first."),
        ("   ", "Paste the bot token first."),
        (f"Bot {TOKEN}", "without the word 'Bot'"),
        ("MTAw MA.abc", "That is not a bot token"),
        ("abc\r\nX-Injected: 1", "That is not a bot token"),
        ("tökén", "That is not a bot token"),
    ],
)
async def test_a_malformed_token_is_refused_without_sending_it(discord: FakeDiscord, token: str, says: str) -> None:
    check = await check_bot_token(token, section(discord))

    assert check.verdict is TokenVerdict.MALFORMED
    assert says in check.message
    assert discord.requests == []
    assert token_problem(token.strip()) == check.message


async def test_a_server_that_does_not_answer_is_unreachable() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = DiscordSection(api_base=f"http://127.0.0.1:{port}/api/v10")

    check = await check_bot_token(TOKEN, settings, timeout=5.0)

    assert check.verdict is TokenVerdict.UNREACHABLE
    assert check.message.startswith(f"Cannot reach http://127.0.0.1:{port}/api/v10 (")
    assert check.message.endswith("Check the network.")


async def test_an_address_that_is_not_a_discord_api_says_so(discord: FakeDiscord) -> None:
    settings = DiscordSection(api_base=f"http://127.0.0.1:{discord.port}/not-the-api")

    check = await check_bot_token(TOKEN, settings)

    assert check.verdict is TokenVerdict.ERROR
    assert check.message == "Discord answered 404: 404: Not Found."
    discord.unhandled.clear()  # asked for on purpose
