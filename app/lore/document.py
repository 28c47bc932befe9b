"""Round-trip edits of lorebook.toml (tomlkit): comments, order, formatting and [extensions] survive.

The editor (window or CLI) loads the file, lists entries, adds / updates / removes / reorders them, then
saves. Every edit is checked before it is made (a LorebookError changes nothing); a save refuses to
overwrite a file that changed on disk since it was loaded (someone edited it by hand meanwhile), and
replaces the file atomically.

Speed. tomlkit parses about 600 entries a second, so a document that handed the whole file to it took
over a second to save one edit in a book of 500 entries (and a full parse again to validate). Here the
text is cut at its `[[entries]]` headers into one piece per entry (its sub-tables, comments and blank
lines included) and the pieces between; an edit hands tomlkit only the piece of the entry it changes,
new entries are rendered as text, and a save joins the pieces: only the entries edited are checked again,
so one edit in a book of 5,000 entries saves in milliseconds. A piece is trusted only once it parses on
its own to exactly its entry (a line inside a multi-line string that looks like a header would make it
not); when the cut cannot be trusted, or the entries are written inline (`entries = [...]`), the whole
document goes to tomlkit, as before: slower, never wrong.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, overload

import tomlkit
import tomlkit.exceptions
from tomlkit.container import Container
from tomlkit.items import AoT, Array, InlineTable, Item, Table

from app.lore.book import (
    MAX_FILE_BYTES,
    Lorebook,
    LorebookError,
    LoreEntry,
    LoreProblem,
    entry_problems,
    parse_book,
    parse_lorebook,
    rebuilt,
    validate_entry,
    with_settings,
)

NEW_FILE_HEADER = (
    "# Lore for this familiar. Each [[entries]] table fires when one of its keys appears in the recent\n"
    "# conversation (a key written /pattern/flags is a regex). Entry fields: title, keys, secondary_keys,\n"
    "# logic (and_any, and_all, not_any, not_all), content, priority (higher first), constant, enabled,\n"
    "# case_sensitive, whole_words, scan_depth. The familiar never edits this file on its own.\n\n"
)
# The order known keys take in an entry the editor writes; unknown keys follow, then tables.
ENTRY_ORDER = (
    "title", "id", "keys", "secondary_keys", "logic", "constant", "enabled", "priority",
    "case_sensitive", "whole_words", "scan_depth", "probability", "use_probability", "group", "group_override",
    "group_weight", "use_group_scoring", "sticky", "cooldown", "delay", "exclude_recursion", "prevent_recursion",
    "delay_until_recursion", "content",
)  # fmt: skip
_SURROGATE = re.compile("[\ud800-\udfff]")
_INLINE_ENTRIES = re.compile(r"^[ \t]*(entries|\"entries\"|'entries')[ \t]*=", re.MULTILINE)


@dataclass(slots=True)
class _Piece:
    """A stretch of the file's text: one entry (from its [[entries]] header to the next table that is not
    one of its own sub-tables) or what lies between entries (`entry` False)."""

    entry: bool
    text: str
    document: tomlkit.TOMLDocument | None = None  # parsed for an edit; its dump is the piece's text
    trusted: bool = False  # parses alone to exactly its entry

    def dump(self) -> str:
        return self.text if self.document is None else tomlkit.dumps(self.document)


class LorebookDocument:
    """lorebook.toml as an editable document. Values in and out are plain Python (str, int, list, dict...)."""

    def __init__(self, path: Path, text: str, loaded_digest: str | None) -> None:
        """Use load() or parse(): they check the text first."""
        self.path = path
        self._loaded_digest = loaded_digest  # None: there was no file
        book, data = parse_book(text, path)
        self._book = book  # the settings; the entries are kept below, edit by edit
        self._entries: list[LoreEntry] = list(book.entries)
        self._problems: list[tuple[LoreProblem, ...]] = [() for _ in book.entries]  # each entry's, kept up to date
        for problem in book.problems:
            self._problems[problem.index] += (problem,)
        self._raw: list[dict[str, Any]] = list(data.get("entries", []))
        self._pieces: list[_Piece] | None = _cut(text, len(self._raw))
        self._whole: tomlkit.TOMLDocument | None = None  # the whole document, when the pieces cannot be used
        self._source = text if self._pieces is None else None  # for the whole document, parsed when needed

    # -- loading -----------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path) -> LorebookDocument:
        """Open the file (a missing one is a new, empty book). A file that does not validate is refused."""
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise LorebookError(path, None, None, f"too large (the limit is {MAX_FILE_BYTES // 2**20} MB)")
            raw = path.read_bytes()
        except FileNotFoundError:
            return cls(path, NEW_FILE_HEADER, None)
        except OSError as exc:
            raise LorebookError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise LorebookError(path, raw[: exc.start].count(b"\n") + 1, None, "not valid UTF-8") from None
        return cls(path, text, _digest(raw))

    @classmethod
    def parse(cls, text: str, path: Path) -> LorebookDocument:
        """A document from text (raises LorebookError, with the line and key, if it does not validate)."""
        return cls(path, text, None)

    @property
    def loaded_digest(self) -> str | None:
        """sha256 of the file's bytes as loaded or last saved (None: there was no file)."""
        return self._loaded_digest

    # -- reading -----------------------------------------------------------------------------------------
    def text(self) -> str:
        if self._pieces is not None:
            return "".join([piece.text if piece.document is None else piece.dump() for piece in self._pieces])
        if self._whole is not None:
            return tomlkit.dumps(self._whole)
        assert self._source is not None
        return self._source

    def book(self) -> Lorebook:
        """The document as the engine sees it (every entry was checked when it was edited)."""
        return self._book_of(self.text())

    def _book_of(self, text: str, digest: str | None = None) -> Lorebook:
        if self._pieces is None:
            return parse_lorebook(text, self.path)
        digest = digest or _digest(text.encode("utf-8", "surrogatepass"))
        return rebuilt(self._book, self._entries, digest, self._problems)

    def data(self) -> dict[str, Any]:
        if self._whole is not None:
            return self._whole.unwrap()
        return tomllib.loads(self.text())

    def entries(self) -> list[dict[str, Any]]:
        return [dict(raw) for raw in self._raw]

    def entry(self, index: int) -> dict[str, Any]:
        self._check_index(index)
        return dict(self._raw[index])

    def checked(self, index: int) -> LoreEntry:
        """Entry `index` as the engine reads it (checked when it was loaded or last edited)."""
        self._check_index(index)
        return self._entries[index]

    def entry_text(self, index: int) -> str | None:
        """The entry's own text in the file (None when the file cannot be cut into entries)."""
        self._check_index(index)
        return None if self._pieces is None else self._entry_pieces()[index].dump()

    def __len__(self) -> int:
        return len(self._raw)

    # -- editing -----------------------------------------------------------------------------------------
    def add_entry(self, fields: Mapping[str, Any]) -> int:
        """Append an entry (None values are left out); returns its index."""
        return self.add_entries([fields])[0]

    def add_entries(self, entries: Sequence[Mapping[str, Any]]) -> list[int]:
        """Append entries (None values are left out); returns their indexes. Each is checked first: on a
        LorebookError none of them is added."""
        start = len(self)
        checked: list[tuple[dict[str, Any], LoreEntry]] = []
        for offset, fields in enumerate(entries):
            values = {key: value for key, value in fields.items() if value is not None}
            checked.append((values, validate_entry(values, self.path, start + offset)))
        if self._pieces is not None:
            for values, _entry in checked:
                tail = self._pieces[-1].dump() if self._pieces else ""
                block = _joined(tail, render_entry(values))[len(tail) :]
                self._pieces.append(_Piece(True, block, trusted=True))
        else:
            document = self._document()
            container = document.get("entries")
            if isinstance(container, Array):  # written inline (entries = [{...}]): stay inline
                for values, _entry in checked:
                    container.append(_inline(values))
            else:
                text = self.text()
                for values, _entry in checked:
                    text = _joined(text, render_entry(values))
                self._set_whole(_parse(text, self.path))
        self._raw.extend(values for values, _entry in checked)
        self._entries.extend(entry for _values, entry in checked)
        self._problems.extend(tuple(entry_problems(entry)) for _values, entry in checked)
        return list(range(start, start + len(checked)))

    def update_entry(self, index: int, fields: Mapping[str, Any]) -> None:
        """Set fields of entry `index`; a None value removes the key. Other keys and comments stay."""
        self._check_index(index)
        merged = dict(self._raw[index])
        _apply(merged, fields)
        entry = validate_entry(merged, self.path, index)
        table = self._table(index)
        _apply(table, fields, inline=isinstance(table, InlineTable))
        self._raw[index] = merged
        self._entries[index] = entry
        self._problems[index] = tuple(entry_problems(entry))

    def remove_entry(self, index: int) -> None:
        self._check_index(index)
        if self._pieces is not None and self._trust(index):
            self._pieces.remove(self._entry_pieces()[index])
        else:
            container = self._document()["entries"]
            assert isinstance(container, AoT | Array)
            del container[index]
        del self._raw[index]
        del self._entries[index]
        del self._problems[index]

    def reorder(self, order: Sequence[int]) -> None:
        """Put the entries in this order (`order` lists every index once: the entry to put at each place)."""
        if sorted(order) != list(range(len(self))):
            raise LorebookError(self.path, None, "entries", "a new order must list every entry once")
        if list(order) == list(range(len(self))):
            return
        if self._pieces is not None and all(self._trust(i) for i in range(len(self))):
            pieces = self._entry_pieces()
            moved = iter([pieces[i] for i in order])
            for n, piece in enumerate(self._pieces):
                if piece.entry:
                    self._pieces[n] = next(moved)
        else:
            document = self._document()
            container = document["entries"]
            assert isinstance(container, AoT | Array)
            items = [container[i] for i in order]
            for n in reversed(range(len(container))):
                del container[n]
            for item in items:
                container.append(item)
        self._raw = [self._raw[i] for i in order]
        self._entries = [self._entries[i] for i in order]
        self._problems = [self._problems[i] for i in order]

    def clear_entries(self) -> int:
        """Remove every entry; returns how many there were."""
        count = len(self)
        stripped = _without_entries(self.text()) if self._whole is None else None
        if stripped is not None:  # done on the text: tomlkit need not parse a big book to empty it
            self._pieces = _cut(stripped, 0)
            self._source = stripped if self._pieces is None else None
        else:
            document = self._document()
            if "entries" in document:
                del document["entries"]
        self._raw, self._entries, self._problems = [], [], []
        return count

    def set_entry_extension(self, index: int, name: str, value: Any) -> None:
        """Set (None: remove) one key of entry `index`'s [extensions] table (e.g. its decorators), in place."""
        self._check_index(index)
        merged = dict(self._raw[index])
        extensions = dict(merged.get("extensions") or {})
        if value is None:
            extensions.pop(name, None)
        else:
            extensions[name] = value
        if extensions:
            merged["extensions"] = extensions
        else:
            merged.pop("extensions", None)
        entry = validate_entry(merged, self.path, index)
        table = self._table(index)
        inline = isinstance(table, InlineTable)
        current = table.get("extensions")
        if isinstance(current, Table | InlineTable):
            if value is None:
                if name in current:
                    del current[name]
                if not current and "extensions" in table:
                    del table["extensions"]
            else:
                current[name] = _value(value, inline=inline or isinstance(current, InlineTable))
        elif value is not None:
            _add_key(table, "extensions", _value({name: value}, inline=inline))
        self._raw[index] = merged
        self._entries[index] = entry
        self._problems[index] = tuple(entry_problems(entry))

    def top_level(self) -> dict[str, Any]:
        """The book's own keys (name, scan_depth...), as plain values."""
        if self._pieces is not None:
            first = self._pieces[0] if self._pieces and not self._pieces[0].entry else None
            data = tomllib.loads(first.dump()) if first is not None else {}
        else:
            data = self.data()
        return {key: value for key, value in data.items() if key != "entries"}

    def set_fields(self, fields: Mapping[str, Any]) -> None:
        """Set top-level keys (name, scan_depth...); None removes one. Checked against the schema at once."""
        if "entries" in fields:
            raise LorebookError(self.path, None, "entries", "entries are edited one by one")
        if self._pieces is not None:
            self._set_fields_in_pieces(fields)
            return
        before = self.text()
        _apply(self._document(), fields, inline=False)
        try:
            self._book = parse_lorebook(self.text(), self.path)
        except LorebookError:
            self._set_whole(_parse(before, self.path))
            raise

    def _set_fields_in_pieces(self, fields: Mapping[str, Any]) -> None:
        """Top-level keys all come before the first table: only that first piece needs editing."""
        assert self._pieces is not None
        if not self._pieces or self._pieces[0].entry:
            self._pieces.insert(0, _Piece(False, ""))
        first = self._pieces[0]
        document = _parse(first.dump(), self.path)
        _apply(document, fields, inline=False)
        settings = parse_lorebook(tomlkit.dumps(document), self.path)  # the first piece holds the whole book's keys
        first.document = document
        self._book = with_settings(self._book, settings)

    def set_extension(self, name: str, value: Mapping[str, Any] | None) -> None:
        """Replace (or, with None, remove) one table under the top-level [extensions]."""
        document = self._document()
        extensions = document.get("extensions")
        if extensions is None:
            if value is None:
                return
            extensions = tomlkit.table(is_super_table=True)
            document.append("extensions", extensions)
        if not isinstance(extensions, Table | InlineTable):
            raise LorebookError(self.path, None, "extensions", "expected a table")
        if value is None:
            if name in extensions:
                del extensions[name]
            return
        item = _value(dict(value), inline=isinstance(extensions, InlineTable))
        if isinstance(item, Table):
            item.add(tomlkit.nl())  # a blank line before whatever header follows
        extensions[name] = item

    # -- saving ------------------------------------------------------------------------------------------
    def save(self, *, force: bool = False) -> Lorebook:
        """Atomically replace the file. Unless `force`, refuse if it changed since loading."""
        text = self.text()
        encoded = text.encode("utf-8")  # lone surrogates were replaced when their values came in
        digest = _digest(encoded)
        book = self._book_of(text, digest)
        if not force:
            self._check_unchanged()
        write_atomically(self.path, encoded)
        self._loaded_digest = digest
        for piece in self._pieces or ():
            if piece.document is not None:  # written: its text is what it dumps (parsed again if edited again)
                piece.text, piece.document = piece.dump(), None
        return book

    def _check_unchanged(self) -> None:
        try:
            current: str | None = _digest(self.path.read_bytes())
        except FileNotFoundError:
            current = None
        except OSError as exc:
            raise LorebookError(self.path, None, None, f"cannot be read: {exc.strerror or exc}") from None
        if current != self._loaded_digest:
            raise LorebookError(
                self.path, None, None, "changed on disk since it was opened; nothing was written (open it again)"
            )

    # -- helpers -----------------------------------------------------------------------------------------
    def _check_index(self, index: int) -> None:
        if not 0 <= index < len(self._raw):
            raise LorebookError(self.path, None, f"entries[{index}]", f"no such entry (the book has {len(self)})")

    def _entry_pieces(self) -> list[_Piece]:
        assert self._pieces is not None
        return [piece for piece in self._pieces if piece.entry]

    def _trust(self, index: int) -> bool:
        """Whether entry `index`'s piece parses alone to exactly that entry (else: whole-document mode)."""
        assert self._pieces is not None
        piece = self._entry_pieces()[index]
        if not piece.trusted:
            try:
                alone = tomllib.loads(piece.text)
            except (ValueError, RecursionError):
                alone = None
            piece.trusted = alone == {"entries": [self._raw[index]]}
            if not piece.trusted:
                self._set_whole(_parse(self.text(), self.path))
        return piece.trusted

    def _table(self, index: int) -> Table | InlineTable:
        if self._pieces is not None and self._trust(index):
            piece = self._entry_pieces()[index]
            if piece.document is None:
                piece.document = _parse(piece.text, self.path)
            container = piece.document["entries"]
            assert isinstance(container, AoT)
            table: Table | InlineTable = container[0]
            return table
        tables = [item for item in self._document()["entries"] if isinstance(item, Table | InlineTable)]
        return tables[index]

    def _document(self) -> tomlkit.TOMLDocument:
        """The whole document in tomlkit (leaving the pieces: slower, for what they cannot do)."""
        if self._whole is None:
            self._set_whole(_parse(self.text(), self.path))
        assert self._whole is not None
        return self._whole

    def _set_whole(self, document: tomlkit.TOMLDocument) -> None:
        self._whole, self._pieces, self._source = document, None, None


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` (a temporary file beside it, flushed to disk, then renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except OSError as exc:
        Path(tmp_name).unlink(missing_ok=True)
        raise LorebookError(path, None, None, f"cannot be written: {exc.strerror or exc}") from None


def _parse(text: str, path: Path) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except (tomlkit.exceptions.TOMLKitError, ValueError, RecursionError) as exc:  # tomllib accepted it
        raise LorebookError(path, None, None, f"cannot be edited: {exc}") from None


def _joined(text: str, block: str) -> str:
    """`block` (a new [[entries]] table) after `text`, with a blank line between."""
    if text and not text.endswith("\n"):
        text += "\n"
    if text.strip() and not text.endswith("\n\n"):
        text += "\n"
    return text + block


_CUT = re.compile(r"^[ \t]*\[(\[?)[ \t]*([^\]\n]*?)[ \t]*\]\]?[ \t]*(?:#[^\n]*)?$", re.MULTILINE)


def _cut(text: str, count: int) -> list[_Piece] | None:
    """The text in pieces at its [[entries]] headers, or None when that cannot be done by lines (entries
    written inline, or a count of headers that is not the count of entries)."""
    if _INLINE_ENTRIES.search(text):
        return None
    bounds: list[tuple[int, bool]] = []  # where a piece starts, and whether it is an entry
    for header in _CUT.finditer(text):
        name = header.group(2).replace(" ", "").replace("\t", "").replace('"', "").replace("'", "")
        if header.group(1) and name == "entries":
            bounds.append((header.start(), True))
        elif name != "entries" and not name.startswith("entries."):  # not a sub-table of the current entry
            bounds.append((header.start(), False))
    starts = [0, *(at for at, _entry in bounds)]
    kinds = [False, *(entry for _at, entry in bounds)]
    ends = [*starts[1:], len(text)]
    pieces = [_Piece(kind, text[a:b]) for kind, a, b in zip(kinds, starts, ends, strict=True)]
    pieces = [piece for piece in pieces if piece.entry or piece.text]
    if sum(piece.entry for piece in pieces) != count:
        return None
    return pieces


_HEADER = re.compile(r"^[ \t]*\[\[?[ \t]*([^\]]*?)[ \t]*\]\]?[ \t]*(#.*)?$")


def _without_entries(text: str) -> str | None:
    """The text without its [[entries]] tables (and their sub-tables), or None when that cannot be done
    safely on the text (the result is checked against a real parse: a header inside a multi-line string
    would fool the line scan)."""
    kept: list[str] = []
    dropping = False
    for line in text.splitlines(keepends=True):
        header = _HEADER.match(line)
        if header:
            path = header.group(1).replace(" ", "").replace("\t", "").strip("\"'")
            dropping = path == "entries" or path.startswith(("entries.", '"entries".', "'entries'."))
        if not dropping:
            kept.append(line)
    stripped = "".join(kept)
    try:
        before, after = tomllib.loads(text), tomllib.loads(stripped)
    except (ValueError, RecursionError):
        return None
    before.pop("entries", None)
    return stripped if after == before else None


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _entry_rank(key: str) -> tuple[int, str]:
    return (ENTRY_ORDER.index(key), "") if key in ENTRY_ORDER else (len(ENTRY_ORDER), key)


@overload
def _apply(target: dict[str, Any], fields: Mapping[str, Any]) -> None: ...
@overload
def _apply(target: Table | InlineTable | tomlkit.TOMLDocument, fields: Mapping[str, Any], *, inline: bool) -> None: ...
def _apply(
    target: dict[str, Any] | Table | InlineTable | tomlkit.TOMLDocument,
    fields: Mapping[str, Any],
    *,
    inline: bool | None = None,
) -> None:
    """Set `fields` in a table (None removes a key): in plain values, or (with `inline`, whether the table is
    written inline) in a tomlkit table, where the other keys keep their place and comments."""
    for key, value in fields.items():
        if value is None:
            if key in target:
                del target[key]
        elif inline is None:
            target[key] = value
        elif key in target:
            target[key] = _value(value, inline=inline)
        else:
            _add_key(cast(Table, target), key, _value(value, inline=inline))


def _add_key(table: Table | InlineTable | tomlkit.TOMLDocument, key: str, item: Item) -> None:
    """Add a key after the table's last key/value, so trailing comments stay where they were."""
    container: Container = table if isinstance(table, Container) else table.value
    body = container.body
    last = None
    for position, (existing, value) in enumerate(body):
        if existing is not None and not isinstance(value, Table | AoT):
            last = position
    if (
        last is not None
        and not isinstance(table, InlineTable)
        and not isinstance(item, Table | AoT)
        and all(existing is None for existing, _value in body[last + 1 :])  # only comments/blank lines follow
    ):
        previous = body[last][0]
        assert previous is not None
        try:
            # tomlkit has no public insert-after; this keeps "# comment" lines below the last value in place.
            container._insert_after(previous, key, item)
            return
        except (tomlkit.exceptions.TOMLKitError, KeyError, ValueError):
            pass
    table[key] = item


def _clean(text: str) -> str:
    """Lone surrogates (possible in JSON) cannot be written as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def _value(value: Any, *, inline: bool) -> Item:
    """A tomlkit item for a plain value: tables for mappings (inline inside arrays and inline tables),
    arrays of tables for lists of mappings, multi-line strings for text with line breaks."""
    if isinstance(value, str):
        text = _clean(value)
        multiline = not inline and "\n" in text and "\r" not in text  # TOML normalises \r\n in """ strings
        return tomlkit.string(text, multiline=multiline)
    if isinstance(value, Mapping):
        if inline or _small(value):
            return _inline(value)
        table = tomlkit.table()
        for key, item in value.items():
            table.append(_clean(str(key)), _value(item, inline=False))
        return table
    if isinstance(value, list | tuple):
        if not inline and value and all(isinstance(item, Mapping) and not _small(item) for item in value):
            tables = tomlkit.aot()
            for item in value:
                tables.append(_value(item, inline=False))
            return tables
        array = tomlkit.array()
        for item in value:
            array.append(_value(item, inline=True))
        return array
    scalar: Item = tomlkit.item(value)
    return scalar


# -- rendering new entries as text ---------------------------------------------------------------------
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPE_LINE = re.compile(r'[\x00-\x1f\x7f"\\]')
_ESCAPE_LINES = re.compile(r'[\x00-\x09\x0b-\x1f\x7f"\\]')  # a multi-line string keeps its \n
_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def render_entry(values: Mapping[str, Any]) -> str:
    """One [[entries]] table as TOML text, laid out as _value() lays out tomlkit items (known keys first,
    multi-line strings for text with line breaks, sub-tables for mappings, inline tables inside arrays)."""
    ordered = {key: values[key] for key in sorted(values, key=_entry_rank)}
    lines: list[str] = []
    _render_table(["entries"], ordered, lines, array=True)
    return "\n".join(lines) + "\n"


def _render_table(path: list[str], table: Mapping[str, Any], lines: list[str], *, array: bool) -> None:
    header = ".".join(_key(part) for part in path)
    nested = [(key, value) for key, value in table.items() if _is_table(value) or _is_tables(value)]
    plain = [(key, value) for key, value in table.items() if not (_is_table(value) or _is_tables(value))]
    if array or plain or not nested:  # a table holding only tables needs no header of its own
        if lines:
            lines.append("")
        lines.append(f"[[{header}]]" if array else f"[{header}]")
    lines.extend(f"{_key(str(key))} = {_toml(value, inline=False)}" for key, value in plain)
    for key, value in nested:
        for item in [value] if _is_table(value) else value:
            _render_table([*path, str(key)], item, lines, array=not _is_table(value))


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping) and not _small(value)


def _is_tables(value: Any) -> bool:
    return isinstance(value, list | tuple) and bool(value) and all(_is_table(item) for item in value)


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(_clean(key), multiline=False)


def _string(text: str, *, multiline: bool) -> str:
    def escape(found: re.Match[str]) -> str:
        char = found.group()
        return _ESCAPES.get(char) or f"\\u{ord(char):04X}"

    if multiline:
        lead = "\n" if text.startswith("\n") else ""  # TOML drops a line break right after the opening quotes
        return f'"""{lead}{_ESCAPE_LINES.sub(escape, text)}"""'
    return f'"{_ESCAPE_LINE.sub(escape, text)}"'


def _toml(value: Any, *, inline: bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"{value} does not fit in a TOML integer")
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)  # repr: 1.5, 1e+300, inf, -inf, -0.0
    if isinstance(value, str):
        text = _clean(value)
        return _string(text, multiline=not inline and "\n" in text and "\r" not in text)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(str(k))} = {_toml(v, inline=True)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item, inline=True) for item in value) + "]"
    return str(tomlkit.item(value).as_string())  # dates and times


def _small(value: Mapping[str, Any]) -> bool:
    """Written inline: an empty table, and the {"$json" = "..."} marker of a value TOML cannot hold."""
    return not value or set(value) == {"$json"}


def _inline(value: Mapping[str, Any]) -> InlineTable:
    table = tomlkit.inline_table()
    for key, item in value.items():
        table.append(_clean(str(key)), _value(item, inline=True))
    return table


__all__ = ["ENTRY_ORDER", "NEW_FILE_HEADER", "LorebookDocument", "render_entry", "write_atomically"]
