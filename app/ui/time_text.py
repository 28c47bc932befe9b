"""Times as a person reads them, in their own time zone: "3 Nov 14:05", "3 Nov 2024", "now".

The year is left out when it is this year's. Day numbers have no leading zero on every platform
(strftime's "%-d" is not portable, so the day is formatted by hand).
"""

from __future__ import annotations

from datetime import UTC, datetime


def _local(moment: datetime, now: datetime | None) -> tuple[datetime, datetime]:
    here = moment.astimezone()
    return here, (now or datetime.now(UTC)).astimezone()


def when(moment: datetime, *, now: datetime | None = None) -> str:
    """ "3 Nov 14:05" (this year) or "3 Nov 2024 14:05"."""
    here, today = _local(moment, now)
    year = "" if here.year == today.year else f" {here.year}"
    return f"{here.day} {here:%b}{year} {here:%H:%M}"


def day(moment: datetime, *, now: datetime | None = None) -> str:
    """ "3 Nov" (this year) or "3 Nov 2024"."""
    here, today = _local(moment, now)
    return f"{here.day} {here:%b}" + ("" if here.year == today.year else f" {here.year}")


def when_or_now(moment: datetime | None, *, now: datetime | None = None) -> str:
    return "now" if moment is None else when(moment, now=now)


def span(start: datetime | None, end: datetime | None, *, now: datetime | None = None) -> str:
    """A world-time span: "3 Nov 14:05 → 5 Nov 10:00", "since 3 Nov 14:05; still holds"."""
    if start is None and end is None:
        return "since an unknown time; still holds"
    if end is None:
        return f"since {when(start, now=now) if start else ''}; still holds"
    if start is None:
        return f"until {when(end, now=now)} (since an unknown time)"
    return f"{when(start, now=now)} → {when(end, now=now)}"
