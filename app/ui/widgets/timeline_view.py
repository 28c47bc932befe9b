"""The facts timeline drawn: one row per fact, its text on the left, its bar on a world-time axis on the
right (from valid_from to valid_to; an open start fades in from the left edge, an open end runs to now),
coloured by the status it had at the slice's recorded time. A red line marks the world time of the slice,
a dashed one now; a small diamond on a bar marks when it was learned.

Virtualised: only the rows in view are painted, from the model's loaded pages (app/ui/models/
timeline_model.py); rows in view that are not loaded yet are drawn as grey placeholders and asked for
with `rows_needed(offset, count)`. Never a query from here.

Keys: Up / Down, Page Up / Page Down, Home / End move the current row; Enter emits `activated`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from PySide6.QtCore import QEvent, QModelIndex, QPoint, QPointF, QRect, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFocusEvent,
    QFont,
    QFontMetrics,
    QHelpEvent,
    QKeyEvent,
    QLinearGradient,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPen,
    QPixmap,
    QPolygonF,
    QResizeEvent,
)
from PySide6.QtWidgets import QAbstractScrollArea, QToolTip, QWidget

from app.runtime.api.views import ForgottenFact, TimelineRow
from app.ui.models.timeline_model import TimelineModel, about, row_text, tooltip
from app.ui.theme import LOOK_CHANGE_EVENTS, TIMELINE_WORLD_CURSOR, Palette, colours, status_colour
from app.ui.time_text import day
from app.ui.widgets.pending_item_delegate import wrapped_lines
from app.ui.widgets.time_axis import TimeScale, ticks

ROW_HEIGHT = 46  # two lines of a fact's text and its line of details
TITLE_LINES = 2  # a longer text is cut at the end of its second line (the row's tooltip has it whole)
HEADER_HEIGHT = 26
BAR_HEIGHT = 12
TEXT_SHARE = 0.44
TEXT_MIN, TEXT_MAX = 220, 520
PAD = 10
FADE = 36  # pixels an open start fades in over
PREFETCH_ROWS = 40  # loaded beyond the rows in view, both ways
DRAWINGS_KEPT = 400  # rows' drawings kept (about 100 KB each at 1100 px wide)
CURSOR_STRIP = 4  # half the width repainted around the world-time line when it moves
CURSOR_LABEL_STRIP = 60  # ... and around its label in the axis


@dataclass(frozen=True, slots=True)
class _Paint:
    """What one paint of the rows needs, worked out once (not per row)."""

    dirty: QRect
    colours: Palette  # the theme in force
    scale: TimeScale
    grid: tuple[float, ...]
    text_width: int
    main: QFont
    italic: QFont
    small: QFont
    main_metrics: QFontMetrics
    italic_metrics: QFontMetrics
    small_metrics: QFontMetrics

    @classmethod
    def of(cls, view: TimelineView, dirty: QRect, palette: Palette) -> _Paint:
        scale = view.scale()
        main = QFont(view.font())
        italic = QFont(main)
        italic.setItalic(True)
        small = QFont(main)
        small.setPointSizeF(max(6.0, small.pointSizeF() * 0.85))
        grid = tuple(scale.x(m) for m, _label in ticks(scale.start, scale.end, scale.width, min_gap=70, now=view.now))
        return cls(
            dirty=dirty,
            colours=palette,
            scale=scale,
            grid=grid,
            text_width=view.text_width(),
            main=main,
            italic=italic,
            small=small,
            main_metrics=QFontMetrics(main),
            italic_metrics=QFontMetrics(italic),
            small_metrics=QFontMetrics(small),
        )


class _Header(QWidget):
    """The axis above the rows: dated ticks, the world time of the slice, now."""

    def __init__(self, view: TimelineView) -> None:
        super().__init__(view)
        self._view = view
        self.drawn_texts: list[str] = []  # every text the last paint drew (what a person could read)

    def _text(self, painter: QPainter, rect: QRect | QRectF, flags: Qt.AlignmentFlag, text: str) -> None:
        self.drawn_texts.append(text)
        painter.drawText(rect, flags, text)

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        self.drawn_texts = []
        try:
            view = self._view
            p = colours()
            painter.fillRect(self.rect(), QColor(p.base))
            painter.setPen(QColor(p.timeline_grid))
            painter.drawLine(0, self.height() - 1, self.width(), self.height() - 1)
            small = QFont(self.font())
            small.setPointSizeF(max(6.0, small.pointSizeF() * 0.85))
            painter.setFont(small)
            left = view.text_width()
            painter.setPen(QColor(p.muted))
            self._text(
                painter, QRect(PAD, 0, left - 2 * PAD, self.height()), Qt.AlignmentFlag.AlignVCenter, view.summary
            )
            scale = view.scale()
            painter.setClipRect(QRect(int(scale.left) - 40, 0, int(scale.width) + 80, self.height()))
            cursor = view.cursor_time()
            x = scale.x(cursor)
            box: QRectF | None = None
            if scale.left <= x <= scale.left + scale.width:
                label = "now" if view.cursor_is_now else day(cursor)
                width = QFontMetrics(small).horizontalAdvance(label) + 12
                box = QRectF(x - width / 2, 3, width, self.height() - 8)
            metrics = QFontMetrics(small)
            for moment, text in ticks(scale.start, scale.end, scale.width, min_gap=70, now=view.now):
                tick = scale.x(moment)
                painter.drawLine(QPointF(tick, self.height() - 5), QPointF(tick, self.height() - 1))
                room = QRectF(
                    tick - metrics.horizontalAdvance(text) / 2 - 4, 2, metrics.horizontalAdvance(text) + 8, 18
                )
                if box is None or not room.intersects(box):
                    self._text(painter, QRectF(tick - 40, 2, 80, self.height() - 8), Qt.AlignmentFlag.AlignCenter, text)
            if box is not None:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QColor(TIMELINE_WORLD_CURSOR))
                painter.drawRoundedRect(box, 4, 4)
                painter.setPen(QColor("white"))
                self._text(painter, box, Qt.AlignmentFlag.AlignCenter, "now" if view.cursor_is_now else day(cursor))
        finally:
            painter.end()


class TimelineView(QAbstractScrollArea):
    current_changed = Signal(int)  # the current row, -1 for none
    rows_needed = Signal(int, int)  # offset, count: rows in (or near) view that are not loaded
    activated = Signal(int)

    def __init__(self, model: TimelineModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._model = model
        self._current = -1
        self._asked: tuple[int, int, int] | None = None
        now = datetime.now(UTC)
        self.now = now
        self._start = now - timedelta(days=30)
        self._end = now + timedelta(days=1)
        self._cursor: datetime | None = None
        self.summary = ""
        self.placeholder = ""
        self.drawn_texts: list[str] = []  # every text the last paint of the rows drew
        self._drawings: OrderedDict[tuple[object, ...], tuple[QPixmap, tuple[str, ...]]] = OrderedDict()
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setViewportMargins(0, HEADER_HEIGHT, 0, 0)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.viewport().setMouseTracking(False)
        self.verticalScrollBar().setSingleStep(ROW_HEIGHT)
        self.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        self._header = _Header(self)
        self._check = QTimer(self)
        self._check.setSingleShot(True)
        self._check.setInterval(0)
        self._check.timeout.connect(self._ask_for_missing)
        model.modelReset.connect(self._on_model_reset)
        model.dataChanged.connect(self._on_model_data_changed)
        self.setAccessibleName("Facts on the world-time axis")
        self.setToolTip("")

    # -- configuration --------------------------------------------------------------------------------------
    @property
    def model(self) -> TimelineModel:
        return self._model

    def set_axis(self, start: datetime, end: datetime, now: datetime | None = None) -> None:
        self.now = now or datetime.now(UTC)
        self._start, self._end = start, max(end, start + timedelta(hours=1))
        self._repaint()

    def axis(self) -> tuple[datetime, datetime]:
        return self._start, self._end

    def set_cursor(self, world: datetime | None) -> None:
        """The world time of the slice (None: now). Only the strips the line leaves and enters are
        repainted (a drag moves it 60 times a second; the rows' texts stay as they are)."""
        if world == self._cursor:
            return
        scale = self.scale()
        before = scale.x(self.cursor_time())
        self._cursor = world
        after = scale.x(self.cursor_time())
        height = self.viewport().height()
        for x in (before, after):
            self.viewport().update(QRect(int(x) - CURSOR_STRIP, 0, 2 * CURSOR_STRIP, height))
            self._header.update(QRect(int(x) - CURSOR_LABEL_STRIP, 0, 2 * CURSOR_LABEL_STRIP, HEADER_HEIGHT))

    @property
    def cursor_is_now(self) -> bool:
        return self._cursor is None

    def cursor_time(self) -> datetime:
        return self._cursor or self.now

    def set_summary(self, text: str) -> None:
        self.summary = text
        self._header.update()

    def set_placeholder(self, text: str) -> None:
        self.placeholder = text
        self.viewport().update()

    def _repaint(self) -> None:
        self._header.update()
        self.viewport().update()

    # -- geometry -----------------------------------------------------------------------------------------
    def text_width(self) -> int:
        return int(min(TEXT_MAX, max(TEXT_MIN, self.viewport().width() * TEXT_SHARE)))

    def scale(self) -> TimeScale:
        left = self.text_width() + PAD
        return TimeScale(self._start, self._end, left, max(40.0, self.viewport().width() - left - 2 * PAD))

    def visible_rows(self) -> tuple[int, int]:
        """First and last row (partly) in view; (0, -1) when there are none."""
        total = self._model.total
        if not total:
            return 0, -1
        top = self.verticalScrollBar().value()
        first = top // ROW_HEIGHT
        last = min(total - 1, (top + self.viewport().height()) // ROW_HEIGHT)
        return first, last

    def row_at(self, y: float) -> int:
        row = int((y + self.verticalScrollBar().value()) // ROW_HEIGHT)
        return row if 0 <= row < self._model.total else -1

    def _row_top(self, row: int) -> int:
        return row * ROW_HEIGHT - self.verticalScrollBar().value()

    def sizeHint(self) -> QSize:
        return QSize(700, HEADER_HEIGHT + 10 * ROW_HEIGHT)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        rect = self.viewport().geometry()
        self._header.setGeometry(rect.left(), rect.top() - HEADER_HEIGHT, rect.width(), HEADER_HEIGHT)
        self._update_scrollbar()
        self._check.start()

    def _update_scrollbar(self) -> None:
        bar = self.verticalScrollBar()
        page = self.viewport().height()
        bar.setPageStep(max(ROW_HEIGHT, page - ROW_HEIGHT))
        bar.setRange(0, max(0, self._model.total * ROW_HEIGHT - page))

    # -- the current row -------------------------------------------------------------------------------------
    def current_row(self) -> int:
        return self._current

    def current_record(self) -> TimelineRow | None:
        return self._model.record(self._current) if self._current >= 0 else None

    def set_current_row(self, row: int) -> None:
        row = -1 if not self._model.total else max(-1, min(row, self._model.total - 1))
        if row == self._current:
            return
        self._current = row
        if row >= 0:
            self.scroll_to(row)
        self.viewport().update()
        self.current_changed.emit(row)

    def scroll_to(self, row: int) -> None:
        bar = self.verticalScrollBar()
        top = row * ROW_HEIGHT
        if top < bar.value():
            bar.setValue(top)
        elif top + ROW_HEIGHT > bar.value() + self.viewport().height():
            bar.setValue(top + ROW_HEIGHT - self.viewport().height())

    # -- model and loading ------------------------------------------------------------------------------------
    def _on_model_reset(self) -> None:
        self._asked = None
        self._update_scrollbar()
        if self._current >= self._model.total:
            self._current = self._model.total - 1
            self.current_changed.emit(self._current)
        self._repaint()
        self._check.start()

    def _on_model_data_changed(self, _first: QModelIndex, _last: QModelIndex, _roles: object = None) -> None:
        self.viewport().update()
        self._check.start()

    @property
    def asking(self) -> bool:
        """A look for rows in view that are not loaded is due."""
        return self._check.isActive()

    def _on_scrolled(self, _value: int) -> None:
        self.viewport().update()
        self._check.start()

    def _ask_for_missing(self) -> None:
        first, last = self.visible_rows()
        if last < first:
            return
        span = self._model.missing(first, last)
        if span is None:
            return
        # Ask for what is in view plus a margin both ways, so scrolling on finds its rows loaded.
        offset = max(0, span[0] - PREFETCH_ROWS)
        count = min(self._model.total, last + PREFETCH_ROWS + 1) - offset
        ask = (self._model.generation, offset, count)
        if ask != self._asked:
            self._asked = ask
            self.rows_needed.emit(offset, count)

    # -- painting ------------------------------------------------------------------------------------------
    def painted_texts(self) -> list[str]:
        """Every text the last paints of the rows and the axis drew: what a person could read there."""
        return [*self._header.drawn_texts, *self.drawn_texts]

    def _text(self, painter: QPainter, rect: QRect | QRectF, flags: Qt.AlignmentFlag | int, text: str) -> None:
        self.drawn_texts.append(text)
        painter.drawText(rect, int(flags), text)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self.viewport())
        self.drawn_texts = []
        try:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            area = self.viewport().rect()
            p = colours()
            painter.fillRect(event.rect(), QColor(p.base))
            if not self._model.total:
                painter.setPen(QColor(p.muted))
                self._text(
                    painter,
                    area.adjusted(24, 24, -24, -24),
                    Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap,
                    self.placeholder,
                )
                return
            paint = _Paint.of(self, event.rect(), p)
            first, last = self.visible_rows()
            for row in range(first, last + 1):
                top = self._row_top(row)
                if top + ROW_HEIGHT >= paint.dirty.top() and top <= paint.dirty.bottom():
                    self._paint_row(painter, row, top, paint)
            self._paint_lines(painter, paint, area.height())
        finally:
            painter.end()

    def _paint_lines(self, painter: QPainter, paint: _Paint, height: int) -> None:
        scale = paint.scale
        painter.setPen(QPen(QColor(paint.colours.timeline_now_line), 1, Qt.PenStyle.DashLine))
        x = scale.x(self.now)
        if scale.left <= x <= scale.left + scale.width:
            painter.drawLine(QPointF(x, 0), QPointF(x, height))
        x = scale.x(self.cursor_time())
        if scale.left <= x <= scale.left + scale.width:
            painter.setPen(QPen(QColor(TIMELINE_WORLD_CURSOR), 2))
            painter.drawLine(QPointF(x, 0), QPointF(x, height))

    def _paint_row(self, painter: QPainter, row: int, top: int, paint: _Paint) -> None:
        band = QRect(0, top, self.viewport().width(), ROW_HEIGHT)
        p = paint.colours
        if row == self._current:
            painter.fillRect(band, QColor(p.navigation_selected))
        elif row % 2:
            painter.fillRect(band, QColor(p.timeline_row_alternate))
        painter.setPen(QColor(p.timeline_grid))
        for x in paint.grid:
            if paint.dirty.left() - 1 <= x <= paint.dirty.right() + 1:
                painter.drawLine(QPointF(x, top), QPointF(x, top + ROW_HEIGHT))
        record = self._model.record(row)
        scale = paint.scale
        text_dirty = paint.dirty.left() <= paint.text_width
        if record is None:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(p.timeline_placeholder))
            painter.drawRoundedRect(QRectF(PAD + 16, top + 9, paint.text_width * 0.6, 9), 4, 4)
            painter.drawRoundedRect(QRectF(PAD + 16, top + 23, paint.text_width * 0.35, 7), 3, 3)
            painter.drawRoundedRect(QRectF(scale.left + scale.width * 0.3, top + 14, scale.width * 0.4, 12), 6, 6)
        else:
            drawing, texts = self._drawing(record, paint)
            painter.drawPixmap(0, top, drawing)
            if text_dirty:
                self.drawn_texts.extend(texts)
        if row == self._current and self.hasFocus():
            painter.setPen(QPen(QColor(TIMELINE_WORLD_CURSOR).darker(110), 2))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(band.adjusted(1, 1, -2, -2))

    def _drawing(self, record: TimelineRow, paint: _Paint) -> tuple[QPixmap, tuple[str, ...]]:
        """A row's text and bar drawn once into a transparent pixmap, kept while the same fact is drawn
        on the same axis at the same width in the same theme: a drag of the world time moves rows up and
        down, it does not change them, so a repaint is a dozen pixmaps (measured: 7 ms for a full paint
        drawn afresh). A change of theme, font or style drops them all (`changeEvent`)."""
        ratio = self.devicePixelRatioF()
        key = (record, paint.text_width, paint.scale, self.now, self.viewport().width(), ratio, paint.colours.name)
        kept = self._drawings.get(key)
        if kept is not None:
            self._drawings.move_to_end(key)
            return kept
        pixmap = QPixmap(round(self.viewport().width() * ratio), round(ROW_HEIGHT * ratio))
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        before = len(self.drawn_texts)
        try:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            self._paint_text(painter, record, 0, paint)
            self._paint_bar(painter, record, 0, paint)
        finally:
            painter.end()
        texts = tuple(self.drawn_texts[before:])
        del self.drawn_texts[before:]
        self._drawings[key] = (pixmap, texts)
        while len(self._drawings) > DRAWINGS_KEPT:
            self._drawings.popitem(last=False)
        return pixmap, texts

    def _paint_text(self, painter: QPainter, record: TimelineRow, top: int, paint: _Paint) -> None:
        forgotten = isinstance(record, ForgottenFact)
        colour = status_colour(record.status)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.setFont(paint.italic if forgotten else paint.main)
        metrics = paint.italic_metrics if forgotten else paint.main_metrics
        room = paint.text_width - PAD - 18
        titles = wrapped_lines(row_text(record), paint.italic if forgotten else paint.main, room, TITLE_LINES)
        spacing, small = metrics.lineSpacing(), paint.small_metrics.height() + 2
        # The text and its details, as a block in the middle of the row (the dot by its first line).
        y = top + max(2, (ROW_HEIGHT - (len(titles) * spacing + 2 + small)) // 2)
        painter.drawEllipse(QPointF(PAD + 5, y + spacing / 2), 4.5, 4.5)
        painter.setPen(QColor(paint.colours.muted if forgotten else paint.colours.text))
        for title in titles:
            self._text(painter, QRect(PAD + 16, y, room, spacing), Qt.AlignmentFlag.AlignVCenter, title)
            y += spacing
        painter.setFont(paint.small)
        painter.setPen(QColor(paint.colours.muted))
        details = ["text erased"] if forgotten else ([f"about {about(record)}"] if record.subjects else [])
        line = " · ".join([record.status, *details, record.scope.name])
        self._text(
            painter,
            QRect(PAD + 16, y + 2, room, small),
            Qt.AlignmentFlag.AlignVCenter,
            paint.small_metrics.elidedText(line, Qt.TextElideMode.ElideRight, room),
        )

    def _paint_bar(self, painter: QPainter, record: TimelineRow, top: int, paint: _Paint) -> None:
        """From valid_from to valid_to. An open start is drawn faint from the left edge up to when it was
        learned (it held since some time before), an open end runs to now with an arrow tip. Hatching and
        the outline of the learned-at diamond are cut in the background's colour."""
        scale = paint.scale
        background = QColor(paint.colours.base)
        left_edge, right_edge = scale.left, scale.left + scale.width
        end_time = record.valid_to if record.valid_to is not None else max(self.now, record.created_at)
        end = scale.x(end_time)
        open_start = record.valid_from is None
        solid = min(scale.x(record.created_at if open_start else record.valid_from or record.created_at), end)
        start = left_edge if open_start else solid
        if end < left_edge or start > right_edge:
            return
        y = top + (ROW_HEIGHT - BAR_HEIGHT) / 2
        colour = status_colour(record.status)
        radius = BAR_HEIGHT / 2
        painter.setPen(Qt.PenStyle.NoPen)
        if open_start and solid > left_edge:
            faint = QColor(colour)
            faint.setAlpha(70)
            gradient = QLinearGradient(QPointF(left_edge, 0), QPointF(min(solid, right_edge), 0))
            clear = QColor(colour)
            clear.setAlpha(0)
            gradient.setColorAt(0.0, clear)
            gradient.setColorAt(min(1.0, FADE / max(1.0, solid - left_edge)), faint)
            gradient.setColorAt(1.0, faint)
            painter.setBrush(QBrush(gradient))
            painter.drawRoundedRect(QRectF(left_edge, y + 2, min(solid, right_edge) - left_edge, BAR_HEIGHT - 4), 3, 3)
        x0, x1 = max(solid, left_edge), min(max(end, solid + 4), right_edge)
        if x1 > x0:
            bar = QRectF(x0, y, x1 - x0, BAR_HEIGHT)
            painter.setBrush(colour)
            painter.drawRoundedRect(bar, radius, radius)
            if isinstance(record, ForgottenFact) or record.status == "rejected":
                pattern = (
                    Qt.BrushStyle.DiagCrossPattern if isinstance(record, ForgottenFact) else Qt.BrushStyle.BDiagPattern
                )
                path = QPainterPath()
                path.addRoundedRect(bar, radius, radius)
                painter.fillPath(path, QBrush(background, pattern))
            if record.valid_to is None and x1 < right_edge:  # an open end: it still holds
                tip = QPolygonF(
                    [QPointF(x1 + 2, y), QPointF(x1 + 8, y + BAR_HEIGHT / 2), QPointF(x1 + 2, y + BAR_HEIGHT)]
                )
                painter.setBrush(colour)
                painter.drawPolygon(tip)
        learned = scale.x(record.created_at)
        if left_edge <= learned <= right_edge:  # when it was learned (recorded time) on the world axis
            painter.setPen(QPen(background, 1.5))
            # Darker than its bar on a light background, lighter on a dark one: it stands out from both.
            painter.setBrush(colour.darker(150) if paint.colours.name == "light" else colour.lighter(140))
            cy = y + BAR_HEIGHT / 2
            painter.drawPolygon(
                QPolygonF(
                    [
                        QPointF(learned, cy - 6),
                        QPointF(learned + 5, cy),
                        QPointF(learned, cy + 6),
                        QPointF(learned - 5, cy),
                    ]
                )
            )

    def changeEvent(self, event: QEvent) -> None:
        # A theme switch (the application's palette), a font or a style: the rows drawn so far are of the old look.
        if event.type() in LOOK_CHANGE_EVENTS:
            self._drawings.clear()
            self._repaint()
        super().changeEvent(event)

    # -- input ------------------------------------------------------------------------------------------
    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        page = max(1, self.viewport().height() // ROW_HEIGHT - 1)
        current = max(self._current, 0) if self._model.total else -1
        moves = {
            Qt.Key.Key_Down: current + 1 if self._current >= 0 else 0,
            Qt.Key.Key_Up: current - 1,
            Qt.Key.Key_PageDown: current + page,
            Qt.Key.Key_PageUp: current - page,
            Qt.Key.Key_Home: 0,
            Qt.Key.Key_End: self._model.total - 1,
        }
        if key in moves and self._model.total:
            self.set_current_row(max(0, min(moves[Qt.Key(key)], self._model.total - 1)))
            event.accept()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self._current >= 0:
            self.activated.emit(self._current)
            event.accept()
        else:
            super().keyPressEvent(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        row = self.row_at(event.position().y())
        if row >= 0:
            self.set_current_row(row)
        self.setFocus(Qt.FocusReason.MouseFocusReason)
        super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        row = self.row_at(event.position().y())
        if row >= 0:
            self.activated.emit(row)
        super().mouseDoubleClickEvent(event)

    def viewportEvent(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            record = self._model.record(self.row_at(event.pos().y()))
            if record is not None:
                QToolTip.showText(event.globalPos(), tooltip(record), self.viewport())
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)

    def focusInEvent(self, event: QFocusEvent) -> None:
        super().focusInEvent(event)
        if self._current < 0 and self._model.total:
            self.set_current_row(0)
        self.viewport().update()

    def focusOutEvent(self, event: QFocusEvent) -> None:
        super().focusOutEvent(event)
        self.viewport().update()

    def point_of_row(self, row: int) -> QPoint:
        """A point inside a row, in viewport coordinates (for tests and tools)."""
        return QPoint(PAD + 40, self._row_top(row) + ROW_HEIGHT // 2)
