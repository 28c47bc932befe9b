"""Looking over every pane as a user sees it: the demo familiar in the real window at its default size, each
pane shown (and a few states beyond the first: a selection, the tester, a comparison, dialogs), and every
text on it with the colours it is painted in and the room it has.

- `texts(root)` lists each visible text of a widget tree: labels, buttons, check boxes, tabs, combo boxes,
  line edits (and their placeholders), table headers, the cells of item views, each with its foreground and
  background and whether it is cut off;
- `contrast(a, b)` is the WCAG contrast ratio of two colours.

A foreground is what the widget paints its text in (its palette, which its stylesheet sets, or an item's
ForegroundRole); a background is measured from the pixels the window actually painted around it, so a
parent's stylesheet, an item's BackgroundRole or the selection all count. Views that draw their rows
themselves (the pending queue, the timeline) are looked at through their own painting code (see the tests).
"""

from __future__ import annotations

import asyncio
import html
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, QPoint, QRect, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPalette
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QCheckBox,
    QComboBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListView,
    QRadioButton,
    QStyle,
    QStyleOptionButton,
    QStyleOptionComboBox,
    QTabBar,
    QTextEdit,
    QWidget,
)
from pytestqt.qtbot import QtBot

from app.runtime.service import Familiar
from app.ui.main_window import MainWindow
from tests.demo_familiar import seed_demo
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import WAIT_MS, settle

SIZE = (1100, 700)
AA = 4.5  # WCAG 2 level AA, normal text
SEED_MS = 30_000


