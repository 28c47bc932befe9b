"""Importing a foreign lorebook into lorebook.toml, planned once for every front end.

Each entry of the file (World Info, a V2 / V3 card's book, a lorebook_v3 file: read by app/lore/formats.py)
is compared with the entries of the book (or of an editor's unsaved draft):

- unchanged: an entry has exactly its fields (those at the schema's defaults left out), so importing a
  file twice adds nothing;
- changed: an entry with its title and id (both as written) differs: the fields that differ are named;
- added: anything else.

`apply_plan` writes the added entries and the changed ones chosen, into a LorebookDocument (comments and
everything else in lorebook.toml stay); `replace_all` substitutes the file's book for the book's entries
and settings. Nothing is written until the document is saved, and a bad entry raises LorebookError
(naming it) before anything changes. The window's preview, `familiar lore import` and the editor's draft
all plan through here (app/runtime/api/lore.py wraps the plan in view records).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.lore.book import ENTRY_KEYS, Lorebook, LoreEntry, validate_entry
from app.lore.document import LorebookDocument
from app.lore.formats import ImportedLorebook, read_lorebook_file

ImportAction = Literal["added", "changed", "unchanged"]


def _entry_defaults() -> dict[str, Any]:
    """Each entry field at the schema's default, as lorebook.toml would hold it."""
    blank = validate_entry({}, Path("lorebook.toml"), 0)
    out: dict[str, Any] = {"id": None}
    for name in ENTRY_KEYS:
        if name in ("id", "extensions"):
            continue
        value = getattr(blank, name)
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


ENTRY_DEFAULTS: dict[str, Any] = _entry_defaults()


def comparable(fields: Mapping[str, Any]) -> str:
    """An entry's fields, those at the schema's defaults left out, as one canonical text: what 'the same
    entry' compares (an imported entry and the one it became in lorebook.toml give the same text)."""
    kept = {
        key: value
        for key, value in fields.items()
        if not (key in ENTRY_DEFAULTS and value == ENTRY_DEFAULTS[key] and type(value) is type(ENTRY_DEFAULTS[key]))
    }
    return json.dumps(kept, sort_keys=True, ensure_ascii=False, default=str)


def identity(fields: Mapping[str, Any]) -> tuple[str, Any]:
    """What makes an imported entry a new version of one in the book: its title and id (both as written)."""
    ident = fields.get("id")
    return (
        str(fields.get("title") or ""),
        ident if isinstance(ident, int | str) and not isinstance(ident, bool) else None,
    )


@dataclass(frozen=True, slots=True)
class PlannedEntry:
    number: int  # 0-based place in the imported file
    action: ImportAction
    existing: int | None  # the entry it matches (changed, unchanged), 0-based, among those compared with
    changed_fields: tuple[str, ...]  # changed: which fields differ
    fields: dict[str, Any]  # the entry as it would be written
    checked: LoreEntry  # those fields, checked against the schema


@dataclass(frozen=True, slots=True)
class ImportPlan:
    imported: ImportedLorebook
    entries: tuple[PlannedEntry, ...]

    def count(self, action: ImportAction) -> int:
        return sum(entry.action == action for entry in self.entries)


def plan_import(imported: ImportedLorebook, existing: Sequence[Mapping[str, Any]], path: Path) -> ImportPlan:
    """Each imported entry against `existing` (the entries of the book, or of an editor's draft, as
    lorebook.toml holds them). Raises LorebookError (naming the entry) for one the schema refuses."""
    same = {comparable(raw): i for i, raw in reversed(list(enumerate(existing)))}
    by_identity: dict[tuple[str, Any], int] = {}
    for i, raw in enumerate(existing):
        found = identity(raw)
        if found != ("", None):
            by_identity.setdefault(found, i)
    planned: list[PlannedEntry] = []
    for number, fields in enumerate(imported.entries):
        checked = validate_entry(dict(fields), path, number)
        match = same.get(comparable(fields))
        ident = identity(fields)
        if match is not None:
            planned.append(PlannedEntry(number, "unchanged", match, (), dict(fields), checked))
        elif ident != ("", None) and ident in by_identity:
            index = by_identity[ident]
            old = existing[index]
            changed = tuple(
                sorted(
                    key
                    for key in set(fields) | set(old)
                    if comparable({key: fields[key]} if key in fields else {})
                    != comparable({key: old[key]} if key in old else {})
                )
            )
            planned.append(PlannedEntry(number, "changed", index, changed, dict(fields), checked))
        else:
            planned.append(PlannedEntry(number, "added", None, (), dict(fields), checked))
    return ImportPlan(imported, tuple(planned))


