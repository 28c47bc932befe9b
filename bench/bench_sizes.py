"""Module and class sizes of app/: lines per package, and the largest modules and classes.

Issue 12 asks for these before and after its restructuring; run it on any checkout:

    python -m bench.bench_sizes [--root DIR] [--top N]
"""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def sizes(root: Path, top: int) -> list[str]:
    app = root / "app"
    if not app.is_dir():
        raise SystemExit(f"{root} has no app/ folder: give --root a Familiar checkout")
    modules = sorted(app.rglob("*.py"))
    packages: dict[str, int] = defaultdict(int)
    module_sizes: list[tuple[int, str]] = []
    class_sizes: list[tuple[int, str]] = []
    for module in modules:
        relative = module.relative_to(root).as_posix()
        count = _lines(module)
        packages[module.parent.relative_to(root).as_posix()] += count
        module_sizes.append((count, relative))
        tree = ast.parse(module.read_text(encoding="utf-8"), filename=relative)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                class_sizes.append((node.end_lineno - node.lineno + 1, f"{relative}:{node.name}"))
    out = [f"app/: {sum(c for c, _ in module_sizes):,} lines in {len(modules)} modules"]
    out.append("packages:")
    out += [f"  {count:>6,}  {name}" for name, count in sorted(packages.items(), key=lambda kv: -kv[1])]
    out.append(f"largest {top} modules:")
    out += [f"  {count:>6,}  {name}" for count, name in sorted(module_sizes, reverse=True)[:top]]
    out.append(f"largest {top} classes:")
    out += [f"  {count:>6,}  {name}" for count, name in sorted(class_sizes, reverse=True)[:top]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    print("\n".join(sizes(args.root, args.top)))


if __name__ == "__main__":
    main()
