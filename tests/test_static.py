"""The static checks are part of the test command: ruff (lint + format), mypy --strict, import-linter."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: install the test extras (pip install -e '.[test]')")
    return found


def test_ruff_lint() -> None:
    result = _run(_tool("ruff"), "check", "app", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(_tool("ruff"), "format", "--check", "app", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_layers() -> None:
    result = _run(_tool("lint-imports"))
    assert result.returncode == 0, result.stdout + result.stderr


# Calls that start a nested Qt event loop. Under qasync an asyncio task resumed inside one fails with
# "Cannot enter into task" and the runtime's background work dies (issue 18): dialogs open through
# app/ui/dialogs/modal.py, menus drop down with popup() (app/ui/widgets/menu_button.py).
_NESTED_LOOP_METHODS = {"exec", "exec_", "processEvents", "setMenu"}
_STATIC_DIALOGS = {
    "QFileDialog": {"getOpenFileName", "getOpenFileNames", "getSaveFileName", "getExistingDirectory", "getOpenFileUrl"},
    "QInputDialog": {"getItem", "getInt", "getDouble", "getText", "getMultiLineText"},
    "QMessageBox": {"question", "warning", "information", "critical", "about", "aboutQt"},
    "QColorDialog": {"getColor"},
    "QFontDialog": {"getFont"},
}


def _nested_loops(source: str) -> list[tuple[int, str]]:
    import ast

    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, owner = node.func.attr, node.func.value
        if name in _NESTED_LOOP_METHODS:
            found.append((node.lineno, f".{name}()"))
        elif isinstance(owner, ast.Name) and name in _STATIC_DIALOGS.get(owner.id, ()):
            found.append((node.lineno, f"{owner.id}.{name}()"))
    return found


def test_the_checker_finds_every_kind_of_nested_loop() -> None:
    sample = "d.exec()\nQFileDialog.getOpenFileName(w)\nQMessageBox.question(w, 't', 'q')\nb.setMenu(m)\nd.open()\n"
    assert [line for line, _ in _nested_loops(sample)] == [1, 2, 3, 4]


def test_no_code_of_the_window_starts_a_nested_event_loop() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{line}: {what}"
        for path in sorted((REPO / "app").rglob("*.py"))
        for line, what in _nested_loops(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def _error_classes_outside_errors_py() -> list[str]:
    """Classes under app/runtime deriving from FamiliarError (or one of its subclasses) outside errors.py."""
    import ast

    known = {"FamiliarError"}
    tree = {path: ast.parse(path.read_text(encoding="utf-8")) for path in (REPO / "app" / "runtime").rglob("*.py")}
    errors_py = REPO / "app" / "runtime" / "errors.py"
    for node in ast.walk(tree[errors_py]):
        if isinstance(node, ast.ClassDef):
            known.add(node.name)
    found = []
    for path, module in tree.items():
        if path == errors_py:
            continue
        for node in ast.walk(module):
            if isinstance(node, ast.ClassDef):
                bases = {
                    b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                    for b in node.bases
                }
                if bases & known:
                    found.append(f"{path.relative_to(REPO)}: class {node.name}")
    return found


def test_every_error_the_facade_raises_is_defined_in_runtime_errors() -> None:
    """Issue 20 item 6: one error contract. A front end catches FamiliarError and its kinds from
    app/runtime/errors.py (the lorebook pane used to look for a `current` attribute on whatever failed)."""
    assert _error_classes_outside_errors_py() == []


def test_every_package_of_app_is_listed_for_installing() -> None:
    """A package missing from [tool.setuptools] packages works in the editable install the tests use and is
    missing from a wheel or the bundle: the list must name every folder of app/ with an __init__.py."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(REPO).parts) for init in (REPO / "app").rglob("__init__.py")}
    assert found - listed == set()
