"""The facade's typed sub-APIs on the real runtime (real SQLite and tantivy, the fakes at the edges):
names resolved, decisions and their undo, deferred forgets, receipts and tombstone labels, the pause
switches with their inheritance, and the one change broadcast."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.memory.facts import NewFact
from app.runtime.api.views import PendingItem
from app.runtime.errors import FamiliarError, StaleRevisionError
from app.runtime.events import ChangeKind, MemoryChanged, RuntimeEvent
from app.runtime.messages import IncomingMessage
from app.runtime.retrieval import Retriever
from app.runtime.service import Familiar
from tests.conftest import ALICE, BOB, GENERAL, GUILD_ID, HOME

pytestmark = pytest.mark.asyncio

PLACE = f"guild:{GUILD_ID}/{GENERAL}"
ALICE_KEY = f"discord:{ALICE}"
BOB_KEY = f"discord:{BOB}"
WAIT = 5.0


def message(message_id: int, content: str, *, author: int = ALICE, name: str = "alice") -> IncomingMessage:
    return IncomingMessage(
        platform="discord",
        message_id=message_id,
        place=PLACE,
        guild_id=GUILD_ID,
        channel_id=GENERAL,
        author_id=author,
        author_name=name,
        author_is_bot=False,
        content=content,
        created_at=datetime(2025, 3, 1, 9, 0, tzinfo=UTC) + timedelta(minutes=message_id),
        mentions_familiar=False,
        replies_to_familiar=False,
        reply_to=None,
        guild_name="Lantern Club",
        channel_name="general",
    )


async def heard(familiar: Familiar, *messages: IncomingMessage) -> list[int]:
    """Messages as the Discord adapter hands them over; returns their turn ids."""
    for each in messages:
        await familiar.conversation.on_message(each)
    turns = await familiar.history.recent_turns(PLACE, 50)
    return [t.id for t in turns]


async def proposed(
    familiar: Familiar, content: str, sources: list[int], subjects: tuple[str, ...] = (ALICE_KEY,)
) -> int:
    """A fact as extraction proposes it (semantic: it waits in the queue)."""
    outcome = await familiar.history.insert_fact(
        NewFact(
            content,
            "semantic",
            6,
            0.9,
            subjects,
            PLACE,
            speaker=ALICE_KEY,
            source_turn_ids=tuple(sources),
            channel_scoped=True,  # the channel's own, like the owner's facts remembered there
        )
    )
    assert outcome.fact is not None
    assert outcome.fact.status == "pending"
    return outcome.fact.id


class Seen(list[MemoryChanged]):
    """The MemoryChanged events a familiar publishes, with a bounded wait for one that matches."""

    def __init__(self, familiar: Familiar) -> None:
        super().__init__()
        self._arrived = asyncio.Event()
        familiar.subscribe(self._on_event)

    def _on_event(self, event: RuntimeEvent) -> None:
        if isinstance(event, MemoryChanged):
            self.append(event)
            self._arrived.set()

    async def until(self, check: Callable[[MemoryChanged], bool], what: str, timeout: float = WAIT) -> None:
        async def arrival() -> None:
            while not any(check(e) for e in self):
                self._arrived.clear()
                await self._arrived.wait()

        try:
            await asyncio.wait_for(arrival(), timeout)
        except TimeoutError:
            pytest.fail(f"waited {timeout} s for {what}; saw {list(self)}")


# -- names and the pending queue ---------------------------------------------------------------------


async def test_a_pending_item_carries_everything_triage_shows_by_name(familiar: Familiar) -> None:
    turns = await heard(
        familiar,
        message(1, "I work at the bakery on Mill Street"),
        message(2, "actually I moved to the library last week"),
    )
    known = await familiar.memory.remember("Alice works at the bakery", PLACE, subjects=(ALICE_KEY,))
    pending_id = await proposed(familiar, "Alice works at the library", turns[1:])

    queue = await familiar.memory.pending()
    assert (queue.pending, queue.snoozed) == (1, 0)
    (item,) = queue.items
    assert isinstance(item, PendingItem)
    fact = item.fact
    assert fact.id == pending_id
    assert [(s.key, s.name) for s in fact.subjects] == [(ALICE_KEY, "alice")]
    assert fact.speaker is not None
    assert fact.speaker.name == "alice"
    assert fact.scope.name == "Lantern Club #general"
    (source,) = item.sources
    assert (source.author.name, source.place.name, source.content) == (
        "alice",
        "Lantern Club #general",
        "actually I moved to the library last week",
    )
    (related,) = item.related
    assert related.fact.id == known.fact.id
    assert related.relation == "may_supersede"
    assert [(p.op, p.text.strip()) for p in related.diff if p.op != "same"] == [
        ("removed", "bakery"),
        ("added", "library"),
    ]
    quick = await familiar.memory.pending(with_related=False)
    assert quick.items[0].related == ()


async def test_places_and_people_fall_back_to_readable_ids_and_the_local_chat_has_a_name(familiar: Familiar) -> None:
    remembered = await familiar.memory.remember("Bob hums in the library", "guild:900/901", subjects=("discord:42",))
    assert remembered.fact.scope.name == "server 900 #901"
    assert remembered.fact.subjects[0].name == "user 42"
    local = await familiar.memory.remember("The owner likes the lantern dim", "local")
    assert local.fact.scope.name == "Local chat"
    assert local.fact.speaker is not None
    assert local.fact.speaker.name == "You"
    await heard(familiar, message(3, "hello", author=BOB, name="bob"))
    dm = await familiar.memory.remember("Bob's DM secret", f"dm:{BOB}", subjects=(BOB_KEY,))
    assert dm.fact.scope.name == "DM with bob"


# -- decisions, stale revisions and the undo reversals ------------------------------------------------


async def test_each_decision_publishes_a_change_with_its_initiator_and_can_be_undone(familiar: Familiar) -> None:
    turns = await heard(familiar, message(1, "my favourite tea is genmaicha"))
    fact_id = await proposed(familiar, "Alice's favourite tea is genmaicha", turns)
    seen = Seen(familiar)
    pane = object()
    detail = await familiar.memory.fact(fact_id)

    accepted = await familiar.memory.accept(fact_id, detail.fact.revision, initiator=pane)
    assert accepted.status == "active"
    mine = [e for e in seen if e.initiator is pane]
    assert [e.kinds for e in mine] == [frozenset({ChangeKind.FACTS})]
    # what else moved since the last look (the messages heard) is published apart, without the initiator
    assert {k for e in seen if e.initiator is None for k in e.kinds} == {ChangeKind.TURNS, ChangeKind.PLACES}
    reopened = await familiar.memory.reopen(fact_id, accepted.revision, initiator=pane)
    assert reopened.status == "pending"
    rejected = await familiar.memory.reject(fact_id, reopened.revision)
    reopened = await familiar.memory.reopen(fact_id, rejected.revision)
    later = datetime.now(UTC) + timedelta(hours=1)
    snoozed = await familiar.memory.snooze(fact_id, reopened.revision, later)
    assert (await familiar.memory.pending()).snoozed == 1
    back = await familiar.memory.restore_snooze(fact_id, snoozed.revision, None)
    assert [i.fact.id for i in (await familiar.memory.pending()).items] == [fact_id]

    edited = await familiar.memory.edit(fact_id, back.revision, "Alice's favourite tea is sencha")
    assert edited.status == "active"
    reverted = await familiar.memory.revert_edit(edited.id, edited.revision)
    assert (reverted.content, reverted.status) == ("Alice's favourite tea is genmaicha", "pending")
    assert (reverted.id, reverted.created_at) == (fact_id, back.created_at)  # the fact itself, not a copy
    history = await familiar.memory.fact(reverted.id)
    assert history.head_id == fact_id
    assert [(v.id, v.content) for v in history.versions] == [
        (fact_id, "Alice's favourite tea is genmaicha"),
        (edited.id, "Alice's favourite tea is sencha"),
    ]
    statuses = [c.status for c in history.status_history[fact_id]]
    assert statuses == ["pending", "active", "pending", "rejected", "pending"]

    accepted = await familiar.memory.accept(reverted.id, reverted.revision)
    archived = await familiar.memory.archive(accepted.id, accepted.revision)
    restored = await familiar.memory.unarchive(archived.id, archived.revision)
    assert restored.status == "active"
    assert [e.initiator for e in seen].count(pane) == 2


async def test_a_stale_revision_is_a_conflict_carrying_the_fact_as_it_is_now(familiar: Familiar) -> None:
    turns = await heard(familiar, message(1, "I keep bees"))
    fact_id = await proposed(familiar, "Alice keeps bees", turns)
    seen = (await familiar.memory.fact(fact_id)).fact
    edited = await familiar.memory.edit(fact_id, seen.revision, "Alice keeps honeybees")
    with pytest.raises(StaleRevisionError) as conflict:
        await familiar.memory.accept(fact_id, seen.revision)
    assert "changed since you saw it" in str(conflict.value)
    assert conflict.value.fact_id == fact_id
    assert conflict.value.current is not None
    assert conflict.value.current.superseded_by == edited.id
    with pytest.raises(FamiliarError, match="there is no fact 999"):
        await familiar.memory.fact(999)


# -- forgetting --------------------------------------------------------------------------------------


async def test_a_deferred_forget_hides_at_once_undo_restores_and_the_deadline_applies_it(familiar: Familiar) -> None:
    turns = await heard(familiar, message(1, "my locker code is 4242"))
    known = await familiar.memory.remember("Alice's locker is number 12", PLACE, subjects=(ALICE_KEY,))
    secret = await proposed(familiar, "Alice's locker code is 4242", turns)
    await familiar.history.facts_index.flush()
    preview = await familiar.memory.forget_preview(known.fact.id)
    assert dict((s.store, s.count) for s in preview.stores)["facts"] == 1
    assert [p.name for p in preview.subjects] == ["alice"]

    scheduled = await familiar.memory.schedule_forget(known.fact.id, known.fact.revision, delay=60)
    assert await familiar.memory.recall("locker", PLACE) == []
    assert await familiar.memory.list_facts() == []
    undone = await familiar.memory.cancel_forget(scheduled.id)
    assert undone.fact_id == known.fact.id
    assert [r.fact.id for r in await familiar.memory.recall("locker", PLACE)] == [known.fact.id]

    first = await familiar.memory.schedule_forget(known.fact.id, known.fact.revision, delay=60)
    second = await familiar.memory.schedule_forget(secret, (await familiar.memory.fact(secret)).fact.revision, delay=0)
    assert (await familiar.memory.pending()).items == ()
    receipts = await familiar.memory.apply_due_forgets()  # only the second one is due
    assert [r.fact_ids for r in receipts] == [(secret,)]
    assert [s.id for s in await familiar.memory.scheduled_forgets()] == [first.id]
    with pytest.raises(FamiliarError, match="already applied"):
        await familiar.memory.cancel_forget(second.id)
    await familiar.memory.cancel_forget(first.id)

    stones = await familiar.memory.tombstones()
    assert len(stones) == 1
    assert stones[0].label.startswith("alice · Lantern Club #general · forgotten ")
    assert stones[0].receipt_id == receipts[0].id
    assert "4242" not in repr(stones) + repr(receipts)
    assert [r.id for r in await familiar.memory.receipts()] == [receipts[0].id]


def _removed_but_in_files(familiar: Familiar) -> int:
    """Documents removed from the facts index whose words still sit in its files (tantivy keeps a
    deleted document in its segment, marked, until a compaction rewrites the segment)."""
    meta = json.loads((familiar.paths.fts / "facts" / "meta.json").read_text(encoding="utf-8"))
    return sum(int((segment.get("deletes") or {}).get("num_deleted_docs", 0)) for segment in meta["segments"])


async def test_a_forget_purges_the_words_from_the_index_files_before_it_returns(familiar: Familiar) -> None:
    """One operation: no caller (a CLI command about to exit, a window button) has to purge after it."""
    made = await familiar.memory.remember("Alice's locker holds a zeppelin model", PLACE, subjects=(ALICE_KEY,))
    await familiar.memory.remember("Alice keeps a grey cat", PLACE, subjects=(ALICE_KEY,))
    await familiar.history.facts_index.flush()

    receipt = await familiar.memory.forget(made.fact.id)

    assert _removed_but_in_files(familiar) == 0
    assert familiar.history.facts_index.health().awaiting_purge == 0
    assert [r.fact.id for r in await familiar.memory.recall("cat", PLACE)] != []
    assert {name: p.status for name, p in receipt.index_files.items()} == {"facts": "purged"}


async def test_applied_deferred_forgets_purge_the_index_files_too(familiar: Familiar) -> None:
    made = await familiar.memory.remember("Alice's attic hides a harpsichord", PLACE, subjects=(ALICE_KEY,))
    await familiar.memory.remember("Alice keeps a grey cat", PLACE, subjects=(ALICE_KEY,))
    await familiar.history.facts_index.flush()
    await familiar.memory.schedule_forget(made.fact.id, made.fact.revision, delay=0)

    [receipt] = await familiar.memory.apply_due_forgets()

    assert _removed_but_in_files(familiar) == 0
    assert {name: p.status for name, p in receipt.index_files.items()} == {"facts": "purged"}
    assert (await familiar.memory.receipts())[0].index_files == {}  # read back later: not a forget's outcome


async def test_the_forget_timer_applies_a_forget_at_its_deadline(familiar: Familiar) -> None:
    made = await familiar.memory.remember("Alice hides a key under the mat", PLACE, subjects=(ALICE_KEY,))
    seen = Seen(familiar)
    familiar.start_watching()
    await familiar.memory.schedule_forget(made.fact.id, made.fact.revision, delay=0.3)
    await seen.until(lambda e: ChangeKind.TOMBSTONES in e.kinds, "the timer to apply the forget")
    assert (await familiar.history.facts.get(made.fact.id)) is not None
    assert (await familiar.memory.scheduled_forgets()) == []
    assert len(await familiar.memory.tombstones()) == 1


async def test_closing_applies_the_forgets_this_process_scheduled(
    familiar_paths: FamiliarPaths, familiar: Familiar
) -> None:
    made = await familiar.memory.remember("Alice's spare key is in the teapot", PLACE, subjects=(ALICE_KEY,))
    await familiar.memory.schedule_forget(made.fact.id, made.fact.revision, delay=3600)
    await familiar.close()
    again = await Familiar.open(familiar_paths, SecretStore("default", familiar_paths.secrets_file, use_keyring=False))
    try:
        fact = await again.history.facts.get(made.fact.id)
        assert fact is not None
        assert (fact.status, fact.content) == ("forgotten", "")
        assert await again.memory.scheduled_forgets() == []
    finally:
        await again.close()


@pytest.mark.slow
async def test_a_forget_scheduled_by_a_process_that_crashed_is_applied_at_the_next_open(
    familiar_paths: FamiliarPaths, familiar: Familiar
) -> None:
    made = await familiar.memory.remember("Alice's diary is behind the clock", PLACE, subjects=(ALICE_KEY,))
    await familiar.close()
    script = textwrap.dedent(
        f"""
        import asyncio, os
        from pathlib import Path
        from app.config.paths import FamiliarPaths
        from app.config.secrets import SecretStore
        from app.runtime.service import Familiar

        async def main():
            paths = FamiliarPaths(root=Path({str(familiar_paths.root)!r}), name="default")
            familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False))
            # Its undo window ends at once, so the next open finds it due (as any would be after a crash).
            await familiar.memory.schedule_forget({made.fact.id}, {made.fact.revision}, delay=0)
            print("scheduled", flush=True)
            os._exit(9)  # a crash: no close, no apply

        asyncio.run(main())
        """
    )
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 9, done.stderr
    assert "scheduled" in done.stdout
    with sqlite3.connect(familiar_paths.history_db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM scheduled_forgets").fetchone() == (1,)
        assert conn.execute("SELECT status FROM facts WHERE id = ?", (made.fact.id,)).fetchone() == ("active",)
    again = await Familiar.open(familiar_paths, SecretStore("default", familiar_paths.secrets_file, use_keyring=False))
    try:
        fact = await again.history.facts.get(made.fact.id)
        assert fact is not None
        assert fact.status == "forgotten"
        assert await again.memory.scheduled_forgets() == []
        assert len(await again.memory.receipts()) == 1
    finally:
        await again.close()


# -- controls ----------------------------------------------------------------------------------------


async def test_pause_state_names_every_place_and_shows_what_it_inherits(familiar: Familiar) -> None:
    home = f"guild:{GUILD_ID}/{HOME}"
    await heard(familiar, message(1, "hello"))
    await familiar.conversation.on_message(replace(message(2, "hi"), place=home, channel_id=HOME, channel_name="home"))
    seen = Seen(familiar)
    state = await familiar.controls.pause("learning", f"guild:{GUILD_ID}", initiator="pane")
    assert [e.kinds for e in seen if e.initiator == "pane"] == [frozenset({ChangeKind.PAUSE})]
    by_key = {p.place.key: p for p in state.places}
    assert by_key[f"guild:{GUILD_ID}"].place.name == "Lantern Club"
    assert by_key[f"guild:{GUILD_ID}"].learning.source == "here"
    assert by_key[PLACE].place.name == "Lantern Club #general"
    assert (by_key[PLACE].learning.paused, by_key[PLACE].learning.source) == (True, "server")
    assert by_key[PLACE].recall.paused is False
    assert [p.place.key for p in state.places] == [f"guild:{GUILD_ID}", PLACE, home]
    assert state.anything_paused

    state = await familiar.controls.pause("recall")
    assert {p.recall.source for p in state.places} == {"everywhere"}
    state = await familiar.controls.resume("learning", f"guild:{GUILD_ID}")
    assert not any(p.learning.paused for p in state.places)
    workers = await familiar.controls.workers()
    assert workers.pause.recall == ("*",)
    with pytest.raises(FamiliarError, match="not a place"):
        await familiar.controls.pause("learning", "the-moon")


# -- the change broadcast -----------------------------------------------------------------------------


async def test_a_foreign_write_is_published_within_a_second(familiar: Familiar) -> None:
    seen = Seen(familiar)
    familiar.start_watching()
    with sqlite3.connect(familiar.history.store.path, timeout=5) as other:  # another process's connection
        other.execute(
            "INSERT INTO memory_pause (kind, place, since) VALUES ('learning', '*', '2025-01-01T00:00:00+00:00')"
        )
    written = asyncio.get_running_loop().time()
    await seen.until(lambda e: ChangeKind.PAUSE in e.kinds, "the foreign pause to be published", 2.0)
    assert asyncio.get_running_loop().time() - written < 1.5
    assert all(e.initiator is None for e in seen)


async def test_a_worker_tick_that_wrote_publishes_what_changed(familiar: Familiar) -> None:
    seen = Seen(familiar)
    await familiar.learn_now()
    seen.clear()
    await familiar.history.insert_fact(NewFact("Alice rows at dawn", "episodic", 5, 0.9, (ALICE_KEY,), PLACE))
    await familiar.learn_now()
    assert len(seen) == 1  # one event for the whole tick
    assert ChangeKind.FACTS in seen[0].kinds
    assert seen[0].initiator is None


async def test_server_names_from_the_guild_list_are_kept_for_views_and_other_processes(
    familiar_paths: FamiliarPaths, familiar: Familiar
) -> None:
    seen = Seen(familiar)
    familiar.start_watching()
    await familiar.start()  # the adapter lists the guilds it is in
    await seen.until(lambda e: ChangeKind.PLACES in e.kinds, "the server's name to be stored")
    await familiar.stop()
    # Another process, offline, names the server too.
    other = await Familiar.open(familiar_paths, SecretStore("default", familiar_paths.secrets_file, use_keyring=False))
    try:
        made = await other.memory.remember("The club meets on Fridays", f"guild:{GUILD_ID}")
        assert made.fact.scope.name == "Lantern Club"
    finally:
        await other.close()


async def test_a_bad_input_is_a_one_line_error_and_a_bug_goes_up_as_it_is(
    familiar: Familiar, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20 item 6: the memory API turned any ValueError into a FamiliarError, so a bug read as a message
    for the owner (and the window showed it in a banner, with no traceback in the log). A value the store
    cannot take (BadInputError) is still one line; anything else goes up as the bug it is."""
    with pytest.raises(FamiliarError, match="'familiar' is not a place"):
        await familiar.memory.recall("bees", "familiar")

    def broken(*_args: object, **_kwargs: object) -> object:
        raise ValueError("an index out of range somewhere deep")

    monkeypatch.setattr(Retriever, "facts", broken)
    with pytest.raises(ValueError, match="out of range") as raised:
        await familiar.memory.recall("bees", PLACE)
    assert not isinstance(raised.value, FamiliarError)


