"""The memory commands of `familiar` (DESIGN.md "Contracts"), run through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.cli import Cli

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
    written = cli.json("export", str(export))["records"]
    assert written["fact"] == 4
    assert "1234" not in export.read_text(encoding="utf-8")  # a forgotten fact leaves no text behind

    monkeypatch.setenv("FAMILIAR_HOME", str(tmp_path / "other"))
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
    rebuilt = cli.json("index", "rebuild")["rebuilt"]
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
