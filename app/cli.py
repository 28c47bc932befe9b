"""The `familiar` command: the window, headless mode, and memory/index commands.

Every memory command takes `--json` (one JSON document on stdout; errors on stderr; non-zero exit
on error) and works whether or not the familiar is running (same store; WAL readers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from app import __version__
from app.config.errors import ConfigError
from app.config.paths import FamiliarPaths, familiar_paths
from app.config.secrets import SecretStore
from app.console import error, output
from app.runtime.errors import FamiliarError
from app.runtime.service import Familiar

_log = logging.getLogger("familiar")

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_CONFIG = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="familiar", description="An AI character for your Discord server, with a window onto its memory."
    )
    parser.add_argument("--version", action="version", version=f"familiar {__version__}")
    parser.add_argument("--familiar", default="default", metavar="NAME", help="which familiar (default: default)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser("run", help="run the familiar")
    run.add_argument("--headless", action="store_true", help="without a window (SIGTERM or Ctrl-C stops it)")

    turns = commands.add_parser("turns", help="the conversation history").add_subparsers(
        dest="turns_command", metavar="ACTION", required=True
    )
    search = turns.add_parser("search", help="full-text search over every turn")
    search.add_argument("query")
    search.add_argument("--limit", type=_positive, default=20)
    search.add_argument("--json", action="store_true")

    index = commands.add_parser("index", help="the search index").add_subparsers(
        dest="index_command", metavar="ACTION", required=True
    )
    status = index.add_parser("status", help="commit health, lag and size of the index")
    status.add_argument("--json", action="store_true")
    rebuild = index.add_parser("rebuild", help="rebuild the index from the store")
    rebuild.add_argument("--json", action="store_true")
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError("must be between 1 and 10000")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        paths = familiar_paths(args.familiar)
    except ConfigError as exc:
        error(str(exc))
        return EXIT_CONFIG
    if args.command is None:
        from app.bootstrap import run_window  # imports Qt only when a window is wanted

        return run_window(paths)
    _configure_logging()
    if args.command == "run":
        if not args.headless:
            from app.bootstrap import run_window

            return run_window(paths)
        from app.bootstrap import run_headless

        return run_headless(paths)
    handler = _COMMANDS[(args.command, getattr(args, f"{args.command}_command"))]
    return asyncio.run(_with_familiar(paths, args, handler))


def _configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("discord").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)


Handler = Callable[[Familiar, argparse.Namespace], Awaitable[tuple[Any, str]]]


async def _with_familiar(paths: FamiliarPaths, args: argparse.Namespace, handler: Handler) -> int:
    try:
        familiar = await Familiar.open(paths, SecretStore(paths.name, paths.secrets_file))
    except ConfigError as exc:
        error(str(exc))
        return EXIT_CONFIG
    except FamiliarError as exc:
        error(str(exc))
        return EXIT_FAILURE
    try:
        document, text = await handler(familiar, args)
    except (FamiliarError, ValueError) as exc:
        error(str(exc))
        return EXIT_FAILURE
    finally:
        await familiar.close()
    if getattr(args, "json", False):
        output(json.dumps(document, ensure_ascii=False, default=str))
    else:
        output(text)
    return EXIT_OK


async def _turns_search(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    await familiar.history.catch_up()
    hits = await familiar.search_turns(args.query, args.limit)
    document = {
        "query": args.query,
        "hits": [
            {
                "turn_id": h.turn_id,
                "where": h.where,
                "author": h.author,
                "content": h.content,
                "created_at": h.created_at.isoformat(),
                "score": round(h.score, 4),
            }
            for h in hits
        ],
    }
    lines = [f"#{h.turn_id} {h.created_at:%Y-%m-%d %H:%M} {h.where} {h.author}: {h.content}" for h in hits]
    return document, "\n".join(lines) if lines else "no turns found"


async def _index_status(familiar: Familiar, _args: argparse.Namespace) -> tuple[Any, str]:
    health = await familiar.index_status()
    document = {"indexes": [_health_dict(health)]}
    text = (
        f"{health.name}: {health.commits} commits, {health.retries} retries, {health.failures} failures,"
        f" lag {health.lag}, pending {health.pending}"
        + (f", last error: {health.last_error}" if health.last_error else "")
    )
    return document, text


async def _index_rebuild(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    def progress(done: int, total: int) -> None:
        sys.stderr.write(f"rebuilding turns index: {done}/{total}\n")

    count = await familiar.rebuild_index(None if args.json else progress)
    return {"rebuilt": "turns", "documents": count}, f"turns index rebuilt: {count} documents"


def _health_dict(health: Any) -> dict[str, Any]:
    return {
        "name": health.name,
        "commits": health.commits,
        "documents_committed": health.documents_committed,
        "retries": health.retries,
        "live_attempt": health.live_attempt,
        "failures": health.failures,
        "last_error": health.last_error,
        "pending": health.pending,
        "lag": health.lag,
        "watermark": health.watermark,
    }


_COMMANDS: dict[tuple[str, str], Handler] = {
    ("turns", "search"): _turns_search,
    ("index", "status"): _index_status,
    ("index", "rebuild"): _index_rebuild,
}
