"""The lorebook's timed effects in force: sticky entries staying in a place's replies for a while, and
cooling-down ones waiting to fire again, with Clear selected and Clear all (the pane ends them)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QAbstractItemView, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from app.runtime.api.views import TimedEffectView
from app.ui.models.base import Column, RecordTableModel
from app.ui.theme import small_label
from app.ui.widgets.record_table import RecordTableView

NONE_IN_FORCE = "No sticky or cooldown effects in force anywhere."


def _messages(effect: TimedEffectView) -> str:
    return f"{effect.start + 1}–{effect.end}" if effect.end is not None else f"{effect.start + 1}–"


class TimedEffectsPanel(QWidget):
    clear_selected_requested = Signal()
    clear_all_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model: RecordTableModel[TimedEffectView] = RecordTableModel(
            (
                Column("Place", lambda t: t.place.name),
                Column("Entry", lambda t: t.title or "(an entry since changed)"),
                Column("Effect", lambda t: t.kind),
                Column("Messages", _messages),
            ),
            parent=self,
        )
        self.table = RecordTableView(
            NONE_IN_FORCE,
            self.model,
            selection=QAbstractItemView.SelectionMode.ExtendedSelection,  # Clear selected ends several at once
            alternating=False,
            wrap=True,
            stretch="last",
        )
        clear_one = QPushButton("Clear selected")
        clear_one.setToolTip("End the selected effects now")
        clear_one.clicked.connect(lambda _checked=False: self.clear_selected_requested.emit())
        clear_all = QPushButton("Clear all")
        clear_all.setToolTip("End every sticky and cooldown effect now")
        clear_all.clicked.connect(lambda _checked=False: self.clear_all_requested.emit())
        layout = QVBoxLayout(self)
        layout.addWidget(
            small_label("Sticky entries stay in a place's replies for a while; cooling-down ones wait to fire again.")
        )
        layout.addWidget(self.table, 1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(clear_one)
        buttons.addWidget(clear_all)
        layout.addLayout(buttons)

    def selected(self) -> list[TimedEffectView]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.model.record(row) for row in rows]
