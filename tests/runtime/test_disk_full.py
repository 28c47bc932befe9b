"""The disk fills up while the familiar runs (issue 18, item 18): messages said meanwhile are stored
while it still runs once there is room (fetched again from Discord's history, as at start), a
"disk full" state is published while it lasts and cleared after, nothing stored is lost, the
database stays sound and replies resume.

Real discord.py against the wire-level fake Discord, real SQLite and tantivy, on a small tmpfs that
the test fills with a filler file and frees again (skipped where mounting is not permitted).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.events import ActivityKind, DiskFullChanged
from app.runtime.service import Familiar
from tests.conftest import ALICE, BOB, GENERAL, GUILD_ID, HOME, TOKEN, write_character_toml
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLM
from tests.runtime.test_replies import Recorder
from tests.small_disk import SmallDisk

pytestmark = pytest.mark.asyncio

PLACE = f"guild:{GUILD_ID}/{GENERAL}"
SAID_WHILE_FULL = 30


@pytest_asyncio.fixture
async def on_small_disk(small_disk: SmallDisk, fake_discord: FakeDiscord, fake_llm: FakeLLM) -> AsyncIterator[Familiar]:
    paths = FamiliarPaths(root=small_disk.path / "home", name="default")
    write_character_toml(paths, fake_discord.api_base, fake_discord.gateway_url, fake_llm.base_url)
    familiar = await Familiar.open(
        paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={"DISCORD_TOKEN": TOKEN}
    )
    try:
        yield familiar
    finally:
        small_disk.free()  # a failed test must not leave the store unable to close cleanly
        await familiar.close()


def _disk_events(events: Recorder) -> list[DiskFullChanged]:
    return [e for e in events.events if isinstance(e, DiskFullChanged)]


def _handled(events: Recorder) -> int:
    """Live messages the adapter has handled: stored, or not stored for want of room."""
    stored = len(events.activity(ActivityKind.MESSAGE_IN))
    refused = [a for a in events.activity(ActivityKind.ERROR) if a.summary.startswith("a message was not stored")]
    return stored + len(refused)


async def _contents(familiar: Familiar, place: str = PLACE) -> list[str]:
    """The place's messages as a reply's history reads them: latest revisions, in the order said."""
    return [t.content for t in await familiar.history.recent_turns(place, 500)]


async def _started(familiar: Familiar) -> Recorder:
    """The familiar started, its first catch-up done; the events it publishes from then on, recorded."""
    events = Recorder()
    familiar.subscribe(events)
    await familiar.start()
    await events.wait_for(
        lambda: any(a.summary.startswith("caught up") for a in events.activity(ActivityKind.INFO)), "the first catch-up"
    )
    return events


async def test_messages_said_while_the_disk_is_full_are_stored_while_running_once_there_is_room(
    on_small_disk: Familiar, small_disk: SmallDisk, fake_discord: FakeDiscord, fake_llm: FakeLLM
) -> None:
    familiar = on_small_disk
    events = await _started(familiar)
    await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=BOB, content="before the disk filled"
    )
    await fake_discord.send_message(channel_id=HOME, guild_id=GUILD_ID, author_id=BOB, content="hello home")
    await fake_discord.wait_for_posted(1, timeout=10)  # a home channel: answered
    await events.wait_for(lambda: len(events.activity(ActivityKind.REPLY_OUT)) == 1, "the first reply stored")
    await familiar.history.turns_index.flush(10)
    already = await familiar.history.store.read_all("SELECT id, content FROM turns ORDER BY id")

    small_disk.fill()
    said = [
        await fake_discord.send_message(
            channel_id=GENERAL,
            guild_id=GUILD_ID,
            author_id=ALICE,
            content=f"said while full {n}",
            mentions_bot=n % 10 == 0,
        )
        for n in range(SAID_WHILE_FULL)
    ]
    await events.wait_for(lambda: _handled(events) == 2 + SAID_WHILE_FULL, "every message handled", timeout=20)
    # The state is published and in the status snapshot while it lasts.
    await events.wait_for(lambda: any(e.full for e in _disk_events(events)), "a disk-full event")
    full = _disk_events(events)[-1]
    assert full.full
    assert "database or disk is full" in full.detail
    assert full.banner.startswith("Disk full: ")
    assert str(small_disk.path / "home") in full.banner
    assert familiar.get_status().disk_full == full.banner
    missed = [c for c in await _contents(familiar) if c.startswith("said while full")]
    assert len(missed) < SAID_WHILE_FULL, "the disk took every message: nothing was tested"
    assert full.waiting == SAID_WHILE_FULL - len(missed)
    assert len(fake_discord.posted) == 1  # nothing is answered that could not be stored

    # Room again. A new message waits for its channel's catch-up, then is stored and answered.
    small_disk.free()
    back = await fake_discord.send_message(
        channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content="are you back?", mentions_bot=True
    )
    posted = await fake_discord.wait_for_posted(2, timeout=30)
    assert posted[-1].message_reference is not None
    assert int(posted[-1].message_reference["message_id"]) == back
    assert posted[-1].content == "echo: alice: are you back?"
    await events.wait_for(lambda: len(events.activity(ActivityKind.REPLY_OUT)) == 2, "the reply stored")
    await events.wait_for(lambda: not _disk_events(events)[-1].full, "the disk-full state cleared", timeout=30)
    assert familiar.get_status().disk_full is None

    # Every message said while full is stored, once, in the order said, before the new one.
    contents = await _contents(familiar)
    assert contents == [
        "before the disk filled",
        *(f"said while full {n}" for n in range(SAID_WHILE_FULL)),
        "are you back?",
        "echo: alice: are you back?",
    ]
    rows = await familiar.history.store.read_all(
        "SELECT message_id FROM turns WHERE place = ? AND content LIKE 'said while full%' ORDER BY id", (PLACE,)
    )
    assert [r[0] for r in rows] == said
    # The reply's prompt holds what was missed, and ends at the new message.
    history = [m["content"] for m in fake_llm.requests[-1].messages[1:]]
    assert history[-3:] == [
        f"alice: said while full {SAID_WHILE_FULL - 2}",
        f"alice: said while full {SAID_WHILE_FULL - 1}",
        "alice: are you back?",
    ]
    # Nothing said while full is answered now (as at start: stored, never answered).
    await fake_discord.wait_for_delivered()
    assert len(fake_discord.posted) == 2
    # Nothing stored before was lost; the database is sound; the index has everything.
    now = await familiar.history.store.read_all("SELECT id, content FROM turns ORDER BY id")
    assert set(already) <= set(now)
    [(check,)] = await familiar.history.store.read_all("PRAGMA integrity_check")
    assert check == "ok"
    await familiar.history.turns_index.flush(20)
    hits = await familiar.search_turns("full", limit=100)
    assert len([h for h in hits if h.content.startswith("said while full")]) == SAID_WHILE_FULL


async def test_with_nothing_said_once_there_is_room_a_retry_stores_what_waited_and_redoes_edits_and_deletions(
    on_small_disk: Familiar, small_disk: SmallDisk, fake_discord: FakeDiscord
) -> None:
    familiar = on_small_disk
    events = await _started(familiar)
    say = [
        await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=BOB, content=text)
        for text in ("keep me", "edit me", "delete me")
    ]
    await events.wait_for(lambda: len(events.activity(ActivityKind.MESSAGE_IN)) == 3, "the messages stored")

    small_disk.fill()
    for n in range(5):
        await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=f"quiet {n}")
    await fake_discord.edit_message(say[1], "edited while full")
    await fake_discord.delete_message(say[2])
    refused = ("a message was not stored", "an edit was not stored", "a deletion was not stored")
    await events.wait_for(
        lambda: len([a for a in events.activity(ActivityKind.ERROR) if a.summary.startswith(refused)]) == 7,
        "every refusal",
    )
    assert _disk_events(events)[-1].full
    assert _disk_events(events)[-1].waiting == 5

    small_disk.free()  # and nobody says anything: the retries find the room by themselves
    await events.wait_for(lambda: not _disk_events(events)[-1].full, "the disk-full state cleared", timeout=30)
    await events.wait_for(
        lambda: any(a.summary == "backfilled 5 messages in #general" for a in events.activity(ActivityKind.INFO)),
        "the catch-up of what waited",
        timeout=30,
    )
    assert await _contents(familiar) == ["keep me", "edited while full", *(f"quiet {n}" for n in range(5))]
    redacted = await familiar.history.store.read_all(
        "SELECT content, redacted FROM turns WHERE message_id = ?", (say[2],)
    )
    assert redacted == [("", 1)]  # the deletion reached the store: its text is gone
    assert familiar.get_status().disk_full is None
    [(check,)] = await familiar.history.store.read_all("PRAGMA integrity_check")
    assert check == "ok"


async def test_a_catch_up_at_start_that_the_full_disk_refuses_is_done_again_once_there_is_room(
    on_small_disk: Familiar, small_disk: SmallDisk, fake_discord: FakeDiscord
) -> None:
    familiar = on_small_disk
    events = await _started(familiar)
    await familiar.stop()
    for n in range(4):
        await fake_discord.send_message(channel_id=GENERAL, guild_id=GUILD_ID, author_id=ALICE, content=f"offline {n}")

    small_disk.fill()
    await familiar.start()
    await events.wait_for(
        lambda: any(a.summary.startswith("catching up stopped") for a in events.activity(ActivityKind.INFO)),
        "the refused catch-up",
    )
    await events.wait_for(lambda: any(e.full and e.waiting == 4 for e in _disk_events(events)), "4 messages waiting")

    small_disk.free()
    await events.wait_for(
        lambda: any(a.summary == "backfilled 4 messages in #general" for a in events.activity(ActivityKind.INFO)),
        "the catch-up done again",
        timeout=30,
    )
    await events.wait_for(lambda: not _disk_events(events)[-1].full, "the disk-full state cleared", timeout=30)
    assert await _contents(familiar) == [f"offline {n}" for n in range(4)]
