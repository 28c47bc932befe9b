"""The facts timeline view in the theme in force: its axis, rows, grid, text and bars drawn in the light or
the dark palette, and a switch of theme while it is shown repaints it with no row drawn in the old colours;
the time sliders above it in the same colours."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Literal

import pytest
from PySide6.QtCore import QEvent, QObject, QRect
from PySide6.QtGui import QImage
from pytestqt.qtbot import QtBot

from app.runtime.api.views import (
    FactStatus,
    FactView,
    ForgottenFact,
    PersonRef,
    PlaceRef,
    TimelineRow,
    TimelineSlice,
)
from app.ui.models.timeline_model import TimelineModel
from app.ui.theme import DARK, LIGHT, TIMELINE_WORLD_CURSOR, Palette, ThemeController, colours
from app.ui.widgets.time_slider import TRACK_Y, TimeSlider
from app.ui.widgets.timeline_view import HEADER_HEIGHT, PAD, ROW_HEIGHT, TimelineView
from tests.ui.support import QT_STRICT, WAIT_MS

pytestmark = QT_STRICT

NOW = datetime(2024, 6, 1, 12, tzinfo=UTC)
ALICE = PersonRef("discord:1", "alice")
CLUB = PlaceRef("guild:500", "Lantern Club")
Scheme = Literal["light", "dark"]


def fact(fact_id: int, status: FactStatus, *, start: float | None, end: float | None, learned: float) -> FactView:
    """A fact holding from `start` to `end` days before NOW (None: open), learned `learned` days before."""
    return FactView(
        id=fact_id, content=f"alice keeps {fact_id} bees on the harbour roof", type="semantic", importance=5,
        confidence=0.8, subjects=(ALICE,), speaker=ALICE, scope=CLUB, status=status,
        revision=1, origin="extraction", created_at=NOW - timedelta(days=learned), superseded_at=None,
        superseded_by=None, valid_from=None if start is None else NOW - timedelta(days=start),
        valid_to=None if end is None else NOW - timedelta(days=end), snoozed_until=None,
    )  # fmt: skip


ROWS: tuple[TimelineRow, ...] = (
    fact(1, "active", start=20, end=None, learned=18),
    fact(2, "rejected", start=25, end=5, learned=24),
    ForgottenFact(
        id=3,
        subjects=(ALICE,),
        scope=CLUB,
        status="forgotten",
        created_at=NOW - timedelta(days=12),
        superseded_at=None,
        valid_from=NOW - timedelta(days=14),
        valid_to=None,
        forgotten_at=NOW - timedelta(days=2),
        receipt_id=None,
    ),
    fact(4, "pending", start=None, end=None, learned=6),
)
REJECTED = 1  # the row of the rejected fact (its bar is hatched)
SELECTED = 3


class _Paints(QObject):
    """Counts the paints of a widget."""

    def __init__(self, watched: QObject) -> None:
        super().__init__(watched)
        self.count = 0
        watched.installEventFilter(self)

    def eventFilter(self, _watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def shown_view(qtbot: QtBot) -> TimelineView:
    """The view over ROWS and two rows not loaded yet (drawn as placeholders), the last row chosen."""
    model = TimelineModel()
    model.set_slice(TimelineSlice(None, None, (), total=len(ROWS) + 2, offset=0, rows=ROWS))
    view = TimelineView(model)
    qtbot.addWidget(view)
    view.set_axis(NOW - timedelta(days=30), NOW + timedelta(days=1), now=NOW)
    view.set_summary(f"{len(ROWS)} facts")
    view.resize(1000, HEADER_HEIGHT + (len(ROWS) + 2) * ROW_HEIGHT + 20)
    view.show()
    qtbot.waitExposed(view)
    view.set_current_row(SELECTED)
    return view


def band(row: int) -> int:
    """A y inside a row's band, below its text, left of its status dot: only the band's fill is there."""
    return row * ROW_HEIGHT + ROW_HEIGHT - 4


def ink(image: QImage, row: int, view: TimelineView, p: Palette) -> int:
    """How far the text of a row stands out from the background: the lightest pixel of its first line on a
    dark background, 255 minus the darkest on a light one."""
    box = QRect(PAD + 16, row * ROW_HEIGHT + 3, view.text_width() - PAD - 18, 20)
    seen = [
        image.pixelColor(x, y).lightness()
        for x in range(box.left(), box.right())
        for y in range(box.top(), box.bottom())
    ]
    return max(seen) if p is DARK else 255 - min(seen)


def bar_pixels(image: QImage, view: TimelineView, row: int) -> set[str]:
    """The colours on the line through the middle of a row's bar."""
    scale = view.scale()
    y = row * ROW_HEIGHT + ROW_HEIGHT // 2
    return {image.pixelColor(x, y).name() for x in range(int(scale.left), int(scale.left + scale.width))}


