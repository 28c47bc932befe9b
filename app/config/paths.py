"""Where a familiar's files live. `FAMILIAR_HOME` overrides the platform's user data folder."""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from app.config.errors import ConfigError

_log = logging.getLogger(__name__)
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


class FamiliarExistsError(ConfigError):
    """A familiar of that name exists already; creating one never overwrites it."""

    def __init__(self, paths: FamiliarPaths) -> None:
        super().__init__(paths.folder, None, None, f"a familiar named '{paths.name}' already exists")
        self.name = paths.name


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


def check_name(name: str) -> None:
    """Raise ConfigError unless `name` can name a familiar (its folder name)."""
    if not _NAME.fullmatch(name):  # match() would let a trailing newline through `$`
        raise ConfigError(Path(name), None, None, "a familiar's name may use letters, digits, '-' and '_' (at most 64)")


def familiar_paths(name: str = "default", env: dict[str, str] | None = None) -> FamiliarPaths:
    check_name(name)
    return FamiliarPaths(root=data_root(env), name=name)


def familiars_folder(root: Path) -> Path:
    return root / "familiars"


def list_familiars(root: Path) -> list[str]:
    """The names of the familiars under `root`, sorted (an unreadable or missing folder has none)."""
    try:
        children = list(familiars_folder(root).iterdir())
    except OSError:
        return []
    return sorted(child.name for child in children if _NAME.fullmatch(child.name) and child.is_dir())


def familiar_exists(paths: FamiliarPaths) -> bool:
    return paths.folder.is_dir()


def require_familiar(paths: FamiliarPaths) -> None:
    """Raise ConfigError, listing the familiars there are, unless this one exists.

    Opening a familiar never creates it: a mistyped name must not become a new, empty familiar.
    """
    if familiar_exists(paths):
        return
    existing = list_familiars(paths.root)
    there = f"the familiars here are: {', '.join(existing)}" if existing else "there are no familiars here yet"
    raise ConfigError(
        familiars_folder(paths.root),
        None,
        None,
        f"no familiar named '{paths.name}' ({there}); create it with `familiar new {paths.name}`, "
        "`familiar card import FILE`, or the window's New familiar",
    )


def create_familiar(paths: FamiliarPaths, fill: Callable[[Path], None] | None = None) -> None:
    """Create a new familiar from the template; `fill(folder)` may then write its own files into it.

    The folder is built under a hidden temporary name beside the others and renamed into place only once
    complete, so a failure (in `fill` too, whose exception propagates) leaves no half-made familiar.
    Raises ConfigError if a familiar of that name exists; OSError if the data folder cannot be written.
    """
    check_name(paths.name)
    if familiar_exists(paths):
        raise FamiliarExistsError(paths)
    parent = familiars_folder(paths.root)
    private_folder(parent)
    building = Path(tempfile.mkdtemp(dir=parent, prefix=f".new-{paths.name}-"))
    try:
        source = template_dir()
        for filename in _TEMPLATE_FILES:
            shutil.copyfile(source / filename, building / filename)
        if fill is not None:
            fill(building)
        if familiar_exists(paths):  # created meanwhile by another process
            raise FamiliarExistsError(paths)
        try:
            building.rename(paths.folder)
        except OSError:
            if familiar_exists(paths):
                raise FamiliarExistsError(paths) from None
            raise
    finally:
        if building.exists():
            shutil.rmtree(building, ignore_errors=True)


