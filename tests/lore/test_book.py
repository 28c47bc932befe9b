"""The lorebook engine: the strict loader of lorebook.toml and the activation scan."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.config.errors import ConfigError
from app.lore.book import LOGICS, Lorebook, LorebookError, LoreEntry, load_lorebook, parse_lorebook
from app.lore.errors import LoreError
from app.lore.keys import compile_regex_key, key_problem
from app.lore.scanner import CONSTANT_KEY, LoreScanner, ScannerCache

PATH = Path("lorebook.toml")


def book_of(text: str) -> Lorebook:
    return parse_lorebook(text, PATH)


def fired(book: Lorebook, *recent: str) -> list[tuple[str, str, str | None]]:
    return [(m.entry.title, m.key, m.secondary) for m in LoreScanner(book).activate(list(recent))]


def titles(book: Lorebook, *recent: str) -> list[str]:
    return [title for title, _key, _secondary in fired(book, *recent)]


def one(keys: str, extra: str = "", top: str = "") -> Lorebook:
    return book_of(f'{top}\n[[entries]]\ntitle = "E"\nkeys = {keys}\ncontent = "lore"\n{extra}\n')


# -- loading -------------------------------------------------------------------------------------------
def test_defaults_and_every_field(tmp_path: Path) -> None:
    path = tmp_path / "lorebook.toml"
    path.write_text(
        """# the owner's comment
scan_depth = 4
case_sensitive = true
whole_words = false
token_budget = 300
max_entries = 5
name = "Saltmere"
description = "A harbour town"

[extensions]
anything = { goes = [1, 2] }
future_option = "kept here"

[[entries]]
title = "Ember"
keys = ["Ember", "/drag(on|ons)/i"]
secondary_keys = ["awake"]
logic = "not_any"
content = "Ember is a dragon."
priority = 250
constant = false
enabled = true
case_sensitive = false
whole_words = true
scan_depth = 2
id = "ember-1"

[entries.extensions]
colour = "red"

[entries.extensions.st]
position = 4

