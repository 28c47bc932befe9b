"""A coloured dot and a word for the connection state (stopped grey, connecting amber, connected green...)."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from app.runtime.events import ConnectionState
from app.ui.theme import SPACE_S, STATE_WORDS, colours, dot_style

DOT_SIZE = 12


class ConnectionIndicator(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._dot = QLabel()
        self._dot.setFixedSize(DOT_SIZE, DOT_SIZE)
        self._word = QLabel()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(SPACE_S)
        layout.addWidget(self._dot)
        layout.addWidget(self._word)
        self._state = ConnectionState.STOPPED
        self.set_state(ConnectionState.STOPPED)

    @property
    def state(self) -> ConnectionState:
        return self._state

    def text(self) -> str:
        return self._word.text()

    def dot_colour(self) -> str:
        return colours().state_colour(self._state)

    def set_state(self, state: ConnectionState, detail: str = "") -> None:
        self._state = state
        self._word.setText(STATE_WORDS[state])
        self._dot.setStyleSheet(dot_style(colours().state_colour(state), DOT_SIZE))
        self.setToolTip(detail)
