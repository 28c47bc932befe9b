"""A word diff as rich text: words only in the new text on green and underlined, words only in the old one
on red and struck through. Foreground and background are both set, so it reads on light and dark palettes,
and the underline and strike-through say it without colour too. Every text is escaped."""

from __future__ import annotations

import html
from collections.abc import Sequence

from app.runtime.api.views import DiffPiece
from app.ui.theme import DIFF_ADDED, DIFF_ADDED_TEXT, DIFF_REMOVED, DIFF_REMOVED_TEXT

ADDED_STYLE = f"background-color: {DIFF_ADDED}; color: {DIFF_ADDED_TEXT}; text-decoration: underline;"
REMOVED_STYLE = f"background-color: {DIFF_REMOVED}; color: {DIFF_REMOVED_TEXT}; text-decoration: line-through;"


def diff_html(pieces: Sequence[DiffPiece]) -> str:
    """The pieces as one line of HTML (spaces kept inside the marked runs, trimmed at their ends)."""
    out: list[str] = []
    for n, piece in enumerate(pieces):
        text = html.escape(piece.text)
        if piece.op == "same":
            out.append(text)
            continue
        core = piece.text.rstrip()
        tail = piece.text[len(core) :]
        following = pieces[n + 1] if n + 1 < len(pieces) else None
        if piece.op == "removed" and not tail and following is not None and following.op == "added":
            tail = " "  # "storm. was lit", not "storm.was lit"
        style = ADDED_STYLE if piece.op == "added" else REMOVED_STYLE
        out.append(f'<span style="{style}">{html.escape(core)}</span>{html.escape(tail)}')
    return "".join(out)


def legend_html(new: str = "this item", old: str = "the fact it is compared with") -> str:
    """What the colours mean, in the same styles."""
    return (
        f'<span style="{ADDED_STYLE}">only in {html.escape(new)}</span> &nbsp; '
        f'<span style="{REMOVED_STYLE}">only in {html.escape(old)}</span>'
    )
