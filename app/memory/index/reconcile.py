"""Reconciliation: a commit can lose its batch without an error, so after a start-up or a failed commit, and
now and then, the index is compared with SQL: what SQL has and the index lacks is indexed, and what the index
has and SQL does not is dropped."""

from __future__ import annotations

import logging
import time

from app.memory.errors import IndexCommitError, IndexDiskFullError, IndexLockedError
from app.memory.index import COMMITTER_LOG
from app.memory.index.backoff import LockBackoff
from app.memory.index.core import IndexCore
from app.memory.index.group_commit import GroupCommits

_log = logging.getLogger(COMMITTER_LOG)


class Reconciler:
    """When one index is compared with SQL, and the repair."""

    def __init__(self, core: IndexCore, commits: GroupCommits, backoff: LockBackoff, *, every: float) -> None:
        """`every`: seconds between two comparisons when nothing asked for one (IndexTiming.reconcile_every);
        a job asks for one sooner by setting `core.needs_reconcile`."""
        self._core = core
        self._commits = commits
        self._backoff = backoff
        self._every = every
        self._at = time.monotonic()

    def seconds_to_due(self, now: float) -> float:
        return self._at + self._every - now

    def is_due(self) -> bool:
        return self._core.needs_reconcile or time.monotonic() >= self._at + self._every

    async def run(self) -> None:
        """The comparison that is due, said in the log when it repaired something."""
        self._core.needs_reconcile = False
        self._at = time.monotonic()
        repaired = await self.reconcile()
        if repaired:
            _log.warning("index %s: reconciled %d documents with SQL", self._core.name, repaired)

    async def reconcile(self) -> int:
        """Index what SQL has and the index lacks, and drop what the index has and SQL does not.

        Returns the number of documents repaired. A commit that cannot land raises why: IndexLockedError or
        IndexDiskFullError (tried again with backoff), else IndexCommitError.
        """
        core = self._core
        wanted = await core.source.indexable_ids()
        present: set[int] = await core.run_blocking(core.index.all_ids)
        missing = sorted(i for i in wanted if i <= core.watermark and i not in present)
        extra = sorted(present - wanted)
        if not missing and not extra:
            return 0
        docs = await core.source.documents_by_ids(missing)
        failure = await self._commits.commit(docs, extra)
        if failure is not None:
            if isinstance(failure, IndexLockedError | IndexDiskFullError):
                raise failure
            raise IndexCommitError(f"index {core.name}: reconcile could not commit ({core.c.last_error})") from failure
        self._backoff.healed()
        core.c.commits += 1
        core.c.documents += len(docs)
        core.publish()
        return len(missing) + len(extra)
