"""adapters.schedule_spec and skills.when.triggers: cron checking, croniter's fire times, and the
Temporal spec that reproduces them.

The property tests run the spec through ``TemporalSimulator``, a line-by-line port of the
Temporal server's schedule arithmetic (service/worker/scheduler/calendar.go and spec.go,
server 1.32, including how Go's ``time.Date`` resolves skipped and repeated wall times).
tests/adapters/test_schedule_spec_server.py checks the simulator against the real server.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from temporalio.client import ScheduleCalendarSpec, ScheduleIntervalSpec, ScheduleRange, ScheduleSpec

from adapters.schedule_spec import schedule_spec
from skills.spec.models import TriggerConfig
from skills.when.triggers import (
    MACROS,
    NOT_CLASSIC,
    check_cron,
    cron_next_times,
    trigger_next_times,
)

ANCHOR = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
NAIVE = ANCHOR.replace(tzinfo=None)
DST_ZONES = (
    "America/New_York",
    "Europe/Berlin",
    "Australia/Sydney",
    "Europe/Dublin",
    "America/Santiago",
    "Australia/Lord_Howe",
)


# --- a simulator of Temporal's schedule arithmetic -----------------------------------------------


def _offset(zone: ZoneInfo, unix: int) -> int:
    offset = datetime.fromtimestamp(unix, zone).utcoffset()
    assert offset is not None
    return int(offset.total_seconds())


def go_date(zone: ZoneInfo, year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    """Go's ``time.Date`` as Unix seconds: overflowing fields carry, and a wall time that is
    skipped or repeated takes the offset Go's zone lookup finds for it."""
    wall = datetime(year, month, 1, tzinfo=UTC) + timedelta(
        days=day - 1, hours=hour, minutes=minute, seconds=second
    )
    unix = int(wall.timestamp())
    offset = _offset(zone, unix)
    if _offset(zone, unix - offset) != offset:
        offset = _offset(zone, unix - offset)
    return unix - offset


def _days_in_month(month: int, year: int) -> int:
    if month == 2:
        return 29 if calendar.isleap(year) else 28
    return 30 + ((0b1010110101010 >> month) & 1)  # Go's table, also for month 13


def _values(ranges: Sequence[ScheduleRange], default: range) -> frozenset[int]:
    if not ranges:
        return frozenset(default)
    return frozenset(v for r in ranges for v in range(r.start, max(r.end, r.start) + 1, r.step or 1))


class _Calendar:
    """compiledCalendar: one structured calendar read in the spec's zone."""

    def __init__(self, spec: ScheduleCalendarSpec, zone: ZoneInfo) -> None:
        self.zone = zone
        self.second = _values(spec.second, range(60))
        self.minute = _values(spec.minute, range(60))
        self.hour = _values(spec.hour, range(24))
        self.day = _values(spec.day_of_month, range(1, 32))
        self.month = _values(spec.month, range(1, 13))
        self.year = _values(spec.year, range(2000, 2101))
        self.weekday = _values(spec.day_of_week, range(7))

    def matches(self, unix: int) -> bool:
        t = datetime.fromtimestamp(unix, self.zone)
        return (
            t.year in self.year
            and t.month in self.month
            and t.day in self.day
            and t.isoweekday() % 7 in self.weekday
            and t.hour in self.hour
            and t.minute in self.minute
            and t.second in self.second
        )

    def next(self, unix: int) -> int | None:
        """The first matching second after ``unix``; Go's labelled ``continue Outer`` is ``restart``."""
        zone = self.zone
        t = datetime.fromtimestamp(unix, zone)
        y, mo, d, h, m, s = t.year, t.month, t.day, t.hour, t.minute, t.second
        # In the second copy of a repeated hour, wall times are read one hour later.
        dst_offset = 3600 if datetime.fromtimestamp(unix - 3600, zone).hour == h else 0
        s += 1
        while True:
            if s >= 60:
                m, s = m + 1, 0
            if m >= 60:
                before = go_date(zone, y, mo, d, h, 0, 0)
                h, m = h + 1, 0
                if dst_offset == 0 and go_date(zone, y, mo, d, h, 0, 0) - before > 3600:
                    h, dst_offset = h - 1, 3600
                else:
                    dst_offset = 0
            if h >= 24:
                d, h = d + 1, 0
            if d > _days_in_month(mo, y):
                mo, d = mo + 1, 1
            if mo > 12:
                y, mo = y + 1, 1
            if y > 2100:
                return None
            if y not in self.year:
                y, mo, d, h, m, s, dst_offset = y + 1, 1, 1, 0, 0, 0, 0
                continue
            restart = False
            while not restart and mo not in self.month:
                mo, d, h, m, s, dst_offset = mo + 1, 1, 0, 0, 0, 0
                restart = mo > 12
            while not restart and (d not in self.day or self._weekday(y, mo, d, h, m, s) not in self.weekday):
                d, h, m, s, dst_offset = d + 1, 0, 0, 0, 0
                restart = d > _days_in_month(mo, y)
            while not restart and h not in self.hour:
                h, m, s, dst_offset = h + 1, 0, 0, 0
                restart = h >= 24
            while not restart and m not in self.minute:
                m, s = m + 1, 0
                restart = m >= 60
            while not restart and s not in self.second:
                s += 1
                restart = s >= 60
            if restart:
                continue
            found = go_date(zone, y, mo, d, h, m, s)
            if datetime.fromtimestamp(found, zone).hour != h:  # a wall time the gap swallowed
                h, m, s = h + 1, 0, 0
                continue
            return found + dst_offset

    def _weekday(self, y: int, mo: int, d: int, h: int, m: int, s: int) -> int:
        return datetime.fromtimestamp(go_date(self.zone, y, mo, d, h, m, s), self.zone).isoweekday() % 7


