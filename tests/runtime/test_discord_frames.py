"""Gateway frames the client cannot read, after READY: each is dropped (or, a broken zlib stream, the
connection is resumed) with one line saying what it was, and the familiar goes on answering.

Real discord.py against the wire-level fake Discord (set as `[discord] api_base` / `gateway_url`),
the real runtime, SQLite and tantivy.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable

import pytest

from app.runtime.events import Activity, ActivityKind, ConnectionState
from app.runtime.service import Familiar
from tests.conftest import ALICE, GENERAL, GUILD_ID
from tests.fakes.discord_server import (
    CORRUPT_ZLIB_FRAME,
    JSON,
    FakeDiscord,
    build_message,
    build_partial_member,
    build_user,
    now_iso,
)
from tests.fakes.llm_server import FakeLLM
from tests.runtime.test_replies import Recorder

pytestmark = pytest.mark.asyncio

Send = Callable[[FakeDiscord], Awaitable[None]]


SECRET = "alice's secret words"


def _message_create(**changes: object) -> JSON:
    """A MESSAGE_CREATE from alice in #general as the fake builds it, with `changes` (None: key removed)."""
    message = build_message(
        message_id=(1 << 40) + 7,
        channel_id=GENERAL,
        guild_id=GUILD_ID,
        author=build_user(ALICE, "alice"),
        member=build_partial_member(now_iso()),
        content=SECRET,
        mentions=[],
        embeds=[],
        attachments=[],
        reference=None,
        referenced=None,
    )
    for key, value in changes.items():
        if value is None:
            del message[key]
        else:
            message[key] = copy.deepcopy(value)
    return message


def _raw(frame: str | bytes, *, plain: bool = False) -> Send:
    async def send(fake: FakeDiscord) -> None:
        await fake.send_raw_frame(frame, plain=plain)

    return send


def _dispatch(data: JSON) -> Send:
    async def send(fake: FakeDiscord) -> None:
        await fake.dispatch_raw("MESSAGE_CREATE", data)

    return send


TRUNCATED = '{"op":0,"t":"MESSAGE_CREATE","s":3,"d":{"id":"1234","chan'

# (the frame, what the activity line says, whether the connection is resumed)
BAD_FRAMES: dict[str, tuple[Send, str, bool]] = {
    "truncated JSON, compressed": (_raw(TRUNCATED), "Discord sent a compressed frame that is not JSON", False),
    "truncated JSON, text frame": (_raw(TRUNCATED, plain=True), "Discord sent a frame that is not JSON", False),
    "not JSON, text frame": (_raw("<html>502 Bad Gateway</html>", plain=True), "a frame that is not JSON", False),
    "JSON but not an object": (_raw("[1, 2, 3]"), "Discord sent a compressed frame that cannot be read", False),
    "corrupt zlib frame": (_raw(CORRUPT_ZLIB_FRAME), "a compressed frame that does not decompress", True),
    "MESSAGE_CREATE without author": (
        _dispatch(_message_create(author=None)),
        "a MESSAGE_CREATE event that cannot be read (AttributeError: 'Message' object has no attribute 'author')",
        False,
    ),
    "MESSAGE_CREATE without channel_id": (
        _dispatch(_message_create(channel_id=None)),
        "a MESSAGE_CREATE event that cannot be read (KeyError: 'channel_id')",
        False,
    ),
    "MESSAGE_CREATE with a word for an id": (
        _dispatch(_message_create(id="not-a-snowflake")),
        "a MESSAGE_CREATE event that cannot be read (ValueError",
        False,
    ),
    "MESSAGE_CREATE with a string for its author": (
        _dispatch(_message_create(author="alice")),
        "a MESSAGE_CREATE event that cannot be read (TypeError",
        False,
    ),
}


def _frame_lines(events: Recorder) -> list[Activity]:
    activity = [e for e in events.events if isinstance(e, Activity) and e.where == "discord"]
    return [e for e in activity if e.summary.startswith("Discord sent")]


@pytest.mark.parametrize("kind", list(BAD_FRAMES))
async def test_a_bad_frame_after_ready_is_dropped_and_the_familiar_answers_on(
    kind: str, familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    send, said, resumed = BAD_FRAMES[kind]
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    await fake_discord.wait_for_delivered()

    await send(fake_discord)
    # Said at once, and at the same moment as the next message: one the resume must replay.
    mention = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="still with me?", mentions_bot=True
    )
    [post] = await fake_discord.wait_for_posted(1, timeout=10)
    assert post.message_reference is not None
    assert int(post.message_reference["message_id"]) == mention
    assert post.content == "echo: alice: still with me?"

    lines = [(e.kind, e.summary) for e in _frame_lines(events)]
    assert len(lines) == 1, lines  # one line per bad frame
    (line_kind, summary) = lines[0]
    assert said in summary
    assert summary.endswith("the connection was reset and resumed" if resumed else "it was dropped")
    assert SECRET not in summary  # never the frame's text: it may be what someone wrote
    assert line_kind is (ActivityKind.INFO if resumed else ActivityKind.ERROR)
    assert fake_discord.resume_count == (1 if resumed else 0)
    assert fake_discord.identify_count == 1
    assert familiar.get_status().state is ConnectionState.CONNECTED
    await events.wait_for(lambda: len(events.activity(ActivityKind.REPLY_OUT)) == 1, "the reply stored")
    stored = await familiar.history.store.read_all(
        "SELECT message_id, content FROM turns WHERE author_key = 'familiar:self'"
    )
    assert stored == [(post.message_id, "echo: alice: still with me?")]


async def test_every_bad_frame_in_a_row_on_one_connection(
    familiar: Familiar, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    """All of them, one after another, on one running familiar: each said once, none ends it."""
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    for number, (send, _said, _resumed) in enumerate(BAD_FRAMES.values(), start=1):
        await fake_discord.wait_for_delivered()
        await send(fake_discord)
        await fake_discord.send_message(
            channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=f"number {number}", mentions_bot=True
        )
        await fake_discord.wait_for_posted(number, timeout=10)
    assert len(_frame_lines(events)) == len(BAD_FRAMES)
    assert [p.content for p in fake_discord.posted] == [f"echo: alice: number {n}" for n in range(1, number + 1)]
    assert familiar.get_status().state is ConnectionState.CONNECTED
