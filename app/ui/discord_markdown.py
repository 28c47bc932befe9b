"""A message's Markdown as Discord renders it, as Qt rich text: **bold**, *italics* / _italics_, __underline__,
~~strike~~, `code`, ```code blocks```, ||spoilers|| (hidden until clicked) and > / >>> quotes.

The rules and their precedence are Discord's (its parser is simple-markdown with a few rules of its own): at
each position the first rule that matches wins, and among em / strong / underline the longest match, so
`***both***` is bold italics and `snake_case_name` stays as written. A backslash escapes a punctuation mark.
Nothing else is Markdown here (no links, headings or lists): their characters show as typed.

The text is never trusted: every piece of it reaches the HTML through `html.escape`, and the only markup in the
result is made here, so a message holding HTML shows as that text. A hidden spoiler's text is not in the
result at all (only a bar as long as it, a link `spoiler:<n>` to click); `render(..., revealed={n})` puts it in.
No Qt: the chat view sets the HTML on a label.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection
from dataclasses import dataclass

SPOILER_LINK = "spoiler:"
HIDDEN_CHARACTER = "\u2588"  # a full block: a hidden spoiler is a bar as long as its text


@dataclass(frozen=True, slots=True)
class MarkdownColours:
    """The colours the markup uses (the theme's: app.ui.theme)."""

    code_background: str
    spoiler: str  # a hidden spoiler's bar
    spoiler_revealed: str  # the background of a spoiler once shown
    quote_bar: str


# -- the syntax tree ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class LineBreak:
    pass


@dataclass(frozen=True, slots=True)
class Code:
    text: str


@dataclass(frozen=True, slots=True)
class CodeBlock:
    text: str
    language: str


@dataclass(frozen=True, slots=True)
class Styled:
    style: str  # "strong", "em", "u", "del"
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Spoiler:
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Quote:
    children: tuple[Node, ...]


Node = Text | LineBreak | Code | CodeBlock | Styled | Spoiler | Quote

# -- the rules ---------------------------------------------------------------------------------------
_CODE_BLOCK = re.compile(r"```(?:([a-z0-9_+\-.#]+?)\n)?\n*([^\n][\s\S]*?)\n*```", re.IGNORECASE)
_QUOTE = re.compile(r"( *>>> ([\s\S]*))|( *> [^\n]*(?:\n *> [^\n]*)*\n?)")
_QUOTE_MARK = re.compile(r"^ *> ?", re.MULTILINE)
_NEWLINE = re.compile(r"\n")
_ESCAPE = re.compile(r"\\([^0-9A-Za-z\s])")
_EM = re.compile(
    r"\b_((?:__|\\[\s\S]|[^\\_])+?)_\b"
    r"|\*(?=\S)((?:\*\*|\\[\s\S]|\s+(?:\\[\s\S]|[^\s*\\]|\*\*)|[^\s*\\])+?)\*(?!\*)"
)
_STRONG = re.compile(r"\*\*((?:\\[\s\S]|[^\\])+?)\*\*(?!\*)")
_UNDERLINE = re.compile(r"__((?:\\[\s\S]|[^\\])+?)__(?!_)")
_STRIKE = re.compile(r"~~([\s\S]+?)~~(?!_)")
_CODE = re.compile(r"(`+)([\s\S]*?[^`])\1(?!`)")
_SPOILER = re.compile(r"\|\|([\s\S]+?)\|\|")
_TEXT = re.compile(r"[\s\S]+?(?=[^0-9A-Za-z\s\u00c0-\uffff]|\n| {2,}\n|\w+:\S|\Z)")
# em, strong and underline compete: the longest match wins, em before strong before underline on a tie.
_EMPHASIS = ((_EM, "em", 0.2), (_STRONG, "strong", 0.1), (_UNDERLINE, "u", 0.0))
_MAX_DEPTH = 32  # nesting beyond this is shown as text (a message of 8,000 asterisks must not recurse away)


def parse(source: str) -> tuple[Node, ...]:
    """The message `source` as a syntax tree."""
    return _parse(source, top=True, depth=0)


def _parse(source: str, *, top: bool, depth: int) -> tuple[Node, ...]:
    if depth > _MAX_DEPTH:
        return (Text(source),)
    nodes: list[Node] = []
    position = 0
    while position < len(source):
        node, position = _next(source, position, top=top, depth=depth)
        if isinstance(node, Text) and nodes and isinstance(nodes[-1], Text):
            nodes[-1] = Text(nodes[-1].text + node.text)
        else:
            nodes.append(node)
    return tuple(nodes)


def _next(source: str, at: int, *, top: bool, depth: int) -> tuple[Node, int]:
    """The node that starts at `at`, and where the next one starts."""

    def inner(text: str) -> tuple[Node, ...]:
        return _parse(text, top=False, depth=depth + 1)

    if found := _CODE_BLOCK.match(source, at):
        return CodeBlock(found.group(2), found.group(1) or ""), found.end()
    if top and source.startswith((">", " "), at) and _line_start(source, at) and (found := _QUOTE.match(source, at)):
        body = found.group(2) if found.group(1) is not None else _QUOTE_MARK.sub("", found.group(3))
        return Quote(_parse(body.removesuffix("\n"), top=False, depth=depth + 1)), found.end()
    if _NEWLINE.match(source, at):
        return LineBreak(), at + 1
    if found := _ESCAPE.match(source, at):
        return Text(found.group(1)), found.end()
    best: tuple[float, str, re.Match[str]] | None = None
    for pattern, style, bonus in _EMPHASIS:
        if (found := pattern.match(source, at)) and (best is None or len(found.group(0)) + bonus > best[0]):
            best = (len(found.group(0)) + bonus, style, found)
    if best is not None:
        _quality, style, found = best
        content = next(group for group in found.groups() if group is not None)
        return Styled(style, inner(content)), found.end()
    if found := _STRIKE.match(source, at):
        return Styled("del", inner(found.group(1))), found.end()
    if found := _CODE.match(source, at):
        return Code(_trim_code(found.group(2))), found.end()
    if found := _SPOILER.match(source, at):
        return Spoiler(inner(found.group(1))), found.end()
    if found := _TEXT.match(source, at):
        return Text(found.group(0)), found.end()
    return Text(source[at]), at + 1  # pragma: no cover - the text rule takes at least one character


def _line_start(source: str, at: int) -> bool:
    """Whether only spaces stand between the start of the line and `at` (a quote starts a line)."""
    line = source.rfind("\n", 0, at) + 1
    return not source[line:at].strip(" ")


def _trim_code(text: str) -> str:
    """`` ` `a` ` `` shows `a` in backticks: one space of padding on each side is the syntax's, as Discord does."""
    if len(text) > 2 and text.startswith(" ") and text.endswith(" ") and text.strip():
        return text[1:-1]
    return text


# -- rendering ---------------------------------------------------------------------------------------
def render(source: str, colours: MarkdownColours, *, revealed: Collection[int] = ()) -> str:
    """The message `source` as Qt rich text; spoilers are numbered from 0 in reading order, those in `revealed`
    shown, the others hidden (a bar linking to `spoiler:<n>`)."""
    out: list[str] = []
    _Renderer(colours, frozenset(revealed), out).nodes(parse(source))
    return '<div style="white-space: pre-wrap">' + "".join(out) + "</div>"


def spoiler_count(source: str) -> int:
    """How many spoilers the message has (the numbers `render` gives them are 0 to this, excluded)."""
    return _count(parse(source))


def plain_text(source: str) -> str:
    """The message without its Markdown, as read aloud or previewed (spoilers hidden)."""
    return _plain(parse(source), hide=True)


def _count(nodes: tuple[Node, ...]) -> int:
    total = 0
    for node in nodes:
        if isinstance(node, Spoiler):
            total += 1 + _count(node.children)
        elif isinstance(node, Styled | Quote):
            total += _count(node.children)
    return total


def _plain(nodes: tuple[Node, ...], *, hide: bool = False) -> str:
    parts: list[str] = []
    for node in nodes:
        if isinstance(node, Text | Code | CodeBlock):
            parts.append(node.text)
        elif isinstance(node, LineBreak):
            parts.append("\n")
        elif isinstance(node, Spoiler):
            text = _plain(node.children)
            parts.append("".join(c if c.isspace() else HIDDEN_CHARACTER for c in text) if hide else text)
        else:
            parts.append(_plain(node.children, hide=hide))
    return "".join(parts)


_TAGS = {"strong": "b", "em": "i", "u": "u", "del": "s"}


class _Renderer:
    def __init__(self, colours: MarkdownColours, revealed: frozenset[int], out: list[str]) -> None:
        self._colours = colours
        self._revealed = revealed
        self._out = out
        self._spoilers = 0

    def nodes(self, nodes: tuple[Node, ...]) -> None:
        for at, node in enumerate(nodes):
            if isinstance(node, LineBreak) and (
                (at and isinstance(nodes[at - 1], CodeBlock))
                or (at + 1 < len(nodes) and isinstance(nodes[at + 1], CodeBlock | Quote))
            ):
                continue  # a block is a line of its own already: the break would be an empty line
            self.node(node)

    def node(self, node: Node) -> None:
        out, colours = self._out, self._colours
        if isinstance(node, Text):
            out.append(_escape(node.text))
        elif isinstance(node, LineBreak):
            out.append("<br/>")
        elif isinstance(node, Code):
            out.append(f'<code style="background-color: {colours.code_background}">{_escape(node.text)}</code>')
        elif isinstance(node, CodeBlock):
            out.append(
                f'<table width="100%" cellspacing="0" cellpadding="6" bgcolor="{colours.code_background}"><tr><td>'
                f'<code style="white-space: pre-wrap">{_escape(node.text)}</code></td></tr></table>'
            )
        elif isinstance(node, Styled):
            tag = _TAGS[node.style]
            out.append(f"<{tag}>")
            self.nodes(node.children)
            out.append(f"</{tag}>")
        elif isinstance(node, Quote):
            out.append(
                f'<table cellspacing="0" cellpadding="1"><tr><td width="4" bgcolor="{colours.quote_bar}"></td>'
                '<td width="8"></td><td>'
            )
            self.nodes(node.children)
            out.append("</td></tr></table>")
        else:
            self.spoiler(node)

    def spoiler(self, node: Spoiler) -> None:
        number = self._spoilers
        self._spoilers += 1
        if number in self._revealed:
            self._out.append(f'<span style="background-color: {self._colours.spoiler_revealed}">')
            self.nodes(node.children)
            self._out.append("</span>")
            return
        self._spoilers += _count(node.children)  # the ones inside keep their numbers for when it is shown
        bar = "".join(c if c.isspace() else HIDDEN_CHARACTER for c in _plain(node.children))
        colour = self._colours.spoiler
        self._out.append(
            f'<a href="{SPOILER_LINK}{number}" style="color: {colour}; background-color: {colour};'
            f' text-decoration: none">{_escape(bar)}</a>'
        )


def _escape(text: str) -> str:
    return html.escape(text, quote=True)


__all__ = ["SPOILER_LINK", "MarkdownColours", "parse", "plain_text", "render", "spoiler_count"]
