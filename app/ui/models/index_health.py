"""The index health pane's tables, and the words they use.

- `IndexMetricsModel`: one row per measure (state, indexed against history.db, waiting, last commit,
  retries, ...), one column per index (messages, facts, embeddings), built by `metric_rows` from the
  view records; each cell carries its own colour and tooltip.
- `EmbeddingModelsModel`: the vectors each embedding model left, the active one marked.
- `IndexEventsModel`: what happened to the indexes while the window was open (a lock and its attempts,
  a refused commit and its retries, the recovery, a rebuild), from `health_events`.
All three hold snapshots; nothing is read from `data()`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor

from app.runtime.api.views import BackgroundTaskView, EmbeddingModelView, EmbeddingStatusView, IndexStatusView
from app.runtime.events import IndexHealthReport
from app.ui.models.base import RIGHT, Column, RecordTableModel
from app.ui.theme import AMBER, MUTED_GREY, OK_GREEN, colours, themed

EVENTS_CAPACITY: Final = 500
INDEX_TITLES: Final = {
    "turns": "Messages",
    "facts": "Facts",
    "embeddings": "Embeddings",
    # the background loops (BackgroundTaskView.name), in the events' Index column
    "index-committer-turns": "Messages",
    "index-committer-facts": "Facts",
    "memory-projectors": "Workers",
    "memory-change-poll": "Change poll",
    "lorebook-watch": "Lorebook",
    "deferred-forgets": "Forgets",
}
COMMITTER_TASKS: Final = {"turns": "index-committer-turns", "facts": "index-committer-facts"}
WORKERS_TASK: Final = "memory-projectors"
INDEX_ORDER: Final = ("turns", "facts")
NONE: Final = "none"
NOT_APPLICABLE: Final = "—"
VECTORS_NOTE: Final = "Vectors live in history.db: SQLite commits them with the facts, so none of this applies."


class Level(enum.Enum):
    """The traffic light of an index."""

    OK = "ok"
    BUSY = "busy"  # amber: locked and retrying, rebuilding, or behind
    FAILING = "failing"
    OFF = "off"

    @property
    def colour(self) -> str:
        p = colours()  # the theme in force
        return {Level.OK: p.ok, Level.BUSY: p.amber, Level.FAILING: p.error, Level.OFF: p.muted}[self]

    @property
    def tint(self) -> QColor:
        """A light background for a cell in this state."""
        p = colours()
        tints = {
            Level.OK: p.ok_background,
            Level.BUSY: p.hint_background,
            Level.FAILING: p.error_background,
            Level.OFF: p.quiet_background,
        }
        return QColor(tints[self])

    @property
    def rank(self) -> int:
        return {Level.OFF: 0, Level.OK: 1, Level.BUSY: 2, Level.FAILING: 3}[self]


_LEVELS: Final = {"ok": Level.OK, "catching_up": Level.BUSY, "failing": Level.FAILING, "off": Level.OFF}


def index_level(view: IndexStatusView) -> Level:
    return _LEVELS[view.state]


def embedding_level(view: EmbeddingStatusView) -> Level:
    return _LEVELS[view.state]


# -- words ---------------------------------------------------------------------------------------------
def clock(moment: datetime | None, *, never: str = NONE) -> str:
    """A time in the user's local time, readable ("3 Nov 14:05")."""
    if moment is None:
        return never
    local = moment.astimezone()
    return f"{local.day} {local:%b %H:%M}"


def when(moment: datetime | None, now: datetime, *, never: str = NONE) -> str:
    """`clock`, with how long ago."""
    if moment is None:
        return never
    return f"{clock(moment)} ({ago(moment, now)})"


def ago(moment: datetime, now: datetime) -> str:
    seconds = max(0, int((now - moment).total_seconds()))
    if seconds < 60:
        return "just now" if seconds < 5 else f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86_400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min ago"
    return f"{seconds // 86_400} days ago"


def size_text(size: int | None) -> str:
    if size is None:
        return "unknown"
    amount = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if amount < 1024 or unit == "GB":
            return f"{size:,} bytes" if unit == "bytes" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{size:,} bytes"  # pragma: no cover - the loop always returns


def index_title(name: str) -> str:
    return INDEX_TITLES.get(name, name.capitalize())


def state_words(view: IndexStatusView) -> str:
    """The state of a search index in a few words for a table cell."""
    if view.health_state == "locked":
        return f"Locked, retrying (attempt {view.locked_attempts})"
    if view.live_attempt:
        return f"Retrying a commit (attempt {view.live_attempt})"
    if view.health_state == "rebuilding":
        return "Rebuilding beside the old one"
    if view.health_state == "reader":
        return "Written by another Familiar process"
    if view.health_state in ("starting", "closed"):
        return view.health_state.capitalize()
    if view.state == "failing":
        return "Commits failing"
    if view.state == "catching_up":
        return "Catching up"
    return "Up to date" if not view.pending else "Indexing new text"


