"""Entry point: `python -m app`, the `familiar` script and the bundle's executables."""

from __future__ import annotations

import gc
import os
import sys


def main() -> None:
    # A windowed executable (the bundle's Familiar.exe, Familiar.app) starts with no console: sys.stdout and
    # sys.stderr are None there, and a line written to them would crash the app. They go nowhere instead.
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    # Before any thread starts: a long run on glibc otherwise spreads over many half-empty malloc arenas.
    from app import native_memory

    native_memory.limit_arenas()
    from app.cli import main as cli_main

    code = cli_main()
    # Done: the command has closed the familiar and flushed its output. What is left is the interpreter's
    # teardown, whose collections would walk every object the start made (some 45,000) only to find no
    # garbage: 40-50 ms of a one-shot command, measured (bench/bench_cli_startup.py). Frozen, they are
    # skipped; modules are still torn down, atexit handlers (the log file's flush) still run.
    gc.freeze()
    raise SystemExit(code)


if __name__ == "__main__":
    main()
