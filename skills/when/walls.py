"""A cron's next fire read from its expanded fields, where that is croniter's answer: away from clock changes.

croniter (``croniter._calc``) steps from a time by finding the first wall-clock minute after it that the fields
match, in naive local time, and then gives that minute the zone back. When the minute exists once and has the
offset of the time stepped from, that is its answer: the clock-change handling after it only acts on a minute
that does not exist, a repeated one, or one whose offset differs. With both day fields restricted croniter ORs
them by asking once with each and keeping the earlier wall clock; the other branch's answer is later than the
one found here whenever the days around the time stepped from and around the fire keep one offset (argued in
``plain_next``). So the next fire here is the first match of the fields on the calendar, a few microseconds,
where croniter takes about 0.1 ms a step; and where a clock change is near, ``plain_next`` says nothing and the
caller asks croniter (``skills.when.triggers.cron_times``). tests/skills/when/test_walls.py holds it to croniter
over drawn expressions, zones and times around their clock changes.

Pure code: every time is a parameter.
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

MINUTE = timedelta(minutes=1)
DAY = timedelta(days=1)
ALL_HOURS = tuple(range(24))
ALL_MINUTES = tuple(range(60))
MAX_SEARCH_DAYS = 8 * 366 + 1
"""Days searched for a match: a classic cron that fires at all fires within 8 years (the 29th of February,
skipped by 2100). Past it, the caller asks croniter."""
STEADY_DAYS_KEPT = 4096
"""Days (of a zone) kept known to keep one offset: a week of 200 skills reads a few dozen."""


@dataclass(frozen=True)
class CronFields:
    """croniter's expansion of an expression; None where croniter keeps '*' (every value)."""

    minutes: tuple[int, ...] | None
    hours: tuple[int, ...] | None
    days: tuple[int, ...] | None
    months: tuple[int, ...] | None
    weekdays: tuple[int, ...] | None

    @property
    def days_ored(self) -> bool:
        """croniter's rule (``_calc_next``): OR the day fields when neither expanded to '*'."""
        return self.days is not None and self.weekdays is not None

    def fires_on(self, day: date) -> bool:
        if self.months is not None and day.month not in self.months:
            return False
        on_day = self.days is None or day.day in self.days
        on_weekday = self.weekdays is None or day.isoweekday() % 7 in self.weekdays
        return (on_day or on_weekday) if self.days_ored else (on_day and on_weekday)

    def fires_in(self, day: date, hour: int) -> bool:
        return (self.hours is None or hour in self.hours) and self.fires_on(day)


def next_wall(fields: CronFields, start: datetime) -> datetime | None:
    """The first naive wall-clock minute at or after the naive minute ``start`` that ``fields`` match, as
    croniter's ``_calc`` finds it without a zone; None when there is none in :data:`MAX_SEARCH_DAYS`."""
    hours = fields.hours or ALL_HOURS
    minutes = fields.minutes or ALL_MINUTES
    day, hour, minute = start.date(), start.hour, start.minute
    for _ in range(MAX_SEARCH_DAYS):
        if fields.months is not None and day.month not in fields.months:
            if day.year >= date.max.year:
                return None
            day = date(day.year + day.month // 12, day.month % 12 + 1, 1)
            hour = minute = 0
            continue
        if fields.fires_on(day):
            i = bisect_left(hours, hour)
            if i < len(hours) and hours[i] == hour:
                j = bisect_left(minutes, minute)
                if j < len(minutes):
                    return datetime.combine(day, time(hour, minutes[j]))
                i += 1
            if i < len(hours):
                return datetime.combine(day, time(hours[i], minutes[0]))
        if day >= date.max - DAY:
            return None
        day += DAY
        hour = minute = 0
    return None


def plain_next(fields: CronFields, zone: ZoneInfo, at: datetime) -> datetime | None:
    """croniter's next fire strictly after ``at`` (aware, in ``zone``), in ``zone``, when the clock does not
    change near: the first matching minute exists once, has ``at``'s offset, and the day before ``at``, its
    day, the fire's day and the day after keep one offset. Else None: ask croniter.

    Why that is croniter's answer with both day fields restricted (``CronFields.days_ored``): the branch that
    matched first is the minute found here. The other branch's first match is no earlier on the wall clock.
    If it has ``at``'s offset it is returned as it is; if not, a clock change lies between, past the steady day
    after the fire, and every time croniter derives from it (the minute after a gap, the other offset's match)
    is either after that change or, read from ``at``'s wall clock shifted back by the change, within the steady
    hours before ``at``, which croniter drops as not after ``at``. croniter keeps the earlier wall clock of the
    two, and on a tie the other branch's, which is then this same minute."""
    offset = at.utcoffset()
    wall = at.replace(tzinfo=None)
    found = next_wall(fields, wall.replace(second=0, microsecond=0) + MINUTE)
    if found is None:
        return None
    fire = found.replace(tzinfo=zone)
    if fire.utcoffset() != offset or fire.replace(fold=1).utcoffset() != offset:
        return None  # a repeated or skipped minute, or another offset: a clock change between
    first, last = wall.date(), found.date()
    for day in (first - DAY, first, last, last + DAY):
        if not steady(zone, day):
            return None
    return fire


@functools.lru_cache(maxsize=STEADY_DAYS_KEPT)
def steady(zone: ZoneInfo, day: date) -> bool:
    """Whether ``day`` keeps one offset in ``zone``: its midnight and the next exist once and have the same
    offset (no zone changes its clock twice in one day)."""
    if not date.min < day < date.max - DAY:
        return False
    start = datetime.combine(day, time(0), tzinfo=zone)
    end = datetime.combine(day + DAY, time(0), tzinfo=zone)
    offset = start.utcoffset()
    return (start.replace(fold=1).utcoffset() == offset and end.utcoffset() == offset
            and end.replace(fold=1).utcoffset() == offset)
