"""Import and export of SillyTavern World Info and Character Card V2 / V3 lorebooks.

Round trips compare every field of the original with the export, modulo these documented normalisations:
1. An export may add fields the original lacked: the format's defaults (SillyTavern's full entry template, a
   card entry's `extensions.selectiveLogic`, `case_sensitive` written both at the top of a card entry and in
   its `extensions`, V3 `use_regex`...). Fields the original had all come back with the same value.
2. Only a card's lorebook is read, so a card's `data.character_book` is compared with the export (ccv2 writes
   a bare character_book, ccv3 a lorebook_v3 file whose `data` is the book).
3. Numbers compare as JSON does (an integral 100.0 insertion_order comes back as 100).
4. Lone surrogates (legal in JSON, not in a UTF-8 file) become U+FFFD.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.lore.book import load_lorebook, parse_lorebook
from app.lore.document import LorebookDocument
from app.lore.formats import (
    LorebookFormatError,
    export_file,
    export_lorebook,
    from_toml,
    import_text,
    join_decorators,
    read_lorebook_file,
    split_decorators,
    to_toml,
)
from app.lore.importing import import_file
from app.lore.scanner import LoreScanner

SAMPLES = Path(__file__).parent / "samples"


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


def kept(original: Any, exported: Any, where: str = "$") -> list[str]:
    """Every field of `original` is in `exported` with the same value (normalisation 1 and 3 above)."""
    if isinstance(original, dict):
        if not isinstance(exported, dict):
            return [f"{where}: expected an object, got {exported!r}"]
        out = []
        for key, value in original.items():
            if key not in exported:
                out.append(f"{where}.{key}: missing")
            else:
                out.extend(kept(value, exported[key], f"{where}.{key}"))
        return out
    if isinstance(original, list):
        if not isinstance(exported, list) or len(original) != len(exported):
            return [f"{where}: {original!r} became {exported!r}"]
        return [
            problem
            for i, pair in enumerate(zip(original, exported, strict=True))
            for problem in kept(*pair, f"{where}[{i}]")
        ]
    same_kind = type(original) is type(exported) or (
        isinstance(original, int | float)
        and isinstance(exported, int | float)
        and not isinstance(original, bool)
        and not isinstance(exported, bool)
    )
    if not same_kind or original != exported:
        return [f"{where}: {original!r} became {exported!r}"]
    return []


def round_trip(tmp_path: Path, name: str, fmt: str) -> tuple[dict[str, Any], str]:
    lorebook = tmp_path / "lorebook.toml"
    import_file(SAMPLES / name, lorebook, replace=True)
    text = lorebook.read_text(encoding="utf-8")
    parse_lorebook(text, lorebook)  # valid for the engine
    return export_lorebook(tomllib.loads(text), fmt), text


@pytest.mark.parametrize(
    ("name", "fmt", "book_of"),
    [
        ("st_world_info.json", "st", lambda d: d),
        ("ccv2_card.json", "ccv2", lambda d: d["data"]["character_book"]),
        ("ccv3_card.json", "ccv3", lambda d: {"spec": "lorebook_v3", "data": d["data"]["character_book"]}),
        ("lorebook_v3.json", "ccv3", lambda d: d),
    ],
)
def test_every_sample_round_trips(tmp_path: Path, name: str, fmt: str, book_of: Any) -> None:
    exported, _text = round_trip(tmp_path, name, fmt)
    assert kept(book_of(sample(name)), exported) == []
    # and a second pass changes nothing
    again = tmp_path / "again.json"
    again.write_text(json.dumps(exported), encoding="utf-8")
    (tmp_path / "second").mkdir()
    import_file(again, tmp_path / "second" / "lorebook.toml", replace=True)
    second = export_lorebook(tomllib.loads((tmp_path / "second" / "lorebook.toml").read_text("utf-8")), fmt)
    assert second == exported


def test_what_the_engine_sees_of_world_info(tmp_path: Path) -> None:
    _exported, text = round_trip(tmp_path, "st_world_info.json", "st")
    book = parse_lorebook(text, Path("lorebook.toml"))
    by_title = {e.title: e for e in book.entries}
    assert len(book.entries) == 8
    lighthouse = by_title["The lighthouse at night"]
    assert (lighthouse.logic, lighthouse.priority, lighthouse.scan_depth, lighthouse.case_sensitive) == (
        "and_all",
        250,
        3,
        False,
    )
    assert lighthouse.keys == (r"/\b(?:light ?house|beacon)s?\b/i", "Saltmere")
    assert by_title["Captain Rook (alive)"].logic == "not_any"
    assert by_title["Tea, unless it is the full recipe"].logic == "not_all"
    assert by_title["Tea, unless it is the full recipe"].whole_words is False
    assert by_title["World rules"].constant
    assert by_title["World rules"].content.startswith("Magic in Saltmere")  # the @@ decorator went aside
    assert not by_title["Tokyo (switched off)"].enabled
    assert by_title[""].secondary_keys == ()  # not selective: its secondary keys are kept, not used
    assert book.problems == ()
    # SillyTavern's activation fields are acted on: taken into lorebook.toml, not only kept aside
    rook = by_title["Captain Rook (alive)"]
    assert (rook.group, rook.group_override, rook.group_weight, rook.sticky, rook.cooldown) == (
        "captains", True, 50, 2, 3,
    )  # fmt: skip
    assert (rook.use_group_scoring, rook.prevent_recursion, rook.exclude_recursion) == (False, True, False)
    assert by_title["Tea, unless it is the full recipe"].probability == 40
    assert by_title["The lighthouse at night"].exclude_recursion
    fired = [(m.entry.title, m.key) for m in LoreScanner(book).activate(["Bob: Alice waves at Alice", "Ann: storm"])]
    assert fired == [("World rules", "(constant)"), ("Waving at yourself", "/(?<who>Alice|Bob) waves at \\k<who>/")]
    data = tomllib.loads(text)
    tea = data["entries"][3]["extensions"]["st"]
    assert tea["extensions"]["x-familiar-test"] == {
        "mood": "cozy",
        "weights": [0.5, {"$json": "null"}, 2],
        "note": {"$json": "null"},
    }
    assert data["entries"][7]["extensions"]["st"]["matchWorldNote"] is True  # a field from the future


def test_what_the_engine_sees_of_a_v2_card(tmp_path: Path) -> None:
    _exported, text = round_trip(tmp_path, "ccv2_card.json", "ccv2")
    book = parse_lorebook(text, Path("lorebook.toml"))
    assert (book.scan_depth, book.token_budget) == (6, 1024)
    ember, lighthouse, kettle, fog = book.entries
    assert ember.keys == ("Ember", "red dragon")
    assert (ember.case_sensitive, ember.whole_words, ember.scan_depth) == (None, None, None)  # null: the book's
    assert (lighthouse.logic, lighthouse.case_sensitive, lighthouse.whole_words, lighthouse.scan_depth) == (
        "and_all",
        True,
        False,
        2,
    )
    assert lighthouse.priority == 250  # insertion_order; the card's own priority (10) is kept aside
    assert kettle.title == "The kettle"  # no comment: the name
    assert kettle.secondary_keys == ()  # selective is false
    assert (fog.enabled, fog.logic) == (False, "not_any")
    # SillyTavern's activation fields in the card's extensions are acted on (not only kept)
    assert (lighthouse.probability, lighthouse.group, lighthouse.group_weight) == (75, "landmarks", 100)  # null: 100
    assert (ember.use_group_scoring, lighthouse.use_group_scoring) == (False, None)
    assert book.recursive_scanning is False
    data = tomllib.loads(text)
    assert data["name"] == "Saltmere"
    assert data["recursive_scanning"] is False
    assert data["entries"][1]["probability"] == 75
    assert data["entries"][1]["extensions"]["card"]["extensions"]["group_weight"] == {"$json": "null"}  # kept
    assert data["extensions"]["card"] == {"extensions": {"chub": {"id": 123456, "full_path": "tests/saltmere"}}}
    assert data["entries"][3]["extensions"]["card"]["extensions"]["x_custom"] == {
        "a": [1, 2, {"$json": "null"}],
        "b": {"nested": True},
    }


def test_v3_decorators_stay_out_of_the_content(tmp_path: Path) -> None:
    exported, text = round_trip(tmp_path, "ccv3_card.json", "ccv3")
    book = parse_lorebook(text, Path("lorebook.toml"))
    ferry, isles, superstition = book.entries
    assert ferry.content == "The ferry is called the Gull and leaks at the stern."
    assert isles.content == "\nNobody crosses to the outer isles in a storm, except Rook."
    assert superstition.content == ""
    data = tomllib.loads(text)
    assert data["entries"][0]["extensions"]["decorators"] == ["@@depth 3", "@@role assistant"]
    assert data["entries"][1]["extensions"]["decorators"] == ["@@activate_only_after 2", "@@@scan_depth 4"]
    assert isles.decorators.activate_only_after == 2  # acted on
    assert isles.decorators.scan_depth is None  # a fallback, moot: the decorator before it is acted on
    assert ferry.decorators.kept == ("@@depth 3", "@@role assistant")  # where a block goes: not ours to act on
    assert exported["data"]["entries"][0]["content"].startswith("@@depth 3\n@@role assistant\nThe ferry")
    assert [e.title for e in book.entries] == ["The ferry", "Outer isles in a storm", "Never whistle on deck"]
    assert (isles.case_sensitive, ferry.case_sensitive) == (True, False)
    scanner = LoreScanner(book)
    fired = [(m.entry.title, m.key) for m in scanner.activate(["Rook: the OUTER  isles, in a storm"])]
    assert fired == [("Never whistle on deck", "(constant)"), ("Outer isles in a storm", "/outer\\s+isles?/i")]
    assert [m.entry.title for m in scanner.activate(["Rook: the outer isles, in a Storm"])] == [
        "Never whistle on deck"  # the secondary key is case-sensitive like its entry; the regex has its own i
    ]


def test_cross_format_keeps_keys_content_and_logic(tmp_path: Path) -> None:
    _exported, text = round_trip(tmp_path, "st_world_info.json", "st")
    original = sample("st_world_info.json")["entries"]
    card = export_lorebook(tomllib.loads(text), "ccv3")
    assert card["spec"] == "lorebook_v3"
    entries = card["data"]["entries"]
    assert len(entries) == len(original)
    for entry, st_entry in zip(entries, original.values(), strict=True):
        assert entry["keys"] == st_entry["key"]
        assert entry["content"] == st_entry["content"]
        assert entry["extensions"]["selectiveLogic"] == st_entry["selectiveLogic"]
        assert entry["insertion_order"] == st_entry["order"]
        assert entry["enabled"] is not st_entry["disable"]
        assert entry["comment"] == st_entry["comment"]
        assert entry["extensions"]["depth"] == st_entry["depth"]  # SillyTavern's fields under card names
        assert entry["position"] == ("before_char" if st_entry["position"] == 0 else "after_char")
    assert entries[1]["secondary_keys"] == ["storm", "night"]
    assert entries[1]["extensions"]["exclude_recursion"] is True
    assert entries[3]["extensions"]["x-familiar-test"]["weights"] == [0.5, None, 2]  # ST's extensions, spread
    # ... and the engine fires the same entries on either side.
    back = tmp_path / "back.json"
    back.write_text(json.dumps(card), encoding="utf-8")
    (tmp_path / "v3").mkdir()
    import_file(back, tmp_path / "v3" / "lorebook.toml")
    before = load_lorebook(tmp_path / "lorebook.toml")
    after = load_lorebook(tmp_path / "v3" / "lorebook.toml")
    for talk in (["Bob: Ember!"], ["a: the beacon", "b: storm at night"], ["Rook: tea?"], ["x: Captain Rook drowned"]):
        fire_before = [(m.entry.index, m.key, m.secondary) for m in LoreScanner(before).activate(talk)]
        fire_after = [(m.entry.index, m.key, m.secondary) for m in LoreScanner(after).activate(talk)]
        assert fire_before == fire_after


def test_a_card_exported_as_world_info_uses_sillytavern_names(tmp_path: Path) -> None:
    _exported, text = round_trip(tmp_path, "ccv2_card.json", "ccv2")
    world = export_lorebook(tomllib.loads(text), "st")
    lighthouse = world["entries"]["1"]
    assert lighthouse["key"] == ["lighthouse", "/\\bbeacons?\\b/i"]
    assert (lighthouse["order"], lighthouse["selectiveLogic"], lighthouse["position"], lighthouse["depth"]) == (
        250,
        3,
        4,
        2,
    )
    assert (lighthouse["caseSensitive"], lighthouse["matchWholeWords"], lighthouse["scanDepth"]) == (True, False, 2)
    assert lighthouse["group"] == "landmarks"
    assert world["entries"]["3"]["extensions"] == {"x_custom": {"a": [1, 2, None], "b": {"nested": True}}}
    assert world["entries"]["3"]["disable"] is True


def test_ids_that_clash_or_are_missing_get_fresh_uids() -> None:
    data = {
        "entries": [
            {"title": "a", "id": 3},
            {"title": "b", "id": 3},
            {"title": "c", "id": "x"},
            {"title": "d"},
            {"title": "e", "id": "0"},
        ]
    }
    world = export_lorebook(data, "st")
    assert {uid: entry["comment"] for uid, entry in world["entries"].items()} == {
        "3": "a",
        "1": "b",
        "2": "c",
        "4": "d",
        "0": "e",
    }
    assert all(str(entry["uid"]) == uid for uid, entry in world["entries"].items())


def test_lossy_values_are_kept_aside() -> None:
    imported = import_text(
        json.dumps(
            {
                "entries": [
                    {"keys": ["a"], "content": "x", "insertion_order": 1.5, "enabled": "yes", "extensions": {}},
                    {"keys": ["b"], "content": "\ud800 broken", "insertion_order": 100.0, "enabled": True},
                ]
            }
        )
    )
    first, second = imported.entries
    assert "priority" not in first
    assert first["extensions"]["card"] == {"insertion_order": 1.5, "enabled": "yes", "extensions": {}}
    assert second["content"] == "\ufffd broken"
    exported = export_lorebook({"entries": imported.entries}, "ccv2")
    assert exported["entries"][0]["insertion_order"] == 1.5
    assert exported["entries"][0]["enabled"] == "yes"
    assert exported["entries"][1]["insertion_order"] == 100


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not valid JSON: Expecting value (line 1, column 1)"),
        ("[1, 2]", "expected a JSON object, found a list"),
        ('{"name": "a book"}', "not a lorebook: expected SillyTavern World Info"),
        ('{"entries": 3}', "'entries' must be an object (World Info) or a list, found a number"),
        ('{"entries": {"1": "x"}}', "entry '1' is not an object"),
        ('{"entries": {"1": {"key": "dragon"}}}', "entry '1': 'key' must be a list of strings"),
        ('{"entries": {"1": {"key": ["a"], "content": 5}}}', "entry '1': 'content' must be a string, found a number"),
        ('{"entries": [{"keys": [1]}]}', "entries[0]: 'keys' must be a list of strings"),
        ('{"entries": [7]}', "entries[0] is not an object"),
        ('{"spec": "chara_card_v2", "data": {"name": "Wisp"}}', "this Character Card V2 has no character_book"),
        ('{"spec": "chara_card_v3", "data": {"character_book": {"name": "x"}}}', "without 'entries'"),
        ('{"spec": "chara_card_v2"}', "a chara_card_v2 card needs a 'data' object"),
        ('{"spec": "lorebook_v3", "data": {"entries": {}}}', "must be a list, found an object"),
        ('{"spec": "chara_card_v9", "data": {}}', "unknown spec 'chara_card_v9'"),
        ('{"data": {"character_book": {}}}', "looks like a character card without a 'spec'"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_bad_input_is_explained(text: str, message: str) -> None:
    with pytest.raises(LorebookFormatError) as caught:
        import_text(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_deeply_nested_extension_values_are_refused() -> None:
    nested: Any = "leaf"
    for _ in range(100):
        nested = {"n": nested}
    with pytest.raises(LorebookFormatError, match="nested more than 64 levels"):
        import_text(json.dumps({"entries": {"1": {"key": ["a"], "content": "", "deep": nested}}}))


def test_files_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(LorebookFormatError, match="no such file"):
        read_lorebook_file(tmp_path / "missing.json")
    with pytest.raises(LorebookFormatError, match="is a folder"):
        read_lorebook_file(tmp_path)
    png = tmp_path / "card.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n....")
    with pytest.raises(LorebookFormatError, match="PNG cards are not read"):
        read_lorebook_file(png)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"entries": {"1": {"key": ["café"]}}}'.encode("latin-1"))
    with pytest.raises(LorebookFormatError, match="not UTF-8"):
        read_lorebook_file(latin)
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(LorebookFormatError, match=r"^.*bad\.json: not valid JSON"):
        read_lorebook_file(bad)


def test_import_appends_or_replaces_and_a_failure_changes_nothing(tmp_path: Path) -> None:
    lorebook = tmp_path / "lorebook.toml"
    lorebook.write_text('# mine\nscan_depth = 3\n\n[[entries]]\ntitle = "Mine"\nkeys = ["mine"]\n', encoding="utf-8")
    report = import_file(SAMPLES / "lorebook_v3.json", lorebook)
    assert (len(report.imported.entries), report.replaced, len(report.book.entries)) == (2, 0, 3)
    assert report.book.scan_depth == 3  # appending leaves the book's own settings alone
    report = import_file(SAMPLES / "ccv2_card.json", lorebook, replace=True)
    assert (report.replaced, len(report.book.entries), report.book.scan_depth) == (3, 4, 6)
    text = lorebook.read_text(encoding="utf-8")
    assert text.startswith("# mine\n")
    assert "Mine" not in text
    bad = tmp_path / "bad.json"
    bad.write_text('{"entries": {"1": {"key": "x"}}}', encoding="utf-8")
    with pytest.raises(LorebookFormatError):
        import_file(bad, lorebook, replace=True)
    assert lorebook.read_text(encoding="utf-8") == text


def test_export_file_writes_json_atomically(tmp_path: Path) -> None:
    lorebook = tmp_path / "lorebook.toml"
    import_file(SAMPLES / "st_world_info.json", lorebook)
    target = tmp_path / "out" / "world.json"
    assert export_file(lorebook, target, "st") == 8
    assert kept(sample("st_world_info.json"), json.loads(target.read_text(encoding="utf-8"))) == []
    assert export_file(tmp_path / "none.toml", tmp_path / "empty.json", "ccv2") == 0
    assert json.loads((tmp_path / "empty.json").read_text("utf-8")) == {"extensions": {}, "entries": []}
    with pytest.raises(LorebookFormatError, match="unknown format 'yaml'"):
        export_file(lorebook, target, "yaml")
    assert sorted(p.name for p in target.parent.iterdir()) == ["world.json"]


def test_a_hand_written_book_exports_with_defaults() -> None:
    data = tomllib.loads(
        """
