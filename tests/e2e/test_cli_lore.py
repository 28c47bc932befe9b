"""The lorebook commands of `familiar` (familiar lore import / export / try), through the real entry point."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest

from tests.e2e.cli import Cli

SAMPLES = Path(__file__).resolve().parents[1] / "lore" / "samples"


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(tmp_path / "home", capsys, monkeypatch)


def test_import_then_try_a_message(cli: Cli) -> None:
    code, out, err = cli.run("lore", "import", str(SAMPLES / "st_world_info.json"))
    assert (code, err) == (0, "")
    assert out.startswith("added 8 entries from ")
    assert "(SillyTavern World Info)" in out
    assert cli.lorebook.is_file()
    tried = cli.json("lore", "try", "Alice: Is Ember awake?", "Bob: the beacon, at night, in a storm")
    # "World rules" is constant but its card says @@dont_activate: acted on, as SillyTavern does
    assert [(m["title"], m["key"], m["secondary"]) for m in tried["matches"]] == [
        ("The lighthouse at night", "/\\b(?:light ?house|beacon)s?\\b/i", "storm"),
        ("Ember the dragon", "Ember", None),
    ]
    assert tried["matches"][1]["content"].startswith("Ember is an old red dragon")
    assert tried["matches"][1]["span"] == {
        "source": "text",
        "start": 10,
        "end": 15,
        "turn_id": None,
        "entry": None,
        "position": 0,
    }
    assert tried["problems"] == []
    code, out, _err = cli.run("lore", "try", "Rook: tea with mint?", "--seed", "7")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == 'entry 3 "Captain Rook (alive)" (priority 120) fired on "Rook" in text 1 at 0-4'
    tea = 'entry 4 "Tea, unless it is the full recipe" (priority 90) fired on "tea", secondary "honey" in text 1 at 6-9'
    assert tea in lines
    # the Tea's content names the kettle: its entry comes through recursion
    assert 'entry 7 (priority 100) fired on "kettle" in the content of entry 4 (recursion step 1)' in lines
    assert lines[-1].startswith("seed 7, message 1, ")
    # the Tea entry has a probability of 40: some seeds leave it out, and say so
    code, out, _err = cli.run("lore", "try", "Rook: tea with mint?", "--seed", "2")
    assert 'entry 4 "Tea, unless it is the full recipe" matched "tea" but is left out: probability (rolled ' in out


def test_import_appends_unless_replacing(cli: Cli) -> None:
    first = cli.json("lore", "import", str(SAMPLES / "lorebook_v3.json"))
    assert (first["format"], first["imported"], first["replaced"], first["entries"]) == ("ccv3", 2, 0, 2)
    again = cli.json("lore", "import", str(SAMPLES / "ccv2_card.json"))
    assert (again["format"], again["imported"], again["entries"]) == ("ccv2", 4, 6)
    replaced = cli.json("lore", "import", str(SAMPLES / "ccv3_card.json"), "--replace")
    assert (replaced["imported"], replaced["replaced"], replaced["entries"]) == (3, 6, 3)
    code, out, _err = cli.run("lore", "import", str(SAMPLES / "ccv2_card.json"), "--replace")
    assert code == 0
    assert out.startswith("replaced 3 entries with 4 entries from ")


def test_export_in_each_format_and_read_it_back(cli: Cli, tmp_path: Path) -> None:
    cli.json("lore", "import", str(SAMPLES / "st_world_info.json"))
    for fmt in ("st", "ccv2", "ccv3"):
        target = tmp_path / f"out-{fmt}.json"
        done = cli.json("lore", "export", str(target), "--format", fmt)
        assert done == {"file": str(target), "format": fmt, "entries": 8}
        written = json.loads(target.read_text(encoding="utf-8"))
        if fmt == "st":
            assert written["entries"]["12"]["matchWorldNote"] is True
        elif fmt == "ccv2":
            assert len(written["entries"]) == 8
        else:
            assert written["spec"] == "lorebook_v3"
        code, out, _err = cli.run("lore", "export", str(target), "--format", fmt)
        assert (code, out.strip()) == (0, f"exported 8 entries to {target} ({fmt})")
    round_trip = json.loads((tmp_path / "out-st.json").read_text(encoding="utf-8"))
    original = json.loads((SAMPLES / "st_world_info.json").read_text(encoding="utf-8"))
    for uid, entry in original["entries"].items():
        assert {k: round_trip["entries"][uid][k] for k in entry} == entry


def test_errors_print_one_line_and_change_nothing(cli: Cli, tmp_path: Path) -> None:
    cli.json("lore", "import", str(SAMPLES / "lorebook_v3.json"))
    before = cli.lorebook.read_text(encoding="utf-8")
    cases = {
        "bad.json": ("{not json", "not valid JSON"),
        "list.json": ("[1, 2, 3]", "expected a JSON object"),
        "shape.json": ('{"spec": "chara_card_v2", "data": {"name": "Wisp"}}', "has no character_book"),
        "empty.json": ('{"name": "no entries here"}', "not a lorebook"),
    }
    for name, (text, words) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        for extra in ((), ("--replace",), ("--json",)):
            code, out, err = cli.run("lore", "import", str(path), *extra)
            assert code == 1
            assert out == ""
            assert err.startswith(f"error: {path}: ")
            assert words in err
            assert err.count("\n") == 1
    code, _out, err = cli.run("lore", "import", str(tmp_path / "missing.json"))
    assert (code, err.strip()) == (1, f"error: {tmp_path / 'missing.json'}: no such file")
    assert cli.lorebook.read_text(encoding="utf-8") == before
    with pytest.raises(SystemExit) as exited:
        cli.run("lore", "export", str(tmp_path / "x.json"), "--format", "yaml")
    assert exited.value.code == 2
    assert not (tmp_path / "x.json").exists()


def test_a_broken_lorebook_is_a_config_error(cli: Cli, tmp_path: Path) -> None:
    cli.lorebook.parent.mkdir(parents=True, exist_ok=True)
    cli.lorebook.write_text('[[entries]]\ntitle = "Owl"\nkeys = ["owl"]\npriority = "high"\n', encoding="utf-8")
    expected = f"error: {cli.lorebook}, line 4, entry 1 \"Owl\", key 'priority': expected a whole number, got string\n"
    for argv in (
        ("lore", "try", "owl"),
        ("lore", "export", str(tmp_path / "out.json"), "--format", "st"),
        ("lore", "import", str(SAMPLES / "lorebook_v3.json")),
    ):
        code, out, err = cli.run(*argv)
        assert (code, out, err) == (2, "", expected)
    assert not (tmp_path / "out.json").exists()
    assert "high" in cli.lorebook.read_text(encoding="utf-8")


def test_try_reports_problems_and_quiet_books(cli: Cli) -> None:
    cli.lorebook.parent.mkdir(parents=True, exist_ok=True)
    cli.lorebook.write_text(
        '[[entries]]\ntitle = "Owl"\nkeys = ["owl", "/(/"]\nsecondary_keys = ["night"]\nlogic = "and_any"\n',
        encoding="utf-8",
    )
    code, out, _err = cli.run("lore", "try", "a: the owl", "b: at night")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == 'entry 1 "Owl" (priority 100) fired on "owl", secondary "night" in text 1 at 7-10'
    assert lines[1].startswith('problem: lorebook.toml entry 1 "Owl": key "/(/" never matches: invalid regex')
    code, out, _err = cli.run("lore", "try", "nothing here")
    assert out.splitlines()[0] == "no entry fires"
    tried = cli.json("lore", "try", "an owl")
    assert tried["matches"] == []
    assert tried["problems"][0]["key"] == "/(/"


def test_lore_commands_need_no_character_settings(cli: Cli) -> None:
    """They read and write lorebook.toml only: a broken character.toml does not stop them."""
    cli.lorebook.parent.mkdir(parents=True, exist_ok=True)
    (cli.lorebook.parent / "character.toml").write_text("this is not toml [", encoding="utf-8")
    assert cli.json("lore", "import", str(SAMPLES / "lorebook_v3.json"))["entries"] == 2
    assert [m["title"] for m in cli.json("lore", "try", "a kraken!")["matches"]] == ["Kraken"]


def test_an_import_keeps_the_owner_s_comments_and_extensions(cli: Cli) -> None:
    cli.lorebook.parent.mkdir(parents=True, exist_ok=True)
    cli.lorebook.write_text(
        '# my own notes about this world\n[extensions]\nmood = "gloomy"  # not a Familiar key: kept\n\n'
        '[[entries]]\n# the oldest entry\ntitle = "Home"\nkeys = ["home"]\ncontent = "The lantern."\n'
        "[entries.extensions]\nsparkle = 3\n",
        encoding="utf-8",
    )
    assert cli.json("lore", "import", str(SAMPLES / "lorebook_v3.json"))["entries"] == 3
    text = cli.lorebook.read_text(encoding="utf-8")
    for kept in (
        "# my own notes about this world",
        'mood = "gloomy"  # not a Familiar key: kept',
        "# the oldest entry",
    ):
        assert kept in text
    assert "sparkle = 3" in text
    assert text.index('title = "Home"') < text.index("[[entries]]", text.index('title = "Home"'))


def test_try_names_a_regex_key_over_its_time_limit(cli: Cli) -> None:
    cli.lorebook.parent.mkdir(parents=True, exist_ok=True)
    cli.lorebook.write_text(
        "[[entries]]\ntitle = 'Owl'\nkeys = ['owl']\n[[entries]]\ntitle = 'Trap'\nkeys = ['/(a|a)*(?=b)/']\n",
        encoding="utf-8",
    )
    tried = cli.json("lore", "try", "x: an owl " + "a" * 40 + "!")
    assert [m["title"] for m in tried["matches"]] == ["Owl"]
    assert [(p["index"], p["title"], p["key"]) for p in tried["problems"]] == [(1, "Trap", "/(a|a)*(?=b)/")]
    code, out, _err = cli.run("lore", "try", "x: " + "a" * 40 + "!")
    assert code == 0
    assert out.splitlines()[:2] == [
        "no entry fires",
        'problem: lorebook.toml entry 2 "Trap": the regex key /(a|a)*(?=b)/ ran over its time limit (100 ms)'
        " on one message; it is off until lorebook.toml changes",
    ]


def test_importing_the_same_file_twice_adds_nothing(cli: Cli, tmp_path: Path) -> None:
    first = cli.json("lore", "import", str(SAMPLES / "st_world_info.json"))
    assert (first["imported"], first["unchanged"], first["entries"]) == (8, 0, 8)
    code, out, _err = cli.run("lore", "import", str(SAMPLES / "st_world_info.json"))
    assert code == 0
    assert out.splitlines() == [
        f"added 0 entries from {SAMPLES / 'st_world_info.json'} (SillyTavern World Info); {cli.lorebook} now has 8",
        "skipped 8 entries the lorebook already has as they are",
    ]
    data = json.loads((SAMPLES / "st_world_info.json").read_text(encoding="utf-8"))
    data["entries"]["0"]["content"] = "Ember has woken up."
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(data), encoding="utf-8")
    kept = cli.json("lore", "import", str(newer))
    assert (kept["imported"], kept["unchanged"], kept["changed_kept"], kept["entries"]) == (0, 7, 1, 8)
    assert "Ember has woken up." not in cli.lorebook.read_text(encoding="utf-8")
    updated = cli.json("lore", "import", str(newer), "--update")
    assert (updated["imported"], updated["updated"], updated["entries"]) == (0, 1, 8)
    assert "Ember has woken up." in cli.lorebook.read_text(encoding="utf-8")


def test_a_png_card_is_imported(cli: Cli, tmp_path: Path) -> None:
    from tests.runtime.test_cards import pillow_png

    card = (Path(__file__).resolve().parents[1] / "runtime" / "samples" / "wisp_v2.json").read_bytes()
    png = pillow_png(tmp_path / "wisp.png", [("chara", base64.b64encode(card).decode())])
    done = cli.json("lore", "import", str(png))
    assert (done["format"], done["imported"], done["source"]) == (
        "ccv2",
        3,
        "the character_book of a Character Card V2",
    )
    code, _out, err = cli.run("lore", "import", str(tmp_path / "missing.png"))
    assert code == 1
    assert err.startswith("error: ")
    assert "missing.png" in err


def test_try_over_a_place_and_its_timed_effects(cli: Cli, tmp_path: Path) -> None:
    cli.lorebook.write_text(
        'scan_depth = 1\n[[entries]]\ntitle = "Curse"\nkeys = ["curse"]\nsticky = 3\ncontent = "A curse."\n',
        encoding="utf-8",
    )

    async def chat() -> None:
        from app.config.paths import FamiliarPaths
        from app.config.secrets import SecretStore
        from app.runtime.service import Familiar
        from tests.conftest import write_character_toml
        from tests.fakes.llm_server import FakeLLM

        async with FakeLLM() as llm:
            paths = FamiliarPaths(root=cli.home, name="default")
            write_character_toml(paths, "http://127.0.0.1:9", "ws://127.0.0.1:9", llm.base_url)
            familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False))
            try:
                await familiar.chat_local("a curse!")
                await familiar.chat_local("hello")
            finally:
                await familiar.close()

    asyncio.run(chat())
    code, out, _err = cli.run("lore", "try", "--where", "local", "--last", "1", "--seed", "5")
    assert code == 0
    assert out.splitlines() == [
        'entry 1 "Curse" (priority 100) fired on "(sticky)"',
        "seed 5, message 4, 8 of 800 tokens",
    ]
    timed = cli.json("lore", "timed")
    assert timed["effects"] == [
        {
            "place": "local",
            "entry": 0,
            "title": "Curse",
            "kind": "sticky",
            "start": 1,
            "end": 4,
            "key": timed["effects"][0]["key"],
        }
    ]
    assert cli.run("lore", "timed", "--clear")[1] == "ended 1 timed effects\n"
    assert cli.json("lore", "timed") == {"effects": []}
    code, _out, err = cli.run("lore", "try", "x", "--where", "local")
    assert (code, err) == (1, "error: lore try takes texts or --where, not both\n")


def test_try_over_a_place_names_a_regex_key_over_its_time_limit(cli: Cli) -> None:
    """Issue 20 item 9: `lore try --where` took the disabled keys from the reply path's scanner, handed out
    by the familiar (`familiar.lorebook_layer.scanner(book)`), which in a command has scanned nothing: the
    key the try itself switched off was missing from the JSON's problems. It asks the lore API now."""
    cli.lorebook.write_text(
        "[[entries]]\ntitle = 'Owl'\nkeys = ['owl']\n[[entries]]\ntitle = 'Trap'\nkeys = ['/(a|a)*(?=b)/']\n",
        encoding="utf-8",
    )

    async def chat() -> None:
        from app.config.paths import FamiliarPaths
        from app.config.secrets import SecretStore
        from app.runtime.service import Familiar
        from tests.conftest import write_character_toml
        from tests.fakes.llm_server import FakeLLM

        async with FakeLLM() as llm:
            paths = FamiliarPaths(root=cli.home, name="default")
            write_character_toml(paths, "http://127.0.0.1:9", "ws://127.0.0.1:9", llm.base_url)
            familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False))
            try:
                await familiar.chat_local("an owl " + "a" * 40 + "!")
            finally:
                await familiar.close()

    asyncio.run(chat())
    tried = cli.json("lore", "try", "--where", "local", "--last", "1", "--seed", "5")
    assert [m["title"] for m in tried["matches"]] == ["Owl"]
    assert [(p["index"], p["title"], p["key"]) for p in tried["problems"]] == [(1, "Trap", "/(a|a)*(?=b)/")]
