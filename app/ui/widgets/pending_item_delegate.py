"""Draws a pending-queue row: the fact's text, larger, on up to two lines, then who it is about, where it
was said, how long ago and what it is (type, confidence, importance) in muted lines (two when the text
takes one); the mark box on the left. Reads the row's record from the model (memory only).

Each row is drawn once into an image kept for what it shows (text, state, size, look) and then only
copied: a decision moves every row below it up one, and redrawing their text was most of what a key
press cost the window (bench/bench_ui_stall.py --scenario triage). The two rows a decision shows for the
first time (the next one, selected; the one coming into view) are drawn ahead between keys (`prepare`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette, QPixmap, QTextLayout, QTextOption
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from app.runtime.api.views import PendingItem
from app.ui.models.pending_model import ChangedRole, PendingModel, meta_line
from app.ui.models.roles import RecordRole
from app.ui.theme import AMBER, LOOK_CHANGE_EVENTS, colours, scaled_font, themed

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


def row_colours(palette: QPalette, group: QPalette.ColorGroup, *, selected: bool) -> tuple[QColor, QColor]:
    """The colours of a row's text and of its details: the view's text (its selection's text when selected)
    and, for the details, the theme's muted grey (selected, the selection's text: a paler shade of it did
    not read on the selection's blue)."""
    if selected:
        text = palette.color(group, QPalette.ColorRole.HighlightedText)
        return text, QColor(text)
    return palette.color(group, QPalette.ColorRole.Text), QColor(colours().muted)


CACHE_ROWS = 512
CACHE_IMAGES = 96  # a few screenfuls of rows, each selected or not


SELECTED = QStyle.StateFlag.State_Selected.value
ACTIVE = QStyle.StateFlag.State_Active.value
HAS_FOCUS = QStyle.StateFlag.State_HasFocus.value
ALTERNATE = QStyleOptionViewItem.ViewItemFeature.Alternate.value
CURRENT_ROW_CHANGED = frozenset((QEvent.Type.FocusIn, QEvent.Type.FocusOut, QEvent.Type.WindowActivate))


class _LooksWatcher(QObject):
    """Counts the view's font, palette and style changes (a theme switch, a zoom), so a row's image can be
    keyed by that count instead of reading the font's and palette's keys at every row painted; calls
    `changed` on those and when the view's current row would look different (focus, activation)."""

    def __init__(self, view: QWidget, changed: Callable[[], None]) -> None:
        super().__init__(view)
        self.generation = 0
        self._changed = changed
        view.installEventFilter(self)

    def eventFilter(self, _watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in LOOK_CHANGE_EVENTS:
            self.generation += 1
            self._changed()
        elif kind in CURRENT_ROW_CHANGED:
            self._changed()
        return False


class PendingItemDelegate(QStyledItemDelegate):
    """Keeps each row's laid-out lines (per text, width and font) so a repaint only draws.

    `look_changed` is emitted when rows drawn ahead by `prepare` would no longer be used: a row painted in
    a way not seen yet (a new width, a new font), the view's focus or the window's activation changed.

    `rows`, the pending model when the view shows it through `native_rows`, is read directly by row
    number: a repaint then asks nothing of the model through Qt."""

    look_changed = Signal()

    def __init__(self, parent: QWidget | None = None, rows: PendingModel | None = None) -> None:
        super().__init__(parent)
        self._rows = rows
        self._looks = _LooksWatcher(parent, self.look_changed.emit) if parent is not None else None
        self._lines: dict[tuple[str, int, str], list[str]] = {}
        self._fonts: dict[str, tuple[QFont, QFont, QFontMetrics, QFontMetrics]] = {}
        self._images: OrderedDict[Hashable, QPixmap] = OrderedDict()
        self._metas: dict[Hashable, str] = {}
        self._size: tuple[int, QSize] | None = None
        # The option a row other than the current one was last painted with (per look), for prepare().
        self._seen: tuple[int, QStyleOptionViewItem, float, QPainter.RenderHint] | None = None
        self.drawn = 0  # rows drawn afresh (not copied from an image), for the tests

    def _fonts_for(self, base: QFont) -> tuple[QFont, QFont, QFontMetrics, QFontMetrics]:
        """The title and meta fonts (and their metrics) for the view's font, made once."""
        key = base.key()
        fonts = self._fonts.get(key)
        if fonts is None:
            title, meta = scaled_font(base, TITLE_SCALE), scaled_font(base, META_SCALE)
            fonts = self._fonts[key] = (title, meta, QFontMetrics(title), QFontMetrics(meta))
        return fonts

    def _meta(self, item: PendingItem) -> str:
        """The row's muted line, made again when the fact changes and once a minute ("4 h ago")."""
        fact = item.fact
        key = (fact.id, fact.revision, fact.snoozed_until, int(time.monotonic() // 60))
        meta = self._metas.get(key)
        if meta is None:
            if len(self._metas) >= CACHE_ROWS:
                self._metas.clear()
            meta = self._metas[key] = meta_line(item)
        return meta

    def _title_lines(self, text: str, font: QFont, width: int) -> list[str]:
        key = (text, width, font.key())
        lines = self._lines.get(key)
        if lines is None:
            if len(self._lines) >= CACHE_ROWS:
                self._lines.clear()
            lines = self._lines[key] = wrapped_lines(text, font, width, TITLE_LINES)
        return lines

    def _row(self, index: QModelIndex | QPersistentModelIndex) -> tuple[PendingItem, bool, bool] | None:
        """The row's item, whether it changed meanwhile and whether it is marked."""
        if self._rows is not None:
            return self._rows.row_look(index.row())
        item = index.data(RecordRole)
        if not isinstance(item, PendingItem):
            return None
        return item, bool(index.data(ChangedRole)), index.data(Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.Checked

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        row = self._row(index)
        if row is None:
            super().paint(painter, option, index)
            return
        device = painter.device()
        ratio = device.devicePixelRatioF() if device is not None else 1.0
        image = self._image(option, index, row, ratio, painter.renderHints())
        rect = option.rect
        painter.drawPixmap(rect.x(), rect.y(), image)

    def prepare(self, index: QModelIndex, *, selected: bool) -> bool:
        """Draw the row at `index` into its image ahead of its showing, as the view would paint it now as
        its current row (`selected`) or as another row; returns whether it had to be drawn. The pane calls
        this between keys for the rows a decision will show afresh, so the repaint right after the key only
        copies (see PendingPane._on_prepare_timer_timeout)."""
        view = self.parent()
        if self._seen is None or self._looks is None or not index.isValid() or not isinstance(view, QWidget):
            return False
        looks, template, ratio, hints = self._seen
        row = self._row(index)
        if looks != self._looks.generation or row is None:
            return False
        option = QStyleOptionViewItem(template)  # a row that is not the current one, as last painted
        option.index = index
        if selected:
            # As QListView paints its current row: selected, focused when the view is, active with the window.
            state = option.state.value & ~(HAS_FOCUS | ACTIVE) | SELECTED
            state |= (HAS_FOCUS if view.hasFocus() else 0) | (ACTIVE if view.isActiveWindow() else 0)
            option.state = QStyle.StateFlag(state)
        drawn = self.drawn
        self._image(option, index, row, ratio, hints)
        return self.drawn > drawn

    def _image(
        self,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
        row: tuple[PendingItem, bool, bool],
        ratio: float,
        hints: QPainter.RenderHint,
    ) -> QPixmap:
        """The row's image for this option: copied from the cache, or drawn into it."""
        item, changed, marked = row
        # The key is made from what the view and the model say, so a copy costs no style work. A row's
        # alternate shade is the view's (it paints it beneath): the same image serves both shades.
        meta = self._meta(item)
        state = option.state.value
        selected = bool(state & SELECTED)
        if not selected:
            # Only a selected row looks different when the window is not the active one (a menu is open):
            # the others are drawn as active, so opening and closing the snooze menu redraws no row.
            state |= ACTIVE
        rect = option.rect
        width, height = rect.width(), rect.height()
        looks: Hashable = (
            self._looks.generation if self._looks is not None else (option.palette.cacheKey(), option.font.key())
        )
        if self._looks is not None and not state & (SELECTED | HAS_FOCUS):
            seen = self._seen
            if seen is None or seen[0] != looks or seen[1].rect.size() != rect.size() or seen[2] != ratio:
                self._seen = (self._looks.generation, QStyleOptionViewItem(option), ratio, hints)
                self.look_changed.emit()
        fact = item.fact
        key = (
            fact.id, fact.revision, fact.content, meta, changed, marked, state,
            option.features.value & ~ALTERNATE, width, height, ratio, looks,
        )  # fmt: skip
        image = self._images.get(key)
        if image is not None:
            self._images.move_to_end(key)
            return image
        opt = QStyleOptionViewItem(option)
        if self._rows is not None:
            # What initStyleOption would read role by role (each a call into Python through the proxy):
            # the row draws its own text, so only the mark box is needed.
            opt.features |= QStyleOptionViewItem.ViewItemFeature.HasCheckIndicator
            opt.checkState = Qt.CheckState.Checked if marked else Qt.CheckState.Unchecked
            if isinstance(index, QModelIndex):
                opt.index = index
        else:
            self.initStyleOption(opt, index)
        opt.text = ""
        opt.state = QStyle.StateFlag(state)
        opt.features &= ~QStyleOptionViewItem.ViewItemFeature.Alternate
        image = QPixmap(max(1, round(width * ratio)), max(1, round(height * ratio)))
        image.setDevicePixelRatio(ratio)
        image.fill(Qt.GlobalColor.transparent)  # over the row's background, which the view paints
        opt.rect = QRect(0, 0, width, height)
        inner = QPainter(image)
        try:
            inner.setRenderHints(hints)
            self._draw(inner, opt, item, meta, changed)
        finally:
            inner.end()
        if len(self._images) >= CACHE_IMAGES:
            self._images.popitem(last=False)
        self._images[key] = image
        return image

    def _draw(self, painter: QPainter, opt: QStyleOptionViewItem, item: PendingItem, meta: str, changed: bool) -> None:
        self.drawn += 1
        widget = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        area: QRect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, widget)
        area = area.adjusted(4, PADDING - 2, -6, -(PADDING - 2))
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        group = (
            QPalette.ColorGroup.Active if opt.state & QStyle.StateFlag.State_Active else QPalette.ColorGroup.Inactive
        )
        text_colour, muted = row_colours(opt.palette, group, selected=selected)

        title_font, meta_font, title_metrics, meta_metrics = self._fonts_for(opt.font)
        painter.save()
        try:
            painter.setFont(title_font)
            painter.setPen(text_colour)
            titles, metas = self.row_lines(item, meta, changed, opt.font, area.width())
            left = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            top = area.top()
            for line in titles:
                painter.drawText(QRect(area.left(), top, area.width(), title_metrics.height()), left, line)
                top += title_metrics.lineSpacing()
            painter.setFont(meta_font)
            top += 3
            flag = f"{CHANGED_WORDS} · " if changed else ""
            for line in metas:
                rect = QRect(area.left(), top, area.width(), meta_metrics.height())
                if flag and line.startswith(flag):
                    painter.setPen(text_colour if selected else themed(AMBER))
                    painter.drawText(rect, left, flag)
                    rect = rect.adjusted(meta_metrics.horizontalAdvance(flag), 0, 0, 0)
                    line = line[len(flag) :]
                painter.setPen(muted)
                painter.drawText(rect, left, line)
                top += meta_metrics.lineSpacing()
        finally:
            painter.restore()

    def row_lines(
        self, item: PendingItem, meta: str, changed: bool, font: QFont, width: int
    ) -> tuple[list[str], list[str]]:
        """The lines a row of `width` shows: its text on up to two lines, then its details ("changed
        meanwhile" first when it did) on the lines left, two when the text takes one. What does not fit is
        cut with "…" (the row's tooltip has it all)."""
        title_font, meta_font, _title_metrics, _meta_metrics = self._fonts_for(font)
        titles = self._title_lines(" ".join(item.fact.content.split()), title_font, width)
        details = f"{CHANGED_WORDS} · {meta}" if changed else meta
        return titles, self._meta_lines(details, meta_font, width, TITLE_LINES + 1 - len(titles))

    def _meta_lines(self, text: str, font: QFont, width: int, lines: int) -> list[str]:
        key = (text, width, f"{font.key()}/{lines}")
        found = self._lines.get(key)
        if found is None:
            if len(self._lines) >= CACHE_ROWS:
                self._lines.clear()
            found = self._lines[key] = wrapped_lines(text, font, width, lines)
        return found

    def sizeHint(self, option: QStyleOptionViewItem, _index: QModelIndex | QPersistentModelIndex) -> QSize:
        looks = self._looks.generation if self._looks is not None else None
        if looks is not None and self._size is not None and self._size[0] == looks:
            return self._size[1]  # asked at every scroll and layout; the same until the font changes
        _title_font, _meta_font, title_metrics, meta_metrics = self._fonts_for(option.font)
        size = QSize(200, title_metrics.lineSpacing() * TITLE_LINES + meta_metrics.height() + 3 + 2 * PADDING)
        if looks is not None:
            self._size = (looks, size)
        return size
