"""What a familiar keeps on disk is the owner's alone, and a file Familiar cannot use is named, not a traceback.

The permission checks run the real `familiar` command. Unreadable files are made two ways: a folder
where a file belongs (or the reverse), which stops root as well; and a real permission denial
(chmod 000), which root ignores, so as root that command runs as the unprivileged user `nobody`
through setpriv (skipped where that is impossible).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config.paths import FamiliarPaths
from app.config.secrets import SecretStore
from app.memory.migrations import backup
from app.runtime.service import Familiar
from tests.e2e.cli import Cli

pytestmark = pytest.mark.skipif(os.name != "posix", reason="owner-only modes are POSIX permissions")

REPO = Path(__file__).resolve().parents[2]
WHERE = "guild:500/501"
NOBODY = 65534


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(tmp_path / "home", capsys, monkeypatch)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_history_the_index_exports_and_folders_are_the_owners_only(cli: Cli, tmp_path: Path) -> None:
    """Before: history.db 0644, the familiar's folders and fts/ 0755, an export 0644 (umask 022)."""
    old_umask = os.umask(0o022)  # the usual default: what is not asked for explicitly is world-readable
    try:
        cli.json("facts", "remember", "The lighthouse is red", "--where", WHERE)
        folder = cli.home / "familiars" / "default"
        assert mode(cli.home / "familiars") == 0o700
        assert mode(folder) == 0o700
        assert mode(folder / "fts") == 0o700
        assert mode(folder / "history.db") == 0o600

        async def while_open() -> dict[str, int]:  # the -wal and -shm files exist while the store is open
            paths = FamiliarPaths(root=cli.home, name="default")
            familiar = await Familiar.open(paths, SecretStore("default", paths.secrets_file, use_keyring=False))
            try:
                await familiar.memory.remember("The lamp is bright", WHERE)
                return {p.name: mode(p) for p in folder.glob("history.db*")}
            finally:
                await familiar.close()

        assert asyncio.run(while_open()) == {"history.db": 0o600, "history.db-wal": 0o600, "history.db-shm": 0o600}

        export = tmp_path / "memory.jsonl"
        leftover = tmp_path / "memory.jsonl.tmp"  # a crashed export's temporary file, world-readable
        leftover.write_text("stale", encoding="utf-8")
        leftover.chmod(0o644)
        cli.json("export", str(export))
        assert mode(export) == 0o600
        assert "The lighthouse is red" in export.read_text(encoding="utf-8")
    finally:
        os.umask(old_umask)


def test_a_familiar_made_by_an_older_familiar_is_made_private_when_opened(cli: Cli) -> None:
    cli.json("facts", "list")
    folder = cli.home / "familiars" / "default"
    (folder / "backups").mkdir()
    for path in (cli.home / "familiars", folder, folder / "fts", folder / "backups"):
        path.chmod(0o755)
    (folder / "history.db").chmod(0o644)
    cli.json("facts", "list")
    kept = (cli.home / "familiars", folder, folder / "fts", folder / "backups", folder / "history.db")
    assert [mode(p) for p in kept] == [0o700, 0o700, 0o700, 0o700, 0o600]


