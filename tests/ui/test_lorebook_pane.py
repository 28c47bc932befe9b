"""The lorebook editor pane on a real lorebook.toml and the real runtime: the table and its scoped filter,
the side editor (keys checked as you type), edits and bulk changes each one undo step, save keeping the
file's comments, a change on disk offered as reload or merge (never written over), the tester, import
with a preview (the same file twice adds nothing), and screenshots to look at."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QInputDialog, QMessageBox
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.runtime.api.views import LoreEntryView
from app.runtime.service import Familiar
from app.ui.dialogs.book_settings_dialog import BookSettingsDialog
from app.ui.dialogs.lore_import_dialog import ImportDialog
from app.ui.main_window import MainWindow
from app.ui.models.lore_model import COLUMN_NAMES, LoreTableModel
from app.ui.models.lore_rows import filter_rows, make_row
from app.ui.panes.lorebook import LorebookPane
from app.ui.state.lore_draft import merge
from app.ui.widgets.lore_entry_editor import EDIT_SETTLE_MS
from app.ui.widgets.lore_tester import trial_html
from tests.conftest import write_character_toml
from tests.demo_familiar import seed_demo
from tests.fakes.llm_server import FakeLLM
from tests.ui.support import QT_STRICT, WAIT_MS, Run, make_context, open_dialog, press, settle

pytestmark = QT_STRICT
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

BOOK = """# The club's lore. This comment must survive every save.

[[entries]]
title = "The lighthouse"
keys = ["lighthouse", "lamp room"]
content = "The old lighthouse on Gull Point has been dark since the storm."
priority = 20
# a comment inside an entry

[[entries]]
title = "Harbour market"
keys = ["market", "harbour"]
secondary_keys = ["saturday"]
content = "The harbour market runs on Saturdays."
priority = 10

