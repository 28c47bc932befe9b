"""The lorebook draft without a window: its three-way merge with the file, dirty tracking, undo steps brought
up to a save, the disk poll's notion of a change, bulk edits and imports, the budget gauges' figures."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from app.runtime.api.views import ImportItem, ImportPreview, LoreBookSettings, LoreBookView, LoreEntryView
from app.runtime.errors import FamiliarError
from app.ui.state.lore_draft import (
    DraftStep,
    LoreDraft,
    Snapshot,
    digest,
    merge,
    same_entry,
    to_import,
    translate,
    with_key,
    without_key,
)


def entry(ref: int | None, title: str, **fields: Any) -> LoreEntryView:
    return dataclasses.replace(LoreEntryView(ref=ref, title=title, keys=(title.lower(),)), **fields)


def numbered(*entries: LoreEntryView) -> tuple[LoreEntryView, ...]:
    """Entries as a load gives them: each one's ref its place in the file."""
    return tuple(dataclasses.replace(e, ref=i) for i, e in enumerate(entries))


def book(*entries: LoreEntryView, revision: str = "aaa:1", budget: int = 1000, **settings: Any) -> LoreBookView:
    return LoreBookView(
        path="lorebook.toml",
        revision=revision,
        settings=LoreBookSettings(**settings),
        entries=numbered(*entries),
        problems=(),
        budget=budget,
        max_entries_in_force=0,
        constant_tokens=0,
        total_tokens=0,
    )


BASE = (entry(0, "A"), entry(1, "B"), entry(2, "C"))


def shown(entries: tuple[LoreEntryView, ...]) -> list[tuple[str, int | None, int, str]]:
    return [(e.title, e.ref, e.priority, e.content) for e in entries]


# -- the three-way merge --------------------------------------------------------------------------------------
def test_both_changed_the_same_field_is_a_conflict_and_the_draft_wins() -> None:
    mine = (dataclasses.replace(BASE[0], priority=1), BASE[1], BASE[2])
    theirs = (dataclasses.replace(BASE[0], priority=2), BASE[1], BASE[2])
    merged = merge(BASE, mine, theirs)
    assert shown(merged.entries)[0] == ("A", 0, 1, "")
    assert merged.conflicts == ("A",)


def test_both_made_the_same_change_is_no_conflict() -> None:
    mine = (dataclasses.replace(BASE[0], priority=7), BASE[1], BASE[2])
    theirs = (dataclasses.replace(BASE[0], priority=7, tokens=3), BASE[1], BASE[2])  # tokens: derived, not written
    merged = merge(BASE, mine, theirs)
    assert shown(merged.entries)[0] == ("A", 0, 7, "")
    assert merged.conflicts == ()


def test_changes_to_different_entries_merge_each_side_taking_its_own() -> None:
    mine = (dataclasses.replace(BASE[0], priority=1), BASE[1], BASE[2])
    theirs = (BASE[0], dataclasses.replace(BASE[1], content="b!"), BASE[2])
    merged = merge(BASE, mine, theirs)
    assert shown(merged.entries) == [("A", 0, 1, ""), ("B", 1, 100, "b!"), ("C", 2, 100, "")]
    assert merged.entries[1] is theirs[1]  # untouched here: the file's own entry, as it is on disk
    assert merged.conflicts == ()


def test_different_fields_of_one_entry_are_still_a_conflict() -> None:
    """The merge is by entry, not by field: both sides changed the entry, so the draft's version is kept (the
    bar's words say so: "yours win where both changed an entry") and the entry is named."""
    mine = (dataclasses.replace(BASE[0], priority=1), BASE[1], BASE[2])
    theirs = (dataclasses.replace(BASE[0], content="a!"), BASE[1], BASE[2])
    merged = merge(BASE, mine, theirs)
    assert shown(merged.entries)[0] == ("A", 0, 1, "")
    assert merged.conflicts == ("A",)


def test_deleted_on_disk_and_edited_here_the_edit_stays_as_a_new_entry() -> None:
    mine = (BASE[0], dataclasses.replace(BASE[1], priority=5), BASE[2])
    theirs = numbered(BASE[0], BASE[2])  # the count changed: entries are matched by title and keys
    merged = merge(BASE, mine, theirs)
    assert shown(merged.entries) == [("A", 0, 100, ""), ("B", None, 5, ""), ("C", 1, 100, "")]
    assert merged.conflicts == ()


def test_deleted_on_disk_and_untouched_here_it_goes() -> None:
    theirs = numbered(BASE[0], BASE[2])
    merged = merge(BASE, BASE, theirs)
    assert shown(merged.entries) == [("A", 0, 100, ""), ("C", 1, 100, "")]
    assert merged.conflicts == ()


