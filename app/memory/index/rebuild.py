"""Rebuild beside: an index that must be rebuilt (at start, for a damaged or outdated index, or when the owner
asks) is built from SQL in a sibling folder (`FtsIndex.begin_build`) while the live index answers, and swapped
in once complete; a cancel or a failure leaves the live index exactly as it was. A build a close cut short is
resumed at the next start."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from app.memory.errors import (
    IndexLockedError,
    IndexOwnedElsewhereError,
    IndexRebuildError,
    RebuildCancelledError,
    StoreError,
)
from app.memory.fts import IndexBuild, is_lock_error, one_line
from app.memory.index import COMMITTER_LOG
from app.memory.index.backoff import LockBackoff
from app.memory.index.compaction import Compaction
from app.memory.index.core import IndexCore, utc_now
from app.memory.records import IndexState

_log = logging.getLogger(COMMITTER_LOG)

ProgressCallback = Callable[[int, int], None]
CancelCallback = Callable[[], bool]


@dataclass(slots=True)
class PreparedRebuild:
    """A complete build beside the live index, waiting to be swapped in (`IndexCommitter.finish_rebuild`)
    or abandoned (`abandon_rebuild`). The committer stays paused meanwhile; the old index answers."""

    build: IndexBuild
    documents: int


class RebuildBeside:
    """One index's rebuilds beside the live index: the one a start found necessary, and the owner's."""

    def __init__(
        self,
        core: IndexCore,
        backoff: LockBackoff,
        compaction: Compaction,
        *,
        pause: Callable[[], Awaitable[None]],
        resume: Callable[[], None],
    ) -> None:
        """`pause()` / `resume()`: stop the committer's loop while an owner's rebuild runs, and start it again."""
        self._core = core
        self._backoff = backoff
        self._compaction = compaction
        self._pause = pause
        self._resume = resume
        self.sql_version = 0  # the format SQL records for the live index
        self.sql_rebuilding = False  # SQL says a rebuild was asked for and has not finished

    async def in_background(self) -> None:
        """The rebuild a start found necessary; a close leaves the build to be resumed next time."""
        core = self._core
        core.set_state(IndexState.REBUILDING)
        if not self.sql_rebuilding:
            await self._mark_rebuilding(True)
        build: IndexBuild = await core.run_blocking(functools.partial(core.index.begin_build, resume=True))
        try:
            await self._fill(build, None, None)
            await core.run_blocking(core.index.swap_in, build)
        except BaseException:
            await core.run_blocking(build.close)
            raise
        await self._swapped(build)
        _log.info("index %s: rebuilt beside and swapped in (%d documents)", core.name, build.watermark)

    async def _mark_rebuilding(self, rebuilding: bool) -> None:
        await self._core.source.save_state(
            watermark=self._core.watermark, schema_version=self.sql_version, rebuilding=rebuilding, outbox_upto=None
        )
        self.sql_rebuilding = rebuilding

    async def _fill(
        self, build: IndexBuild, progress: ProgressCallback | None, cancelled: CancelCallback | None
    ) -> int:
        """Index into `build` what SQL has past the build's watermark; `progress(reached, newest)` after
        each commit; `cancelled()` is asked before each batch. Returns the documents added."""
        core, c = self._core, self._core.c
        total = await core.source.newest_id()
        upsert = build.resumed
        done = 0
        while True:
            if core.closing:
                raise RebuildCancelledError(f"the {core.name} index rebuild stopped: Familiar is closing")
            if cancelled is not None and cancelled():
                raise RebuildCancelledError(
                    f"the {core.name} index rebuild was cancelled; the old index answers as before"
                )
            docs, reached = await core.source.documents_after(build.watermark, core.batch)
            if reached <= build.watermark:
                return done
            try:
                await core.run_blocking(functools.partial(build.add, docs, reached, upsert=upsert))
            except (OSError, ValueError) as exc:
                if not is_lock_error(exc):
                    raise
                raise IndexLockedError(f"the {core.name} index build was refused: {one_line(exc)}") from exc
            upsert = False
            done += len(docs)
            c.commits += 1
            c.last_commit_at = utc_now()
            c.documents += len(docs)
            if progress is not None:
                progress(reached, max(total, reached))

    async def _swapped(self, build: IndexBuild) -> None:
        """The build is the live index now: SQL records it, and the committer goes on from there."""
        core = self._core
        core.watermark = build.watermark
        self.sql_version = core.index.spec.schema_version
        await core.source.save_state(
            watermark=build.watermark, schema_version=self.sql_version, rebuilding=False, outbox_upto=None
        )
        self.sql_rebuilding = False
        core.rebuild_reason = None
        core.upsert = False
        self._compaction.purged(core.c.awaiting_purge)  # a rebuilt index holds no removed document
        # Whatever changed while it was built (removals are still in the outbox) is repaired now.
        core.needs_reconcile = True
        self._backoff.healed()
        core.wake.set()

    def _require_owner(self) -> None:
        if not self._core.index.owned:
            raise IndexOwnedElsewhereError(
                f"another Familiar process is writing the {self._core.name} index;"
                " stop it (or wait until it has stopped), then rebuild again"
            )

    async def prepare(
        self, progress: ProgressCallback | None = None, cancelled: CancelCallback | None = None
    ) -> PreparedRebuild:
        """See `IndexCommitter.prepare_rebuild`."""
        core = self._core
        self._require_owner()
        await self._pause()
        build: IndexBuild | None = None
        try:
            await self._mark_rebuilding(True)
            build = await core.run_blocking(functools.partial(core.index.begin_build, resume=False))
            core.set_state(IndexState.REBUILDING)
            documents = await self._fill(build, progress, cancelled)
        except BaseException as exc:
            await self.abandon(build)
            failure = self._failure(exc)
            if failure is None:
                raise
            raise failure from exc
        return PreparedRebuild(build=build, documents=documents)

    async def finish(self, prepared: PreparedRebuild) -> int:
        """Index what arrived since the build, swap it in, and go on; returns the documents built."""
        core = self._core
        try:
            documents = prepared.documents + await self._fill(prepared.build, None, None)
            await core.run_blocking(core.index.swap_in, prepared.build)
        except BaseException as exc:
            await self.abandon(prepared.build)
            failure = self._failure(exc)
            if failure is None:
                raise
            raise failure from exc
        await self._swapped(prepared.build)
        self._resume()
        return documents

    def _failure(self, exc: BaseException) -> IndexRebuildError | None:
        """What a failed rebuild the owner asked for raises instead of `exc`: a lock says the old index is
        kept; tantivy's own ValueError (a failed write, a build that cannot be opened) says what it says, as
        a store error. None: `exc` goes up as it is (a cancel, a store error, SQL's own, an OSError)."""
        if isinstance(exc, IndexLockedError):
            return IndexRebuildError(f"{exc}; the old {self._core.name} index is kept")
        if isinstance(exc, ValueError) and not isinstance(exc, StoreError):
            return IndexRebuildError(str(exc))
        return None

    async def abandon(self, build: IndexBuild | None) -> None:
        """Drop a build and go on with the live index as it was."""
        core = self._core
        if core.closing:  # the files are closed with the rest; the next start resumes or drops the build
            return
        try:
            if build is not None:
                await core.run_blocking(build.abandon)
            await self._mark_rebuilding(False)
        finally:
            if core.rebuild_reason is None:
                core.set_state(IndexState.READY if core.index.is_open else core.state)
            self._resume()
