"""`facade.lore`: the lorebook as the window and the CLI see it and edit it.

- Status: a watcher re-reads lorebook.toml about once a second (on a worker thread) and publishes a
  `LorebookStatus` whenever what is wrong with it changes: a file that does not read names its line and
  what is wrong and keeps the last good book in use; a fixed file clears the banner.
- Load and save: entries as view records with a revision (the file's sha256 and mtime). A save names the
  revision it was based on and is refused (LoreConflictError, nothing written) when the file changed on
  disk since; otherwise only what changed is written (document.py: one edit in a book of 5,000 entries
  saves in milliseconds), comments and [extensions] kept, atomically, and the new book is in use at once.
- Lint, try (pasted texts, or a place's last messages, through the engine the bot uses, with the place's
  message clock and timed effects), timed effects per place with Clear, import with a preview (added /
  changed / unchanged per entry: importing the same file again adds nothing) and a per-entry choice,
  export to SillyTavern World Info, Character Card V2 and V3.
Everything that reads or writes a file, or parses a book, runs on a worker thread: a big book takes a
while, and the window's thread must not wait for it.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from app.config.settings import BudgetTier
from app.lore import lint as lore_lint
from app.lore.activation import FOREVER, TimedEffect, activate, entry_key
from app.lore.book import (
    BOOK_SETTINGS,
    Lorebook,
    LorebookError,
    LoreEntry,
    LoreProblem,
    describe_problem,
    parse_lorebook,
    rebuilt,
    validate_entry,
    with_settings,
)
from app.lore.errors import LoreError
from app.lore.keys import key_problem
from app.lore.scanner import LoreScanner, ScannerCache, describe_disabled
from app.memory.errors import StoreError
from app.memory.history import History
from app.memory.liveness import LoopHealth, LoopWatch, end_task
from app.memory.lore_state import LoreState
from app.memory.policy import place_problem
from app.memory.records import SELF_KEY, Turn
from app.runtime.api.views import (
    ImportItem,
    ImportOutcome,
    ImportPreview,
    LoreBookSettings,
    LoreBookView,
    LoreEntryView,
    LoreFiredView,
    LoreLint,
    LoreProblemView,
    LoreTrial,
    TimedEffectView,
)
from app.runtime.changes import ChangeBroadcaster
from app.runtime.context.budget import count_tokens
from app.runtime.context.lore_layer import (
    LoreFile,
    LoreFileStatus,
    lore_budget,
    reply_seed,
    select,
    to_effects,
)
from app.runtime.errors import FamiliarError, LoreConflictError
from app.runtime.events import ChangeKind, LorebookStatus, RuntimeEvent
from app.runtime.explain import explained_lore, explained_lore_drop
from app.runtime.names import Names

if TYPE_CHECKING:  # the formats and the round-trip editor (tomlkit) load when lore is imported, exported or edited
    from app.lore.document import LorebookDocument
    from app.lore.formats import ImportedLorebook
    from app.lore.importing import ImportPlan, ImportReport

_log = logging.getLogger(__name__)

WATCH_SECONDS = 1.0  # a save in an editor shows (or clears) its banner within about a second
TRY_MESSAGES = 20  # how many of a place's last messages `try_place` looks at by default
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# -- view records <-> lorebook.toml ------------------------------------------------------------------------
_BLANK = LoreEntryView()
EDIT_FIELDS: tuple[str, ...] = (
    "title", "id", "keys", "secondary_keys", "logic", "content", "priority", "constant", "enabled",
    "case_sensitive", "whole_words", "scan_depth", "probability", "use_probability", "group", "group_override",
    "group_weight", "use_group_scoring", "sticky", "cooldown", "delay", "exclude_recursion", "prevent_recursion",
    "delay_until_recursion",
)  # fmt: skip
SETTING_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(LoreBookSettings))
_SETTING_DEFAULTS = LoreBookSettings()


def entry_view(entry: LoreEntry, raw: Mapping[str, Any], ref: int | None, tokens: int | None = None) -> LoreEntryView:
    extensions = raw.get("extensions")
    lines = extensions.get("decorators") if isinstance(extensions, Mapping) else None
    decorators = tuple(line for line in lines if isinstance(line, str)) if isinstance(lines, list) else ()
    ident = raw.get("id")
    return LoreEntryView(
        ref=ref,
        title=entry.title,
        keys=entry.keys,
        secondary_keys=entry.secondary_keys,
        logic=cast(Any, entry.logic),
        content=entry.content,
        priority=entry.priority,
        constant=entry.constant,
        enabled=entry.enabled,
        case_sensitive=entry.case_sensitive,
        whole_words=entry.whole_words,
        scan_depth=entry.scan_depth,
        probability=entry.probability,
        use_probability=entry.use_probability,
        group=entry.group,
        group_override=entry.group_override,
        group_weight=entry.group_weight,
        use_group_scoring=entry.use_group_scoring,
        sticky=entry.sticky,
        cooldown=entry.cooldown,
        delay=entry.delay,
        exclude_recursion=entry.exclude_recursion,
        prevent_recursion=entry.prevent_recursion,
        delay_until_recursion=entry.delay_until_recursion,
        decorators=decorators,
        id=ident if isinstance(ident, int | str) and not isinstance(ident, bool) else None,
        tokens=count_tokens(entry.content.strip()) if tokens is None else tokens,
    )


def _toml_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def entry_fields(view: LoreEntryView) -> dict[str, Any]:
    """The entry as lorebook.toml holds it: the fields that differ from the schema's defaults."""
    fields = {
        name: _toml_value(getattr(view, name)) for name in EDIT_FIELDS if getattr(view, name) != getattr(_BLANK, name)
    }
    if view.decorators:
        fields["extensions"] = {"decorators": list(view.decorators)}
    return fields


