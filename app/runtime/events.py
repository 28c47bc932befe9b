"""Typed events the runtime publishes; the UI bridge turns them into Qt signals.

Every event is a frozen dataclass so it can cross from the runtime to the window without being
mutated on the way. Consumers match on the class.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime


def _now() -> datetime:
    return datetime.now(UTC)


class ConnectionState(enum.StrEnum):
    STARTING = "starting"  # the window is up and the familiar is still opening (app/runtime/api/deferred.py)
    STOPPED = "stopped"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    FAILED = "failed"


class ActivityKind(enum.StrEnum):
    MESSAGE_IN = "message_in"
    REPLY_OUT = "reply_out"
    EDIT = "edit"
    DELETE = "delete"
    ERROR = "error"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class GuildInfo:
    id: int
    name: str
    member_count: int


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    """A text channel of a server the bot is in (the Character pane chooses home channels from these)."""

    guild_id: int
    guild_name: str
    channel_id: int
    name: str


@dataclass(frozen=True, slots=True)
class ConnectionChanged:
    state: ConnectionState
    detail: str = ""
    at: datetime = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class GuildsChanged:
    guilds: tuple[GuildInfo, ...]
    at: datetime = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class LatencyMeasured:
    milliseconds: float
    at: datetime = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class Activity:
    """One line of the Dashboard's live activity log."""

    kind: ActivityKind
    where: str
    summary: str
    at: datetime = field(default_factory=_now)
    message_id: int | None = None  # the Discord message it is about (logs name it instead of its text)
    place: str | None = None  # the place key, where there is one (a reply: open its explanation from here)
    turn_id: int | None = None  # a reply's first message as stored: the explanation this line opens
    disk_full: bool = False  # a message the full disk kept out: counted by DiskFullChanged, not said on its own


@dataclass(frozen=True, slots=True)
class FailureReported:
    """A failure explained in one line for the window and the CLI (never a traceback)."""

    message: str
    at: datetime = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class IndexHealthReport:
    """Commit health of one search index (turns or facts), live: a retry shows its attempt number."""

    name: str
    commits: int
    documents_committed: int
    retries: int
    live_attempt: int
    failures: int
    last_error: str | None
    pending: int
    lag: int
    awaiting_purge: int = 0  # removed documents whose words stay in the index files until the next compaction
    state: str = "ready"  # ready / locked / rebuilding / reader / starting (IndexHealth.state)
    locked_attempts: int = 0  # while locked: the tries the lock has refused in a row
    last_commit_at: datetime | None = None  # when a commit last landed
    backlog_since: datetime | None = None  # since when the index has lacked something SQL has (None: caught up)
    recovered_after: int = 0  # the last time refusals held commits up: how many tries they refused...
    recovered_at: datetime | None = None  # ...and when a commit landed again
    disk_full: bool = False  # the last try met a full disk (SQL keeps the documents; retried until one lands)
    at: datetime = field(default_factory=_now)


class ChangeKind(enum.StrEnum):
    """What a memory change touched; a pane refreshes only for the kinds it shows."""

    TURNS = "turns"
    FACTS = "facts"
    EMBEDDINGS = "embeddings"
    SUMMARIES = "summaries"
    DOSSIERS = "dossiers"
    REFLECTIONS = "reflections"
    PAUSE = "pause"
    TOMBSTONES = "tombstones"
    FORGETS = "forgets"  # deferred forgets scheduled, undone or applied; receipts
    PLACES = "places"
    LORE = "lore"  # the lorebook's timed effects (sticky, cooldown) per place
    LOREBOOK_FILE = "lorebook_file"  # lorebook.toml changed on disk (a save here, or an editor beside)
    CHARACTER_FILES = "character_files"  # character.toml or character.md changed on disk


@dataclass(frozen=True, slots=True)
class MemoryChanged:
    """The memory changed: published after every facade write (with the caller's `initiator`, an opaque
    token it passed, so the pane that made the change need not reload twice), after every memory-worker
    tick that wrote something, and within about a second for writes by another process (`initiator`
    None for both)."""

    kinds: frozenset[ChangeKind]
    initiator: object | None = None
    at: datetime = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class LorebookStatus:
    """lorebook.toml as the familiar last read it, published when that changes (it is watched).

    `problem` says why the file on disk is not in use, naming the file, the line, the entry and the key;
    the last good book stays in use meanwhile. None once the file reads again. `warnings` name the keys
    that can never match (the rest of the book works)."""

    file: str
    problem: str | None
    line: int | None = None
    warnings: tuple[str, ...] = ()
    at: datetime = field(default_factory=_now)

    @property
    def banner(self) -> str:
        """One line for the window ("" when there is nothing to say)."""
        if self.problem is not None:
            return f"{self.problem} (the last good lorebook stays in use until this is fixed)"
        if self.warnings:
            more = f" (and {len(self.warnings) - 1} more)" if len(self.warnings) > 1 else ""
            return self.warnings[0] + more
        return ""


@dataclass(frozen=True, slots=True)
class SettingsReloaded:
    """The familiar's settings were read again and are in force (a save in Settings or the Character pane):
    what the window shows of them, such as the name it goes by, may have changed."""

    display_name: str
    at: datetime = field(default_factory=_now)


@dataclass(frozen=True, slots=True)
class DiskFullChanged:
    """The disk holding the familiar's files is full, or has room again (app/runtime/outage.py).

    Published when that changes, and while it is full when the count of messages waiting changes.
    Messages said meanwhile are not lost: Discord keeps them, and they are fetched again from its
    history and stored once there is room (as at start), while the familiar runs."""

    full: bool
    folder: str  # the familiar's folder: history.db and the search indexes
    detail: str = ""  # the last refusal, in one line ("database or disk is full")
    waiting: int = 0  # messages not stored yet, to fetch again from Discord
    places: int = 0  # in how many channels or DMs
    since: datetime | None = None  # when the disk first refused a write
    index_only: bool = False  # only the search indexes are refused: messages are stored, not yet searchable
    at: datetime = field(default_factory=_now)

    @property
    def summary(self) -> str:
        """What is wrong and what happens meanwhile, in one line ("" once there is room)."""
        if not self.full:
            return ""
        if self.index_only:
            held = "the search index cannot take new messages (they are stored, and searchable once there is room)"
        elif self.waiting:
            where = "1 channel" if self.places == 1 else f"{self.places} channels"
            count = "1 message" if self.waiting == 1 else f"{self.waiting} messages"
            held = f"{count} in {where} not stored yet (Discord keeps them: fetched and stored once there is room)"
        else:
            held = "new messages cannot be stored until there is room (nothing stored is lost)"
        return f"{held}; free some space on the disk holding {self.folder} ({self.detail})"

    @property
    def banner(self) -> str:
        """One line for the window ("" once there is room)."""
        return f"Disk full: {self.summary}" if self.full else ""


RuntimeEvent = (
    ConnectionChanged
    | GuildsChanged
    | LatencyMeasured
    | Activity
    | FailureReported
    | IndexHealthReport
    | MemoryChanged
    | LorebookStatus
    | SettingsReloaded
    | DiskFullChanged
)
