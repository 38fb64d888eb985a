"""The exact mapping from a stored trigger to a Temporal Schedule spec.

croniter is the authority on when a cron fires (``skills.when.triggers``). Temporal's own cron
parser reads some expressions differently (a 6th field is the year; a restricted
day-of-month and day-of-week are ANDed where classic cron ORs them), so no cron string is
ever handed to Temporal: the spec is built structurally from croniter's own expansion of
the fields.

Around a clock change, Temporal's calendar arithmetic also differs from croniter's (it
skips a time the spring-forward gap swallows, and in zones east of UTC it misplaces fires
near the repeated hour). The spec therefore lists croniter's fire times explicitly for the
hours around every clock change up to 2100 and excludes every other minute of those hours.
docs/triggers.md explains the mapping in prose.

It lives beside the schedule activities (the only code that builds schedules); what it
computes is pure, so tests check it against croniter without a server, and against the
real server in tests/adapters/test_schedule_spec_server.py.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from temporalio.client import ScheduleCalendarSpec, ScheduleIntervalSpec, ScheduleRange, ScheduleSpec

from skills.spec.models import TriggerConfig
from skills.when.triggers import (
    LAST_CALENDAR_YEAR,
    CronFields,
    check_cron,
    expand_cron,
    interval_period,
    one_shot_second,
    require_aware,
    timezone_of,
    zone_info,
)

_CHANGE_MARGIN = timedelta(hours=2)
"""How far either side of a clock change the spec pins croniter's times.

