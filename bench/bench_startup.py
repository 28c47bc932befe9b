"""Cold start to the window shown: `familiar` launched as a fresh process, offscreen.

Each run starts a new interpreter (imports, store open, index open, window built and shown); the
process prints when the window is shown and exits. Reports the wall time per run and the median.

    python -m bench.bench_startup [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def one_run(home: Path) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAMILIAR_", "DISCORD_"))}
    env.update(
        {
            "FAMILIAR_HOME": str(home),
            "QT_QPA_PLATFORM": "offscreen",
            "FAMILIAR_BENCH_EXIT_WHEN_SHOWN": "1",
            "PYTHONPATH": str(REPO),
        }
    )
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "app"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or "window shown" not in result.stdout:
        raise SystemExit(f"the window did not start (exit {result.returncode}): {result.stderr.strip()[-500:]}")
    return elapsed, result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        first, _ = one_run(home)  # creates the familiar from the template and an empty store
        times: list[float] = []
        inside: list[str] = []
        for _ in range(args.runs):
            elapsed, said = one_run(home)
            times.append(elapsed)
            inside.append(said)
    print(f"first launch (creates the familiar): {first:.2f} s")
    print(
        f"cold start to window shown over {args.runs} runs: median {statistics.median(times):.2f} s,"
        f" min {min(times):.2f} s, max {max(times):.2f} s (process wall time)"
    )
    print(f"as measured inside the process: {inside[-1]}")


if __name__ == "__main__":
    main()
