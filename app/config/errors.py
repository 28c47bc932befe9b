"""The config package's exception root."""

from __future__ import annotations

from pathlib import Path


class ConfigError(Exception):
    """A configuration problem that names the file, the line and the key."""

    def __init__(self, path: Path, line: int | None, key: str | None, problem: str) -> None:
        self.path = path
        self.line = line
        self.key = key
        self.problem = problem
        where = str(path)
        if line is not None:
            where += f", line {line}"
        if key:
            where += f", key '{key}'"
        super().__init__(f"{where}: {problem}")
