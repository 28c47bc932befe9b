"""What a read-only command loads: none of the big libraries it does not use (issue 18 item 15).

Each command runs in a process of its own through the real entry point (`python -m app`), which then
reports the modules loaded by the time it exits. Deterministic, unlike a timing: the start-up figures
themselves are measured by bench/bench_cli_startup.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Loaded only by what needs them: the window (PySide6), Discord (discord), replies and memory workers
# (openai, httpx), embeddings and the timeline's as-of slices (numpy, fastembed, onnxruntime), writing
# character.toml or lorebook.toml (tomlkit), regex keys of the lore (regex, re2).
NOT_FOR_A_READ = (
    "PySide6",
    "discord",
    "openai",
    "httpx",
    "numpy",
    "fastembed",
    "onnxruntime",
    "tomlkit",
    "regex",
    "re2",
)
LOADED = (
    "import json, runpy, sys\n"
    "sys.argv = ['familiar', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('app', run_name='__main__')\n"
    "except SystemExit as stop:\n"
    "    code = stop.code\n"
    "print(json.dumps({'code': code, 'loaded': sorted(m for m in sys.modules if sys.modules[m] is not None)}),"
    " file=sys.stderr)\n"
)


def _familiar(home: Path, *argv: str) -> tuple[int, set[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_", "QT_"))}
    env.update({"FAMILIAR_HOME": str(home), "PYTHONPATH": str(REPO)})
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], {name.split(".")[0] for name in report["loaded"]}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = tmp_path_factory.mktemp("startup") / "home"
    code, _loaded = _familiar(made, "new", "default")
    assert code == 0
    code, _loaded = _familiar(made, "facts", "remember", "The owl is awake", "--where", "guild:1")
    assert code == 0
    return made


@pytest.mark.parametrize(
    "argv",
    [
        ("facts", "list"),
        ("facts", "list", "--status", "pending"),
        ("facts", "show", "1"),
        ("turns", "search", "owl"),
        ("recall", "owl", "--where", "guild:1"),
        ("tombstones", "list"),
        ("memory", "status"),
        ("index", "status"),
        ("--version",),
    ],
)
def test_a_read_only_command_loads_no_library_it_does_not_use(home: Path, argv: tuple[str, ...]) -> None:
    code, loaded = _familiar(home, *argv)
    assert code == 0
    assert sorted(loaded & set(NOT_FOR_A_READ)) == []


def test_an_as_of_slice_loads_the_timeline_it_needs(home: Path) -> None:
    """The other side: --recorded-at reads through the timeline book, which is numpy's."""
    code, loaded = _familiar(home, "facts", "list", "--recorded-at", "2024-05-01T12:00:00+00:00")
    assert code == 0
    assert "numpy" in loaded
    assert "openai" not in loaded
