"""The default spread of a schedule (pure): up to 5 min, at most a tenth of the shortest gap between fires,
a cron only; a skill's own jitter wins, and a one-shot has none."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from skills.spec.models import TriggerConfig
from skills.when.calendar import Forecast, UpcomingFire
from skills.when.spread import Crowd, crowd, crowded, default_spread, spread_seconds


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


# --- a spread only where it helps: the crowd of a minute ---------------------------------------------------------

MONDAY = datetime(2027, 3, 1, 7, 0, tzinfo=UTC)
"""A pinned "now": Monday 2027-03-01, 07:00 UTC (08:00 in Berlin)."""


def test_the_crowd_is_the_skills_that_fire_in_its_busiest_minute_whatever_their_zone() -> None:
    """Counted by instant: 08:30 in Berlin is 07:30 in UTC; a weekday cron meets a daily one on Monday."""
    daily = TriggerConfig(schedule="30 8 * * *", timezone="Europe/Berlin")
    counts = {("30 7 * * *", "UTC"): 2, ("30 8 * * mon-fri", "Europe/Berlin"): 3, ("30 8 * * *", "UTC"): 50,
              ("0 * * * *", "Europe/Berlin"): 40, ("31 8 * * *", "Europe/Berlin"): 7}
    found = crowd(daily, counts, MONDAY)
    assert (found.skills, found.at) == (5, datetime(2027, 3, 1, 7, 30, tzinfo=UTC))
    # Alone in its minute: none but itself.
    assert crowd(daily, {("0 9 * * *", "UTC"): 9}, MONDAY).skills == 0
    assert crowd(daily, {}, MONDAY) == Crowd(skills=0, at=datetime(2027, 3, 1, 7, 30, tzinfo=UTC))


def test_a_minute_is_crowded_past_what_the_workers_start_within_the_spread() -> None:
    """8 fires a second for 5 minutes: 2,400 start within a 5-min spread; the 2,401st sharing the minute
    makes it crowded. A cron spread 6 s at most is crowded past 48."""
    assert not crowded(Crowd(skills=2_399), 300, 8.0)  # 2,400 with the new one
    assert crowded(Crowd(skills=2_400), 300, 8.0)
    assert (crowded(Crowd(skills=47), 6, 8.0), crowded(Crowd(skills=48), 6, 8.0)) == (False, True)
    # 0 a second: every minute is crowded (every Agent-tier cron spread, as it once was).
    assert crowded(Crowd(), 300, 0.0)