class TemporalSimulator:
    """CompiledSpec.GetNextTime for a ScheduleSpec (calendars, intervals, skips, start and end)."""

    def __init__(self, spec: ScheduleSpec) -> None:
        zone = ZoneInfo(spec.time_zone_name or "UTC")
        self.calendars = [_Calendar(c, zone) for c in spec.calendars]
        self.skips = [_Calendar(c, zone) for c in spec.skip]
        self.intervals = [
            (int(i.every.total_seconds()), int((i.offset or timedelta()).total_seconds()))
            for i in spec.intervals
        ]
        self.start = int(spec.start_at.timestamp()) if spec.start_at else None
        self.end = int(spec.end_at.timestamp()) if spec.end_at else None

    def next_time(self, after: datetime) -> datetime | None:
        unix = int(after.timestamp())
        if self.start is not None and unix < self.start:
            unix = self.start - 1
        nominal: int | None = None
        while nominal is None or any(skip.matches(nominal) for skip in self.skips):
            nominal = self._raw_next(unix)
            if nominal is None or (self.end is not None and nominal > self.end):
                return None
            unix = nominal
        return datetime.fromtimestamp(nominal, UTC)

    def next_times(self, after: datetime, count: int) -> list[datetime]:
        times: list[datetime] = []
        while len(times) < count and (following := self.next_time(times[-1] if times else after)) is not None:
            times.append(following)
        return times

    def _raw_next(self, unix: int) -> int | None:
        candidates = [n for c in self.calendars if (n := c.next(unix)) is not None]
        candidates += [((unix - phase) // every + 1) * every + phase for every, phase in self.intervals]
        return min(candidates, default=None)


def utc(times: Sequence[datetime]) -> list[datetime]:
    """Times compared by instant: two datetimes of one zone compare by wall clock alone."""
    return [t.astimezone(UTC) for t in times]


def is_repeated_wall_time(moment: datetime, zone: ZoneInfo) -> bool:
    local = moment.astimezone(zone)
    return local.replace(fold=1 - local.fold).utcoffset() != local.utcoffset()


# --- check_cron ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "normalized"),
    [
        ("0 9 * * 1-5", "0 9 * * 1-5"),
        ("  0   9\t* *  MON-FRI ", "0 9 * * mon-fri"),
        ("*/15 * * * *", "*/15 * * * *"),
        ("5-55/10 * * * *", "5-55/10 * * * *"),
        ("10/5 * * * *", "10/5 * * * *"),
        ("0 0 1,15 jan,JUL *", "0 0 1,15 jan,jul *"),
        ("0 12 * * 7", "0 12 * * 7"),
        ("0 12 * * 0-7", "0 12 * * 0-7"),
        ("0 12 * * 5-7", "0 12 * * 5-7"),
        ("0 22-2 * * *", "0 22-2 * * *"),
        ("0 0 * * sat-sun", "0 0 * * sat-sun"),
        ("0 0 29 2 *", "0 0 29 2 *"),
        ("0 0 30 2 mon", "0 0 30 2 mon"),
        ("0 0 * nov-feb *", "0 0 * nov-feb *"),
        ("@HOURLY", "@hourly"),
        *((macro, macro) for macro in MACROS),
    ],
)
def test_check_cron_accepts_and_normalizes(written: str, normalized: str) -> None:
    assert check_cron(written) == normalized


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("", "empty"),
        ("* * *", "has 3 field(s); cron needs exactly 5: minute hour day-of-month month day-of-week"),
        ("0 0 0 * * * *", NOT_CLASSIC),
        ("0 0 * * * *", "seconds or year field"),
        ("@reboot", NOT_CLASSIC),
        ("@every 5m", NOT_CLASSIC),
        ("@fortnightly", "not supported"),
        ("61 * * * *", "minute 61 is out of range (0-59)"),
        ("0 24 * * *", "hour 24 is out of range (0-23)"),
        ("0 0 0 * *", "day-of-month 0 is out of range (1-31)"),
        ("0 0 * 13 *", "month 13 is out of range (1-12 or jan-dec)"),
        ("0 0 * * 8", "day-of-week 8 is out of range (0-7 with 0 and 7 both Sunday, or sun-sat)"),
        ("0 0 * january *", "'january' is not a valid month"),
        ("0 0 * * monday", "'monday' is not a valid day-of-week"),
        ("0 0 L * *", NOT_CLASSIC),
        ("0 0 15W * *", NOT_CLASSIC),
        ("0 0 LW * *", NOT_CLASSIC),
        ("0 0 * * 5L", NOT_CLASSIC),
        ("0 0 * * 1#2", NOT_CLASSIC),
        ("0 0 ? * 1", NOT_CLASSIC),
        ("H * * * *", NOT_CLASSIC),
        ("H(0-29)/10 * * * *", NOT_CLASSIC),
        ("R * * * *", NOT_CLASSIC),
        ("*/0 * * * *", "must be 1 or more"),
        ("1,,2 * * * *", "is not a value, a range"),
        ("-5 * * * *", "is not a value, a range"),
        ("every hour", "has 2 field(s)"),
        ("0 0 5-5 * *", "starts and ends on the same value"),
        ("0 0 * * 7-0", "starts and ends on the same value"),
        ("0 0 * * 7/2", "write 0 for Sunday"),
        ("0 0 * * 7-3", "write 0 for Sunday"),
        ("0 0 30 2 *", "never fires: there is no day 30 in feb"),
        ("0 0 31 4,6,9,11 *", "never fires: there is no day 31 in apr, jun, sep, nov"),
    ],
)
def test_check_cron_refuses_with_an_actionable_message(expr: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        check_cron(expr)
    assert message in str(refused.value)


def test_a_refusal_quotes_the_expression_normalized() -> None:
    with pytest.raises(ValueError, match=r"^'0 0 \* 13 \*': month 13"):
        check_cron("  0 0 *   13 * ")


# --- the calendars -------------------------------------------------------------------------------


def cron_spec(expr: str, tz: str = "UTC") -> ScheduleSpec:
    return schedule_spec(TriggerConfig(schedule=expr, timezone=tz), anchor=ANCHOR)


def every(low: int, high: int) -> list[ScheduleRange]:
    return [ScheduleRange(low, high)]


def test_restricted_day_fields_are_ored_as_two_calendars() -> None:
    spec = cron_spec("0 9 1,15 * mon")
    by_day, by_weekday = spec.calendars
    assert by_day.day_of_month == [ScheduleRange(1), ScheduleRange(15)] and by_day.day_of_week == every(0, 6)
    assert by_weekday.day_of_month == every(1, 31) and by_weekday.day_of_week == [ScheduleRange(1)]
    for c in spec.calendars:
        assert (
            c.minute == [ScheduleRange(0)] and c.hour == [ScheduleRange(9)] and c.second == [ScheduleRange(0)]
        )
    assert spec.cron_expressions == [] and spec.time_zone_name == "UTC"


@pytest.mark.parametrize("expr", ["0 9 1,15 * *", "0 9 * * mon", "0 9 * * *", "0 0 * * 0-6", "0 0 */1 * 0-6"])
def test_one_day_field_restricted_is_one_calendar(expr: str) -> None:
    assert len(cron_spec(expr).calendars) == 1


def test_a_full_day_of_month_list_still_ors_as_croniter_does() -> None:
    # croniter keeps 1-31 as a list when the other day field has no '*', so it ORs: every day.
    day_side, weekday_side = cron_spec("0 0 1-31 * mon").calendars
    assert day_side.day_of_month == every(1, 31) and weekday_side.day_of_week == [ScheduleRange(1)]


def test_names_and_seven_for_sunday() -> None:
    (c,) = cron_spec("0 12 * jan-mar,DEC sun").calendars
    assert c.month == [ScheduleRange(1, 3, 1), ScheduleRange(12)] and c.day_of_week == [ScheduleRange(0)]
    assert cron_spec("0 12 * * 7").calendars[0].day_of_week == [ScheduleRange(0)]
    assert cron_spec("0 12 * * 5-7").calendars[0].day_of_week == [ScheduleRange(0), ScheduleRange(5, 6, 1)]
    assert cron_spec("0 12 * * 0-7").calendars[0].day_of_week == every(0, 6)


@pytest.mark.parametrize(
    ("minute_field", "ranges"),
    [
        ("5-55/10", [ScheduleRange(5, 55, 10)]),
        ("*/15", [ScheduleRange(0, 45, 15)]),
        ("0,1,2,3,10,20,30", [ScheduleRange(0, 3, 1), ScheduleRange(10, 30, 10)]),
        ("1,15", [ScheduleRange(1), ScheduleRange(15)]),
        ("7,8", [ScheduleRange(7, 8, 1)]),
        ("50-10", [ScheduleRange(0, 10, 1), ScheduleRange(50, 59, 1)]),
        ("59/15", [ScheduleRange(59)]),
        ("*", [ScheduleRange(0, 59)]),
    ],
)
def test_minute_values_compress_into_ranges(minute_field: str, ranges: list[ScheduleRange]) -> None:
    assert cron_spec(f"{minute_field} * * * *").calendars[0].minute == ranges


@pytest.mark.parametrize("macro", list(MACROS))
def test_a_macro_maps_like_its_five_fields(macro: str) -> None:
    def fields(spec: ScheduleSpec) -> list[tuple[object, ...]]:
        return [(c.second, c.minute, c.hour, c.day_of_month, c.month, c.day_of_week) for c in spec.calendars]

    assert fields(cron_spec(macro)) == fields(cron_spec(MACROS[macro]))


def test_a_zone_without_clock_changes_needs_no_dated_calendars() -> None:
    spec = cron_spec("*/5 * * * *", "Asia/Tokyo")
    assert len(spec.calendars) == 1 and spec.skip == [] and spec.time_zone_name == "Asia/Tokyo"


def test_a_cron_far_from_any_clock_change_gets_no_dated_calendars() -> None:
    spec = cron_spec("0 9 * * mon-fri", "Europe/Berlin")
    assert len(spec.calendars) == 1 and spec.skip == []


def test_clock_change_calendars_are_dated_and_within_temporal_years() -> None:
    spec = cron_spec("30 2 * * *", "America/New_York")
    main, *dated = spec.calendars
    assert main.year == () and dated and spec.skip
    for c in [*dated, *spec.skip]:
        assert len(c.day_of_month) == 1 and len(c.month) == 1 and c.year
        assert all(2026 <= r.start <= max(r.end, r.start) <= 2100 for r in c.year)


# --- interval and at -----------------------------------------------------------------------------


def test_an_interval_fires_every_period_from_its_anchor() -> None:
    anchor = datetime(2026, 6, 1, 12, 3, 27, 500_000, tzinfo=UTC)
    trigger = TriggerConfig(interval_minutes=45)
    spec = schedule_spec(trigger, anchor=anchor)
    (interval,) = spec.intervals
    first = datetime(2026, 6, 1, 12, 48, 27, tzinfo=UTC)
    assert interval == ScheduleIntervalSpec(every=timedelta(minutes=45), offset=interval.offset)
    assert spec.start_at == first and spec.calendars == []
    # Temporal fires at the epoch plus offset plus multiples of the period.
    assert (first - datetime(1970, 1, 1, tzinfo=UTC)) % timedelta(minutes=45) == interval.offset
    expected = [first + k * timedelta(minutes=45) for k in range(5)]
    assert trigger_next_times(trigger, anchor=anchor, after=anchor, count=5) == expected
    assert trigger_next_times(trigger, anchor=anchor, after=expected[1], count=2) == expected[2:4]
    assert TemporalSimulator(spec).next_times(anchor - timedelta(days=1), 5) == expected


def test_an_interval_below_one_minute_is_refused() -> None:
    with pytest.raises(ValueError, match="1 or more"):
        schedule_spec(TriggerConfig(interval_minutes=0), anchor=ANCHOR)


def test_at_is_one_calendar_for_exactly_that_second() -> None:
    at = datetime(2027, 3, 14, 2, 30, 15, 900_000, tzinfo=ZoneInfo("Europe/Berlin"))
    spec = schedule_spec(TriggerConfig(at=at), anchor=ANCHOR)
    (once,) = spec.calendars
    fire = datetime(2027, 3, 14, 1, 30, 15, tzinfo=UTC)
    assert (once.year, once.month, once.day_of_month) == (
        [ScheduleRange(2027)],
        [ScheduleRange(3)],
        [ScheduleRange(14)],
    )
    assert (once.hour, once.minute, once.second) == (
        [ScheduleRange(1)],
        [ScheduleRange(30)],
        [ScheduleRange(15)],
    )
    assert spec.time_zone_name == "UTC" and spec.start_at == spec.end_at == fire
    assert TemporalSimulator(spec).next_times(ANCHOR, 3) == [fire]
    trigger = TriggerConfig(at=at)
    assert trigger_next_times(trigger, anchor=ANCHOR, after=ANCHOR, count=3) == [fire]
    assert trigger_next_times(trigger, anchor=ANCHOR, after=fire, count=3) == []


def test_at_beyond_temporal_years_is_refused() -> None:
    with pytest.raises(ValueError, match="2000-2100"):
        schedule_spec(TriggerConfig(at=datetime(2101, 1, 1, tzinfo=UTC)), anchor=ANCHOR)


# --- next fire times -----------------------------------------------------------------------------


def test_cron_next_times_are_strictly_after_and_in_the_zone() -> None:
    after = datetime(2026, 6, 1, 9, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    times = cron_next_times("0 9 * * *", "Europe/Berlin", after, 2)
    assert times == [after + timedelta(days=1), after + timedelta(days=2)]
    assert all(str(t.tzinfo) == "Europe/Berlin" for t in times)
    half_past = datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC)
    assert cron_next_times("* * * * *", "UTC", half_past, 1) == [datetime(2026, 6, 1, 12, 1, tzinfo=UTC)]


def test_trigger_next_times_of_a_cron_is_croniter() -> None:
    trigger = TriggerConfig(schedule="0 9 1,15 * mon", timezone="America/New_York")
    expected = cron_next_times("0 9 1,15 * mon", "America/New_York", ANCHOR, 6)
    assert trigger_next_times(trigger, anchor=ANCHOR, after=ANCHOR, count=6) == expected


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cron_next_times("0 9 * * *", "Mars/Olympus", ANCHOR, 1), "unknown time zone"),
        (lambda: cron_next_times("0 9 * * *", "UTC", NAIVE, 1), "time-zone aware"),
        (lambda: schedule_spec(TriggerConfig(schedule="0 9 * * *"), anchor=ANCHOR), "needs its time zone"),
        (lambda: schedule_spec(TriggerConfig(), anchor=ANCHOR), "none of schedule"),
        (lambda: schedule_spec(TriggerConfig(interval_minutes=5), anchor=NAIVE), "aware"),
        (
            lambda: trigger_next_times(TriggerConfig(), anchor=ANCHOR, after=ANCHOR, count=1),
            "none of schedule",
        ),
    ],
)
def test_bad_calls_are_refused(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


# --- Temporal fires when croniter does -----------------------------------------------------------

TRICKY = [
    "0 9 1,15 * mon",
    "*/15 * 1 * 1-5",
    "0 0 */2 * 0",
    "0 12 * * 7",
    "0 0 29 2 *",
    "5-55/10 * * * *",
    "0 0 31 * *",
    "0 12 13 * fri",
    "0 22-2 * * sat-sun",
    "30 4 1-7 * mon",
    "0 0 * nov-feb 5-7",
    *MACROS,
]


@pytest.mark.parametrize("expr", TRICKY)
def test_temporal_fires_exactly_when_croniter_says(expr: str) -> None:
    after = datetime(2026, 11, 21, 10, 17, tzinfo=UTC)
    expected = [
        t for t in utc(cron_next_times(expr, "UTC", after, 25)) if t.year <= 2100
    ]  # Temporal's last year
    assert TemporalSimulator(cron_spec(expr)).next_times(after, 25) == expected


def test_temporal_own_reading_would_differ() -> None:
    # Why the spec is structural: ANDing the day fields (Temporal's cron reading) loses fires.
    anded = ScheduleSpec(
        calendars=[
            ScheduleCalendarSpec(
                minute=[ScheduleRange(0)],
                hour=[ScheduleRange(9)],
                day_of_month=[ScheduleRange(1), ScheduleRange(15)],
                day_of_week=[ScheduleRange(1)],
            )
        ],
        time_zone_name="UTC",
    )
    after = datetime(2026, 11, 21, tzinfo=UTC)
    assert TemporalSimulator(anded).next_times(after, 5) != utc(
        cron_next_times("0 9 1,15 * mon", "UTC", after, 5)
    )


MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@st.composite
def cron_field(
    draw: st.DrawFn,
    low: int,
    high: int,
    names: Sequence[str] = (),
    sunday_is_7: bool = False,
    min_step: int = 1,
) -> str:
    def value(lowest: int = low, highest: int = high) -> str:
        v = draw(st.integers(lowest, highest))
        return names[v - low] if names and draw(st.booleans()) else str(v)

    def element() -> str:
        step = f"/{draw(st.integers(max(min_step, 1), high - low + 2))}"
        end = str(7) if sunday_is_7 and draw(st.integers(0, 4)) == 0 else value()
        return draw(
            st.sampled_from(
                [
                    "*" if min_step == 1 else f"*{step}",
                    f"*{step}",
                    value(),
                    f"{value()}-{end}",
                    f"{value()}-{end}{step}",
                    f"{value()}{step}",
                ]
            )
        )

    if sunday_is_7 and draw(st.integers(0, 9)) == 0:
        return "7"
    return ",".join(draw(st.lists(st.builds(element), min_size=1, max_size=3)))


@st.composite
def cron_expression(
    draw: st.DrawFn, hours: st.SearchStrategy[str] | None = None, min_minute_step: int = 1
) -> str:
    expr = " ".join(
        [
            draw(cron_field(0, 59, min_step=min_minute_step)),
            draw(hours if hours is not None else cron_field(0, 23)),
            draw(cron_field(1, 31)),
            draw(cron_field(1, 12, MONTHS)),
            draw(cron_field(0, 6, WEEKDAYS, sunday_is_7=True)),
        ]
    )
    try:
        return check_cron(expr)
    except ValueError:
        assume(False)
        raise


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(
    cron_expression(),
    st.datetimes(NAIVE - timedelta(days=7 * 365), NAIVE + timedelta(days=24 * 365)),
    st.sampled_from(["UTC", "Asia/Tokyo", "Asia/Kolkata"]),
)
def test_any_accepted_cron_fires_exactly_when_croniter_says(expr: str, start: datetime, tz: str) -> None:
    after = start.replace(tzinfo=ZoneInfo(tz))
    expected = [t for t in utc(cron_next_times(expr, tz, after, 12)) if t.year <= 2100]
    spec = cron_spec(expr, tz)
    # Every croniter time matches the spec, and the spec matches nothing in between.
    assert all(
        any(_Calendar(c, ZoneInfo(tz)).matches(int(t.timestamp())) for c in spec.calendars) for t in expected
    )
    assert TemporalSimulator(spec).next_times(after, len(expected)) == expected


night_hours = st.sampled_from(["*", "0-4", "1", "2", "3", "1,2", "2,3", "0-23/2", "1-3", "22-3", "*/3"])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(
    cron_expression(hours=night_hours, min_minute_step=5),
    st.sampled_from(DST_ZONES),
    st.integers(2027, 2029),
    st.booleans(),
    st.integers(-6 * 60, 60),
)
def test_around_clock_changes_temporal_fires_only_croniter_times(
    expr: str, tz: str, year: int, later_change: bool, minutes_before: int
) -> None:
    """The documented contract around a clock change (docs/triggers.md): outside a repeated hour
    Temporal fires exactly at croniter's times; inside it, at least once and only at wall times
    croniter fires at there, though not necessarily at every occurrence croniter fires."""
    zone = ZoneInfo(tz)
    changes = _offset_changes_in(zone, year)
    change = changes[-1] if later_change else changes[0]
    after = change - timedelta(minutes=minutes_before) - timedelta(hours=2)
    until = change + timedelta(hours=3)
    expected = {t for t in utc(cron_next_times(expr, tz, after, 60 * 12)) if t <= until}  # 12 h of minutes
    fired = {
        t for t in TemporalSimulator(cron_spec(expr, tz)).next_times(after, len(expected) + 5) if t <= until
    }
    repeated = {wall_clock(t, zone) for t in expected if is_repeated_wall_time(t, zone)}
    assert all(t in expected or wall_clock(t, zone) in repeated for t in fired)
    assert all(is_repeated_wall_time(t, zone) for t in expected - fired)
    # Watched from before it starts, a repeated hour croniter fires in is never left without a fire.
    if minutes_before >= 0:
        assert not repeated or any(is_repeated_wall_time(t, zone) for t in fired)


def wall_clock(moment: datetime, zone: ZoneInfo) -> tuple[int, int, int, int, int]:
    local = moment.astimezone(zone)
    return local.year, local.month, local.day, local.hour, local.minute


def _offset_changes_in(zone: ZoneInfo, year: int) -> list[datetime]:
    hours = [datetime(year, 1, 1, tzinfo=UTC) + timedelta(hours=h) for h in range(366 * 24)]
    return [
        b
        for a, b in zip(hours, hours[1:], strict=False)
        if a.astimezone(zone).utcoffset() != b.astimezone(zone).utcoffset()
    ]


@pytest.mark.parametrize(
    ("tz", "expr", "day", "local_fires"),
    [
        # Spring forward: the swallowed 02:30 fires at the end of the gap, as croniter and classic cron do.
        ("America/New_York", "30 2 * * *", (2027, 3, 14), ["03:00-04:00"]),
        ("Europe/Berlin", "30 2 * * *", (2027, 3, 28), ["03:00+02:00"]),
        (
            "America/New_York",
            "*/30 1-3 * * *",
            (2027, 3, 14),
            ["01:00-05:00", "01:30-05:00", "03:00-04:00", "03:30-04:00"],
        ),
        # Fall back west of UTC: both occurrences of 01:30, as croniter says.
        ("America/New_York", "30 1 * * *", (2027, 11, 7), ["01:30-04:00", "01:30-05:00"]),
        # Fall back east of UTC: never the stray 02:30 CEST Temporal alone adds for '30 1 * * *' ...
        ("Europe/Berlin", "30 1 * * *", (2027, 10, 31), ["01:30+02:00"]),
        # ... and a fixed time in the repeated hour fires once, not twice.
        ("Europe/Berlin", "30 2 * * *", (2027, 10, 31), ["02:30+01:00"]),
        (
            "Europe/Berlin",
            "0 * * * *",
            (2027, 10, 31),
            ["00:00+02:00", "01:00+02:00", "02:00+02:00", "03:00+01:00", "04:00+01:00"],
        ),
    ],
)
def test_clock_change_days(tz: str, expr: str, day: tuple[int, int, int], local_fires: list[str]) -> None:
    zone = ZoneInfo(tz)
    midnight = datetime(*day, tzinfo=zone)
    fired = TemporalSimulator(cron_spec(expr, tz)).next_times(midnight - timedelta(seconds=1), 5)
    on_day = [
        t.astimezone(zone) for t in fired if midnight <= t.astimezone(zone) < midnight + timedelta(hours=5)
    ]
    assert [t.isoformat(timespec="minutes")[11:] for t in on_day] == local_fires
