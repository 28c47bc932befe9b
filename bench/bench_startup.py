"""Cold start to the window shown, against a bare PySide6 window measured in the same run.

Each run starts a fresh interpreter, offscreen. `familiar` (the real entry point, over a familiar created
by the first launch) prints when its window has painted for the first time and its peak memory then, opens
the familiar behind the window, and exits; the baseline is a bare QMainWindow with a label, timed and
measured the same way (first paint event, ru_maxrss at that moment). The runs alternate, so both see the
same machine load. Time is process wall time from spawn to the "window shown" line. Python bytecode is
cached (in the run's temporary folder) as it is in an installed copy, even where PYTHONDONTWRITEBYTECODE is set.

Target (issue 11, item 7): window shown within 3x the bare window, peak memory then within 2x. On a busy
machine wall times swing run to run; the fastest runs and the CPU time each process used until its first
paint are printed too, as steadier figures for the same comparison.
Also printed: the platform check's own cost (it runs before Qt loads, inside the measured start) and the
time until the familiar is open and live behind the window.

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
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

BARE_WINDOW = """
import resource, sys, time
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow

app = QApplication(sys.argv)
window = QMainWindow()
window.setWindowTitle("bare")
window.setCentralWidget(QLabel("A bare PySide6 window"))
window.resize(1100, 700)


class FirstPaint(QObject):
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"window shown; peak memory {peak:.1f} MB; cpu {time.process_time():.3f} s", flush=True)
            app.quit()
        return False


watcher = FirstPaint()
window.installEventFilter(watcher)
window.show()
app.exec()
"""

PLATFORM_CHECK = """
import time
started = time.perf_counter()
from app.platform_check import window_problem
problem = window_problem()
print(f"{(time.perf_counter() - started) * 1000:.1f} {problem is None}")
"""


@dataclass(frozen=True)
class Run:
    shown_s: float  # spawn to the "window shown" line
    peak_mb: float  # ru_maxrss when the window first painted
    cpu_s: float  # the process's CPU time (all threads) when the window first painted
    open_s: float | None  # spawn to "familiar open" (familiar only)


def _env(home: Path) -> dict[str, str]:
    skip = ("FAMILIAR_", "DISCORD_", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env.update(
        {
            "FAMILIAR_HOME": str(home),
            # Bytecode as an installed copy has it (pip and PyInstaller compile it): the warm-up runs write it
            # here, outside the source tree, for both programs alike; the timed runs read it.
            "PYTHONPYCACHEPREFIX": str(home / "pycache"),
            "QT_QPA_PLATFORM": "offscreen",
            "FAMILIAR_BENCH_EXIT_WHEN_SHOWN": "1",
            "PYTHONPATH": str(REPO),
        }
    )
    return env


def _peak(line: str) -> float:
    return float(line.split("peak memory ")[1].split(" MB")[0])


def _cpu(line: str) -> float:
    return float(line.split("; cpu ")[1].split(" s")[0])


def one_run(argv: list[str], home: Path) -> Run:
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
    )
    assert process.stdout is not None
    shown: float | None = None
    peak = cpu = 0.0
    opened: float | None = None
    for line in process.stdout:
        if line.startswith("window shown"):
            shown, peak, cpu = time.perf_counter() - started, _peak(line), _cpu(line)
        elif line.startswith("familiar open"):
            opened = time.perf_counter() - started
    _out, err = process.communicate(timeout=120)
    if process.returncode != 0 or shown is None:
        raise SystemExit(f"{argv} did not show its window (exit {process.returncode}): {err.strip()[-500:]}")
    return Run(shown, peak, cpu, opened)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    familiar_argv = [sys.executable, "-m", "app"]
    bare_argv = [sys.executable, "-c", BARE_WINDOW]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        first = one_run(familiar_argv, home)  # creates the familiar from the template and an empty store
        one_run(bare_argv, home)  # warms the OS file cache for Qt as the first familiar run did
        bare: list[Run] = []
        familiar: list[Run] = []
        for _ in range(args.runs):
            bare.append(one_run(bare_argv, home))
            familiar.append(one_run(familiar_argv, home))
        checks = [
            float(subprocess.run(
                [sys.executable, "-c", PLATFORM_CHECK], env=_env(home), capture_output=True, text=True, check=True,
                timeout=60, cwd=REPO,
            ).stdout.split()[0])
            for _ in range(args.runs)
        ]  # fmt: skip

    bare_shown, fam_shown = _median([r.shown_s for r in bare]), _median([r.shown_s for r in familiar])
    bare_peak, fam_peak = _median([r.peak_mb for r in bare]), _median([r.peak_mb for r in familiar])
    opened = _median([r.open_s for r in familiar if r.open_s is not None])
    print(f"first launch (creates the familiar): window shown {first.shown_s:.3f} s")
    print(f"runs: {args.runs} each, alternating; medians (process wall time from spawn)")
    print(f"  bare PySide6 window shown: {bare_shown:.3f} s   [{', '.join(f'{r.shown_s:.3f}' for r in bare)}]")
    print(f"  familiar window shown:     {fam_shown:.3f} s   [{', '.join(f'{r.shown_s:.3f}' for r in familiar)}]")
    print(f"  ratio window shown: {fam_shown / bare_shown:.2f}x (target <= 3x)")
    bare_best, fam_best = min(r.shown_s for r in bare), min(r.shown_s for r in familiar)
    print(f"  fastest runs: bare {bare_best:.3f} s, familiar {fam_best:.3f} s, ratio {fam_best / bare_best:.2f}x")
    bare_cpu, fam_cpu = _median([r.cpu_s for r in bare]), _median([r.cpu_s for r in familiar])
    print(
        f"  CPU time to first paint (less sensitive to a busy machine): bare {bare_cpu:.3f} s,"
        f" familiar {fam_cpu:.3f} s, ratio {fam_cpu / bare_cpu:.2f}x"
    )
    print(f"  bare peak memory at first paint:     {bare_peak:.1f} MB")
    print(f"  familiar peak memory at first paint: {fam_peak:.1f} MB")
    print(f"  ratio peak memory: {fam_peak / bare_peak:.2f}x (target <= 2x)")
    print(f"  platform check (inside the familiar's start): {_median(checks):.1f} ms median")
    print(f"  familiar open and live behind the window: {opened:.3f} s after spawn")


if __name__ == "__main__":
    main()