def apply_plan(plan: ImportPlan, document: LorebookDocument, take: Collection[int] | None) -> tuple[int, int, int]:
    """Add the added entries and update the changed ones that `take` names (None: all of them); returns
    (added, updated, skipped). Raises LorebookError (naming the entry) before anything is written."""
    added: list[dict[str, Any]] = []
    updated = 0
    for entry in plan.entries:
        if entry.action == "unchanged" or (take is not None and entry.number not in take):
            continue
        if entry.action == "added":
            added.append(entry.fields)
            continue
        assert entry.existing is not None
        old = document.entry(entry.existing)
        changes: dict[str, Any] = {key: None for key in old if key not in entry.fields}
        changes.update(entry.fields)
        document.update_entry(entry.existing, changes)
        updated += 1
    if added:
        document.add_entries(added)
    return len(added), updated, len(plan.entries) - len(added) - updated


def replace_all(document: LorebookDocument, imported: ImportedLorebook) -> int:
    """The book's entries and settings replaced by the file's (its foreign extensions too); returns how many
    entries were removed. Comments and the rest of lorebook.toml stay."""
    replaced = document.clear_entries()
    document.set_fields({key: value for key, value in imported.book.items() if key != "extensions"})
    foreign = imported.book.get("extensions", {})
    for space in ("st", "card"):
        document.set_extension(space, foreign.get(space))
    document.add_entries(imported.entries)
    return replaced


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import into lorebook.toml did."""

    imported: ImportedLorebook
    added: int
    updated: int
    unchanged: int
    changed_kept: int  # entries the file has in another version, left as the book has them (no `update`)
    replaced: int  # entries removed first (`replace`)
    book: Lorebook  # the lorebook as saved


def import_into(
    imported: ImportedLorebook, lorebook: Path, *, replace: bool = False, update: bool = False
) -> ImportReport:
    """Import a foreign lorebook, already read, into lorebook.toml: the entries the book does not have are
    added (one it has as is is skipped); with `update`, the entries it has in another version are updated;
    with `replace`, the book's entries are replaced by the file's. Raises LorebookError (lorebook.toml, or
    an entry the schema refuses) before anything is written."""
    document = LorebookDocument.load(lorebook)
    if replace:
        replaced = replace_all(document, imported)
        return ImportReport(imported, len(imported.entries), 0, 0, 0, replaced, document.save())
    plan = plan_import(imported, document.entries(), document.path)
    take = None if update else {entry.number for entry in plan.entries if entry.action == "added"}
    added, updated, _skipped = apply_plan(plan, document, take)
    changed = plan.count("changed")
    book = document.save() if added or updated else document.book()
    return ImportReport(imported, added, updated, plan.count("unchanged"), changed - updated, 0, book)


def import_file(source: Path, lorebook: Path, *, replace: bool = False, update: bool = False) -> ImportReport:
    """`import_into` for a JSON file (World Info, a card, a lorebook_v3 file). Raises LorebookFormatError for
    the source, LorebookError for lorebook.toml; either leaves lorebook.toml as it was."""
    return import_into(read_lorebook_file(source), lorebook, replace=replace, update=update)


__all__ = [
    "ENTRY_DEFAULTS",
    "ImportAction",
    "ImportPlan",
    "ImportReport",
    "PlannedEntry",
    "apply_plan",
    "comparable",
    "identity",
    "import_file",
    "import_into",
    "plan_import",
    "replace_all",
]
