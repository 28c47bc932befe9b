"""Draws a cell's word diff (removed words struck through in red, added ones in green) where the model
gives one under `diff_role`; other cells are drawn as usual."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPointF, QRectF
from PySide6.QtGui import QAbstractTextDocumentLayout, QPainter, QPalette, QTextDocument
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from app.ui.widgets.word_diff import diff_html


class DiffDelegate(QStyledItemDelegate):
    def __init__(self, diff_role: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._role = diff_role

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        pieces = index.data(self._role)
        if not pieces:
            super().paint(painter, option, index)
            return
        view_option = QStyleOptionViewItem(option)
        self.initStyleOption(view_option, index)
        view_option.text = ""
        style = view_option.widget.style() if view_option.widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, view_option, painter, view_option.widget)
        document = QTextDocument()
        document.setDefaultFont(view_option.font)
        document.setDocumentMargin(0)
        document.setHtml(f"<span style='white-space:pre'>{diff_html(pieces)}</span>")
        context = QAbstractTextDocumentLayout.PaintContext()
        selected = bool(view_option.state & QStyle.StateFlag.State_Selected)
        group = QPalette.ColorGroup.Normal
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        context.palette.setColor(QPalette.ColorRole.Text, view_option.palette.color(group, role))
        rect = view_option.rect.adjusted(4, 0, -4, 0)
        painter.save()
        try:
            top = rect.top() + (rect.height() - document.size().height()) / 2
            painter.translate(QPointF(rect.left(), top))
            painter.setClipRect(QRectF(0, 0, rect.width(), rect.height()))
            document.documentLayout().draw(painter, context)
        finally:
            painter.restore()
