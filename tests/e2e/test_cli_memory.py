"""The memory commands of `familiar` (DESIGN.md "Contracts"), run through the real CLI entry point."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.memory.catalog import Catalog
from app.memory.facts import NewFact
from app.memory.fts import FACTS, TURNS, FtsIndex
from app.memory.records import NewTurn
from app.runtime.service import Familiar
from tests.e2e.cli import Cli

_T = TypeVar("_T")

WHERE = "guild:500/501"


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(tmp_path / "home", capsys, monkeypatch)


def test_remember_list_show_edit_and_the_timeline(cli: Cli) -> None:
    made = cli.json(
        "facts", "remember", "Alice lives in Lisbon", "--where", WHERE, "--subject", "discord:7001",
        "--valid-from", "2020-01-01T00:00:00+00:00", "--valid-to", "2023-01-01T00:00:00+00:00",
    )  # fmt: skip
    fact = made["fact"]
    assert made["outcome"] == "inserted"
    assert fact["status"] == "active"
    assert fact["scope"] == WHERE  # a channel place keeps channel scope for the owner's own facts
    assert cli.json("facts", "list")["facts"] == []  # not valid any more in the world: not current truth
    past = cli.json("facts", "list", "--world-at", "2021-06-01T00:00:00+00:00")["facts"]
    assert [f["content"] for f in past] == ["Alice lives in Lisbon"]

    now = cli.json("facts", "remember", "Alice likes green tea", "--where", WHERE, "--subject", "discord:7001")
    first = now["fact"]
    edited = cli.json(
        "facts", "edit", str(first["id"]), "--revision", str(first["revision"]), "--text", "Alice likes mint tea"
    )
    assert edited["fact"]["content"] == "Alice likes mint tea"
    shown = cli.json("facts", "show", str(first["id"]))
    assert shown["head_id"] == edited["fact"]["id"]
    assert [f["content"] for f in shown["chain"]] == ["Alice likes green tea", "Alice likes mint tea"]
    # The old version is retired from current truth but is still in the slice recorded before the edit.
    current = [f["content"] for f in cli.json("facts", "list", "--subject", "discord:7001")["facts"]]
    assert current == ["Alice likes mint tea"]
    before_edit = cli.json("facts", "list", "--recorded-at", first["created_at"], "--world-at", first["created_at"])
    assert [f["content"] for f in before_edit["facts"]] == ["Alice likes green tea"]


def test_stale_revisions_and_bad_input_are_refused_with_one_line(cli: Cli) -> None:
    made = cli.json("facts", "remember", "The lantern is blue", "--where", WHERE)["fact"]
    code, _out, err = cli.run("facts", "edit", str(made["id"]), "--revision", "7", "--text", "The lantern is red")
    assert code == 1
    assert err.startswith("error: fact")
    assert "changed since you saw it" in err
    assert err.count("\n") == 1
    code, _out, err = cli.run("facts", "remember", "x", "--where", "nowhere")
    assert code == 1
    assert "place" in err
    code, _out, err = cli.run("facts", "remember", "   ", "--where", WHERE)
    assert code == 1
    assert "content" in err
    code, _out, err = cli.run("facts", "remember", "y", "--where", WHERE, "--subject", "Alice")
    assert code == 1
    assert "canonical key" in err
    code, _out, err = cli.run("facts", "show", "999")
    assert code == 1
    assert "no fact 999" in err
    assert [f["content"] for f in cli.json("facts", "list")["facts"]] == ["The lantern is blue"]


def test_forget_prints_a_receipt_and_tombstones_block_relearning(cli: Cli) -> None:
    made = cli.json("facts", "remember", "Bob's password is hunter2", "--where", "dm:7002", "--subject", "discord:7002")
    fact_id = made["fact"]["id"]
    receipt = cli.json("forget", str(fact_id))
    assert receipt["fact_ids"] == [fact_id]
    stores = {entry["store"] for entry in receipt["erased_from"]}
    assert {"facts", "fts/facts", "fact_embeddings"} <= stores
    # The one-shot command wrote the index itself: the words left its files before it exited.
    assert receipt["index_files"] == {"facts": "purged"}
    index = FtsIndex(cli.home / "familiars" / "default" / "fts" / FACTS.name, FACTS)
    index.open(writable=False)
    try:
        assert index.doc_freq("content", "hunter2") == 0
    finally:
        index.close()
    assert cli.json("recall", "password", "--where", "dm:7002")["facts"] == []
    code, _out, err = cli.run(
        "facts", "remember", "Bob's password is hunter2", "--where", "dm:7002", "--subject", "discord:7002"
    )
    assert code == 1
    assert "tombstone" in err
    stones = cli.json("tombstones", "list")["tombstones"]
    assert len(stones) == 1
    assert "hunter2" not in json.dumps(stones)
    cli.json("tombstones", "lift", str(stones[0]["id"]))
    assert (
        cli.json("facts", "remember", "Bob's password is hunter2", "--where", "dm:7002", "--subject", "discord:7002")[
            "outcome"
        ]
        == "inserted"
    )


def test_recall_respects_scope(cli: Cli) -> None:
    cli.json("facts", "remember", "The guild's dragon is named Ember", "--where", "guild:500")
    cli.json("facts", "remember", "Carol's dragon is a secret", "--where", "dm:7003")
    assert [f["content"] for f in cli.json("recall", "dragon", "--where", "guild:500/501")["facts"]] == [
        "The guild's dragon is named Ember"
    ]
    assert [f["content"] for f in cli.json("recall", "dragon", "--where", "dm:7003")["facts"]] == [
        "Carol's dragon is a secret"
    ]
    assert cli.json("recall", "dragon", "--where", "guild:600")["facts"] == []
    assert cli.json("recall", "dragon", "--where", "dm:7004")["facts"] == []


def test_recall_honours_a_recall_pause_the_way_replies_do(cli: Cli) -> None:
    """Paused there (the place, its server, everywhere): recall says so and returns nothing, in JSON
    too; other places and learning switches are not affected."""
    cli.json("facts", "remember", "The guild's dragon is named Ember", "--where", "guild:500")
    assert len(cli.json("recall", "dragon", "--where", WHERE)["facts"]) == 1

    cli.json("pause", "recall", "--where", "guild:500")
    paused = cli.json("recall", "dragon", "--where", WHERE)
    assert paused["facts"] == []
    assert (paused["recall_paused"], paused["paused_by"]) == (True, "server")
    code, out, _err = cli.run("recall", "dragon", "--where", WHERE)
    assert code == 0
    assert "recall is paused in server 500 #501 by its server's switch (server 500)" in out  # never seen: by id
    assert "(familiar resume recall --where guild:500)" in out
    assert "Ember" not in out
    assert cli.json("recall", "dragon", "--where", "guild:500")["paused_by"] == "here"
    cli.json("resume", "recall", "--where", "guild:500")

    cli.json("pause", "recall", "--where", WHERE)
    assert cli.json("recall", "dragon", "--where", WHERE)["facts"] == []
    assert len(cli.json("recall", "dragon", "--where", "guild:500/502")["facts"]) == 1  # a sibling channel
    cli.json("resume", "recall", "--where", WHERE)

    cli.json("pause", "recall")
    everywhere = cli.json("recall", "dragon", "--where", WHERE)
    assert (everywhere["facts"], everywhere["paused_by"]) == ([], "everywhere")
    assert "recall is paused everywhere" in cli.run("recall", "dragon", "--where", WHERE)[1]
    cli.json("resume", "recall")

    cli.json("pause", "learning")  # learning is another switch: recall goes on
    resumed = cli.json("recall", "dragon", "--where", WHERE)
    assert (len(resumed["facts"]), resumed["recall_paused"], resumed["paused_by"]) == (1, False, None)
    code, _out, err = cli.run("recall", "dragon", "--where", "the-moon")  # a bad place is still an error
    assert code == 1
    assert "the-moon" in err


def test_places_read_by_name_and_the_json_keeps_their_keys(cli: Cli, tmp_path: Path) -> None:
    """Issue 18 item 15: the readable lines name places as the window does ("Lantern Club #general",
    "DM with bob"), where they printed guild:500/501; the JSON keeps the keys and adds the names beside them."""

    async def seen(familiar: Familiar) -> tuple[int, int]:
        await Catalog(familiar.history.store).name_places({"guild:500": "Lantern Club", WHERE: "general"})
        said = [
            (WHERE, "discord:7001", "alice", "the lantern is lit", 500),
            ("dm:7002", "discord:7002", "bob", "my lantern is blue", None),
        ]
        ids = []
        for n, (place, author, name, content, guild) in enumerate(said):
            turn = await familiar.history.append_turn(
                NewTurn(
                    platform="discord", place=place, guild_id=guild, channel_id=501 + n, message_id=9400 + n,
                    author_key=author, author_name=name, content=content, created_at=datetime.now(UTC),
                )
            )  # fmt: skip
            assert turn is not None
            ids.append(turn.id)
        outcome = await familiar.history.insert_fact(
            NewFact(
                "Bob's lantern is blue", "semantic", 6, 0.9, ("discord:7002",), "dm:7002", source_turn_ids=(ids[1],)
            )
        )
        assert outcome.fact is not None
        await familiar.history.catch_up()
        return outcome.fact.id, ids[1]

    bobs, bobs_turn = _in_familiar(tmp_path / "home", seen)
    made = cli.json("facts", "remember", "The lantern hangs by the door", "--where", WHERE)["fact"]

    code, out, _err = cli.run("facts", "list", "--status", "all")
    assert code == 0
    assert f"#{made['id']} r0 active   semantic   Lantern Club #general: The lantern hangs by the door" in out
    assert f"#{bobs} r0 pending  semantic   DM with bob: Bob's lantern is blue" in out
    assert "guild:" not in out
    assert "dm:" not in out
    listed = {f["id"]: (f["scope"], f["scope_name"]) for f in cli.json("facts", "list", "--status", "all")["facts"]}
    assert listed == {made["id"]: (WHERE, "Lantern Club #general"), bobs: ("dm:7002", "DM with bob")}

    code, out, _err = cli.run("facts", "show", str(bobs))
    assert f"  source #{bobs_turn} DM with bob, bob: my lantern is blue" in out
    (source,) = cli.json("facts", "show", str(bobs))["sources"]
    assert (source["where"], source["where_name"]) == ("dm:7002", "DM with bob")

    code, out, _err = cli.run("turns", "search", "lantern")
    assert code == 0
    assert " Lantern Club #general, alice: the lantern is lit" in out
    assert " DM with bob, bob: my lantern is blue" in out
    assert "guild:" not in out
    hits = cli.json("turns", "search", "lantern")["hits"]
    assert sorted((h["where"], h["where_name"]) for h in hits) == [
        ("dm:7002", "DM with bob"),
        (WHERE, "Lantern Club #general"),
    ]

    code, out, _err = cli.run("pause", "learning", "--where", WHERE)
    assert out == (
        "learning paused in Lantern Club #general. Paused now: learning Lantern Club #general; recall nowhere\n"
    )
    code, out, _err = cli.run("pause", "recall", "--where", "guild:500")
    assert "Paused now: learning Lantern Club #general; recall Lantern Club" in out
    assert cli.json("memory", "status")["paused"] == {"learning": [WHERE], "recall": ["guild:500"]}
    code, out, _err = cli.run("memory", "status")
    assert "learning paused: Lantern Club #general; recall paused: Lantern Club" in out
    code, out, _err = cli.run("recall", "lantern", "--where", WHERE)
    assert out == (
        "recall is paused in Lantern Club #general by its server's switch (Lantern Club): nothing is recalled"
        " there (familiar resume recall --where guild:500)\n"
    )
    code, out, _err = cli.run("resume", "recall")  # the key a command needs stays in the command only
    assert out == "recall resumed everywhere. Paused now: learning Lantern Club #general; recall Lantern Club\n"


def test_export_then_import_reproduces_the_as_of_answers(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli.json(
        "facts", "remember", "Alice lives in Lisbon", "--where", WHERE, "--subject", "discord:7001",
        "--valid-from", "2020-01-01T00:00:00+00:00", "--valid-to", "2023-01-01T00:00:00+00:00",
    )  # fmt: skip
    tea = cli.json("facts", "remember", "Alice likes green tea", "--where", WHERE)["fact"]
    cli.json("facts", "edit", str(tea["id"]), "--revision", str(tea["revision"]), "--text", "Alice likes mint tea")
    secret = cli.json("facts", "remember", "Alice's locker code is 1234", "--where", WHERE)["fact"]
    cli.json("forget", str(secret["id"]))
    probes = [
        ("--world-at", "2021-06-01T00:00:00+00:00"),
        ("--recorded-at", tea["created_at"], "--world-at", tea["created_at"]),
        (),
    ]
    before = [cli.json("facts", "list", "--status", "all", *probe)["facts"] for probe in probes]
    export = tmp_path / "memory.jsonl"
    written = cli.json("export", str(export), "--with-tombstone-key")["records"]
    assert written["fact"] == 4
    assert "1234" not in export.read_text(encoding="utf-8")  # a forgotten fact leaves no text behind

    monkeypatch.setenv("FAMILIAR_HOME", str(tmp_path / "other"))
    cli.json("new", "default")  # an import goes into an empty familiar, made first
    imported = cli.json("import", str(export))["records"]
    assert imported["fact"] == 4
    after = [cli.json("facts", "list", "--status", "all", *probe)["facts"] for probe in probes]
    assert after == before
    code, _out, err = cli.run("facts", "remember", "Alice's locker code is 1234", "--where", WHERE)
    assert code == 1  # the tombstone came along, without the text
    assert "tombstone" in err
    code, _out, err = cli.run("import", str(export))
    assert code == 1
    assert "empty familiar" in err


def _exported_with_a_tombstone(cli: Cli, export: Path, *extra: str) -> dict[str, Any]:
    secret = cli.json("facts", "remember", "Alice's locker code is 1234", "--where", WHERE)["fact"]
    cli.json("forget", str(secret["id"]))
    return cli.json("export", str(export), *extra)


def _relearn(cli: Cli) -> tuple[int, str]:
    code, _out, err = cli.run("facts", "remember", "Alice's locker code is 1234", "--where", WHERE)
    return code, err


def _secrets(home: Path) -> dict[str, Any]:
    import tomllib

    return tomllib.loads((home / "secrets.toml").read_text(encoding="utf-8"))


def test_an_export_leaves_the_tombstone_key_behind_unless_asked(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default the key stays home: on another machine the tombstones come along but cannot block
    (and say so); a new familiar on the same machine finds the key there and they block."""
    export = tmp_path / "memory.jsonl"
    written = _exported_with_a_tombstone(cli, export)
    assert written["tombstone_key"] == "not included"
    key = _secrets(cli.home)["default"]["tombstone_key"]
    records = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert "tombstone_key" not in {r["kind"] for r in records}
    assert key not in export.read_text(encoding="utf-8")
    assert [r["key_id"] for r in records if r["kind"] == "tombstone"] != [None]  # it names the key, not more
    code, out, _err = cli.run("export", str(export))
    assert "the tombstone key is not in the file" in out

    # Another machine (another data folder, another keyring): kept, listed, but it cannot block.
    monkeypatch.setenv("FAMILIAR_HOME", str(tmp_path / "elsewhere"))
    cli.json("new", "default")
    imported = cli.json("import", str(export))
    assert imported["tombstones_that_cannot_block"] == 1
    stones = cli.json("tombstones", "list")["tombstones"]
    assert [t["can_block"] for t in stones] == [False]
    assert "cannot block" in cli.run("tombstones", "list")[1]
    assert _relearn(cli)[0] == 0  # honest: without the key nothing can recognise the forgotten text

    # The same machine, a new familiar: the key is found with the familiar it came from.
    monkeypatch.setenv("FAMILIAR_HOME", str(cli.home))
    cli.json("new", "copy")
    imported = cli.json("--familiar", "copy", "import", str(export))
    assert imported["tombstones_that_cannot_block"] == 0
    code, _out, err = cli.run(
        "--familiar", "copy", "facts", "remember", "Alice's locker code is 1234", "--where", WHERE
    )
    assert code == 1
    assert "tombstone" in err
    assert _secrets(cli.home)["copy"]["tombstone_key"] == key


