"""The table view every pane shows its records in: one setup, the differences as arguments.

A record table selects whole rows, one at a time, never edits in place, has no row numbers and keeps each
row to one line (the cell's text elided at the right), and says something useful while it is empty
(`PlaceholderTableView`). What differs from table to table (several rows chosen at once, a grid or none,
a row height, which column takes the width left over) is said where the table is made:

    view = RecordTableView(NO_ONE, self.model, grid=False, row_height=24, stretch=NAME)
"""

from __future__ import annotations

from typing import Literal

from PySide6.QtCore import QAbstractItemModel, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QWidget

from app.ui.widgets.placeholder_table import PlaceholderTableView

SelectionMode = QAbstractItemView.SelectionMode
SelectionBehavior = QAbstractItemView.SelectionBehavior
Stretch = int | Literal["last"] | None


class RecordTableView(PlaceholderTableView):
    def __init__(
        self,
        placeholder: str = "",
        model: QAbstractItemModel | None = None,
        *,
        selection: SelectionMode = SelectionMode.SingleSelection,
        behavior: SelectionBehavior = SelectionBehavior.SelectRows,
        alternating: bool = True,
        grid: bool = True,
        wrap: bool = False,
        row_height: int | None = None,
        columns: QHeaderView.ResizeMode | None = None,
        stretch: Stretch = None,
        min_column: int | None = None,
        left_headers: bool = False,
        per_pixel: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        """`columns`: how every column is sized; `stretch`: the column that takes the width left over ("last"
        for the last one, whichever it is); `min_column`: the narrowest a column gets; `left_headers`: the
        headers' words at the left, as the cells' are; `per_pixel`: it scrolls by pixels, not rows (rows of
        very different heights). The model, when given, is set first: a column's size needs its columns."""
        super().__init__(placeholder, parent)
        if model is not None:
            self.setModel(model)
        self.setSelectionBehavior(behavior)
        self.setSelectionMode(selection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setAlternatingRowColors(alternating)
        self.setShowGrid(grid)
        self.setWordWrap(wrap)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.verticalHeader().setVisible(False)
        if row_height is not None:
            self.verticalHeader().setDefaultSectionSize(row_height)
        header = self.horizontalHeader()
        if columns is not None:
            header.setSectionResizeMode(columns)
        if stretch == "last":
            header.setStretchLastSection(True)
        elif stretch is not None:
            header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
        if min_column is not None:
            header.setMinimumSectionSize(min_column)
        if left_headers:
            header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        if per_pixel:
            self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
