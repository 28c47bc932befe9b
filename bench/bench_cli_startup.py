"""Start-up of a read-only memory command, against `python -c pass` measured in the same run.

Each run starts a fresh interpreter. `familiar facts list` (the real entry point, over an empty familiar
made with `familiar new` first) opens the store, lists nothing and exits; `familiar facts list
--recorded-at T` does the same through the as-of slice; `familiar --version` only parses its command
line (what importing the `familiar` command costs before any store is opened); the baseline is
`python -c pass`. The runs alternate, so all see the same machine load. Time is process wall time from
spawn to exit; the CPU time each child used (user + system) is printed too, as a steadier figure on a busy
machine. Python bytecode is cached (in the run's temporary folder) as in an installed copy, even where
PYTHONDONTWRITEBYTECODE is set; `--no-bytecode` runs from source instead, as a checkout does where
PYTHONDONTWRITEBYTECODE is set (every module of app/ compiled again at each start).

Target (issue 18, item 15): `familiar facts list` on an empty familiar within 0.3 s. Also printed: the
heavy libraries the command loaded (it needs none of them) and its slowest imports (python -X importtime).

    python -m bench.bench_cli_startup [--runs N] [--no-bytecode]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "openai", "discord", "PySide6", "fastembed", "onnxruntime", "httpx", "tiktoken")
LOADED = (
    "import sys, runpy\n"
    "sys.argv = ['familiar', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('app', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
)


@dataclass(frozen=True)
class Run:
    wall_s: float
    cpu_s: float


def _env(home: Path, bytecode: bool) -> dict[str, str]:
    skip = ("FAMILIAR_", "DISCORD_", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env.update({"FAMILIAR_HOME": str(home), "PYTHONPATH": str(REPO)})
    if bytecode:
        env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def one_run(argv: list[str], home: Path, bytecode: bool) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    env = _env(home, bytecode)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu)


def _slowest_imports(argv: list[str], home: Path, bytecode: bool, count: int = 8) -> list[tuple[float, str]]:
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], env=_env(home, bytecode), capture_output=True, text=True, timeout=120,
        cwd=REPO, check=True,
    )  # fmt: skip
    found: list[tuple[float, str]] = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if match and len(match.group(2)) <= 2:  # top-level imports and their direct children
            found.append((int(match.group(1)) / 1e6, match.group(3)))
    return sorted(found, reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--no-bytecode", action="store_true", help="run from source, no bytecode cache")
    args = parser.parse_args()
    bytecode = not args.no_bytecode
    python = sys.executable
    programs = {
        "python -c pass": [python, "-c", "pass"],
        "familiar --version": [python, "-m", "app", "--version"],
        "familiar facts list": [python, "-m", "app", "facts", "list"],
        "familiar facts list --recorded-at T": [
            python, "-m", "app", "facts", "list", "--recorded-at", "2024-05-01T12:00:00+00:00",
        ],
    }  # fmt: skip
    runs: dict[str, list[Run]] = {name: [] for name in programs}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        one_run([python, "-m", "app", "new", "default"], home, bytecode)
        for argv in programs.values():  # writes the bytecode cache, and warms the OS file cache
            one_run(argv, home, bytecode)
        for _ in range(args.runs):
            for name, argv in programs.items():
                runs[name].append(one_run(argv, home, bytecode))
        loaded = subprocess.run(
            [python, "-c", LOADED, "facts", "list"], env=_env(home, bytecode), capture_output=True, text=True,
            timeout=120, cwd=REPO, check=True,
        ).stderr.strip().splitlines()[-1:]  # fmt: skip
        slowest = _slowest_imports(programs["familiar facts list"], home, bytecode)

    base_wall = statistics.median(r.wall_s for r in runs["python -c pass"])
    base_cpu = statistics.median(r.cpu_s for r in runs["python -c pass"])
    cache = "bytecode cached" if bytecode else "no bytecode cache (compiled from source at each start)"
    print(f"runs: {args.runs} each, alternating, {cache}; medians of wall time from spawn to exit (and CPU time)")
    for name, measured in runs.items():
        wall = statistics.median(r.wall_s for r in measured)
        cpu = statistics.median(r.cpu_s for r in measured)
        fastest = min(r.wall_s for r in measured)
        print(
            f"  {name:<38} {wall:.3f} s ({wall / base_wall:5.1f}x python -c pass), fastest {fastest:.3f} s,"
            f" CPU {cpu:.3f} s ({cpu / base_cpu:5.1f}x)"
        )
    facts_list = statistics.median(r.wall_s for r in runs["familiar facts list"])
    print(f"  familiar facts list: {facts_list:.3f} s (target <= 0.3 s)")
    print(f"  heavy libraries loaded by familiar facts list: {(loaded[0] if loaded and loaded[0] else 'none')}")
    print("  slowest imports of familiar facts list (cumulative, under -X importtime):")
    for seconds, module in slowest:
        print(f"    {seconds * 1000:6.1f} ms  {module}")


if __name__ == "__main__":
    main()