[[entries]]
title = "Bare"
""",
        encoding="utf-8",
    )
    book = load_lorebook(path)
    assert (book.scan_depth, book.case_sensitive, book.whole_words) == (4, True, False)
    assert (book.token_budget, book.max_entries, book.problems) == (300, 5, ())
    ember, bare = book.entries
    assert ember == LoreEntry(
        index=0,
        title="Ember",
        keys=("Ember", "/drag(on|ons)/i"),
        secondary_keys=("awake",),
        logic="not_any",
        content="Ember is a dragon.",
        priority=250,
        constant=False,
        enabled=True,
        case_sensitive=False,
        whole_words=True,
        scan_depth=2,
    )
    assert bare == LoreEntry(1, "Bare", (), (), "and_any", "", 100, False, True, None, None, None)
    assert len(book.digest) == 64
    assert book_of("").entries == ()
    assert book_of("").scan_depth == 10


def test_a_missing_file_is_an_empty_book(tmp_path: Path) -> None:
    book = load_lorebook(tmp_path / "nothing.toml")
    assert book.entries == ()
    assert fired(book, "anything") == []


@pytest.mark.parametrize(
    ("text", "line", "entry", "key", "words"),
    [
        ('[[entries]]\ntitle = "a"\n\n[[entries]]\ntitle = "b"\npriority = "high"\n', 6, 'entry 2 "b"', "priority",
         "expected a whole number, got string"),
        ('[[entries]]\nkeys = "dragon"\n', 2, "entry 1", "keys", "expected a list of strings, got string"),
        ("[[entries]]\nkeys = [1, 2]\n", 2, "entry 1", "keys", "expected a list of strings, found a whole number"),
        ('[[entries]]\nlogic = "or"\n', 2, "entry 1", "logic", "expected one of and_any, and_all, not_any, not_all"),
        ("[[entries]]\nconstant = 1\n", 2, "entry 1", "constant", "expected true or false, got whole number"),
        ("[[entries]]\nscan_depth = -1\n", 2, "entry 1", "scan_depth", "-1 is out of range (0 to 1000)"),
        ("[[entries]]\nid = 1.5\n", 2, "entry 1", "id", "expected a whole number or a string, got number"),
        ("[[entries]]\ncase_sensitive = 'yes'\n", 2, "entry 1", "case_sensitive", "expected true or false"),
        ('[[entries]]\n"priority" = true\n', 2, "entry 1", "priority", "expected a whole number, got true/false"),
        ("[[entries]]\nextensions = 3\n", 2, "entry 1", "extensions", "expected a table, got whole number"),
        ("# c\nscan_depth = 5000\n", 2, None, "scan_depth", "5000 is out of range (0 to 1000)"),
        ("whole_words = 'no'\n", 1, None, "whole_words", "expected true or false, got string"),
        ("entries = 3\n", 1, None, "entries", "expected [[entries]] tables"),
        ('entries = [{ title = "a" }, { title = 7 }]\n', 1, "entry 2", "title", "expected a string, got whole number"),
        ("[extensions]\n[[entries]]\ntitle = 'x'\n[[entries]]\n[entries.extensions]\n[[entries]]\ntitle = 3\n", 7,
         "entry 3", "title", "expected a string"),
        # Unknown keys: a misspelt field must not leave an entry silently unable to fire.
        ('[[entries]]\ntitle = "Ember"\nkyes = ["dragon"]\n', 3, 'entry 1 "Ember"', "kyes",
         "unknown key (did you mean 'keys'?); keep anything else under [entries.extensions]"),
        ('[[entries]]\ntitle = "a"\n[[entries]]\ntitle = "Lighthouse"\n\n[entries.extension]\nx = 1\n', 6,
         'entry 2 "Lighthouse"', "extension", "unknown key (did you mean 'extensions'?)"),
        ("# mine\nscan_dept = 4\n", 2, None, "scan_dept", "unknown key (did you mean 'scan_depth'?)"),
        ("[[entries]]\nfavourite_food = 'sardines'\n", 2, "entry 1", "favourite_food",
         "unknown key (known keys here: case_sensitive, constant, content, cooldown, delay, delay_until_recursion,"),
    ],
)  # fmt: skip
def test_wrong_types_and_unknown_keys_name_the_file_line_entry_and_key(
    text: str, line: int, entry: str | None, key: str, words: str
) -> None:
    with pytest.raises(LorebookError) as caught:
        book_of(text)
    error = caught.value
    assert (error.path, error.line, error.key) == (PATH, line, key)
    assert words in error.problem
    where = f"lorebook.toml, line {line}" + (f", {entry}" if entry else "")
    assert str(error).startswith(f"{where}, key '{key}': ")
    assert isinstance(error, ConfigError)
    assert isinstance(error, LoreError)


def test_a_long_title_is_shortened_on_one_line_in_errors() -> None:
    escaped = "The\\nlong " + "x" * 80  # a line break, written as TOML writes it
    with pytest.raises(LorebookError) as caught:
        book_of(f'[[entries]]\ntitle = "{escaped}"\npriority = "high"\n')
    assert f"entry 1 \"The long {'x' * 50}…\", key 'priority'" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_toml_syntax_errors_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(LorebookError, match=r"line 3: not valid TOML") as caught:
        book_of('[[entries]]\ntitle = "a"\nkeys = [\n')
    assert caught.value.line == 3
    with pytest.raises(LorebookError, match="nested too deeply"):
        book_of("a = " + "[" * 50_000)
    with pytest.raises(LorebookError, match="too large"):
        book_of("# " + "x" * (9 * 1024 * 1024))
    bad = tmp_path / "lorebook.toml"
    bad.write_bytes(b'title = "ok"\n\xff\xfe')
    with pytest.raises(LorebookError, match="line 2: not valid UTF-8"):
        load_lorebook(bad)
    bad.write_bytes(b'\xef\xbb\xbf[[entries]]\ntitle = "with a BOM"\n')
    assert load_lorebook(bad).entries[0].title == "with a BOM"
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(LorebookError, match="cannot be read"):
        load_lorebook(folder)


def test_broken_keys_are_problems_not_errors() -> None:
    book = book_of(
        r"""