async def test_a_file_the_owner_edits_changing_on_disk_is_in_the_change_broadcast(
    familiar: Familiar, familiar_paths: FamiliarPaths
) -> None:
    """Issue 20 item 7: the lorebook and character panes each read their files again on a timer of their
    own (every 1.5 to 2 s) to notice an edit made beside them. The change broadcast says it, by kind: an
    edit of lorebook.toml, of character.toml or of character.md, by another program, within its poll."""
    seen = Seen(familiar)
    familiar.changes.start()
    await familiar.changes.check()  # the files as they are now: nothing to say yet
    assert not [e for e in seen if e.kinds & {ChangeKind.LOREBOOK_FILE, ChangeKind.CHARACTER_FILES}]
    familiar_paths.lorebook_toml.write_text('[[entries]]\ntitle = "Owl"\nkeys = ["owl"]\n', encoding="utf-8")
    await seen.until(lambda e: ChangeKind.LOREBOOK_FILE in e.kinds, "lorebook.toml's change")
    assert not [e for e in seen if ChangeKind.CHARACTER_FILES in e.kinds]
    seen.clear()
    familiar_paths.character_md.write_text("You are an owl.\n", encoding="utf-8")
    await seen.until(lambda e: ChangeKind.CHARACTER_FILES in e.kinds, "character.md's change")
    assert not [e for e in seen if ChangeKind.LOREBOOK_FILE in e.kinds]
    seen.clear()
    familiar_paths.character_toml.unlink()  # gone is a change too
    await seen.until(lambda e: ChangeKind.CHARACTER_FILES in e.kinds, "character.toml going")
