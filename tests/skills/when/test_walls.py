"""A cron's next fire read from its fields (``skills.when.walls.plain_next``) is croniter's own, and it answers
wherever the clock does not change near: drawn expressions, zones with every kind of clock change (an hour, half
an hour, two hours, back in winter, at midnight, a day dropped) and times around their changes. Pure code: every
time is drawn."""

from __future__ import annotations

import functools
import itertools
from datetime import UTC, datetime, timedelta

from croniter import croniter
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from skills.when.triggers import check_cron, cron_times, expand_cron, zone_info
from skills.when.walls import next_wall, plain_next
from tests.adapters.test_schedule_spec import cron_expression, cron_field

ZONES = (
    "Europe/Berlin",  # an hour forward at 02:00, back at 03:00
    "America/New_York",  # west of UTC
    "Australia/Lord_Howe",  # half an hour
    "Antarctica/Troll",  # two hours
    "Europe/Dublin",  # "summer" is its standard time: the negative DST of the tz database
    "America/Santiago",  # at midnight
    "America/Havana",  # at midnight, the other way
    "Africa/Casablanca",  # four changes a year, around Ramadan
    "Pacific/Chatham",  # +12:45 / +13:45
    "Pacific/Apia",  # 2011-12-30 dropped whole
    "Asia/Tehran",  # changes until 2022, none after
)
YEARS = (2011, 2030)
WALLS = (datetime(2000, 1, 1, tzinfo=UTC).replace(tzinfo=None), datetime(2090, 1, 1, tzinfo=UTC).replace(tzinfo=None))
"""Naive wall clocks drawn: 2000 to 2090."""
NIGHT_HOURS = st.sampled_from(["*", "0", "1", "2", "3", "23", "0-4", "1,2", "2,3", "22-3", "*/3", "0,23", "1-3"])
EXAMPLES = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@functools.cache
def changes(zone: str) -> tuple[datetime, ...]:
    """The instants (to the minute) ``zone`` changed its offset in ``YEARS``: a day at a time, then the minute."""
    tz = zone_info(zone)
    found = []
    at, end = datetime(YEARS[0], 1, 1, tzinfo=UTC), datetime(YEARS[1], 1, 1, tzinfo=UTC)
    while at < end:
        later = at + timedelta(days=1)
        if at.astimezone(tz).utcoffset() != later.astimezone(tz).utcoffset():
            low, high = at, later
            while high - low > timedelta(minutes=1):
                middle = low + (high - low) / 2
                low, high = (middle, high) if middle.astimezone(tz).utcoffset() == at.astimezone(tz).utcoffset() \
                    else (low, middle)
            found.append(high.replace(second=0, microsecond=0))
        at = later
    return tuple(found)


@st.composite
def near_a_change(draw: st.DrawFn) -> tuple[str, datetime]:
    """A zone and a time within three days of one of its changes, to the microsecond; most often in the day
    before it, so that the fires read next cross it."""
    zone = draw(st.sampled_from(ZONES))
    change = draw(st.sampled_from(changes(zone)))
    minutes = st.one_of(st.integers(-26 * 60, 60), st.integers(-26 * 60, 60), st.integers(-3 * 24 * 60, 3 * 24 * 60))
    return zone, change + timedelta(minutes=draw(minutes),
                                    seconds=draw(st.integers(0, 59)),
                                    microseconds=draw(st.sampled_from([0, 1, 999_999, 500_000])))


def croniters_next(text: str, zone: str, after: datetime) -> datetime:
    return croniter(text, after.astimezone(zone_info(zone)), ret_type=datetime).get_next(datetime)


def croniters(text: str, zone: str, after: datetime, count: int) -> list[datetime]:
    """croniter asked afresh from each time: what the calendar's times must be."""
    found, at = [], after
    for _ in range(count):
        at = croniters_next(text, zone, at)
        found.append(at)
    return found


