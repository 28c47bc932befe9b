"""A slider over time: a track with dated ticks and one or two handles ("A" and "B" when comparing).

Dragging or the keys move the active handle and emit `moved(handle, time)` at every step (the pane
debounces); `released` follows the end of a drag. A handle may sit at "now" (value None): it then
follows the clock, drawn at the now mark; dragging onto the now mark snaps to it.

Keys: Left / Right a small step (Shift: a larger one), Page Up / Page Down a tenth of the track,
Home / End the ends, N now, Space the other handle (when there are two).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.ui.theme import colours
from app.ui.widgets.time_axis import TimeScale, ticks

HANDLE_RADIUS = 8
SIDE = HANDLE_RADIUS + 4
TRACK_Y = 14
SNAP_PIXELS = 5
STEPS_PER_TRACK = 200  # Left / Right
BIG_STEPS_PER_TRACK = 40  # Shift+Left / Shift+Right
PAGE_STEPS_PER_TRACK = 10  # Page Up / Page Down
TOP_CENTRE = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop
KEYS_HELP = (
    "Drag, or use Left/Right (Shift: bigger steps), Page Up/Down, Home/End; N: now"
    ", Space: the other handle when comparing"
)


class TimeSlider(QWidget):
    moved = Signal(int, object)  # handle, datetime | None ("now")
    released = Signal()

    def __init__(self, name: str, colours: tuple[str, str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(200)
        self.setAccessibleName(name)
        self.setToolTip(f"{name}. {KEYS_HELP}")
        self._colours = colours
        now = datetime.now(UTC)
        self._start = now - timedelta(days=30)
        self._end = now
        self._now = now
        self._values: list[datetime | None] = [None, None]
        self._count = 1
        self._active = 0
        self._dragging = False

    # -- state -----------------------------------------------------------------------------------------
    def sizeHint(self) -> QSize:
        return QSize(400, TRACK_Y + HANDLE_RADIUS + 24)

    def minimumSizeHint(self) -> QSize:
        return QSize(200, self.sizeHint().height())

    @property
    def handles(self) -> int:
        return self._count

    @property
    def active(self) -> int:
        return self._active

    def set_handles(self, count: int) -> None:
        self._count = max(1, min(2, count))
        self._active = min(self._active, self._count - 1)
        self.update()

    def set_active(self, handle: int) -> None:
        self._active = max(0, min(self._count - 1, handle))
        self.update()

    def set_range(self, start: datetime, end: datetime, now: datetime | None = None) -> None:
        """The track's two ends, and where "now" is on it (the clock by default)."""
        self._now = now or datetime.now(UTC)
        self._start, self._end = start, max(end, start + timedelta(minutes=1))
        self.update()

    def range(self) -> tuple[datetime, datetime]:
        return self._start, self._end

    def value(self, handle: int = 0) -> datetime | None:
        return self._values[handle]

    def set_value(self, handle: int, moment: datetime | None, *, emit: bool = False) -> None:
        """Put a handle at a time (None: now), clamped to the track."""
        if moment is not None:
            moment = min(max(moment, self._start), self._end)
        if self._values[handle] == moment:
            return
        self._values[handle] = moment
        self.update()
        if emit:
            self.moved.emit(handle, moment)

    def shown_at(self, handle: int) -> datetime:
        """Where a handle is drawn ("now" at the now mark)."""
        return self._values[handle] or min(max(self._now, self._start), self._end)

    def scale(self) -> TimeScale:
        return TimeScale(self._start, self._end, SIDE, max(1.0, self.width() - 2 * SIDE))

    def handle_x(self, handle: int) -> float:
        return self.scale().x(self.shown_at(handle))

    # -- painting --------------------------------------------------------------------------------------
    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        try:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            scale = self.scale()
            p = colours()
            painter.setPen(QPen(QColor(p.timeline_track), 4, c=Qt.PenCapStyle.RoundCap))
            painter.drawLine(QPointF(scale.left, TRACK_Y), QPointF(scale.left + scale.width, TRACK_Y))
            small = QFont(self.font())
            small.setPointSizeF(max(6.0, small.pointSizeF() * 0.85))
            painter.setFont(small)
            painter.setPen(QColor(p.muted))
            for moment, label in ticks(self._start, self._end, scale.width, min_gap=70, now=self._now):
                x = scale.x(moment)
                painter.drawLine(QPointF(x, TRACK_Y + 4), QPointF(x, TRACK_Y + 8))
                left = min(max(x - 40, 0.0), self.width() - 80.0)  # kept inside the widget at both ends
                painter.drawText(QRectF(left, TRACK_Y + 8, 80, 16), TOP_CENTRE, label)
            if self._start <= self._now <= self._end:
                x = scale.x(self._now)
                painter.setPen(QPen(QColor(p.timeline_now_line), 1, Qt.PenStyle.DashLine))
                painter.drawLine(QPointF(x, TRACK_Y - 9), QPointF(x, TRACK_Y + 8))
            order = [h for h in range(self._count) if h != self._active] + [self._active]
            for handle in order:
                self._paint_handle(painter, handle)
        finally:
            painter.end()

    def _paint_handle(self, painter: QPainter, handle: int) -> None:
        x = self.handle_x(handle)
        colour = QColor(self._colours[handle])
        centre = QPointF(x, TRACK_Y)
        if self.hasFocus() and handle == self._active:
            painter.setPen(QPen(colour.lighter(150), 3))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawEllipse(centre, HANDLE_RADIUS + 3, HANDLE_RADIUS + 3)
        painter.setPen(QPen(QColor("white"), 2))
        painter.setBrush(colour if handle == self._active or self._count == 1 else colour.lighter(130))
        painter.drawEllipse(centre, HANDLE_RADIUS, HANDLE_RADIUS)
        if self._count == 2:
            letter = QFont(self.font())
            letter.setBold(True)
            letter.setPointSizeF(max(6.0, letter.pointSizeF() * 0.8))
            painter.setFont(letter)
            painter.setPen(QColor("white"))
            painter.drawText(
                QRectF(x - HANDLE_RADIUS, TRACK_Y - HANDLE_RADIUS, 2 * HANDLE_RADIUS, 2 * HANDLE_RADIUS),
                Qt.AlignmentFlag.AlignCenter,
                "AB"[handle],
            )

    # -- mouse -----------------------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            super().mousePressEvent(event)
            return
        x = event.position().x()
        self._active = min(range(self._count), key=lambda h: abs(self.handle_x(h) - x))
        self._dragging = True
        self._drag_to(x)
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._dragging:
            self._drag_to(event.position().x())
            event.accept()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._dragging and event.button() == Qt.MouseButton.LeftButton:
            self._dragging = False
            self.released.emit()
            event.accept()

    def _drag_to(self, x: float) -> None:
        scale = self.scale()
        on_now = self._start <= self._now <= self._end and abs(scale.x(self._now) - x) <= SNAP_PIXELS
        self.set_value(self._active, None if on_now else scale.time(x), emit=True)

    # -- keys ------------------------------------------------------------------------------------------
    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        span = self._end - self._start
        shift = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        steps = {
            Qt.Key.Key_Left: -(BIG_STEPS_PER_TRACK if shift else STEPS_PER_TRACK),
            Qt.Key.Key_Right: BIG_STEPS_PER_TRACK if shift else STEPS_PER_TRACK,
            Qt.Key.Key_Down: -STEPS_PER_TRACK,
            Qt.Key.Key_Up: STEPS_PER_TRACK,
            Qt.Key.Key_PageDown: -PAGE_STEPS_PER_TRACK,
            Qt.Key.Key_PageUp: PAGE_STEPS_PER_TRACK,
        }
        if key in steps:
            per = steps[Qt.Key(key)]
            step = max(span / abs(per), timedelta(minutes=1)) * (1 if per > 0 else -1)
            self.set_value(self._active, self.shown_at(self._active) + step, emit=True)
        elif key == Qt.Key.Key_Home:
            self.set_value(self._active, self._start, emit=True)
        elif key == Qt.Key.Key_End:
            self.set_value(self._active, self._end, emit=True)
        elif key == Qt.Key.Key_N:
            self.set_value(self._active, None, emit=True)
        elif key == Qt.Key.Key_Space and self._count == 2:
            self.set_active(1 - self._active)
        else:
            super().keyPressEvent(event)
            return
        event.accept()