Temporal misplaces fires by up to an hour around a repeated hour; two hours of local
clock either side of the change cover that with an hour to spare."""


def schedule_spec(trigger: TriggerConfig, *, anchor: datetime,
                  skip_days: Mapping[date, str] | None = None) -> ScheduleSpec:
    """The Temporal Schedule spec that fires exactly when ``trigger_next_times`` says.

    ``anchor`` is when the trigger was set: intervals count from it, and clock changes are
    pinned from it on. ``skip_days`` (``skills.when.calendar``): whole days of the trigger's zone on
    which it does not fire.
    """
    require_aware(anchor, "anchor")
    match trigger.kind:
        case "cron":
            assert trigger.schedule is not None
            spec = _cron_spec(check_cron(trigger.schedule), timezone_of(trigger), anchor)
            return _with_skipped_days(spec, skip_days)
        case "interval":
            assert trigger.interval_minutes is not None
            every, first = interval_period(trigger.interval_minutes, anchor)
            offset = timedelta(seconds=int(first.timestamp()) % int(every.total_seconds()))
            # Temporal fires at the epoch plus offset plus multiples of every; start_at drops
            # any such time before the first one counted from the anchor.
            spec = ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every, offset=offset)], start_at=first)
            if skip_days:
                # An interval counts from the epoch whatever the zone; the zone says whose dates are skipped.
                spec = dataclasses.replace(spec, time_zone_name=timezone_of(trigger))
            return _with_skipped_days(spec, skip_days)
        case "at":
            assert trigger.at is not None
            return _at_spec(one_shot_second(trigger.at))
    raise ValueError("the trigger has none of schedule, interval_minutes or at")


def _cron_spec(text: str, tz: str, anchor: datetime) -> ScheduleSpec:
    fields = expand_cron(text)
    pinned, skipped = _clock_change_calendars(text, fields, zone_info(tz), anchor)
    return ScheduleSpec(calendars=[*_calendars(text, fields), *pinned], skip=skipped, time_zone_name=tz)


def _calendars(text: str, fields: CronFields) -> list[ScheduleCalendarSpec]:
    """One calendar when croniter ANDs the day fields; one per day field when it ORs them."""

    def calendar(
        days: Sequence[int] | None, weekdays: Sequence[int] | None, comment: str
    ) -> ScheduleCalendarSpec:
        return ScheduleCalendarSpec(
            second=[ScheduleRange(0)],
            minute=_ranges(fields.minutes, 0, 59),
            hour=_ranges(fields.hours, 0, 23),
            day_of_month=_ranges(days, 1, 31),
            month=_ranges(fields.months, 1, 12),
            day_of_week=_ranges(weekdays, 0, 6),
            comment=comment,
        )

    if fields.days_ored:
        return [
            calendar(fields.days, None, f"cron '{text}': its day-of-month (ORed with its day-of-week)"),
            calendar(None, fields.weekdays, f"cron '{text}': its day-of-week (ORed with its day-of-month)"),
        ]
    return [calendar(fields.days, fields.weekdays, f"cron '{text}'")]


def _ranges(values: Sequence[int] | None, low: int, high: int) -> list[ScheduleRange]:
    """Sorted values as few ScheduleRanges as a greedy scan finds: runs with a common step, else singles."""
    if values is None:
        return [ScheduleRange(low, high)]
    ranges: list[ScheduleRange] = []
    i = 0
    while i < len(values):
        start = values[i]
        step = values[i + 1] - start if i + 1 < len(values) else 0
        end = i
        while end + 1 < len(values) and values[end + 1] - values[end] == step:
            end += 1
        # Two values a step apart read better as two values, unless they are neighbours.
        if end - i >= 2 or (end - i == 1 and step == 1):
            ranges.append(ScheduleRange(start, values[end], step))
            i = end + 1
        else:
            ranges.append(ScheduleRange(start))
            i += 1
    return ranges


def _at_spec(at: datetime) -> ScheduleSpec:
    # A calendar pinned to one second of one year can match only once; the bounds say so too.
    once = ScheduleCalendarSpec(
        second=[ScheduleRange(at.second)],
        minute=[ScheduleRange(at.minute)],
        hour=[ScheduleRange(at.hour)],
        day_of_month=[ScheduleRange(at.day)],
        month=[ScheduleRange(at.month)],
        year=[ScheduleRange(at.year)],
        comment=f"once at {at.isoformat()}",
    )
    return ScheduleSpec(calendars=[once], start_at=at, end_at=at, time_zone_name="UTC")


# --- business days and holidays ----------------------------------------------------------------


def _with_skipped_days(spec: ScheduleSpec, days: Mapping[date, str] | None) -> ScheduleSpec:
    """The spec with a skip calendar per month holding its skipped days, each whole (every second of it)."""
    if not days:
        return spec
    skip = list(spec.skip)
    by_month: dict[tuple[int, int], list[date]] = defaultdict(list)
    for day in sorted(days):
        by_month[(day.year, day.month)].append(day)
    for (year, month), month_days in sorted(by_month.items()):
        reasons = sorted({days[d] for d in month_days})
        comment = "skipped days: " + "; ".join(reasons)
        skip.append(ScheduleCalendarSpec(
            second=[ScheduleRange(0, 59)],
            minute=[ScheduleRange(0, 59)],
            hour=[ScheduleRange(0, 23)],
            day_of_month=_ranges([d.day for d in month_days], 1, 31),
            month=[ScheduleRange(month)],
            year=[ScheduleRange(year)],
            comment=comment[:200],
        ))
    return dataclasses.replace(spec, skip=skip)


# --- clock changes -----------------------------------------------------------------------------


def _clock_change_calendars(
    text: str, fields: CronFields, zone: ZoneInfo, anchor: datetime
) -> tuple[list[ScheduleCalendarSpec], list[ScheduleCalendarSpec]]:
    """Calendars pinning croniter's fires in the hours around each clock change, and skips for the rest.

    On those few hours Temporal's own calendar arithmetic cannot be trusted (docs/triggers.md
    shows how it goes wrong), so each wall-clock hour there gets its own dated calendar holding
    exactly the minutes croniter fires at, and every other minute of the hour is skipped. A
    skip can only remove a time croniter does not name, so no fire ever lands where the user
    did not ask for one.
    """
    pinned: dict[tuple[int, int, int, tuple[int, ...]], set[int]] = defaultdict(set)
    skipped: dict[tuple[int, int, int, tuple[int, ...]], set[int]] = defaultdict(set)
    shapes: dict[tuple[object, ...], list[tuple[int, ...]]] = {}
    for change in offset_changes(zone.key, anchor.year):
        if change < anchor:
            continue
        hours = _wall_hours_around(change, zone)
        if not any(fields.fires_in(day, hour) for day, hour in hours):
            continue
        # croniter's answer depends only on the shape of the local clock, which repeats from
        # year to year: ask it once per shape.
        shape = _clock_shape(change, zone, hours)
        if shape not in shapes:
            shapes[shape] = _fire_minutes(text, zone, change, hours)
        for (day, hour), minutes in zip(hours, shapes[shape], strict=True):
            if minutes:
                pinned[(day.month, day.day, hour, minutes)].add(day.year)
            rest = tuple(m for m in range(60) if m not in minutes)
            if rest:
                skipped[(day.month, day.day, hour, rest)].add(day.year)
    return (
        _dated_calendars(pinned, "croniter's times around a clock change", merge_hours=False),
        _dated_calendars(skipped, "no fire here around a clock change", merge_hours=True),
    )


@lru_cache(maxsize=64)
def offset_changes(zone_key: str, first_year: int) -> tuple[datetime, ...]:
    """Every instant (UTC) from ``first_year`` through 2100 at which the zone's UTC offset changes."""
    zone = ZoneInfo(zone_key)
    day = timedelta(days=1)
    changes = []
    moment = datetime(first_year, 1, 1, tzinfo=UTC)
    offset = moment.astimezone(zone).utcoffset()
    while moment.year <= LAST_CALENDAR_YEAR:
        following = moment + day
        if following.astimezone(zone).utcoffset() != offset:
            changes.append(_first_second_after(zone, moment, following))
            offset = following.astimezone(zone).utcoffset()
        moment = following
    # The hours around a change at the very end of 2100 would fall in a year Temporal refuses.
    return tuple(c for c in changes if (c + _CHANGE_MARGIN + timedelta(hours=14)).year <= LAST_CALENDAR_YEAR)


