"""The lorebook editor's draft: the book as loaded, the entries as being edited, and how the two meet again.

Plain Python, no Qt: the Lorebook pane shows a `LoreDraft` and asks it for every change; the tests in
tests/ui/state drive it without a window.

- The base is the book as loaded or saved last (`book`); the draft is its entries with the edits made since
  (`entries`) and its book-wide fields (`settings`); `dirty` says whether a save would write anything.
- An entry's `ref` is its place in the base (None: new since). A save writes the draft and the saved book
  becomes the base, its refs renumbered: each load or save is a new *generation*, and a save records how
  the old generation's refs map into the new one, so an undo step made before the save (a `Snapshot` of
  its generation) is brought up to the book now (`restore`). A book read again from disk has no such map:
  an edit from before it cannot be undone onto it.
- A change on disk (another editor) under unsaved edits is merged three ways (`merge`): base, this draft,
  the file now. Entries are matched by position when the file kept its count, else by title and keys;
  an entry changed on one side takes that side; changed on both (whichever fields), the draft's version is
  kept and the entry is named a conflict; added on either side, it is kept; deleted on one side and
  unchanged on the other, it goes; deleted on disk and edited here, the edit stays (as a new entry);
  deleted here and edited on disk, it stays deleted and is named a conflict (that edit is lost).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from app.runtime.api.views import ImportItem, ImportPreview, LoreBookSettings, LoreBookView, LoreEntryView
from app.runtime.errors import FamiliarError


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The draft's entries at one moment, and the generation of the book their refs point into."""

    generation: int
    entries: tuple[LoreEntryView, ...]
    settings: LoreBookSettings | None = None  # the book-wide fields (None: as they were)


class DraftStep:
    """An edit of the draft (one entry, or a bulk operation on many), `Reversible` for the window's undo:
    undo puts the entries back (through `restore`, which shows them too)."""

    undo_window: float | None = None

    def __init__(self, restore: Callable[[Snapshot], None], label: str, before: Snapshot, after: Snapshot) -> None:
        self._restore = restore
        self._label = label
        self._before = before
        self._after = after

    @property
    def label(self) -> str:
        return self._label

    async def redo(self) -> None:
        self._restore(self._after)

    async def undo(self) -> None:
        self._restore(self._before)


# -- comparing and merging entries ---------------------------------------------------------------------------
def same_entry(a: LoreEntryView, b: LoreEntryView) -> bool:
    """Equal in every field a save writes (not the derived token count, not the position)."""
    return a is b or dataclasses.replace(a, ref=None, tokens=0) == dataclasses.replace(b, ref=None, tokens=0)


def _identity(entry: LoreEntryView) -> tuple[str, tuple[str, ...]]:
    return (entry.title, entry.keys)


@dataclass(frozen=True, slots=True)
class Merged:
    entries: tuple[LoreEntryView, ...]  # refs into `theirs` (None: new)
    conflicts: tuple[str, ...]  # titles edited both here and on disk: this editor's version was kept


def merge(base: Sequence[LoreEntryView], mine: Sequence[LoreEntryView], theirs: Sequence[LoreEntryView]) -> Merged:
    """A three-way merge of the draft (`mine`, refs into `base`) with the book as it is on disk now
    (`theirs`). Entries are matched by position when the file kept its count, else by title and keys.
    Edited on one side only: that side wins; on both: the draft wins and the entry is named in
    `conflicts`; added on disk: appended; removed on disk: dropped unless the draft edited it."""
    if len(base) == len(theirs):
        mapping: dict[int, int | None] = {i: i for i in range(len(base))}
    else:
        found: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i, entry in enumerate(theirs):
            found.setdefault(_identity(entry), []).append(i)
        mapping = {}
        for i, entry in enumerate(base):
            candidates = found.get(_identity(entry), [])
            mapping[i] = candidates.pop(0) if candidates else None
    used: set[int] = set()
    out: list[LoreEntryView] = []
    conflicts: list[str] = []
    kept_refs = {e.ref for e in mine if e.ref is not None}
    for entry in mine:
        if entry.ref is None:
            out.append(entry)
            continue
        was = base[entry.ref]
        target = mapping.get(entry.ref)
        mine_changed = not same_entry(entry, was)
        if target is None:
            if mine_changed:
                out.append(dataclasses.replace(entry, ref=None))
            continue
        used.add(target)
        their = theirs[target]
        theirs_changed = not same_entry(their, was)
        if mine_changed and theirs_changed and not same_entry(entry, their):
            conflicts.append(entry.title or f"entry {target + 1}")
        out.append(dataclasses.replace(entry, ref=target) if mine_changed else their)
    for index, target in mapping.items():
        if index not in kept_refs and target is not None:
            used.add(target)  # removed here: stays removed (an edit on disk of it is lost, so say so)
            if not same_entry(theirs[target], base[index]):
                conflicts.append(theirs[target].title or f"entry {target + 1}")
    out.extend(entry for i, entry in enumerate(theirs) if i not in used)
    return Merged(tuple(out), tuple(conflicts))


