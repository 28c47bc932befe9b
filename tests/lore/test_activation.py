"""SillyTavern activation parity (app/lore/activation.py): each rule with its own small book.

Probability, inclusion groups, timed effects (sticky, cooldown, delay), recursion and the CCv3 decorators,
and that every entry that matched but is not used says why. Pure: no store, no runtime.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.lore.activation import FOREVER, STICKY_KEY, Activation, Span, TimedEffect, activate, entry_key
from app.lore.book import Lorebook, parse_decorators, parse_lorebook
from app.lore.scanner import CONSTANT_KEY, LoreScanner

PATH = Path("lorebook.toml")


def book_of(text: str) -> Lorebook:
    return parse_lorebook(text, PATH)


def run(text: str, *recent: str, clock: int = 1, effects: tuple[TimedEffect, ...] = (), seed: int = 0) -> Activation:
    return activate(LoreScanner(book_of(text)), list(recent), clock=clock, effects=effects, seed=seed)


def fired(result: Activation) -> list[str]:
    return [f.entry.title for f in result.fired]


def dropped(result: Activation) -> list[tuple[str, str]]:
    return [(d.entry.title, d.reason) for d in result.dropped]


def entry(title: str, keys: str, extra: str = "", content: str = "") -> str:
    return f'[[entries]]\ntitle = "{title}"\nkeys = {keys}\ncontent = "{content or title + " lore."}"\n{extra}\n'


# -- probability ---------------------------------------------------------------------------------------
COIN = entry("Coin", '["coin"]', "probability = 50")


def test_a_probability_entry_under_a_fixed_seed_is_reproducible() -> None:
    first = run(COIN, "Alice: a coin", seed=7)
    assert run(COIN, "Alice: a coin", seed=7) == first
    outcomes = {seed: bool(fired(run(COIN, "Alice: a coin", seed=seed))) for seed in range(400)}
    assert 160 < sum(outcomes.values()) < 240  # about half of the seeds
    kept = next(seed for seed, won in outcomes.items() if won)
    lost = next(seed for seed, won in outcomes.items() if not won)
    won = run(COIN, "Alice: a coin", seed=kept)
    assert won.fired[0].roll is not None
    assert won.fired[0].roll <= 50
    assert won.seed == kept
    failed = run(COIN, "Alice: a coin", seed=lost)
    assert dropped(failed) == [("Coin", "probability")]
    assert failed.dropped[0].detail.startswith("rolled ")
    assert failed.dropped[0].detail.endswith(" against 50%")


def test_probability_is_off_without_use_probability_and_at_the_extremes() -> None:
    assert fired(run(entry("Coin", '["coin"]', "probability = 0\nuse_probability = false"), "a coin")) == ["Coin"]
    never = entry("Never", '["coin"]', "probability = 0")
    assert all(not fired(run(never, "a coin", seed=s)) for s in range(50))
    always = entry("Always", '["coin"]', "probability = 100")
    assert all(fired(run(always, "a coin", seed=s)) == ["Always"] for s in range(50))
    assert run(always, "a coin").fired[0].roll is None  # no roll at 100%


def test_constant_entries_roll_too() -> None:
    book = entry("Weather", "[]", "constant = true\nprobability = 30")
    results = [run(book, "hello", seed=s) for s in range(300)]
    assert 50 < sum(bool(fired(r)) for r in results) < 130
    assert all(r.fired[0].key == CONSTANT_KEY for r in results if r.fired)


# -- inclusion groups ----------------------------------------------------------------------------------
THREE = (
    entry("Rain", '["weather"]', 'group = "sky"\ngroup_weight = 60')
    + entry("Sun", '["weather"]', 'group = "sky"\ngroup_weight = 30')
    + entry("Snow", '["weather"]', 'group = "sky"\ngroup_weight = 10')
)


def test_a_group_of_three_keeps_one_drawn_by_weight() -> None:
    wins: Counter[str] = Counter()
    for seed in range(600):
        result = run(THREE, "Alice: what weather today?", seed=seed)
        (winner,) = fired(result)
        wins[winner] += 1
        assert sorted(dropped(result)) == sorted((t, "group") for t in ("Rain", "Sun", "Snow") if t != winner)
        assert all(d.detail == f"group 'sky' chose \"{winner}\"" for d in result.dropped)
    assert wins["Rain"] > wins["Sun"] > wins["Snow"] > 20
    assert run(THREE, "what weather", seed=3) == run(THREE, "what weather", seed=3)


def test_group_override_keeps_the_highest_priority() -> None:
    book = THREE.replace('title = "Snow"', 'title = "Snow"\ngroup_override = true\npriority = 5')
    book = book.replace('title = "Sun"', 'title = "Sun"\ngroup_override = true\npriority = 50')
    assert all(fired(run(book, "weather", seed=s)) == ["Sun"] for s in range(30))


def test_group_scoring_keeps_the_entries_with_the_most_keys() -> None:
    book = (
        entry("Rain", '["weather", "wet"]', 'group = "sky"')
        + entry("Sun", '["weather"]', 'group = "sky"')
        + entry("Fog", '["weather", "grey", "wet"]', 'group = "sky"')
    )
    assert all(
        fired(run("use_group_scoring = true\n" + book, "weather: wet and grey", seed=s)) == ["Fog"] for s in range(20)
    )
    per_entry = book.replace('title = "Rain"', 'title = "Rain"\nuse_group_scoring = true')
    assert all(fired(run(per_entry, "weather, wet", seed=s)) in (["Rain"], ["Fog"]) for s in range(20))
    assert {tuple(fired(run(book, "weather, wet", seed=s))) for s in range(40)} == {("Rain",), ("Sun",), ("Fog",)}


def test_an_entry_in_several_groups_and_a_group_taken_by_an_earlier_step() -> None:
    book = (
        entry("Owl", '["owl"]', 'group = "birds"', content="the owl looks at the moon")
        + entry("Moon", '["moon"]', 'group = "birds, night"')
        + entry("Stars", '["stars"]', 'group = "night"')
    )
    result = run(book, "an owl and the stars")
    assert fired(result) == ["Owl", "Stars"]
    assert dropped(result) == [("Moon", "group")]
    assert result.dropped[0].detail == "group 'birds' already has \"Owl\""


# -- timed effects -------------------------------------------------------------------------------------
def chat(book: str, messages: list[tuple[int, str]]) -> list[Activation]:
    """One activation per (clock, text), carrying the timed effects from one to the next as the runtime does."""
    scanner = LoreScanner(book_of(book))
    effects: tuple[TimedEffect, ...] = ()
    results = []
    for clock, text in messages:
        result = activate(scanner, [text], clock=clock, effects=effects)
        effects = result.effects
        results.append(result)
    return results


def test_sticky_for_two_messages() -> None:
    book = entry("Curse", '["curse"]', "sticky = 2")
    results = chat(book, [(5, "a curse!"), (6, "nothing"), (7, "still nothing"), (8, "and now?")])
    assert [fired(r) for r in results] == [["Curse"], ["Curse"], ["Curse"], []]
    assert [r.fired[0].key for r in results[:3]] == ["curse", STICKY_KEY, STICKY_KEY]
    key = entry_key(book_of(book).entries[0])
    assert results[0].started == (TimedEffect(key, "sticky", 5, 7),)
    assert results[0].effects == results[1].effects == results[2].effects == (TimedEffect(key, "sticky", 5, 7),)
    assert results[3].effects == ()  # ended


def test_cooldown_blocks_the_next_messages_and_says_until_when() -> None:
    book = entry("Bell", '["bell"]', "cooldown = 2")
    results = chat(book, [(5, "the bell"), (6, "the bell"), (7, "the bell"), (8, "the bell")])
    assert [fired(r) for r in results] == [["Bell"], [], [], ["Bell"]]
    assert dropped(results[1]) == dropped(results[2]) == [("Bell", "cooldown")]
    assert results[1].dropped[0].detail == "cooling down: it cannot activate again until message 8"


def test_a_cooldown_begins_when_the_sticky_ends() -> None:
    book = entry("Storm", '["storm"]', "sticky = 1\ncooldown = 2")
    messages = [(1, "storm"), (2, "storm"), (3, "storm"), (4, "storm"), (5, "storm")]
    results = chat(book, messages)
    assert [fired(r) for r in results] == [["Storm"], ["Storm"], [], [], ["Storm"]]
    assert results[1].fired[0].key == STICKY_KEY


def test_delay_waits_for_the_places_messages() -> None:
    book = entry("Secret", '["secret"]', "delay = 3")
    early = run(book, "a secret", clock=2)
    assert dropped(early) == [("Secret", "delay")]
    assert early.dropped[0].detail == "waits for the place's message 3; this is message 2"
    assert fired(run(book, "a secret", clock=3)) == ["Secret"]


def test_effects_of_an_edited_or_removed_entry_end() -> None:
    book = entry("Curse", '["curse"]', "sticky = 5")
    first = run(book, "curse", clock=1)
    edited = book.replace("Curse lore.", "Curse lore, rewritten.")
    after = run(edited, "nothing", clock=2, effects=first.effects)
    assert fired(after) == []
    assert after.effects == ()


def test_a_sticky_entry_wins_its_group_and_skips_its_roll() -> None:
    book = entry("Rain", '["weather"]', 'group = "sky"\nsticky = 3\nprobability = 1') + entry(
        "Sun", '["weather"]', 'group = "sky"\ngroup_weight = 1000000'
    )
    key = entry_key(book_of(book).entries[0])
    held = (TimedEffect(key, "sticky", 1, 4),)
    for seed in range(20):
        result = run(book, "weather", clock=2, effects=held, seed=seed)
        assert fired(result) == ["Rain"]
        assert dropped(result) == [("Sun", "group")]


# -- recursion -----------------------------------------------------------------------------------------
CHAIN = (
    entry("Owl", '["owl"]', content="The owl watches the moon.")
    + entry("Moon", '["moon"]', content="The moon pulls the tide.")
    + entry("Tide", '["tide"]', content="The tide is low.")
)


def test_recursion_two_levels_deep() -> None:
    result = run(CHAIN, "Alice: I saw an owl")
    assert fired(result) == ["Owl", "Moon", "Tide"]
    assert [f.step for f in result.fired] == [0, 1, 2]
    assert result.steps == ((0,), (1,), (2,))
    moon = result.fired[1]
    assert moon.span == Span(None, 0, 20, 24)  # "moon" in the Owl's content
    assert result.fired[0].span == Span(0, None, 16, 19)  # "owl" in the message


def test_recursion_can_be_off_or_shallow() -> None:
    assert fired(run("recursive_scanning = false\n" + CHAIN, "an owl")) == ["Owl"]
    assert fired(run("max_recursion_steps = 1\n" + CHAIN, "an owl")) == ["Owl", "Moon"]


def test_prevent_and_exclude_recursion() -> None:
    prevented = CHAIN.replace('title = "Moon"', 'title = "Moon"\nprevent_recursion = true')
    assert fired(run(prevented, "an owl")) == ["Owl", "Moon"]
    excluded = CHAIN.replace('title = "Tide"', 'title = "Tide"\nexclude_recursion = true')
    result = run(excluded, "an owl")
    assert fired(result) == ["Owl", "Moon"]
    assert dropped(result) == [("Tide", "recursion")]
    assert fired(run(excluded, "the tide")) == ["Tide"]  # the conversation itself still activates it


def test_delay_until_recursion_waits_for_a_recursion_step_of_its_level() -> None:
    book = CHAIN + entry("Echo", '["owl"]', "delay_until_recursion = true")
    result = run(book, "an owl")
    assert [(f.entry.title, f.step) for f in result.fired] == [("Owl", 0), ("Moon", 1), ("Tide", 2), ("Echo", 1)]
    alone = entry("Echo", '["owl"]', "delay_until_recursion = true")
    result = run(alone, "an owl")  # nothing recurses: no recursion step comes
    assert dropped(result) == [("Echo", "recursion")]
    assert result.dropped[0].detail == "waits for recursion level 1, not reached"
    levels = alone + entry("Later", '["owl"]', "delay_until_recursion = 2")
    result = run(levels, "an owl")  # a level with entries waiting still gets its step, as in SillyTavern
    assert [(f.entry.title, f.step) for f in result.fired] == [("Echo", 1), ("Later", 1)]
    capped = "max_recursion_steps = 1\n" + CHAIN + alone + entry("Later", '["owl"]', "delay_until_recursion = 2")
    result = run(capped, "an owl")
    assert [(f.entry.title, f.step) for f in result.fired] == [("Owl", 0), ("Moon", 1), ("Echo", 1)]
    assert dropped(result) == [("Later", "recursion")]
    assert result.dropped[0].detail == "waits for recursion level 2, not reached"


# -- decorators ----------------------------------------------------------------------------------------
def decorated(title: str, keys: str, *lines: str, extra: str = "") -> str:
    quoted = ", ".join(f'"{line}"' for line in lines)
    return entry(title, keys, extra) + f"[entries.extensions]\ndecorators = [{quoted}]\n\n"


def test_activate_and_dont_activate() -> None:
    book = decorated("Always", "[]", "@@activate") + decorated("Never", '["owl"]', "@@dont_activate")
    result = run(book, "an owl")
    assert [(f.entry.title, f.via, f.key) for f in result.fired] == [("Always", "decorator", "(@@activate)")]
    assert dropped(result) == [("Never", "decorator")]


def test_activate_only_after_and_every() -> None:
    after = decorated("Late", '["owl"]', "@@activate_only_after 4")
    assert dropped(run(after, "owl", clock=3)) == [("Late", "delay")]
    assert fired(run(after, "owl", clock=4)) == ["Late"]
    every = decorated("Third", '["owl"]', "@@activate_only_every 3")
    assert [bool(fired(run(every, "owl", clock=c))) for c in range(1, 7)] == [False, False, True, False, False, True]
    assert run(every, "owl", clock=4).dropped[0].detail == "@@activate_only_every 3: not on message 4"


def test_keep_and_dont_activate_after_match() -> None:
    keep = decorated("Vow", '["vow"]', "@@keep_activate_after_match")
    results = chat(keep, [(1, "a vow"), (2, "x"), (50, "y")])
    assert [fired(r) for r in results] == [["Vow"], ["Vow"], ["Vow"]]
    assert results[0].started[0].end == FOREVER
    once = decorated("Once", '["vow"]', "@@dont_activate_after_match")
    results = chat(once, [(1, "a vow"), (2, "a vow"), (99, "a vow")])
    assert [fired(r) for r in results] == [["Once"], [], []]
    assert results[2].dropped[0].detail == "cooling down: it cannot activate again in this place"


def test_scan_depth_and_additional_and_exclude_keys() -> None:
    shallow = decorated("Shallow", '["owl"]', "@@scan_depth 1")
    assert fired(run(shallow, "an owl", "later")) == []
    assert fired(run(shallow, "later", "an owl")) == ["Shallow"]
    more = decorated("Bird", '["owl"]', "@@additional_keys raven, crow")
    assert fired(run(more, "a crow")) == ["Bird"]
    assert run(more, "a crow").fired[0].key == "crow"
    exclude = decorated("Day", '["sun"]', "@@exclude_keys night,moon")
    assert fired(run(exclude, "the sun")) == ["Day"]
    assert fired(run(exclude, "the sun and the moon")) == []


def test_ignore_on_max_context_goes_last_and_fallbacks() -> None:
    book = decorated("Filler", '["owl"]', "@@ignore_on_max_context", extra="priority = 900") + entry(
        "Core", '["owl"]', "priority = 1"
    )
    assert fired(run(book, "owl")) == ["Core", "Filler"]  # the first to give way to the budget
    lines = ["@@role assistant", "@@@activate", "@@scan_depth 4", "@@@dont_activate"]
    decorators, problems = parse_decorators(lines)
    assert decorators.activate
    assert not decorators.dont_activate
    assert decorators.scan_depth == 4
    assert decorators.kept == ("@@role assistant", "@@@dont_activate")
    assert problems == []
    decorators, problems = parse_decorators(["@@activate_only_every soon", "@@additional_keys ,"])
    assert problems == [
        ("@@activate_only_every soon", "expected a whole number from 1 to 100000"),
        ("@@additional_keys ,", "expected keys separated by commas"),
    ]
    book_problems = book_of(decorated("Odd", '["owl"]', "@@activate_only_every soon")).problems
    assert [(p.key, p.message) for p in book_problems] == [
        ("@@activate_only_every soon", "decorator not used: expected a whole number from 1 to 100000")
    ]


# -- what was not used, and why -------------------------------------------------------------------------
def test_a_disabled_entry_that_matched_is_reported_with_its_span() -> None:
    result = run(entry("Old", '["lantern"]', "enabled = false"), "Bob: the old Lantern glows", "Alice: hi")
    assert fired(result) == []
    assert dropped(result) == [("Old", "disabled")]
    assert result.dropped[0].span == Span(0, None, 13, 20)


@pytest.mark.parametrize(
    ("key", "text", "span"),
    [
        ('"red  dragon"', "Alice: a Red\n dragon!", (9, 20)),
        ('"/drag(on|ons)/i"', "Alice: DRAGONS", (7, 13)),
        ('"東京"', "Bob: 私は東京に", (7, 9)),
        ('"/\\\\bowl\\\\b/"', "Bob: a bowl, an owl", (16, 19)),
    ],
)
def test_spans_are_offsets_in_the_text_as_written(key: str, text: str, span: tuple[int, int]) -> None:
    result = run(entry("E", f"[{key}]"), text)
    assert result.fired[0].span == Span(0, None, *span)


# -- any book, any conversation --------------------------------------------------------------------------------
WORDS = ("owl", "moon", "tide", "sea", "bell")
_entry = st.fixed_dictionaries(
    {
        "keys": st.lists(st.sampled_from(WORDS), max_size=2),
        "content": st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join),
    },
    optional={
        "secondary_keys": st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
        "logic": st.sampled_from(("and_any", "and_all", "not_any", "not_all")),
        "probability": st.integers(0, 100),
        "use_probability": st.booleans(),
        "group": st.sampled_from(("a", "b", "a, b")),
        "group_override": st.booleans(),
        "group_weight": st.integers(0, 300),
        "use_group_scoring": st.booleans(),
        "sticky": st.integers(0, 3),
        "cooldown": st.integers(0, 3),
        "delay": st.integers(0, 5),
        "exclude_recursion": st.booleans(),
        "prevent_recursion": st.booleans(),
        "delay_until_recursion": st.integers(0, 3),
        "constant": st.booleans(),
        "enabled": st.booleans(),
        "scan_depth": st.integers(0, 3),
        "priority": st.integers(-5, 5),
        "decorators": st.lists(
            st.sampled_from(
                (
                    "@@activate",
                    "@@dont_activate",
                    "@@activate_only_every 2",
                    "@@activate_only_after 3",
                    "@@keep_activate_after_match",
                    "@@dont_activate_after_match",
                    "@@additional_keys sea",
                    "@@exclude_keys bell",
                    "@@ignore_on_max_context",
                    "@@depth 2",
                    "@@@activate",
                )
            ),
            max_size=3,
        ),
    },
)


def _toml_entry(index: int, raw: dict[str, object]) -> str:
    lines = ["[[entries]]", f'title = "e{index}"']
    decorators = raw.pop("decorators", None)
    for key, value in raw.items():
        lines.append(f"{key} = {json.dumps(value)}")
    if decorators:
        lines += ["[entries.extensions]", f"decorators = {json.dumps(decorators)}"]
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None)
@given(
    entries=st.lists(_entry, max_size=8),
    talk=st.lists(st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join), min_size=1, max_size=6),
    recursive=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_activation_never_raises_and_keeps_its_invariants(
    entries: list[dict[str, object]], talk: list[str], recursive: bool, seed: int
) -> None:
    text = f"recursive_scanning = {json.dumps(recursive)}\nmax_recursion_steps = 2\n" + "".join(
        _toml_entry(i, dict(raw)) for i, raw in enumerate(entries)
    )
    book = book_of(text)
    scanner = LoreScanner(book)
    effects: tuple[TimedEffect, ...] = ()
    timed = {entry_key(e) for e in book.entries if e.timed}
    for clock, _said in enumerate(talk, start=1):
        result = activate(scanner, [f"Alice: {t}" for t in talk[:clock]], clock=clock, effects=effects, seed=seed)
        fired = [f.entry.index for f in result.fired]
        assert len(fired) == len(set(fired))
        assert not set(fired) & {d.entry.index for d in result.dropped}
        assert all(f.entry.enabled and not f.entry.decorators.dont_activate for f in result.fired)
        for group in ("a", "b"):
            assert sum(group in f.entry.groups for f in result.fired) <= 1
        assert all(e.entry in timed and e.start <= e.end for e in result.effects)
        assert sorted(i for step in result.steps for i in step) == sorted(fired)
        scanned = [f"Alice: {t}" for t in talk[:clock]]
        for item in (*result.fired, *result.dropped):
            span = item.span
            if span is None:
                assert item.key.startswith("(")  # only constants, @@activate and sticky have no span
                continue
            text = scanned[span.text] if span.text is not None else book.entries[span.entry or 0].content
            assert text[span.start : span.end].lower() == item.key.lower()
        effects = result.effects
