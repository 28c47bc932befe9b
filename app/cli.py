"""The `familiar` command: the window, headless mode, and memory/index commands.

Every memory command takes `--json` (one JSON document on stdout; errors on stderr; non-zero exit
on error) and works whether or not the familiar is running (same store; WAL readers).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from app import __version__
from app.bootstrap import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, disk_full_problem, open_or_explain
from app.config.errors import ConfigError
from app.config.paths import (
    FamiliarExistsError,
    FamiliarPaths,
    create_familiar,
    data_root,
    familiar_paths,
    list_familiars,
    require_familiar,
)
from app.console import error, escape, output, output_json
from app.logs import configure_logging
from app.runtime.errors import FamiliarError

if TYPE_CHECKING:  # the window's start imports this module: nothing here may load the store or the clients
    from app.runtime.api.memory_ops import RebuildProgress
    from app.runtime.api.views import (
        EmbeddingStatusView,
        Explanation,
        FactView,
        IndexStatusView,
        Progress,
        TombstoneView,
    )
    from app.runtime.service import Familiar

_log = logging.getLogger("familiar")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError("must be between 1 and 10000")
    return value


def _identifier(what: str) -> Callable[[str], int]:
    """An argparse type for a positive id whose error names what kind of id was expected."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a {what}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError("ids are positive")
        return value

    return parse


_fact_id = _identifier("fact id")