def entry_changes(old: LoreEntryView, new: LoreEntryView) -> dict[str, Any]:
    """The update_entry() fields from one version of an entry to the next (None: back to the default)."""
    changes: dict[str, Any] = {}
    for name in EDIT_FIELDS:
        before, after = getattr(old, name), getattr(new, name)
        if before != after:
            changes[name] = None if after == getattr(_BLANK, name) else _toml_value(after)
    return changes


def _fields_json(fields: Mapping[str, Any]) -> str:
    return json.dumps(fields, ensure_ascii=False, sort_keys=True)


def _with_edits(raw: Mapping[str, Any], base: LoreEntryView, view: LoreEntryView) -> dict[str, Any]:
    """`raw` (an entry as lorebook.toml holds it, which reads as `base`) with the edits that make it `view`."""
    fields = dict(raw)
    for name, value in entry_changes(base, view).items():
        if value is None:
            fields.pop(name, None)
        else:
            fields[name] = value
    if view.decorators != base.decorators:
        extensions = dict(fields.get("extensions") or {})
        if view.decorators:
            extensions["decorators"] = list(view.decorators)
        else:
            extensions.pop("decorators", None)
        if extensions:
            fields["extensions"] = extensions
        else:
            fields.pop("extensions", None)
    return fields


def imported_fields(view: LoreEntryView, path: Path) -> dict[str, Any]:
    """An entry taken from an import (`view.imported` set) as lorebook.toml will hold it: the fields it came
    with, its extensions included, with the edits made to it since."""
    if view.imported is None:
        raise ValueError("not an imported entry")
    raw = json.loads(view.imported)
    try:
        base = entry_view(validate_entry(dict(raw), path, view.ref or 0), raw, view.ref)
    except LorebookError as exc:
        raise FamiliarError(f"{path}: {exc.problem}") from None
    return _with_edits(raw, base, view)


def draft_raw(
    views: Sequence[LoreEntryView], document: LorebookDocument, loaded: Sequence[LoreEntryView]
) -> list[dict[str, Any]]:
    """An editor's draft as lorebook.toml would hold it once saved (`loaded`: the document's entries as views)."""
    out: list[dict[str, Any]] = []
    for view in views:
        if view.imported is not None:
            out.append(imported_fields(view, document.path))
        elif view.ref is not None and 0 <= view.ref < len(loaded):
            out.append(_with_edits(document.entry(view.ref), loaded[view.ref], view))
        else:
            out.append(entry_fields(view))
    return out


def settings_view(book: Lorebook, top: Mapping[str, Any]) -> LoreBookSettings:
    return LoreBookSettings(
        name=top["name"] if isinstance(top.get("name"), str) else "",
        description=top["description"] if isinstance(top.get("description"), str) else "",
        **{name: getattr(book, name) for name in BOOK_SETTINGS},
    )


