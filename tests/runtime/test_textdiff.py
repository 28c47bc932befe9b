"""Which current facts a pending one would duplicate or could replace (issue 18 item 4)."""

from __future__ import annotations

import pytest

from app.runtime.textdiff import relation, shared_attribute


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("carol is vegetarian.", "carol is learning the cello.", None),
        ("carol is vegetarian.", "carol eats meat again.", ("may_supersede", "both about what they eat")),
        ("alice lives in Lisbon.", "alice moved to Porto.", ("may_supersede", "both about where they live")),
        ("alice works at the bakery.", "She works at the library now.", ("may_supersede", "both about their work")),
        ("alice plays chess.", "alice played the piano at the fair.", ("may_supersede", "both mention “played”")),
        (
            "bob has a tabby cat called Pepper.",
            "bob has a tabby cat named Pepper.",
            ("duplicates", "nearly the same words"),
        ),
        ("bob has a dog.", "bob is planning a surprise party.", None),
    ],
)
def test_only_the_same_attribute_or_nearly_the_same_words_relate_two_facts(
    old: str, new: str, expected: tuple[str, str] | None
) -> None:
    assert relation(old, new) == expected


def test_the_person_both_are_about_is_not_an_attribute() -> None:
    assert shared_attribute("carol is vegetarian.", "carol is learning the cello.") is None
    assert shared_attribute("the cello is old.", "carol is learning the cello.") == "both mention “cello”"