[[entries]]
title = "Broken"
keys = ["/[unclosed/", "/(a+)+$/", "", "   ", "/x{201}/", "fine"]
secondary_keys = ["/(?<=a+)b/"]
logic = "not_any"  # a broken secondary key is never present

[[entries]]
title = "Long"
keys = ["/"""
        + "a" * 201
        + """/"]
"""
    )
    problems = [(p.index, p.title, p.key, p.message) for p in book.problems]
    assert [p[2] for p in problems] == ["/[unclosed/", "", "   ", "/(?<=a+)b/", "/" + "a" * 201 + "/"]
    assert problems[0][3].startswith("invalid regex: unterminated character set")
    assert problems[1][3] == problems[2][3] == "an empty key never matches"
    assert problems[3][3].startswith("invalid regex: look-behind requires fixed-width pattern")
    assert problems[4][:2] == (1, "Long")
    assert problems[4][3] == "regex longer than 200 characters"
    assert titles(book, "x: fine") == ["Broken"]  # everything else still works
    started = time.perf_counter()
    assert titles(book, "x: " + "a" * 40 + "!") == []  # the catastrophic key runs, in linear time
    assert titles(book, "x: " + "a" * 40) == ["Broken"]
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    ("regex", "text", "fires"),
    [
        (r"/(a+)+b/", "a" * 5000, False),
        (r"/(a*)*b/", "a" * 5000, False),
        (r"/(\w+\s?)+$/", "ab " * 1500 + "!", False),
        (r"/(?:x|(?:ab+)+)+y/", "ab" * 2900, False),
        (r"/((a+)|b){2,}c/", "ab" * 2900, False),
        (r"/(a{1,50})+$/", "a" * 5000 + "!", False),
        (r"/(a|a)*$/", "a" * 5000 + "!", True),  # it matches the empty string at the end, as in re
        (r"/^(a|a)*$/", "a" * 5000 + "!", False),
    ],
)
def test_nested_unbounded_repetition_is_matched_in_bounded_time(regex: str, text: str, fires: bool) -> None:
    """These take exponential time in re (and were refused for it); RE2 matches them in linear time."""
    assert key_problem(regex) is None
    started = time.perf_counter()
    assert titles(one(f"['{regex}']"), f"x: {text}") == (["E"] if fires else [])
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    "regex", [r"/(a++)+b/", r"/(?>a+)+b/", r"/\b(dragon|wyrm)s?\b/i", r"/(ab){2,3}c+/", r"/(?:a{2}b)+/"]
)
def test_safe_repetition_is_accepted(regex: str) -> None:
    assert key_problem(regex) is None


# -- matching ------------------------------------------------------------------------------------------
def test_whole_words_by_default_and_substrings_on_request() -> None:
    book = one('["cat"]')
    assert titles(book, "Alice: a cat.") == ["E"]
    assert titles(book, "Alice: the Cat's toy") == ["E"]
    assert titles(book, "Alice: concatenate") == []
    assert titles(book, "Alice: cats") == []
    assert titles(one('["cat"]', "whole_words = false"), "Alice: concatenate") == ["E"]
    assert titles(one('["cat"]', top="whole_words = false"), "Alice: concatenate") == ["E"]
    assert titles(one('["cat"]', "whole_words = true", top="whole_words = false"), "Alice: concatenate") == []


