"""Round-trip edits of lorebook.toml (tomlkit): comments, order, formatting and unknown keys survive.

The editor (window or CLI) loads the file, lists entries, adds / updates / removes them, then saves. A save
validates the whole book first (a LorebookError changes nothing), refuses to overwrite a file that changed
on disk since it was loaded (someone edited it by hand meanwhile), and replaces the file atomically.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions
from tomlkit.container import Container
from tomlkit.items import AoT, Array, InlineTable, Item, Table

from app.lore.book import (
    MAX_FILE_BYTES,
    Lorebook,
    LorebookError,
    parse_lorebook,
    validate_entry,
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
    "case_sensitive", "whole_words", "scan_depth", "content",
)  # fmt: skip
_SURROGATE = re.compile("[\ud800-\udfff]")
_INLINE_ENTRIES = re.compile(r"^[ \t]*(entries|\"entries\"|'entries')[ \t]*=", re.MULTILINE)


class LorebookDocument:
    """lorebook.toml as an editable document. Values in and out are plain Python (str, int, list, dict...)."""

    def __init__(self, path: Path, text: str, loaded_digest: str | None) -> None:
        """Use load() or parse(): they check the text first."""
        self.path = path
        # tomlkit is slow on big books (seconds for a thousand entries), so the text is only handed to it
        # when an edit needs it, and new entries are rendered as text and appended (see render_entry).
        self._source: str | None = text  # the text, while tomlkit has not parsed it
        self._source_count = len(parse_lorebook(text, path).entries)
        self._source_inline = _INLINE_ENTRIES.search(text) is not None  # a false alarm only costs speed
        self._tomlkit: tomlkit.TOMLDocument | None = None
        self._appended: list[str] = []  # new [[entries]] tables as text, after the document
        self._loaded_digest = loaded_digest  # None: there was no file

    @property
    def _document(self) -> tomlkit.TOMLDocument:
        """The tomlkit document, with any appended entries folded in first."""
        if self._tomlkit is None or self._appended:
            text = self.text()
            try:
                self._tomlkit = tomlkit.parse(text)
            except (tomlkit.exceptions.TOMLKitError, ValueError, RecursionError) as exc:  # tomllib accepted it
                raise LorebookError(self.path, None, None, f"cannot be edited: {exc}") from None
            self._source = None
            self._appended = []
        return self._tomlkit

    @_document.setter
    def _document(self, document: tomlkit.TOMLDocument) -> None:
        self._tomlkit = document
        self._source = None
        self._appended = []

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

    # -- reading -----------------------------------------------------------------------------------------
    def text(self) -> str:
        text = self._source if self._tomlkit is None else tomlkit.dumps(self._tomlkit)
        assert text is not None
        for block in self._appended:
            if text and not text.endswith("\n"):
                text += "\n"
            if text.strip() and not text.endswith("\n\n"):
                text += "\n"  # a blank line before each new [[entries]]
            text += block
        return text

    def book(self) -> Lorebook:
        """The document as the engine sees it (validates; raises LorebookError)."""
        return parse_lorebook(self.text(), self.path)

    def data(self) -> dict[str, Any]:
        return self._document.unwrap()

    def entries(self) -> list[dict[str, Any]]:
        return [dict(table.unwrap()) for table in self._entry_tables()]

    def entry(self, index: int) -> dict[str, Any]:
        return dict(self._table(index).unwrap())

    def __len__(self) -> int:
        if self._tomlkit is None:
            return self._source_count + len(self._appended)
        return len(self._entry_tables(self._tomlkit)) + len(self._appended)

    # -- editing -----------------------------------------------------------------------------------------
    def add_entry(self, fields: Mapping[str, Any]) -> int:
        """Append an entry (None values are left out); returns its index."""
        return self.add_entries([fields])[0]

    def add_entries(self, entries: Sequence[Mapping[str, Any]]) -> list[int]:
        """Append entries (None values are left out); returns their indexes. Each is checked first: on a
        LorebookError none of them is added."""
        start = len(self)
        checked = []
        for offset, fields in enumerate(entries):
            values = {key: value for key, value in fields.items() if value is not None}
            validate_entry(values, self.path, start + offset)
            checked.append(values)
        if self._inline_entries():  # written inline (entries = [{...}]): stay inline
            container = self._document["entries"]
            assert isinstance(container, Array)
            for values in checked:
                container.append(_inline(values))
        else:
            self._appended.extend(render_entry(values) for values in checked)
        return list(range(start, start + len(checked)))

    def update_entry(self, index: int, fields: Mapping[str, Any]) -> None:
        """Set fields of entry `index`; a None value removes the key. Other keys and comments stay."""
        table = self._table(index)
        merged = dict(table.unwrap())
        for key, value in fields.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        validate_entry(merged, self.path, index)
        inline = isinstance(table, InlineTable)
        for key, value in fields.items():
            if value is None:
                if key in table:
                    del table[key]
            elif key in table:
                table[key] = _value(value, inline=inline)
            else:
                _add_key(table, key, _value(value, inline=inline))

    def remove_entry(self, index: int) -> None:
        self._table(index)  # range check
        container = self._document["entries"]
        assert isinstance(container, AoT | Array)
        del container[index]

    def clear_entries(self) -> int:
        """Remove every entry; returns how many there were."""
        count = len(self)
        if self._tomlkit is None and not self._source_inline:
            assert self._source is not None
            stripped = _without_entries(self._source)
            if stripped is not None:  # done on the text: tomlkit need not parse a big book to empty it
                self._source, self._source_count, self._appended = stripped, 0, []
                return count
        if "entries" in self._document:
            del self._document["entries"]
        return count

    def set_fields(self, fields: Mapping[str, Any]) -> None:
        """Set top-level keys (name, scan_depth...); None removes one. Checked against the schema at once."""
        if "entries" in fields:
            raise LorebookError(self.path, None, "entries", "entries are edited one by one")
        before = self.text()
        for key, value in fields.items():
            if value is None:
                if key in self._document:
                    del self._document[key]
            elif key in self._document:
                self._document[key] = _value(value, inline=False)
            else:
                _add_key(self._document, key, _value(value, inline=False))
        try:
            self.book()
        except LorebookError:
            self._document = tomlkit.parse(before)
            raise

    def set_extension(self, name: str, value: Mapping[str, Any] | None) -> None:
        """Replace (or, with None, remove) one table under the top-level [extensions]."""
        extensions = self._document.get("extensions")
        if extensions is None:
            if value is None:
                return
            extensions = tomlkit.table(is_super_table=True)
            self._document.append("extensions", extensions)
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
        """Validate, then atomically replace the file. Unless `force`, refuse if it changed since loading."""
        text = self.text()
        book = parse_lorebook(text, self.path)
        if not force:
            self._check_unchanged()
        encoded = text.encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp_name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as tmp:
                tmp.write(encoded)
                tmp.flush()
                os.fsync(tmp.fileno())
            os.replace(tmp_name, self.path)
        except OSError as exc:
            Path(tmp_name).unlink(missing_ok=True)
            raise LorebookError(self.path, None, None, f"cannot be written: {exc.strerror or exc}") from None
        self._loaded_digest = _digest(encoded)
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
    def _inline_entries(self) -> bool:
        if self._tomlkit is not None:
            return isinstance(self._tomlkit.get("entries"), Array)
        return self._source_inline

    def _entry_tables(self, document: tomlkit.TOMLDocument | None = None) -> list[Table | InlineTable]:
        container = (self._document if document is None else document).get("entries")
        if container is None:
            return []
        return [item for item in container if isinstance(item, Table | InlineTable)]

    def _table(self, index: int) -> Table | InlineTable:
        tables = self._entry_tables()
        if not 0 <= index < len(tables):
            raise LorebookError(self.path, None, f"entries[{index}]", f"no such entry (the book has {len(tables)})")
        return tables[index]


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


__all__ = ["ENTRY_ORDER", "NEW_FILE_HEADER", "LorebookDocument", "render_entry"]