name = "Mine"
[[entries]]
title = "Owl"
keys = ["owl", "/owls?/i"]
secondary_keys = ["night"]
logic = "not_all"
content = "Owls."
priority = 7
whole_words = false
"""
    )
    world = export_lorebook(data, "st")["entries"]["0"]
    assert (world["key"], world["keysecondary"], world["selective"], world["selectiveLogic"]) == (
        ["owl", "/owls?/i"],
        ["night"],
        True,
        1,
    )
    assert (world["order"], world["matchWholeWords"], world["position"], world["depth"]) == (7, False, 0, 4)
    card = export_lorebook(data, "ccv3")["data"]
    assert card["name"] == "Mine"
    entry = card["entries"][0]
    assert (entry["use_regex"], entry["insertion_order"], entry["extensions"]["selectiveLogic"]) == (True, 7, 1)
    assert "id" not in entry


# -- properties ----------------------------------------------------------------------------------------
_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(st.characters(blacklist_categories=("Cs",))),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), inner, max_size=4),
        st.builds(lambda v: {"$json": v}, inner),
    ),
    max_leaves=15,
)


@settings(max_examples=200, deadline=None)
@given(_json)
def test_any_json_survives_toml(value: Any) -> None:
    document = LorebookDocument.parse("", Path("lorebook.toml"))
    document.add_entry({"title": "x", "extensions": {"st": {"value": to_toml(value)}}})
    stored = tomllib.loads(document.text())["entries"][0]["extensions"]["st"]["value"]
    back = from_toml(stored)
    assert json.dumps(back, sort_keys=True) == json.dumps(value, sort_keys=True)
    if isinstance(value, float) and math.isinf(value):
        assert back == value


@given(st.text())
def test_decorators_split_and_join_exactly(content: str) -> None:
    decorators, body = split_decorators(content)
    assert join_decorators(decorators, body) == content
    assert all(line.startswith("@@") for line in decorators[:-1])
