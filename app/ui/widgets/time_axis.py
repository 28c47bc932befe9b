"""A time axis in pixels: where a time falls, and ticks at round local times with short labels.

Shared by the time sliders and the timeline's bar view, so their dates line up the same way.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

HOUR = 3600.0
DAY = 24 * HOUR
# (unit, how many) from the finest to the coarsest; each is tried until the ticks are far enough apart.
_STEPS: tuple[tuple[str, int], ...] = (
    ("hour", 1),
    ("hour", 3),
    ("hour", 6),
    ("hour", 12),
    ("day", 1),
    ("day", 2),
    ("day", 7),
    ("day", 14),
    ("month", 1),
    ("month", 3),
    ("month", 6),
    ("year", 1),
    ("year", 2),
    ("year", 5),
    ("year", 10),
    ("year", 50),
    ("year", 100),
)
_APPROX = {"hour": HOUR, "day": DAY, "month": 30.4 * DAY, "year": 365.25 * DAY}


@dataclass(frozen=True, slots=True)
class TimeScale:
    """Maps [start, end] onto [left, left + width] pixels."""

    start: datetime
    end: datetime
    left: float
    width: float

    @property
    def seconds(self) -> float:
        return max(1.0, (self.end - self.start).total_seconds())

    def x(self, moment: datetime) -> float:
        return self.left + (moment - self.start).total_seconds() / self.seconds * self.width

    def time(self, x: float) -> datetime:
        share = min(1.0, max(0.0, (x - self.left) / self.width)) if self.width > 0 else 0.0
        return self.start + timedelta(seconds=share * self.seconds)


def _floor(moment: datetime, unit: str, count: int) -> datetime:
    here = moment.astimezone()
    if unit == "hour":
        return here.replace(minute=0, second=0, microsecond=0, hour=here.hour - here.hour % count)
    if unit == "day":
        return here.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "month":
        month = here.month - (here.month - 1) % count
        return here.replace(month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    year = here.year - here.year % count
    return here.replace(year=max(1, year), month=1, day=1, hour=0, minute=0, second=0, microsecond=0)


def _next(moment: datetime, unit: str, count: int) -> datetime:
    if unit == "hour":
        return (moment + timedelta(hours=count)).astimezone()
    if unit == "day":
        later = (moment + timedelta(days=count, hours=12)).astimezone()  # past any DST shift, then back to midnight
        return later.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "month":
        months = moment.month - 1 + count
        return moment.replace(year=moment.year + months // 12, month=months % 12 + 1)
    return moment.replace(year=moment.year + count)


def _label(moment: datetime, unit: str, this_year: int) -> str:
    if unit == "hour":
        return f"{moment.day} {moment:%b}" if moment.hour == 0 else f"{moment:%H:%M}"
    if unit == "day":
        return f"{moment.day} {moment:%b}" + ("" if moment.year == this_year else f" {moment:%y}")
    if unit == "month":
        return f"{moment:%b} {moment.year}" if moment.month == 1 or moment.year != this_year else f"{moment:%b}"
    return str(moment.year)


def ticks(
    start: datetime, end: datetime, pixels: float, *, min_gap: float = 80.0, now: datetime | None = None
) -> tuple[tuple[datetime, str], ...]:
    """Round local times between `start` and `end` at least `min_gap` pixels apart, with labels. The same
    axis asks again at every paint (60 a second in a drag): the answer is kept for the last few axes."""
    today = (now or datetime.now(UTC)).astimezone()
    return _ticks(start, end, round(pixels), min_gap, today.year)


@functools.lru_cache(maxsize=32)
def _ticks(
    start: datetime, end: datetime, pixels: int, min_gap: float, this_year: int
) -> tuple[tuple[datetime, str], ...]:
    if end <= start or pixels <= 0:
        return ()
    seconds = (end - start).total_seconds()
    most = max(1.0, pixels / min_gap)
    unit, count = _STEPS[-1]
    for unit, count in _STEPS:
        if seconds / (_APPROX[unit] * count) <= most:
            break
    out: list[tuple[datetime, str]] = []
    moment = _floor(start, unit, count)
    if unit == "day" and count > 1:  # whole multiples of days from a fixed day, so ticks do not jump as it scrolls
        epoch = datetime(2000, 1, 3).astimezone()  # a Monday
        moment -= timedelta(days=(moment.date() - epoch.date()).days % count)
    while moment <= end and len(out) < 400:
        if moment >= start:
            out.append((moment, _label(moment, unit, this_year)))
        moment = _next(moment, unit, count)
    return tuple(out)
