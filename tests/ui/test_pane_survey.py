"""Every pane of the real window over the demo familiar, at the default size 1100x700, in both themes, as a
new user sees it (issue 18 items 5 and 16):

- every text reads on what it is painted on: WCAG AA, a contrast ratio of 4.5 for text (3 for a symbol
  alone, such as the lint mark ⚠: a graphical object), measured from the colours the widgets paint (their
  palette, which their stylesheet sets, an item's roles) against the pixels around them (tests/ui/survey.py);
- nothing a user needs is cut off: a text that does not fit is cut with its tooltip giving it whole.

Beyond each pane as it opens: a selection in the pending queue, the lorebook's tester and timed effects,
the timeline comparing two times, an Undo notice and an error banner, and the dialogs a user meets (the
forget preview, the import preview, the keys sheet). The rows the pending queue and the timeline draw
themselves are checked through their own colours and lines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.runtime.events import Activity, ActivityKind
from app.runtime.service import Familiar
from app.ui.dialogs.forget_dialog import ForgetDialog
from app.ui.dialogs.lore_import_dialog import ImportDialog
from app.ui.main_window import PANES, MainWindow
from app.ui.panes.lorebook import LorebookPane
from app.ui.panes.pending import PendingPane
from app.ui.panes.timeline import TimelinePane
from app.ui.theme import DARK, LIGHT, PALETTES, TIMELINE_STATUS_COLOURS, ThemeController, readable_on
from app.ui.widgets.pending_item_delegate import PendingItemDelegate
from tests.ui.fake_facade import FakeFacade
from tests.ui.support import WAIT_MS, open_dialog, settle
from tests.ui.survey import AA, SIZE, Shot, Text, contrast, demo_window, texts, visit

pytestmark = [
    pytest.mark.timeout(240),  # ten panes and their states, twice over, on a shared machine
    pytest.mark.qt_log_level_fail("WARNING"),
    pytest.mark.qt_log_ignore(
        r"This plugin does not support (propagateSizeHints|raise)\(\)",
        r"This plugin does not support grabbing the keyboard",
    ),
]

Scheme = Literal["light", "dark"]
SAMPLE = Path(__file__).resolve().parents[1] / "lore" / "samples" / "st_world_info.json"
SYMBOL_CONTRAST = 3.0  # WCAG 1.4.11: a graphical object (a symbol alone)


def needed(text: Text) -> float:
    return AA if any(ch.isalnum() for ch in text.text) else SYMBOL_CONTRAST


def looked_over(qtbot: QtBot, window: MainWindow, familiar: Familiar) -> Iterator[tuple[str, QWidget, Shot]]:
    """(what, widget tree, the window as painted) for each pane and each state the survey looks at."""
    facade = window.dashboard.facade
    window.dashboard.start_button.click()
    settle(qtbot)
    assert isinstance(facade, FakeFacade)
    facade.publish(Activity(ActivityKind.MESSAGE_IN, "Lantern Club #general", "carol: is the lamp room locked?"))
    facade.publish(Activity(ActivityKind.REPLY_OUT, "Lantern Club #general", "Wisp: it is, since the storm."))
    facade.publish(Activity(ActivityKind.ERROR, "LLM", "The endpoint answered 503; retrying in 2 s"))
    for spec in PANES:
        visit(qtbot, window, spec.name)
        yield spec.name, window, Shot(window)

    # states beyond the first look
    pending = visit(qtbot, window, "pending")
    assert isinstance(pending, PendingPane)
    pending.list_view.setFocus()
    pending.toggle_mark()
    pending.move_focus(2)
    pending.toggle_mark()
    window.undo.notices.show_message("Accepted “bob's cat Pepper has a cough.”")
    pending.error_banner.show_message("Could not reach the store: database is locked")
    settle(qtbot)
    yield "pending, a selection, a notice and an error", window, Shot(window)
    for notice in window.undo.notices.notices():
        notice.dismiss()  # it floats over whatever is under it: the panes after are looked at without it
    pending.error_banner.clear_message()

    lorebook = visit(qtbot, window, "lorebook")
    assert isinstance(lorebook, LorebookPane)
    lorebook.side.setCurrentWidget(lorebook.tester)
    lorebook.try_text.setPlainText("bob: anyone at the harbour market on saturday?\nalice: the lighthouse is lit!")
    run(qtbot, lorebook.run_try())
    yield "lorebook, the tester", window, Shot(window)
    lorebook.side.setCurrentIndex(2)
    settle(qtbot)
    yield "lorebook, timed effects", window, Shot(window)
    lorebook.side.setCurrentIndex(0)

    timeline = visit(qtbot, window, "timeline")
    assert isinstance(timeline, TimelinePane)
    timeline.compare.setChecked(True)
    qtbot.waitUntil(lambda: timeline.is_loaded, timeout=WAIT_MS)
    settle(qtbot)
    yield "timeline, comparing two times", window, Shot(window)
    timeline.compare.setChecked(False)
    settle(qtbot)

    pending = visit(qtbot, window, "pending")
    assert isinstance(pending, PendingPane)
    pending.move_focus(-10)
    pending.forget()
    dialog = open_dialog(qtbot, ForgetDialog)
    qtbot.waitUntil(lambda: dialog.forget_button.isEnabled(), timeout=WAIT_MS)
    qtbot.waitExposed(dialog)
    yield "the forget preview", dialog, Shot(dialog)
    dialog.reject()
    settle(qtbot)

    pending.show_keys()
    assert pending.sheet is not None
    qtbot.waitExposed(pending.sheet)
    yield "the keys sheet", pending.sheet, Shot(pending.sheet)
    pending.sheet.close()

    lorebook = visit(qtbot, window, "lorebook")
    assert isinstance(lorebook, LorebookPane)
    preview = run(qtbot, familiar.lore.import_preview(SAMPLE))
    imports = ImportDialog(preview, lorebook.entries, window)
    qtbot.addWidget(imports)
    imports.show()
    qtbot.waitExposed(imports)
    yield "the import preview", imports, Shot(imports)
    imports.close()
    settle(qtbot)


def run(qtbot: QtBot, coroutine: Any) -> Any:
    task = asyncio.ensure_future(coroutine)
    qtbot.waitUntil(task.done, timeout=WAIT_MS * 3)
    return task.result()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_of_every_pane_reads_in_both_themes(
    qtbot: QtBot,
    real_familiar: Familiar,
    memory_facade: FakeFacade,
    themes: Callable[..., ThemeController],
    scheme: Scheme,
) -> None:
    themes(scheme)
    window = demo_window(qtbot, real_familiar, memory_facade)
    failures: list[str] = []
    seen = 0
    for what, root, shot in looked_over(qtbot, window, real_familiar):
        for text in texts(root, shot):
            seen += 1
            if text.ratio < needed(text):
                failures.append(
                    f"{what}: {text.where} {text.text[:50]!r}: {text.foreground.name()} on {text.background.name()}"
                    f" = {text.ratio:.2f}"
                )
        failures += [f"{what}: {line}" for line in _drawn_rows(root)]
    assert seen > 400  # every pane was looked at, with what it shows
    assert not failures, "\n".join(failures)
    settle(qtbot)


def _drawn_rows(root: QWidget) -> list[str]:
    """The rows the pending queue draws itself: their text (the upper part of a row) and their details (the
    lower part), in the colour painted there that stands out most, on the row's background."""
    out: list[str] = []
    shot = Shot(root)
    for pane in root.findChildren(PendingPane):
        if not pane.isVisible():
            continue
        view = pane.list_view
        viewport = view.viewport()
        for row in range(pane.model.rowCount()):
            rect = view.visualRect(view.model().index(row, 0))
            if not rect.isValid() or not rect.intersects(viewport.rect()):
                continue
            inner = rect.adjusted(28, 3, -4, -3)  # right of the mark box
            half = inner.height() // 2
            for name, part in (("text", inner.adjusted(0, 0, 0, -half)), ("details", inner.adjusted(0, half, 0, 0))):
                background = shot.background(viewport, part)
                ink = shot.foreground(viewport, part, None, background)
                if contrast(ink, background) < AA:
                    out.append(f"pending row {row} {name}: {ink.name()} on {background.name()}")
    return out


