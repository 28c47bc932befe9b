"""A chat message's Markdown as Discord renders it, as Qt rich text; hostile text stays text (issue 18 item 7)."""

from __future__ import annotations

import time

import pytest
from PySide6.QtGui import QTextDocument

from app.ui.discord_markdown import (
    HIDDEN_CHARACTER,
    MarkdownColours,
    Spoiler,
    Styled,
    Text,
    parse,
    plain_text,
    render,
    spoiler_count,
)

COLOURS = MarkdownColours(code_background="#eeeeee", spoiler="#222222", spoiler_revealed="#dddddd", quote_bar="#999999")


def html(source: str, revealed: tuple[int, ...] = ()) -> str:
    """The markup inside the wrapper (which keeps spaces and line ends)."""
    rendered = render(source, COLOURS, revealed=revealed)
    prefix, suffix = '<div style="white-space: pre-wrap">', "</div>"
    assert rendered.startswith(prefix)
    assert rendered.endswith(suffix)
    return rendered[len(prefix) : -len(suffix)]


def shown(source: str, revealed: tuple[int, ...] = ()) -> str:
    """What a reader sees: the rendered rich text as Qt lays it out, back to plain text (without the empty
    lines a table's cells become there: a quote's bar, a code block's frame)."""
    document = QTextDocument()
    document.setHtml(render(source, COLOURS, revealed=revealed))
    return "\n".join(line for line in document.toPlainText().split("\n") if line.strip())


@pytest.mark.parametrize(
    ("source", "markup"),
    [
        ("**bold**", "<b>bold</b>"),
        ("*italics* and _italics_", "<i>italics</i> and <i>italics</i>"),
        ("__underline__", "<u>underline</u>"),
        ("~~strike~~", "<s>strike</s>"),
        ("***both***", "<i><b>both</b></i>"),
        ("__*underlined italics*__", "<u><i>underlined italics</i></u>"),
        ("**bold *and italic* inside**", "<b>bold <i>and italic</i> inside</b>"),
        ("snake_case_name and 2*3*4", "snake_case_name and 2<i>3</i>4"),
        ("a * b * c", "a * b * c"),
        ("\\*not italics\\*", "*not italics*"),
        ("line one\nline two", "line one<br/>line two"),
    ],
)
def test_the_inline_styles_discord_knows(source: str, markup: str) -> None:
    assert html(source) == markup


def test_code_is_literal_and_monospace() -> None:
    assert html("run `**not bold** <b>` now") == (
        'run <code style="background-color: #eeeeee">**not bold** &lt;b&gt;</code> now'
    )
    block = html("before\n```python\nprint('**hi**')\n  indented\n```\nafter")
    assert block.startswith("before<table")  # the block is a line of its own: no empty line around it
    assert block.endswith("</table>after")
    assert "print(&#x27;**hi**&#x27;)\n  indented</code>" in block  # the language line is not shown
    assert "python" not in block
    assert shown("```\n||not a spoiler|| __nor this__\n```") == "||not a spoiler|| __nor this__"


def test_quotes_are_whole_lines_and_three_marks_quote_the_rest() -> None:
    quoted = parse("> one\n> two\nafter")
    assert [type(node).__name__ for node in quoted] == ["Quote", "Text"]
    assert shown("> one\n> two\nafter") == "one\ntwo\nafter"
    assert "#999999" in html("> a quote")  # the bar beside it
    everything = parse("say:\n>>> all\nof\nthis")
    assert [type(node).__name__ for node in everything] == ["Text", "LineBreak", "Quote"]
    assert shown("a > b") == "a > b"  # not at a line's start
    assert shown(">no space") == ">no space"


def test_a_spoiler_is_hidden_until_revealed_and_numbered_in_reading_order() -> None:
    source = "the key is ||under the **mat**|| and ||in the `lamp`||"
    hidden = html(source)
    assert "under" not in hidden
    assert "mat" not in hidden
    assert "lamp" not in hidden
    assert 'href="spoiler:0"' in hidden
    assert 'href="spoiler:1"' in hidden
    assert shown(source) == f"the key is {'█' * 5} {'█' * 3} {'█' * 3} and {'█' * 2} {'█' * 3} {'█' * 4}"
    assert HIDDEN_CHARACTER == "█"
    assert spoiler_count(source) == 2

    first = html(source, revealed=(0,))
    assert "under the <b>mat</b>" in first
    assert 'href="spoiler:0"' not in first
    assert 'href="spoiler:1"' in first
    assert shown(source, revealed=(0, 1)) == "the key is under the mat and in the lamp"
    assert plain_text(source) == shown(source)


def test_spoilers_are_numbered_through_the_styles_and_do_not_nest() -> None:
    source = "**||a||** then ||b|| and ||c ||d|| e||"
    assert spoiler_count(source) == 4  # as in Discord, the first || closes: "c ", then "d" as text, then " e"
    assert parse("||c ||d|| e||") == (Spoiler((Text("c "),)), Text("d"), Spoiler((Text(" e"),)))
    only_b = html(source, revealed=(1,))
    assert 'href="spoiler:0"' in only_b
    assert 'href="spoiler:1"' not in only_b
    assert "b</span>" in only_b
    assert shown(source, revealed=(0, 1, 2, 3)) == "a then b and c d e"


@pytest.mark.parametrize(
    "hostile",
    [
        "<b>not bold</b>",
        '<img src="x" onerror="alert(1)">',
        '<a href="javascript:alert(1)">click</a>',
        "&amp; &lt;b&gt; &#60;",
        "<table><tr><td>cell</td></tr></table>",
        "</div></span><script>alert('x')</script>",
        '" style="color: red',
    ],
)
def test_hostile_text_shows_as_the_text_it_is(hostile: str) -> None:
    for source in (hostile, f"**{hostile}**", f"`{hostile}`", f"> {hostile}"):
        assert shown(source) == hostile
    assert shown(f"||{hostile}||", revealed=(0,)) == hostile
    assert shown(f"```\n{hostile}\n```") == hostile
    markup = html(hostile)
    assert "<" not in markup.replace("<br/>", "")


def test_a_hostile_message_of_the_longest_size_renders_at_once() -> None:
    for source in ("*" * 8000, "**a *" * 1600, "_a " * 2700, "||" * 4000, "~~x" * 2700, "> " * 4000, "`" * 8000):
        started = time.perf_counter()
        render(source, COLOURS)
        assert time.perf_counter() - started < 1.0, source[:12]


def test_styles_nest_no_deeper_than_the_limit() -> None:
    source = "**" * 100 + "deep" + "**" * 100
    nodes = parse(source)
    depth = 0
    while nodes and isinstance(nodes[0], Styled):
        nodes = nodes[0].children
        depth += 1
    assert depth <= 40
    assert "deep" in shown(source)
