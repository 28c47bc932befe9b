"""When a reply of the familiar quotes a message: the rule `forget --redact-sources` erases by.

The familiar's replies are turns like any other (author `familiar:self`). Redacting a message would
leave its words in the replies that repeated them, so the replies that quote a redacted message are
redacted with it. "Quotes" is decided on words, never by a model:

- Words: the text NFKC-normalised and case-folded, cut into runs of letters and digits (punctuation,
  spacing and case do not matter); each Chinese, Japanese or Korean character is a word of its own.
- A reply quotes a message when it contains `MIN_RUN` (4) consecutive words of it, in order.
- A short message (fewer than `MIN_RUN` words) is quoted when the reply contains all of its words,
  consecutively and in order, and those words are at least `MIN_SHORT_CHARS` (4) characters long
  together: "4417" or "see you at noon" can be quoted, "ok" cannot.
- A reply to the message itself (its reply_to is that message) is the likeliest to quote it: there,
  `MIN_RUN_DIRECT` (2) consecutive words are enough, and a short message counts whatever its length.

Which replies are looked at (the caller's choice, see FactBook.forget): the familiar's replies where
the message could have been seen or recalled (its channel's whole server, or its DM).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

MIN_RUN = 4
MIN_RUN_DIRECT = 2
MIN_SHORT_CHARS = 4

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
_WORD = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


def words(text: str) -> tuple[str, ...]:
    """The words of a text, as the quoting rule compares them."""
    folded = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    return tuple(_WORD.findall(folded))


def _runs(sequence: tuple[str, ...], size: int) -> set[tuple[str, ...]]:
    return {sequence[i : i + size] for i in range(len(sequence) - size + 1)}


@dataclass(frozen=True, slots=True)
class _Quotable:
    message_id: int | None
    runs: frozenset[tuple[str, ...]]  # what any reply must contain (empty: too short to tell)
    size: int
    direct_runs: frozenset[tuple[str, ...]]  # what the reply to this very message must contain
    direct_size: int


class QuoteFinder:
    """Tells which replies quote any of some messages (their texts and Discord message ids)."""

    def __init__(self, messages: Iterable[tuple[int | None, str]]) -> None:
        self._messages: list[_Quotable] = []
        self._vocabulary: set[str] = set()  # a reply sharing none of these words quotes nothing
        for message_id, text in messages:
            said = words(text)
            if not said:
                continue
            self._vocabulary.update(said)
            size = min(MIN_RUN, len(said))
            long_enough = len(said) >= MIN_RUN or sum(len(w) for w in said) >= MIN_SHORT_CHARS
            direct = min(MIN_RUN_DIRECT, len(said))
            self._messages.append(
                _Quotable(
                    message_id=message_id,
                    runs=frozenset(_runs(said, size)) if long_enough else frozenset(),
                    size=size,
                    direct_runs=frozenset(_runs(said, direct)),
                    direct_size=direct,
                )
            )

    def __bool__(self) -> bool:
        return bool(self._messages)

    def quoting(self, replies: Iterable[tuple[int, str, int | None]]) -> list[int]:
        """The ids of the replies (id, text, the message id it answered) that quote one of the messages."""
        return [turn_id for turn_id, text, reply_to in replies if self.quotes(text, reply_to)]

    def quotes(self, reply: str, reply_to: int | None) -> bool:
        """Whether a reply (its text, and the message id it answered) quotes one of the messages."""
        said = words(reply)
        if self._vocabulary.isdisjoint(said):
            return False
        cache: dict[int, set[tuple[str, ...]]] = {}

        def runs(size: int) -> set[tuple[str, ...]]:
            if size not in cache:
                cache[size] = _runs(said, size)
            return cache[size]

        for message in self._messages:
            if message.runs and not message.runs.isdisjoint(runs(message.size)):
                return True
            direct = reply_to is not None and reply_to == message.message_id
            if direct and not message.direct_runs.isdisjoint(runs(message.direct_size)):
                return True
        return False
