"""Reply splitting: every piece fits Discord's limit, nothing is lost or repeated, code blocks stay closed."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.runtime.messages import DISCORD_LIMIT, REPLY_CUT, clip_message, split_parts, split_reply


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


# -- the cap on pieces per reply ---------------------------------------------------------------------


def test_a_reply_within_the_cap_is_untouched() -> None:
    text = "The lantern flickers. " * 400  # about 8,800 characters: five pieces
    assert split_reply(text, max_pieces=5) == split_reply(text)
    assert not any(REPLY_CUT in p for p in split_reply(text, max_pieces=5))


def test_a_reply_over_the_cap_is_cut_with_a_marker_within_the_limit() -> None:
    text = "The lantern flickers. " * 1000
    whole = split_reply(text)
    assert len(whole) > 5
    pieces = split_reply(text, max_pieces=5)
    assert len(pieces) == 5
    assert all(len(p) <= DISCORD_LIMIT for p in pieces)
    assert pieces[-1].endswith(REPLY_CUT)
    assert not any(REPLY_CUT in p for p in pieces[:-1])
    # What is sent is the reply's beginning, in order, nothing repeated.
    sent = _squeezed("".join(pieces).removesuffix(REPLY_CUT))
    assert _squeezed(text).startswith(sent)
    assert len(split_reply(text, max_pieces=1)) == 1


def test_a_reply_cut_inside_a_code_block_closes_it_before_the_marker() -> None:
    code = "\n".join(f"print({i})  # line {i}" for i in range(1000))
    pieces = split_reply(f"```python\n{code}\n```", max_pieces=2)
    assert len(pieces) == 2
    assert pieces[-1].endswith("\n```" + REPLY_CUT)
    assert all(_fence_lines(p) % 2 == 0 for p in pieces)
    assert all(len(p) <= DISCORD_LIMIT for p in pieces)


@settings(max_examples=200, deadline=None)
@given(st.lists(_pieces, max_size=300), st.integers(min_value=120, max_value=300), st.integers(1, 4))
def test_any_capped_reply_fits_the_limit_and_the_cap(chunks: list[str], limit: int, cap: int) -> None:
    text = "".join(chunks)
    pieces = split_reply(text, limit, max_pieces=cap)
    assert len(pieces) <= cap
    assert all(len(p) <= limit for p in pieces)
    assert (len(split_parts(text, limit)) > cap) == bool(pieces and pieces[-1].endswith(REPLY_CUT))


# -- huge incoming messages --------------------------------------------------------------------------


def test_a_huge_message_is_clipped_with_a_marker() -> None:
    assert clip_message("short", 1000) == "short"
    assert clip_message("x" * 1000, 1000) == "x" * 1000
    clipped = clip_message("y" * 5000, 1000)
    assert len(clipped) == 1000
    assert clipped.startswith("y" * 900)
    assert clipped.endswith("[message cut: it had 5000 characters; only the first ones are kept]")
    with pytest.raises(ValueError, match="marker"):
        clip_message("z" * 100, 50)