def translate(entries: Sequence[LoreEntryView], mapping: dict[int, int | None]) -> tuple[LoreEntryView, ...]:
    """Entries whose refs point into a book as it was, pointed into the book a save made of it (`mapping`:
    old ref -> new, None for an entry the save removed: it becomes a new entry again)."""
    out: list[LoreEntryView] = []
    for entry in entries:
        if entry.ref is None:
            out.append(entry)
            continue
        target = mapping.get(entry.ref)
        out.append(entry if target == entry.ref else dataclasses.replace(entry, ref=target))
    return tuple(out)


def digest(revision: str) -> str:
    """The file's content hash of a revision ("<sha256>:<mtime>"): a touch that changed nothing is no change."""
    return revision.split(":", 1)[0]


# -- bulk edits of entries -----------------------------------------------------------------------------------
def with_key(entry: LoreEntryView, key: str) -> LoreEntryView:
    return entry if key in entry.keys else dataclasses.replace(entry, keys=(*entry.keys, key))


def without_key(entry: LoreEntryView, key: str) -> LoreEntryView:
    """The key out of both its primary and its secondary keys."""
    return dataclasses.replace(
        entry,
        keys=tuple(k for k in entry.keys if k != key),
        secondary_keys=tuple(k for k in entry.secondary_keys if k != key),
    )


def to_import(preview: ImportPreview, take: Collection[int]) -> list[ImportItem]:
    """The items of an import preview the owner took that would change the book."""
    return [item for item in preview.items if item.number in take and item.action != "unchanged"]


@dataclass(frozen=True, slots=True)
class Budget:
    """The book's token costs against its budget, as the draft stands (the budget as it will be once saved)."""

    budget: int
    constant: int  # the enabled constant entries: what goes into every reply
    every: int  # every enabled entry, as if all fired at once
    book: int  # every entry, enabled or not