def ensure_familiar(paths: FamiliarPaths) -> bool:
    """Fill in the familiar's missing template files (the folder too). Returns True when something was copied.

    Commands check first that the familiar exists (require_familiar); this only completes one.

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


# -- owner-only files and folders, and files Familiar cannot use ----------------------------------
# What a familiar keeps (every message, what it learnt, the search index, exports) is readable by the
# owner only on POSIX: folders 0700, files 0600, like the secrets file. SQLite gives history.db's -wal
# and -shm the database file's mode; tantivy's files sit inside fts/, which only the owner can enter.
PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


def _restrict(path: Path, mode: int) -> None:
    """Take away what `mode` does not allow (group and others); never adds a permission."""
    if os.name != "posix":
        return  # Windows: the user's profile folder is private already; chmod only sets read-only there
    try:
        current = stat.S_IMODE(path.lstat().st_mode)
        if current & ~mode:
            path.chmod(current & mode)
    except FileNotFoundError:
        pass
    except PermissionError:  # not ours (a shared FAMILIAR_HOME): leave it, reading still works
        _log.warning("cannot make %s private (not its owner)", path)


def private_folder(path: Path) -> None:
    """Create `path` (a folder, and any missing parents) readable by the owner only, or make an existing
    one so."""
    path.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
    _restrict(path, PRIVATE_FOLDER)


def private_file(path: Path, *, create: bool = False) -> None:
    """Make a file readable by the owner only; with `create`, create it empty first if it is missing
    (so whatever writes it next, SQLite for one, keeps that mode)."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    if path.is_file():  # a folder in its place is reported by whoever opens it
        _restrict(path, PRIVATE_FILE)


def secure_familiar(paths: FamiliarPaths) -> None:
    """The familiar's folders (familiars/, its own, backups/, and fts/, created if missing) private;
    history.db, its -wal and -shm too (a familiar made by an older Familiar had them readable by all)."""
    for folder in (paths.root / "familiars", paths.folder, paths.backups):
        if folder.is_dir():
            _restrict(folder, PRIVATE_FOLDER)
    if not paths.fts.exists() or paths.fts.is_dir():  # a file there is check_familiar_files' to report
        private_folder(paths.fts)
    for name in ("history.db", "history.db-wal", "history.db-shm"):
        if (paths.folder / name).is_file():
            _restrict(paths.folder / name, PRIVATE_FILE)


def check_familiar_files(paths: FamiliarPaths) -> None:
    """Refuse, in one line naming the file and what to do, a character.md, history.db or fts/ that is
    there but cannot be used (a folder where a file belongs, or the reverse, or no permission), instead
    of failing later with a traceback. Missing ones are fine: they are created."""
    md, history, fts = paths.character_md, paths.history_db, paths.fts
    if md.exists() and not md.is_file():
        raise ConfigError(md, None, None, "is a folder, not a file: move it away (a new one is made from the template)")
    if history.exists() and not history.is_file():
        raise ConfigError(history, None, None, "is a folder, not the database: move it away or put history.db back")
    if fts.exists() and not fts.is_dir():
        raise ConfigError(fts, None, None, "is a file, not the search index folder: delete it (the index is rebuilt)")
    try:
        if md.is_file():
            with md.open("rb") as handle:
                handle.read(1)
    except OSError as exc:
        raise ConfigError(md, None, None, _unusable(exc, "read", "u+r")) from None
    if history.is_file() and not database_usable(history):
        reason = "Read-only file system" if _read_only_disk(history) else "Permission denied"
        raise ConfigError(history, None, None, _unusable(OSError(reason), "read and written", "u+rw"))
    try:
        if fts.is_dir():
            os.listdir(fts)
    except OSError as exc:
        problem = _unusable(exc, "read", "u+rwx") + ", or delete it (the index is rebuilt from history.db)"
        raise ConfigError(fts, None, None, problem) from None


def database_usable(path: Path) -> bool:
    """Whether this process may read and write the database file, asked without opening it.

    Never open history.db with a descriptor of one's own (`open`, `os.open`) in a process that may have
    it open through SQLite: closing any descriptor of a file drops every POSIX lock the process holds
    on it, SQLite's included. Another process then takes the database for unused when it closes its
    own connection, checkpoints, and deletes the -wal and -shm this process still writes to: from then
    on the two no longer see each other's writes, and a crash of this one loses them (issue 18)."""
    if os.access in os.supports_effective_ids:
        return os.access(path, os.R_OK | os.W_OK, effective_ids=True)
    return os.access(path, os.R_OK | os.W_OK)


def _read_only_disk(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (AttributeError, OSError):  # Windows has no statvfs
        return False


def _unusable(exc: OSError, verb: str, chmod: str) -> str:
    return (
        f"cannot be {verb} ({exc.strerror or exc}): give yourself access (chmod {chmod}) or run Familiar as its owner"
    )
