"""`familiar index status` with what the index health pane shows (documents against the store, last commit,
size, embeddings' coverage and unused models), `familiar index reembed`, and `familiar index rebuild`
beside a running familiar pointing at the pane's button that exists (issue 9, pane 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.memory.fts import TURNS, FtsIndex
from app.ui.panes.index import REBUILD_TEXT, IndexPane
from tests.e2e.cli import Cli

WHERE = "guild:500/501"


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(tmp_path / "home", capsys, monkeypatch)


def embeddings(cli: Cli, backend: str) -> None:
    """Set the embedding backend in the familiar's character.toml (the template's line)."""
    toml = cli.home / "familiars" / "default" / "character.toml"
    text = toml.read_text(encoding="utf-8")
    assert 'backend = "off"' in text
    toml.write_text(text.replace('backend = "off"', f'backend = "{backend}"'), encoding="utf-8")


def test_index_status_shows_documents_against_the_store_and_the_embeddings(cli: Cli) -> None:
    cli.json("facts", "remember", "The owl is awake", "--where", WHERE)
    code, out, err = cli.run("index", "status")
    assert code == 0, err
    assert "; 0 of 1 documents indexed" in out  # a one-shot command left it to the next to index
    cli.json("turns", "search", "anything")  # one that searches catches the indexes up first
    code, out, err = cli.run("index", "status")
    assert code == 0, err
    assert "facts: ready;" in out
    assert "; 1 of 1 documents indexed, last commit 20" in out, out
    assert "bytes on disk" in out
    assert "embeddings: off (set [providers.embedding] backend in character.toml to hash or fastembed)" in out
    status = cli.json("index", "status")
    (facts,) = [i for i in status["indexes"] if i["name"] == "facts"]
    assert (facts["indexed"], facts["source_rows"], facts["written_here"]) == (1, 1, True)
    assert facts["last_commit_at"] is not None
    assert facts["size_bytes"] > 0
    assert (status["embeddings"]["state"], status["embeddings"]["model"]) == ("off", None)


def test_index_reembed_fills_every_vector_of_the_active_model(cli: Cli) -> None:
    cli.json("facts", "remember", "The owl is awake", "--where", WHERE)
    cli.json("facts", "remember", "The mill is closed on Sundays", "--where", WHERE)
    code, _out, err = cli.run("index", "reembed")
    assert code == 1
    assert err.strip().endswith(
        "embeddings are off: set [providers.embedding] backend in character.toml to hash or fastembed first"
    )
    assert "\n" not in err.strip()

    embeddings(cli, "hash")
    before = cli.json("index", "status")["embeddings"]
    assert (before["state"], before["covered"], before["missing"]) == ("failing", 0, 2)  # no worker makes them here
    code, out, err = cli.run("index", "reembed")
    assert code == 0, err
    assert out.strip() == "re-embedded 2 facts with hash:256"
    assert "Re-embedding facts with hash:256: 2/2 facts" in err
    after = cli.json("index", "status")["embeddings"]
    assert (after["state"], after["covered"], after["missing"]) == ("ok", 2, 0)
    assert cli.json("index", "reembed") == {"model": "hash:256", "reembedded": 2}


def test_index_rebuild_beside_a_running_familiar_points_at_the_panes_button(cli: Cli) -> None:
    cli.json("facts", "remember", "The owl is awake", "--where", WHERE)
    writer = FtsIndex(cli.home / "familiars" / "default" / "fts" / TURNS.name, TURNS)  # as the window holds it
    writer.open()
    try:
        assert writer.writable
        code, out, err = cli.run("index", "rebuild")
    finally:
        writer.close()
    assert code == 1
    assert out == ""
    assert f"if it is the window, rebuild them there ({IndexPane.title}, then {REBUILD_TEXT});" in err
    assert "if it is `familiar run --headless`, stop it and rebuild again" in err
    assert len(err.strip().splitlines()) == 1
