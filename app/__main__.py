"""Entry point: `python -m app` and the `familiar` script."""

from __future__ import annotations


def main() -> None:
    from app.cli import main as cli_main

    raise SystemExit(cli_main())


if __name__ == "__main__":
    main()
