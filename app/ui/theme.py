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
OK_BACKGROUND = "#e6f4ea"
QUIET_BACKGROUND = "#f0f0f0"
# Text on the diff backgrounds: set with them, so a diff stays readable on a dark palette too.
DIFF_ADDED_TEXT = "#0b5a22"
DIFF_REMOVED_TEXT = "#9b1c14"
CONFLICT_TEXT = "#3d2a00"  # dark text on the amber hint background

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
CONFLICT_STYLE = (
    f"#conflict {{ background-color: {HINT_BACKGROUND}; border: 1px solid {HINT_BORDER}; border-radius: 4px; }}"
    f" #conflict QLabel {{ color: {CONFLICT_TEXT}; }}"
)
CAUGHT_UP_STYLE = f"color: {OK_GREEN};"


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


# -- the facts timeline ------------------------------------------------------------------------------
TIMELINE_STATUS_COLOURS = {
    "active": "#3b6fd4",
    "pending": "#e09b1a",
    "archived": "#8d96a3",
    "rejected": "#d0675d",
    "forgotten": "#b4b4c0",
}
TIMELINE_WORLD_CURSOR = "#d2472f"  # the world time the slice is taken at
TIMELINE_RECORDED_B = "#7a4fc4"  # the second recorded time when comparing
TIMELINE_NOW_LINE = "#8a8a8a"
TIMELINE_GRID = "#e6e8ec"
TIMELINE_ROW_ALTERNATE = "#f8f9fb"
TIMELINE_ROW_SELECTED = "#dde6f6"
TIMELINE_TRACK = "#d4d8df"
TIMELINE_PLACEHOLDER = "#eceef2"
TIMELINE_TEXT = "#1f1f1f"
TIMELINE_CHIP_STYLE = "border-radius: 8px; padding: 1px 8px; color: white; background-color: {colour};"


def status_colour(status: str) -> QColor:
    """The colour a fact's status is drawn in on the timeline (bars, chips, dots)."""
    return QColor(TIMELINE_STATUS_COLOURS.get(status, MUTED_GREY))


def status_chip_style(status: str) -> str:
    """A small rounded label in the status's colour."""
    return TIMELINE_CHIP_STYLE.format(colour=TIMELINE_STATUS_COLOURS.get(status, MUTED_GREY))


def scaled_font(font: QFont, factor: float, *, bold: bool = False) -> QFont:
    """`font` scaled by `factor` (e.g. a fact's text, large enough to read at a glance)."""
    scaled = QFont(font)
    scaled.setPointSizeF(font.pointSizeF() * factor)
    scaled.setBold(bold)
    return scaled
