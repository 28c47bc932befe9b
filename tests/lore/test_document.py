"""Round-trip editing of lorebook.toml: comments, order and what [extensions] tables hold survive every edit."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.lore.book import LorebookError, load_lorebook
from app.lore.document import NEW_FILE_HEADER, LorebookDocument

HAND_WRITTEN = """\
# Saltmere lore, written by hand.
scan_depth = 6  # the last six turns

[extensions]
mine = { colour = "green" }
future_option = "kept"

[[entries]]
# The dragon everyone talks about.
title = "Ember"  # keep this comment
keys = ["Ember", "red dragon"]
content = \"\"\"
Ember is an old red dragon.
She hoards sea charts.\"\"\"

[entries.extensions]
favourite_food = "sardines"

# Below: the lighthouse.
[[entries]]
title = "Lighthouse"
keys = ["lighthouse"]
priority = 250

[entries.extensions.st]
position = 4
"""


@pytest.fixture
def lorebook(tmp_path: Path) -> Path:
    path = tmp_path / "lorebook.toml"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    return path


def test_listing_reads_plain_values(lorebook: Path) -> None:
    document = LorebookDocument.load(lorebook)
    assert len(document) == 2
    ember, lighthouse = document.entries()
    assert ember == {
        "title": "Ember",
        "keys": ["Ember", "red dragon"],
        "content": "Ember is an old red dragon.\nShe hoards sea charts.",
        "extensions": {"favourite_food": "sardines"},
    }
    assert lighthouse["extensions"] == {"st": {"position": 4}}
    assert document.entry(1)["priority"] == 250
    assert document.data()["extensions"]["future_option"] == "kept"


def test_editing_keeps_comments_order_and_unknown_keys(lorebook: Path) -> None:
    document = LorebookDocument.load(lorebook)
    document.update_entry(0, {"priority": 300, "keys": ["Ember", "red dragon", "wyrm"], "title": "Ember (dragon)"})
    document.update_entry(1, {"case_sensitive": True, "priority": None})
    document.save()
    text = lorebook.read_text(encoding="utf-8")
    for kept in (
        "# Saltmere lore, written by hand.",
        "scan_depth = 6  # the last six turns",
        'future_option = "kept"',
        'mine = { colour = "green" }',
        "# The dragon everyone talks about.",
        'title = "Ember (dragon)"  # keep this comment',
        'favourite_food = "sardines"',
        "# Below: the lighthouse.",
        "[entries.extensions.st]",
    ):
        assert kept in text
    assert 'keys = ["Ember", "red dragon", "wyrm"]' in text
    # A new key lands after the entry's last value, not after the comment that introduces the next entry.
    assert text.index("priority = 300") < text.index("# Below: the lighthouse.")
    assert "priority = 250" not in text
    lighthouse = text[text.index('title = "Lighthouse"') :]
    assert lighthouse.index("case_sensitive = true") < lighthouse.index("[entries.extensions.st]")
    book = load_lorebook(lorebook)
    assert book.entries[0].priority == 300
    assert book.entries[0].keys == ("Ember", "red dragon", "wyrm")
    assert (book.entries[1].priority, book.entries[1].case_sensitive) == (100, True)


def test_add_and_remove_entries(lorebook: Path) -> None:
    document = LorebookDocument.load(lorebook)
    index = document.add_entry(
        {
            "content": "The kettle sings.\nIn a minor key.",
            "keys": ["kettle"],
            "title": "Kettle",
            "enabled": False,
            "scan_depth": None,  # left out
            "extensions": {"st": {"position": 0, "role": {"$json": "null"}}, "decorators": ["@@depth 2"]},
        }
    )
    assert index == 2
    document.remove_entry(0)
    book = document.save()
    assert [e.title for e in book.entries] == ["Lighthouse", "Kettle"]
    text = lorebook.read_text(encoding="utf-8")
    assert "Ember" not in text
    assert "# Saltmere lore, written by hand." in text
    kettle = text[text.index('title = "Kettle"') :]
    assert kettle.startswith('title = "Kettle"\nkeys = ["kettle"]\nenabled = false\ncontent = """The kettle sings.\n')
    assert '\n\n[[entries]]\ntitle = "Kettle"' in text  # a blank line before the new entry
    assert 'role = {"$json" = "null"}' in text  # small marker tables stay inline
    data = tomllib.loads(text)["entries"][1]
    assert data["extensions"] == {"decorators": ["@@depth 2"], "st": {"position": 0, "role": {"$json": "null"}}}
    assert document.clear_entries() == 2
    assert document.book().entries == ()


