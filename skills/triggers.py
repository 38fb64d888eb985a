"""When a skill fires: cron checking, and the exact mapping from a trigger to a Temporal Schedule spec.

Pure code: no I/O, and no clock (every "now" is a parameter), so workflows, activities
and the starter can all import it. docs/triggers.md explains the mapping in prose.

croniter is the authority on when a cron fires. Temporal's own cron parser reads some
expressions differently (a 6th field is the year; a restricted day-of-month and
day-of-week are ANDed where classic cron ORs them), so no cron string is ever handed to
Temporal: the spec is built structurally from croniter's own expansion of the fields.

Around a clock change, Temporal's calendar arithmetic also differs from croniter's (it
skips a time the spring-forward gap swallows, and in zones east of UTC it misplaces fires
near the repeated hour). The spec therefore lists croniter's fire times explicitly for the
hours around every clock change up to 2100 and excludes every other minute of those hours.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter
from temporalio.client import ScheduleCalendarSpec, ScheduleIntervalSpec, ScheduleRange, ScheduleSpec

from skills.models import TriggerConfig

MACROS: Mapping[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

NOT_CLASSIC = "only classic 5-field cron and @hourly-style macros are supported"
_FIELD_ORDER = "minute hour day-of-month month day-of-week"

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_LONGEST_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

_ELEMENT = re.compile(r"(?:\*|(?P<start>[a-z0-9]+)(?:-(?P<end>[a-z0-9]+))?)(?:/(?P<step>[0-9]+))?")
# Quartz/Jenkins extensions croniter knows (L, W, #, ?, H, R): valid for croniter, not classic cron.
_EXTENSION_CHARS = re.compile(r"[#?()]")
_EXTENSION_WORD = re.compile(r"l|\d*l|l\d+|lw|\d+w|w\d+|h|r")

LAST_CALENDAR_YEAR = 2100
"""Temporal's calendars match no year after this one."""

