"""Where a familiar's files live. `FAMILIAR_HOME` overrides the platform's user data folder."""

from __future__ import annotations

import importlib.resources
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from app.config.errors import ConfigError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_TEMPLATE_FILES = ("character.md", "character.toml", "lorebook.toml")


def data_root(env: dict[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    override = environ.get("FAMILIAR_HOME", "").strip()
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir("familiar", appauthor=False))


def template_dir() -> Path:
    """The default familiar shipped in resources/ (installed as the package `app._resources`)."""
    source_tree = Path(__file__).resolve().parent.parent.parent / "resources" / "default_familiar"
    if source_tree.is_dir():
        return source_tree
    return Path(str(importlib.resources.files("app._resources"))) / "default_familiar"


@dataclass(frozen=True, slots=True)
class FamiliarPaths:
    root: Path
    name: str

    @property
    def folder(self) -> Path:
        return self.root / "familiars" / self.name

    @property
    def character_md(self) -> Path:
        return self.folder / "character.md"

    @property
    def character_toml(self) -> Path:
        return self.folder / "character.toml"

    @property
    def lorebook_toml(self) -> Path:
        return self.folder / "lorebook.toml"

    @property
    def history_db(self) -> Path:
        return self.folder / "history.db"

    @property
    def fts(self) -> Path:
        return self.folder / "fts"

    @property
    def backups(self) -> Path:
        return self.folder / "backups"

    @property
    def secrets_file(self) -> Path:
        """Fallback secret store used only when the OS has no keyring backend."""
        return self.root / "secrets.toml"


def familiar_paths(name: str = "default", env: dict[str, str] | None = None) -> FamiliarPaths:
    if not _NAME.fullmatch(name):  # match() would let a trailing newline through `$`
        raise ConfigError(Path(name), None, None, "a familiar's name may use letters, digits, '-' and '_' (at most 64)")
    return FamiliarPaths(root=data_root(env), name=name)


def ensure_familiar(paths: FamiliarPaths) -> bool:
    """Create the familiar's folder from the template if needed. Returns True when it was created.

    Files already present are never overwritten: they are the owner's.
    """
    created = False
    paths.folder.mkdir(parents=True, exist_ok=True)
    source = template_dir()
    for filename in _TEMPLATE_FILES:
        target = paths.folder / filename
        if target.exists():
            continue
        tmp = target.with_suffix(target.suffix + ".tmp")
        shutil.copyfile(source / filename, tmp)
        tmp.replace(target)
        created = True
    return created
