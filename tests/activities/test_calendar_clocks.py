"""The code that reads the clock in this process, run under fixed clocks (the ``clock`` fixture: a Friday
afternoon, a Saturday, holiday eves, clock-change days): the registration's first fire, and the next
fires a reply lists. On a Friday afternoon, a weekend or a holiday's eve, a weekday skill was
told it had no next fire, and the suite, asking about whatever day it ran on, passed on other days.

The schedule is created on the real server (whose clock does not move): what is checked is what the
engine computes from its own clock, the answer the user reads.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.schedules import ScheduleActivities
from adapters.schedules import ScheduleWriter
from adapters.store import Store
from config.settings import Settings
from skills.management.answers import coming_fires
from skills.messages.manage import ScheduleSync
from skills.spec.models import Skill, SkillSpec, TriggerConfig
from tests.conftest import eventually

NEW_YORK, BERLIN = ZoneInfo("America/New_York"), ZoneInfo("Europe/Berlin")

FIRST_FIRE = {
    # 0 9 * * *, New York, business days and US holidays: the table, and two clock-change days.
    "friday-afternoon": datetime(2026, 11, 30, 9, 0, tzinfo=NEW_YORK),
    "saturday": datetime(2026, 11, 30, 9, 0, tzinfo=NEW_YORK),
    "thanksgiving-eve": datetime(2026, 11, 27, 9, 0, tzinfo=NEW_YORK),
    "christmas-eve": datetime(2026, 12, 28, 9, 0, tzinfo=NEW_YORK),
    "spring-forward-new-york": datetime(2027, 3, 15, 9, 0, tzinfo=NEW_YORK),
    "fall-back-berlin": datetime(2027, 11, 1, 9, 0, tzinfo=NEW_YORK),
}
FIRST_FIRE_BERLIN = {
    # 30 8 * * *, Berlin, business days and Bavaria's holidays.
    "friday-afternoon": datetime(2026, 11, 30, 8, 30, tzinfo=BERLIN),
    "saturday": datetime(2026, 11, 30, 8, 30, tzinfo=BERLIN),
    "thanksgiving-eve": datetime(2026, 11, 26, 8, 30, tzinfo=BERLIN),
    "christmas-eve": datetime(2026, 12, 28, 8, 30, tzinfo=BERLIN),
    "spring-forward-new-york": datetime(2027, 3, 15, 8, 30, tzinfo=BERLIN),
    "fall-back-berlin": datetime(2027, 11, 2, 8, 30, tzinfo=BERLIN),  # 1 November: All Saints' Day in Bavaria
}


def stored(store: Store, now: datetime, schedule: str, zone: str, holidays: str) -> Skill:
    spec = SkillSpec(agent_id="me", name=f"standup {zone}", trigger_type="cron", instructions="x",
                     trigger_config=TriggerConfig(schedule=schedule, timezone=zone), skip_holidays=holidays,
                     business_days_only=True)
    return store.skills.create_skill(spec, trigger_as_written=None, disabled_reason=None, now=now)


@pytest.fixture
def store(tmp_path: Path, settings: Settings) -> Store:
    # Schedule ids named by the test's own queue: with the default prefix, each test's skill 1 'late' was the
    # schedule 'skills-1-late' on the dev server the xdist worker's tests share, and the second test updated the
    # first's schedule (already fired) instead of creating its own.
    return Store.open(f"sqlite:///{tmp_path / 'skills.db'}", schedule_prefix=settings.task_queue)


async def test_a_weekday_skill_registered_at_any_clock_is_told_its_next_business_day(
        clock: datetime, request: pytest.FixtureRequest, client: Client, settings: Settings, store: Store) -> None:
    name = request.node.callspec.id
    schedules = ScheduleActivities(ScheduleWriter(client), settings, store)
    for skill, expected in ((stored(store, clock, "0 9 * * *", "America/New_York", "US"), FIRST_FIRE[name]),
                            (stored(store, clock, "30 8 * * *", "Europe/Berlin", "DE-BY"), FIRST_FIRE_BERLIN[name])):
        answer = await ActivityEnvironment().run(schedules.create, skill)
        assert answer.next_fire == expected, name
        # What a reply to the new skill lists (the MCP and Telegram answers, the chat's "fires next").
        coming = coming_fires(skill, clock, count=3)
        assert f"{expected:%Y-%m-%d %H:%M %a}" in coming and len([c for c in coming if "skipped" not in c]) == 3
        assert coming[0] == f"{expected:%Y-%m-%d %H:%M %a}" or "skipped" in coming[0]


def one_shot(store: Store, at: datetime, name: str) -> Skill:
    spec = SkillSpec(agent_id="me", name=name, trigger_type="cron", instructions="x",
                     trigger_config=TriggerConfig(at=at))
    return store.skills.create_skill(spec, trigger_as_written=None, disabled_reason=None, now=at - timedelta(seconds=3))


@pytest.mark.parametrize("write", ["create", "sync_schedule"])
async def test_a_one_shot_whose_second_passed_while_it_was_registered_fires_at_once(
        write: str, client: Client, settings: Settings, store: Store) -> None:
    """"In 3 seconds", on a machine slow enough that the registration takes longer: Temporal starts no fire a spec
    names before its schedule exists, so the reminder never came, and maintenance later called it missed. Both
    writes of a new schedule (a bulk item's create, a registration's sync) start it at once, and say so."""
    schedules = ScheduleActivities(ScheduleWriter(client), settings, store)
    now = datetime.now(UTC)
    late = one_shot(store, now - timedelta(seconds=2), "late")
    ahead = one_shot(store, now + timedelta(hours=1), "ahead")
    for skill in (late, ahead):
        if write == "create":
            answer = await ActivityEnvironment().run(schedules.create, skill)
        else:
            answer = await ActivityEnvironment().run(schedules.sync_schedule, ScheduleSync(skill_id=skill.id))
        assert answer.next_fire is not None
        if skill is late:
            assert now <= answer.next_fire <= datetime.now(UTC)  # now, not a time already gone
        else:
            assert answer.next_fire == ahead.trigger_config.at.replace(microsecond=0)

    async def fired() -> int:
        return (await client.get_schedule_handle(late.schedule_id).describe()).info.num_actions

    assert await eventually(fired, timeout=30) == 1
    # The one an hour ahead waits for its own second (the server's answer, not the engine's arithmetic).
    described = await client.get_schedule_handle(ahead.schedule_id).describe()
    assert described.info.num_actions == 0
    assert described.info.next_action_times == [ahead.trigger_config.at.replace(microsecond=0)]