[[entries]]
title = "Wisp"
keys = ["wisp"]
constant = true
content = "Wisp is a lantern spirit."
priority = 50
"""


@pytest.fixture
def book_path(real_familiar: Familiar) -> Path:
    path = real_familiar.home.joinpath("lorebook.toml")
    path.write_text(BOOK, encoding="utf-8")
    return path


@pytest.fixture
def pane(qtbot: QtBot, real_familiar: Familiar, book_path: Path) -> Iterator[LorebookPane]:
    real_familiar.changes.start()  # the change broadcast: it says when lorebook.toml changes on disk
    pane = LorebookPane(make_context(qtbot, real_familiar))
    qtbot.addWidget(pane)
    pane.resize(1100, 700)
    pane.show()
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    settle(qtbot)
    yield pane
    settle(qtbot)


def dirty(pane: LorebookPane) -> bool:
    return pane.dirty


def titles(pane: LorebookPane) -> list[str]:
    return [e.title for e in pane.entries]


def test_the_table_shows_every_entry_and_passes_the_model_tester(
    qtbot: QtBot, qtmodeltester: ModelTester, pane: LorebookPane
) -> None:
    assert titles(pane) == ["The lighthouse", "Harbour market", "Wisp"]
    model = pane.model
    assert model.rowCount() == 3
    assert model.columnCount() == len(COLUMN_NAMES)
    assert [r.entry.title for r in model.records] == titles(pane)  # the book's order until a header is clicked
    qtmodeltester.check(model)
    pane.filter.setText("key:market")
    assert [r.entry.title for r in model.records] == ["Harbour market"]
    assert pane.count_label.text() == "1 of 3"
    qtmodeltester.check(model)
    pane.filter.clear()
    model.sort(COLUMN_NAMES.index("priority"), Qt.SortOrder.DescendingOrder)
    assert [r.entry.title for r in model.records] == ["Wisp", "The lighthouse", "Harbour market"]
    qtmodeltester.check(model)
    # the gauges: the constant entry alone, and every enabled entry, against the lorebook budget
    assert pane.constant_gauge.format().startswith("Constant: ")
    assert str(pane.book.budget if pane.book else 0) in pane.all_gauge.format().replace(",", "")


def test_scoped_filter() -> None:
    rows = [
        make_row(0, LoreEntryView(ref=0, title="Dragons", keys=("wyrm",), content="They hoard gold.")),
        make_row(1, LoreEntryView(ref=1, title="Gold", keys=("coin",), content="Minted in the east.", enabled=False)),
        make_row(2, LoreEntryView(ref=2, title="East", keys=("orient", "sunrise"), content="Where dragons sleep.")),
    ]

    def found(query: str) -> list[int]:
        return [r.position for r in filter_rows(rows, query)]

    assert found("gold") == [0, 1]  # a bare word: anywhere
    assert found("title:gold") == [1]
    assert found("content:gold") == [0]
    assert found("key:sun") == [2]
    assert found("dragons content:sleep") == [2]  # every term must match
    assert found("is:disabled") == [1]
    assert found('content:"the east"') == [1]
    assert found("KEY:WYRM") == [0]
    assert found("nothing-like-this") == []


def test_model_tester_on_a_filtered_model(qtmodeltester: ModelTester) -> None:
    model = LoreTableModel()
    model.set_rows([make_row(i, LoreEntryView(ref=i, title=f"Entry {i}", keys=(f"k{i}",))) for i in range(20)])
    model.set_query("title:1")
    qtmodeltester.check(model)


def test_an_edit_is_one_undo_step_and_a_save_keeps_the_comments(
    qtbot: QtBot, run: Run[Any], pane: LorebookPane, book_path: Path
) -> None:
    pane.select_positions([0])
    assert pane.editor.title.text() == "The lighthouse"
    pane.editor.title.setText("The old lighthouse")
    pane.editor.title.textEdited.emit("The old lighthouse")
    pane.editor.flush()
    qtbot.waitUntil(lambda: pane.entries[0].title == "The old lighthouse", timeout=WAIT_MS)
    assert dirty(pane)
    assert pane.save_button.isEnabled()
    assert run(pane.context.undo.undo())
    assert pane.entries[0].title == "The lighthouse"
    assert not dirty(pane)
    assert run(pane.context.undo.redo())
    assert pane.entries[0].title == "The old lighthouse"
    assert run(pane.save())
    text = book_path.read_text(encoding="utf-8")
    assert 'title = "The old lighthouse"' in text
    assert "This comment must survive every save." in text
    assert "# a comment inside an entry" in text
    assert not dirty(pane)
    # undo after a save edits the draft again; the next save writes it back
    assert run(pane.context.undo.undo())
    assert dirty(pane)
    assert pane.entries[0].title == "The lighthouse"
    assert run(pane.save())
    assert 'title = "The lighthouse"' in book_path.read_text(encoding="utf-8")
    settle(qtbot)


def test_a_regex_key_is_checked_as_you_type(qtbot: QtBot, pane: LorebookPane) -> None:
    pane.select_positions([0])
    chips = pane.editor.keys
    QTest.keyClicks(chips.field, "/drag(on/")
    assert chips.error.isVisibleTo(pane)
    assert chips.error.text()
    QTest.keyClick(chips.field, Qt.Key.Key_Return)
    assert chips.keys == ("lighthouse", "lamp room")  # not added
    chips.field.clear()
    QTest.keyClicks(chips.field, "/beacons?/i")
    assert not chips.error.isVisibleTo(pane)
    QTest.keyClick(chips.field, Qt.Key.Key_Return)
    pane.editor.flush()
    qtbot.waitUntil(lambda: pane.entries[0].keys == ("lighthouse", "lamp room", "/beacons?/i"), timeout=WAIT_MS)
    assert "/beacons?/i" in chips.chip_texts()
    settle(qtbot)


def test_the_content_shows_its_token_count_as_you_type(qtbot: QtBot, pane: LorebookPane) -> None:
    pane.select_positions([2])
    before = pane.editor.tokens.text()
    pane.editor.content.setPlainText("Wisp is a lantern spirit who remembers every candle ever lit in the club.")
    assert pane.editor.tokens.text() != before
    assert "tokens" in pane.editor.tokens.text()
    settle(qtbot)


def test_a_bulk_change_is_one_undo_step(qtbot: QtBot, run: Run[Any], pane: LorebookPane) -> None:
    run(pane.bulk("Disabled 2 entries", [0, 1], lambda e: dataclasses.replace(e, enabled=False)))
    assert [e.enabled for e in pane.entries] == [False, False, True]
    run(pane.add_key([0, 2], "beacon"))
    assert "beacon" in pane.entries[0].keys
    assert "beacon" in pane.entries[2].keys
    run(pane.set_field([1, 2], "priority", 7))
    assert [e.priority for e in pane.entries] == [20, 7, 7]
    run(pane.delete_positions([1]))
    assert titles(pane) == ["The lighthouse", "Wisp"]
    assert run(pane.context.undo.undo())  # the delete
    assert run(pane.context.undo.undo())  # the priorities
    assert run(pane.context.undo.undo())  # the key
    assert titles(pane) == ["The lighthouse", "Harbour market", "Wisp"]
    assert [e.priority for e in pane.entries] == [20, 10, 50]
    assert "beacon" not in pane.entries[0].keys
    assert [e.enabled for e in pane.entries] == [False, False, True]
    assert run(pane.context.undo.undo())  # the disable, both at once
    assert [e.enabled for e in pane.entries] == [True, True, True]
    settle(qtbot)


def test_a_change_on_disk_under_unsaved_edits_is_offered_never_overwritten(
    qtbot: QtBot, run: Run[Any], pane: LorebookPane, book_path: Path
) -> None:
    run(pane.set_field([0], "priority", 99))
    outside = book_path.read_text(encoding="utf-8").replace('title = "Wisp"', 'title = "Wisp the spirit"')
    book_path.write_text(outside, encoding="utf-8")
    qtbot.waitUntil(pane.conflict_bar.isVisible, timeout=WAIT_MS * 2)  # the watcher noticed
    assert not run(pane.save())
    assert book_path.read_text(encoding="utf-8") == outside  # nothing written over it
    assert "changed on disk" in pane.error_banner.text()
    conflicts = run(pane.merge_with_disk())
    assert conflicts == ()
    assert [(e.title, e.priority) for e in pane.entries] == [
        ("The lighthouse", 99),
        ("Harbour market", 10),
        ("Wisp the spirit", 50),
    ]
    assert run(pane.save())
    text = book_path.read_text(encoding="utf-8")
    assert 'title = "Wisp the spirit"' in text
    assert "priority = 99" in text
    assert "This comment must survive every save." in text
    settle(qtbot)


def test_a_change_on_disk_without_edits_is_read_again(qtbot: QtBot, pane: LorebookPane, book_path: Path) -> None:
    book_path.write_text(BOOK.replace("Harbour market", "Fish market"), encoding="utf-8")
    qtbot.waitUntil(lambda: titles(pane)[1] == "Fish market", timeout=WAIT_MS * 2)
    assert not pane.conflict_bar.isVisible()
    assert not dirty(pane)
    settle(qtbot)


def test_reload_drops_the_edits_for_the_file(qtbot: QtBot, run: Run[Any], pane: LorebookPane, book_path: Path) -> None:
    run(pane.set_field([0], "priority", 99))
    book_path.write_text(BOOK.replace("Harbour market", "Fish market"), encoding="utf-8")
    qtbot.waitUntil(pane.conflict_bar.isVisible, timeout=WAIT_MS * 2)
    run(pane.reload())
    assert titles(pane)[1] == "Fish market"
    assert pane.entries[0].priority == 20
    assert not dirty(pane)
    assert not pane.conflict_bar.isVisible()
    settle(qtbot)


def test_merge_keeps_the_editors_version_where_both_changed() -> None:
    base = (LoreEntryView(ref=0, title="A", keys=("a",)), LoreEntryView(ref=1, title="B", keys=("b",)))
    mine = (dataclasses.replace(base[0], priority=1), base[1], LoreEntryView(title="New"))
    theirs = (
        dataclasses.replace(base[0], ref=0, priority=2),
        dataclasses.replace(base[1], ref=1, content="b!"),
        LoreEntryView(ref=2, title="C", keys=("c",)),
    )
    merged = merge(base, mine, theirs)
    assert [(e.title, e.priority, e.content, e.ref) for e in merged.entries] == [
        ("A", 1, "", 0),
        ("B", 100, "b!", 1),
        ("New", 100, "", None),
        ("C", 100, "", 2),
    ]
    assert merged.conflicts == ("A",)


def test_the_tester_highlights_the_key_and_names_what_fired(qtbot: QtBot, run: Run[Any], pane: LorebookPane) -> None:
    run(pane.set_field([1], "enabled", False))  # unsaved: the tester tries the draft
    pane.try_text.setPlainText("alice: is the lighthouse lit tonight?\nbob: the market is on saturday")
    trial = run(pane.run_try())
    assert trial is not None
    fired = {f.title for f in trial.fired}
    assert "The lighthouse" in fired
    assert "Wisp" in fired
    assert "Harbour market" not in fired
    report = pane.try_result.toHtml()
    assert "lighthouse</span>" in report or "lighthouse</b>" in report
    assert "The lighthouse" in report
    assert "constant" in report
    settle(qtbot)


def test_import_with_a_preview_and_the_same_file_twice_adds_nothing(
    qtbot: QtBot, run: Run[Any], pane: LorebookPane, tmp_path: Path
) -> None:
    source = tmp_path / "world.json"
    source.write_text(
        json.dumps(
            {
                "entries": {
                    "0": {"uid": 0, "key": ["dragon"], "keysecondary": [], "comment": "Dragons", "content": "Big."},
                    "1": {"uid": 1, "key": ["gold"], "keysecondary": [], "comment": "Gold", "content": "Shiny."},
                }
            }
        ),
        encoding="utf-8",
    )
    seen: list[list[str]] = []

    async def take_all(preview: Any) -> frozenset[int]:
        seen.append([item.action for item in preview.items])
        return frozenset(item.number for item in preview.items if item.action != "unchanged")

    on_disk = Path(pane.book.path if pane.book else "").read_text(encoding="utf-8")
    assert run(pane.import_file(source, take_all))
    assert seen[-1] == ["added", "added"]
    assert titles(pane) == ["The lighthouse", "Harbour market", "Wisp", "Dragons", "Gold"]
    # an unsaved edit of the draft, as any other: nothing is written until Save
    assert dirty(pane)
    assert Path(pane.book.path if pane.book else "").read_text(encoding="utf-8") == on_disk
    assert not run(pane.import_file(source, take_all))  # nothing new in it (compared with the draft)
    assert seen[-1] == ["unchanged", "unchanged"]
    assert len(pane.entries) == 5
    assert run(pane.context.undo.undo())  # the import, undone
    assert titles(pane) == ["The lighthouse", "Harbour market", "Wisp"]
    assert not dirty(pane)
    assert run(pane.context.undo.redo())
    assert run(pane.save())
    written = run(pane.facade.lore.load())
    assert [e.title for e in written.entries] == ["The lighthouse", "Harbour market", "Wisp", "Dragons", "Gold"]
    assert "This comment must survive every save." in Path(written.path).read_text(encoding="utf-8")
    settle(qtbot)


def test_the_import_preview_shows_each_entry_in_full_and_a_diff_of_what_an_import_changes(
    qtbot: QtBot, run: Run[Any], pane: LorebookPane, tmp_path: Path
) -> None:
    source = tmp_path / "world.json"
    lighthouse = "The old lighthouse on Gull Point was lit again last night."
    source.write_text(
        json.dumps(
            {
                "entries": {
                    "0": {"uid": 0, "key": ["dragon", "wyrm"], "comment": "Dragons", "content": "Big and red."},
                    "1": {"uid": 1, "key": ["lighthouse"], "comment": "The lighthouse", "content": lighthouse},
                }
            }
        ),
        encoding="utf-8",
    )
    # the book's lighthouse has no id; give it the file's, so the file's is a new version of it
    with_id = dataclasses.replace(pane.entries[0], id=1)
    run(pane.change("id", (with_id, *pane.entries[1:])))
    assert run(pane.save())
    preview = run(
        pane.facade.lore.import_preview(source, pane.entries, base_revision=pane.book.revision if pane.book else None)
    )
    assert [item.action for item in preview.items] == ["added", "changed"]
    dialog = ImportDialog(preview, pane.entries, pane)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    # the table names each entry with its keys; the chosen row shows in full below
    assert [dialog.table.item(row, 2).text() for row in range(2)] == ["dragon, wyrm", "lighthouse"]
    detail = dialog.detail.toPlainText()
    assert "dragon, wyrm" in detail
    assert "Big and red." in detail
    dialog.table.setCurrentCell(1, 1)
    detail = dialog.detail.toPlainText()
    assert "A new version of entry 1" in detail
    html_text = dialog.detail.toHtml()
    assert "line-through" in html_text  # the words it drops, struck through
    assert "underline" in html_text  # the words it adds
    assert "since the storm" in detail
    assert "was lit again last night" in detail
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert dialog.grab().save(str(ARTIFACTS / "lorebook_import_diff.png"))
    # nothing ticked, nothing to import
    assert dialog.take_button.isEnabled()
    for box in dialog._boxes:
        box.setChecked(False)
    assert not dialog.take_button.isEnabled()
    dialog._boxes[1].setChecked(True)
    assert dialog.take_button.isEnabled()
    assert dialog.chosen() == frozenset({1})
    dialog.close()

    async def take_all(shown: Any) -> frozenset[int]:
        return frozenset(item.number for item in shown.items)

    assert run(pane.import_file(source, take_all))
    book = pane.book
    assert book is not None
    again = ImportDialog(run(pane.facade.lore.import_preview(source, pane.entries, base_revision=book.revision)))
    qtbot.addWidget(again)
    assert not again.take_button.isEnabled()  # every entry already in the book: nothing can be ticked
    settle(qtbot)


def test_notices_never_cover_the_content_box_while_typing(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, book_path: Path
) -> None:
    window = MainWindow(real_familiar, pane="lorebook")
    qtbot.addWidget(window, before_close_func=lambda _w: run(window.shutdown()))
    window.resize(1100, 700)
    with qtbot.waitActive(window, timeout=WAIT_MS):
        window.show()
        window.activateWindow()
    pane = window.pane_of(LorebookPane)
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    settle(qtbot)
    box = pane.editor.content
    box.setFocus()
    qtbot.waitUntil(box.hasFocus, timeout=WAIT_MS)
    central = window.centralWidget()

    def covered() -> bool:
        area = window.notices
        field = box.rect().translated(box.mapTo(central, box.rect().topLeft()))
        return area.isVisible() and area.geometry().intersects(field)

    for word in (" It", " is", " haunted."):
        QTest.keyClicks(box, word)
        qtbot.wait(EDIT_SETTLE_MS + 100)  # a pause in the typing: the edit becomes an undo step
        assert not covered()
    assert window.undo.stack.undoText().startswith("Edited “The lighthouse”")
    assert window.notices.notices() == []  # typing makes undo steps, not notices
    QTest.keyClick(box, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)  # a save while typing: it says so aside
    qtbot.waitUntil(lambda: bool(window.notices.notices()), timeout=WAIT_MS)
    assert window.notices.notices()[0].text.startswith("Saved ")
    assert not covered()
    assert box.hasFocus()
    settle(qtbot)


@pytest.mark.timeout(120)
def test_lorebook_screenshots(qtbot: QtBot, run: Run[Any], real_familiar: Familiar) -> None:
    """The demo familiar's lorebook: for a human to look at, at two sizes, and the tester."""
    seeding = asyncio.ensure_future(seed_demo(real_familiar))
    qtbot.waitUntil(seeding.done, timeout=60_000)
    seeding.result()
    window = MainWindow(real_familiar, pane="lorebook")
    qtbot.addWidget(window)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pane = window.pane_of(LorebookPane)
    for size, name in (((1400, 860), "lorebook_pane.png"), ((900, 600), "lorebook_pane_small.png")):
        window.resize(*size)
        window.show()
        qtbot.waitUntil(lambda: window.current_pane.is_loaded, timeout=WAIT_MS)
        settle(qtbot)
        assert window.grab().save(str(ARTIFACTS / name))
    inn = next(r for r in pane.model.records if r.entry.title == "The Gull Point inn")
    assert any("inside other words" in line for line in inn.lint)  # lint, shown in the table
    window.resize(1400, 860)
    pane.side.setCurrentWidget(pane.tester)
    pane.try_text.setPlainText("bob: anyone at the harbour market on saturday?\nalice: I saw the lighthouse lit!")
    assert run(pane.run_try()) is not None
    assert window.grab().save(str(ARTIFACTS / "lorebook_pane_tester.png"))
    sample = Path(__file__).resolve().parents[1] / "lore" / "samples" / "st_world_info.json"
    dialog = ImportDialog(run(real_familiar.lore.import_preview(sample)), pane.entries, window)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.grab().save(str(ARTIFACTS / "lorebook_import_dialog.png"))
    assert dialog.chosen() == frozenset(range(8))  # every new entry is taken unless unticked
    dialog.close()
    settle(qtbot)