def _first_second_after(zone: ZoneInfo, before: datetime, after: datetime) -> datetime:
    """The first second with ``after``'s offset, by bisection between ``before`` and ``after``."""
    offset = before.astimezone(zone).utcoffset()
    low, high = int(before.timestamp()), int(after.timestamp())
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == offset:
            low = middle
        else:
            high = middle
    return datetime.fromtimestamp(high, UTC)


def _wall_hours_around(change: datetime, zone: ZoneInfo) -> list[tuple[date, int]]:
    """Every local (date, hour) the clock shows, skips or repeats within the margin of a change, in order."""
    # Stepping the wall clock itself (not instants) lists a skipped hour too, where croniter
    # may still owe a fire, and a repeated hour once.
    hour = (change - _CHANGE_MARGIN).astimezone(zone).replace(tzinfo=None, minute=0, second=0, microsecond=0)
    last = (change + _CHANGE_MARGIN).astimezone(zone).replace(tzinfo=None)
    hours = []
    while hour <= last:
        hours.append((hour.date(), hour.hour))
        hour += timedelta(hours=1)
    return hours


def _clock_shape(change: datetime, zone: ZoneInfo, hours: list[tuple[date, int]]) -> tuple[object, ...]:
    before, after = change - timedelta(seconds=1), change
    return (
        before.astimezone(zone).utcoffset(),
        after.astimezone(zone).utcoffset(),
        before.astimezone(zone).time(),
        tuple((day.month, day.day, day.weekday(), hour) for day, hour in hours),
    )


def _fire_minutes(
    text: str, zone: ZoneInfo, change: datetime, hours: list[tuple[date, int]]
) -> list[tuple[int, ...]]:
    """For each local hour, the minutes at which croniter fires in it (in either copy of a repeated hour)."""
    # An instant whose local hour is one of ``hours`` lies at most an hour beyond the margin.
    reach = _CHANGE_MARGIN + timedelta(hours=1)
    from croniter import croniter  # with the first cron schedule written, not the worker's start

    fires = croniter(text, (change - reach).astimezone(zone), ret_type=datetime)
    minutes: dict[tuple[date, int], set[int]] = defaultdict(set)
    while (fire := fires.get_next(datetime)) <= change + reach:
        minutes[(fire.date(), fire.hour)].add(fire.minute)
    return [tuple(sorted(minutes.get(hour, ()))) for hour in hours]


def _dated_calendars(
    groups: Mapping[tuple[int, int, int, tuple[int, ...]], set[int]], comment: str, *, merge_hours: bool
) -> list[ScheduleCalendarSpec]:
    """Calendars for (month, day, hour, minutes) -> years, the years of one pattern in one calendar.

    Pinned hours stay one calendar each: Temporal computes each calendar's next time on its
    own, so an hour alone in a calendar is not carried past by the misplaced arithmetic of the
    repeated hour next to it. Skips only ever match, so their hours merge freely.
    """
    by_pattern: dict[tuple[int, int, tuple[int, ...], tuple[int, ...], int | None], list[int]] = defaultdict(
        list
    )
    for (month, day, hour, minutes), years in sorted(groups.items()):
        by_pattern[(month, day, minutes, tuple(sorted(years)), None if merge_hours else hour)].append(hour)
    calendars = []
    for (month, day, minutes, years, _), hours in by_pattern.items():
        calendars.append(
            ScheduleCalendarSpec(
                second=[ScheduleRange(0)],
                minute=_ranges(minutes, 0, 59),
                hour=_ranges(sorted(hours), 0, 23),
                day_of_month=[ScheduleRange(day)],
                month=[ScheduleRange(month)],
                year=_ranges(years, 2000, LAST_CALENDAR_YEAR),
                comment=comment,
            )
        )
    return calendars
