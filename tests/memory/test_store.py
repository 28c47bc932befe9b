"""The SQL store: append-only turns, revisions, redactions, participants and input hygiene."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sqlite3
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from app.memory.errors import StoreError
from app.memory.store import MAX_CONTENT_CHARS, Store
from tests.memory.helpers import OTHER_PLACE, PLACE, T0, turn

pytestmark = pytest.mark.asyncio


async def _all_rows(store: Store) -> list[tuple[object, ...]]:
    return await store.read_all("SELECT * FROM turns ORDER BY id")


# -- appending ---------------------------------------------------------------------------------------


async def test_append_turn_returns_the_stored_row(store: Store) -> None:
    stored = await store.append_turn(turn("hello there", message_id=11))
    assert stored is not None
    assert stored.id == 1
    assert stored.content == "hello there"
    assert stored.place == PLACE
    assert stored.message_id == 11
    assert stored.revision == 0
    assert stored.redacted is False
    assert stored.created_at == T0
    assert stored.created_at.tzinfo is not None
    second = await store.append_turn(turn("and again", message_id=12, minutes=1))
    assert second is not None
    assert second.id == 2
    assert await store.count_turns() == 2
    assert await store.max_turn_id() == 2


async def test_other_time_zones_are_stored_as_utc(store: Store) -> None:
    paris = timezone(timedelta(hours=2))
    stored = await store.append_turn(turn("bonjour", created_at=datetime(2024, 5, 1, 14, 0, tzinfo=paris)))
    assert stored is not None
    assert stored.created_at == T0
    assert stored.created_at.utcoffset() == timedelta(0)


async def test_append_turns_returns_ids_in_order(store: Store) -> None:
    await store.append_turn(turn("first", message_id=1))
    ids = await store.append_turns([turn(f"batch {i}", message_id=100 + i, minutes=i) for i in range(5)])
    assert ids == [2, 3, 4, 5, 6]
    fetched = await store.turns_by_ids([*reversed(ids), 999])
    assert [t.content for t in fetched] == [f"batch {i}" for i in reversed(range(5))]
    assert await store.append_turns([]) == []


async def test_turns_without_message_ids_are_never_deduplicated(store: Store) -> None:
    ids = await store.append_turns([turn("local chat"), turn("local chat")])
    assert len(ids) == 2
    assert await store.append_turn(turn("local chat")) is not None
    assert await store.count_turns() == 3


async def test_duplicate_message_ids_are_ignored(store: Store) -> None:
    first = await store.append_turn(turn("original", message_id=42))
    assert first is not None
    assert await store.append_turn(turn("replayed by a backfill", message_id=42)) is None
    ids = await store.append_turns(
        [turn("new", message_id=43), turn("again", message_id=42), turn("twice in one batch", message_id=43)]
    )
    assert len(ids) == 1
    rows = await store.turns_by_ids([first.id, *ids])
    assert [(t.message_id, t.content) for t in rows] == [(42, "original"), (43, "new")]
    assert await store.count_turns() == 2


async def test_same_message_id_on_another_platform_is_distinct(store: Store) -> None:
    assert await store.append_turn(turn("discord", message_id=5)) is not None
    assert await store.append_turn(turn("local", message_id=5, platform="local", place="local")) is not None


async def test_edited_message_is_not_appended_again_by_a_backfill(store: Store) -> None:
    await store.append_turn(turn("v0", message_id=8))
    await store.edit_message("discord", 8, "v1", T0 + timedelta(minutes=5))
    assert await store.append_turn(turn("v0 replayed", message_id=8)) is None
    assert await store.count_turns() == 2


# -- recent turns --------------------------------------------------------------------------------------


async def test_recent_turns_per_place_oldest_first(store: Store) -> None:
    for i in range(6):
        await store.append_turn(turn(f"general {i}", message_id=10 + i, minutes=i))
        await store.append_turn(turn(f"home {i}", message_id=50 + i, minutes=i, place=OTHER_PLACE))
    recent = await store.recent_turns(PLACE, 3)
    assert [t.content for t in recent] == ["general 3", "general 4", "general 5"]
    assert all(t.place == PLACE for t in recent)
    assert [t.content for t in await store.recent_turns(OTHER_PLACE, 100)] == [f"home {i}" for i in range(6)]
    assert await store.recent_turns(PLACE, 0) == []
    assert await store.recent_turns(PLACE, -5) == []
    assert await store.recent_turns("dm:1", 10) == []


async def test_recent_turns_leave_out_redacted_and_superseded(store: Store) -> None:
    for i in range(4):
        await store.append_turn(turn(f"m{i}", message_id=i + 1, minutes=i))
    await store.redact_message("discord", 2, T0 + timedelta(hours=1))
    await store.edit_message("discord", 4, "m3 edited", T0 + timedelta(hours=1))
    recent = await store.recent_turns(PLACE, 10)
    assert [t.content for t in recent] == ["m0", "m2", "m3 edited"]
    assert recent[-1].revision == 1


async def test_recent_turns_keep_an_edited_message_in_its_place(store: Store) -> None:
    for i in range(3):
        await store.append_turn(turn(f"m{i}", message_id=i + 1, minutes=i))
    await store.edit_message("discord", 1, "m0 edited", T0 + timedelta(hours=1))
    recent = await store.recent_turns(PLACE, 10)
    assert [t.content for t in recent] == ["m0 edited", "m1", "m2"]


async def test_recent_turns_can_end_at_the_message_being_answered(store: Store) -> None:
    stored = [await store.append_turn(turn(f"m{i}", message_id=i + 1, minutes=i)) for i in range(5)]
    await store.append_turn(turn("elsewhere", message_id=99, place=OTHER_PLACE))
    ids = [t.id for t in stored if t is not None]
    assert [t.content for t in await store.recent_turns(PLACE, 10, ending_at=ids[2])] == ["m0", "m1", "m2"]
    assert [t.content for t in await store.recent_turns(PLACE, 2, ending_at=ids[2])] == ["m1", "m2"]
    # An edited message ends the window at its place, whichever revision is named, with its new text.
    edited = await store.edit_message("discord", 2, "m1 edited", T0 + timedelta(hours=1))
    assert edited is not None
    for ending_at in (ids[1], edited.id):
        assert [t.content for t in await store.recent_turns(PLACE, 10, ending_at=ending_at)] == ["m0", "m1 edited"]
    assert await store.recent_turns(PLACE, 10, ending_at=10_000) == []  # an unknown turn ends nothing in


# -- where a catch-up starts ---------------------------------------------------------------------------


async def test_resume_point_looks_back_over_the_newest_stored_messages(store: Store) -> None:
    assert await store.resume_point(PLACE, 3) is None
    for i in range(6):
        await store.append_turn(turn(f"m{i}", message_id=100 + i, minutes=i))
    await store.append_turn(turn("elsewhere", message_id=999, place=OTHER_PLACE))
    await store.append_turn(turn("local", place=PLACE, platform="local"))  # no message id: not counted
    assert await store.resume_point(PLACE, 1) == 105
    assert await store.resume_point(PLACE, 3) == 103
    assert await store.resume_point(PLACE, 100) == 100
    # A deleted message was seen: it still counts, so the catch-up does not fetch back past it.
    await store.redact_message("discord", 105, T0)
    assert await store.resume_point(PLACE, 1) == 105


async def test_dm_channels_lists_each_conversation_once_with_its_name(store: Store) -> None:
    assert await store.dm_channels() == []
    dm = turn("psst", message_id=1, place="dm:7002", author=7002, name="bob")
    for n in range(3):
        await store.append_turn(dataclasses.replace(dm, message_id=10 + n, channel_id=42))
    await store.append_turn(
        dataclasses.replace(
            dm, message_id=20, channel_id=43, place="dm:7003", author_key="discord:7003", author_name="carol"
        )
    )
    await store.append_turn(turn("in a guild", message_id=30))
    await store.append_turn(turn("the window", place="local", platform="local"))
    assert await store.dm_channels() == [("dm:7002", 42, "bob"), ("dm:7003", 43, "carol")]


# -- edits ---------------------------------------------------------------------------------------------


async def test_edit_adds_a_revision_and_keeps_the_old_row(store: Store) -> None:
    original = await store.append_turn(turn("I like cats", message_id=77))
    assert original is not None
    edited = await store.edit_message("discord", 77, "I like dogs", T0 + timedelta(minutes=3))
    assert edited is not None
    assert edited.id != original.id
    assert edited.revision == 1
    assert edited.content == "I like dogs"
    assert edited.message_id == 77
    assert edited.place == original.place
    assert edited.author_key == original.author_key
    # The old row is untouched: content is immutable.
    [old] = await store.turns_by_ids([original.id])
    assert old.content == "I like cats"
    assert old.revision == 0
    superseded = await store.read_all("SELECT id, superseded FROM turns ORDER BY id")
    assert superseded == [(original.id, 1), (edited.id, 0)]
    # A second edit builds on the latest revision.
    again = await store.edit_message("discord", 77, "I like birds", T0 + timedelta(minutes=4))
    assert again is not None
    assert again.revision == 2
    contents = [r[8] for r in await _all_rows(store)]
    assert contents == ["I like cats", "I like dogs", "I like birds"]


async def test_edit_that_changes_nothing_or_targets_nothing(store: Store) -> None:
    await store.append_turn(turn("same", message_id=1))
    assert await store.edit_message("discord", 1, "same", T0) is None
    assert await store.edit_message("discord", 999, "unknown message", T0) is None
    assert await store.edit_message("local", 1, "other platform", T0) is None
    assert await store.count_turns() == 1


async def test_edit_of_a_redacted_message_is_refused(store: Store) -> None:
    await store.append_turn(turn("secret", message_id=3))
    await store.redact_message("discord", 3, T0)
    assert await store.edit_message("discord", 3, "secret, edited", T0) is None
    assert await store.count_turns() == 1
    assert "secret" not in str(await _all_rows(store))


# -- redactions ---------------------------------------------------------------------------------------


async def test_redaction_clears_every_revision_and_keeps_the_rows(store: Store) -> None:
    await store.append_turn(turn("my address is 1 Elm St", message_id=9))
    await store.append_turn(turn("unrelated", message_id=10))
    await store.edit_message("discord", 9, "my address is 2 Oak Ave", T0 + timedelta(minutes=1))
    ids = await store.redact_message("discord", 9, T0 + timedelta(minutes=2))
    assert sorted(ids) == [1, 3]
    rows = await store.read_all("SELECT id, content, redacted FROM turns ORDER BY id")
    assert rows == [(1, "", 1), (2, "unrelated", 0), (3, "", 1)]
    assert "Elm" not in str(await _all_rows(store))
    assert "Oak" not in str(await _all_rows(store))
    marker = await store.read_all("SELECT platform, message_id, deleted_at FROM deleted_sources")
    assert marker == [("discord", 9, (T0 + timedelta(minutes=2)).isoformat())]
    # Both revisions are queued for removal from the index.
    assert sorted(doc for _oid, doc in await store.outbox("turns", 100)) == [1, 1, 3]


async def test_redaction_is_idempotent(store: Store) -> None:
    await store.append_turn(turn("x", message_id=9))
    await store.redact_message("discord", 9, T0)
    await store.redact_message("discord", 9, T0 + timedelta(minutes=1))
    assert await store.read_all("SELECT COUNT(*) FROM deleted_sources") == [(1,)]
    assert await store.count_turns() == 1


async def test_backfill_of_a_deleted_message_is_refused(store: Store) -> None:
    await store.append_turn(turn("to be deleted", message_id=20))
    await store.redact_message("discord", 20, T0)
    assert await store.append_turn(turn("to be deleted", message_id=20)) is None
    # Even as a later revision number or inside a batch.
    ids = await store.append_turns([turn("keep", message_id=21), turn("to be deleted", message_id=20)])
    assert len(ids) == 1
    [kept] = await store.turns_by_ids(ids)
    assert kept.message_id == 21
    assert await store.count_turns() == 2


async def test_deletion_seen_before_the_message_blocks_it(store: Store) -> None:
    # The delete event arrives first (or the message was never stored): a later backfill must not insert it.
    assert await store.redact_message("discord", 30, T0) == []
    assert await store.append_turn(turn("deleted before we saw it", message_id=30)) is None
    assert await store.append_turns([turn("deleted before we saw it", message_id=30)]) == []
    assert await store.count_turns() == 0
    # The marker is per platform.
    assert await store.append_turn(turn("local 30", message_id=30, platform="local", place="local")) is not None


# -- participants ------------------------------------------------------------------------------------


async def test_participants_are_recorded(store: Store) -> None:
    await store.append_turn(turn("hi", author=7001, name="alice", minutes=0))
    await store.append_turn(turn("hey", author=7002, name="bob", minutes=1))
    await store.append_turn(turn("it's me", author=7001, name="Alice the Great", minutes=2))
    own = dataclasses.replace(turn("hello, I am the familiar", minutes=3), author_key="familiar:self")
    await store.append_turn(own)
    rows = await store.read_all(
        "SELECT canonical_key, display_name, is_self, first_seen, last_seen FROM participants ORDER BY canonical_key"
    )
    assert rows == [
        ("discord:7001", "Alice the Great", 0, T0.isoformat(), (T0 + timedelta(minutes=2)).isoformat()),
        ("discord:7002", "bob", 0, (T0 + timedelta(minutes=1)).isoformat(), (T0 + timedelta(minutes=1)).isoformat()),
        ("familiar:self", "alice", 1, (T0 + timedelta(minutes=3)).isoformat(), (T0 + timedelta(minutes=3)).isoformat()),
    ]


async def test_ignored_duplicates_do_not_touch_participants(store: Store) -> None:
    await store.append_turn(turn("hi", message_id=1, name="alice"))
    await store.append_turn(turn("hi", message_id=1, name="renamed", minutes=10))
    assert await store.read_all("SELECT display_name, last_seen FROM participants") == [("alice", T0.isoformat())]


async def test_backfilled_older_turn_does_not_revert_the_display_name(store: Store) -> None:
    await store.append_turn(turn("now", message_id=2, name="new name", minutes=60))
    await store.append_turn(turn("earlier", message_id=1, name="old name", minutes=0))
    assert await store.read_all("SELECT display_name, first_seen, last_seen FROM participants") == [
        ("new name", T0.isoformat(), (T0 + timedelta(minutes=60)).isoformat())
    ]


# -- input hygiene -----------------------------------------------------------------------------------


async def test_lone_surrogates_are_replaced(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="app.memory.store"):
        stored = await store.append_turn(turn("broken \ud800 text \udfff end", name="na\udc80me", message_id=1))
    assert stored is not None
    assert "\ud800" not in stored.content
    assert stored.content.startswith("broken ")
    assert stored.content.endswith(" end")
    stored.content.encode("utf-8")
    stored.author_name.encode("utf-8")
    assert "surrogates" in caplog.text
    edited = await store.edit_message("discord", 1, "fixed \udbff", T0)
    assert edited is not None
    edited.content.encode("utf-8")


async def test_huge_text_is_refused_and_nothing_changes(store: Store) -> None:
    await store.append_turn(turn("small", message_id=1))
    before = await _all_rows(store)
    huge = "x" * (MAX_CONTENT_CHARS + 1)
    with pytest.raises(StoreError, match="too long"):
        await store.append_turn(turn(huge, message_id=2))
    with pytest.raises(StoreError, match="too long"):
        await store.append_turns([turn("fine", message_id=3), turn(huge, message_id=4)])
    with pytest.raises(StoreError, match="too long"):
        await store.edit_message("discord", 1, huge, T0)
    with pytest.raises(StoreError, match="too long"):
        await store.append_turn(turn("ok", name="n" * (MAX_CONTENT_CHARS + 1), message_id=5))
    assert await _all_rows(store) == before
    assert await store.outbox("turns", 10) == []
    # Exactly at the limit is accepted; the store still works after the refusals.
    assert await store.append_turn(turn("y" * MAX_CONTENT_CHARS, message_id=6)) is not None


async def test_naive_datetimes_are_refused(store: Store) -> None:
    await store.append_turn(turn("hello", message_id=1))
    before = await _all_rows(store)
    naive = datetime(2024, 5, 1, 12, 0)  # noqa: DTZ001 - the point of the test
    with pytest.raises(StoreError, match="time zone"):
        await store.append_turn(turn("naive", message_id=2, created_at=naive))
    with pytest.raises(StoreError, match="time zone"):
        await store.append_turns([turn("fine", message_id=3), turn("naive", message_id=4, created_at=naive)])
    with pytest.raises(StoreError, match="time zone"):
        await store.edit_message("discord", 1, "edited", naive)
    with pytest.raises(StoreError, match="time zone"):
        await store.redact_message("discord", 1, naive)
    assert await _all_rows(store) == before
    assert await store.read_all("SELECT COUNT(*) FROM deleted_sources") == [(0,)]
    # The write lock was released: the store still accepts writes.
    assert await store.append_turn(turn("still alive", message_id=5)) is not None


async def test_store_survives_reopen(tmp_path: Path) -> None:
    first = await Store.open(tmp_path / "history.db", tmp_path / "backups")
    try:
        await first.append_turns([turn(f"t{i}", message_id=i) for i in range(3)])
        await first.redact_message("discord", 1, T0)
    finally:
        await first.close()
    second = await Store.open(tmp_path / "history.db", tmp_path / "backups")
    try:
        assert second.backup_written is None
        assert [t.content for t in await second.recent_turns(PLACE, 10)] == ["t0", "t2"]
        assert await second.append_turn(turn("t1", message_id=1)) is None
    finally:
        await second.close()


async def test_close_twice_is_harmless(tmp_path: Path) -> None:
    opened = await Store.open(tmp_path / "history.db", tmp_path / "backups")
    await opened.close()
    await opened.close()


async def test_a_write_cancelled_while_it_begins_leaves_no_transaction_open(store: Store) -> None:
    """A task cancelled while its BEGIN is in flight (a reply cancelled at shutdown, a timeout) must
    not leave the writer inside a transaction nobody owns: every later write would join it and never
    commit, invisible to readers (and to every other process)."""
    for attempt in range(20):

        async def write(n: int = attempt) -> None:
            async with store.transaction() as conn:
                await conn.execute("INSERT INTO store_meta (key, value) VALUES (?, ?)", (f"k{n}", b"x"))

        task = asyncio.create_task(write())
        for _ in range(attempt % 4):  # cancel at different points: before, during and after BEGIN
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        stored = await store.append_turn(turn(f"after cancel {attempt}"))
        assert stored is not None
        seen = await store.read_all("SELECT content FROM turns WHERE id = ?", (stored.id,))
        assert seen == [(f"after cancel {attempt}",)], f"attempt {attempt}: the reader cannot see a committed turn"
    async with store.transaction() as conn:  # and a fresh transaction can begin
        await conn.execute("INSERT INTO store_meta (key, value) VALUES ('last', x'00')")


async def test_a_commit_is_seen_by_the_next_read_while_other_reads_are_in_flight(store: Store) -> None:
    """Reads share one reader connection. A read done in several calls (execute, fetch, close) left
    its statement open between them, pinning a snapshot older than a commit that had just returned;
    another coroutine's read in between then missed that commit (a reply 'vanished', a released work
    item still read as running)."""
    await store.append_turns([turn(f"filler {i}") for i in range(3000)])
    stop = False

    async def reader() -> None:
        while not stop:
            await store.read_all("SELECT id, content FROM turns WHERE id > ? LIMIT 2000", (0,))

    readers = [asyncio.create_task(reader()) for _ in range(6)]
    try:
        for i in range(150):
            stored = await store.append_turn(turn(f"probe {i}"))
            assert stored is not None
            seen = await store.read_one("SELECT content FROM turns WHERE id = ?", (stored.id,))
            assert seen == (f"probe {i}",), f"probe {i}: a committed turn was not visible to the next read"
    finally:
        stop = True
        await asyncio.gather(*readers)


async def test_a_failed_commit_is_rolled_back_and_the_writer_keeps_working(store: Store) -> None:
    async def violate_at_commit() -> None:
        async with store.transaction() as conn:
            await conn.execute("PRAGMA defer_foreign_keys = ON")  # the violation surfaces at COMMIT
            await conn.execute(
                "INSERT INTO fact_embeddings (fact_id, model, dim, vector, created_at) VALUES (999, 'm', 1, x'00', 't')"
            )

    with pytest.raises(sqlite3.IntegrityError):
        await violate_at_commit()
    assert await store.read_all("SELECT * FROM fact_embeddings") == []
    stored = await store.append_turn(turn("still writing"))
    assert stored is not None
    assert await store.read_one("SELECT content FROM turns WHERE id = ?", (stored.id,)) == ("still writing",)
    async with store.transaction() as conn:  # no transaction was left open
        await conn.execute("INSERT INTO store_meta (key, value) VALUES ('after', x'00')")


# -- the file beside other processes -------------------------------------------------------------------
_OTHER_PROCESS = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT * FROM turns'); c.close()"


async def _another_process_opens_and_closes(path: Path) -> None:
    """A command beside this process: opens the database, reads, closes (the last one out deletes the WAL)."""
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", _OTHER_PROCESS, str(path))
    assert await asyncio.wait_for(child.wait(), timeout=60) == 0


async def test_reading_the_file_as_bytes_keeps_this_process_s_locks(store: Store) -> None:
    """file_holds reads history.db through a descriptor of its own; closing one would drop this process's
    POSIX locks, and another process closing its connection would then delete the WAL under this one."""
    await store.append_turn(turn("the marker text", message_id=11))
    wal = store.path.with_name(store.path.name + "-wal")
    assert await asyncio.to_thread(store.file_holds, b"the marker text")
    assert not await asyncio.to_thread(store.file_holds, b"never written")
    await _another_process_opens_and_closes(store.path)
    assert wal.exists()
    await store.append_turn(turn("written after", message_id=12, minutes=1))
    rows = await asyncio.to_thread(_read_elsewhere, store.path)
    assert rows == ["the marker text", "written after"]


def _read_elsewhere(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT content FROM turns ORDER BY id")]
    finally:
        conn.close()