def exactly(times: list[datetime]) -> list[tuple[float, timedelta | None, datetime]]:
    """Instant, offset and wall clock: a repeated hour's two times share a wall clock, and differ in offset."""
    return [(at.timestamp(), at.utcoffset(), at.replace(tzinfo=None)) for at in times]


@st.composite
def mostly_daily(draw: st.DrawFn) -> str:
    """An expression whose days are mostly every day, so that a time near a change has fires near it too."""
    def often_every(field: st.SearchStrategy[str]) -> str:
        return draw(st.one_of(st.just("*"), field)) if draw(st.booleans()) else "*"

    expr = " ".join([draw(st.one_of(cron_field(0, 59), st.sampled_from(["0", "30", "*/15", "59"]))),
                     draw(st.one_of(NIGHT_HOURS, cron_field(0, 23))),
                     often_every(cron_field(1, 31)), often_every(cron_field(1, 12)),
                     often_every(cron_field(0, 6, sunday_is_7=True))])
    try:
        return check_cron(expr)
    except ValueError:
        assume(False)
        raise


expressions = st.one_of(mostly_daily(), cron_expression(), cron_expression(hours=NIGHT_HOURS))


@EXAMPLES
@given(expressions, near_a_change())
def test_a_fire_read_from_the_fields_is_croniters(expr: str, where: tuple[str, datetime]) -> None:
    zone, at = where
    text = check_cron(expr)
    for expected in croniters(text, zone, at, 12):  # each of croniter's steps across the change, asked of both
        read = plain_next(expand_cron(text), zone_info(zone), at.astimezone(zone_info(zone)))
        if read is not None:
            assert exactly([read]) == exactly([expected])
        at = expected


@EXAMPLES
@given(expressions, near_a_change())
def test_the_times_read_across_a_change_are_croniters(expr: str, where: tuple[str, datetime]) -> None:
    zone, after = where
    text = check_cron(expr)
    assert exactly(list(itertools.islice(cron_times(text, zone, after), 12))) == exactly(croniters(text, zone, after, 12))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(expressions, st.sampled_from(["UTC", "Asia/Kolkata", "Asia/Tokyo"]),
       st.datetimes(*WALLS))
def test_where_the_clock_never_changes_every_fire_is_read_from_the_fields(expr: str, zone: str,
                                                                           start: datetime) -> None:
    text = check_cron(expr)
    after = start.replace(tzinfo=zone_info(zone))
    at = after
    for expected in croniters(text, zone, after, 5):
        read = plain_next(expand_cron(text), zone_info(zone), at)
        assert read is not None
        assert exactly([read]) == exactly([expected])
        at = read


def test_a_daily_fire_a_week_from_a_change_is_read_from_the_fields_and_one_beside_it_is_croniters() -> None:
    fields, berlin = expand_cron("30 2 * * *"), zone_info("Europe/Berlin")
    summer = datetime(2026, 6, 10, 12, tzinfo=UTC).astimezone(berlin)
    assert plain_next(fields, berlin, summer) == datetime(2026, 6, 11, 2, 30, tzinfo=berlin)
    spring = datetime(2026, 3, 28, 12, tzinfo=UTC).astimezone(berlin)  # 02:30 on the 29th does not exist
    assert plain_next(fields, berlin, spring) is None
    assert next(cron_times("30 2 * * *", "Europe/Berlin", spring)) == datetime(2026, 3, 29, 3, tzinfo=berlin)


@given(cron_field(1, 31), st.sampled_from(["*", "feb", "2,4", "*/5"]), st.sampled_from(["*", "mon", "0,6", "7"]),
       st.datetimes(*WALLS))
def test_the_first_matching_wall_minute_is_croniters_without_a_zone(days: str, months: str, weekdays: str,
                                                                   start: datetime) -> None:
    try:
        text = check_cron(f"15 */5 {days} {months} {weekdays}")
    except ValueError:
        return  # never fires
    minute = start.replace(second=0, microsecond=0)
    expected = croniter(text, minute - timedelta(minutes=1)).get_next(datetime)
    assert next_wall(expand_cron(text), minute) == expected