def draft_book(
    entries: Sequence[LoreEntryView], settings: LoreBookSettings, path: Path = Path("lorebook.toml")
) -> Lorebook:
    """A book from view records (an editor's unsaved draft), checked as lorebook.toml would be."""
    base = with_settings(parse_lorebook("", path), settings)
    checked = [validate_entry(entry_fields(view), path, i) for i, view in enumerate(entries)]
    return rebuilt(base, checked, "draft")


def _digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_revision(path: Path) -> tuple[str | None, str]:
    """(sha256, revision) of the file now; (None, "") when there is none."""
    try:
        data = path.read_bytes()
        stat = path.stat()
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        raise FamiliarError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    digest = _digest_of(data)
    return digest, f"{digest}:{stat.st_mtime_ns}"


def _digest_part(revision: str) -> str | None:
    return revision.split(":", 1)[0] or None


# -- import sources ----------------------------------------------------------------------------------------
def _card_document(path: Path) -> dict[str, Any]:
    """The card document of a PNG card; the card code (and tomlkit) load only when one is read."""
    from app.runtime.cards import CardError, read_card

    try:
        return read_card(path).document
    except CardError as exc:
        raise FamiliarError(f"{path}: {exc}") from None


def read_lore_source(path: Path) -> ImportedLorebook:
    """A foreign lorebook: World Info, a V2 / V3 card (JSON, or PNG with its `chara` / `ccv3` chunk), a bare
    character_book or a lorebook_v3 file. Raises FamiliarError in one line naming the file."""
    from app.lore.formats import LorebookFormatError, import_lorebook
    from app.lore.formats import read_lorebook_file as read_lorebook_json

    try:
        with path.open("rb") as handle:
            png = handle.read(len(PNG_MAGIC)) == PNG_MAGIC
    except OSError:
        png = False  # read_lorebook_json says what is wrong with it
    try:
        if not png:
            return read_lorebook_json(path)
        return import_lorebook(_card_document(path))
    except LorebookFormatError as exc:
        message = str(exc)
        raise FamiliarError(message if message.startswith(str(path)) else f"{path}: {message}") from None


@dataclass(frozen=True, slots=True)
class _Plan:
    """An import planned by app/lore/importing.py, with each entry as the window shows it."""

    plan: ImportPlan
    items: tuple[ImportItem, ...]


def plan_import(
    imported: ImportedLorebook, document: LorebookDocument, existing: Sequence[Mapping[str, Any]] | None = None
) -> _Plan:
    """Each imported entry against the book (or against `existing`, the entries of an editor's draft as
    lorebook.toml would hold them): unchanged, changed or added (app/lore/importing.py)."""
    from app.lore.importing import plan_import as plan_entries

    plan = plan_entries(imported, document.entries() if existing is None else list(existing), document.path)
    items = tuple(
        ImportItem(
            entry.number,
            entry.action,
            dataclasses.replace(entry_view(entry.checked, entry.fields, None), imported=_fields_json(entry.fields)),
            entry.existing,
            entry.changed_fields,
        )
        for entry in plan.entries
    )
    return _Plan(plan, items)


def apply_plan(plan: _Plan, document: LorebookDocument, take: Collection[int] | None) -> tuple[int, int, int]:
    """Add the added entries and update the changed ones that `take` names (None: all of them); returns
    (added, updated, skipped). Raises LorebookError (naming the entry) before anything is written."""
    from app.lore.importing import apply_plan as apply_entries

    return apply_entries(plan.plan, document, take)


def trial(
    book: Lorebook,
    texts: Sequence[str],
    *,
    seed: int,
    tier: BudgetTier,
    char: str,
    turns: Sequence[Turn | None] | None = None,
    clock: int | None = None,
    effects: Sequence[TimedEffect] = (),
    scanner: LoreScanner | None = None,
) -> LoreTrial:
    """What the lorebook would put in a reply to these texts (oldest first), through the engine the bot uses:
    activation at message `clock` (default: as many as there are texts) with these timed effects, then the
    budget of `tier`. `turns` are the stored messages of the texts (spans then name them)."""
    scanner = scanner or LoreScanner(book)
    messages: list[Turn | None] = list(turns) if turns is not None else [None] * len(texts)
    at = len(texts) if clock is None else clock
    activation = activate(scanner, list(texts), clock=at, effects=effects, seed=seed)
    budget, cap = lore_budget(book, tier)
    speaker = next((t.author_name for t in reversed(messages) if t is not None and t.author_key != SELF_KEY), "User")
    chosen = select(activation, budget, cap, char=char, user=speaker, turns=messages)
    return LoreTrial(
        texts=tuple(texts),
        turn_ids=tuple(None if t is None else t.id for t in messages),
        fired=tuple(explained_lore(item) for item in chosen.items),
        dropped=tuple(explained_lore_drop(item) for item in chosen.dropped),
        steps=activation.steps,
        seed=seed,
        clock=at,
        block=chosen.packed.text,
        tokens=chosen.packed.cost,
        budget=budget,
        problems=(
            *(describe_problem(p) for p in book.problems),
            *(describe_disabled(p) for p in scanner.disabled),
        ),
    )