def embedding_state_words(view: EmbeddingStatusView) -> str:
    if view.state == "off":
        return "Off"
    if any(m.reembedding for m in view.models):
        return "Re-embedding"
    if view.state == "failing":
        return "Vectors missing"
    if view.state == "catching_up":
        return "Embedding new facts"
    return "Up to date"


def _percent(part: int, whole: int) -> str:
    if whole == 0:
        return "100%"
    share = part / whole * 100
    return f"{share:.0f}%" if part in (0, whole) or 1 <= share <= 99 else f"{share:.1f}%"


# -- the measures table --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class MetricCell:
    text: str
    tooltip: str | None = None
    level: Level | None = None  # a tinted background (the state row)
    warn: bool = False  # amber text: worth a look


@dataclass(frozen=True, slots=True)
class MetricRow:
    key: str
    label: str
    help: str  # what the measure means, as the row label's tooltip
    cells: tuple[MetricCell, ...]  # one per column after the label, in `columns` order


def _search_index_cells(view: IndexStatusView, now: datetime) -> dict[str, MetricCell]:
    waiting = view.to_add + view.to_remove
    backlog = NONE
    if waiting:
        backlog = f"{waiting:,}"
        if view.backlog_since is not None:
            backlog += f" (oldest {ago(view.backlog_since, now).removesuffix(' ago')})"
    indexed = "unknown" if view.indexed is None else f"{view.indexed:,}"
    held = f"{indexed} of {view.source_rows:,}" if view.source_rows is not None else indexed
    differs = view.indexed is not None and view.source_rows is not None and view.indexed != view.source_rows
    retries = f"{view.retries:,}" if view.retries else NONE
    if view.live_attempt:
        retries += f"; retrying now (attempt {view.live_attempt}): {view.last_error}"
    refusal = NONE
    if view.recovered_after:
        refusal = f"refused {view.recovered_after} {'try' if view.recovered_after == 1 else 'tries'}"
        refusal += f", then landed {when(view.recovered_at, now)}"
    if view.health_state == "locked":
        refusal = f"locked now (attempt {view.locked_attempts}): {view.last_error}"
    failures = f"{view.failures:,}" if view.failures else NONE
    if view.failures and view.last_error and view.health_state != "locked" and not view.live_attempt:
        failures += f"; last error: {view.last_error}"
    return {
        "state": MetricCell(state_words(view), view.state_line, index_level(view)),
        "indexed": MetricCell(
            held,
            f"{indexed} documents in the index; history.db has {view.source_rows} with text"
            + ("; it catches up by itself" if differs else ""),
            warn=differs and view.state != "ok",
        ),
        "waiting": MetricCell(
            backlog,
            f"{view.to_add:,} to add, {view.to_remove:,} to remove (counted in history.db now)",
            warn=view.state == "catching_up" and bool(waiting),
        ),
        "last_commit": MetricCell(when(view.last_commit_at, now, never="none yet")),
        "commits": MetricCell(
            f"{view.commits:,} ({view.documents_committed:,} documents)" if view.commits else NONE,
            "group commits since Familiar started, in the process that writes the index",
        ),
        "retries": MetricCell(retries, retries, warn=bool(view.live_attempt)),
        "refusal": MetricCell(
            refusal,
            refusal if view.health_state == "locked" else None,
            warn=view.health_state == "locked",
        ),
        "failures": MetricCell(failures, failures, warn=view.state == "failing"),
        "compaction": MetricCell(
            f"{view.awaiting_purge:,}" if view.awaiting_purge else NONE,
            "removed documents (forgotten or deleted) are out of every search already; their words leave the"
            " files at the next compaction, within a minute",
        ),
        "size": MetricCell(size_text(view.size_bytes), f"{view.size_bytes:,} bytes" if view.size_bytes else None),
    }