_CHANGE_MARGIN = timedelta(hours=2)
"""How far either side of a clock change the spec pins croniter's times.

Temporal misplaces fires by up to an hour around a repeated hour; two hours of local
clock either side of the change cover that with an hour to spare."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    """Names of the values ``low``, ``low + 1``, ... (month and day-of-week only)."""

    def value(self, word: str, text: str) -> int:
        if word.isdigit():
            number = int(word)
            if not self.low <= number <= self.high:
                raise ValueError(f"'{text}': {self.name} {number} is out of range ({self._allowed()})")
            return number
        if word in self.names:
            return self.low + self.names.index(word)
        if _EXTENSION_WORD.fullmatch(word):
            raise ValueError(
                f"'{text}': '{word}' in the {self.name} field is not classic cron; {NOT_CLASSIC}"
            )
        raise ValueError(f"'{text}': '{word}' is not a valid {self.name} ({self._allowed()})")

    def _allowed(self) -> str:
        allowed = f"{self.low}-{self.high}"
        if self.name == "day-of-week":
            allowed += " with 0 and 7 both Sunday, or sun-sat"
        elif self.names:
            allowed += f" or {self.names[0]}-{self.names[-1]}"
        return allowed


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day-of-month", 1, 31),
    _Field("month", 1, 12, _MONTHS),
    _Field("day-of-week", 0, 7, _WEEKDAYS),
)


# --- checking ----------------------------------------------------------------------------------


def check_cron(expr: str) -> str:
    """The expression normalized (stripped, single spaces, lower case), or ValueError saying what is wrong.

    Accepts classic 5-field cron and the @yearly/@annually/@monthly/@weekly/@daily/@midnight/
    @hourly macros; refuses what croniter refuses, croniter's non-classic extensions, and
    expressions that can never fire.
    """
    text = " ".join(expr.split()).lower()
    if not text:
        raise ValueError(
            "the cron expression is empty; write 5 fields such as '0 9 * * mon-fri' or a macro such as @daily"
        )
    if text.startswith("@"):
        if text in MACROS:
            return text
        raise ValueError(f"'{text}' is not supported; {NOT_CLASSIC} ({', '.join(MACROS)})")
    fields = text.split(" ")
    if len(fields) in (6, 7):
        raise ValueError(
            f"'{text}' has {len(fields)} fields, but a seconds or year field is not classic cron; "
            f"{NOT_CLASSIC} ({_FIELD_ORDER})"
        )
    if len(fields) != 5:
        raise ValueError(f"'{text}' has {len(fields)} field(s); cron needs exactly 5: {_FIELD_ORDER}")
    for field, spec in zip(_FIELDS, fields, strict=True):
        for element in spec.split(","):
            _check_element(field, element, text)
    try:
        fields = _expand(text)
    except CroniterError as exc:
        raise ValueError(f"'{text}' is not valid cron: {exc}") from None
    _refuse_if_never_fires(text, fields)
    return text


def _check_element(field: _Field, element: str, text: str) -> None:
    """One comma-separated element of a field: '*', a value, a range, each with an optional step."""
    match = _ELEMENT.fullmatch(element)
    if match is None:
        if _EXTENSION_CHARS.search(element):
            raise ValueError(
                f"'{text}': '{element}' in the {field.name} field is not classic cron; {NOT_CLASSIC}"
            )
        raise ValueError(
            f"'{text}': '{element}' in the {field.name} field is not a value, a range (a-b), "
            "a step (*/n, a-b/n, a/n) or a list of those"
        )
    start, end, step = match.group("start", "end", "step")
    if step is not None and int(step) < 1:
        raise ValueError(f"'{text}': the step in '{element}' must be 1 or more")
    if start is None:
        return
    low = field.value(start, text)
    high = field.value(end, text) if end is not None else None
    # croniter reads these differently from classic cron, so a user would not get what they wrote.
    if high is not None and _same_value(field, low, high) and low >= high:
        raise ValueError(
            f"'{text}': the range '{element}' starts and ends on the same value, which croniter "
            f"reads as the whole {field.name} field; write the single value or '*'"
        )
    if field.name == "day-of-week" and low == 7 and (high is not None or step is not None):
        raise ValueError(f"'{text}': '{element}' starts a range or step at 7; write 0 for Sunday there")


def _same_value(field: _Field, low: int, high: int) -> bool:
    if field.name == "day-of-week":
        return low % 7 == high % 7
    return low == high


def _refuse_if_never_fires(text: str, fields: _CronFields) -> None:
    # With both day fields restricted croniter ORs them, and every month has every weekday.
    if fields.days is None or fields.weekdays is not None:
        return
    months = fields.months or range(1, 13)
    if min(fields.days) > max(_LONGEST_MONTH[m - 1] for m in months):
        in_months = ", ".join(_MONTHS[m - 1] for m in months)
        raise ValueError(f"'{text}' never fires: there is no day {min(fields.days)} in {in_months}")


# --- croniter's view ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _CronFields:
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


def _expand(text: str) -> _CronFields:
    expanded, _ = croniter.expand(text)

    def values(field: list[int | str]) -> tuple[int, ...] | None:
        # A '*' anywhere in a list ('*,5') means every value, as croniter's _calc reads it.
        return None if "*" in field else tuple(sorted(int(v) for v in field))

    return _CronFields(*(values(field) for field in expanded))


def cron_next_times(expr: str, tz: str, after: datetime, count: int) -> list[datetime]:
    """croniter's next ``count`` fire times strictly after the aware ``after``, computed in zone ``tz``.

    The times are aware and in ``tz``. Two times in a repeated hour share a wall clock and
    differ only in ``fold``, and Python compares datetimes of one zone by wall clock alone:
    compare them in UTC or by timestamp.
    """
    _require_aware(after, "after")
    text = check_cron(expr)
    fires = croniter(text, after.astimezone(_zone(tz)), ret_type=datetime)
    return [fires.get_next(datetime) for _ in range(count)]


# --- the Temporal spec -------------------------------------------------------------------------


def schedule_spec(trigger: TriggerConfig, *, anchor: datetime) -> ScheduleSpec:
    """The Temporal Schedule spec that fires exactly when ``trigger_next_times`` says.

    ``anchor`` is when the trigger was set: intervals count from it, and clock changes are
    pinned from it on.
    """
    _require_aware(anchor, "anchor")
    match trigger.kind:
        case "cron":
            assert trigger.schedule is not None
            return _cron_spec(check_cron(trigger.schedule), _timezone_of(trigger), anchor)
        case "interval":
            assert trigger.interval_minutes is not None
            every, first = _interval(trigger.interval_minutes, anchor)
            offset = timedelta(seconds=int(first.timestamp()) % int(every.total_seconds()))
            # Temporal fires at the epoch plus offset plus multiples of every; start_at drops
            # any such time before the first one counted from the anchor.
            return ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every, offset=offset)], start_at=first)
        case "at":
            assert trigger.at is not None
            return _at_spec(_one_shot(trigger.at))
    raise ValueError("the trigger has none of schedule, interval_minutes or at")


def trigger_next_times(
    trigger: TriggerConfig, *, anchor: datetime, after: datetime, count: int
) -> list[datetime]:
    """The next ``count`` times (fewer for a one-shot) strictly after ``after`` at which the trigger fires.

    For a cron these are croniter's times, which the spec reproduces exactly except inside
    the repeated hour of a fall-back clock change (docs/triggers.md, "Clock changes").
    """
    _require_aware(anchor, "anchor")
    _require_aware(after, "after")
    match trigger.kind:
        case "cron":
            assert trigger.schedule is not None
            return cron_next_times(trigger.schedule, _timezone_of(trigger), after, count)
        case "interval":
            assert trigger.interval_minutes is not None
            every, first = _interval(trigger.interval_minutes, anchor)
            passed = (after - first) // every + 1 if after >= first else 0
            return [first + (passed + k) * every for k in range(count)]
        case "at":
            assert trigger.at is not None
            at = _one_shot(trigger.at)
            return [at] if at > after and count > 0 else []
    raise ValueError("the trigger has none of schedule, interval_minutes or at")


def _cron_spec(text: str, tz: str, anchor: datetime) -> ScheduleSpec:
    fields = _expand(text)
    pinned, skipped = _clock_change_calendars(text, fields, _zone(tz), anchor)
    return ScheduleSpec(calendars=[*_calendars(text, fields), *pinned], skip=skipped, time_zone_name=tz)


def _calendars(text: str, fields: _CronFields) -> list[ScheduleCalendarSpec]:
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


def _interval(minutes: int, anchor: datetime) -> tuple[timedelta, datetime]:
    """The period, and the first fire: one period after the anchor (Temporal counts whole seconds)."""
    if minutes < 1:
        raise ValueError(f"interval_minutes must be 1 or more (got {minutes})")
    every = timedelta(minutes=minutes)
    return every, anchor.astimezone(UTC).replace(microsecond=0) + every


def _one_shot(at: datetime) -> datetime:
    """The second a one-shot fires in (Temporal counts whole seconds), in UTC."""
    _require_aware(at, "at")
    second = at.astimezone(UTC).replace(microsecond=0)
    if not 2000 <= second.year <= LAST_CALENDAR_YEAR:
        raise ValueError(
            f"at {second.isoformat()} is outside the years Temporal schedules (2000-{LAST_CALENDAR_YEAR})"
        )
    return second


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


# --- clock changes -----------------------------------------------------------------------------


def _clock_change_calendars(
    text: str, fields: _CronFields, zone: ZoneInfo, anchor: datetime
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
    for change in _offset_changes(zone.key, anchor.year):
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
def _offset_changes(zone_key: str, first_year: int) -> tuple[datetime, ...]:
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


# --- small helpers -----------------------------------------------------------------------------


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone '{tz}' (use an IANA name such as 'Europe/Berlin')") from None


def _timezone_of(trigger: TriggerConfig) -> str:
    if not trigger.timezone:
        raise ValueError("a cron trigger needs its time zone (the normalizer injects one)")
    return trigger.timezone


def _require_aware(moment: datetime, name: str) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be a time-zone aware datetime (got {moment.isoformat()})")
