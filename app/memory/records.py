"""Frozen records that cross the store's boundary."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

# The author keys that are no platform's: the familiar's own turns and the window owner's.
SELF_KEY = "familiar:self"
OWNER_KEY = "local:owner"


@dataclass(frozen=True, slots=True)
class NewTurn:
    """A turn about to be appended."""

    platform: str  # "discord" or "local"
    place: str  # "guild:<guild id>/<channel id>", "dm:<user id>" or "local"
    channel_id: int
    author_key: str  # canonical key, e.g. "discord:<user id>" or "familiar:self"
    author_name: str
    content: str
    created_at: datetime
    guild_id: int | None = None
    message_id: int | None = None
    reply_to: int | None = None
    mode: str = "text"


@dataclass(frozen=True, slots=True)
class Turn:
    id: int
    platform: str
    place: str
    guild_id: int | None
    channel_id: int
    message_id: int | None
    author_key: str
    author_name: str
    content: str
    mode: str
    created_at: datetime
    revision: int
    redacted: bool
    reply_to: int | None


@dataclass(frozen=True, slots=True)
class TurnSearchHit:
    turn: Turn
    score: float


class IndexState(StrEnum):
    """What a search index's committer is doing. A StrEnum: each state is the string the shared health file,
    `familiar index status --json` and the window's views have always said."""

    STARTING = "starting"
    READY = "ready"
    # The files refuse to open or to take a commit: searches answer from the store for what the index
    # lacks, and it is retried with backoff.
    LOCKED = "locked"
    REBUILDING = "rebuilding"  # a new index is built beside the old one, which answers until the swap
    READER = "reader"  # another Familiar process writes this index; this one only reads it
    CLOSED = "closed"  # what a writer leaves in the shared health file once it has let go


@dataclass(frozen=True, slots=True)
class IndexHealth:
    """Commit health of one side-index, as published to the window and `familiar index status`."""

    name: str
    commits: int
    documents_committed: int
    retries: int
    live_attempt: int  # 0 when no retry is in progress
    failures: int
    last_error: str | None
    pending: int  # documents waiting to be committed
    lag: int  # rows SQL has that the index does not yet
    watermark: int
    rebuilt_at_start: bool
    # Removed documents whose words the index files still hold until the next compaction (seconds away).
    awaiting_purge: int = 0
    state: IndexState = IndexState.READY
    locked_attempts: int = 0  # while locked: how many tries in a row the lock has refused
    last_commit_at: datetime | None = None  # when a commit last landed (this process, or the writer's)
    # Since when SQL has held documents the index lacks (None: caught up as far as the committer knows).
    backlog_since: datetime | None = None
    # The last time a lock or a refused file held commits up (the antivirus race) and then let go:
    # how many tries it refused before one landed, and when that was.
    recovered_after: int = 0
    recovered_at: datetime | None = None
    # The last try met a full disk (SQL keeps the documents; retried with backoff until one lands).
    disk_full: bool = False

    def state_line(self) -> str:
        """The state in a few words, e.g. "locked, retrying (attempt 3), last error: ..."."""
        if self.disk_full:  # the cause, whatever it did to the index (a writer it killed reads as a lock)
            return f"{self.state}, the disk is full: retrying, last error: {self.last_error}"
        if self.state is IndexState.LOCKED:
            return f"locked, retrying (attempt {self.locked_attempts}), last error: {self.last_error}"
        if self.state is IndexState.READER:
            return "written by another Familiar process (read here)"
        return self.state
