"""A full disk while the familiar runs: what it could not store, and storing it once there is room.

The disk holding history.db and the search indexes can fill up while the familiar runs. A message it
cannot store then is not lost, Discord keeps it: the outage notes, per channel, where the messages it
missed begin, and once the store takes writes again (a write lands, or a retry with growing pauses
finds room) it runs the catch-up from Discord's history that start-up runs, for those channels only
(`attach` gives it the connection's). An edit or a deletion the disk refused is done again first (a
deletion redacts: it must reach the store). A live message in a channel that missed some waits for
that catch-up, so the channel's messages are stored in the order they were said. Only a probe write
(one that needs room, as any write does) says the store takes writes again: a write that happened to
need no new room (a message already stored, an edit of an unknown one) only brings the next round on.

While the disk refuses writes, a DiskFullChanged says so (the window's banner and status bar,
headless mode's log), and another says when writes land again. The search indexes report their own
refusals (IndexHealth.disk_full) and retry by themselves; they count towards the same state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from app.memory.errors import disk_full_cause, is_disk_full
from app.memory.waiting import wait_set
from app.runtime.errors import DiskFullError
from app.runtime.events import DiskFullChanged, RuntimeEvent

_log = logging.getLogger(__name__)

RETRY_FIRST = 1.0  # seconds before the first retry, doubled after each refusal...
RETRY_MAX = 10.0  # ...up to this (a probe write: cheap)
WAIT_SECONDS = 60.0  # the longest a live message waits for its channel's catch-up
MAX_REDO = 10_000  # edits and deletions kept to do again; beyond, the oldest are given up (logged)
STORE = "store"  # history.db, as a source of refusals (the indexes are "index <name>")

CatchUp = Callable[[Mapping[str, int]], Awaitable[Collection[str]]]
"""The connection's catch-up from the platform's history for these places (place -> channel id), stored
through the sink; returns the places it can never catch up on (switched off, the channel gone)."""


@dataclass(slots=True)
class _Missed:
    channel_id: int
    after: int  # fetch the messages after this id: the one just before the first it missed
    count: int  # messages it missed there


class StorageOutage:
    def __init__(
        self,
        folder: Path,
        publish: Callable[[RuntimeEvent], None],
        probe: Callable[[], Awaitable[None]],
        *,
        retry_first: float = RETRY_FIRST,
        retry_max: float = RETRY_MAX,
    ) -> None:
        """`probe`: a small write that raises what the disk says while it has no room (Store.probe_room)."""
        self._folder = folder
        self._publish = publish
        self._probe = probe
        self._retry_first = retry_first
        self._retry_max = retry_max
        self._refusing: dict[str, str] = {}  # who the disk refuses now -> its last error, in one line
        self._since: datetime | None = None
        self._missed: dict[str, _Missed] = {}
        self._fetching: dict[str, int] = {}  # place -> its missed count when a catch-up read where to start
        self._redo: deque[tuple[str, Callable[[], Awaitable[object]]]] = deque()
        self._catch_up: CatchUp | None = None
        self._wake = asyncio.Event()
        self._round: asyncio.Future[None] | None = None  # resolved when the round under way (or next) ends
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._shown: DiskFullChanged | None = None

    # -- what is known -----------------------------------------------------------------------------
    @property
    def full(self) -> bool:
        return bool(self._refusing)

    @property
    def waiting(self) -> int:
        """Messages missed and not stored yet."""
        return sum(m.count for m in self._missed.values())

    def status(self) -> DiskFullChanged:
        # The store's own words first: what it refuses matters more than what the index lags behind.
        detail = self._refusing.get(STORE) or next(reversed(self._refusing.values()), "")
        return DiskFullChanged(
            full=self.full,
            folder=str(self._folder),
            detail=detail,
            waiting=self.waiting if self.full else 0,
            places=len(self._missed) if self.full else 0,
            since=self._since,
            index_only=self.full and STORE not in self._refusing,
        )

    def banner(self) -> str | None:
        """The window's line while the disk is full (get_*-like: no I/O)."""
        return self.status().banner or None

    def holds(self, place: str) -> bool:
        """Whether `place` missed messages that are not stored yet."""
        return place in self._missed

    def error(self, exc: BaseException) -> DiskFullError:
        """The one-line error for a write the disk refused."""
        return DiskFullError(f"the disk holding {self._folder} is full ({_one_line(exc)})")

    # -- what the writers tell ---------------------------------------------------------------------
    @contextlib.contextmanager
    def writing(self, message: tuple[str, int, int] | None = None) -> Iterator[None]:
        """Around a write to the store: a refusal for want of room is noted and raised as DiskFullError;
        a write that lands brings the next retry on. `message` (place, channel id, message id): the message
        the write stores, noted as missed when it is refused (other callers note what to do again)."""
        try:
            yield
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            if message is not None:
                self._note_missed(*message)
            self.refused(STORE, exc)
            raise self.error(exc) from exc
        if self._work():
            self._keep_trying()
            self._wake.set()

    def refused(self, source: str, error: BaseException | str) -> None:
        """A write by `source` ("store", "index turns") was refused for want of room."""
        if not self._refusing:
            self._since = datetime.now(UTC)
            _log.warning("the disk holding %s is full (%s)", self._folder, _one_line(error), extra={"console": False})
        self._refusing[source] = _one_line(error)
        self._changed()
        if source == STORE:
            self._keep_trying()

    def wrote(self, source: str) -> None:
        """A write by `source` landed that needed room: the disk has room for it again."""
        if source not in self._refusing:
            return
        del self._refusing[source]
        if not self._refusing:
            _log.info("the disk holding %s takes writes again", self._folder)
            self._since = None
        self._changed()

    def index_health(self, name: str, disk_full: bool, last_error: str | None) -> None:
        """A search index's health: its last try met a full disk, or not."""
        if disk_full:  # its own error names a new temporary file each try: say it the same way each time
            self.refused(f"index {name}", f"no space left for the {name} search index")
            _log.debug("index %s refused for want of room: %s", name, last_error)
        else:
            self.wrote(f"index {name}")

    def missed(self, place: str, channel_id: int, first_id: int, count: int) -> None:
        """`count` messages said in `place` from `first_id` on could not be stored (a catch-up the disk
        refused): fetch them again once there is room."""
        self._note_missed(place, channel_id, first_id, count)
        self._changed()
        self._keep_trying()

    def _note_missed(self, place: str, channel_id: int, message_id: int, count: int = 1) -> None:
        """Messages said in `place` from `message_id` on could not be stored: fetch them again later."""
        before = message_id - 1
        missed = self._missed.get(place)
        if missed is None:
            self._missed[place] = _Missed(channel_id, before, count)
        else:
            missed.after = min(missed.after, before)
            missed.count += count

    def later(self, what: str, redo: Callable[[], Awaitable[object]]) -> None:
        """A write the disk refused that no catch-up brings back (an edit, a deletion): do it once there is room."""
        if len(self._redo) >= MAX_REDO:
            given_up, _ = self._redo.popleft()
            _log.warning("too much waits for room on the disk: gave up %s", given_up)
        self._redo.append((what, redo))
        self._keep_trying()

    # -- the catch-up ------------------------------------------------------------------------------
    def start_point(self, place: str, stored: int | None) -> int | None:
        """Where a catch-up of `place` fetches from: `stored` (the store's own resume point), or
        earlier when messages were missed there. Called as the catch-up begins: what is missed from
        now on is fetched again by the next one."""
        missed = self._missed.get(place)
        if missed is None:
            return stored
        self._fetching[place] = missed.count
        return missed.after if stored is None else min(stored, missed.after)

    def caught_up(self, place: str) -> None:
        """A catch-up stored what `place` missed (as far as it was missed when the catch-up began)."""
        missed = self._missed.get(place)
        fetched = self._fetching.pop(place, None)
        if missed is None or fetched is None:
            return
        if missed.count <= fetched:
            del self._missed[place]
        else:  # missed again while it ran: the next round fetches from the same point
            missed.count -= fetched
        self._changed()

    def attach(self, catch_up: CatchUp | None) -> None:
        """The running connection's catch-up (None while there is none: what was missed waits for the next)."""
        self._catch_up = catch_up
        if catch_up is not None and self._missed:
            self._keep_trying()

    async def wait_for(self, place: str, timeout: float = WAIT_SECONDS) -> None:
        """For a live message in `place`, which missed messages: wait (bounded) until a round has
        tried to catch the place up, so the message is stored after those said before it."""
        if self._closed or place not in self._missed or self._catch_up is None:
            return
        done = self._next_round()
        self._keep_trying()
        self._wake.set()
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(done)
        except TimeoutError:
            _log.warning("a message in %s waited %.0f s for the catch-up after a full disk; going on", place, timeout)

    async def close(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._end_round()

    # -- the retries -------------------------------------------------------------------------------
    def _work(self) -> bool:
        return bool(self._redo or STORE in self._refusing or (self._missed and self._catch_up is not None))

    def _keep_trying(self) -> None:
        if self._closed or (self._task is not None and not self._task.done()):
            return
        self._task = asyncio.get_running_loop().create_task(self._retry(), name="disk-full-retry")

    def _next_round(self) -> asyncio.Future[None]:
        if self._round is None or self._round.done():
            self._round = asyncio.get_running_loop().create_future()
        return self._round

    def _end_round(self) -> None:
        done, self._round = self._round, None
        if done is not None and not done.done():
            done.set_result(None)

    async def _retry(self) -> None:
        delay = self._retry_first
        try:
            while not self._closed and self._work():
                await wait_set(self._wake, delay)
                self._wake.clear()
                try:
                    settled = await self._try_once()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the retries must outlive any one failure
                    _log.warning("retrying after a full disk failed: %s", _one_line(exc))
                    settled = False
                finally:
                    self._end_round()
                delay = self._retry_first if settled else min(self._retry_max, delay * 2)
        finally:
            self._end_round()
            if self._task is asyncio.current_task():
                self._task = None

    async def _try_once(self) -> bool:
        """One round: is there room, then what was refused. True when nothing is left to retry."""
        try:
            await self._probe()
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            self.refused(STORE, exc)
            return False
        self.wrote(STORE)
        while self._redo:
            what, redo = self._redo[0]
            try:
                await redo()
            except Exception as exc:  # noqa: BLE001 - one that cannot be done is given up, not retried for ever
                if is_disk_full(exc):
                    self.refused(STORE, exc)
                    return False
                _log.warning("could not %s after the disk was full: %s", what, _one_line(exc))
            self._redo.popleft()
        catch_up = self._catch_up
        if self._missed and catch_up is not None:
            lost = await catch_up({place: m.channel_id for place, m in self._missed.items()})
            for place in lost:
                gone = self._missed.pop(place, None)
                self._fetching.pop(place, None)
                if gone is not None:
                    _log.warning(
                        "%d messages said in %s while the disk was full cannot be fetched again: its history"
                        " cannot be read now, or catching up is switched off ([discord] backfill_hours)",
                        gone.count,
                        place,
                    )
            if lost:
                self._changed()
        return not self._work()

    def _changed(self) -> None:
        status = self.status()
        shown = self._shown
        if shown is not None and (shown.full, shown.waiting, shown.places, shown.detail, shown.index_only) == (
            status.full,
            status.waiting,
            status.places,
            status.detail,
            status.index_only,
        ):
            return
        if shown is None and not status.full:
            return  # nothing to say: it was never full
        self._shown = status
        self._publish(status)


def _one_line(error: BaseException | str) -> str:
    text = " ".join(str(error).split())
    return text[:300] if text else type(error).__name__


def disk_full_line(error: BaseException, folder: Path) -> str | None:
    """One line a user can act on for a failure a full disk caused (None for any other failure):
    what said so, and where to free space."""
    cause = disk_full_cause(error)
    if cause is None:
        return None
    return f"the disk holding {folder} is full ({_one_line(cause)}): free some space on it, then try again"
