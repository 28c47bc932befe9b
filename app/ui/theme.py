"""Every colour, font and stylesheet of the window, so every pane looks like part of one window.

Widgets never carry inline colours or stylesheets: they call the functions here (a future dark theme
changes this module only).
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QFontDatabase
from PySide6.QtWidgets import QLabel

from app.runtime.events import ConnectionState

ERROR_RED = "#c62828"
OK_GREEN = "#2e7d32"
AMBER = "#b26a00"
MUTED_GREY = "#6b6b6b"
HINT_BACKGROUND = "#fff4d6"
HINT_BORDER = "#e0b84d"
INHERITED_BACKGROUND = "#f1f1f1"  # a switch paused from above (its server, everywhere)
FAMILIAR_LINE_BACKGROUND = "#eef3fb"
ERROR_BACKGROUND = "#fdecea"
ERROR_BORDER = "#f5c2c0"
NOTICE_BACKGROUND = "#323232"
NOTICE_TEXT = "#f5f5f5"
NOTICE_ACTION = "#8ab4f8"
DIFF_ADDED = "#e6f4ea"
DIFF_REMOVED = "#fce8e6"

STATE_COLOURS: dict[ConnectionState, str] = {
    ConnectionState.STOPPED: "#9e9e9e",
    ConnectionState.CONNECTING: "#f0a202",
    ConnectionState.RECONNECTING: "#f0a202",
    ConnectionState.CONNECTED: "#2e9d4f",
    ConnectionState.FAILED: "#d32f2f",
}

STATE_WORDS: dict[ConnectionState, str] = {
    ConnectionState.STOPPED: "Stopped",
    ConnectionState.CONNECTING: "Connecting…",
    ConnectionState.RECONNECTING: "Reconnecting…",
    ConnectionState.CONNECTED: "Connected",
    ConnectionState.FAILED: "Failed",
}

# The "Why did it say that" pane: one hue per prompt layer (mid-tones, readable on light and dark
# backgrounds), and the highlight of the text that fired a lorebook entry (its text colour set with it).
LAYER_COLOURS: dict[str, str] = {
    "character": "#5b8def",
    "lorebook": "#d9962b",
    "summary": "#3fae74",
    "reflections": "#a873d9",
    "dossiers": "#d9665f",
    "memory": "#2fa8b8",
    "history": "#8a97a6",
}
LAYER_FALLBACK_COLOUR = "#9c8f7a"
LORE_HIGHLIGHT = "#ffd54f"
LORE_HIGHLIGHT_TEXT = "#1a1a1a"
EXPLAIN_DIFF_TEXT = "#1a1a1a"  # on DIFF_ADDED / DIFF_REMOVED, so the diff reads on a dark palette too


def layer_colour(name: str) -> QColor:
    return QColor(LAYER_COLOURS.get(name, LAYER_FALLBACK_COLOUR))


# -- stylesheets (each scoped to an object name, so it styles that widget only) ----------------------
NAVIGATION_STYLE = (
    "#navigation { border: none; border-right: 1px solid #d6d6d6; background: #f4f4f6; padding-top: 8px;"
    " outline: 0; }"
    " #navigation::item { padding: 8px 14px; }"
    " #navigation::item:selected { background: #dde6f6; color: black; border-left: 3px solid #3b6fd4; }"
)
ERROR_BANNER_STYLE = (
    f"color: {ERROR_RED}; background-color: {ERROR_BACKGROUND}; border: 1px solid {ERROR_BORDER};"
    " border-radius: 4px; padding: 6px 8px;"
)
SETUP_HINT_STYLE = (
    f"#setupHint {{ background-color: {HINT_BACKGROUND}; border: 1px solid {HINT_BORDER}; border-radius: 4px; }}"
)
NOTICE_STYLE = (
    f"#notice {{ background-color: {NOTICE_BACKGROUND}; border-radius: 6px; }}"
    f" #notice QLabel {{ color: {NOTICE_TEXT}; }}"
    f" #notice QPushButton {{ color: {NOTICE_ACTION}; background: transparent; border: none; font-weight: bold;"
    " padding: 2px 6px; }"
    f" #notice QPushButton:hover {{ text-decoration: underline; }}"
)
STATE_MESSAGE_STYLE = f"color: {MUTED_GREY};"
PAUSE_LIGHT_STYLE = (
    f"#pauseLight {{ color: {AMBER}; font-weight: bold; border: 1px solid transparent; border-radius: 3px;"
    " padding: 0 6px; }"
    f" #pauseLight:hover {{ text-decoration: underline; }}"
    f" #pauseLight:focus {{ border: 1px solid {AMBER}; }}"
)
SWITCH_HINT_STYLE = f"color: {AMBER};"


def dot_style(colour: str, size: int) -> str:
    """A round coloured dot (a QLabel of `size` x `size`)."""
    return f"background-color: {colour}; border-radius: {size // 2}px;"


def text_colour_style(colour: str) -> str:
    return f"color: {colour};"


def error_colour() -> QColor:
    return QColor(ERROR_RED)


def monospace_font() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def title_label(text: str) -> QLabel:
    """A pane title: larger and bold."""
    label = QLabel(text)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * 1.5)
    font.setBold(True)
    label.setFont(font)
    return label


def section_label(text: str) -> QLabel:
    """A heading inside a pane: bold, normal size."""
    label = QLabel(text)
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    return label


def small_label(text: str) -> QLabel:
    """Explanatory small print, muted and word-wrapped."""
    label = QLabel(text)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * 0.9)
    label.setFont(font)
    label.setWordWrap(True)
    label.setStyleSheet(STATE_MESSAGE_STYLE)
    return label