def assert_drawn_in(view: TimelineView, p: Palette) -> None:
    """The axis and the rows as they are drawn now (the rows from their kept drawings) are in `p`'s colours."""
    rows = view.viewport().grab().toImage()
    assert rows.pixelColor(4, band(0)).name() == p.base  # the background
    assert rows.pixelColor(4, band(1)).name() == p.timeline_row_alternate  # every other row
    assert rows.pixelColor(4, band(SELECTED)).name() == p.navigation_selected  # the chosen row
    placeholder = len(ROWS)  # not loaded yet: grey bars where its text and bar will be
    assert rows.pixelColor(PAD + 20, placeholder * ROW_HEIGHT + 13).name() == p.timeline_placeholder
    assert ink(rows, 0, view, p) > 150  # the text reads on its background
    hatching = bar_pixels(rows, view, REJECTED)
    assert p.base in hatching  # the rejected bar is hatched in the background's colour
    assert (DARK if p is LIGHT else LIGHT).base not in hatching
    axis = view._header.grab().toImage()
    assert axis.pixelColor(axis.width() // 2, 2).name() == p.base
    assert axis.pixelColor(2, HEADER_HEIGHT - 1).name() == p.timeline_grid  # the line under the axis
    assert ink(axis, 0, view, p) > 100  # the summary ("4 facts"), muted but readable


def dark_share(image: QImage) -> float:
    samples = [image.pixelColor(x, y) for x in range(0, image.width(), 5) for y in range(0, image.height(), 3)]
    return sum(c.lightness() < 80 for c in samples) / len(samples)


def test_the_dark_theme_draws_the_axis_rows_grid_and_text_in_dark_colours(
    qtbot: QtBot, themes: Callable[..., ThemeController]
) -> None:
    themes("dark")
    assert colours() is DARK
    view = shown_view(qtbot)
    assert_drawn_in(view, DARK)
    assert dark_share(view.grab().toImage()) > 0.85  # dark all over, not a white pane in a dark window


def test_the_light_theme_keeps_its_colours(qtbot: QtBot, themes: Callable[..., ThemeController]) -> None:
    themes("light")
    view = shown_view(qtbot)
    assert_drawn_in(view, LIGHT)
    rows = view.viewport().grab().toImage()
    assert rows.pixelColor(4, band(0)).name() == "#ffffff"  # the colours it always had
    assert rows.pixelColor(4, band(1)).name() == "#f8f9fb"
    assert rows.pixelColor(4, band(SELECTED)).name() == "#dde6f6"


def test_a_switch_of_theme_repaints_the_view_with_no_row_in_the_old_colours(
    qtbot: QtBot, themes: Callable[..., ThemeController]
) -> None:
    controller = themes("light")
    view = shown_view(qtbot)
    assert_drawn_in(view, LIGHT)  # the rows' drawings are now kept for the next paints
    rows, axis = _Paints(view.viewport()), _Paints(view._header)

    controller.apply("dark")

    qtbot.waitUntil(lambda: rows.count > 0 and axis.count > 0, timeout=WAIT_MS)  # repainted unasked
    assert_drawn_in(view, DARK)
    controller.apply("light")
    qtbot.waitUntil(lambda: rows.count > 1 and axis.count > 1, timeout=WAIT_MS)
    assert_drawn_in(view, LIGHT)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_time_sliders_track_is_in_the_themes_colour(
    qtbot: QtBot, themes: Callable[..., ThemeController], scheme: Scheme
) -> None:
    p = themes(scheme).palette
    slider = TimeSlider("World time", (TIMELINE_WORLD_CURSOR, TIMELINE_WORLD_CURSOR))
    qtbot.addWidget(slider)
    slider.set_range(NOW - timedelta(days=30), NOW, now=NOW)  # its handle at now, the right end
    slider.resize(600, slider.sizeHint().height())
    slider.show()
    qtbot.waitExposed(slider)
    image = slider.grab().toImage()
    assert image.pixelColor(slider.width() // 3, TRACK_Y).name() == p.timeline_track
