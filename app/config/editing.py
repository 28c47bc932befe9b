"""Round-trip edits of character.toml: comments, order and unknown tables survive."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import tomlkit
import tomlkit.exceptions
from tomlkit.items import InlineTable, Table

from app.config.errors import ConfigError
from app.config.settings import parse_settings

TomlValue = str | int | float | bool | Sequence[int] | Sequence[str]
"""A value `set_values` can write: a string (several lines become a multi-line string), a number, a
boolean, or a list of whole numbers or strings."""


def set_values(path: Path, values: Mapping[str, TomlValue]) -> None:
    """Set dotted keys (e.g. {"llm.base_url": "..."}) in a TOML file, keeping everything else.

    The result is validated before it replaces the file (atomically), so a bad value changes nothing.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(path, None, None, "not valid UTF-8; nothing was changed") from None
    except OSError as exc:
        raise ConfigError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None
    updated = edited_text(text, path, values)
    parse_settings(updated, path)  # raises ConfigError before anything is written
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(updated, encoding="utf-8")
    os.replace(tmp, path)


def edited_text(text: str, path: Path, values: Mapping[str, TomlValue]) -> str:
    """`text` (a character.toml) with the dotted keys set, everything else as it was; not validated.

    Raises ConfigError (naming `path`) when the text is not TOML or a key's table is a value."""
    try:
        document = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(path, exc.line, None, f"not valid TOML: {exc}") from None
    for dotted, value in values.items():
        *tables, key = dotted.split(".")
        node: tomlkit.TOMLDocument | Table | InlineTable = document
        for name in tables:
            child = node.get(name)
            if child is None:
                child = tomlkit.inline_table() if isinstance(node, InlineTable) else tomlkit.table()
                node[name] = child
            if not isinstance(child, Table | InlineTable):
                raise ConfigError(path, None, dotted, f"'{name}' is not a table")
            node = child
        node[key] = _item(value)
    return tomlkit.dumps(document)


def _item(value: TomlValue) -> object:
    if isinstance(value, str):
        return tomlkit.string(value, multiline=True) if "\n" in value else value
    if isinstance(value, bool | int | float):
        return value
    return list(value)
