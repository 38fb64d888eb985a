"""A cron's times as the calendar reads them (``cron_times``: one kept parse, copied, stepped lazily) are
croniter's own: a fresh croniter asked from each previous time, around clock changes too, and two readers of one
expression in different zones do not move each other. Pure code: every "after" is drawn."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from croniter import croniter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skills.when.triggers import check_cron, cron_times, zone_info
from tests.adapters.test_schedule_spec import cron_expression

# Each zone's clock changes of 2026 (the day, in UTC): a drawn "after" falls within two days of one.
CHANGES = {
    "Europe/Berlin": (datetime(2026, 3, 29, tzinfo=UTC), datetime(2026, 10, 25, tzinfo=UTC)),
    "America/New_York": (datetime(2026, 3, 8, 7, tzinfo=UTC), datetime(2026, 11, 1, 6, tzinfo=UTC)),
    "Australia/Lord_Howe": (datetime(2026, 4, 4, 15, tzinfo=UTC), datetime(2026, 10, 3, 16, tzinfo=UTC)),
    "UTC": (datetime(2026, 6, 1, tzinfo=UTC),),
}
EXAMPLES = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def around_a_change(draw: st.DrawFn) -> tuple[str, datetime]:
    zone = draw(st.sampled_from(sorted(CHANGES)))
    change = draw(st.sampled_from(CHANGES[zone]))
    return zone, change + timedelta(minutes=draw(st.integers(-2 * 24 * 60, 2 * 24 * 60)),
                                    seconds=draw(st.integers(0, 59)))


def fresh(text: str, zone: str, after: datetime, count: int) -> list[datetime]:
    """croniter asked again from each time, a new one each time: what the calendar read before it kept one."""
    found, at = [], after
    for _ in range(count):
        at = croniter(text, at.astimezone(zone_info(zone)), ret_type=datetime).get_next(datetime)
        found.append(at)
    return found


def instants(times: list[datetime]) -> list[tuple[float, timedelta | None]]:
    """Compared by instant and offset: a repeated hour's two times share a wall clock."""
    return [(at.timestamp(), at.utcoffset()) for at in times]


@EXAMPLES
@given(cron_expression(min_minute_step=5), around_a_change())
def test_the_times_read_lazily_are_croniters_asked_afresh(expr: str, where: tuple[str, datetime]) -> None:
    zone, after = where
    text = check_cron(expr)
    read = list(itertools.islice(cron_times(text, zone, after), 12))
    assert instants(read) == instants(fresh(text, zone, after, 12))


@EXAMPLES
@given(cron_expression(min_minute_step=5), around_a_change(), around_a_change())
def test_two_readers_of_one_expression_do_not_move_each_other(expr: str, first: tuple[str, datetime],
                                                               second: tuple[str, datetime]) -> None:
    text = check_cron(expr)
    one, two = cron_times(text, *first), cron_times(text, *second)
    read_one, read_two = [], []
    for _ in range(6):  # in turns: each step of one between two of the other
        read_one.append(next(one))
        read_two.append(next(two))
    assert instants(read_one) == instants(fresh(text, *first, 6))
    assert instants(read_two) == instants(fresh(text, *second, 6))
