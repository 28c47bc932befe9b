"""The README is for users: keep it true."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

from app.config.settings import iter_options

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_every_leaf_option_is_documented() -> None:
    names = [name for name, _doc in iter_options()]
    sections = {n for n in names if any(m.startswith(n + ".") for m in names)}
    for name, _doc in iter_options():
        if name in sections:
            continue
        assert f"`{name}`" in README, f"README's settings reference lacks {name}"


def test_ci_runs_the_readme_test_command() -> None:
    command = re.search(r"## Install and test.*?\n\n    (.+?)\n", README, re.S)
    assert command is not None
    assert command.group(1) in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_cli_command_in_the_readme_exists() -> None:
    """Each `familiar a b ...` line names a real command path, and every --option it shows exists."""
    from app.cli import build_parser

    lines = re.findall(r"^    familiar ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)*)(.*?)(?:\s{2,}#.*)?$", README, re.M)
    assert len(lines) >= 10
    for path, rest in lines:
        parser = build_parser()
        for word in path.split():
            choices = _subcommands(parser)
            if not choices:
                break
            assert word in choices, f"README shows 'familiar {path}', but '{word}' is not a command"
            parser = choices[word]
        known = {option for action in parser._actions for option in action.option_strings}
        for option in re.findall(r"(--[a-z-]+)", rest):
            assert option in known, f"README shows {option} for 'familiar {path}', which does not take it"


def test_pyproject_pins_pyside_below_612() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (pyside,) = [d for d in project["dependencies"] if d.lower().startswith("pyside6")]
    assert "<6.12" in pyside
