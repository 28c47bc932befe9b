"""Draws a pending-queue row: the fact's text, larger, on up to two lines, then who it is about, where it
was said, how long ago and what it is (type, confidence, importance) in a muted line; the mark box on the
left. Reads the row's record from the model (memory only)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette, QTextLayout, QTextOption
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from app.runtime.views import PendingItem
from app.ui.models.pending_model import ChangedRole, meta_line
from app.ui.models.roles import RecordRole
from app.ui.theme import AMBER, scaled_font

TITLE_SCALE = 1.1
TITLE_LINES = 2
META_SCALE = 0.9
PADDING = 7
CHANGED_WORDS = "changed meanwhile"


def wrapped_lines(text: str, font: QFont, width: int, lines: int) -> list[str]:
    """`text` wrapped at word boundaries into at most `lines` lines of `width` pixels, the last one elided."""
    metrics = QFontMetrics(font)
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    out: list[str] = []
    layout.beginLayout()
    try:
        while len(out) < lines:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(max(1, width))
            start, length = line.textStart(), line.textLength()
            if len(out) == lines - 1:
                out.append(metrics.elidedText(text[start:], Qt.TextElideMode.ElideRight, max(1, width)))
                break
            out.append(text[start : start + length].rstrip())
    finally:
        layout.endLayout()
    return out


CACHE_ROWS = 512


class PendingItemDelegate(QStyledItemDelegate):
    """Keeps each row's laid-out lines (per text, width and font) so a repaint only draws."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._lines: dict[tuple[str, int, str], list[str]] = {}
        self._elided: dict[tuple[str, int, str], str] = {}
        self._fonts: dict[str, tuple[QFont, QFont, QFontMetrics, QFontMetrics]] = {}

    def _fonts_for(self, base: QFont) -> tuple[QFont, QFont, QFontMetrics, QFontMetrics]:
        """The title and meta fonts (and their metrics) for the view's font, made once."""
        key = base.key()
        fonts = self._fonts.get(key)
        if fonts is None:
            title, meta = scaled_font(base, TITLE_SCALE), scaled_font(base, META_SCALE)
            fonts = self._fonts[key] = (title, meta, QFontMetrics(title), QFontMetrics(meta))
        return fonts

    def _elide(self, text: str, metrics: QFontMetrics, font: QFont, width: int) -> str:
        key = (text, width, font.key())
        elided = self._elided.get(key)
        if elided is None:
            if len(self._elided) >= CACHE_ROWS:
                self._elided.clear()
            elided = self._elided[key] = metrics.elidedText(text, Qt.TextElideMode.ElideRight, max(0, width))
        return elided

    def _title_lines(self, text: str, font: QFont, width: int) -> list[str]:
        key = (text, width, font.key())
        lines = self._lines.get(key)
        if lines is None:
            if len(self._lines) >= CACHE_ROWS:
                self._lines.clear()
            lines = self._lines[key] = wrapped_lines(text, font, width, TITLE_LINES)
        return lines

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        item = index.data(RecordRole)
        if not isinstance(item, PendingItem):
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        widget = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        area: QRect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, widget)
        area = area.adjusted(4, PADDING - 2, -6, -(PADDING - 2))
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        group = (
            QPalette.ColorGroup.Active if opt.state & QStyle.StateFlag.State_Active else QPalette.ColorGroup.Inactive
        )
        text_colour = opt.palette.color(
            group, QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        )
        muted = QColor(text_colour)
        muted.setAlphaF(0.72 if selected else 0.62)

        title_font, meta_font, title_metrics, meta_metrics = self._fonts_for(opt.font)
        painter.save()
        try:
            painter.setFont(title_font)
            painter.setPen(text_colour)
            title = " ".join(item.fact.content.split())
            top = area.top()
            for line in self._title_lines(title, title_font, area.width()):
                painter.drawText(
                    QRect(area.left(), top, area.width(), title_metrics.height()),
                    int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                    line,
                )
                top += title_metrics.lineSpacing()
            painter.setFont(meta_font)
            meta_rect = QRect(area.left(), top + 3, area.width(), meta_metrics.height())
            meta = meta_line(item)
            if index.data(ChangedRole):
                painter.setPen(text_colour if selected else QColor(AMBER))
                flag = f"{CHANGED_WORDS} · "
                painter.drawText(meta_rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), flag)
                offset = meta_metrics.horizontalAdvance(flag)
                meta_rect = meta_rect.adjusted(offset, 0, 0, 0)
            painter.setPen(muted)
            painter.drawText(
                meta_rect,
                int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                self._elide(meta, meta_metrics, meta_font, meta_rect.width()),
            )
        finally:
            painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, _index: QModelIndex | QPersistentModelIndex) -> QSize:
        _title_font, _meta_font, title_metrics, meta_metrics = self._fonts_for(option.font)
        return QSize(200, title_metrics.lineSpacing() * TITLE_LINES + meta_metrics.height() + 3 + 2 * PADDING)
