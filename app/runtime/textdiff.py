"""Word diffs between two fact texts, and how alike they are."""

from __future__ import annotations

import difflib
import re
from typing import Literal

from app.runtime.api.views import DiffPiece

_WORDS = re.compile(r"\S+\s*")
DUPLICATE_RATIO = 0.85  # at least this share of words alike (and the same subjects and scope): a duplicate
DUPLICATE_REASON = "nearly the same words"


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


# -- whether one fact could replace another ------------------------------------------------------------
# A fact replaces an earlier one about the same person when it gives the same attribute a new value
# ("lives in Porto" after "lives in Lisbon"), or corrects it. Two facts that share no attribute ("is
# learning the cello", "is vegetarian") never replace each other, whatever a model would say: the
# pending queue shows only the pairs that pass this, and the supersede worker asks its model about
# those pairs only, so what the queue says could be replaced is what the worker may really retire.
def _words_of(text: str) -> frozenset[str]:
    return frozenset(text.split())


_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
_STOP = _words_of(
    """a an the and or but if then so of to in on at by for from with about into over under as is are was were be
    been being am has have had having do does did doing not no nor very really just also still now again ever never
    this that these those there here it its they them their theirs he him his she her hers we us our you your i me
    my mine who whom whose which what when where why how all any some each every both few more most other such only
    own same than too can could will would shall should may might must says said say tells told thinks thought
    likes like loves love one two lot lots much many got get gets"""
)
_FAMILIES: dict[str, frozenset[str]] = {
    "where they live": _words_of(
        "live lives lived living move moved moving home house flat apartment city town resides based"
    ),
    "their work": _words_of("work works worked working job employed career company office profession retired"),
    "who they are with": _words_of(
        "married marry dating partner girlfriend boyfriend wife husband engaged divorced single relationship"
    ),
    "what they eat": _words_of("vegetarian vegan eat eats eating diet allergic allergy meat"),
    "their age": _words_of("age aged old birthday born"),
    "their name": _words_of("name named called nickname pronouns"),
    "their studies": _words_of("study studies studying school university college student degree"),
}


def _stem(word: str) -> str:
    """A crude English stem, so "plays", "played" and "playing" meet."""
    word = word.removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _content_words(text: str) -> list[str]:
    return [w for w in (m.casefold() for m in _TOKEN.findall(text)) if w not in _STOP]


def shared_attribute(old: str, new: str) -> str | None:
    """What makes `new` a candidate to replace `old` (both about the same person), in words for the
    owner: the attribute both give a value to ("both about where they live"), or a word both turn on
    ("both mention “cello”"); None when they share none."""
    a, b = _content_words(old), _content_words(new)
    if a and b and a[0] == b[0]:
        a, b = a[1:], b[1:]  # the person both sentences are about ("carol is ...", "carol has ...")
    words_a, words_b = set(a), set(b)
    for family, words in _FAMILIES.items():
        if words_a & words and words_b & words:
            return f"both about {family}"
    stems_b = {_stem(w): w for w in b}
    for word in a:
        if len(word) > 2 and _stem(word) in stems_b:
            return f"both mention “{stems_b[_stem(word)]}”"
    return None


def relation(old: str, new: str) -> tuple[Literal["duplicates", "may_supersede"], str] | None:
    """How a pending fact `new` stands to a current fact `old` of the same subject and scope, with why:
    a near-duplicate, a candidate to replace it (`shared_attribute`), or nothing to show (None)."""
    if similarity(old, new) >= DUPLICATE_RATIO:
        return "duplicates", DUPLICATE_REASON
    attribute = shared_attribute(old, new)
    return None if attribute is None else ("may_supersede", attribute)