def test_an_export_with_the_tombstone_key_blocks_anywhere_and_the_key_stays_out_of_the_database(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = tmp_path / "memory.jsonl"
    written = _exported_with_a_tombstone(cli, export, "--with-tombstone-key")
    assert written["tombstone_key"] == "included"
    key = _secrets(cli.home)["default"]["tombstone_key"]
    assert {"kind": "tombstone_key", "value": key} in [json.loads(x) for x in export.read_text().splitlines()]
    assert "test guesses of forgotten texts" in cli.run("export", str(export), "--with-tombstone-key")[1]

    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("FAMILIAR_HOME", str(elsewhere))
    cli.json("new", "default")
    cli.json("facts", "list")  # its first open gives it a key of its own
    # A damaged file refused whole leaves the familiar's own key as it was.
    own = _secrets(elsewhere)["default"]["tombstone_key"]
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(export.read_text(encoding="utf-8") + '{"kind": "fact", "id": 1}\n', encoding="utf-8")
    assert cli.run("import", str(damaged))[0] == 1
    assert _secrets(elsewhere)["default"]["tombstone_key"] == own

    assert cli.json("import", str(export))["tombstones_that_cannot_block"] == 0
    code, err = _relearn(cli)
    assert code == 1
    assert "tombstone" in err
    assert _secrets(elsewhere)["default"]["tombstone_key"] == key  # adopted, in the secrets store
    db = elsewhere / "familiars" / "default" / "history.db"
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT key FROM store_meta WHERE key = 'tombstone_key'").fetchall() == []
    assert bytes.fromhex(key) not in db.read_bytes()


def test_import_of_a_damaged_file_changes_nothing(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "header", "format": "familiar-memory", "version": 1}\n{"kind": "fact", "id": 1}\n')
    code, _out, err = cli.run("import", str(bad))
    assert code == 1
    assert "line 2" in err
    assert "nothing was imported" in err
    assert cli.json("facts", "list", "--status", "all")["facts"] == []


def test_index_status_and_rebuild_cover_both_indexes(cli: Cli) -> None:
    cli.json("facts", "remember", "The owl is awake", "--where", WHERE)
    status = cli.json("index", "status")
    assert sorted(h["name"] for h in status["indexes"]) == ["facts", "turns"]
    rebuilt = _json_lines(cli, "index", "rebuild")[-1]["rebuilt"]  # progress lines come first
    assert rebuilt == {"turns": 0, "facts": 1}
    assert [f["content"] for f in cli.json("recall", "owl", "--where", WHERE)["facts"]] == ["The owl is awake"]


def test_a_pending_item_shows_its_sources_and_what_it_may_supersede(cli: Cli, tmp_path: Path) -> None:
    """The pending queue from the CLI: a proposed fact (as extraction would insert it) with the
    current fact of the same subject beside it, accepted with the revision that was seen."""
    import asyncio

    from app.config.paths import FamiliarPaths
    from app.config.secrets import SecretStore
    from app.memory.facts import NewFact
    from app.runtime.service import Familiar

    cli.json("facts", "remember", "Alice works at the bakery", "--where", WHERE, "--subject", "discord:7001")

    async def propose() -> int:
        paths = FamiliarPaths(root=tmp_path / "home", name="default")
        familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False))
        try:
            outcome = await familiar.history.insert_fact(
                NewFact(
                    "Alice works at the library now", "semantic", 6, 0.9, ("discord:7001",), WHERE, channel_scoped=True
                )
            )
            assert outcome.fact is not None
            return outcome.fact.id
        finally:
            await familiar.close()

    pending_id = asyncio.run(propose())
    queue = cli.json("facts", "list", "--status", "pending")["facts"]
    assert [f["id"] for f in queue] == [pending_id]
    shown = cli.json("facts", "show", str(pending_id))
    assert [f["content"] for f in shown["may_duplicate_or_supersede"]] == ["Alice works at the bakery"]
    accepted = cli.json("facts", "accept", str(pending_id), "--revision", str(shown["revision"]))
    assert accepted["fact"]["status"] == "active"
    code, _out, err = cli.run("facts", "accept", str(pending_id), "--revision", str(shown["revision"]))
    assert code == 1
    assert "changed since you saw it" in err


