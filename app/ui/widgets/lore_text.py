"""A message with the text that fired lorebook entries highlighted, as rich text for a QLabel.

An explicit span (offsets recorded by the lorebook engine) is used when the explanation has one; else
the fired key's occurrences in the text are found (case-insensitively; a `/regex/flags` key as a
regular expression), which is what the engine matched on.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

from app.ui.theme import LORE_HIGHLIGHT, LORE_HIGHLIGHT_TEXT

Span = tuple[int, int]
_REGEX_KEY = re.compile(r"^/(.+)/([a-z]*)$", re.DOTALL)


def key_spans(text: str, key: str) -> list[Span]:
    """Where `key` occurs in `text` (case-insensitive; whole words when the key starts and ends with one)."""
    if not key or key.startswith("("):  # "(constant)", "(sticky)", "(@@activate)": no text fired it
        return []
    regex = _REGEX_KEY.match(key)
    if regex is not None:
        flags = re.IGNORECASE if "i" in regex.group(2) else 0
        try:
            pattern = re.compile(regex.group(1), flags)
        except re.error:
            return []
    else:
        left = r"\b" if key[:1].isalnum() else ""
        right = r"\b" if key[-1:].isalnum() else ""
        pattern = re.compile(left + re.escape(key) + right, re.IGNORECASE)
    return [(m.start(), m.end()) for m in pattern.finditer(text) if m.end() > m.start()]


def merged(spans: Iterable[Span], length: int) -> list[Span]:
    """Spans inside the text, sorted, overlapping ones joined."""
    out: list[Span] = []
    for start, end in sorted((max(0, s), min(length, e)) for s, e in spans):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def highlighted_html(text: str, spans: Sequence[Span]) -> str:
    """`text` escaped, the spans marked, line breaks kept."""
    pieces = []
    at = 0
    for start, end in merged(spans, len(text)):
        pieces.append(html.escape(text[at:start]))
        pieces.append(
            f'<span style="background-color: {LORE_HIGHLIGHT}; color: {LORE_HIGHLIGHT_TEXT};">'
            f"{html.escape(text[start:end])}</span>"
        )
        at = end
    pieces.append(html.escape(text[at:]))
    return "".join(pieces).replace("\n", "<br>")
