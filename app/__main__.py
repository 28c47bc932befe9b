"""Entry point: `python -m app`, the `familiar` script and the bundle's executables."""

from __future__ import annotations

import os
import sys


def main() -> None:
    # A windowed executable (the bundle's Familiar.exe, Familiar.app) starts with no console: sys.stdout and
    # sys.stderr are None there, and a line written to them would crash the app. They go nowhere instead.
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    from app.cli import main as cli_main

    raise SystemExit(cli_main())


if __name__ == "__main__":
    main()