def test_by_keys_alone(qtbot: QtBot, run: Run[Any], pane: LorebookPane, book_path: Path) -> None:
    """Ctrl+F filters, Ctrl+N adds, Del deletes, Ctrl+Z undoes, Ctrl+S saves: no mouse."""
    pane.activateWindow()
    pane.table.setFocus()
    qtbot.waitUntil(pane.table.hasFocus, timeout=WAIT_MS)
    QTest.keyClick(pane.table, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert pane.filter.hasFocus()
    QTest.keyClicks(pane.filter, "key:wisp")
    assert [r.entry.title for r in pane.model.records] == ["Wisp"]
    QTest.keyClick(pane.filter, Qt.Key.Key_Escape)
    assert pane.model.rowCount() == 3
    QTest.keyClick(pane.filter, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: len(pane.entries) == 4, timeout=WAIT_MS)
    settle(qtbot)
    assert pane.editor.title.hasFocus()
    assert pane.selected_positions() == [3]
    QTest.keyClicks(pane.editor.title, "Beacon")
    pane.table.setFocus()
    qtbot.waitUntil(lambda: pane.entries[3].title == "Beacon", timeout=WAIT_MS)
    settle(qtbot)
    pane.select_positions([1])
    pane.table.setFocus()
    QTest.keyClick(pane.table, Qt.Key.Key_Delete)
    qtbot.waitUntil(lambda: titles(pane) == ["The lighthouse", "Wisp", "Beacon"], timeout=WAIT_MS)
    settle(qtbot)
    QTest.keyClick(pane.table, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not dirty(pane), timeout=WAIT_MS)
    settle(qtbot)
    text = book_path.read_text(encoding="utf-8")
    assert 'title = "Beacon"' in text
    assert "Harbour market" not in text


@pytest.mark.timeout(60)
def test_replies_show_as_fired_and_timed_effects_clear(qtbot: QtBot, run: Run[Any], tmp_path: Path) -> None:
    """After real replies (the fake LLM on 127.0.0.1): the entry that went in counts as fired, its sticky
    effect is listed by place and title, and Clear ends it."""
    llm = FakeLLM()
    run(llm.start())
    paths = FamiliarPaths(root=tmp_path / "home", name="default")
    write_character_toml(paths, "http://127.0.0.1:9/api/v10", "ws://127.0.0.1:9", llm.base_url)
    paths.lorebook_toml.write_text(BOOK.replace("priority = 20\n", "priority = 20\nsticky = 3\n", 1), encoding="utf-8")
    familiar = run(Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False), env={}))
    try:
        run(familiar.chat_local("is the lighthouse lit?"))
        run(familiar.chat_local("and then?"))
        pane = LorebookPane(make_context(qtbot, familiar))
        qtbot.addWidget(pane)
        pane.resize(1100, 700)
        pane.show()
        qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
        settle(qtbot)
        light = next(r for r in pane.model.records if r.entry.title == "The lighthouse")
        assert light.fired >= 1
        assert light.last_fired is not None
        assert [(t.title, t.kind, t.place.name) for t in pane.timed_model.records] == [
            ("The lighthouse", "sticky", "Local chat")
        ]
        # the tester over a place's last messages, chosen by name
        pane.try_source.setCurrentIndex(pane.try_source.findText("Local chat"))
        pane.try_last.setValue(4)
        trial = run(pane.run_try())
        assert trial is not None
        assert len(trial.texts) == 4
        assert [(f.title, f.via) for f in trial.fired if f.title == "The lighthouse"] == [("The lighthouse", "sticky")]
        pane.timed_table.selectRow(0)
        pane._on_clear_timed()  # Clear selected
        qtbot.waitUntil(lambda: pane.timed_model.rowCount() == 0, timeout=WAIT_MS)
        settle(qtbot)
        pane._on_clear_all_timed()  # nothing left: says nothing, changes nothing
        settle(qtbot)
        assert pane.error_banner.text() == ""
        assert run(familiar.lore.timed()) == []
        settle(qtbot)
    finally:
        run(familiar.close())
        run(llm.close())