def import_into(source: Path, lorebook: Path, *, replace: bool = False, update: bool = False) -> ImportReport:
    """Import a foreign lorebook (World Info, a V2 / V3 card as JSON or PNG...) into lorebook.toml, as
    app/lore/importing.py's `import_into` does. Raises FamiliarError (the source) or LorebookError
    (lorebook.toml) before anything is written."""
    from app.lore.importing import import_into as import_read

    return import_read(read_lore_source(source), lorebook, replace=replace, update=update)


# -- the API -------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Open:
    """The book as last loaded or saved, kept so that a save edits it instead of reading it again."""

    document: LorebookDocument
    digest: str | None
    revision: str
    views: tuple[LoreEntryView, ...]
    settings: LoreBookSettings


@dataclass(frozen=True, slots=True)
class LoreDeps:
    file: LoreFile
    state: LoreState
    history: History
    names: Names
    changes: ChangeBroadcaster
    budget_for: Callable[[str], BudgetTier]  # the budget tier in force at a place ("local" for the default)
    display_name: Callable[[], str]
    publish: Callable[[RuntimeEvent], None]


class LoreService:
    def __init__(self, deps: LoreDeps, *, watch_seconds: float = WATCH_SECONDS) -> None:
        self._deps = deps
        self._file = deps.file
        self._watch_seconds = watch_seconds
        self._published: LoreFileStatus | None = None
        self._task: asyncio.Task[None] | None = None
        self._watch = LoopWatch("lorebook-watch")
        self._open: _Open | None = None
        self._lock = threading.Lock()  # one load, save or try at a time (they run on worker threads)
        self._try_scanners = ScannerCache(size=2)

    # -- status ----------------------------------------------------------------------------------------
    @property
    def problem(self) -> str | None:
        """Why lorebook.toml on disk is not the book in use, as last read (get_*: no I/O); None when it is."""
        status = self._published
        return None if status is None else status.problem

    async def check(self) -> LorebookStatus | None:
        """Re-read lorebook.toml if it changed; publish (and return) its status when that changed."""
        await asyncio.to_thread(self._file.refresh)
        status = self._file.status
        before, self._published = self._published, status
        if before == status or (before is None and status.problem is None and not status.warnings):
            return None  # unchanged, or a sound book at start: nothing to say
        event = LorebookStatus(str(self._file.path), status.problem, status.line, status.warnings)
        self._deps.publish(event)
        return event

    def start_watching(self) -> None:
        """Watch lorebook.toml until `close()` (the window and headless mode)."""
        if self._task is None:
            self._task = asyncio.create_task(self._watch_file(), name="lorebook-watch")
            self._watch.started(self._task)

    def loop_health(self) -> LoopHealth:
        return self._watch.health()

    async def _watch_file(self) -> None:
        while True:
            self._watch.working()
            try:
                await self.check()
            except OSError as exc:  # the folder itself went away: keep the book in use, try again
                _log.warning("could not look at %s: %s", self._file.path, exc)
            self._watch.waiting(self._watch_seconds)
            await asyncio.sleep(self._watch_seconds)

    async def close(self) -> None:
        self._watch.stopped()
        task, self._task = self._task, None
        await end_task(task)

    # -- helpers without I/O ---------------------------------------------------------------------------
    def check_key(self, key: str) -> str | None:
        """Why a key can never match (an empty key, an invalid or too long regex), or None: no I/O."""
        return key_problem(key)

    def count_tokens(self, text: str) -> int:
        """What a text costs in a prompt, as the budget counts it: no I/O."""
        return count_tokens(text)

    # -- load and save ---------------------------------------------------------------------------------
    async def load(self) -> LoreBookView:
        """lorebook.toml as it is on disk now, with its revision. FamiliarError when it does not read."""
        return await asyncio.to_thread(self._load_view)

    def _load_view(self) -> LoreBookView:
        with self._lock:
            opened = self._load_sync()
            return self._view(opened, opened.document.book())

    def _load_sync(self, attempts: int = 3) -> _Open:
        from app.lore.document import LorebookDocument  # tomlkit: when the lorebook is edited, not at start

        path = self._file.path
        digest, revision = _file_revision(path)
        try:
            document = LorebookDocument.load(path)
        except LorebookError as exc:
            raise FamiliarError(str(exc)) from None
        if document.loaded_digest != digest:  # changed between the two reads: read again
            if attempts <= 1:
                raise FamiliarError(f"{path} keeps changing while it is read; try again in a moment")
            return self._load_sync(attempts - 1)
        book = document.book()
        raws = document.entries()
        views = tuple(entry_view(entry, raw, i) for i, (entry, raw) in enumerate(zip(book.entries, raws, strict=True)))
        self._open = _Open(document, digest, revision, views, settings_view(book, document.top_level()))
        return self._open

    def _view(self, opened: _Open, book: Lorebook) -> LoreBookView:
        budget, cap = lore_budget(book, self._deps.budget_for("local"))
        constant_tokens = total_tokens = 0
        for v in opened.views:  # 5,000 entries on every save: one plain loop
            if v.enabled:
                total_tokens += v.tokens
                if v.constant or (v.decorators and _activates(v.decorators)):
                    constant_tokens += v.tokens
        return LoreBookView(
            path=str(self._file.path),
            revision=opened.revision,
            settings=opened.settings,
            entries=opened.views,
            problems=tuple(
                LoreProblemView(p.index, p.title, p.key, p.message, describe_problem(p)) for p in book.problems
            ),
            budget=budget,
            max_entries_in_force=cap,
            constant_tokens=constant_tokens,
            total_tokens=total_tokens,
        )

    async def save(
        self,
        entries: Sequence[LoreEntryView],
        base_revision: str,
        *,
        settings: LoreBookSettings | None = None,
    ) -> LoreBookView:
        """Write the book as `entries` (in this order: entries with a `ref` are the loaded ones, edited or
        not; those left out are removed; entries without one are new) and `settings`, based on
        `base_revision`. LoreConflictError if the file changed on disk since; FamiliarError naming the entry
        and the field when something does not validate. Either way nothing is written."""
        return await asyncio.to_thread(self._save_sync, list(entries), base_revision, settings)

    def _save_sync(
        self, entries: list[LoreEntryView], base_revision: str, settings: LoreBookSettings | None
    ) -> LoreBookView:
        with self._lock:
            path = self._file.path
            digest, revision = _file_revision(path)
            if digest != _digest_part(base_revision):
                raise LoreConflictError(
                    f"{path} changed on disk since it was loaded; nothing was written (load it again, or merge)",
                    revision,
                )
            opened = self._open if self._open is not None and self._open.digest == digest else self._load_sync()
            try:
                views = self._apply(opened, entries, settings)
                book = opened.document.save()
            except LoreError as exc:
                self._open = None  # the document was edited part way: read the file again next time
                raise FamiliarError(str(exc)) from None
            except BaseException:
                self._open = None
                raise
            digest = opened.document.loaded_digest
            opened.digest, opened.revision, opened.views = digest, f"{digest}:{path.stat().st_mtime_ns}", views
            if settings is not None:
                opened.settings = settings
            self._file.adopt(book)  # in use for the next reply, without parsing the file again
            return self._view(opened, book)

    def _apply(
        self, opened: _Open, entries: list[LoreEntryView], settings: LoreBookSettings | None
    ) -> tuple[LoreEntryView, ...]:
        document, old = opened.document, opened.views
        refs = [v.ref for v in entries if v.ref is not None]
        if (refs and (min(refs) < 0 or max(refs) >= len(old))) or len(set(refs)) != len(refs):
            raise FamiliarError("the entries to save name an entry twice, or one the book does not have: load it again")
        if settings is not None and settings != opened.settings:
            changed = {
                name: (None if getattr(settings, name) == getattr(_SETTING_DEFAULTS, name) else getattr(settings, name))
                for name in SETTING_FIELDS
                if getattr(settings, name) != getattr(opened.settings, name)
            }
            document.set_fields(changed)
        edited: set[int] = set()
        for view in entries:
            if view.ref is None or view is old[view.ref]:
                continue
            if view.imported is not None:  # a new version of the entry, from an import: its fields replace it
                fields = imported_fields(view, document.path)
                document.update_entry(view.ref, {**dict.fromkeys(document.entry(view.ref)), **fields})
                edited.add(view.ref)
                continue
            before = old[view.ref]
            changes = entry_changes(before, view)
            if changes:
                document.update_entry(view.ref, changes)
                edited.add(view.ref)
            if view.decorators != before.decorators:
                document.set_entry_extension(view.ref, "decorators", list(view.decorators) or None)
                edited.add(view.ref)
        if len(refs) == len(entries) == len(old) and all(ref == i for i, ref in enumerate(refs)):
            # The usual save (entries edited in place, none added, removed or moved): only the edited
            # entries get new view records; the rest are the ones loaded.
            if not edited:
                return old
            views = list(old)
            for index in edited:
                views[index] = entry_view(document.checked(index), document.entry(index), index)
            return tuple(views)
        start = len(document)
        new = [v for v in entries if v.ref is None]
        if new:
            document.add_entries(
                [entry_fields(v) if v.imported is None else imported_fields(v, document.path) for v in new]
            )
        current: list[int] = []
        next_new = start
        for view in entries:
            if view.ref is None:
                current.append(next_new)
                next_new += 1
            else:
                current.append(view.ref)
        removed = sorted(set(range(len(old))) - set(refs))
        for index in reversed(removed):
            document.remove_entry(index)
        shifted = [i - _count_below(removed, i) for i in current]
        document.reorder(shifted)
        out: list[LoreEntryView] = []
        for position, view in enumerate(entries):
            if view.ref is not None and view.ref not in edited:
                kept = old[view.ref]
                out.append(kept if kept.ref == position else dataclasses.replace(kept, ref=position))
            else:
                out.append(entry_view(document.checked(position), document.entry(position), position))
        return tuple(out)

    # -- lint and try ----------------------------------------------------------------------------------
    async def lint(
        self, entries: Sequence[LoreEntryView] | None = None, *, settings: LoreBookSettings | None = None
    ) -> list[LoreLint]:
        """What likely does not do what its author meant, in the book on disk or in a draft (`entries`)."""
        book = await asyncio.to_thread(self._book_for, entries, settings)
        titles = {e.index: e.title for e in book.entries}
        return [
            LoreLint(item.entry, titles.get(item.entry, ""), item.kind, item.key, item.message, item.others)
            for item in lore_lint.lint(book)
        ]

    def book_in_use(self) -> Lorebook:
        """The book replies use now (the last good read of lorebook.toml)."""
        return self._file.book()

    def disabled_keys(self) -> tuple[LoreProblem, ...]:
        """The regex keys that tries of the book in use (`try_text`, `try_place`) switched off for running
        over their time limit; they stay off until lorebook.toml changes."""
        with self._lock:
            built = self._try_scanners.built(self._file.book())
        return () if built is None else built.disabled

    def _book_for(self, entries: Sequence[LoreEntryView] | None, settings: LoreBookSettings | None) -> Lorebook:
        if entries is None:
            if settings is not None:
                raise FamiliarError("settings go with the entries of a draft")
            return self._file.book()
        opened = self._open
        base = settings or (opened.settings if opened is not None else LoreBookSettings())
        try:
            return draft_book(entries, base, self._file.path)
        except LorebookError as exc:
            raise FamiliarError(str(exc)) from None

    async def try_text(
        self,
        texts: Sequence[str],
        *,
        seed: int | None = None,
        entries: Sequence[LoreEntryView] | None = None,
        settings: LoreBookSettings | None = None,
    ) -> LoreTrial:
        """What the lorebook (on disk, or a draft) would put in a reply to these texts (oldest first), as the
        first message of a new place: no timed effects. `seed` fixes the probability and group rolls."""
        chosen = seed if seed is not None else text_seed(texts)
        texts = list(texts)
        return await asyncio.to_thread(
            self._trial, entries, settings, texts, [None] * len(texts), chosen, len(texts), [], "local"
        )

    async def try_place(
        self,
        where: str,
        last: int = TRY_MESSAGES,
        *,
        seed: int | None = None,
        entries: Sequence[LoreEntryView] | None = None,
        settings: LoreBookSettings | None = None,
    ) -> LoreTrial:
        """What the lorebook (on disk, or a draft) would put in a reply to the newest message of `where`, now:
        its last `last` messages, its message clock and its timed effects (looked at, not changed). Without
        `seed`, the seed of a reply to that message."""
        problem = place_problem(where)
        if problem is not None:
            raise FamiliarError(problem)
        if not 1 <= last <= 1000:
            raise FamiliarError(f"--last must be from 1 to 1000, not {last}")
        try:
            turns = await self._deps.history.recent_turns(where, last)
            clock = await self._deps.state.clock(where, turns[-1].id) if turns else 0
            effects = to_effects(await self._deps.state.effects(where))
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        chosen = seed if seed is not None else reply_seed(where, turns[-1].id if turns else 0)
        texts = [f"{t.author_name}: {t.content}" for t in turns]
        return await asyncio.to_thread(
            self._trial, entries, settings, texts, list(turns), chosen, clock, effects, where
        )

    def _trial(
        self,
        entries: Sequence[LoreEntryView] | None,
        settings: LoreBookSettings | None,
        texts: list[str],
        turns: list[Turn | None],
        seed: int,
        clock: int,
        effects: Sequence[TimedEffect],
        where: str,
    ) -> LoreTrial:
        """On a worker thread (compiling a big draft takes a while), with scanners of its own: the reply
        path's are used on the event loop's thread only."""
        with self._lock:
            book = self._book_for(entries, settings)
            scanner = self._try_scanners.scanner(book)
            return trial(
                book,
                texts,
                seed=seed,
                tier=self._deps.budget_for(where),
                char=self._deps.display_name(),
                turns=turns,
                clock=clock,
                effects=effects,
                scanner=scanner,
            )

    # -- what fired ------------------------------------------------------------------------------------
    async def fired(self, days: float = 7.0) -> list[LoreFiredView]:
        """The entries of the book now that went into replies in the last `days`: how many replies, and
        when the newest was. A reply names an entry by its place and title then; an entry since moved is
        found by its title when no other entry has it, one since renamed or removed is left out."""
        if not days > 0:
            raise FamiliarError(f"days must be above 0 (got {days})")
        since = datetime.now(UTC) - timedelta(days=min(days, 36500.0))
        try:
            rows = await self._deps.state.fired_since(since.isoformat())
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        book = await asyncio.to_thread(self._file.book)
        by_title: dict[str, list[int]] = {}
        for entry in book.entries:
            by_title.setdefault(entry.title, []).append(entry.index)
        counts: dict[int, int] = {}
        newest: dict[int, str] = {}
        for row in rows:
            if 0 <= row.index < len(book.entries) and book.entries[row.index].title == row.title:
                index = row.index
            elif len(by_title.get(row.title, ())) == 1:
                index = by_title[row.title][0]
            else:
                continue
            counts[index] = counts.get(index, 0) + row.replies
            newest[index] = max(newest.get(index, ""), row.last)
        return [
            LoreFiredView(index, book.entries[index].title, counts[index], datetime.fromisoformat(newest[index]))
            for index in sorted(counts)
        ]

    # -- timed effects ---------------------------------------------------------------------------------
    async def timed(self, where: str | None = None) -> list[TimedEffectView]:
        """The timed effects (sticky, cooldown) in one place, or everywhere; with the entry they belong to."""
        try:
            rows = await (self._deps.state.effects(where) if where else self._deps.state.all_effects())
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        book = await asyncio.to_thread(self._file.book)
        entries = {entry_key(e): e for e in book.entries if e.timed}
        table = await self._deps.names.table(places={r.place for r in rows})
        out = []
        for row in rows:
            entry = entries.get(row.entry)
            out.append(
                TimedEffectView(
                    place=table.place(row.place),
                    key=row.entry,
                    entry=None if entry is None else entry.index,
                    title="(no longer in the book)" if entry is None else entry.title,
                    kind="sticky" if row.kind == "sticky" else "cooldown",
                    start=row.start,
                    end=None if row.end >= FOREVER else row.end,
                )
            )
        return out

    async def clear_timed(
        self, where: str | None = None, key: str | None = None, *, initiator: object | None = None
    ) -> int:
        """End timed effects: in one place, of one entry (`TimedEffectView.key`), both, or all. How many ended."""
        if where is not None and (problem := place_problem(where)) is not None:
            raise FamiliarError(problem)
        try:
            cleared = await self._deps.state.clear(where, key)
        except StoreError as exc:
            raise FamiliarError(str(exc)) from exc
        if cleared:
            await self._deps.changes.wrote({ChangeKind.LORE}, initiator)
        return cleared

    # -- import and export -----------------------------------------------------------------------------
    async def import_preview(
        self, file: Path, entries: Sequence[LoreEntryView] | None = None, *, base_revision: str | None = None
    ) -> ImportPreview:
        """What importing `file` would do to the book, entry by entry (nothing is written): against the book
        on disk, or against `entries`, an editor's draft of the book loaded at `base_revision` (its items'
        `existing` are then places in the draft). LoreConflictError if the file changed since that revision."""
        draft = None if entries is None else list(entries)
        return await asyncio.to_thread(self._preview_sync, file, draft, base_revision)

    def _preview_sync(self, file: Path, draft: list[LoreEntryView] | None, base_revision: str | None) -> ImportPreview:
        imported = read_lore_source(file)
        with self._lock:
            opened = self._load_sync()
            if base_revision is not None and _digest_part(opened.revision) != _digest_part(base_revision):
                raise LoreConflictError(
                    f"{self._file.path} changed on disk since it was loaded; read it again (or merge) first",
                    opened.revision,
                )
            try:
                existing = None if draft is None else draft_raw(draft, opened.document, opened.views)
                plan = plan_import(imported, opened.document, existing)
            except LorebookError as exc:
                raise FamiliarError(f"{file}: {exc.problem}") from None
            return ImportPreview(
                file=str(file),
                format=cast(Any, imported.format),
                source=imported.source,
                revision=opened.revision,
                items=plan.items,
            )

    async def import_apply(
        self, file: Path, base_revision: str, *, take: Collection[int] | None = None
    ) -> ImportOutcome:
        """Import `file`: the entries a preview called added and changed (or those of them `take` numbers)
        are added and updated; unchanged ones are skipped. Refused like a save if the book changed."""
        return await asyncio.to_thread(self._apply_import_sync, file, base_revision, take)

    def _apply_import_sync(self, file: Path, base_revision: str, take: Collection[int] | None) -> ImportOutcome:
        imported = read_lore_source(file)
        with self._lock:
            digest, revision = _file_revision(self._file.path)
            if digest != _digest_part(base_revision):
                raise LoreConflictError(
                    f"{self._file.path} changed on disk since the preview; nothing was imported (preview again)",
                    revision,
                )
            opened = self._load_sync()
            try:
                plan = plan_import(imported, opened.document)
                added, updated, skipped = apply_plan(plan, opened.document, take)
                book = opened.document.save()
            except LoreError as exc:
                self._open = None
                raise FamiliarError(f"{file}: {exc}") from None
            self._file.adopt(book)
            opened = self._load_sync()
            view = self._view(opened, opened.document.book())
        return ImportOutcome(added, updated, skipped, view)

    async def export(self, target: Path, fmt: str) -> int:
        """Write the book to `target` as st (World Info), ccv2 (a character_book) or ccv3 (lorebook_v3)."""
        from app.lore.formats import FORMATS, export_file

        if fmt not in FORMATS:
            raise FamiliarError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
        try:
            return await asyncio.to_thread(export_file, self._file.path, target, fmt)
        except LoreError as exc:
            raise FamiliarError(str(exc)) from None

    async def revision(self) -> str:
        """The revision lorebook.toml has on disk now ("" when there is none): cheap enough to ask every
        few seconds, so an editor sees a change made beside it before it saves over it."""
        return (await asyncio.to_thread(_file_revision, self._file.path))[1]


def _activates(decorators: Sequence[str]) -> bool:
    """Whether an entry's decorators include @@activate (it goes into every reply, like a constant one)."""
    return any(line.strip() == "@@activate" for line in decorators)


def _count_below(ordered: list[int], value: int) -> int:
    """How many of the sorted `ordered` are below `value`."""
    return bisect.bisect_left(ordered, value)


def text_seed(texts: Sequence[str]) -> int:
    """The seed of a try over texts typed in: fixed by the texts, so trying them again gives the same."""
    return int.from_bytes(hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).digest()[:4], "big")


__all__ = [
    "EDIT_FIELDS",
    "LoreConflictError",
    "LoreDeps",
    "LoreService",
    "apply_plan",
    "draft_book",
    "entry_changes",
    "entry_fields",
    "entry_view",
    "import_into",
    "plan_import",
    "read_lore_source",
    "text_seed",
    "trial",
]
