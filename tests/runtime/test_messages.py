"""Reply splitting: every piece fits Discord's limit, nothing is lost or repeated, code blocks stay closed."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.runtime.messages import DISCORD_LIMIT, split_parts, split_reply


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _fence_lines(piece: str) -> int:
    count = 0
    for line in piece.splitlines():
        stripped = line.strip()
        if stripped.startswith("```") and not (len(stripped) > 6 and stripped.endswith("```")):
            count += 1
    return count


def _check(text: str, limit: int) -> list[str]:
    parts = split_parts(text, limit)
    pieces = split_reply(text, limit)
    assert pieces == [a + b + c for a, b, c in parts]
    assert all(len(p) <= limit for p in pieces), [len(p) for p in pieces]
    assert all(p.strip() for p in pieces)
    # Nothing lost, nothing repeated: the reply's own text, in order, less whitespace at the cuts.
    assert _squeezed("".join(body for _, body, _ in parts)) == _squeezed(text)
    # A piece that reopens a block got it closed by the piece before.
    for (_, _, closing), (reopen, _, _) in itertools.pairwise(parts):
        assert bool(closing) == bool(reopen)
    return pieces


def test_short_reply_is_one_piece() -> None:
    assert split_reply("  hello there \n") == ["hello there"]
    assert split_reply("") == []
    assert split_reply(" \n\t ") == []


def test_prefers_paragraph_breaks() -> None:
    first = "a" * 1200
    second = "b" * 1200
    assert split_reply(f"{first}\n\n{second}") == [first, second]


def test_prefers_sentence_end_to_a_space_inside_a_sentence() -> None:
    sentence = "word " * 300 + "end. "
    pieces = _check(sentence * 3, DISCORD_LIMIT)
    assert pieces[0].endswith("end.")


def test_a_word_longer_than_the_limit_is_cut_hard() -> None:
    pieces = _check("x" * 4500, DISCORD_LIMIT)
    assert [len(p) for p in pieces] == [1996, 1996, 508]


def test_code_block_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"print({i})  # line {i}" for i in range(200))
    pieces = _check(f"Here you go:\n```python\n{code}\n```\nDone.", DISCORD_LIMIT)
    assert len(pieces) >= 2
    assert pieces[0].endswith("\n```")
    assert pieces[1].startswith("```python\n")
    assert all(_fence_lines(p) % 2 == 0 for p in pieces)
    assert pieces[-1].endswith("Done.")


def test_text_after_the_language_on_the_opening_line_is_not_repeated() -> None:
    code = "\n".join(f"x{i} = {i}" for i in range(400))
    pieces = _check(f"```js console.log('a')\n{code}\n```", DISCORD_LIMIT)
    assert sum(p.count("console.log('a')") for p in pieces) == 1
    assert all(p.startswith("```js\n") for p in pieces[1:])


def test_a_very_long_opening_line_never_pushes_a_piece_over_the_limit() -> None:
    pieces = _check("```" + "y" * 2500 + "\n" + "z = 1\n" * 300 + "```", DISCORD_LIMIT)
    assert len(pieces) >= 2


def test_a_whole_block_on_one_line_is_not_an_open_fence() -> None:
    text = ("see ```inline``` here. " * 100).strip()
    pieces = _check(text, DISCORD_LIMIT)
    assert not any(p.endswith("\n```") for p in pieces)


def test_a_tiny_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="64"):
        split_reply("hello", 10)


_pieces = st.sampled_from(
    [
        "word",
        "a sentence. ",
        "\n",
        "\n\n",
        "```",
        "```py",
        "```js console.log(1)",
        "``",
        "   ",
        "\t",
        "é",
        "🦊",
        "x" * 90,
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_pieces, max_size=300), st.integers(min_value=64, max_value=300))
def test_any_reply_splits_within_the_limit_and_keeps_its_text(chunks: list[str], limit: int) -> None:
    _check("".join(chunks), limit)


def test_indentation_inside_a_code_block_survives_the_cut() -> None:
    body = "\n".join(f"    total += {i}  # step {i}" for i in range(300))  # every line indented
    pieces = _check(f"Here:\n```python\ndef f():\n{body}\n```", DISCORD_LIMIT)
    assert len(pieces) >= 3
    shown = [line for p in pieces for line in p.splitlines()]
    for i in range(300):
        assert f"    total += {i}  # step {i}" in shown, f"step {i} lost its indentation"