def test_closing_the_window_with_unsaved_edits_asks_first(
    qtbot: QtBot, run: Run[Any], real_familiar: Familiar, book_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = MainWindow(real_familiar, pane="lorebook")
    qtbot.addWidget(window)
    window.show()
    pane = window.pane_of(LorebookPane)
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    settle(qtbot)
    window.show_pane("dashboard")
    assert pane.unsaved_work() is None
    run(pane.set_field([0], "priority", 5))
    monkeypatch.setattr(window, "ask_before_discarding", True)
    assert not window.close()  # asked in a box, without a nested loop: the close waits for the answer
    box = open_dialog(qtbot, QMessageBox)
    assert window.isVisible()
    assert window.current_pane is pane  # shown, to save from
    assert box.text().startswith("The lorebook has unsaved edits (Save is Ctrl+S in the Lorebook pane).")
    press(box, QMessageBox.StandardButton.Cancel)
    settle(qtbot)
    assert window.isVisible()
    assert pane.dirty
    assert not window.close()
    press(open_dialog(qtbot, QMessageBox), QMessageBox.StandardButton.Discard)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=WAIT_MS)
    run(window.shutdown())
    settle(qtbot)


def test_the_tester_says_what_the_budget_left_out(qtbot: QtBot, run: Run[Any], pane: LorebookPane) -> None:
    settings = dataclasses.replace(pane.book.settings, token_budget=40) if pane.book else None
    assert settings is not None
    texts = ["the lighthouse and the market on saturday"]
    tight = run(pane.facade.lore.try_text(texts, entries=pane.entries, settings=settings))
    assert [d.reason for d in tight.dropped] == ["budget"]
    pane.try_result.setHtml(trial_html(tight))
    report = pane.try_result.toPlainText()
    assert "Matched but left out" in report
    assert f"{tight.dropped[0].title} (entry {tight.dropped[0].index + 1}" in report
    assert "budget" in report
    settle(qtbot)