def test_keys_with_punctuation_at_an_end() -> None:
    book = one('["C++", "#general", ".NET", "Mr. Smith"]')
    assert fired(book, "x: I write C++!") == [("E", "C++", None)]
    assert fired(book, "x: C++11 is old") == [("E", "C++", None)]
    assert fired(book, "x: see #general") == [("E", "#general", None)]
    assert fired(book, "x: see #generally") == []
    assert fired(book, "x: ASP.NET") == [("E", ".NET", None)]  # no boundary needed before a '.'
    assert fired(book, "x: ask mr.  smith") == [("E", "Mr. Smith", None)]
    assert fired(book, "x: ask mr. smithers") == []


def test_cjk_and_other_scripts_without_spaces() -> None:
    book = one('["東京", "iPhone", "서울", "กรุงเทพ"]')
    assert fired(book, "私は東京に住んでいる") == [("E", "東京", None)]
    assert fired(book, "iPhone買った") == [("E", "iPhone", None)]
    assert fired(book, "저는 서울에서 왔어요") == [("E", "서울", None)]
    assert fired(book, "ฉันอยู่กรุงเทพมหานคร") == [("E", "กรุงเทพ", None)]
    assert fired(book, "iPhones") == []


def test_whitespace_in_keys_matches_any_whitespace() -> None:
    book = one('["red dragon"]')
    assert titles(book, "Bob: a RED\n   dragon!") == ["E"]
    assert titles(book, "Bob: a red-dragon") == []
    assert titles(book, "Bob: red dragonfly") == []


def test_case_sensitivity_book_wide_and_per_entry() -> None:
    assert titles(one('["Rook"]'), "x: a rook") == ["E"]
    assert titles(one('["Rook"]', top="case_sensitive = true"), "x: a rook") == []
    assert titles(one('["Rook"]', top="case_sensitive = true"), "x: Rook") == ["E"]
    assert titles(one('["Rook"]', "case_sensitive = false", top="case_sensitive = true"), "x: a rook") == ["E"]
    assert titles(one('["Rook"]', "case_sensitive = true"), "x: ROOK") == []
    assert titles(one('["rook tower"]', "case_sensitive = true"), "x: rook  tower") == ["E"]


def test_regex_keys_obey_their_own_flags() -> None:
    book = one(r'["/\\bdrag(?:on|ons)\\b/"]', "case_sensitive = false")
    assert titles(book, "x: dragons") == ["E"]
    assert titles(book, "x: Dragons") == []  # no i flag: case-sensitive whatever the entry says
    assert titles(one(r'["/\\bdragons?\\b/i"]'), "x: DRAGON") == ["E"]
    assert titles(one(r'["/drag/"]'), "x: dragonfly") == ["E"]  # whole_words does not apply to a regex
    assert titles(one(r'["/^Alice:.*secret/m"]'), "Bob: hi\nAlice: a secret") == ["E"]
    assert titles(one(r'["/^Alice:.*secret/"]'), "Bob: hi\nAlice: a secret") == []
    assert titles(one(r'["/a.b/s"]'), "x: a\nb") == ["E"]
    assert titles(one(r'["/a.b/"]'), "x: a\nb") == []
    assert titles(one(r'["/a b # the x flag/x"]'), "x: ab") == ["E"]
    assert titles(one(r'["/dragon/gu"]'), "x: dragon") == ["E"]  # g and u change nothing here
    assert titles(one(r'["/(?<who>Ann|Bo) waves at \\k<who>/"]'), "x: Bo waves at Bo") == ["E"]
    assert titles(one(r'["/(?<who>Ann|Bo) waves at \\k<who>/"]'), "x: Bo waves at Ann") == []
    assert titles(one('["/usr/bin"]', "whole_words = false"), "x: ls /usr/bin") == ["E"]  # not a flag set: literal
    assert compile_regex_key("/usr/bin") is None
    assert titles(one(r'["/kelvin/i"]'), "x: \u212aELVIN") == ["E"]  # the Kelvin sign folds to k
    assert titles(one(r'["/this/i"]'), "x: TH\u0131S") == ["E"]  # dotless i matches i under IGNORECASE
    assert titles(one(r'["/mass/i"]'), "x: MA\u017fS") == ["E"]  # and long s matches s