def _revision(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a revision number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("revisions are 0 or more")
    return value


DEFAULT_SCREENSHOT_SIZE = (1100, 700)


def _size(text: str) -> tuple[int, int]:
    """WxH in pixels, e.g. 1100x700."""
    width, _x, height = text.lower().partition("x")
    try:
        size = (int(width), int(height))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size like 1100x700") from None
    if not all(200 <= side <= 8000 for side in size):
        raise argparse.ArgumentTypeError(f"'{text}': each side must be between 200 and 8000 pixels")
    return size


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an ISO-8601 time (e.g. 2024-05-01T12:00:00+00:00)") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


_FAMILIAR_HELP = "which familiar (default: default); it must exist"


def _takes_familiar(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`--familiar NAME` here too, after the command's words (`familiar facts list --familiar wisp`). Its
    default is SUPPRESS: a command's parser leaves the name alone unless given there, so one given
    before the command (`familiar --familiar wisp facts list`) stands."""
    parser.add_argument("--familiar", metavar="NAME", default=argparse.SUPPRESS, help=_FAMILIAR_HELP)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="familiar", description="An AI character for your Discord server, with a window onto its memory."
    )
    parser.add_argument("--version", action="version", version=f"familiar {__version__}")
    parser.add_argument("--familiar", metavar="NAME", help=_FAMILIAR_HELP)
    parser.add_argument(
        "--self-test", action="store_true", help="check this installation offscreen in a temporary familiar, then exit"
    )
    parser.add_argument("--pane", metavar="NAME", help="open the window on this pane (dashboard, chat, ...)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def sub(group: Any, name: str, help_text: str, *, of_a_familiar: bool = True) -> argparse.ArgumentParser:
        command: argparse.ArgumentParser = group.add_parser(name, help=help_text)
        command.add_argument("--json", action="store_true", help="print one JSON document")
        return _takes_familiar(command) if of_a_familiar else command

    def actions(name: str, help_text: str, dest: str) -> Any:
        """A command of several actions (`familiar facts ACTION`); `--familiar` may follow its name too."""
        parent = _takes_familiar(commands.add_parser(name, help=help_text))
        return parent.add_subparsers(dest=dest, metavar="ACTION", required=True)

    # Creating a familiar names it itself (NAME, --as NAME): no --familiar after those.
    new = sub(commands, "new", "create a familiar from the template", of_a_familiar=False)
    new.add_argument("name", metavar="NAME")
    card = commands.add_parser("card", help="character cards (Character Card V2 / V3, PNG or JSON)").add_subparsers(
        dest="card_command", metavar="ACTION", required=True
    )
    card_import = sub(
        card, "import", "create a familiar from a Character Card V2 or V3 (PNG or JSON)", of_a_familiar=False
    )
    card_import.add_argument("file", type=Path)
    card_import.add_argument("--as", dest="name", metavar="NAME", help="its name (default: from the card's name)")
    card_export = sub(card, "export", "write the familiar as a Character Card V3 (PNG if FILE ends in .png)")
    card_export.add_argument("file", type=Path)

    run = _takes_familiar(commands.add_parser("run", help="run the familiar"))
    run.add_argument("--headless", action="store_true", help="without a window (SIGTERM or Ctrl-C stops it)")

    turns = actions("turns", "the conversation history", "turns_command")
    search = sub(turns, "search", "full-text search over every turn")
    search.add_argument("query")
    search.add_argument("--limit", type=_positive, default=20)

    facts = actions("facts", "what the familiar knows", "facts_command")
    listing = sub(facts, "list", "current facts, or the slice as of a world / recorded time")
    listing.add_argument("--status", choices=("pending", "active", "rejected", "archived", "all"), default="active")
    listing.add_argument("--subject", metavar="KEY")
    listing.add_argument("--world-at", type=_moment, metavar="T")
    listing.add_argument("--recorded-at", type=_moment, metavar="T")
    listing.add_argument("--limit", type=_positive, default=200)
    listing.add_argument(
        "--include-snoozed", action="store_true", help="with --status pending: also the facts you snoozed"
    )
    show = sub(facts, "show", "a fact's supersede chain, sources and revision")
    show.add_argument("id", type=_fact_id)
    show.add_argument(
        "--recorded-at", type=_moment, metavar="T", help="the chain as recorded by then, each version as it stood"
    )
    remember = sub(facts, "remember", "the owner's explicit path: remember a fact (active at once)")
    remember.add_argument("text")
    remember.add_argument("--where", required=True, metavar="WHERE")
    remember.add_argument("--subject", action="append", default=[], metavar="KEY")
    remember.add_argument("--type", choices=("episodic", "semantic", "procedural"), default="semantic")
    remember.add_argument("--valid-from", type=_moment, metavar="T")
    remember.add_argument("--valid-to", type=_moment, metavar="T")
    for name, help_text in (
        ("accept", "accept a pending fact"),
        ("reject", "reject a pending fact"),
        ("archive", "archive an active fact: it leaves current truth, the history slices keep it"),
    ):
        action = sub(facts, name, help_text)
        action.add_argument("id", type=_fact_id)
        action.add_argument("--revision", type=_revision, required=True)
    snooze = sub(facts, "snooze", "hide a pending fact from the queue for a while")
    snooze.add_argument("id", type=_fact_id)
    snooze.add_argument("--revision", type=_revision, required=True)
    snooze.add_argument("--until", type=_moment, metavar="T", help="default: one day from now")
    edit = sub(facts, "edit", "correct a fact (a new version supersedes the old one)")
    edit.add_argument("id", type=_fact_id)
    edit.add_argument("--revision", type=_revision, required=True)
    edit.add_argument("--text", required=True)

    forget = sub(commands, "forget", "erase a fact everywhere and block re-learning it; prints the receipt")
    forget.add_argument("id", type=_fact_id)
    forget.add_argument("--revision", type=_revision)
    forget.add_argument("--redact-sources", action="store_true", help="also erase the messages it came from")

    tombstones = actions("tombstones", "what may not be learned again", "tombstones_command")
    sub(tombstones, "list", "tombstones in force")
    lift = sub(tombstones, "lift", "allow a forgotten fact to be learned again")
    lift.add_argument("id", type=_identifier("tombstone id"))

    recall = sub(commands, "recall", "the facts retrieval would use in a reply there, with scores")
    recall.add_argument("query")
    recall.add_argument("--where", required=True, metavar="WHERE")
    recall.add_argument("--limit", type=_positive, default=10)

    explain = sub(commands, "explain", "what went into one of the familiar's replies (layers, lore, facts, drops)")
    explain.add_argument("turn_id", type=_identifier("turn id"), metavar="TURN_ID")
    for name, help_text in (("pause", "pause learning or recall"), ("resume", "resume learning or recall")):
        switch = sub(commands, name, f"{help_text}, everywhere or in one place (kept across restarts)")
        switch.add_argument("kind", choices=("learning", "recall"))
        switch.add_argument("--where", default="*", metavar="WHERE", help="a place (default: everywhere)")
    memory = actions("memory", "the background memory workers", "memory_command")
    sub(memory, "status", "which workers run, what is paused, queued and failed work")

    index = actions("index", "the search indexes", "index_command")
    sub(index, "status", "commit health, lag and pending documents of each index")
    sub(index, "rebuild", "rebuild the indexes from the store, with progress (--json: JSON lines)")
    sub(index, "reembed", "compute every fact's embedding again with the active model, with progress")

    export = sub(commands, "export", "write the whole memory (turns, facts, tombstones, lore) as JSON lines")
    export.add_argument("file", type=Path)
    export.add_argument(
        "--with-tombstone-key",
        action="store_true",
        help="also write the tombstone key, so the tombstones block where the file is imported"
        " (anyone holding the file can then test guesses of forgotten texts)",
    )
    imported = sub(commands, "import", "read an export into an empty familiar")
    imported.add_argument("file", type=Path)

    shot = _takes_familiar(
        commands.add_parser("screenshot", help="render the window offscreen on one pane, over this familiar's data")
    )
    shot.add_argument("--pane", required=True, metavar="NAME", help="the pane to show (dashboard, chat, ...)")
    shot.add_argument("--out", required=True, type=Path, metavar="FILE.png", help="where to write the PNG")
    shot.add_argument("--size", type=_size, default=DEFAULT_SCREENSHOT_SIZE, metavar="WxH", help="default 1100x700")

    lore = actions("lore", "the lorebook (lorebook.toml)", "lore_command")
    lore_import = sub(
        lore, "import", "add the entries of SillyTavern World Info or a V2/V3 card's lorebook (JSON or PNG)"
    )
    lore_import.add_argument("file", type=Path)
    lore_import.add_argument("--replace", action="store_true", help="replace the entries instead of adding")
    lore_import.add_argument(
        "--update", action="store_true", help="also update the entries the book has in another version"
    )
    lore_export = sub(lore, "export", "write the lorebook as st (World Info), ccv2 (character_book) or ccv3")
    lore_export.add_argument("file", type=Path)
    lore_export.add_argument("--format", choices=("st", "ccv2", "ccv3"), required=True)
    lore_try = sub(lore, "try", "which entries fire for sample messages (oldest first), on which key, and why not")
    lore_try.add_argument("text", nargs="*", metavar="TEXT")
    lore_try.add_argument("--where", metavar="WHERE", help="over the last messages of this place instead")
    lore_try.add_argument("--last", type=int, default=20, metavar="N", help="with --where: how many (default 20)")
    lore_try.add_argument("--seed", type=int, metavar="N", help="the seed of the probability and group rolls")
    lore_timed = sub(lore, "timed", "the timed effects (sticky, cooldown) of the lore, per place")
    lore_timed.add_argument("--where", metavar="WHERE", help="in this place only")
    lore_timed.add_argument("--clear", action="store_true", help="end them")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _main(args)
    except Exception as exc:
        # A full disk can refuse any write of any command (opening a familiar writes too): one line, no
        # traceback, naming where to free space.
        if (full := disk_full_problem(exc, _folder(args))) is None:
            raise
        error(full)
        return EXIT_FAILURE


def _folder(args: argparse.Namespace) -> Path:
    """The folder of the familiar the command is about (the data folder when there is none)."""
    if args.command != "new":
        with contextlib.suppress(ConfigError):
            return familiar_paths("default" if args.familiar is None else args.familiar).folder
    return data_root()


def _main(args: argparse.Namespace) -> int:
    if args.self_test:
        from app.self_test import run_self_test

        return run_self_test()
    window = args.command is None or (args.command == "run" and not args.headless)
    if window:
        # Before anything loads Qt or creates a familiar, or its log folder: a window that cannot open leaves
        # nothing behind.
        from app.platform_check import window_problem

        if (problem := window_problem()) is not None:
            error(problem)
            return EXIT_FAILURE
    # Terminal output is the command's answer; everything logged goes to the log file (app/logs.py).
    logs = configure_logging("window" if window else "headless" if args.command == "run" else "command")
    try:
        if args.command == "new" or (args.command == "card" and args.card_command == "import"):
            return _create(args)
        paths = familiar_paths("default" if args.familiar is None else args.familiar)
        if window and args.familiar is None and not list_familiars(paths.root):
            # The very first launch: "default" is created to open (an unwritable data folder is
            # explained by the window's own check, in a dialog too).
            with contextlib.suppress(OSError):
                create_familiar(paths)
        elif args.command == "run" and args.familiar is None and not list_familiars(paths.root):
            # The first headless run on a server set up with environment variables only: as the window's
            # first launch, "default" is made from the template, and the console says so once.
            try:
                create_familiar(paths)
            except OSError as exc:
                raise ConfigError(paths.folder, None, None, f"cannot create the familiar 'default': {exc}") from None
            _log.info(
                "no familiar yet: created 'default' in %s from the template (its character.md and"
                " character.toml are yours to edit)",
                paths.folder,
            )
        else:
            require_familiar(paths)
    except ConfigError as exc:
        error(str(exc))
        return EXIT_CONFIG
    if window:
        from app.bootstrap import run_window  # imports Qt only when a window is wanted

        return run_window(paths, pane=args.pane)
    if args.command == "screenshot":
        from app.bootstrap import run_screenshot

        return run_screenshot(paths, args.pane, args.out, args.size)
    if args.command == "run":
        from app.bootstrap import run_headless

        return run_headless(paths, logs)
    if args.command == "lore":
        return _lore(paths, args)
    if args.command == "card":
        return _card_export(paths, args)
    action = getattr(args, f"{args.command}_command", None)
    handler = _COMMANDS[(args.command, action)]
    return asyncio.run(_with_familiar(paths, args, handler))


Handler: TypeAlias = "Callable[[Familiar, argparse.Namespace], Awaitable[tuple[Any, str]]]"


# Commands that only read the memory: opening for them writes nothing it need not, so they answer beside
# a running familiar on a full disk, and on a full disk with none running too (app.memory.store).
_READING: frozenset[tuple[str, str | None]] = frozenset(
    {
        ("turns", "search"),
        ("facts", "list"),
        ("facts", "show"),
        ("tombstones", "list"),
        ("recall", None),
        ("explain", None),
        ("memory", "status"),
        ("index", "status"),
        ("export", None),
    }
)


def _reads_only(args: argparse.Namespace) -> bool:
    if args.command == "lore":
        return args.lore_command == "try" or (args.lore_command == "timed" and not args.clear)
    return (args.command, getattr(args, f"{args.command}_command", None)) in _READING


async def _with_familiar(paths: FamiliarPaths, args: argparse.Namespace, handler: Handler) -> int:
    familiar = await open_or_explain(paths, reading=_reads_only(args))
    if isinstance(familiar, int):
        return familiar
    try:
        document, text = await handler(familiar, args)
    except (FamiliarError, ValueError) as exc:
        error(str(exc))
        return EXIT_FAILURE
    finally:
        await familiar.close()
    if getattr(args, "json", False):
        output_json(json.dumps(document, ensure_ascii=False, default=_json_default))
    else:
        output(text)
    return EXIT_OK


def _lines(lines: Iterable[str]) -> str:
    """A human-readable result, one line per item: each line escaped whole (app.console), so text from
    Discord, an LLM or an imported file can neither drive the terminal nor start a line of its own."""
    return "\n".join(escape(line) for line in lines)


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _fact_dict(fact: FactView) -> dict[str, Any]:
    """A fact as the memory commands print it: keys, which scripts match on (and the place's name beside its
    key, as the readable lines show it)."""
    return {
        "id": fact.id,
        "content": fact.content,
        "type": fact.type,
        "importance": fact.importance,
        "confidence": fact.confidence,
        "subjects": [s.key for s in fact.subjects],
        "speaker": fact.speaker.key if fact.speaker is not None else None,
        "scope": fact.scope.key,
        "scope_name": fact.scope.name,
        "status": fact.status,
        "revision": fact.revision,
        "origin": fact.origin,
        "created_at": _iso(fact.created_at),
        "superseded_at": _iso(fact.superseded_at),
        "superseded_by": fact.superseded_by,
        "valid_from": _iso(fact.valid_from),
        "valid_to": _iso(fact.valid_to),
        "snoozed_until": _iso(fact.snoozed_until),
        "source_turn_ids": list(fact.source_turn_ids),
        "snoozed": fact.snoozed(datetime.now(UTC)),
    }


def _fact_line(fact: FactView) -> str:
    time_axis = ""
    if fact.valid_from or fact.valid_to:
        start = fact.valid_from.date().isoformat() if fact.valid_from else "…"
        end = fact.valid_to.date().isoformat() if fact.valid_to else "…"
        time_axis = f" [{start} → {end}]"
    retired = ""  # as of a recorded time, a version superseded only later reads as not superseded
    if fact.superseded_at is not None and fact.superseded_by is not None:
        retired = f" (superseded at {fact.superseded_at.isoformat()} by #{fact.superseded_by})"
    elif fact.superseded_at is not None:
        retired = f" (set aside at {fact.superseded_at.isoformat()}: the message it came from was edited)"
    if fact.snoozed(datetime.now(UTC)) and fact.snoozed_until is not None:
        retired += f" (snoozed until {fact.snoozed_until.isoformat()})"
    head = f"#{fact.id} r{fact.revision} {fact.status:<8} {fact.type:<10} {fact.scope.name}:"
    return escape(f"{head} {fact.content}{time_axis}{retired}")


# -- handlers ---------------------------------------------------------------------------------------
async def _turns_search(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    await familiar.indexes.catch_up()
    hits = await familiar.search_turns(args.query, args.limit)
    document = {
        "query": args.query,
        "hits": [
            {
                "turn_id": h.turn_id,
                "where": h.where,
                "where_name": h.place.name,
                "author": h.author,
                "content": h.content,
                "created_at": h.created_at.isoformat(),
                "score": round(h.score, 4),
            }
            for h in hits
        ],
    }
    lines = [f"#{h.turn_id} {h.created_at:%Y-%m-%d %H:%M} {h.place.name}, {h.author}: {h.content}" for h in hits]
    return document, _lines(lines) if lines else "no turns found"


async def _facts_list(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    as_of = args.world_at is not None or args.recorded_at is not None
    if args.include_snoozed and args.status != "pending":
        raise ValueError("--include-snoozed goes with --status pending")
    document: dict[str, Any] = {"status": args.status, "world_at": args.world_at, "recorded_at": args.recorded_at}
    note = ""
    if args.status == "pending" and not as_of:
        # The owner's queue: oldest first, a snoozed fact hidden until its snooze ends.
        queue = await familiar.memory.pending(
            include_snoozed=args.include_snoozed, subject=args.subject, limit=args.limit
        )
        facts = [item.fact for item in queue.items]
        hidden = 0 if args.include_snoozed else queue.snoozed
        document["include_snoozed"] = args.include_snoozed
        document["snoozed_hidden"] = hidden
        if hidden:
            note = f"({hidden} snoozed, not shown: --include-snoozed shows them)"
    else:
        facts = await familiar.memory.list_facts(
            status=args.status,
            subject=args.subject,
            world_at=args.world_at,
            recorded_at=args.recorded_at,
            limit=args.limit,
        )
    document["facts"] = [_fact_dict(f) for f in facts]
    lines = [_fact_line(f) for f in facts] or ["no facts"]
    return document, _lines([*lines, note] if note else lines)


async def _facts_show(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    detail = await familiar.memory.fact(args.id, recorded_at=args.recorded_at)
    fact = detail.fact
    document = {
        "recorded_at": args.recorded_at,
        "fact": _fact_dict(fact),
        "revision": fact.revision,
        "head_id": detail.head_id,
        "chain": [_fact_dict(f) for f in detail.versions],
        "sources": [
            {
                "turn_id": t.turn_id,
                "where": t.place.key,
                "where_name": t.place.name,
                "author": t.author.name,
                "content": t.content,
                "redacted": t.redacted,
            }
            for t in detail.sources
        ],
        "may_duplicate_or_supersede": [
            _fact_dict(r.fact) | {"relation": r.relation, "reason": r.reason} for r in detail.related
        ],
    }
    lines = [_fact_line(f) for f in detail.versions]
    lines += [
        f"  source #{t.turn_id} {t.place.name}, {t.author.name}: {t.content or '(redacted)'}" for t in detail.sources
    ]
    lines += [
        f"  {'would duplicate' if r.relation == 'duplicates' else 'could replace'} ({r.reason}): {_fact_line(r.fact)}"
        for r in detail.related
    ]
    return document, _lines(lines)


async def _facts_remember(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    remembered = await familiar.memory.remember(
        args.text,
        args.where,
        subjects=tuple(args.subject),
        fact_type=args.type,
        valid_from=args.valid_from,
        valid_to=args.valid_to,
    )
    prefix = "already known as " if remembered.outcome == "duplicate" else "remembered "
    return {"outcome": remembered.outcome, "fact": _fact_dict(remembered.fact)}, prefix + _fact_line(remembered.fact)


def _owner_action(name: str) -> Handler:
    async def handler(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
        memory = familiar.memory
        if name == "accept":
            fact = await memory.accept(args.id, args.revision)
        elif name == "reject":
            fact = await memory.reject(args.id, args.revision)
        elif name == "snooze":
            fact = await memory.snooze(args.id, args.revision, args.until)
        elif name == "archive":
            fact = await memory.archive(args.id, args.revision)
        else:
            fact = await memory.edit(args.id, args.revision, args.text)
        return {"fact": _fact_dict(fact)}, _fact_line(fact)

    return handler


async def _forget(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    # Out of search at once; the words also leave the index files before the forget returns (or, while
    # the familiar runs elsewhere, within seconds in that process).
    receipt = await familiar.memory.forget(args.id, revision=args.revision, redact_sources=args.redact_sources)
    purged = receipt.index_files
    document = {
        "fact_ids": list(receipt.fact_ids),
        "tombstone_id": receipt.tombstone_id,
        "erased_from": [{"store": store, "count": count} for store, count in receipt.stores],
        "redacted_turn_ids": list(receipt.redacted_turn_ids),
        "redacted_reply_ids": list(receipt.redacted_reply_ids),
        "index_files": {name: _PURGE_JSON[p.status] for name, p in purged.items()},
    }
    lines = [f"forgot fact(s) {', '.join(map(str, receipt.fact_ids))}; tombstone #{receipt.tombstone_id}"]
    lines += [f"  erased from {store}: {count}" for store, count in receipt.stores]
    if args.redact_sources:
        lines.append(f"  redacted messages: {_turn_list(receipt.redacted_turn_ids)}")
        lines.append(f"  redacted replies of the familiar quoting them: {_turn_list(receipt.redacted_reply_ids)}")
    lines += [f"  index files of {name}: {_PURGE_TEXT[p.status]}" for name, p in purged.items()]
    lines += [f"  ({p.reason})" for p in purged.values() if p.reason]
    return document, _lines(lines)


def _turn_list(turn_ids: Sequence[int]) -> str:
    return ", ".join(f"T#{t}" for t in turn_ids) or "none"


_PURGE_JSON = {
    "purged": "purged",
    "running": "purged by the running familiar",
    "pending": "pending: the index is locked",
}
_PURGE_TEXT = {
    "purged": "purged",
    "running": "purged by the running familiar within seconds",
    "pending": "not yet: the index is locked; they leave its files once it is free (searches already leave them out)",
}


async def _tombstones_list(familiar: Familiar, _args: argparse.Namespace) -> tuple[Any, str]:
    stones = await familiar.memory.tombstones()
    document = {"tombstones": [_tombstone_dict(t) for t in stones]}
    lines = [
        f"#{t.id} {t.created_at:%Y-%m-%d %H:%M} {t.reason} ({t.hash[:12]}…)"
        + ("" if t.can_block else " — cannot block: its key is not on this machine")
        for t in stones
    ]
    return document, _lines(lines) or "no tombstones"


async def _tombstones_lift(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    stone = await familiar.memory.lift_tombstone(args.id)
    return {"tombstone": _tombstone_dict(stone)}, f"tombstone #{stone.id} lifted"


def _tombstone_dict(stone: TombstoneView) -> dict[str, Any]:
    """Content-free: a keyed hash, never the forgotten text."""
    return {
        "id": stone.id,
        "hash": stone.hash,
        "reason": stone.reason,
        "created_at": stone.created_at,
        "lifted_at": stone.lifted_at,
        "can_block": stone.can_block,
    }


async def _place_names(familiar: Familiar, keys: Iterable[str]) -> dict[str, str]:
    """Each place key by the name the window shows ("Lantern Club #general"); "*" is everywhere."""
    wanted = sorted({key for key in keys if key != "*"})
    named = {ref.key: ref.name for ref in await familiar.memory.places(wanted)} if wanted else {}
    return named | {"*": "everywhere"}


def _switches_text(chosen: Sequence[str], names: dict[str, str]) -> str:
    return ", ".join(names.get(key, key) for key in chosen) or "nowhere"


def _recall_paused_text(where: str, source: str | None, names: dict[str, str]) -> str:
    """Why recall answers nothing at `where` (by name), and the command that resumes it (by key)."""
    if source == "everywhere":
        return f"recall is paused everywhere: nothing is recalled in {names[where]} (familiar resume recall)"
    if source == "server":
        server = where.split("/", 1)[0]
        return (
            f"recall is paused in {names[where]} by its server's switch ({names[server]}): nothing is recalled"
            f" there (familiar resume recall --where {server})"
        )
    return f"recall is paused in {names[where]}: nothing is recalled there (familiar resume recall --where {where})"


async def _recall(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    await familiar.indexes.catch_up()
    scored = await familiar.memory.recall(args.query, args.where, args.limit)  # none while paused there
    switch = (await familiar.controls.state()).switch("recall", args.where)
    document = {
        "query": args.query,
        "where": args.where,
        "recall_paused": switch.paused,
        "paused_by": switch.source,
        "facts": [
            {
                **_fact_dict(s.fact),
                "score": round(s.score, 4),
                "signals": {k: None if v is None else round(v, 4) for k, v in s.signals.items()},
            }
            for s in scored
        ],
    }
    if switch.paused:
        names = await _place_names(familiar, (args.where, args.where.split("/", 1)[0]))
        return document, escape(_recall_paused_text(args.where, switch.source, names))
    return document, _lines(f"{s.score:.3f} {_fact_line(s.fact)}" for s in scored) or "nothing to recall"


async def _explain(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    found = await familiar.explain(args.turn_id)
    lines = [f"reply turn {args.turn_id} in {found.place.name} ({found.tier} budgets)"]
    for layer in found.layers:
        cached = " (cached)" if layer.cached else ""
        note = f" - {layer.note}" if layer.note else ""
        lines.append(f"  {layer.name:<12} {layer.tokens:>5} / {layer.budget} tokens{cached}{note}")
    for entry in found.lore:
        step = f", recursion step {entry.step}" if entry.step else ""
        lines.append(f"  lore: {entry.title or entry.index + 1} (fired by {entry.key!r}{step})")
    for drop in found.lore_dropped:
        lines.append(f"  lore left out: {drop.title or drop.index + 1} ({drop.key!r}): {drop.reason}, {drop.detail}")
    for fact in found.facts:
        lines.append(f"  fact #{fact.fact_id} score {fact.score:.3f}: {fact.content}")
    for turn in found.turns:
        lines.append(f"  older message T#{turn.turn_id} score {turn.score:.3f}")
    for dropped in found.dropped:
        if dropped.layer == "lorebook" and "index" in dropped.details:
            continue  # said above
        what = ", ".join(f"{k}={v}" for k, v in dropped.details.items() if k != "signals")
        lines.append(f"  dropped from {dropped.layer} ({dropped.reason}): {what}")
    return _explanation_dict(found), _lines(lines)


def _explanation_dict(found: Explanation) -> dict[str, Any]:
    return {
        "turn_id": found.turn_id,
        "explanation_id": found.explanation_id,
        "place": found.place.key,
        "place_name": found.place.name,
        "created_at": found.created_at.isoformat(),
        "tier": found.tier,
        "recall_paused": found.recall_paused,
        "assembly_ms": found.assembly_ms,
        "layers": [
            {
                "name": layer.name,
                "tokens": layer.tokens,
                "budget": layer.budget,
                "cached": layer.cached,
                **({"note": layer.note} if layer.note else {}),
            }
            for layer in found.layers
        ],
        "lorebook": [dataclasses.asdict(entry) for entry in found.lore],
        "lorebook_dropped": [dataclasses.asdict(entry) for entry in found.lore_dropped],
        "lorebook_activation": {
            "seed": found.lore_seed,
            "clock": found.lore_clock,
            "steps": [list(step) for step in found.lore_steps],
        },
        "facts": [
            {
                "fact_id": f.fact_id,
                "score": f.score,
                "signals": dict(f.signals),
                "content": f.content,
                "status": f.status,
            }
            for f in found.facts
        ],
        "turns": [{"turn_id": t.turn_id, "score": t.score, "signals": dict(t.signals)} for t in found.turns],
        "dropped": [{"layer": d.layer, **d.details, "reason": d.reason} for d in found.dropped],
    }


def _pause_action(paused: bool) -> Handler:
    async def handler(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
        switch = familiar.controls.pause if paused else familiar.controls.resume
        state = await switch(args.kind, args.where)
        document = {"learning": list(state.learning), "recall": list(state.recall)}
        names = await _place_names(familiar, (args.where, *state.learning, *state.recall))
        verb = "paused" if paused else "resumed"
        where = "everywhere" if args.where == "*" else f"in {names[args.where]}"
        text = f"{args.kind} {verb} {where}. Paused now: learning {_switches_text(state.learning, names)};"
        return document, f"{text} recall {_switches_text(state.recall, names)}"

    return handler


async def _memory_status(familiar: Familiar, _args: argparse.Namespace) -> tuple[Any, str]:
    workers = await familiar.controls.workers()
    state, failed = workers.pause, workers.failed
    names = await _place_names(familiar, (*state.learning, *state.recall, *(w.place for w in failed if w.place)))
    document = {
        "projectors": list(workers.projectors),
        "paused": {"learning": list(state.learning), "recall": list(state.recall)},
        "queued_work": workers.queued,
        "failed_work": [
            {
                "id": w.id,
                "kind": w.kind,
                "turn_id": w.turn_id,
                "place": w.place,
                "place_name": names.get(w.place) if w.place else None,
                "attempts": w.attempts,
                "last_error": w.last_error,
            }
            for w in failed
        ],
    }
    lines = [
        f"memory workers: {', '.join(workers.projectors) or 'none'}",
        f"learning paused: {_switches_text(state.learning, names)};"
        f" recall paused: {_switches_text(state.recall, names)}",
        f"queued work: {workers.queued}; failed work: {len(failed)}",
        *(
            f"  failed {w.kind} of T#{w.turn_id} in {names.get(w.place or '', w.place)} after {w.attempts} attempts:"
            f" {w.last_error}"
            for w in failed
        ),
    ]
    return document, _lines(lines)


async def _index_status(familiar: Familiar, _args: argparse.Namespace) -> tuple[Any, str]:
    reports = await familiar.indexes.status()
    embeddings = await familiar.indexes.embeddings()
    # pending: documents SQL has that the index does not yet (to add + to remove), counted in SQL now;
    # lag: rows (ids) the index's watermark is behind SQL's newest row.
    document = {
        "indexes": [
            {
                **{
                    k: v
                    for k, v in dataclasses.asdict(r).items()
                    if k not in ("state", "to_add", "to_remove", "health_state", "state_line")
                },
                "state": r.health_state,
                "pending_to_add": r.to_add,
                "pending_to_remove": r.to_remove,
            }
            for r in reports
        ],
        "embeddings": {**dataclasses.asdict(embeddings), "missing": embeddings.missing},
    }
    lines = [
        f"{h.name}: {h.state_line}; {h.commits} commits, {h.retries} retries, {h.failures} failures,"
        f" pending {h.pending} documents ({h.to_add} to add, {h.to_remove} to remove),"
        f" lag {h.lag} rows behind SQL"
        # Locked, the state line says which attempt it is on; a commit's own retry is another count.
        + (f", retrying (attempt {h.live_attempt})" if h.live_attempt and h.health_state != "locked" else "")
        + (", the disk is full: it takes new documents once there is room" if h.disk_full else "")
        + (f", {h.awaiting_purge} removed documents await compaction" if h.awaiting_purge else "")
        + (f", last error: {h.last_error}" if h.last_error and h.health_state != "locked" else "")
        + _index_figures(h)
        for h in reports
    ]
    lines.append(f"embeddings: {embeddings.state_line}" + _embedding_figures(embeddings))
    return document, _lines(lines)


def _index_figures(view: IndexStatusView) -> str:
    figures = f"; {view.indexed if view.indexed is not None else 'unknown'} of {view.source_rows} documents indexed"
    if view.last_commit_at is not None:
        figures += f", last commit {view.last_commit_at.isoformat(timespec='seconds')}"
    if view.recovered_after:
        figures += f", the last lock refused {view.recovered_after} tries"
    if view.size_bytes is not None:
        figures += f", {view.size_bytes} bytes on disk"
    return figures


def _embedding_figures(view: EmbeddingStatusView) -> str:
    figures = f"; {view.covered} of {view.facts} current facts have a vector" if view.model is not None else ""
    unused = [f"{m.model} ({m.vectors})" for m in view.models if not m.active and not m.reembedding]
    if unused:
        figures += f"; unused vectors of {', '.join(unused)}"
    return figures


async def _index_rebuild(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    """With --json, JSON lines on stdout as the rebuild goes (start, then progress after each commit,
    always a last exact one), then the result object; without, the same progress on stderr."""

    def progress(step: RebuildProgress) -> None:
        if args.json:
            output_json(json.dumps(dataclasses.asdict(step)))
        elif step.event == "start":
            sys.stderr.write(f"rebuilding {step.index} index: {step.total} documents\n")
        else:
            sys.stderr.write(f"{step.index} index: {step.done}/{step.total} documents ({step.percent:.0f}%)\n")
        sys.stderr.flush()

    counts = await familiar.indexes.rebuild(steps=progress)
    document = {"event": "result", "rebuilt": counts}
    return document, ", ".join(f"{name} index rebuilt: {n} documents" for name, n in counts.items())


async def _index_reembed(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    """Progress on stderr as it goes (a line per tenth of the way); the count at the end."""
    shown: list[int] = []

    def progress(step: Progress) -> None:
        tenth = int((step.fraction or 0.0) * 10)
        if not shown or tenth > shown[-1]:
            shown.append(tenth)
            sys.stderr.write(f"{step.label}: {step.done}/{step.total} facts\n")
            sys.stderr.flush()

    count = await familiar.indexes.reembed(None if args.json else progress)
    model = familiar.embedder.name if familiar.embedder is not None else ""
    return {"model": model, "reembedded": count}, f"re-embedded {count} facts with {model}"


async def _export(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    with_key = bool(args.with_tombstone_key)
    counts = await familiar.memory.export(args.file, with_tombstone_key=with_key)
    stones = counts.get("tombstone", 0)
    if with_key:
        note = (
            "the tombstone key is in the file: anyone holding it can test guesses of forgotten texts;"
            " keep it as private as a password"
        )
    elif stones:
        note = (
            "the tombstone key is not in the file: its tombstones block only where the key already is"
            " (a familiar of this machine); add --with-tombstone-key to take it along"
        )
    else:
        note = "the tombstone key is not in the file (it has no tombstones)"
    document = {"file": str(args.file), "records": counts, "tombstone_key": "included" if with_key else "not included"}
    text = escape(f"exported to {args.file}: ") + ", ".join(f"{n} {kind}" for kind, n in counts.items())
    return document, f"{text}\n{note}"


async def _import(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    counts = await familiar.memory.import_(args.file)
    inert = sum(1 for t in await familiar.memory.tombstones() if not t.can_block)
    document = {"file": str(args.file), "records": counts, "tombstones_that_cannot_block": inert}
    text = escape(f"imported {args.file}: ") + ", ".join(f"{n} {kind}" for kind, n in counts.items())
    if inert:
        text += (
            f"\n{inert} tombstone(s) came without the key they were made with: kept, but they cannot stop"
            " forgotten facts being learned again here (export with --with-tombstone-key to bring the key)"
        )
    return document, text


_COMMANDS: dict[tuple[str, str | None], Handler] = {
    ("turns", "search"): _turns_search,
    ("facts", "list"): _facts_list,
    ("facts", "show"): _facts_show,
    ("facts", "remember"): _facts_remember,
    ("facts", "accept"): _owner_action("accept"),
    ("facts", "reject"): _owner_action("reject"),
    ("facts", "snooze"): _owner_action("snooze"),
    ("facts", "archive"): _owner_action("archive"),
    ("facts", "edit"): _owner_action("edit"),
    ("forget", None): _forget,
    ("tombstones", "list"): _tombstones_list,
    ("tombstones", "lift"): _tombstones_lift,
    ("recall", None): _recall,
    ("explain", None): _explain,
    ("pause", None): _pause_action(True),
    ("resume", None): _pause_action(False),
    ("memory", "status"): _memory_status,
    ("index", "status"): _index_status,
    ("index", "rebuild"): _index_rebuild,
    ("index", "reembed"): _index_reembed,
    ("export", None): _export,
    ("import", None): _import,
}


# -- lorebook commands: files only (but try --where and timed), so a broken character.toml does not stop them -
def _lore(paths: FamiliarPaths, args: argparse.Namespace) -> int:
    from app.lore.book import LorebookError
    from app.lore.formats import LorebookFormatError

    if args.lore_command == "timed" or (args.lore_command == "try" and args.where is not None):
        if args.lore_command == "try" and args.text:
            error("lore try takes texts or --where, not both")
            return EXIT_FAILURE
        handler = _lore_timed if args.lore_command == "timed" else _lore_try_place
        try:
            return asyncio.run(_with_familiar(paths, args, handler))
        except LorebookError as exc:
            error(str(exc))
            return EXIT_CONFIG
    handlers = {"import": _lore_import, "export": _lore_export, "try": _lore_try}
    try:
        document, text = handlers[args.lore_command](paths, args)
    except LorebookError as exc:  # lorebook.toml itself: a config problem naming the line and key
        error(str(exc))
        return EXIT_CONFIG
    except (LorebookFormatError, FamiliarError) as exc:
        error(str(exc))
        return EXIT_FAILURE
    if args.json:
        output_json(json.dumps(document, ensure_ascii=False))
    else:
        output(text)
    return EXIT_OK


def _lore_problems(book: Any) -> tuple[list[dict[str, Any]], list[str]]:
    from app.lore.book import describe_problem

    problems = [dataclasses.asdict(p) for p in book.problems]
    return problems, [f"problem: {describe_problem(p)}" for p in book.problems]


def _lore_import(paths: FamiliarPaths, args: argparse.Namespace) -> tuple[Any, str]:
    from app.runtime.api.lore import import_into

    report = import_into(args.file, paths.lorebook_toml, replace=args.replace, update=args.update)
    problems, problem_lines = _lore_problems(report.book)
    document = {
        "file": str(args.file),
        "format": report.imported.format,
        "source": report.imported.source,
        "imported": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "changed_kept": report.changed_kept,
        "replaced": report.replaced,
        "entries": len(report.book.entries),
        "lorebook": str(paths.lorebook_toml),
        "problems": problems,
    }
    verb = f"replaced {report.replaced} entries with" if args.replace else "added"
    lines = [
        f"{verb} {report.added} entries from {args.file} ({report.imported.source}); "
        f"{paths.lorebook_toml} now has {len(report.book.entries)}"
    ]
    if report.updated:
        lines.append(f"updated {report.updated} entries to the file's version")
    if report.unchanged:
        lines.append(f"skipped {report.unchanged} entries the lorebook already has as they are")
    if report.changed_kept:
        lines.append(f"kept {report.changed_kept} entries the file has in another version (--update takes theirs)")
    return document, _lines([*lines, *problem_lines])


def _lore_export(paths: FamiliarPaths, args: argparse.Namespace) -> tuple[Any, str]:
    from app.lore.formats import export_file

    count = export_file(paths.lorebook_toml, args.file, args.format)
    document = {"file": str(args.file), "format": args.format, "entries": count}
    return document, escape(f"exported {count} entries to {args.file} ({args.format})")


def _lore_try(paths: FamiliarPaths, args: argparse.Namespace) -> tuple[Any, str]:
    from app.config.settings import BudgetTier, load_settings
    from app.lore.book import load_lorebook
    from app.lore.scanner import LoreScanner
    from app.runtime.api.lore import text_seed, trial

    if not args.text:
        raise FamiliarError("lore try needs texts to try, or --where WHERE for a place's last messages")
    book = load_lorebook(paths.lorebook_toml)
    try:  # the budget and the name in force, when character.toml reads (lore commands do not need it)
        settings = load_settings(paths.character_toml)
        tier: BudgetTier = getattr(settings.budget, settings.budget.tier)
        name = settings.familiar.display_name
    except ConfigError:
        tier, name = BudgetTier(), paths.name
    seed = args.seed if args.seed is not None else text_seed(args.text)
    scanner = LoreScanner(book)
    tried = trial(book, args.text, seed=seed, tier=tier, char=name, scanner=scanner)
    return _trial_output(tried, book, scanner.disabled)


async def _lore_try_place(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    tried = await familiar.lore.try_place(args.where, args.last, seed=args.seed)
    return _trial_output(tried, familiar.lore.book_in_use(), familiar.lore.disabled_keys())


def _trial_output(tried: Any, book: Any, disabled: Sequence[Any]) -> tuple[Any, str]:
    from app.lore.book import describe_entry

    contents = {entry.index: entry.content for entry in book.entries}

    def where(span: Any) -> str:
        if span is None:
            return ""
        if span.source == "lore":
            return f" in the content of entry {span.entry + 1}"
        number = (span.position or 0) + 1
        if span.source == "text":
            return f" in text {number} at {span.start}-{span.end}"
        if span.source == "author":
            return f" in the author's name of message {number}"
        return f" in message {number} at {span.start}-{span.end}"

    def step(number: int) -> str:
        return f" (recursion step {number})" if number else ""

    document = {
        "texts": list(tried.texts),
        "seed": tried.seed,
        "clock": tried.clock,
        "matches": [{**dataclasses.asdict(f), "content": contents.get(f.index, "")} for f in tried.fired],
        "dropped": [dataclasses.asdict(d) for d in tried.dropped],
        "steps": [list(s) for s in tried.steps],
        "tokens": tried.tokens,
        "budget": tried.budget,
        "problems": [dataclasses.asdict(p) for p in (*book.problems, *disabled)],  # disabled: over their time
    }
    lines = [
        f'{describe_entry(f.index, f.title)} (priority {f.priority}) fired on "{f.key}"'
        + (f', secondary "{f.secondary}"' if f.secondary is not None else "")
        + where(f.span)
        + step(f.step)
        for f in tried.fired
    ]
    lines += [
        f'{describe_entry(d.index, d.title)} matched "{d.key}" but is left out: {d.reason} ({d.detail})'
        for d in tried.dropped
    ]
    lines = (lines or ["no entry fires"]) + [f"problem: {line}" for line in tried.problems]
    lines.append(f"seed {tried.seed}, message {tried.clock}, {tried.tokens} of {tried.budget} tokens")
    return document, _lines(lines)


async def _lore_timed(familiar: Familiar, args: argparse.Namespace) -> tuple[Any, str]:
    if args.clear:
        cleared = await familiar.lore.clear_timed(args.where)
        return {"cleared": cleared, "where": args.where}, f"ended {cleared} timed effects"
    effects = await familiar.lore.timed(args.where)
    document = {
        "effects": [
            {
                "place": e.place.key,
                "entry": e.entry,
                "title": e.title,
                "kind": e.kind,
                "start": e.start,
                "end": e.end,
                "key": e.key,
            }
            for e in effects
        ]
    }
    lines = [
        f'{e.place.name}: "{e.title}" {e.kind} after message {e.start}'
        + (" for good" if e.end is None else f" to message {e.end}")
        for e in effects
    ]
    return document, _lines(lines or ["no timed effects"])


# -- creating familiars, and character cards: files only, no store ------------------------------------
def _create(args: argparse.Namespace) -> int:
    """`familiar new NAME` and `familiar card import FILE [--as NAME]`."""
    from app.runtime.cards import CardError, CardNameError, create_familiar_from_card

    root = data_root()
    try:
        if args.command == "new":
            paths = familiar_paths(args.name)
            create_familiar(paths)
            document: dict[str, Any] = {"name": paths.name, "folder": str(paths.folder)}
            text = f"created familiar '{paths.name}' in {paths.folder}"
        else:
            made = create_familiar_from_card(args.file, root, args.name)
            document = {
                "name": made.name,
                "folder": str(made.folder),
                "source": made.source,
                "display_name": made.display_name,
                "lore_entries": made.entries,
                "greeting": made.has_greeting,
                "image": made.has_image,
            }
            text = (
                f"created familiar '{made.name}' from {made.source} {args.file}: {made.display_name}'s persona "
                f"in character.md, {made.entries} lore entries in lorebook.toml, under {made.folder}"
            )
    except FamiliarExistsError as exc:
        hint = " (--as NAME gives it another name)" if args.command == "card" else ""
        error(f"{exc}; nothing was changed{hint}")
        return EXIT_CONFIG
    except CardError as exc:
        error(f"{exc} with --as NAME" if isinstance(exc, CardNameError) else str(exc))
        return EXIT_FAILURE
    except OSError as exc:
        error(f"cannot create the familiar under {root}: {exc.strerror or exc}")
        return EXIT_FAILURE
    name = document["name"]
    hint = "" if name == "default" else f" --familiar {name}"
    if args.json:
        output_json(json.dumps(document, ensure_ascii=False))
    else:
        output(f"{text}\nopen it with: familiar{hint}")
    return EXIT_OK


def _card_export(paths: FamiliarPaths, args: argparse.Namespace) -> int:
    from app.runtime.cards import CardError, write_card

    try:
        done = write_card(paths, args.file)
    except ConfigError as exc:  # character.toml, character.md or lorebook.toml, naming the line
        error(str(exc))
        return EXIT_CONFIG
    except CardError as exc:
        error(str(exc))
        return EXIT_FAILURE
    document = {"file": str(done.file), "format": done.format, "lore_entries": done.entries, "spec": "chara_card_v3"}
    chunks = f" (chara and ccv3 chunks, in {done.image})" if done.format == "png" else ""
    text = f"wrote '{paths.name}' as a Character Card V3 to {done.file}{chunks}, with {done.entries} lore entries"
    if args.json:
        output_json(json.dumps(document, ensure_ascii=False))
    else:
        output(text)
    return EXIT_OK