def test_deleted_here_and_edited_on_disk_it_stays_deleted_and_is_named() -> None:
    mine = (BASE[0], BASE[2])
    theirs = (BASE[0], dataclasses.replace(BASE[1], content="b!"), BASE[2])
    merged = merge(BASE, mine, theirs)
    assert shown(merged.entries) == [("A", 0, 100, ""), ("C", 2, 100, "")]
    assert merged.conflicts == ("B",)  # the edit on disk is lost: said so


def test_deleted_here_and_untouched_on_disk_it_stays_deleted() -> None:
    mine = (BASE[0], BASE[2])
    merged = merge(BASE, mine, BASE)
    assert shown(merged.entries) == [("A", 0, 100, ""), ("C", 2, 100, "")]
    assert merged.conflicts == ()


def test_added_on_both_sides_both_are_kept() -> None:
    mine = (*BASE, entry(None, "Mine"))
    theirs = (*BASE, entry(3, "Theirs"))
    merged = merge(BASE, mine, theirs)
    assert [(e.title, e.ref) for e in merged.entries] == [("A", 0), ("B", 1), ("C", 2), ("Mine", None), ("Theirs", 3)]
    assert merged.conflicts == ()


def test_a_file_that_reordered_its_entries_is_matched_by_title_and_keys() -> None:
    mine = (dataclasses.replace(BASE[0], priority=1), BASE[1], BASE[2])
    theirs = numbered(BASE[2], entry(None, "New on disk"), BASE[1], BASE[0])
    merged = merge(BASE, mine, theirs)
    assert [(e.title, e.ref, e.priority) for e in merged.entries] == [
        ("A", 3, 1),
        ("B", 2, 100),
        ("C", 0, 100),
        ("New on disk", 1, 100),
    ]
    assert merged.conflicts == ()


def test_translate_and_same_entry() -> None:
    moved = translate((BASE[0], BASE[1], entry(None, "N")), {0: 1, 1: None})
    assert [(e.title, e.ref) for e in moved] == [("A", 1), ("B", None), ("N", None)]
    assert same_entry(BASE[0], dataclasses.replace(BASE[0], ref=5, tokens=9))
    assert not same_entry(BASE[0], dataclasses.replace(BASE[0], content="x"))


# -- the draft ------------------------------------------------------------------------------------------------
def loaded(*entries: LoreEntryView, **settings: Any) -> LoreDraft:
    draft = LoreDraft()
    draft.set_book(book(*(entries or BASE), **settings), reset=True)
    return draft


def test_a_draft_is_dirty_while_it_differs_from_its_book() -> None:
    draft = LoreDraft()
    assert (draft.book, draft.entries, draft.dirty, draft.engine_settings) == (None, (), False, None)
    draft = loaded()
    assert not draft.dirty
    first = draft.snapshot()
    draft.restore(draft.after(draft.each_edited({1}, lambda e: dataclasses.replace(e, priority=3))))
    assert draft.dirty
    draft.restore(draft.after(draft.each_edited({1}, lambda e: dataclasses.replace(e, priority=100))))
    assert not draft.dirty, "edited back to what the book has: nothing to save"
    draft.restore(draft.after(draft.entries, dataclasses.replace(draft.settings or LoreBookSettings(), scan_depth=3)))
    assert draft.dirty
    draft.restore(first)
    assert not draft.dirty
    draft.restore(draft.after(draft.without({0})))
    assert draft.dirty
    draft.restore(first)
    draft.restore(draft.after((BASE[1], BASE[0], BASE[2])))
    assert draft.dirty, "the same entries in another order"


def test_an_edit_is_found_by_identity() -> None:
    draft = loaded()
    target = draft.entries[2]
    done = draft.edited(target, dataclasses.replace(target, content="new"))
    assert done is not None
    assert [e.content for e in done.entries] == ["", "", "new"]
    assert draft.edited(dataclasses.replace(target), target) is None, "an equal copy is not the entry edited"


def test_undo_steps_from_before_a_save_are_brought_up_to_the_saved_book() -> None:
    draft = loaded()
    before = draft.snapshot()
    written = draft.without({0})  # A deleted: B and C are entries 0 and 1 of the saved book
    draft.restore(draft.after(written))
    base = draft.book
    assert base is not None
    draft.saved(base, written, book(*written, revision="bbb:2"))
    assert (draft.generation, draft.dirty) == (2, False)
    draft.restore(before)  # undo the delete after the save
    assert [(e.title, e.ref) for e in draft.entries] == [("A", None), ("B", 0), ("C", 1)]
    assert draft.dirty


def test_an_edit_from_before_a_reload_cannot_be_undone_onto_the_new_book() -> None:
    draft = loaded()
    before = draft.snapshot()
    draft.set_book(book(*BASE, revision="ccc:3"), reset=True)  # read again from disk
    with pytest.raises(FamiliarError, match="read again from disk"):
        draft.restore(before)