def _embedding_cells(view: EmbeddingStatusView, now: datetime) -> dict[str, MetricCell]:
    na = MetricCell(NOT_APPLICABLE, VECTORS_NOTE)
    if view.model is None:
        covered = MetricCell("off", view.state_line)
        waiting = MetricCell(NOT_APPLICABLE, view.state_line)
    else:
        covered = MetricCell(
            f"{view.covered:,} of {view.facts:,} facts ({_percent(view.covered, view.facts)})",
            f"current facts with a vector of {view.model}",
            warn=view.missing > 0 and view.state != "ok",
        )
        text = NONE
        if view.missing:
            text = f"{view.missing:,} facts"
            if view.oldest_missing_at is not None:
                text += f" (oldest {ago(view.oldest_missing_at, now).removesuffix(' ago')})"
        waiting = MetricCell(text, view.state_line, warn=view.state == "failing")
    model = view.model or "no model (off)"
    return {
        "state": MetricCell(embedding_state_words(view), f"{model}: {view.state_line}", embedding_level(view)),
        "indexed": covered,
        "waiting": waiting,
        "last_commit": MetricCell(
            when(view.last_written_at, now, never="no vector yet"), f"when a vector of {model} was last written"
        ),
        "commits": na,
        "retries": na,
        "refusal": na,
        "failures": na,
        "compaction": na,
        "size": MetricCell(
            f"{size_text(view.size_bytes)} in history.db" if view.size_bytes else NONE,
            f"the vectors of every model, {view.size_bytes:,} bytes",
        ),
    }


_ROWS: Final = (
    ("state", "State", "Green: up to date. Amber: it is catching up, retrying a lock or being rebuilt. Red: act."),
    ("indexed", "Indexed", "What the index holds, against what history.db (the source of truth) has for it."),
    ("waiting", "Waiting", "What history.db has that the index does not yet, and how long the oldest has waited."),
    ("last_commit", "Last commit", "When the index last took new documents (embeddings: the last vector written)."),
    ("commits", "Commits this run", "Group commits since Familiar started, and the documents they carried."),
    ("retries", "Retries", "Commits a lock refused and that were tried again; a retry in progress shows its attempt."),
    ("refusal", "Last lock", "A file refused for a moment (an antivirus scan on Windows): how many tries it took."),
    ("failures", "Failed commits", "Commits that could not land after every retry; history.db keeps the documents."),
    ("compaction", "Awaiting compaction", "Removed documents whose words are still in the index files."),
    ("size", "Size on disk", "What the index files take (embeddings: their vectors inside history.db)."),
)


HEADERS: Final = ("Messages", "Facts", "Embeddings")


def _unknown_cells(name: str) -> dict[str, MetricCell]:
    cell = MetricCell("unknown", f"the {name} index did not report")
    return {key: cell for key, _label, _help in _ROWS}


def stopped_tasks(tasks: Sequence[BackgroundTaskView]) -> dict[str, BackgroundTaskView]:
    """The background loops that stopped although they should run, by name."""
    return {task.name: task for task in tasks if task.problem is not None}


def metric_rows(
    indexes: Sequence[IndexStatusView],
    embeddings: EmbeddingStatusView,
    now: datetime,
    tasks: Sequence[BackgroundTaskView] = (),
) -> tuple[MetricRow, ...]:
    """The measures table: one row per measure, a cell per column of HEADERS. An index whose committer
    stopped (or embeddings whose worker stopped) shows it in its state, red."""
    by_name = {v.name: v for v in indexes}
    stopped = stopped_tasks(tasks)
    columns = [
        _search_index_cells(by_name[name], now) if name in by_name else _unknown_cells(name) for name in INDEX_ORDER
    ]
    columns.append(_embedding_cells(embeddings, now))
    owners = [COMMITTER_TASKS[name] for name in INDEX_ORDER]
    owners.append(WORKERS_TASK if embeddings.worker_enabled and embeddings.model is not None else "")
    for column, owner in zip(columns, owners, strict=True):
        task = stopped.get(owner)
        if task is not None:
            column["state"] = MetricCell("Stopped", f"{task.what} {task.problem}", Level.FAILING)
    return tuple(
        MetricRow(key, label, help_text, tuple(column[key] for column in columns)) for key, label, help_text in _ROWS
    )


def _cell_column(header: str, column: int) -> Column[MetricRow]:
    def foreground(row: MetricRow) -> QColor | None:
        cell = row.cells[column]
        if cell.level is not None:
            return QColor(cell.level.colour)
        return themed(AMBER) if cell.warn else None

    def background(row: MetricRow) -> QColor | None:
        level = row.cells[column].level
        return level.tint if level is not None else None

    return Column(
        header,
        lambda row: row.cells[column].text,
        foreground=foreground,
        background=background,
        tooltip=lambda row: row.cells[column].tooltip or row.cells[column].text,
    )


class IndexMetricsModel(RecordTableModel[MetricRow]):
    """Measures down; the messages, facts and embeddings indexes across (HEADERS)."""

    def __init__(self, parent: QObject | None = None) -> None:
        label: Column[MetricRow] = Column("", lambda row: row.label, tooltip=lambda row: row.help)
        super().__init__(
            (label, *(_cell_column(h, n) for n, h in enumerate(HEADERS))), key=lambda row: row.key, parent=parent
        )