def test_a_bad_edit_is_refused_and_changes_nothing(lorebook: Path) -> None:
    document = LorebookDocument.load(lorebook)
    with pytest.raises(LorebookError, match=r"entry 1 \"Ember\", key 'priority': expected a whole number"):
        document.update_entry(0, {"priority": "high"})
    with pytest.raises(LorebookError, match=r"entry 3 \"x\", key 'logic'"):
        document.add_entry({"title": "x", "logic": "sometimes"})
    with pytest.raises(
        LorebookError, match=r"entry 2 \"Lighthouse\", key 'kyes': unknown key \(did you mean 'keys'\?\)"
    ):
        document.update_entry(1, {"kyes": ["lamp"]})
    with pytest.raises(LorebookError, match=r"entry 3, key 'x_note': unknown key"):
        document.add_entry({"x_note": "goes under extensions"})
    with pytest.raises(LorebookError, match=r"no such entry \(the book has 2\)"):
        document.update_entry(5, {"title": "x"})
    with pytest.raises(LorebookError, match="no such entry"):
        document.remove_entry(-1)
    with pytest.raises(LorebookError, match="scan_depth"):
        document.set_fields({"scan_depth": 5000})
    assert document.text() == HAND_WRITTEN
    assert lorebook.read_text(encoding="utf-8") == HAND_WRITTEN


def test_a_file_changed_on_disk_is_not_overwritten(lorebook: Path) -> None:
    document = LorebookDocument.load(lorebook)
    document.update_entry(0, {"priority": 1})
    lorebook.write_text(HAND_WRITTEN + "\n# edited by hand meanwhile\n", encoding="utf-8")
    with pytest.raises(LorebookError, match="changed on disk since it was opened; nothing was written"):
        document.save()
    assert lorebook.read_text(encoding="utf-8").endswith("# edited by hand meanwhile\n")
    document.save(force=True)
    assert load_lorebook(lorebook).entries[0].priority == 1
    document.update_entry(0, {"priority": 2})
    document.save()  # its own save is not a change by someone else
    assert load_lorebook(lorebook).entries[0].priority == 2


def test_saving_is_atomic_and_leaves_no_temporary_file(lorebook: Path) -> None:
    document = LorebookDocument.load(lorebook)
    document.update_entry(1, {"title": "Beacon"})
    document.save()
    assert sorted(p.name for p in lorebook.parent.iterdir()) == ["lorebook.toml"]


def test_a_new_file_gets_a_header(tmp_path: Path) -> None:
    path = tmp_path / "familiars" / "new" / "lorebook.toml"
    document = LorebookDocument.load(path)
    assert len(document) == 0
    document.add_entry({"title": "Owl", "keys": ["owl"]})
    path.parent.mkdir(parents=True)
    path.write_text("# someone else made it\n", encoding="utf-8")
    with pytest.raises(LorebookError, match="changed on disk"):
        document.save()
    path.unlink()
    document.save()
    text = path.read_text(encoding="utf-8")
    assert text.startswith(NEW_FILE_HEADER)
    assert load_lorebook(path).entries[0].keys == ("owl",)