def test_pause_and_resume_from_the_terminal_last_across_runs(cli: Cli) -> None:
    state = cli.json("pause", "learning", "--where", WHERE)
    assert state == {"learning": [WHERE], "recall": []}
    assert cli.json("pause", "recall")["recall"] == ["*"]  # everywhere by default
    status = cli.json("memory", "status")  # a new process: the switches were kept
    assert status["paused"] == {"learning": [WHERE], "recall": ["*"]}
    assert status["projectors"] == ["rolling_summary", "rich_note", "people_dossier", "reflection", "fact_supersede"]
    assert status["failed_work"] == []
    assert cli.json("resume", "learning", "--where", WHERE)["learning"] == []
    code, out, _err = cli.run("resume", "recall")
    assert code == 0
    assert "recall resumed everywhere" in out
    code, _out, err = cli.run("pause", "learning", "--where", "the-moon")
    assert code == 1
    assert "'the-moon' is not a place" in err
    with pytest.raises(SystemExit) as stopped:  # argparse: neither learning nor recall
        cli.run("pause", "gossip")
    assert stopped.value.code == 2


# -- the pending queue, archive, sources in lists, rebuild progress, index backlog ----------------------


def _json_lines(cli: Cli, *argv: str) -> list[Any]:
    code, out, err = cli.run(*argv, "--json")
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def _in_familiar(home: Path, work: Callable[[Familiar], Awaitable[_T]]) -> _T:
    """Run `work` against the familiar in this process (as the window or a memory worker would)."""

    async def run() -> _T:
        paths = FamiliarPaths(root=home, name="default")
        familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False))
        try:
            return await work(familiar)
        finally:
            await familiar.close()

    return asyncio.run(run())