@pytest.mark.parametrize("palette", [LIGHT, DARK], ids=["light", "dark"])
def test_the_colours_rows_and_chips_are_drawn_in_read_on_their_backgrounds(palette: Any) -> None:
    """What the views that paint themselves draw, from the theme's roles: the timeline's rows and axis, the
    pending queue's details, the status chips, the notices, the navigation, the key chips."""
    pairs = {
        "timeline text": (palette.text, (palette.base, palette.timeline_row_alternate, palette.navigation_selected)),
        "timeline details": (
            palette.muted,
            (palette.base, palette.timeline_row_alternate, palette.navigation_selected),
        ),
        "pending details": (palette.muted, (palette.base, palette.alternate_base)),
        "selected text": (palette.highlighted_text, (palette.highlight,)),
        "navigation": (palette.text, (palette.navigation_background,)),
        "navigation, selected": (palette.navigation_selected_text, (palette.navigation_selected,)),
        "notice": (palette.notice_text, (palette.notice_background,)),
        "notice action": (palette.notice_action, (palette.notice_background,)),
        "error banner": (palette.error, (palette.error_background,)),
        "hint": (palette.amber, (palette.hint_background, palette.window, palette.base)),
        "ok": (palette.ok, (palette.ok_background, palette.window, palette.base)),
        "muted": (palette.muted, (palette.window, palette.base, palette.alternate_base, palette.quiet_background)),
        "placeholder": (palette.placeholder, (palette.base,)),
        "link": (palette.link, (palette.window, palette.base)),
        "key chips": (palette.chip_text, (palette.chip_background, palette.chip_regex_background)),
    }
    low = [
        f"{name}: {fg} on {bg} = {contrast(QColor(fg), QColor(bg)):.2f}"
        for name, (fg, backgrounds) in pairs.items()
        for bg in backgrounds
        if contrast(QColor(fg), QColor(bg)) < AA
    ]
    for status, colour in TIMELINE_STATUS_COLOURS.items():  # the chip on the timeline's side panel
        if contrast(QColor(readable_on(colour)), QColor(colour)) < AA:
            low.append(f"status chip {status}")
    assert low == []
    assert set(PALETTES.values()) == {LIGHT, DARK}