def test_entries_written_inline_can_be_edited(tmp_path: Path) -> None:
    path = tmp_path / "lorebook.toml"
    path.write_text('entries = [{ title = "Owl", keys = ["owl"] }]  # inline\n', encoding="utf-8")
    document = LorebookDocument.load(path)
    document.update_entry(0, {"content": "Two lines\nof owl lore", "priority": 5})
    document.add_entry({"title": "Moon", "keys": ["moon"]})
    book = document.save()
    assert [(e.title, e.priority, e.content) for e in book.entries] == [
        ("Owl", 5, "Two lines\nof owl lore"),
        ("Moon", 100, ""),
    ]
    assert "# inline" in path.read_text(encoding="utf-8")


def test_book_fields_and_extensions(lorebook: Path) -> None:
    document = LorebookDocument.load(lorebook)
    document.set_fields({"name": "Saltmere", "token_budget": 400, "scan_depth": None})
    document.set_extension("st", {"originalData": {"name": "x", "entries": [{"id": 1}, {"id": 2}]}})
    document.set_extension("card", None)
    book = document.save()
    assert book.token_budget == 400
    data = tomllib.loads(lorebook.read_text(encoding="utf-8"))
    assert data["name"] == "Saltmere"
    assert "scan_depth" not in data
    assert data["extensions"] == {
        "mine": {"colour": "green"},
        "future_option": "kept",
        "st": {"originalData": {"name": "x", "entries": [{"id": 1}, {"id": 2}]}},
    }
    document.set_extension("st", None)
    document.save()
    assert tomllib.loads(lorebook.read_text(encoding="utf-8"))["extensions"] == {
        "mine": {"colour": "green"},
        "future_option": "kept",
    }
    with pytest.raises(LorebookError, match="one by one"):
        document.set_fields({"entries": []})


def test_a_file_that_does_not_validate_is_not_opened(tmp_path: Path) -> None:
    path = tmp_path / "lorebook.toml"
    path.write_text('[[entries]]\ntitle = "a"\npriority = "x"\n', encoding="utf-8")
    with pytest.raises(LorebookError, match="line 3"):
        LorebookDocument.load(path)


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_plain = st.recursive(
    st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), _text),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    title=_text,
    content=_text,
    keys=st.lists(_text, max_size=4),
    priority=st.integers(-(2**63), 2**63 - 1),
    extra=st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k.isidentifier()), _plain, max_size=3),
)
def test_any_values_survive_a_save(
    tmp_path: Path, title: str, content: str, keys: list[str], priority: int, extra: dict[str, Any]
) -> None:
    path = tmp_path / "lorebook.toml"
    path.unlink(missing_ok=True)
    document = LorebookDocument.load(path)
    fields = {"title": title, "content": content, "keys": keys, "priority": priority, "extensions": {"st": extra}}
    document.add_entry(fields)
    document.add_entry({"title": "second", "content": content})
    document.update_entry(1, {"keys": keys, "extensions": {"x": extra}})
    document.save()
    entries = tomllib.loads(path.read_text(encoding="utf-8"))["entries"]
    assert entries[0] == fields
    assert entries[1] == {"title": "second", "content": content, "keys": keys, "extensions": {"x": extra}}


def test_adding_many_entries_is_all_or_nothing(lorebook: Path) -> None:
    document = LorebookDocument.load(lorebook)
    with pytest.raises(LorebookError, match=r"entry 4 \"bad\", key 'priority'"):
        document.add_entries([{"title": "ok", "keys": ["a"]}, {"title": "bad", "priority": 1.5}])
    assert len(document) == 2
    assert document.add_entries([{"title": f"n{i}", "keys": [f"k{i}"]} for i in range(50)]) == list(range(2, 52))
    assert len(document) == 52
    document.update_entry(51, {"priority": 7})  # edits work on entries added in bulk
    book = document.save()
    assert (len(book.entries), book.entries[51].priority, book.entries[51].title) == (52, 7, "n49")
    assert "# Below: the lighthouse." in lorebook.read_text(encoding="utf-8")