def test_a_regex_can_target_one_speaker() -> None:
    book = one(r'["/^Alice: .*\\bdoor\\b/"]')
    assert titles(book, "Bob: the door") == []
    assert titles(book, "Alice: open the door") == ["E"]


@pytest.mark.parametrize(
    ("logic", "text", "expected"),
    [
        ("and_any", "tea", None),
        ("and_any", "tea with honey", "honey"),
        ("and_any", "tea mint honey", "mint"),
        ("and_all", "tea with honey", None),
        ("and_all", "tea with honey and mint", "mint"),
        ("not_any", "tea", "-"),
        ("not_any", "tea with honey", None),
        ("not_all", "tea", "mint"),
        ("not_all", "tea with mint", "honey"),
        ("not_all", "tea with mint and honey", None),
    ],
)
def test_secondary_logic(logic: str, text: str, expected: str | None) -> None:
    book = one('["tea"]', f'secondary_keys = ["mint", "honey"]\nlogic = "{logic}"')
    result = fired(book, f"x: {text}")
    if expected is None:
        assert result == []
    else:
        assert result == [("E", "tea", None if expected == "-" else expected)]


def test_logic_does_nothing_without_secondary_keys() -> None:
    for logic in LOGICS:
        assert titles(one('["tea"]', f'logic = "{logic}"'), "x: tea") == ["E"]


def test_secondary_keys_alone_never_fire_an_entry() -> None:
    assert titles(one('["tea"]', 'secondary_keys = ["mint"]'), "x: mint") == []


def test_each_entry_scans_its_own_depth() -> None:
    book = book_of(
        """
scan_depth = 3
[[entries]]
title = "Book depth"
keys = ["lantern"]
[[entries]]
title = "Shallow"
keys = ["lantern"]
scan_depth = 1
[[entries]]
title = "Deep"
keys = ["lantern"]
scan_depth = 6
[[entries]]
title = "Blind"
keys = ["lantern"]
scan_depth = 0
"""
    )
    turns = ["a: lantern", "b: -", "c: -", "d: -", "e: -"]
    assert titles(book, *turns) == ["Deep"]
    assert titles(book, *turns[2:], "a: lantern", "f: -", "g: -") == ["Book depth", "Deep"]
    assert titles(book, *turns, "a: lantern") == ["Book depth", "Shallow", "Deep"]
    assert titles(book) == []


def test_secondary_keys_look_as_deep_as_their_entry() -> None:
    book = one('["tea"]', 'secondary_keys = ["mint"]\nscan_depth = 2')
    assert titles(book, "a: mint", "b: x", "c: tea") == []
    assert titles(book, "a: mint", "c: tea") == ["E"]


def test_constant_disabled_and_ordering() -> None:
    book = book_of(
        """
[[entries]]
title = "Low"
keys = ["owl"]
priority = 10
[[entries]]
title = "Always"
constant = true
priority = 50
[[entries]]
title = "Off"
keys = ["owl"]
enabled = false
priority = 999
[[entries]]
title = "Off constant"
constant = true
enabled = false
[[entries]]
title = "High"
keys = ["moon", "owl"]
priority = 200
[[entries]]
title = "Also low"
keys = ["owl"]
priority = 10
"""
    )
    assert fired(book, "x: the owl and the moon") == [
        ("High", "moon", None),
        ("Always", CONSTANT_KEY, None),
        ("Low", "owl", None),
        ("Also low", "owl", None),
    ]
    assert titles(book, "x: nothing") == ["Always"]
    assert titles(book) == ["Always"]


def test_the_first_key_in_order_is_reported() -> None:
    book = one('["wyrm", "dragon"]')
    assert fired(book, "a: wyrm", "b: dragon") == [("E", "wyrm", None)]