def test_a_backup_before_a_migration_is_the_owners_only(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        source = sqlite3.connect(tmp_path / "history.db")
        try:
            source.execute("CREATE TABLE t (x)")
            written = backup(source, tmp_path / "backups", 1)
        finally:
            source.close()
    finally:
        os.umask(old_umask)
    assert (mode(tmp_path / "backups"), mode(written)) == (0o700, 0o600)


# -- files Familiar cannot use ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "named", "advice"),
    [
        ("character.md", "character.md: is a folder, not a file", "move it away"),
        ("history.db", "history.db: is a folder, not the database", "move it away or put history.db back"),
        ("fts", "fts: is a file, not the search index folder", "delete it (the index is rebuilt)"),
    ],
)
def test_a_folder_where_a_file_belongs_or_the_reverse_is_one_line_naming_it(
    cli: Cli, make: str, named: str, advice: str
) -> None:
    """Before: an IsADirectoryError, sqlite3.OperationalError or FileExistsError traceback."""
    cli.json("facts", "remember", "The lighthouse is red", "--where", WHERE)
    folder = cli.home / "familiars" / "default"
    target = folder / make
    aside = folder / (make + ".aside")
    target.rename(aside)
    if make == "fts":
        target.write_text("not an index", encoding="utf-8")
    else:
        target.mkdir()
        (folder / "history.db-wal").unlink(missing_ok=True)
        (folder / "history.db-shm").unlink(missing_ok=True)
    for argv in (("facts", "list"), ("turns", "search", "lighthouse"), ("index", "status")):
        code, out, err = cli.run(*argv)
        assert (code, out) == (2, ""), argv
        assert err.count("\n") == 1, err
        assert f"{folder}/{named}" in err
        assert advice in err
    if target.is_dir():
        target.rmdir()
    else:
        target.unlink()
    aside.rename(target)
    assert [f["content"] for f in cli.json("facts", "list")["facts"]] == ["The lighthouse is red"]


@pytest.fixture
def unprivileged() -> Iterator[tuple[Path, list[str]]]:
    """A data root the command can be denied, and the prefix that runs the command there: nothing as an
    ordinary user; setpriv to `nobody` as root (chmod 000 does not stop root)."""
    root = Path(tempfile.mkdtemp(prefix="familiar-perm-"))
    try:
        if os.geteuid() != 0:
            yield root, []
            return
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: chmod 000 cannot stop root from reading")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        probe = subprocess.run(
            [*prefix, sys.executable, "-c", "import app.cli"],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            timeout=60,
            check=False,
        )
        if probe.returncode != 0:
            pytest.skip(f"cannot run Familiar as nobody here: {probe.stderr.decode(errors='replace')[-200:]}")
        os.chown(root, NOBODY, NOBODY)
        yield root, prefix
    finally:
        for path in root.rglob("*"):  # give everything back so it can be removed
            if not path.is_symlink():
                path.chmod(0o700 if path.is_dir() else 0o600)
        shutil.rmtree(root, ignore_errors=True)


def _familiar(home: Path, prefix: list[str], *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
    env.update({"FAMILIAR_HOME": str(home), "PYTHONPATH": str(REPO), "HOME": str(home)})
    return subprocess.run(
        [*prefix, sys.executable, "-m", "app", *argv],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("character.md", "character.md: cannot be read (Permission denied): give yourself access (chmod u+r)"),
        ("history.db", "history.db: cannot be read and written (Permission denied): give yourself access (chmod u+rw)"),
        ("fts", "fts: cannot be read (Permission denied): give yourself access (chmod u+rwx)"),
    ],
)
def test_a_file_without_permission_is_one_line_naming_it_and_what_to_do(
    unprivileged: tuple[Path, list[str]], name: str, problem: str
) -> None:
    home, prefix = unprivileged
    created = _familiar(home, prefix, "new", "default")
    assert created.returncode == 0, created.stderr
    made = _familiar(home, prefix, "facts", "remember", "The lighthouse is red", "--where", WHERE)
    assert made.returncode == 0, made.stderr
    folder = home / "familiars" / "default"
    (folder / name).chmod(0)
    denied = _familiar(home, prefix, "facts", "list")
    assert (denied.returncode, denied.stdout) == (2, "")
    assert denied.stderr.count("\n") == 1, denied.stderr
    assert f"{folder}/{problem}" in denied.stderr
    assert "or run Familiar as its owner" in denied.stderr
    (folder / name).chmod(0o700 if name == "fts" else 0o600)
    listed = _familiar(home, prefix, "facts", "list")
    assert listed.returncode == 0, listed.stderr
    assert "The lighthouse is red" in listed.stdout
