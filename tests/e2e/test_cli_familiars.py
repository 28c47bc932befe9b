"""Which familiar a command acts on, and making new ones: `familiar new`, `familiar card import|export`, and
`--familiar NAME` for a familiar that does not exist (an error listing the ones there are, never a new familiar).
Through the real entry point, in-process; the first launch of the window in a process of its own."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import Cli

CARDS = Path(__file__).resolve().parents[1] / "runtime" / "samples"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(tmp_path / "home", capsys, monkeypatch, familiar=False)


def folders(cli: Cli) -> list[str]:
    """Every entry of the familiars folder, hidden ones too."""
    folder = cli.home / "familiars"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_new_creates_a_familiar_from_the_template_once(cli: Cli) -> None:
    code, out, err = cli.run("new", "wisp")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"created familiar 'wisp' in {cli.home / 'familiars' / 'wisp'}",
        "open it with: familiar --familiar wisp",
    ]
    assert (cli.home / "familiars" / "wisp" / "character.toml").is_file()
    assert cli.json("--familiar", "wisp", "facts", "list") == {
        "status": "active",
        "world_at": None,
        "recorded_at": None,
        "facts": [],
    }
    code, out, err = cli.run("new", "wisp")
    assert (code, out) == (2, "")
    assert (
        err
        == f"error: {cli.home / 'familiars' / 'wisp'}: a familiar named 'wisp' already exists; nothing was changed\n"
    )
    code, out, err = cli.run("new", "no way")
    assert (code, out) == (2, "")
    assert err == "error: no way: a familiar's name may use letters, digits, '-' and '_' (at most 64)\n"
    assert cli.json("new", "Rook") == {"name": "Rook", "folder": str(cli.home / "familiars" / "Rook")}
    assert folders(cli) == ["Rook", "wisp"]


def test_a_familiar_that_does_not_exist_is_an_error_listing_those_that_do(cli: Cli) -> None:
    listing = cli.home / "familiars"
    code, out, err = cli.run("facts", "list")
    assert (code, out) == (2, "")
    assert err == (
        f"error: {listing}: no familiar named 'default' (there are no familiars here yet); create it with "
        "`familiar new default`, `familiar card import FILE`, or the window's New familiar\n"
    )
    cli.run("new", "wisp")
    cli.run("new", "Rook")
    expected = (
        f"error: {listing}: no familiar named 'wsp' (the familiars here are: Rook, wisp); create it with "
        "`familiar new wsp`, `familiar card import FILE`, or the window's New familiar\n"
    )
    for argv in (
        ("facts", "list"),
        ("lore", "import", str(CARDS / "rook_v3.json")),
        ("lore", "try", "hello"),
        ("card", "export", str(cli.home / "wsp.json")),
        ("run", "--headless"),
        (),  # the window
    ):
        code, out, err = cli.run("--familiar", "wsp", *argv)
        assert (code, out, err) == (2, "", expected), argv
    # Without --familiar, "default" is meant; once familiars exist the window no longer makes it.
    code, _out, err = cli.run()
    assert code == 2
    assert "no familiar named 'default' (the familiars here are: Rook, wisp)" in err
    assert folders(cli) == ["Rook", "wisp"]
    assert not (cli.home / "wsp.json").exists()


def test_familiar_name_may_follow_the_command_at_any_level(cli: Cli, tmp_path: Path) -> None:
    """Every command takes `--familiar NAME` (README): before the command, after its first word, or after
    the whole command, with the same error listing the familiars there are for a name that does not exist."""
    cli.run("new", "wisp")
    cli.run("new", "Rook")
    cli.json("facts", "remember", "The wisp glows blue", "--where", "guild:1", "--familiar", "wisp")
    for argv in (
        ("--familiar", "wisp", "facts", "list"),
        ("facts", "--familiar", "wisp", "list"),
        ("facts", "list", "--familiar", "wisp"),
        ("facts", "list", "--json", "--familiar", "wisp", "--status", "all"),
    ):
        assert [f["content"] for f in cli.json(*argv)["facts"]] == ["The wisp glows blue"], argv
    assert cli.json("facts", "list", "--familiar", "Rook")["facts"] == []
    assert cli.json("--familiar", "wisp", "facts", "list", "--familiar", "Rook")["facts"] == []  # the last one
    assert cli.json("index", "status", "--familiar", "Rook")["indexes"]
    tried = cli.json("lore", "try", "hello", "--familiar", "wisp")
    assert tried["texts"] == ["hello"]

    listing = cli.home / "familiars"
    expected = (
        f"error: {listing}: no familiar named 'wsp' (the familiars here are: Rook, wisp); create it with "
        "`familiar new wsp`, `familiar card import FILE`, or the window's New familiar\n"
    )
    for argv in (
        ("facts", "list", "--familiar", "wsp"),
        ("facts", "--familiar", "wsp", "list"),
        ("facts", "remember", "x", "--where", "guild:1", "--familiar", "wsp"),
        ("lore", "try", "hello", "--familiar", "wsp"),
        ("card", "export", str(tmp_path / "wsp.json"), "--familiar", "wsp"),
        ("run", "--headless", "--familiar", "wsp"),
        ("screenshot", "--pane", "chat", "--out", str(tmp_path / "wsp.png"), "--familiar", "wsp"),
    ):
        assert cli.run(*argv) == (2, "", expected), argv
    assert folders(cli) == ["Rook", "wisp"]
    assert not (tmp_path / "wsp.json").exists()
    assert not (tmp_path / "wsp.png").exists()


def test_familiar_after_the_command_in_a_process_of_its_own(tmp_path: Path) -> None:
    """The installed `familiar` command, as a script would call it."""
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
    env.update({"FAMILIAR_HOME": str(home), "PYTHONPATH": str(REPO)})

    def familiar(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app", *argv], env=env, capture_output=True, text=True, timeout=120, check=False
        )

    assert familiar("new", "wisp").returncode == 0
    listed = familiar("facts", "list", "--familiar", "wisp", "--json")
    assert (listed.returncode, listed.stderr) == (0, "")
    assert json.loads(listed.stdout)["facts"] == []
    missing = familiar("facts", "list", "--familiar", "wsp")
    assert (missing.returncode, missing.stdout) == (2, "")
    assert "no familiar named 'wsp' (the familiars here are: wisp)" in missing.stderr
    assert missing.stderr.count("\n") == 1


def test_card_import_and_export_from_the_terminal(cli: Cli, tmp_path: Path) -> None:
    code, out, err = cli.run("card", "import", str(CARDS / "rook_v3.json"))
    assert (code, err) == (0, "")
    folder = cli.home / "familiars" / "Captain-Rook"
    assert out.splitlines() == [
        f"created familiar 'Captain-Rook' from a Character Card V3 (JSON) {CARDS / 'rook_v3.json'}: Captain Rook's "
        f"persona in character.md, 3 lore entries in lorebook.toml, under {folder}",
        "open it with: familiar --familiar Captain-Rook",
    ]
    tried = cli.json("--familiar", "Captain-Rook", "lore", "try", "Is the ferry leaking?")
    assert [m["title"] for m in tried["matches"]] == ["Never whistle on deck", "The ferry"]

    code, out, err = cli.run("--familiar", "Captain-Rook", "card", "export", str(tmp_path / "rook.png"))
    assert (code, err) == (0, "")
    assert out == (
        f"wrote 'Captain-Rook' as a Character Card V3 to {tmp_path / 'rook.png'} (chara and ccv3 chunks, in a "
        "placeholder image), with 3 lore entries\n"
    )
    exported = cli.json("--familiar", "Captain-Rook", "card", "export", str(tmp_path / "rook.json"))
    assert exported == {
        "file": str(tmp_path / "rook.json"),
        "format": "json",
        "lore_entries": 3,
        "spec": "chara_card_v3",
    }
    card = json.loads((tmp_path / "rook.json").read_text(encoding="utf-8"))
    assert card["data"]["nickname"] == "Cap"

    made = cli.json("card", "import", str(tmp_path / "rook.png"), "--as", "rook2")
    assert made == {
        "name": "rook2",
        "folder": str(cli.home / "familiars" / "rook2"),
        "source": "a Character Card V3 (PNG, 'ccv3' chunk)",
        "display_name": "Captain Rook",
        "lore_entries": 3,
        "greeting": True,
        "image": True,
    }
    cli.json("--familiar", "rook2", "card", "export", str(tmp_path / "rook2.json"))
    assert json.loads((tmp_path / "rook2.json").read_text(encoding="utf-8")) == card

    before = (folder / "character.md").read_bytes()
    code, out, err = cli.run("card", "import", str(CARDS / "rook_v3.json"))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {folder}: a familiar named 'Captain-Rook' already exists; nothing was changed "
        "(--as NAME gives it another name)\n"
    )
    assert (folder / "character.md").read_bytes() == before
    assert folders(cli) == ["Captain-Rook", "rook2"]


def test_a_bad_card_is_one_line_and_creates_nothing(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR")
    code, out, err = cli.run("card", "import", str(bad))
    assert (code, out) == (1, "")
    assert err == f"error: {bad}: damaged PNG: the IHDR chunk is cut short\n"
    wrong = tmp_path / "book.json"
    wrong.write_text(json.dumps({"spec": "lorebook_v3", "data": {"entries": []}}), encoding="utf-8")
    code, out, err = cli.run("card", "import", str(wrong), "--as", "book")
    assert (code, out) == (1, "")
    assert err == (
        f"error: {wrong}: a lorebook_v3 file, not a character card (`familiar lore import` reads lorebooks)\n"
    )
    nameless = tmp_path / "yuki.json"
    card = json.loads((CARDS / "rook_v3.json").read_text(encoding="utf-8"))
    card["data"]["name"] = "ユキ"
    nameless.write_text(json.dumps(card), encoding="utf-8")
    code, out, err = cli.run("card", "import", str(nameless))
    assert (code, out) == (1, "")
    assert err == (
        f"error: {nameless}: the card's name 'ユキ' has no letters a folder name can use; "
        "choose a name with --as NAME\n"
    )
    assert cli.json("card", "import", str(nameless), "--as", "yuki")["display_name"] == "ユキ"
    assert folders(cli) == ["yuki"]
    unfinished = tmp_path / "unfinished.png"  # a well-formed 1x1 header, then nothing
    unfinished.write_bytes(b"\x89PNG\r\n\x1a\n" + base64.b64decode("AAAADUlIRFIAAAABAAAAAQgCAAAAkHdT3g=="))
    code, out, err = cli.run("card", "import", str(unfinished))
    assert (code, out) == (1, "")
    assert err == f"error: {unfinished}: damaged PNG: it ends before its IEND chunk\n"
    assert folders(cli) == ["yuki"]


@pytest.mark.slow
def test_the_first_launch_of_the_window_creates_the_default_familiar(tmp_path: Path) -> None:
    """With no familiars at all and no --familiar, the window opens a new "default" (the welcome flow comes
    later); a second launch opens the same one."""
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
    env.update(
        {
            "FAMILIAR_HOME": str(home),
            "QT_QPA_PLATFORM": "offscreen",
            "FAMILIAR_BENCH_EXIT_WHEN_SHOWN": "1",  # exit once the window is shown
            "PYTHONPATH": str(REPO),
        }
    )
    for _launch in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "app"], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        assert "window shown" in done.stdout
        assert sorted(p.name for p in (home / "familiars").iterdir()) == ["default"]
    assert (home / "familiars" / "default" / "history.db").is_file()
