"""The fires counted a day at a time (``count_fires``, the 30-day outlook's) are the fires the calendar reads
(``fire_times``), one by one: around clock changes (Lord Howe's is half an hour), with skipped days, an
``end_at`` and the runs ``max_runs`` leaves. Pure code: every time is drawn."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skills.spec.models import TriggerConfig
from skills.when import calendar
from skills.when.calendar import count_fires, fire_times
from skills.when.triggers import trigger_times
from tests.adapters.test_schedule_spec import cron_expression
from tests.skills.when.test_triggers_stepping import around_a_change

ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)


def read_one_by_one(trigger: TriggerConfig, now: datetime, end: datetime, **options: object) -> int:
    """What the outlook counted before: every fire read, the skipped ones left out, up to ``end``."""
    counted = 0
    for at, reason in fire_times(trigger, anchor=ANCHOR, now=now, **options):  # type: ignore[arg-type]
        if at > end:
            break
        counted += reason is None
    return counted


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cron_expression(min_minute_step=10), around_a_change(), st.integers(0, 6 * 24 * 60),
       st.sampled_from([None, "US", "DE"]), st.booleans(),
       st.one_of(st.none(), st.integers(0, 5 * 24 * 60)), st.one_of(st.none(), st.integers(0, 300)))
def test_counted_a_day_at_a_time_is_read_one_by_one(expr: str, where: tuple[str, datetime], minutes: int,
                                                    holidays: str | None, business: bool, ends_in: int | None,
                                                    runs_left: int | None) -> None:
    zone, now = where
    # The window starts up to two days before a clock change and lasts up to six: whole days on both sides.
    now -= timedelta(days=1)
    trigger = TriggerConfig(schedule=expr, timezone=zone)
    end = now + timedelta(minutes=minutes)
    options = {"skip_holidays": holidays, "business_days_only": business, "runs_left": runs_left,
               "end_at": None if ends_in is None else now + timedelta(minutes=ends_in)}
    assert count_fires(trigger, anchor=ANCHOR, now=now, end=end, **options) == \
        read_one_by_one(trigger, now, min(end, options["end_at"] or end), **options)  # type: ignore[arg-type]


def test_a_month_of_every_minute_is_counted_without_reading_each(monkeypatch: pytest.MonkeyPatch) -> None:
    trigger = TriggerConfig(schedule="* * * * *", timezone="Europe/Berlin")
    now = datetime(2026, 10, 10, 12, 0, 30, tzinfo=UTC)  # the clock goes back on the 25th: a 25-hour day, every minute of it once
    end = now + timedelta(days=30)
    assert read_one_by_one(trigger, now, end) == 30 * 24 * 60
    steps = []

    def counted_times(*args: object, **kwargs: object) -> Iterator[datetime]:
        for at in trigger_times(*args, **kwargs):  # type: ignore[arg-type]
            steps.append(at)
            yield at

    monkeypatch.setattr(calendar, "trigger_times", counted_times)
    assert count_fires(trigger, anchor=ANCHOR, now=now, end=end) == 30 * 24 * 60
    # Three days read, the window's two ends and the 25-hour one (each a step past its end), instead of 43,200
    # fires: seconds of CPU on every proposal of such a skill.
    assert len(steps) < 3 * 25 * 60 + 3