def test_a_draft_step_restores_through_the_pane() -> None:
    shown_now: list[Snapshot] = []
    before, after = Snapshot(1, BASE[:1]), Snapshot(1, BASE)
    step = DraftStep(shown_now.append, "Added", before, after)
    for move in (step.redo(), step.undo()):
        with pytest.raises(StopIteration):
            move.send(None)  # nothing in it waits: done at the first step
    assert (step.label, step.undo_window, shown_now) == ("Added", None, [after, before])


def test_merging_with_the_disk_makes_the_file_the_base_and_keeps_the_edits() -> None:
    draft = loaded()
    draft.restore(draft.after(draft.each_edited({0}, lambda e: dataclasses.replace(e, priority=1))))
    base = draft.book
    assert base is not None
    theirs = book(BASE[0], dataclasses.replace(BASE[1], content="b!"), BASE[2], revision="ddd:4")
    merged = draft.merge_with(base, theirs)
    assert merged.conflicts == ()
    assert draft.book is theirs
    assert shown(draft.entries) == [("A", 0, 1, ""), ("B", 1, 100, "b!"), ("C", 2, 100, "")]
    assert draft.dirty, "the merge is written by the next save"


def test_book_settings_changed_in_the_draft_survive_a_merge_but_not_a_reset() -> None:
    draft = loaded()
    mine = LoreBookSettings(scan_depth=3)
    draft.restore(draft.after(draft.entries, mine))
    base = draft.book
    assert base is not None
    draft.merge_with(base, book(*BASE, revision="eee:5"))
    assert draft.settings == mine
    draft.set_book(book(*BASE, revision="fff:6"), reset=True)
    assert draft.settings == LoreBookSettings()


def test_the_disk_poll_reports_a_change_once_and_not_a_touch() -> None:
    draft = loaded()
    assert digest("aaa:1") == "aaa"
    assert not draft.differs_from("aaa:99")
    assert not draft.changed_on_disk("aaa:99"), "touched, not changed"
    assert draft.changed_on_disk("zzz:2")
    assert not draft.changed_on_disk("zzz:2"), "the same change is not news twice"
    draft.saw_on_disk("yyy:3")
    assert not draft.changed_on_disk("yyy:3")
    assert draft.changed_on_disk("xxx:4")


def test_bulk_edits_of_keys() -> None:
    a = entry(0, "A", keys=("a", "x"), secondary_keys=("x", "y"))
    assert with_key(a, "a") is a
    assert with_key(a, "z").keys == ("a", "x", "z")
    assert (without_key(a, "x").keys, without_key(a, "x").secondary_keys) == (("a",), ("y",))
    draft = loaded(a, entry(1, "B", keys=("b",)))
    assert draft.keys_at([0, 1]) == ["a", "b", "x", "y"]
    assert draft.added(entry(None, "N"))[-1].title == "N"


def test_an_import_replaces_the_entries_it_changes_and_appends_the_rest() -> None:
    draft = loaded()
    items = (
        ImportItem(0, "changed", entry(None, "B", content="new b"), 1, ("content",)),
        ImportItem(1, "added", entry(None, "D"), None, ()),
        ImportItem(2, "unchanged", entry(None, "C"), 2, ()),
        ImportItem(3, "added", entry(None, "E"), None, ()),
    )
    preview = ImportPreview("book.json", "st", "SillyTavern World Info", "aaa:1", items)
    chosen = to_import(preview, {0, 1, 2})
    assert [i.number for i in chosen] == [0, 1], "not taken, or already in the book: not imported"
    entries, touched = draft.imported(chosen)
    assert [(e.title, e.ref, e.content) for e in entries] == [
        ("A", 0, ""),
        ("B", 1, "new b"),
        ("C", 2, ""),
        ("D", None, ""),
    ]
    assert touched == [1, 3]


def test_the_budget_as_it_will_be_once_saved() -> None:
    entries = (
        entry(0, "A", tokens=10, constant=True),
        entry(1, "B", tokens=20),
        entry(2, "C", tokens=40, enabled=False),
    )
    draft = loaded(*entries)
    costs = draft.budget()
    assert (costs.budget, costs.constant, costs.every, costs.book) == (1000, 10, 30, 70)
    draft.restore(draft.after(draft.entries, LoreBookSettings(token_budget=500)))
    assert draft.budget().budget == 500, "a lower budget of the book's own, once saved"
    draft.restore(draft.after(draft.entries, LoreBookSettings(token_budget=5000)))
    assert draft.budget().budget == 1000, "the book's own budget only lowers the tier's"
    assert LoreDraft().budget().budget == 0


def test_fired_counts_are_about_entries_as_saved() -> None:
    draft = loaded()
    saved = draft.entries[0]
    assert draft.is_saved(saved)
    assert not draft.is_saved(dataclasses.replace(saved, content="edited"))
    assert not draft.is_saved(entry(None, "N"))
    assert not draft.is_saved(entry(9, "Out of range"))