def test_an_edit_from_before_a_reload_is_not_undone_onto_the_new_book(
    qtbot: QtBot, run: Run[Any], pane: LorebookPane, book_path: Path
) -> None:
    run(pane.set_field([0], "priority", 99))
    run(pane.reload())  # Reload: the edit is dropped, and the file may be another book now
    assert pane.entries[0].priority == 20
    assert not run(pane.context.undo.undo())
    assert pane.entries[0].priority == 20
    assert not dirty(pane)
    settle(qtbot)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_familiar_screenshot_of_the_lorebook_pane(tmp_path: Path) -> None:
    """The contract: `familiar screenshot --pane lorebook`, a fresh process over the demo familiar."""
    from PySide6.QtGui import QImage

    from tests.e2e.test_screenshot_command import familiar_command

    home = tmp_path / "home"
    seeded = subprocess.run(
        [sys.executable, "-m", "tests.demo_familiar", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert seeded.returncode == 0, seeded.stderr
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for size in ("900x600", "1400x860"):
        out = ARTIFACTS / f"screenshot_lorebook_{size}.png"
        out.unlink(missing_ok=True)
        done = familiar_command(home, "screenshot", "--pane", "lorebook", "--out", str(out), "--size", size)
        assert done.returncode == 0, done.stderr
        assert "the lorebook pane" in done.stdout
        image = QImage(str(out))
        assert f"{image.width()}x{image.height()}" == size


def test_an_edit_goes_to_its_entry_when_another_row_is_chosen_at_once(qtbot: QtBot, pane: LorebookPane) -> None:
    pane.model.sort(COLUMN_NAMES.index("title"), Qt.SortOrder.AscendingOrder)  # rows in another order
    pane.select_positions([0])
    pane.editor.title.setText("The lighthouse on Gull Point")
    pane.editor.title.textEdited.emit("The lighthouse on Gull Point")
    assert pane.editor.pending
    wisp = pane.model.index(pane.model.row_of(2) or 0, 0)
    flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
    pane.table.selectionModel().select(wisp, flags)  # Wisp chosen before the edit settled
    qtbot.waitUntil(lambda: pane.entries[0].title == "The lighthouse on Gull Point", timeout=WAIT_MS)
    assert titles(pane) == ["The lighthouse on Gull Point", "Harbour market", "Wisp"]
    assert pane.selected_positions() == [2]
    assert pane.editor.title.text() == "Wisp"
    settle(qtbot)


def test_save_right_after_typing_writes_what_was_typed(
    qtbot: QtBot, run: Run[Any], pane: LorebookPane, book_path: Path
) -> None:
    pane.select_positions([1])
    pane.editor.content.setPlainText("The harbour market runs on Saturdays and Sundays.")
    assert pane.editor.pending
    assert run(pane.save())
    assert "Saturdays and Sundays" in book_path.read_text(encoding="utf-8")
    assert not dirty(pane)
    assert run(pane.context.undo.undo())
    assert pane.entries[1].content == "The harbour market runs on Saturdays."
    settle(qtbot)


@pytest.mark.parametrize("fmt", ["st", "ccv2", "ccv3"])
def test_export_writes_the_saved_book(
    qtbot: QtBot, run: Run[Any], pane: LorebookPane, tmp_path: Path, fmt: str
) -> None:
    target = tmp_path / f"book-{fmt}.json"
    assert run(pane.export_to(target, fmt)) == 3
    exported = target.read_text(encoding="utf-8")
    assert json.loads(exported)
    for title in ("The lighthouse", "Harbour market", "Wisp"):
        assert title in exported
    assert run(pane.export_to(tmp_path / "missing" / "x.json", "nope")) is None
    assert "unknown format" in pane.error_banner.text()
    settle(qtbot)


def test_decorators_are_edited_and_saved(qtbot: QtBot, run: Run[Any], pane: LorebookPane, book_path: Path) -> None:
    pane.select_positions([1])
    pane.editor.decorators.setPlainText("@@activate\n")
    pane.editor.flush()
    assert pane.entries[1].decorators == ("@@activate",)
    assert run(pane.save())
    assert "@@activate" in book_path.read_text(encoding="utf-8")
    trial = run(pane.facade.lore.try_text(["nothing about anything"]))
    assert [(f.title, f.via) for f in trial.fired if f.title == "Harbour market"] == [("Harbour market", "decorator")]
    settle(qtbot)


def test_an_empty_book_says_how_to_start(qtbot: QtBot, real_familiar: Familiar) -> None:
    real_familiar.home.joinpath("lorebook.toml").unlink(missing_ok=True)
    pane = LorebookPane(make_context(qtbot, real_familiar))
    qtbot.addWidget(pane)
    pane.show()
    qtbot.waitUntil(lambda: pane.is_loaded, timeout=WAIT_MS)
    settle(qtbot)
    assert pane.entries == ()
    assert "Ctrl+N" in pane.table.placeholder()
    assert pane.editor.heading.text().startswith("No entry chosen")
    settle(qtbot)


def test_book_settings_are_one_undo_step_and_saved(
    qtbot: QtBot, run: Run[Any], pane: LorebookPane, book_path: Path
) -> None:
    assert pane.book is not None
    dialog = BookSettingsDialog(pane.book.settings, pane)
    qtbot.addWidget(dialog)
    dialog.token_budget.setValue(30)
    dialog.scan_depth.setValue(4)
    run(pane.set_settings(dialog.settings()))
    assert dirty(pane)
    assert pane.all_gauge.format().endswith("/ 30 tokens")
    assert run(pane.context.undo.undo())
    assert not dirty(pane)
    assert run(pane.context.undo.redo())
    assert run(pane.save())
    text = book_path.read_text(encoding="utf-8")
    assert "token_budget = 30" in text
    assert "scan_depth = 4" in text
    assert "This comment must survive every save." in text
    assert pane.book.budget == 30
    settle(qtbot)


def test_the_selected_menu_asks_and_applies(qtbot: QtBot, pane: LorebookPane) -> None:
    """The bulk menu's questions, answered in the real dialogs (opened without a nested loop), each answer one
    undoable change; a cancelled question changes nothing."""
    pane.select_positions([0, 2])

    def answer(set_value: Any) -> None:
        dialog = open_dialog(qtbot, QInputDialog)
        set_value(dialog)
        dialog.accept()

    pane._ask_set_field()
    open_dialog(qtbot, QInputDialog).reject()  # cancelled: nothing asked further, nothing changed
    settle(qtbot)
    before = [e.scan_depth for e in pane.entries]
    pane._ask_set_field()
    answer(lambda d: d.setTextValue("Scan depth (-1: the book's)"))
    answer(lambda d: d.setIntValue(6))
    qtbot.waitUntil(lambda: [e.scan_depth for e in pane.entries] == [6, before[1], 6], timeout=WAIT_MS)
    settle(qtbot)
    pane._ask_add_key()
    answer(lambda d: d.setTextValue("lantern"))
    qtbot.waitUntil(lambda: "lantern" in pane.entries[2].keys, timeout=WAIT_MS)
    settle(qtbot)
    pane._ask_remove_key()
    answer(lambda d: d.setTextValue("lantern"))
    qtbot.waitUntil(lambda: "lantern" not in pane.entries[2].keys, timeout=WAIT_MS)
    settle(qtbot)
    pane.disable_action.trigger()
    qtbot.waitUntil(lambda: [e.enabled for e in pane.entries] == [False, True, False], timeout=WAIT_MS)
    settle(qtbot)
