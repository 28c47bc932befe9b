"""Fonts and colours shared by the panes, so every pane looks like part of one window."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QFontDatabase
from PySide6.QtWidgets import QLabel

from app.runtime.events import ConnectionState

ERROR_RED = "#c62828"
OK_GREEN = "#2e7d32"
MUTED_GREY = "#6b6b6b"
HINT_BACKGROUND = "#fff4d6"
HINT_BORDER = "#e0b84d"
FAMILIAR_LINE_BACKGROUND = "#eef3fb"

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
    label.setStyleSheet(f"color: {MUTED_GREY};")
    return label
