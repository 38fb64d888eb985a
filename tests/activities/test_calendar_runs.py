"""A day the schedule skips (business days, holidays) is no missed fire: the run after it accounts for no
gap, and a skill's skipped days are not counted as fires held back behind a run still going."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from activities.runs import RunActivities
from adapters.store import Store
from skills.spec.models import SkillSpec, TriggerConfig
from tests.activities.test_runs import fire, runs, store, table  # noqa: F401  (fixtures)

FRIDAY = datetime(2026, 12, 18, 9, 0, tzinfo=UTC)
CHRISTMAS_EVE = datetime(2026, 12, 24, 9, 0, tzinfo=UTC)


def daily(store: Store, **fields: object) -> int:  # noqa: F811
    spec = SkillSpec(agent_id="a", name="standup", trigger_type="cron", instructions="x",
                     trigger_config=TriggerConfig(schedule="0 9 * * *", timezone="UTC"), **fields)
    return store.skills.create_skill(spec, trigger_as_written=None, disabled_reason=None,
                                     now=FRIDAY - timedelta(days=7)).id


def test_the_fire_after_a_weekend_records_no_gap(runs: RunActivities, store: Store) -> None:  # noqa: F811
    skill_id = daily(store, business_days_only=True)
    fire(runs, skill_id, 1, FRIDAY, FRIDAY)
    monday = FRIDAY + timedelta(days=3)
    # Late (the engine was down over the weekend): the fires it missed are accounted, and there were none.
    fire(runs, skill_id, 2, monday, monday + timedelta(seconds=40))
    assert [(at, status) for at, status, _ in table(store, skill_id)] == [(FRIDAY, "success"), (monday, "success")]


def test_the_fire_after_a_holiday_and_a_weekend_records_no_gap(runs: RunActivities, store: Store) -> None:  # noqa: F811
    skill_id = daily(store, business_days_only=True, skip_holidays="US")
    fire(runs, skill_id, 1, CHRISTMAS_EVE, CHRISTMAS_EVE)
    monday = CHRISTMAS_EVE + timedelta(days=4)
    fire(runs, skill_id, 2, monday, monday + timedelta(seconds=40))
    assert [status for _, status, _ in table(store, skill_id)] == ["success", "success"]


def test_a_day_not_skipped_is_still_a_missed_fire(runs: RunActivities, store: Store) -> None:  # noqa: F811
    skill_id = daily(store, business_days_only=True)
    fire(runs, skill_id, 1, FRIDAY, FRIDAY)
    tuesday = FRIDAY + timedelta(days=4)
    # Down from Friday to Tuesday 09:00:40: Monday was a business day, beyond the catch-up window.
    fire(runs, skill_id, 2, tuesday, tuesday + timedelta(seconds=40))
    assert [(at, status) for at, status, _ in table(store, skill_id)] == [
        (FRIDAY, "success"), (FRIDAY + timedelta(days=3), "missed"), (tuesday, "success")]