def test_emptying_a_book_keeps_the_rest_even_when_text_looks_like_a_header(tmp_path: Path) -> None:
    path = tmp_path / "lorebook.toml"
    tricky = HAND_WRITTEN.replace("She hoards sea charts.", "She hoards sea charts.\n[[entries]]\n[extensions]")
    more = '\n[extensions.more]\nafter = "the entries"\n'
    for text in (HAND_WRITTEN + more, tricky + more):
        path.write_text(text, encoding="utf-8")
        document = LorebookDocument.load(path)
        assert document.clear_entries() == 2
        document.add_entry({"title": "Only", "keys": ["only"]})
        book = document.save()
        assert [e.title for e in book.entries] == ["Only"]
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert data["extensions"] == {
            "mine": {"colour": "green"},
            "future_option": "kept",
            "more": {"after": "the entries"},
        }
        assert data["scan_depth"] == 6
        assert path.read_text(encoding="utf-8").startswith("# Saltmere lore, written by hand.\n")


# -- speed: an edit hands tomlkit only the entry it changes ----------------------------------------------------
def big_book(count: int) -> str:
    head = "# A big book, by hand.\nscan_depth = 8\n\n"
    body = "".join(
        f'[[entries]]\n# entry {i}\ntitle = "E{i}"\nkeys = ["k{i}", "key {i}"]\ncontent = """Lore {i}.\nMore."""\n\n'
        for i in range(count)
    )
    return head + body


def test_one_edit_in_a_big_book_parses_and_writes_only_that_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tomlkit parses ~600 entries a second: handing it the whole file (as before) cost over a second per save
    at 500 entries. Now it sees only the edited entry's own text, and every other byte stays as it was."""
    path = tmp_path / "lorebook.toml"
    text = big_book(500)
    path.write_text(text, encoding="utf-8")
    parsed: list[int] = []
    real = tomlkit.parse
    monkeypatch.setattr(tomlkit, "parse", lambda source: parsed.append(len(source)) or real(source))
    document = LorebookDocument.load(path)
    document.update_entry(250, {"priority": 7, "content": "Changed."})
    book = document.save()
    assert sum(parsed) < len(text) // 100
    written = path.read_text(encoding="utf-8")
    old = '[[entries]]\n# entry 250\ntitle = "E250"\nkeys = ["k250", "key 250"]\ncontent = """Lore 250.\nMore."""\n'
    new = '[[entries]]\n# entry 250\ntitle = "E250"\nkeys = ["k250", "key 250"]\ncontent = "Changed."\npriority = 7\n'
    assert written == text.replace(old, new)
    assert book == load_lorebook(path)  # the book kept edit by edit is the book the file holds


def test_removing_and_reordering_move_whole_entries_with_their_comments(tmp_path: Path) -> None:
    path = tmp_path / "lorebook.toml"
    path.write_text(big_book(4), encoding="utf-8")
    document = LorebookDocument.load(path)
    document.remove_entry(1)
    document.reorder([2, 0, 1])
    document.save()
    written = path.read_text(encoding="utf-8")
    assert [e.title for e in load_lorebook(path).entries] == ["E3", "E0", "E2"]
    assert written.index("# entry 3\n") < written.index("# entry 0\n") < written.index("# entry 2\n")
    assert "E1" not in written
    assert written.startswith("# A big book, by hand.\nscan_depth = 8\n")


def test_a_line_that_looks_like_a_header_inside_a_string_is_not_a_cut(tmp_path: Path) -> None:
    path = tmp_path / "lorebook.toml"
    tricky = (
        '[[entries]]\ntitle = "A"\ncontent = """\n[[entries]]\n[extensions]\nnot a header"""\n\n'
        '[[entries]]\ntitle = "B"\ncontent = """\n[extensions]\nnor this"""\n\n'
        '[[entries]]\ntitle = "C"\n'
    )
    path.write_text(tricky, encoding="utf-8")
    document = LorebookDocument.load(path)
    document.update_entry(1, {"priority": 3})
    document.remove_entry(0)
    book = document.save()
    assert [(e.title, e.priority) for e in book.entries] == [("B", 3), ("C", 100)]
    assert load_lorebook(path).entries[0].content == "[extensions]\nnor this"
    assert book == load_lorebook(path)
