"""Dates as a person reads them: in the user's local time, short ("3 Nov 14:05"), and ages ("2 days ago")."""

from __future__ import annotations

from datetime import UTC, datetime


def _local(at: datetime) -> datetime:
    return (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).astimezone()


def short_when(at: datetime, *, now: datetime | None = None) -> str:
    """'3 Nov 14:05' in local time; with the year when it is not this year ('3 Nov 2024 14:05')."""
    local = _local(at)
    year = _local(now or datetime.now(UTC)).year
    day = f"{local.day} {local:%b}" if local.year == year else f"{local.day} {local:%b %Y}"
    return f"{day} {local:%H:%M}"


def short_day(at: datetime, *, now: datetime | None = None) -> str:
    """'3 Nov' (or '3 Nov 2024' when not this year), local time."""
    local = _local(at)
    year = _local(now or datetime.now(UTC)).year
    return f"{local.day} {local:%b}" if local.year == year else f"{local.day} {local:%b %Y}"


def weekday_when(at: datetime, *, now: datetime | None = None) -> str:
    """'Wed 3 Dec 09:00': for times ahead (a snooze's end), where the weekday helps."""
    return f"{_local(at):%a} {short_when(at, now=now)}"


def age(at: datetime, *, now: datetime | None = None) -> str:
    """How long ago: 'just now', '5 min ago', '3 h ago', 'yesterday', '12 days ago', or the date."""
    seconds = ((now or datetime.now(UTC)) - _local(at)).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86_400)
    if days == 1:
        return "yesterday"
    if days < 60:
        return f"{days} days ago"
    return short_day(at, now=now)
