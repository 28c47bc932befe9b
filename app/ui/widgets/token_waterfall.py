"""A token waterfall: one row per prompt layer, each bar starting where the layer before it ended, so
the parts add up to the total drawn as a stacked bar in the last row.

Behind each bar its budget is a pale band from the same start (clipped, with an arrow, when it reaches
past the total); a tick marks where the budget ends when it is in view. Numbers on the right ("57 / 800"),
red when a layer went over; "cached" when the layer was reused from the reply before. Colours come from
app/ui/theme.py; text uses the palette, so it reads in light and dark themes alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QHelpEvent, QPainter, QPaintEvent, QPalette, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from app.runtime.api.views import ExplainedLayer
from app.ui.theme import ERROR_RED, layer_colour

ROW_HEIGHT = 24
BAR_HEIGHT = 14
GAP = 10
TOTAL = "Total"


@dataclass(frozen=True, slots=True)
class WaterfallRow:
    name: str
    start: int  # tokens of the layers before it
    tokens: int
    budget: int
    cached: bool

    @property
    def over(self) -> bool:
        return self.tokens > self.budget

    def value_text(self) -> str:
        return f"{self.tokens:,} / {self.budget:,}" + ("  cached" if self.cached else "")

    def tooltip(self, total: int) -> str:
        share = f"{100 * self.tokens / total:.0f}% of the prompt" if total else "nothing in the prompt"
        lines = [f"{self.name}: {self.tokens:,} tokens of a {self.budget:,}-token budget ({share})"]
        if self.over:
            lines.append("Over its budget.")
        if self.cached:
            lines.append("Reused from the reply before (nothing in it had changed).")
        return "\n".join(lines)


def waterfall_rows(layers: Sequence[ExplainedLayer]) -> tuple[WaterfallRow, ...]:
    rows = []
    start = 0
    for layer in layers:
        rows.append(WaterfallRow(layer.name, start, layer.tokens, layer.budget, layer.cached))
        start += layer.tokens
    return tuple(rows)


class TokenWaterfall(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: tuple[WaterfallRow, ...] = ()
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Tokens by layer")
        self.setMouseTracking(True)

    # -- data --------------------------------------------------------------------------------------
    def set_layers(self, layers: Sequence[ExplainedLayer]) -> None:
        self._rows = waterfall_rows(layers)
        self.setAccessibleDescription(self.summary())
        self.updateGeometry()
        self.update()

    @property
    def rows(self) -> tuple[WaterfallRow, ...]:
        return self._rows

    @property
    def total(self) -> int:
        return sum(row.tokens for row in self._rows)

    def summary(self) -> str:
        parts = [f"{row.name} {row.tokens}" for row in self._rows]
        return f"{self.total:,} tokens: " + ", ".join(parts)

    # -- geometry ----------------------------------------------------------------------------------
    def sizeHint(self) -> QSize:
        return QSize(480, (len(self._rows) + 1) * ROW_HEIGHT + GAP)

    def minimumSizeHint(self) -> QSize:
        return QSize(320, self.sizeHint().height())

    def _columns(self) -> tuple[float, float, float]:
        """Left of the bars, their width, left of the numbers."""
        metrics = self.fontMetrics()
        names = max((metrics.horizontalAdvance(r.name) for r in self._rows), default=0)
        name_width = max(names, metrics.horizontalAdvance(TOTAL)) + GAP
        values = max((metrics.horizontalAdvance(r.value_text()) for r in self._rows), default=0)
        value_width = max(values, metrics.horizontalAdvance(f"{self.total:,} tokens")) + GAP
        bar_width = max(40.0, self.width() - name_width - value_width - GAP)
        return float(name_width), bar_width, name_width + bar_width + GAP

    def row_at(self, y: float) -> int | None:
        """The layer row under `y` (len(rows) for the total row), or None."""
        index = int(y // ROW_HEIGHT)
        return index if 0 <= index <= len(self._rows) and self._rows else None

    # -- painting ----------------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        del event
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        text = self.palette().color(QPalette.ColorRole.WindowText)
        muted = QColor(text)
        muted.setAlphaF(0.55)
        left, width, values_left = self._columns()
        total = self.total
        scale = width / max(total, 1)
        right = left + width
        for number, row in enumerate(self._rows):
            top = float(number * ROW_HEIGHT)
            bar_top = top + (ROW_HEIGHT - BAR_HEIGHT) / 2
            colour = layer_colour(row.name)
            painter.setPen(text)
            painter.drawText(QRectF(0, top, left - GAP / 2, ROW_HEIGHT), Qt.AlignmentFlag.AlignVCenter, row.name)
            x = left + row.start * scale
            band = QColor(colour)
            band.setAlphaF(0.22)
            budget_end = x + row.budget * scale
            painter.fillRect(QRectF(x, bar_top, max(0.0, min(budget_end, right) - x), BAR_HEIGHT), band)
            if budget_end > right:  # the budget reaches past the total: an arrow at the edge
                arrow = QPolygonF(
                    [
                        QPointF(right - 6, bar_top + 2),
                        QPointF(right, bar_top + BAR_HEIGHT / 2),
                        QPointF(right - 6, bar_top + BAR_HEIGHT - 2),
                    ]
                )
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(colour)
                painter.drawPolygon(arrow)
            else:  # the budget's end in view: a tick
                painter.setPen(QPen(text, 1.5))
                painter.drawLine(QPointF(budget_end, top + 2), QPointF(budget_end, top + ROW_HEIGHT - 2))
            used = row.tokens * scale
            if row.tokens > 0:
                painter.fillRect(QRectF(x, bar_top, max(2.0, used), BAR_HEIGHT), colour)
            painter.setPen(QColor(ERROR_RED) if row.over else (muted if row.tokens == 0 else text))
            painter.drawText(
                QRectF(values_left, top, self.width() - values_left, ROW_HEIGHT),
                Qt.AlignmentFlag.AlignVCenter,
                row.value_text(),
            )
        top = len(self._rows) * ROW_HEIGHT + GAP / 2
        bar_top = top + (ROW_HEIGHT - BAR_HEIGHT) / 2
        bold = painter.font()
        bold.setBold(True)
        painter.setFont(bold)
        painter.setPen(text)
        painter.drawText(QRectF(0, top, left, ROW_HEIGHT), Qt.AlignmentFlag.AlignVCenter, TOTAL)
        for row in self._rows:
            if row.tokens > 0:
                painter.fillRect(
                    QRectF(left + row.start * scale, bar_top, row.tokens * scale, BAR_HEIGHT), layer_colour(row.name)
                )
        painter.drawText(
            QRectF(values_left, top, self.width() - values_left, ROW_HEIGHT),
            Qt.AlignmentFlag.AlignVCenter,
            f"{total:,} tokens",
        )
        painter.end()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            index = self.row_at(event.pos().y())
            if index is None:
                QToolTip.hideText()
            elif index == len(self._rows):
                QToolTip.showText(event.globalPos(), self.summary(), self)
            else:
                QToolTip.showText(event.globalPos(), self._rows[index].tooltip(self.total), self)
            return True
        return super().event(event)
