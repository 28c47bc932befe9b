"""Round-trip edits of character.toml: comments, order and unknown tables survive."""

from __future__ import annotations

import os
from pathlib import Path

import tomlkit
import tomlkit.exceptions
from tomlkit.items import InlineTable, Table

from app.config.errors import ConfigError
from app.config.settings import parse_settings


def set_values(path: Path, values: dict[str, str]) -> None:
    """Set dotted keys (e.g. {"llm.base_url": "..."}) in a TOML file, keeping everything else.

    The result is validated before it replaces the file (atomically), so a bad value changes nothing.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(path, None, None, "not valid UTF-8; nothing was changed") from None
    except OSError as exc:
        raise ConfigError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None
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
        node[key] = value
    updated = tomlkit.dumps(document)
    parse_settings(updated, path)  # raises ConfigError before anything is written
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(updated, encoding="utf-8")
    os.replace(tmp, path)