def test_texts_are_scanned_oldest_first_and_any_can_fire() -> None:
    book = one('["owl"]', "scan_depth = 2")
    assert titles(book, "a: owl", "b: x", "c: y") == []
    assert titles(book, "a: owl", "b: x") == ["E"]


def test_a_scanner_is_reusable_and_the_cache_keys_on_the_digest() -> None:
    text = '[[entries]]\ntitle = "E"\nkeys = ["owl"]\n'
    cache = ScannerCache(size=2)
    first = cache.scanner(book_of(text))
    assert cache.scanner(book_of(text)) is first
    other = cache.scanner(book_of(text + "\n# edited\n"))
    assert other is not first
    cache.scanner(book_of(text + "# a third\n"))
    assert cache.scanner(book_of(text)) is not first  # evicted (size 2)
    for _ in range(3):
        assert [m.entry.title for m in first.activate(["x: owl"])] == ["E"]


def test_hostile_input_stays_fast() -> None:
    keys = ", ".join(f'"k{i}"' for i in range(300))
    book = book_of(f'[[entries]]\ntitle = "many"\nkeys = [{keys}, "/(a|aa)b/", "/x+y/"]\nwhole_words = false\n')
    started = time.perf_counter()
    assert titles(book, "x" * 200_000, "a" * 100_000 + "k7", "\x00" * 1000, "") == []  # only 6000 chars are read
    assert time.perf_counter() - started < 2.0
    assert titles(book, "a" * 5000 + " k7") == ["many"]


# -- properties ----------------------------------------------------------------------------------------
_ALPHABET = "aAbB İı_-.東 \n\t\u00a0\x1c"
_REGEXES = ["/ab/i", "/a b/", "/(?:ab)+/", "/^b/m", r"/\bab\b/", "/Ab/", "/a.b/s", "/İ/i", "/ıb/i", "/[ab]{2}/"]
_keys = st.lists(st.one_of(st.text(_ALPHABET, max_size=5), st.sampled_from(_REGEXES)), max_size=3)
_Raw = tuple[
    list[str], list[str], str, int, bool, bool, bool | None, bool | None, int | None
]  # keys, secondary, logic, priority, constant, enabled, cs, ww, depth
_entries = st.lists(
    st.tuples(
        _keys,
        _keys,
        st.sampled_from(LOGICS),
        st.integers(0, 3),
        st.booleans(),
        st.booleans(),
        st.sampled_from([None, True, False]),
        st.sampled_from([None, True, False]),
        st.sampled_from([None, 0, 1, 2, 5]),
    ),
    max_size=6,
)


def _book(raw: list[_Raw]) -> Lorebook:
    entries = tuple(
        LoreEntry(i, f"e{i}", tuple(k), tuple(s), logic, "", prio, const, enabled, cs, ww, depth)
        for i, (k, s, logic, prio, const, enabled, cs, ww, depth) in enumerate(raw)
    )
    return Lorebook(entries, 3, False, True, None, None, (), "digest")


def _is_word(char: str) -> bool:
    return (char.isalnum() or char == "_") and char != "東"


def _reference_hit(key: str, text: str, case_sensitive: bool, whole_words: bool) -> bool:
    """The matching rules of the module docstring, written the slow and obvious way."""
    if key_problem(key) is not None:
        return False
    regex = compile_regex_key(key)
    if isinstance(regex, re.Pattern):
        return regex.search(text) is not None
    needle, haystack = (key.strip(), text) if case_sensitive else (key.strip().lower(), text.lower())
    pattern = re.compile(r"\s+".join(re.escape(part) for part in needle.split()))
    for start in range(len(haystack) + 1):
        found = pattern.match(haystack, start)
        if found is None:
            continue
        end = found.end()
        if whole_words and _is_word(needle[0]) and start > 0 and _is_word(haystack[start - 1]):
            continue
        if whole_words and _is_word(needle[-1]) and end < len(haystack) and _is_word(haystack[end]):
            continue
        return True
    return False


