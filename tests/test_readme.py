"""The README is for users: keep it true."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from app.config.settings import iter_options

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_every_leaf_option_is_documented() -> None:
    sections = {name for name, _doc in iter_options() if "." not in name} | {"llm.background"}
    for name, _doc in iter_options():
        if name in sections:
            continue
        assert f"`{name}`" in README, f"README's settings reference lacks {name}"


def test_ci_runs_the_readme_test_command() -> None:
    command = re.search(r"## Install and test.*?\n\n    (.+?)\n", README, re.S)
    assert command is not None
    assert command.group(1) in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_every_cli_command_in_the_readme_exists() -> None:
    from app.cli import build_parser

    parser = build_parser()
    for line in re.findall(r"^    familiar (.+?)(?:\s{2,}#.*)?$", README, re.M):
        words = [w for w in line.split() if not w.startswith(("[", "<", '"'))]
        words = [w for w in words if w not in {"NAME", "N]"}]
        if words and words[0].startswith("--") and words[0] != "--familiar":
            continue  # --version exits
        argv = [*words]
        if argv[:1] == ["--familiar"]:
            argv = argv[:2] if len(argv) > 1 else [*argv, "x"]
        if argv[:2] == ["turns", "search"]:
            argv.append("q")
        parser.parse_args(argv)


def test_pyproject_pins_pyside_below_612() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (pyside,) = [d for d in project["dependencies"] if d.lower().startswith("pyside6")]
    assert "<6.12" in pyside
