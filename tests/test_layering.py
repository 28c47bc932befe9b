"""SQL lives in app/memory only: no other module of app/ holds SQL text or reaches a connection.

The check walks each module's syntax tree (not its text, so comments and docstrings that mention a
statement do not count, and a statement split over f-string pieces or `+` still does). Nothing
outside app/memory is allowed: a query a worker needs is a named store method.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"
STORE = APP / "memory"

# Written the way this code base writes SQL (keywords in capitals), in the shapes only SQL has.
_SQL = re.compile(
    r"\bSELECT\b[\s\S]*?\bFROM\b"
    r"|\bSELECT\s+(?:1|NULL|COUNT|MAX|MIN|COALESCE|DISTINCT)\b"
    r"|\bINSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\b"
    r"|\bUPDATE\s+\w+\s+SET\b"
    r"|\bDELETE\s+FROM\b"
    r"|\b(?:CREATE|DROP|ALTER)\s+(?:TABLE|INDEX|TRIGGER|VIEW)\b"
    r"|\bPRAGMA\s+\w+"
    r"|\bWITH\s+RECURSIVE\b"
    r"|\bWHERE\s+[\w.]+\s*(?:=|>|<|IN\b|IS\b)[^\n]*\?"
)
# The calls that hand SQL to SQLite (the store's and aiosqlite's).
_RAW_CALLS = {"read_all", "read_one", "execute", "executemany", "execute_fetchall", "executescript", "transaction"}


def _text(node: ast.AST) -> str | None:
    """The string a literal expression spells (f-string holes as `?`), or None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(part) or "?" for part in node.values)
    if isinstance(node, ast.FormattedValue):
        return "?"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        if left is not None or right is not None:
            return (left or "?") + (right or "?")
    return None


def sql_in(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal in `source` that holds SQL, docstrings left out."""
    tree = ast.parse(source)
    docstrings = {
        id(body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    }
    inner: set[int] = set()  # parts of a larger literal already looked at as a whole
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in inner:
            continue
        text = _text(node)
        if text is None:
            continue
        inner.update(id(child) for child in ast.walk(node) if child is not node)
        if _SQL.search(text):
            found.append((getattr(node, "lineno", 0), " ".join(text.split())[:80]))
    return found


def raw_calls_in(source: str) -> list[tuple[int, str]]:
    """(line, name) of each call that hands SQL to a connection or to the store's raw reads."""
    return [
        (node.lineno, node.func.attr)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RAW_CALLS
    ]


def _outside_the_store() -> list[Path]:
    return sorted(p for p in APP.rglob("*.py") if STORE not in p.parents)


def test_no_sql_text_outside_app_memory() -> None:
    found = [
        f"{path.relative_to(APP.parent)}:{line}: {text}"
        for path in _outside_the_store()
        for line, text in sql_in(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "SQL belongs in app/memory (a named store method):\n" + "\n".join(found)


def test_no_raw_queries_outside_app_memory() -> None:
    found = [
        f"{path.relative_to(APP.parent)}:{line}: .{name}(...)"
        for path in _outside_the_store()
        for line, name in raw_calls_in(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "only app/memory runs queries:\n" + "\n".join(found)


def test_the_store_is_scanned_as_a_control() -> None:
    """The checks see the SQL that app/memory does hold (so an empty finding above means something)."""
    store_files = sorted(STORE.rglob("*.py"))
    assert sum(len(sql_in(p.read_text(encoding="utf-8"))) for p in store_files) > 100
    assert sum(len(raw_calls_in(p.read_text(encoding="utf-8"))) for p in store_files) > 50


@pytest.mark.parametrize(
    "source",
    [
        # The shapes the memory workers used before their queries moved into app/memory.
        'rows = await store.read_all("SELECT NULL, MAX(id), 0 FROM turns UNION ALL"\n " SELECT place FROM t", ())',
        "x = f\"SELECT id FROM facts WHERE scope IN ({marks}) AND status = 'active'\"",
        "x = (\"SELECT COALESCE(MAX(turn_id), 0) FROM memory_work WHERE kind = 'dream' AND place = ?\")",
        'also = [("INSERT INTO projector_state (name, key) VALUES (?, ?)", (1, 2))]',
        'sql = "UPDATE memory_work SET " + column + " = ?"',
        'sql = "DELETE FROM reflections WHERE " + clause',
        'row = "SELECT 1 FROM reflections LIMIT 1"',
        'q = "SELECT " + ", ".join(cols) + " FROM turns"',
    ],
)
def test_the_sql_check_finds_statements(source: str) -> None:
    assert sql_in(source)


@pytest.mark.parametrize(
    "source",
    [
        '"""Reads SELECT id FROM turns in its docstring."""\nx = 1',
        'SYSTEM = "Select the facts from the list that the new one replaces. Answer with JSON only."',
        'hint = "Update the settings, then delete from the queue what you no longer need."',
        'label = "WHERE"',
    ],
)
def test_the_sql_check_leaves_prose_alone(source: str) -> None:
    assert sql_in(source) == []


def test_the_raw_call_check_finds_queries() -> None:
    source = (
        "async def f(s):\n"
        "    await s.read_one('x')\n"
        "    async with s.transaction() as c:\n"
        "        await c.execute('y')\n"
    )
    assert [name for _line, name in raw_calls_in(source)] == ["read_one", "transaction", "execute"]
