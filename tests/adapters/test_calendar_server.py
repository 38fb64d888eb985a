"""Skipped days on the real Temporal dev server: the spec's skip calendars remove exactly the fires that
skills.when.calendar marks skipped, for crons and intervals, across a year's end full of holidays.

Like tests/adapters/test_schedule_spec_server.py, each check creates a paused schedule (nothing runs)
whose ``start_at`` moves the window to Christmas 2026, and reads the server's own ``next_action_times``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from temporalio.client import Client

from adapters.schedule_spec import schedule_spec
from skills.spec.models import Skill, TriggerConfig
from skills.when.calendar import skip_window, skipped_days, upcoming
from tests.adapters.test_schedule_spec_server import next_fires

START = datetime(2026, 12, 20, 12, 0, tzinfo=UTC)
ANCHOR = datetime(2026, 12, 1, 0, 0, 30, tzinfo=UTC)


def skill(trigger: TriggerConfig, holidays: str | None, business: bool) -> Skill:
    return Skill(id=1, agent_id="me", name="standup", trigger_type="cron", trigger_config=trigger,
                 instructions="x", created_at=ANCHOR, updated_at=ANCHOR, skip_holidays=holidays,
                 business_days_only=business)


CASES = [
    (TriggerConfig(schedule="0 9 * * *", timezone="America/New_York"), "US", True),
    (TriggerConfig(schedule="30 23 * * fri", timezone="Asia/Tokyo"), "JP", False),  # 2027-01-01 is a Friday
    (TriggerConfig(schedule="0 */6 * * *", timezone="Europe/Berlin"), "DE-BY", True),
    (TriggerConfig(schedule="0 8 * * 1-5", timezone="Europe/London"), "GB-ENG", False),
    (TriggerConfig(interval_minutes=480, timezone="Europe/Berlin"), None, True),
    (TriggerConfig(interval_minutes=300, timezone="America/Los_Angeles"), "US-CA", True),
]


@pytest.mark.parametrize(("trigger", "holidays", "business"), CASES)
async def test_the_server_skips_what_skills_next_marks(client: Client, trigger: TriggerConfig, holidays: str | None,
                                                       business: bool) -> None:
    first, last, _ = skip_window(trigger, START)
    spec = schedule_spec(trigger, anchor=ANCHOR, skip_days=skipped_days(holidays, business, first, last))
    fired = await next_fires(client, spec, start_at=START)
    expected = [fire.at for fire in upcoming(skill(trigger, holidays, business), anchor=ANCHOR, now=START, count=30)
                if fire.skipped is None]
    assert len(fired) == 10
    assert [t.astimezone(UTC) for t in fired] == [t.astimezone(UTC) for t in expected[:10]]
    # And something was skipped in that window, or the check would prove nothing.
    assert (await next_fires(client, schedule_spec(trigger, anchor=ANCHOR), start_at=START)) != fired
