"""The default spread of a schedule (pure): up to 5 min, at most a tenth of the shortest gap between fires,
a cron only; a skill's own jitter wins, and a one-shot has none."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from skills.spec.models import TriggerConfig
from skills.when.calendar import Forecast, UpcomingFire
from skills.when.spread import default_spread, spread_seconds


@pytest.mark.parametrize(("schedule", "seconds"), [
    ("0 9 * * *", 300), ("0 * * * *", 300), ("@hourly", 300), ("30 9 * * mon-fri", 300),
    ("* * * * *", 6), ("*/15 * * * *", 90), ("*/5 * * * *", 30), ("0,1 9 * * *", 6),
    ("5,55 * * * *", 60),  # 55 -> 05 of the next hour: 10 min apart
    ("0,30 * * * *", 180), ("0 */2 * * *", 300),
])
def test_a_cron_is_spread_by_at_most_a_tenth_of_its_shortest_gap_and_5_min(schedule: str, seconds: int) -> None:
    assert default_spread(TriggerConfig(schedule=schedule, timezone="Europe/Berlin")) == seconds


def test_an_interval_a_one_shot_and_no_schedule_get_no_default() -> None:
    at = TriggerConfig(at=datetime(2027, 1, 1, 9, tzinfo=UTC))
    interval = TriggerConfig(interval_minutes=60)
    assert [default_spread(t) for t in (at, interval, None, TriggerConfig(event="x"))] == [0, 0, 0, 0]
    # A one-shot fires at its time whatever is asked; an interval takes its own jitter, not the default.
    assert spread_seconds(at, 120, True) == 0
    assert (spread_seconds(interval, 120, False), spread_seconds(interval, 0, True)) == (120, 0)


def test_its_own_jitter_wins_and_no_spread_is_none() -> None:
    hourly = TriggerConfig(schedule="0 * * * *", timezone="UTC")
    assert spread_seconds(hourly, 0, True) == 300
    assert spread_seconds(hourly, 0, False) == 0
    assert spread_seconds(hourly, 45, True) == spread_seconds(hourly, 45, False) == 45


def test_the_fires_listed_say_their_spread_in_the_span_form() -> None:
    fire = UpcomingFire(at=datetime(2027, 1, 4, 9, tzinfo=UTC))
    lines = Forecast(skill_id=1, name="x", trigger="t", fires=[fire], spread_seconds=300).lines()
    assert lines == ["2027-01-04 09:00 Mon (spread up to 5 min)"]
    assert Forecast(skill_id=1, name="x", trigger="t", fires=[fire], spread_seconds=6).lines() == \
        ["2027-01-04 09:00 Mon (spread up to 6 s)"]
    assert Forecast(skill_id=1, name="x", trigger="t", fires=[fire]).lines() == ["2027-01-04 09:00 Mon"]