# -- embedding models ------------------------------------------------------------------------------------
def _use_words(model: EmbeddingModelView) -> str:
    if model.reembedding:
        return "re-embedding"
    return "in use" if model.active else "not used"


def _use_tooltip(model: EmbeddingModelView) -> str:
    if model.reembedding:
        return "The new vectors of a re-embed: swapped in when it completes (one interrupted is cleared by the next)."
    if model.active:
        return f"The model the settings use: reads use its vectors only. {size_text(model.size_bytes)} in history.db."
    return (
        f"An earlier model: its {model.vectors:,} vectors ({size_text(model.size_bytes)}) are kept but no read uses"
        " them."
    )


def _covers_tooltip(model: EmbeddingModelView) -> str:
    return (
        f"{model.vectors:,} vectors, {model.current:,} of them of current facts;"
        f" {size_text(model.size_bytes)} in history.db; the last written {clock(model.last_written_at)}"
    )


def _use_colour(model: EmbeddingModelView) -> QColor | None:
    if model.active:
        return themed(OK_GREEN)
    return themed(AMBER) if not model.reembedding else themed(MUTED_GREY)


class EmbeddingModelsModel(RecordTableModel[EmbeddingModelView]):
    """The vectors each embedding model left in history.db (the active one is the only one reads use)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column("Model", lambda m: m.model, tooltip=_use_tooltip),
                Column("Covers", lambda m: f"{m.current:,} facts", align=RIGHT, tooltip=_covers_tooltip),
                Column("Use", _use_words, foreground=_use_colour, tooltip=_use_tooltip),
            ),
            key=lambda m: (m.model, m.reembedding),
            parent=parent,
        )


# -- events ----------------------------------------------------------------------------------------------
REBUILT_EVENT = "rebuilt and swapped in"


@dataclass(frozen=True, slots=True)
class IndexEvent:
    at: datetime
    index: str  # "turns" / "facts"
    text: str
    level: Level
    detail: str | None = None  # the error behind it, as the tooltip


def health_events(before: IndexHealthReport | None, after: IndexHealthReport) -> list[IndexEvent]:
    """What changed between two health reports of one index, in words (the first report says nothing)."""
    if before is None:
        return []
    out: list[tuple[str, Level]] = []
    if after.state != before.state:
        if after.state == "locked":
            out.append(("locked: retrying, while searches read history.db", Level.BUSY))
        elif after.state == "rebuilding":
            out.append(("rebuilding beside the old index, which answers until the new one is complete", Level.BUSY))
        elif after.state == "ready" and before.state == "rebuilding":
            out.append((REBUILT_EVENT, Level.OK))
        elif after.state == "ready" and before.state == "locked":
            out.append(("the lock is gone: indexing again", Level.OK))
        else:
            out.append((f"now {after.state}", Level.OK if after.state == "ready" else Level.BUSY))
    elif after.state == "locked" and after.locked_attempts > before.locked_attempts:
        out.append((f"still locked (attempt {after.locked_attempts})", Level.BUSY))
    if after.live_attempt > before.live_attempt:
        out.append((f"a commit was refused; retrying (attempt {after.live_attempt})", Level.BUSY))
    if after.recovered_at is not None and after.recovered_at != before.recovered_at:
        tries = f"{after.recovered_after} refused {'try' if after.recovered_after == 1 else 'tries'}"
        out.append((f"commits land again, after {tries}", Level.OK))
    if after.failures > before.failures and after.state != "locked":
        out.append(("a commit failed after every retry; history.db keeps the documents", Level.FAILING))
    if before.awaiting_purge and not after.awaiting_purge:
        out.append(("compacted: removed documents are gone from the files", Level.OK))
    detail = after.last_error
    return [
        IndexEvent(after.at, after.name, text, level, detail if level is not Level.OK else None) for text, level in out
    ]


def _event_tooltip(event: IndexEvent) -> str:
    return f"{event.text}\n{event.detail}" if event.detail else event.text


def _event_colour(event: IndexEvent) -> QColor | None:
    return None if event.level is Level.OK else QColor(event.level.colour)


class IndexEventsModel(RecordTableModel[IndexEvent]):
    """What happened to the indexes while the window was open, oldest first (capped)."""

    def __init__(self, capacity: int = EVENTS_CAPACITY, parent: QObject | None = None) -> None:
        super().__init__(
            (
                Column("Time", lambda e: f"{e.at.astimezone():%H:%M:%S}", tooltip=lambda e: f"{e.at.astimezone()}"),
                Column("Index", lambda e: index_title(e.index)),
                Column("What happened", lambda e: e.text, foreground=_event_colour, tooltip=_event_tooltip),
            ),
            capacity=capacity,
            parent=parent,
        )