def luminance(colour: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast(a: QColor, b: QColor) -> float:
    """The WCAG contrast ratio of two opaque colours (1 to 21)."""
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def over(top: QColor, below: QColor) -> QColor:
    """`top` (with its alpha) painted over the opaque `below`."""
    alpha = top.alphaF()
    return QColor.fromRgbF(
        top.redF() * alpha + below.redF() * (1 - alpha),
        top.greenF() * alpha + below.greenF() * (1 - alpha),
        top.blueF() * alpha + below.blueF() * (1 - alpha),
    )


def ink_width(text: str, font: QFont) -> int:
    """How wide `text` is where the paint engine puts ink, from where it starts: what a box must leave it."""
    metrics = QFontMetrics(font)
    image = QImage(metrics.horizontalAdvance(text) + 40, metrics.height() + 8, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setFont(font)
    painter.setPen(QColor("black"))
    painter.drawText(QPoint(10, metrics.ascent() + 4), text)
    painter.end()
    right = 0
    for x in range(image.width() - 1, -1, -1):
        if any(image.pixelColor(x, y).lightness() < 250 for y in range(image.height())):
            right = x + 1
            break
    return max(0, right - 10)


def label_clipped(label: QLabel) -> bool:
    """Whether a one-line label paints less of its text than it would with room: a copy of it, wider,
    puts ink beyond the label's own width."""
    copy = QLabel(label.text())
    copy.setBuddy(label.buddy())  # a mnemonic ("&Name") is drawn as one, not as an ampersand
    copy.setTextFormat(label.textFormat())
    copy.setFont(label.font())
    copy.setStyleSheet(label.styleSheet())
    copy.setMargin(label.margin())
    copy.setIndent(label.indent())
    copy.setContentsMargins(label.contentsMargins())
    aligned = label.alignment() & Qt.AlignmentFlag.AlignHorizontal_Mask
    copy.setAlignment((label.alignment() & Qt.AlignmentFlag.AlignVertical_Mask) | Qt.AlignmentFlag.AlignLeft)
    room = 80
    copy.resize(label.width() + room, label.height())
    image = copy.grab().toImage()
    copy.deleteLater()
    ratio = image.devicePixelRatio()
    background = image.pixelColor(image.width() - 1, image.height() // 2)
    inked = [
        x
        for x in range(image.width())
        if any(_distance(image.pixelColor(x, y), background) > 60 for y in range(0, image.height(), 1))
    ]
    if not inked:
        return False
    width = (inked[-1] - (inked[0] if aligned != Qt.AlignmentFlag.AlignLeft else 0) + 1) / ratio
    return width > label.width()


@dataclass(frozen=True, slots=True)
class Text:
    """One text on screen: where, what, in which colours, and whether it is cut off with nowhere to read it whole."""

    where: str  # the widget (and cell) it is on, for a failure message
    text: str
    foreground: QColor
    background: QColor
    cut: bool = False  # shown cut off (elided or clipped)
    whole_elsewhere: bool = False  # cut, but its tooltip (or the widget's) has it whole

    @property
    def ratio(self) -> float:
        return contrast(self.foreground, self.background)


def _says(tip: str, text: str) -> bool:
    """Whether a tooltip has the whole of a text (its first words, at least) for whoever sees it cut."""
    words = " ".join(text.replace("&", "").split())[:40]
    return bool(words) and words in " ".join(tip.split())


def _name(widget: QWidget) -> str:
    parts = []
    current: QWidget | None = widget
    while current is not None and len(parts) < 4:
        parts.append(current.objectName() or type(current).__name__)
        current = current.parentWidget()
    return "/".join(reversed(parts))


class Shot:
    """The window as painted, to read a widget's background from."""

    def __init__(self, window: QWidget) -> None:
        self.window = window
        pixmap = window.grab()
        self.ratio = pixmap.devicePixelRatio()
        self.image = pixmap.toImage()

    def background(self, widget: QWidget, rect: QRect | None = None, text: QColor | None = None) -> QColor:
        """The most common colour painted in `rect` of `widget` (default: all of it), leaving out what is
        near the text's colour: the background the text stands on."""
        area = rect if rect is not None else widget.rect()
        origin = widget.mapTo(self.window, area.topLeft())
        counts: Counter[int] = Counter()
        step = max(1, min(area.width(), area.height()) // 12)
        for y in range(origin.y(), origin.y() + area.height(), step):
            for x in range(origin.x(), origin.x() + area.width(), step):
                px, py = round(x * self.ratio), round(y * self.ratio)
                if 0 <= px < self.image.width() and 0 <= py < self.image.height():
                    colour = self.image.pixelColor(px, py)
                    if text is None or _distance(colour, text) > 60:
                        counts[colour.rgb()] += 1
        if not counts:
            return QColor(widget.palette().color(widget.backgroundRole()))
        return QColor.fromRgb(counts.most_common(1)[0][0])

    def foreground(self, widget: QWidget, rect: QRect, expected: QColor | None, background: QColor) -> QColor:
        """The colour the text in `rect` of `widget` is painted in: `expected` (its palette's) when pixels of
        that colour are there, else (a stylesheet or a delegate paints it otherwise; None: not known) the
        painted colour that stands out most from the background."""
        origin = widget.mapTo(self.window, rect.topLeft())
        farthest, distance = expected or background, -1
        for y in range(origin.y(), origin.y() + rect.height()):
            for x in range(origin.x(), origin.x() + rect.width()):
                px, py = round(x * self.ratio), round(y * self.ratio)
                if not (0 <= px < self.image.width() and 0 <= py < self.image.height()):
                    continue
                colour = self.image.pixelColor(px, py)
                if expected is not None and _distance(colour, expected) <= 40:
                    return expected
                if (found := _distance(colour, background)) > distance:
                    farthest, distance = colour, found
        return farthest if distance > 60 or expected is None else expected


def _distance(a: QColor, b: QColor) -> int:
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue())


def _group(widget: QWidget) -> QPalette.ColorGroup:
    return QPalette.ColorGroup.Active if widget.isEnabled() else QPalette.ColorGroup.Disabled


def _shown(widget: QWidget, window: QWidget) -> bool:
    """Visible in the window, and inside the part of every scroll area around it that shows."""
    if not widget.isVisible() or widget.width() <= 0 or widget.height() <= 0:
        return False
    rect = QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())
    parent = None if widget.isWindow() else widget.parentWidget()
    while parent is not None and not parent.isWindow():
        rect = rect.intersected(QRect(parent.mapTo(window, QPoint(0, 0)), parent.size()))
        if rect.isEmpty():
            return False
        parent = parent.parentWidget()
    return True


def texts(root: QWidget, shot: Shot) -> Iterator[Text]:
    """Every visible text of `root` and its children (enabled ones: a disabled control needs no contrast)."""
    window = shot.window
    for widget in [root, *root.findChildren(QWidget)]:
        if widget.window() is not window or not _shown(widget, window) or not widget.isEnabled():
            continue  # a dialog the window parents is a window of its own: looked at apart
        yield from _widget_texts(widget, shot)


def _widget_texts(widget: QWidget, shot: Shot) -> Iterator[Text]:
    palette = widget.palette()
    group = _group(widget)
    where = _name(widget)
    tip = widget.toolTip()
    if isinstance(widget, QLabel):
        text = widget.text()
        if not text or (widget.pixmap() is not None and not widget.pixmap().isNull()):
            return
        if widget.textFormat() == Qt.TextFormat.RichText or (
            widget.textFormat() == Qt.TextFormat.AutoText and GuiQt.mightBeRichText(text)
        ):
            yield from _rich_texts(widget, text, widget.contentsRect(), shot, where, widget.foregroundRole())
            return
        foreground = palette.color(group, widget.foregroundRole())
        cut = False
        if not widget.wordWrap():
            cut = label_clipped(widget)
        elif widget.heightForWidth(widget.width()) > widget.height() + 2:
            cut = True
        background = shot.background(widget, text=foreground)
        foreground = shot.foreground(widget, widget.contentsRect(), foreground, background)
        yield Text(where, text, foreground, background, cut, _says(tip, text))
    elif isinstance(widget, QCheckBox | QRadioButton):
        text = widget.text().replace("&", "")
        if not text:
            return
        option = QStyleOptionButton()
        option.initFrom(widget)
        element = (
            QStyle.SubElement.SE_CheckBoxContents
            if isinstance(widget, QCheckBox)
            else (QStyle.SubElement.SE_RadioButtonContents)
        )
        room = widget.style().subElementRect(element, option, widget)
        foreground = palette.color(group, widget.foregroundRole())
        cut = ink_width(text, widget.font()) > room.width()
        yield Text(where, text, foreground, shot.background(widget, room, foreground), cut, _says(tip, text))
    elif isinstance(widget, QAbstractButton):
        text = widget.text().replace("&", "")
        if not text or text in ("×",):
            return
        foreground = palette.color(group, QPalette.ColorRole.ButtonText)
        cut = ink_width(text, widget.font()) > widget.width() - 8
        background = shot.background(widget, widget.rect().adjusted(3, 3, -3, -3), foreground)
        foreground = shot.foreground(widget, widget.rect().adjusted(3, 3, -3, -3), foreground, background)
        yield Text(where, text, foreground, background, cut, _says(tip, text))
    elif isinstance(widget, QComboBox):
        text = widget.currentText()
        if not text:
            return
        option = QStyleOptionComboBox()
        option.initFrom(widget)
        option.editable = widget.isEditable()
        field = widget.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, widget
        )
        foreground = palette.color(group, QPalette.ColorRole.ButtonText)
        if widget.isEditable():
            foreground = palette.color(group, QPalette.ColorRole.Text)
        cut = ink_width(text, widget.font()) > field.width()
        item_tip = widget.itemData(widget.currentIndex(), Qt.ItemDataRole.ToolTipRole)
        whole = _says(tip, text) or _says(str(item_tip or ""), text)
        yield Text(where, text, foreground, shot.background(widget, field, foreground), cut, whole)
    elif isinstance(widget, QLineEdit) and not isinstance(widget.parentWidget(), QAbstractSpinBox | QComboBox):
        room = widget.rect().adjusted(4, 2, -4, -2)
        if widget.text() and widget.echoMode() == QLineEdit.EchoMode.Normal:
            foreground = palette.color(group, QPalette.ColorRole.Text)
            yield Text(where, widget.text(), foreground, shot.background(widget, room, foreground))
        elif widget.placeholderText():
            foreground = palette.color(group, QPalette.ColorRole.PlaceholderText)
            cut = ink_width(widget.placeholderText(), widget.font()) > room.width() - 4
            yield Text(
                where + ":placeholder",
                widget.placeholderText(),
                foreground,
                shot.background(widget, room, foreground),
                cut,
                _says(tip, widget.placeholderText()),
            )
    elif isinstance(widget, QTextEdit):
        viewport = widget.viewport()
        if widget.document().isEmpty() or not _shown(viewport, shot.window):
            return
        yield from _rich_texts(viewport, widget.toHtml(), viewport.rect(), shot, where, QPalette.ColorRole.Text)
    elif isinstance(widget, QTabBar):
        for index in range(widget.count()):
            text = widget.tabText(index).replace("&", "")
            rect = widget.tabRect(index)
            colour = widget.tabTextColor(index)
            foreground = colour if colour.isValid() else palette.color(group, QPalette.ColorRole.WindowText)
            cut = ink_width(text, widget.font()) > rect.width() - 8
            yield Text(f"{where}[{index}]", text, foreground, shot.background(widget, rect, foreground), cut)
    elif isinstance(widget, QHeaderView):
        yield from _header_texts(widget, shot, where)
    elif isinstance(widget, QAbstractItemView) and widget.model() is not None:
        yield from _cell_texts(widget, shot, where)


_STYLE = re.compile(r"""style\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def _rich_texts(
    widget: QWidget, markup: str, area: QRect, shot: Shot, where: str, role: QPalette.ColorRole
) -> Iterator[Text]:
    """Rich text: its default colour on what it is painted on, and each span's own colour (on the span's
    own background where it sets one)."""
    default = widget.palette().color(_group(widget), role)
    background = shot.background(widget, area, default)
    plain = re.sub(r"<[^>]+>", " ", markup)
    if plain.strip():
        yield Text(where, " ".join(html.unescape(plain).split())[:60], default, background)
    for match in _STYLE.finditer(markup):
        declarations = dict(
            (name.strip().lower(), value.strip())
            for name, _colon, value in (part.partition(":") for part in (match.group(1) or match.group(2)).split(";"))
            if value
        )
        colour = declarations.get("color")
        behind = declarations.get("background-color") or declarations.get("background")
        if colour is None or not QColor.isValidColorName(colour):
            continue
        on = QColor(behind) if behind and QColor.isValidColorName(behind) else background
        following = markup[match.end() : match.end() + 80]
        words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", following.split(">", 1)[-1])).split())[:40]
        yield Text(f"{where}:span", words or colour, QColor(colour), on)


def _header_texts(header: QHeaderView, shot: Shot, where: str) -> Iterator[Text]:
    model = header.model()
    if model is None:
        return
    palette = header.palette()
    foreground = palette.color(_group(header), QPalette.ColorRole.ButtonText)
    horizontal = header.orientation() == Qt.Orientation.Horizontal
    for section in range(header.count()):
        if header.isSectionHidden(section):
            continue
        text = model.headerData(section, header.orientation(), Qt.ItemDataRole.DisplayRole)
        if not text:
            continue
        position = header.sectionViewportPosition(section)
        size = header.sectionSize(section)
        rect = QRect(position, 0, size, header.height()) if horizontal else QRect(0, position, header.width(), size)
        if rect.right() < 0 or rect.left() > header.viewport().width():
            continue
        visible = rect.intersected(header.viewport().rect())
        if visible.width() < size:
            continue  # scrolled half out of view: the user scrolls to read it
        cut = horizontal and ink_width(str(text), header.font()) > size - 8
        tip = model.headerData(section, header.orientation(), Qt.ItemDataRole.ToolTipRole)
        yield Text(
            f"{where}[{text}]", str(text), foreground, shot.background(header.viewport(), visible, foreground), cut,
            _says(str(tip or ""), str(text)),
        )  # fmt: skip


def _cell_texts(view: QAbstractItemView, shot: Shot, where: str) -> Iterator[Text]:
    model = view.model()
    viewport = view.viewport()
    columns = model.columnCount() if not isinstance(view, QListView) else 1
    palette = view.palette()
    selection = view.selectionModel()
    rows = model.rowCount()
    for row in range(rows):
        for column in range(columns):
            index = model.index(row, column)
            rect = view.visualRect(index)
            if not rect.isValid() or not rect.intersects(viewport.rect()):
                continue
            text = index.data(Qt.ItemDataRole.DisplayRole)
            if text is None or text == "" or not isinstance(text, str | int | float):
                continue
            text = str(text)
            selected = selection is not None and selection.isSelected(index)
            group = QPalette.ColorGroup.Active if view.isActiveWindow() else QPalette.ColorGroup.Inactive
            brush = index.data(Qt.ItemDataRole.ForegroundRole)
            if selected:
                foreground = palette.color(group, QPalette.ColorRole.HighlightedText)
            elif brush is not None:
                foreground = brush.color() if hasattr(brush, "color") else QColor(brush)
            else:
                foreground = palette.color(group, QPalette.ColorRole.Text)
            first_line = text.split("\n")[0]
            font = index.data(Qt.ItemDataRole.FontRole) or view.font()
            shown = rect.intersected(viewport.rect())
            margin = 2 * (view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1)
            if index.data(Qt.ItemDataRole.CheckStateRole) is not None or index.data(Qt.ItemDataRole.DecorationRole):
                margin += view.style().pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, view) + 4
            cut = shown.width() == rect.width() and ink_width(first_line, font) > rect.width() - margin
            if getattr(view, "wordWrap", lambda: False)() and "\n" not in text:
                cut = cut and view.sizeHintForIndex(index).height() > rect.height()  # wrapped rows: fine if tall enough
            tip = index.data(Qt.ItemDataRole.ToolTipRole)
            whole = _says(str(tip or ""), first_line)
            background = shot.background(viewport, shown, foreground)
            foreground = shot.foreground(viewport, shown, foreground, background)
            yield Text(f"{where}[{row},{column}]", text, foreground, background, cut, whole)


# -- the demo window ----------------------------------------------------------------------------------------
def demo_window(qtbot: QtBot, familiar: Familiar, facade: FakeFacade) -> MainWindow:
    """The real window at its default size over the demo familiar, started (its servers and latency)."""
    seeding = asyncio.ensure_future(seed_demo(familiar))
    qtbot.waitUntil(seeding.done, timeout=SEED_MS)
    seeding.result()
    window = MainWindow(facade)
    qtbot.addWidget(window, before_close_func=lambda _w: _shut(qtbot, window))
    window.resize(*SIZE)
    with qtbot.waitActive(window, timeout=WAIT_MS):
        window.show()
        window.activateWindow()
    return window


def _shut(qtbot: QtBot, window: MainWindow) -> None:
    task = asyncio.ensure_future(window.shutdown())
    qtbot.waitUntil(task.done, timeout=WAIT_MS)


def visit(qtbot: QtBot, window: MainWindow, name: str) -> QWidget:
    pane = window.show_pane(name)
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS * 3)
    settle(qtbot)
    qtbot.wait(50)  # what a pane lays out on the loop's next turn
    settle(qtbot)
    return pane


def index_of(view: QAbstractItemView, row: int, column: int = 0) -> QModelIndex:
    model = view.model()
    assert model is not None
    return model.index(row, column)


def active_window() -> QWidget | None:
    return QApplication.activeWindow()