# -- the draft -------------------------------------------------------------------------------------------------
class LoreDraft:
    """The lorebook as being edited, against the book it was loaded (or last saved) as."""

    def __init__(self) -> None:
        self._book: LoreBookView | None = None  # the book as loaded or saved last: the draft's base
        self._generation = 0
        self._rebases: dict[int, dict[int, int | None]] = {}  # generation -> its refs in the next one
        self._entries: tuple[LoreEntryView, ...] = ()  # the draft
        self._settings: LoreBookSettings | None = None  # the draft's book-wide fields
        self._saved: tuple[LoreEntryView, ...] = ()
        self._disk_revision = ""  # the revision on disk last seen changed under the draft

    @property
    def book(self) -> LoreBookView | None:
        return self._book

    @property
    def entries(self) -> tuple[LoreEntryView, ...]:
        return self._entries

    @property
    def settings(self) -> LoreBookSettings | None:
        return self._settings

    @property
    def engine_settings(self) -> LoreBookSettings | None:
        """The book-wide fields to lint and try the draft with (None before a book is loaded: the engine's)."""
        return self._settings if self._book is not None else None

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def dirty(self) -> bool:
        return (
            len(self._entries) != len(self._saved)
            or any(a is not b and not same_entry(a, b) for a, b in zip(self._entries, self._saved, strict=True))
            or any(a.ref != b.ref for a, b in zip(self._entries, self._saved, strict=True))
            or (self._book is not None and self._settings != self._book.settings)
        )

    # -- a new base ----------------------------------------------------------------------------------------
    def set_book(self, book: LoreBookView, *, reset: bool, rebase: dict[int, int | None] | None = None) -> None:
        """A book loaded or saved: the new base. `rebase` maps the old generation's refs into it (a save);
        `reset` drops the draft's edits (else they stay, and so do book settings changed in the draft)."""
        if rebase is not None:
            self._rebases[self._generation] = rebase
        self._generation += 1
        settings_before = self._book.settings if self._book is not None else None
        self._book = book
        self._disk_revision = book.revision
        if reset or self._settings is None or self._settings == (settings_before or book.settings):
            self._settings = book.settings
        self._saved = book.entries
        if reset:
            self._entries = book.entries

    def saved(self, base: LoreBookView, written: Sequence[LoreEntryView], book: LoreBookView) -> None:
        """`written` (the draft on `base`) was saved as `book`: the new base, undo steps brought up to it."""
        mapping: dict[int, int | None] = {i: None for i in range(len(base.entries))}
        for position, entry in enumerate(written):
            if entry.ref is not None:
                mapping[entry.ref] = position
        self.set_book(book, reset=True, rebase=mapping)

    def merge_with(self, base: LoreBookView, theirs: LoreBookView) -> Merged:
        """The draft (made on `base`) merged with the book on disk now: `theirs` is the new base."""
        merged = merge(base.entries, self._entries, theirs.entries)
        self.set_book(theirs, reset=False)
        self._entries = merged.entries
        return merged

    # -- the file on disk ------------------------------------------------------------------------------------
    def differs_from(self, revision: str) -> bool:
        """The file on disk (at `revision`) is not the base (no base: it is not loaded yet)."""
        return self._book is None or digest(revision) != digest(self._book.revision)

    def changed_on_disk(self, revision: str) -> bool:
        """A change on disk not seen before (the same change seen again by the poll is not news)."""
        if not self.differs_from(revision) or revision == self._disk_revision:
            return False
        self._disk_revision = revision
        return True

    def saw_on_disk(self, revision: str) -> None:
        """The file is at `revision` (a refused save said so): the poll does not report it again."""
        self._disk_revision = revision

    # -- undo steps --------------------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        return Snapshot(self._generation, self._entries, self._settings)

    def after(self, entries: Sequence[LoreEntryView], settings: LoreBookSettings | None = None) -> Snapshot:
        """The draft as an edit makes it: `entries` (and `settings`, else the draft's)."""
        return Snapshot(self._generation, tuple(entries), settings or self._settings)

    def restore(self, snapshot: Snapshot) -> None:
        """Put the draft back as a snapshot had it (an undo or redo), its refs brought up to the book now."""
        entries = snapshot.entries
        generation = snapshot.generation
        while generation < self._generation:
            mapping = self._rebases.get(generation)
            if mapping is None:
                raise FamiliarError("the lorebook was read again from disk since: this edit cannot be undone")
            entries = translate(entries, mapping)
            generation += 1
        self._entries = entries
        if snapshot.settings is not None:
            self._settings = snapshot.settings

    # -- edits -----------------------------------------------------------------------------------------------------
    def edited(self, before: LoreEntryView, after: LoreEntryView) -> Snapshot | None:
        """The draft with `before` (found by identity: rows move, sort and filter) replaced by `after`; None
        when it is not in the draft any more (deleted, or replaced by an undo)."""
        position = next((i for i, e in enumerate(self._entries) if e is before), None)
        if position is None:
            return None
        entries = (*self._entries[:position], after, *self._entries[position + 1 :])
        return Snapshot(self._generation, entries, self._settings)

    def added(self, entry: LoreEntryView) -> tuple[LoreEntryView, ...]:
        return (*self._entries, entry)

    def without(self, positions: Collection[int]) -> tuple[LoreEntryView, ...]:
        return tuple(e for i, e in enumerate(self._entries) if i not in positions)

    def each_edited(
        self, positions: Collection[int], edit: Callable[[LoreEntryView], LoreEntryView]
    ) -> tuple[LoreEntryView, ...]:
        return tuple(edit(e) if i in positions else e for i, e in enumerate(self._entries))

    def imported(self, items: Sequence[ImportItem]) -> tuple[tuple[LoreEntryView, ...], list[int]]:
        """The draft with `items` in it (a new version in its entry's place, keeping its ref; anything else
        at the end), and the positions they went to."""
        draft = list(self._entries)
        touched: list[int] = []
        for item in items:
            if item.action == "changed" and item.existing is not None and item.existing < len(draft):
                draft[item.existing] = dataclasses.replace(item.entry, ref=draft[item.existing].ref)
                touched.append(item.existing)
            else:
                touched.append(len(draft))
                draft.append(item.entry)
        return tuple(draft), touched

    def keys_at(self, positions: Sequence[int]) -> list[str]:
        """Every key (primary or secondary) of the entries at `positions`, sorted."""
        return sorted({k for i in positions for k in (*self._entries[i].keys, *self._entries[i].secondary_keys)})

    # -- what the pane shows beside the entries ---------------------------------------------------------------
    def is_saved(self, entry: LoreEntryView) -> bool:
        """The entry is in the base as it is (what the book's fired counts are about)."""
        ref = entry.ref
        return ref is not None and 0 <= ref < len(self._saved) and self._saved[ref] is entry

    def budget(self) -> Budget:
        book = self._book
        budget = book.budget if book is not None else 0
        chosen = self._settings.token_budget if self._settings is not None else None
        if chosen is not None and book is not None and chosen != book.settings.token_budget:
            budget = min(budget, chosen) if book.settings.token_budget is None else chosen  # as it will be once saved
        enabled = [e for e in self._entries if e.enabled]
        return Budget(
            budget,
            constant=sum(e.tokens for e in enabled if e.constant),
            every=sum(e.tokens for e in enabled),
            book=sum(e.tokens for e in self._entries),
        )
