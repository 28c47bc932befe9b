"""CJK text for full-text search.

Chinese and Japanese write words without spaces between them (Korean puts particles on the end of
its words), so tantivy's default tokenizer sees a whole sentence as one word, and drops it when it is
longer than 40 bytes: a search for one word of it found nothing. Each run of CJK characters is
indexed instead as its overlapping character bigrams (as Lucene's CJKBigramFilter does), in a field
of its own; a run of one character as itself. A query's CJK run becomes the phrase of its bigrams,
so a word of two or more characters finds every text that contains it, and nothing else.

The rest of the text (Latin, digits, punctuation) goes to the default tokenizer unchanged, with a
space where each CJK run was, so a Latin word written against CJK text ("Discordのサーバー") is a
word of its own. Text without CJK is left exactly as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Han (with the extensions and compatibility ideographs), the iteration and ideographic number marks,
# hiragana, katakana (with the prolonged sound mark, without the middle dot, which separates words),
# halfwidth katakana, Hangul syllables and jamo.
_CJK_CHARS = (
    "\u1100-\u11ff"
    "\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"
    "\u3041-\u3096\u309d-\u309f"
    "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
    "\u3131-\u318e"
    "\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff"
    "\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
_WORD = re.compile(r"\w+")
SEPARATOR = "|"
"""Between two runs in the bigram field: never a bigram itself, so a phrase cannot span two runs."""


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def bigrams(run: str) -> list[str]:
    """A run's overlapping character bigrams, in order; a run of one character is itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def split_cjk(text: str) -> tuple[str, list[str]]:
    """(`text` with each CJK run replaced by a space, the runs in order)."""
    runs = CJK_RUN.findall(text)
    if not runs:
        return text, []
    return CJK_RUN.sub(" ", text), runs


def bigram_field(runs: Iterable[str]) -> str:
    """The bigram field's text for some runs: their bigrams, the runs kept apart by SEPARATOR."""
    return f" {SEPARATOR} ".join(" ".join(bigrams(run)) for run in runs if run)


def query_words(text: str, limit: int = 16) -> list[str]:
    """The distinct words of a query, lowercased: Latin (and other) words, and CJK runs whole, each
    of them a word; at most `limit`. For searches that match substrings (the store scan)."""
    words: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        rest, runs = split_cjk(word)
        for part in (*rest.split(), *runs):
            words.setdefault(part, None)
    return list(words)[:limit]


def cue_words(word: str) -> list[str]:
    """A word of a recall cue, split for a bag-of-words search: a CJK run becomes its bigrams (a
    sentence shares words with a fact, not the whole sentence), the Latin rest its words."""
    rest, runs = split_cjk(word)
    out = rest.split()
    for run in runs:
        out.extend(bigrams(run))
    return out
