"""The quoting rule that `forget --redact-sources` erases the familiar's replies by."""

from __future__ import annotations

import pytest

from app.memory.quoting import QuoteFinder, words

MESSAGE = "Bob said his locker code is 4417, don't tell anyone"


def test_words_ignore_case_punctuation_and_width_and_split_cjk_into_characters() -> None:
    assert words("Locker-CODE is ４４１７!") == ("locker", "code", "is", "4417")
    assert words("会議は東京で") == ("会", "議", "は", "東", "京", "で")
    assert words("…  ") == ()


@pytest.mark.parametrize(
    ("reply", "quotes"),
    [
        ("Noted: his LOCKER code is 4417.", True),  # four words in a row, case and punctuation aside
        ("the locker code... is 4417", True),
        ("code is 4417", False),  # three words: not enough from a reply to another message
        ("His locker is blue, the code is new", False),  # words of it, but no run of four
        ("Bob said nothing", False),
    ],
)
def test_a_reply_quotes_a_run_of_four_words(reply: str, quotes: bool) -> None:
    assert QuoteFinder([(11, MESSAGE)]).quotes(reply, reply_to=None) is quotes


def test_the_reply_to_the_message_itself_needs_two_words() -> None:
    finder = QuoteFinder([(11, MESSAGE)])
    assert finder.quotes("Sure, code is safe with me", reply_to=11)
    assert not finder.quotes("Sure, code is safe with me", reply_to=12)
    assert not finder.quotes("I will keep quiet", reply_to=11)  # a reply that repeats nothing stays


def test_a_short_message_is_quoted_whole_when_it_is_long_enough_to_tell() -> None:
    assert QuoteFinder([(1, "4417")]).quotes("It was 4417 all along", reply_to=None)
    assert QuoteFinder([(1, "see you at noon")]).quotes("OK, see you at noon!", reply_to=None)
    assert not QuoteFinder([(1, "see you at noon")]).quotes("see you soon", reply_to=None)
    assert not QuoteFinder([(1, "ok")]).quotes("ok then", reply_to=None)  # too short to tell
    assert QuoteFinder([(1, "ok")]).quotes("ok then", reply_to=1)  # but the reply to it says it back


def test_cjk_text_is_quoted_by_characters() -> None:
    finder = QuoteFinder([(1, "明日の会議は東京です")])
    assert finder.quotes("はい、会議は東京ですね", reply_to=None)
    assert not finder.quotes("東京", reply_to=None)


def test_no_messages_quote_nothing() -> None:
    finder = QuoteFinder([(1, ""), (2, "!!")])
    assert not finder
    assert not finder.quotes("anything at all here", reply_to=1)