def _propose(home: Path, *contents: str) -> list[tuple[int, int]]:
    """Pending facts as extraction proposes them, each from a message of its own: (fact id, turn id)."""

    async def work(familiar: Familiar) -> list[tuple[int, int]]:
        made: list[tuple[int, int]] = []
        for content in contents:
            turn = await familiar.history.append_turn(
                NewTurn(
                    platform="discord", place=WHERE, guild_id=500, channel_id=501, message_id=9000 + len(made),
                    author_key="discord:7001", author_name="Alice", content=content, created_at=datetime.now(UTC),
                )
            )  # fmt: skip
            assert turn is not None
            outcome = await familiar.history.insert_fact(
                NewFact(content, "semantic", 6, 0.9, ("discord:7001",), WHERE, source_turn_ids=(turn.id,))
            )
            assert outcome.fact is not None
            assert outcome.fact.status == "pending"
            made.append((outcome.fact.id, turn.id))
        return made

    return _in_familiar(home, work)


def test_a_snoozed_fact_leaves_the_pending_queue_until_its_snooze_ends(cli: Cli, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (a, _), (b, _), (c, _) = _propose(home, "Alice owns a cat", "Alice prefers tea", "Alice plays chess")
    queue = cli.json("facts", "list", "--status", "pending")
    assert [f["id"] for f in queue["facts"]] == [a, b, c]  # the queue: oldest first
    assert queue["snoozed_hidden"] == 0

    until = "2999-01-01T00:00:00+00:00"
    snoozed = cli.json("facts", "snooze", str(b), "--revision", "0", "--until", until)["fact"]
    assert (snoozed["snoozed_until"], snoozed["snoozed"]) == (until, True)
    queue = cli.json("facts", "list", "--status", "pending")
    assert [f["id"] for f in queue["facts"]] == [a, c]
    assert queue["snoozed_hidden"] == 1
    first = cli.json("facts", "list", "--status", "pending", "--limit", "1")  # a page shorter than the queue
    assert ([f["id"] for f in first["facts"]], first["snoozed_hidden"]) == ([a], 1)
    alices = cli.json("facts", "list", "--status", "pending", "--subject", "discord:7001")["facts"]
    assert [f["id"] for f in alices] == [a, c]
    code, out, _err = cli.run("facts", "list", "--status", "pending")
    assert code == 0
    assert "Alice prefers tea" not in out
    assert "1 snoozed, not shown" in out

    everything = cli.json("facts", "list", "--status", "pending", "--include-snoozed")
    assert [f["id"] for f in everything["facts"]] == [a, b, c]
    assert [(f["snoozed_until"], f["snoozed"]) for f in everything["facts"]] == [
        (None, False),
        (until, True),
        (None, False),
    ]
    code, out, _err = cli.run("facts", "list", "--status", "pending", "--include-snoozed")
    assert f"Alice prefers tea (snoozed until {until})" in out
    shown = cli.json("facts", "show", str(b))
    assert (shown["fact"]["snoozed_until"], shown["fact"]["snoozed"], shown["revision"]) == (until, True, 1)

    # A snooze that has ended puts the fact back in the queue, in its place.
    async def snooze_in_the_past(familiar: Familiar) -> None:
        start = datetime(2020, 1, 1, tzinfo=UTC)
        await familiar.history.decisions.decide(c, 0, "snooze", until=start + timedelta(days=1), now=start)

    _in_familiar(home, snooze_in_the_past)
    queue = cli.json("facts", "list", "--status", "pending")
    assert [(f["id"], f["snoozed"]) for f in queue["facts"]] == [(a, False), (c, False)]
    assert queue["facts"][1]["snoozed_until"] == "2020-01-02T00:00:00+00:00"

    # Accepting a snoozed fact (with the revision seen) takes it out of the queue for good.
    accepted = cli.json("facts", "accept", str(b), "--revision", "1")["fact"]
    assert (accepted["status"], accepted["snoozed_until"], accepted["snoozed"]) == ("active", None, False)
    assert cli.json("facts", "list", "--status", "pending", "--include-snoozed")["snoozed_hidden"] == 0

    code, out, err = cli.run("facts", "list", "--include-snoozed", "--json")
    assert (code, out) == (1, "")
    assert err == "error: --include-snoozed goes with --status pending\n"


def test_archive_takes_an_active_fact_out_of_current_truth_with_the_revision_seen(cli: Cli) -> None:
    made = cli.json("facts", "remember", "The mill is closed on Sundays", "--where", WHERE)["fact"]
    fact_id = str(made["id"])

    code, out, err = cli.run("facts", "archive", fact_id, "--revision", "5", "--json")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert "changed since you saw it (revision 5, now 0)" in err
    assert [f["status"] for f in cli.json("facts", "list")["facts"]] == ["active"]  # nothing changed

    archived = cli.json("facts", "archive", fact_id, "--revision", "0")["fact"]
    assert (archived["status"], archived["revision"]) == ("archived", 1)
    assert cli.json("facts", "list")["facts"] == []
    assert [f["id"] for f in cli.json("facts", "list", "--status", "archived")["facts"]] == [made["id"]]
    before = cli.json("facts", "list", "--recorded-at", made["created_at"], "--world-at", made["created_at"])
    assert [f["id"] for f in before["facts"]] == [made["id"]]  # the history slices keep it

    code, _out, err = cli.run("facts", "archive", fact_id, "--revision", "0")
    assert code == 1
    assert "changed since you saw it" in err
    code, _out, err = cli.run("facts", "archive", fact_id, "--revision", "1")
    assert (code, err) == (1, f"error: fact {fact_id} is archived, not active\n")
    code, out, err = cli.run("facts", "archive", "999", "--revision", "0", "--json")
    assert (code, out, err) == (1, "", "error: there is no fact 999\n")
    code, out, _err = cli.run("facts", "list", "--status", "archived")
    assert code == 0
    assert f"#{fact_id} r1 archived" in out


def test_archive_refuses_a_pending_fact(cli: Cli, tmp_path: Path) -> None:
    ((pending_id, _turn),) = _propose(tmp_path / "home", "Alice keeps bees")
    code, _out, err = cli.run("facts", "archive", str(pending_id), "--revision", "0")
    assert (code, err) == (1, f"error: fact {pending_id} is pending, not active\n")
    assert [f["status"] for f in cli.json("facts", "show", str(pending_id))["chain"]] == ["pending"]


def test_fact_lists_carry_the_messages_each_fact_came_from(cli: Cli, tmp_path: Path) -> None:
    ((fact_id, turn_id),) = _propose(tmp_path / "home", "Alice rides a red bicycle")
    assert [f["source_turn_ids"] for f in cli.json("facts", "list", "--status", "pending")["facts"]] == [[turn_id]]
    shown = cli.json("facts", "show", str(fact_id))
    assert [s["turn_id"] for s in shown["sources"]] == [turn_id]
    cli.json("facts", "accept", str(fact_id), "--revision", "0")
    cli.json("facts", "remember", "The bakery opens at six", "--where", WHERE)
    for probe in ((), ("--status", "all"), ("--world-at", "2999-01-01T00:00:00+00:00")):
        listed = {f["content"]: f["source_turn_ids"] for f in cli.json("facts", "list", *probe)["facts"]}
        assert listed == {"Alice rides a red bicycle": [turn_id], "The bakery opens at six": []}


def test_index_rebuild_reports_progress_as_json_lines_then_the_result(cli: Cli, tmp_path: Path) -> None:
    # An empty familiar: every index still ends with a progress line.
    events = _json_lines(cli, "index", "rebuild")
    assert events == [
        {"event": "start", "index": "turns", "done": 0, "total": 0, "percent": 100.0},
        {"event": "progress", "index": "turns", "done": 0, "total": 0, "percent": 100.0},
        {"event": "start", "index": "facts", "done": 0, "total": 0, "percent": 100.0},
        {"event": "progress", "index": "facts", "done": 0, "total": 0, "percent": 100.0},
        {"event": "result", "rebuilt": {"turns": 0, "facts": 0}},
    ]
    code, out, err = cli.run("index", "rebuild")
    assert code == 0
    assert "rebuilding turns index: 0 documents\nturns index: 0/0 documents (100%)\n" in err
    assert out == "turns index rebuilt: 0 documents, facts index rebuilt: 0 documents\n"

    _propose(tmp_path / "home", "Alice owns a cat", "Alice prefers tea")
    cli.json("facts", "remember", "The mill is closed on Sundays", "--where", WHERE)
    events = _json_lines(cli, "index", "rebuild")
    assert events[-1] == {"event": "result", "rebuilt": {"turns": 2, "facts": 3}}
    for name, count in (("turns", 2), ("facts", 3)):
        steps = [e for e in events if e.get("index") == name]
        assert steps[0] == {"event": "start", "index": name, "done": 0, "total": count, "percent": 0.0}
        assert steps[-1] == {"event": "progress", "index": name, "done": count, "total": count, "percent": 100.0}
        done = [e["done"] for e in steps[1:]]
        assert done == sorted(done)
        assert all(e["event"] == "progress" and e["total"] == count for e in steps[1:])
    code, out, err = cli.run("index", "rebuild")
    assert code == 0
    assert "rebuilding facts index: 3 documents\n" in err
    assert "facts index: 3/3 documents (100%)\n" in err
    assert out == "turns index rebuilt: 2 documents, facts index rebuilt: 3 documents\n"
    assert [f["content"] for f in cli.json("recall", "mill", "--where", WHERE)["facts"]] == [
        "The mill is closed on Sundays"
    ]


def test_index_status_counts_pending_documents_in_sql_beside_the_lag(cli: Cli, tmp_path: Path) -> None:
    first = cli.json("facts", "remember", "The owl is awake", "--where", WHERE)["fact"]
    _json_lines(cli, "index", "rebuild")  # the index holds everything SQL has

    def facts_status() -> dict[str, Any]:
        (found,) = [h for h in cli.json("index", "status")["indexes"] if h["name"] == "facts"]
        return found

    assert {k: facts_status()[k] for k in ("pending", "lag", "pending_to_add", "pending_to_remove")} == {
        "pending": 0,
        "lag": 0,
        "pending_to_add": 0,
        "pending_to_remove": 0,
    }
    # Another process (the running window) writes the facts index and has not caught up yet:
    # the commands here only read it, and count what SQL has that the index lacks.
    writer = FtsIndex(tmp_path / "home" / "familiars" / "default" / "fts" / FACTS.name, FACTS)
    writer.open()
    try:
        assert writer.writable
        cli.json("facts", "remember", "The fox is red", "--where", WHERE)
        status = facts_status()
        assert {k: status[k] for k in ("pending", "lag", "pending_to_add", "pending_to_remove")} == {
            "pending": 1,
            "lag": 1,
            "pending_to_add": 1,
            "pending_to_remove": 0,
        }
        code, out, _err = cli.run("index", "status")
        assert code == 0
        assert "pending 1 documents (1 to add, 0 to remove), lag 1 rows behind SQL" in out
        cli.json("forget", str(first["id"]))
        status = facts_status()
        assert (status["pending"], status["pending_to_add"], status["pending_to_remove"], status["lag"]) == (2, 1, 1, 1)
    finally:
        writer.close()
    cli.json("turns", "search", "anything")  # a writer again: it catches up before searching
    status = facts_status()
    assert (status["pending"], status["lag"], status["pending_to_add"], status["pending_to_remove"]) == (0, 0, 0, 0)


# -- strict import, through the CLI (tests/memory/test_import_validation.py covers every bad case) ----
def _import_file(path: Path, created_at: str) -> None:
    at = "2024-05-01T12:00:00+00:00"
    fact = {
        "kind": "fact", "id": 1, "content": "Alice lives in Lisbon", "dedup_key": "ab" * 32, "type": "semantic",
        "importance": 7, "confidence": 1.0, "subjects": ["discord:7001"], "sources": [], "speaker": "local:owner",
        "scope": WHERE, "status": "active", "revision": 0, "origin": "remember", "created_at": created_at,
        "superseded_at": None, "superseded_by": None, "valid_from": None, "valid_to": None, "snoozed_until": None,
        "status_log": [{"status": "active", "at": at}],
    }  # fmt: skip
    records = [
        {"kind": "header", "format": "familiar-memory", "version": 1},
        fact,
        {"kind": "lore", "file": "lorebook.toml", "text": '[[entries]]\nkeys = ["lisbon"]\ncontent = "A city."\n'},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_a_bad_import_is_one_line_changes_nothing_and_the_familiar_stays_usable(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    _import_file(bad, created_at="yesterday")
    code, out, err = cli.run("import", str(bad))
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "line 2 (fact): field 'created_at': 'yesterday' is not a time" in err
    assert "nothing was imported" in err
    assert cli.json("facts", "list", "--status", "all")["facts"] == []
    assert not cli.lorebook.with_name("lorebook.toml.bak").exists()
    assert "lisbon" not in (cli.lorebook.read_text(encoding="utf-8") if cli.lorebook.exists() else "")

    good = tmp_path / "good.jsonl"
    _import_file(good, created_at="2024-05-01T14:00:00+02:00")  # an offset is fine: stored in UTC
    assert cli.json("import", str(good))["records"]["fact"] == 1
    listed = cli.json("facts", "list", "--status", "all")["facts"]
    assert [(f["id"], f["created_at"]) for f in listed] == [(1, "2024-05-01T12:00:00+00:00")]
    assert "lisbon" in cli.lorebook.read_text(encoding="utf-8")
    assert cli.json("forget", "1")["fact_ids"] == [1]  # what the audit found could never be forgotten


# -- WHERE: ASCII digits, no leading zeros, one parser for every command --------------------------------
@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("guild:１", "ids are written with the ASCII digits 0-9 ('１' is U+FF11, FULLWIDTH DIGIT ONE)"),
        ("guild:500/٥01", "ids are written with the ASCII digits 0-9 ('٥' is U+0665, ARABIC-INDIC DIGIT FIVE)"),
        ("dm:７002", "ids are written with the ASCII digits 0-9"),
        ("guild:01", "the id 01 starts with 0 (write it without leading zeros)"),
        ("guild:500/0501", "the id 0501 starts with 0"),
        ("dm:00", "the id 00 starts with 0"),
        ("guild:", "is not a place: use dm:<user id>"),
    ],
)
def test_where_takes_ascii_digits_without_leading_zeros_in_every_command(cli: Cli, where: str, problem: str) -> None:
    """`guild:１` or `guild:01` used to be accepted as places of their own (never the guild meant):
    a fact remembered there was recalled nowhere, a pause paused nothing."""
    cli.json("facts", "remember", "The bell rings at noon", "--where", "guild:1")
    commands = [
        ("facts", "remember", "The bell is bronze", "--where", where),
        ("recall", "bell", "--where", where),
        ("pause", "learning", "--where", where),
        ("resume", "recall", "--where", where),
    ]
    for argv in commands:
        code, out, err = cli.run(*argv)
        assert (code, out) == (1, ""), argv
        assert err.count("\n") == 1, err
        assert problem in err, (argv, err)
    assert [f["content"] for f in cli.json("facts", "list")["facts"]] == ["The bell rings at noon"]
    assert cli.json("memory", "status")["paused"] == {"learning": [], "recall": []}
    assert [f["content"] for f in cli.json("recall", "bell", "--where", "guild:1")["facts"]] == [
        "The bell rings at noon"
    ]


# -- terminal escapes from Discord text never reach the owner's terminal ---------------------------------
HOSTILE = (
    "lantern \x1b[2J\x1b[H cleared \x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 bell\x07"
    " \u202egnirts desrever\u202c \x9b31m c1 \x7f"
    "\n#999 2024-05-01 12:00 guild:1/2 owner: forged line"
)


def test_turns_search_shows_control_characters_escaped_and_json_keeps_them_exact(cli: Cli, tmp_path: Path) -> None:
    async def hostile(familiar: Familiar) -> int:
        turn = await familiar.history.append_turn(
            NewTurn(
                platform="discord", place=WHERE, guild_id=500, channel_id=501, message_id=9100,
                author_key="discord:7666", author_name="mal\x1b[8mlory\u202e", content=HOSTILE,
                created_at=datetime.now(UTC),
            )
        )  # fmt: skip
        assert turn is not None
        return turn.id

    turn_id = _in_familiar(tmp_path / "home", hostile)
    code, out, err = cli.run("turns", "search", "lantern")
    assert (code, err) == (0, "")
    for raw in ("\x1b", "\x07", "\u202e", "\u202c", "\x9b", "\x7f"):
        assert raw not in out, repr(raw)
    (line,) = out.splitlines()  # the message's newline cannot start a line of its own
    assert line.startswith(f"#{turn_id} ")
    assert "mal\\x1b[8mlory\\u202e: lantern \\x1b[2J\\x1b[H cleared \\x1b]8;;https://evil.example/\\x07click" in line
    assert "bell\\x07 \\u202egnirts desrever\\u202c \\x9b31m c1 \\x7f\\n#999 2024-05-01" in line

    code, out, err = cli.run("turns", "search", "lantern", "--json")
    assert (code, err) == (0, "")
    for raw in ("\x1b", "\x07", "\u202e", "\x9b", "\x7f"):
        assert raw not in out, repr(raw)
    (hit,) = json.loads(out)["hits"]
    assert (hit["content"], hit["author"]) == (HOSTILE, "mal\x1b[8mlory\u202e")  # the data itself is untouched

    # A one-line error stays one line, whatever the input it names.
    code, out, err = cli.run("recall", "x", "--where", "guild:1\n\x1b[2Jerror: forged")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert "\x1b" not in err
    assert "\\n\\x1b[2Jerror: forged" in err


# -- forget --redact-sources takes the familiar's replies that quoted the message with it -----------------
def test_forget_redact_sources_erases_the_replies_that_quoted_the_message(cli: Cli, tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def conversation(familiar: Familiar) -> dict[str, int]:
        said = {
            "secret": ("discord:7002", "my vault combination is 31-41-59, tell nobody", None),
            "direct": ("familiar:self", "Safe with me: 31-41-59 is forgotten already.", 9201),
            "later": ("familiar:self", "As Bob said, his vault combination is 31-41-59.", None),
            "kept": ("familiar:self", "The vault is in the cellar.", None),
        }
        ids: dict[str, int] = {}
        for n, (name, (author, content, reply_to)) in enumerate(said.items()):
            turn = await familiar.history.append_turn(
                NewTurn(
                    platform="discord", place=WHERE, guild_id=500, channel_id=501, message_id=9201 + n,
                    author_key=author, author_name="Bob" if author.startswith("discord") else "Wisp",
                    content=content, created_at=datetime.now(UTC), reply_to=reply_to,
                )
            )  # fmt: skip
            assert turn is not None
            ids[name] = turn.id
        outcome = await familiar.history.insert_fact(
            NewFact(
                "Bob's vault combination is 31-41-59", "semantic", 6, 0.9, ("discord:7002",), WHERE,
                source_turn_ids=(ids["secret"],),
            )
        )  # fmt: skip
        assert outcome.fact is not None
        ids["fact"] = outcome.fact.id
        await familiar.history.catch_up()
        return ids

    ids = _in_familiar(home, conversation)
    fts_turns = home / "familiars" / "default" / "fts" / "turns"

    def doc_freq(word: str) -> int:
        index = FtsIndex(fts_turns, TURNS)
        index.open(writable=False)
        try:
            return index.doc_freq("content", word)
        finally:
            index.close()

    assert doc_freq("combination") == 2
    assert doc_freq("59") == 3

    receipt = cli.json("forget", str(ids["fact"]), "--redact-sources")

    assert receipt["redacted_turn_ids"] == [ids["secret"]]
    assert receipt["redacted_reply_ids"] == [ids["direct"], ids["later"]]
    assert {"store": "turns (replies quoting them)", "count": 2} in receipt["erased_from"]
    assert receipt["index_files"]["turns"] == "purged"
    assert doc_freq("combination") == 0
    assert doc_freq("59") == 0
    assert doc_freq("cellar") == 1
    with sqlite3.connect(home / "familiars" / "default" / "history.db") as db:
        rows = dict(db.execute("SELECT id, content FROM turns WHERE redacted = 1").fetchall())
        kept = db.execute("SELECT content FROM turns WHERE redacted = 0").fetchall()
    db.close()
    assert rows == {ids["secret"]: "", ids["direct"]: "", ids["later"]: ""}
    assert kept == [("The vault is in the cellar.",)]
    assert cli.json("turns", "search", "vault")["hits"][0]["turn_id"] == ids["kept"]
    assert cli.json("turns", "search", "59")["hits"] == []


# -- an import killed right after its database commit is finished, and can be run again -----------------
REPO = Path(__file__).resolve().parents[2]


def _familiar_process(home: Path, *argv: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
    env.update({"FAMILIAR_HOME": str(home), "PYTHONPATH": str(REPO)})
    if crash_at is not None:
        env["FAMILIAR_TEST_CRASH_AT"] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "app", *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _new_default(home: Path) -> None:
    """An import goes into an existing, empty familiar: make one, as a user would."""
    made = _familiar_process(home, "new", "default")
    assert made.returncode == 0, made.stderr


def _end_state(cli: Cli, home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("FAMILIAR_HOME", str(home))
    folder = home / "familiars" / "default"
    return {
        "facts": cli.json("facts", "list", "--status", "all")["facts"],
        "hits": cli.json("turns", "search", "lighthouse")["hits"],
        "recall": cli.json("recall", "lighthouse", "--where", WHERE)["facts"],
        "lorebook": (folder / "lorebook.toml").read_text(encoding="utf-8"),
        "lorebook.bak": (folder / "lorebook.toml.bak").read_text(encoding="utf-8"),
        "indexes": [(i["name"], i["pending"], i["lag"]) for i in cli.json("index", "status")["indexes"]],
    }


def test_an_import_killed_after_its_commit_is_finished_and_a_rerun_ends_as_an_uninterrupted_one(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the lorebook stayed the template and the rerun said "needs an empty familiar"."""

    async def conversation(familiar: Familiar) -> None:
        turn = await familiar.history.append_turn(
            NewTurn(
                platform="discord", place=WHERE, guild_id=500, channel_id=501, message_id=9301,
                author_key="discord:7001", author_name="Alice", content="the lighthouse keeper waves",
                created_at=datetime.now(UTC),
            )
        )  # fmt: skip
        assert turn is not None

    _in_familiar(cli.home, conversation)
    cli.json("facts", "remember", "The lighthouse is red and white", "--where", WHERE)
    cli.lorebook.write_text('[[entries]]\nkeys = ["lighthouse"]\ncontent = "It guards the bay."\n', encoding="utf-8")
    export = tmp_path / "memory.jsonl"
    cli.json("export", str(export))

    uninterrupted = tmp_path / "uninterrupted"
    _new_default(uninterrupted)
    expected_counts = _familiar_process(uninterrupted, "import", str(export), "--json")
    assert expected_counts.returncode == 0, expected_counts.stderr
    expected = _end_state(cli, uninterrupted, monkeypatch)
    assert "guards the bay" in expected["lorebook"]
    assert [h["content"] for h in expected["hits"]] == ["the lighthouse keeper waves"]

    killed = tmp_path / "killed"
    _new_default(killed)
    crashed = _familiar_process(killed, "import", str(export), "--json", crash_at="import-committed")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    lorebook = killed / "familiars" / "default" / "lorebook.toml"
    assert "guards the bay" not in lorebook.read_text(encoding="utf-8")  # killed before the lorebook

    rerun = _familiar_process(killed, "import", str(export), "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["records"] == json.loads(expected_counts.stdout)["records"]
    assert "finishing the import of memory.jsonl" in rerun.stderr
    assert _end_state(cli, killed, monkeypatch) == expected

    # Once whole, the same file again is refused, naming why.
    again = _familiar_process(killed, "import", str(export))
    assert again.returncode == 1
    assert "is already imported into this familiar" in again.stderr
    assert "needs an empty familiar" in again.stderr


def test_an_interrupted_import_is_finished_by_the_next_command_of_any_kind(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = tmp_path / "good.jsonl"
    _import_file(good, created_at="2024-05-01T14:00:00+02:00")
    home = tmp_path / "killed"
    _new_default(home)
    crashed = _familiar_process(home, "import", str(good), crash_at="import-committed")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    monkeypatch.setenv("FAMILIAR_HOME", str(home))
    assert [f["content"] for f in cli.json("facts", "list")["facts"]] == ["Alice lives in Lisbon"]
    assert "lisbon" in (home / "familiars" / "default" / "lorebook.toml").read_text(encoding="utf-8")
    assert [f["content"] for f in cli.json("recall", "Lisbon", "--where", WHERE)["facts"]] == ["Alice lives in Lisbon"]
    code, _out, err = cli.run("import", str(good))  # finished by another command: refused, saying why
    assert code == 1
    assert "is already imported into this familiar" in err


def test_an_import_whose_lorebook_cannot_be_written_says_so_and_is_finished_once_it_can(
    cli: Cli, tmp_path: Path
) -> None:
    good = tmp_path / "good.jsonl"
    _import_file(good, created_at="2024-05-01T14:00:00+02:00")
    cli.json("facts", "list")  # the familiar exists (from the template)
    cli.lorebook.unlink()
    cli.lorebook.mkdir()  # a folder where the file should be: unwritable, even for root
    code, out, err = cli.run("import", str(good))
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert f"the import of good.jsonl is in the database, but {cli.lorebook} cannot be written" in err
    assert "run any familiar command to finish it" in err
    cli.lorebook.rmdir()
    imported = cli.json("import", str(good))  # finished first, then reported as one whole run
    assert imported["records"] == {"fact": 1, "lore": 1}
    assert "lisbon" in cli.lorebook.read_text(encoding="utf-8")


def test_facts_list_recorded_at_shows_the_status_the_fact_had_then(cli: Cli) -> None:
    made = cli.json("facts", "remember", "The bell tower clock runs slow", "--where", WHERE)["fact"]
    cli.json("facts", "archive", str(made["id"]), "--revision", str(made["revision"]))
    then = cli.json("facts", "list", "--status", "all", "--recorded-at", made["created_at"])["facts"]
    assert [(f["id"], f["status"]) for f in then] == [(made["id"], "active")]
    code, out, _err = cli.run("facts", "list", "--status", "all", "--recorded-at", made["created_at"])
    assert code == 0
    assert " active " in out
    assert "archived" not in out
    assert [f["status"] for f in cli.json("facts", "list", "--status", "all")["facts"]] == ["archived"]


def test_facts_list_recorded_at_shows_a_fact_accepted_later_as_pending_then(cli: Cli, tmp_path: Path) -> None:
    """Issue 9: `--recorded-at T` shows each fact's status at T, for a fact accepted after T as for one
    archived after T (the test above), in the JSON and in the lines alike."""
    ((pending_id, _turn),) = _propose(tmp_path / "home", "Alice keeps bees on the roof")
    proposed = cli.json("facts", "show", str(pending_id))
    then = proposed["fact"]["created_at"]
    cli.json("facts", "accept", str(pending_id), "--revision", str(proposed["revision"]))

    at_then = cli.json("facts", "list", "--status", "all", "--recorded-at", then)["facts"]
    assert [(f["id"], f["status"]) for f in at_then] == [(pending_id, "pending")]
    assert [f["id"] for f in cli.json("facts", "list", "--status", "pending", "--recorded-at", then)["facts"]] == [
        pending_id
    ]
    assert cli.json("facts", "list", "--status", "active", "--recorded-at", then)["facts"] == []
    code, out, _err = cli.run("facts", "list", "--status", "all", "--recorded-at", then)
    assert code == 0
    assert " pending " in out
    assert " active " not in out
    assert [f["status"] for f in cli.json("facts", "list", "--status", "all")["facts"]] == ["active"]


def test_an_old_version_reads_as_it_stood_then_and_as_superseded_now(cli: Cli) -> None:
    """Issue 18 item 15: as of a recorded time T before an edit, the first version was the current head: it
    printed "active ... (superseded)" and its JSON said superseded. Now it reads as it stood at T (as the
    timeline's slice computes it); `facts show` without T gives the chain as it is now, each superseded
    version saying when and by which version."""
    first = cli.json("facts", "remember", "Alice likes green tea", "--where", WHERE)["fact"]
    second = cli.json(
        "facts", "edit", str(first["id"]), "--revision", str(first["revision"]), "--text", "Alice likes mint tea"
    )["fact"]
    third = cli.json(
        "facts", "edit", str(second["id"]), "--revision", str(second["revision"]), "--text", "Alice likes no tea"
    )["fact"]
    old, newer, head = first["id"], second["id"], third["id"]
    then = first["created_at"]  # recorded, not yet corrected
    between = second["created_at"]  # the second version recorded, not yet corrected
    now = cli.json("facts", "show", str(old))
    replaced = {f["id"]: (f["superseded_at"], f["superseded_by"]) for f in now["chain"]}
    assert replaced[old][1] == newer
    assert replaced[newer][1] == head
    assert replaced[head] == (None, None)

    # facts list as of T: the version current then, not superseded then, in the lines and in the JSON.
    listed = cli.json("facts", "list", "--status", "all", "--recorded-at", then)["facts"]
    assert [(f["id"], f["status"], f["superseded_at"], f["superseded_by"]) for f in listed] == [
        (old, "active", None, None)
    ]
    code, out, _err = cli.run("facts", "list", "--status", "all", "--recorded-at", then)
    assert code == 0
    assert out == f"#{old} r1 active   semantic   server 500 #501: Alice likes green tea\n"
    listed = cli.json("facts", "list", "--recorded-at", between)["facts"]
    assert [(f["id"], f["superseded_by"]) for f in listed] == [(newer, None)]
    code, out, _err = cli.run("facts", "list", "--recorded-at", between)
    assert "superseded" not in out

    # facts show as of T: the versions recorded by then, each as it stood.
    at_between = cli.json("facts", "show", str(old), "--recorded-at", between)
    assert at_between["recorded_at"] == between
    assert at_between["head_id"] == newer
    assert [(f["id"], f["superseded_by"]) for f in at_between["chain"]] == [(old, newer), (newer, None)]
    assert at_between["chain"][0]["superseded_at"] == replaced[old][0]
    code, out, _err = cli.run("facts", "show", str(newer), "--recorded-at", between)
    assert out.splitlines() == [
        f"#{old} r1 active   semantic   server 500 #501: Alice likes green tea"
        f" (superseded at {replaced[old][0]} by #{newer})",
        f"#{newer} r1 active   semantic   server 500 #501: Alice likes mint tea",
    ]
    code, out, err = cli.run("facts", "show", str(head), "--recorded-at", between)
    assert (code, out) == (1, "")
    assert err == f"error: fact {head} was not recorded yet at {between} (it was recorded at {third['created_at']})\n"

    # facts show without T: the chain now, each line truthful.
    code, out, _err = cli.run("facts", "show", str(old))
    assert out.splitlines() == [
        f"#{old} r1 active   semantic   server 500 #501: Alice likes green tea"
        f" (superseded at {replaced[old][0]} by #{newer})",
        f"#{newer} r1 active   semantic   server 500 #501: Alice likes mint tea"
        f" (superseded at {replaced[newer][0]} by #{head})",
        f"#{head} r0 active   semantic   server 500 #501: Alice likes no tea",
    ]


def test_a_version_set_aside_by_an_edited_message_says_so(cli: Cli, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ((fact_id, _turn),) = _propose(home, "Alice keeps a kestrel")
    before = cli.json("facts", "show", str(fact_id))["fact"]

    async def edit(familiar: Familiar) -> None:
        edited = await familiar.history.edit_message("discord", 9000, "Alice keeps a kettle", datetime.now(UTC))
        assert edited is not None

    _in_familiar(home, edit)
    retired = cli.json("facts", "show", str(fact_id))["fact"]
    assert (retired["superseded_by"], retired["superseded_at"] is not None) == (None, True)
    code, out, _err = cli.run("facts", "show", str(fact_id))
    assert code == 0
    assert out.splitlines()[0].endswith(
        f"Alice keeps a kestrel (set aside at {retired['superseded_at']}: the message it came from was edited)"
    )
    code, out, _err = cli.run("facts", "show", str(fact_id), "--recorded-at", before["created_at"])
    assert out.splitlines()[0] == f"#{fact_id} r1 pending  semantic   server 500: Alice keeps a kestrel"
