"""Word diffs between two fact texts, and how alike they are."""

from __future__ import annotations

import difflib
import re
from typing import Literal

from app.runtime.views import DiffPiece

_WORDS = re.compile(r"\S+\s*")
DUPLICATE_RATIO = 0.85  # at least this share of words alike (and the same subjects and scope): a duplicate


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.strip())


def word_diff(old: str, new: str) -> tuple[DiffPiece, ...]:
    """What changed from `old` to `new`, word by word (runs of the same op merged)."""
    a, b = _words(old), _words(new)
    pieces: list[DiffPiece] = []

    def add(op: Literal["same", "added", "removed"], words: list[str]) -> None:
        if not words:
            return
        text = "".join(words)
        if pieces and pieces[-1].op == op:
            pieces[-1] = DiffPiece(pieces[-1].op, pieces[-1].text + text)
        else:
            pieces.append(DiffPiece(op, text))

    matcher = difflib.SequenceMatcher(a=[w.strip().casefold() for w in a], b=[w.strip().casefold() for w in b])
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add("same", b[j1:j2])
        else:
            add("removed", a[i1:i2])
            add("added", b[j1:j2])
    return tuple(pieces)


def similarity(old: str, new: str) -> float:
    """The share of words the two texts have in common, in order (0-1)."""
    a = [w.strip().casefold() for w in _words(old)]
    b = [w.strip().casefold() for w in _words(new)]
    return difflib.SequenceMatcher(a=a, b=b).ratio() if a or b else 1.0