def test_nothing_a_user_needs_is_cut_off_at_the_default_size(
    qtbot: QtBot, real_familiar: Familiar, memory_facade: FakeFacade
) -> None:
    window = demo_window(qtbot, real_familiar, memory_facade)
    assert (window.width(), window.height()) == SIZE
    cut: list[str] = []
    for what, root, shot in looked_over(qtbot, window, real_familiar):
        cut += [f"{what}: {t.where} {t.text[:60]!r}" for t in texts(root, shot) if t.cut and not t.whole_elsewhere]
        for pane in root.findChildren(PendingPane):
            cut += _pending_rows_cut(pane)
    assert not cut, "\n".join(cut)
    settle(qtbot)


def _pending_rows_cut(pane: PendingPane) -> list[str]:
    """Each row of the queue shows its text and its details whole, or says them whole in its tooltip."""
    if not pane.isVisible():
        return []
    out = []
    view = pane.list_view
    delegate = view.itemDelegate()
    assert isinstance(delegate, PendingItemDelegate)
    for row, item in enumerate(pane.model.records):
        rect = view.visualRect(view.model().index(row, 0))
        if not rect.intersects(view.viewport().rect()):
            continue
        meta = pane.model.index(row, 0).data(Qt.ItemDataRole.ToolTipRole)
        titles, details = delegate.row_lines(item, delegate._meta(item), False, view.font(), rect.width() - 40)
        shown = " ".join([*titles, *details])
        if "…" in shown and not (item.fact.content in meta and delegate._meta(item) in meta):
            out.append(f"pending row {row}: {shown!r}")
    return out