def _reference(book: Lorebook, recent: Sequence[str]) -> list[tuple[int, str, str | None]]:
    out: list[tuple[int, int, str, str | None]] = []
    for entry in book.entries:
        if not entry.enabled:
            continue
        if entry.constant:
            out.append((entry.priority, entry.index, CONSTANT_KEY, None))
            continue
        depth = book.scan_depth if entry.scan_depth is None else entry.scan_depth
        texts = list(recent)[-depth:] if depth else []
        cs = book.case_sensitive if entry.case_sensitive is None else entry.case_sensitive
        ww = book.whole_words if entry.whole_words is None else entry.whole_words

        def hit(key: str, texts: list[str] = texts, cs: bool = cs, ww: bool = ww) -> bool:
            return any(_reference_hit(key, text, cs, ww) for text in texts)

        key = next((k for k in entry.keys if hit(k)), None)
        if key is None:
            continue
        present = [hit(k) for k in entry.secondary_keys]
        secondary: str | None = None
        if entry.secondary_keys:
            if entry.logic == "and_any":
                if not any(present):
                    continue
                secondary = entry.secondary_keys[present.index(True)]
            elif entry.logic == "and_all":
                if not all(present):
                    continue
                secondary = entry.secondary_keys[0]
            elif entry.logic == "not_any":
                if any(present):
                    continue
            else:
                if all(present):
                    continue
                secondary = entry.secondary_keys[present.index(False)]
        out.append((entry.priority, entry.index, key, secondary))
    out.sort(key=lambda item: (-item[0], item[1]))
    return [(index, key, secondary) for _priority, index, key, secondary in out]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_entries, st.lists(st.text(_ALPHABET, max_size=12), max_size=5))
def test_the_fast_scan_agrees_with_the_obvious_one(raw: list[_Raw], recent: list[str]) -> None:
    book = _book(raw)
    got = [(m.entry.index, m.key, m.secondary) for m in LoreScanner(book).activate(recent)]
    assert got == _reference(book, recent)


_SAMPLE = book_of(
    r"""
[[entries]]
title = "words"
keys = ["dragon", "red dragon", "C++", "東京", "", "/[/", "/(a+)+$/", "/\bsea\b/i", "/^Alice:/m"]
secondary_keys = ["night", "/storm/"]
logic = "and_all"
[[entries]]
title = "substrings"
keys = ["drag", "-", " x "]
whole_words = false
case_sensitive = true
[[entries]]
title = "always"
constant = true
"""
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), max_size=25))
def test_activate_never_raises(recent: list[str]) -> None:
    matches = LoreScanner(_SAMPLE).activate(recent)
    assert "always" in [m.entry.title for m in matches]


_FRAGMENTS = [
    "[[entries]]", "[entries]", "[entries.extensions]", "[extensions]", "[[entries.x]]", "title = ", "keys = ",
    "secondary_keys = ", "logic = ", "priority = ", "scan_depth = ", "constant = ", "id = ", "entries = ",
    "case_sensitive = ", "whole_words = ", "token_budget = ", "max_entries = ", '"and_all"', '"x"', "'y'", "1",
    "-5", "99999999999999999999", "1.5", "true", "false", "[", "]", "{", "}", ",", "=", '"""', "\n", "\n", "\n",
    "# comment", "1979-05-27", "inf", "nan", '"/(a+)+$/"', '"/[/"', '["a", 1]', "[[]]", "{a = {b = 1}}",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=8)), max_size=40))
def test_parse_raises_nothing_but_lorebook_errors(parts: list[str]) -> None:
    text = "".join(parts)
    try:
        book = parse_lorebook(text, PATH)
    except LorebookError as exc:
        message = str(exc)
    else:
        LoreScanner(book).activate(["Alice: a dragon in 東京", "x"])
        return
    assert message.startswith("lorebook.toml")
