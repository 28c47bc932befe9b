"""The traffic light of a search index, and a live health report folded into the last status.

Pure functions over view records and events (no store, no I/O), so the window can use them on every
IndexHealthReport the bridge passes on: a retry or a lock's attempt shows the moment it happens.
"ok" is green, "catching_up" amber (locked and retrying, being rebuilt, or behind for longer than a
moment: it heals by itself while searches read what it lacks from history.db), "failing" red
(commits fail with an error that is not a lock, and documents wait).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from app.runtime.api.views import IndexState, IndexStatusView
from app.runtime.events import IndexHealthReport

CATCH_UP_GRACE = timedelta(seconds=10)
"""A backlog younger than this is the index doing its job (a message just arrived), not falling behind."""


def traffic_light(
    *,
    state: str,
    live_attempt: int,
    failures: int,
    last_error: str | None,
    pending: int,
    lag: int,
    backlog_since: datetime | None,
    now: datetime,
) -> IndexState:
    if state in ("locked", "rebuilding", "starting") or live_attempt:
        return "catching_up"
    if failures and last_error and pending:
        return "failing"
    if pending or lag:
        fresh = backlog_since is not None and now - backlog_since < CATCH_UP_GRACE
        return "ok" if fresh else "catching_up"
    return "ok"


def state_line(state: str, locked_attempts: int, last_error: str | None) -> str:
    """The state in a few words, e.g. "locked, retrying (attempt 3), last error: ..."."""
    if state == "locked":
        return f"locked, retrying (attempt {locked_attempts}), last error: {last_error}"
    if state == "reader":
        return "written by another Familiar process (read here)"
    return state


def with_report(view: IndexStatusView, report: IndexHealthReport, now: datetime | None = None) -> IndexStatusView:
    """The last status of an index with a live health report folded in (no I/O): the health at once;
    the counts SQL knows (backlog, documents) stay as last read, except that a report saying the index
    has caught up empties the backlog."""
    caught_up = not report.pending and not report.lag and report.backlog_since is None
    pending = 0 if caught_up else max(view.pending, report.pending)
    light = traffic_light(
        state=report.state,
        live_attempt=report.live_attempt,
        failures=report.failures,
        last_error=report.last_error,
        pending=pending,
        lag=report.lag,
        backlog_since=report.backlog_since,
        now=now or datetime.now(UTC),
    )
    return dataclasses.replace(
        view,
        state=light,
        commits=report.commits,
        documents_committed=report.documents_committed,
        retries=report.retries,
        live_attempt=report.live_attempt,
        failures=report.failures,
        last_error=report.last_error,
        pending=pending,
        lag=report.lag,
        awaiting_purge=report.awaiting_purge,
        to_add=0 if caught_up else view.to_add,
        to_remove=0 if caught_up else view.to_remove,
        health_state=report.state,
        locked_attempts=report.locked_attempts,
        state_line=state_line(report.state, report.locked_attempts, report.last_error),
        backlog_since=None if caught_up else report.backlog_since,
        last_commit_at=report.last_commit_at,
        recovered_after=report.recovered_after,
        recovered_at=report.recovered_at,
        disk_full=report.disk_full,
    )
