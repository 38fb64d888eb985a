"""What the management tools answer about a skill, read at a given now: how far off its next fire is, in the
one form every answer, notice and run summary uses (``skills.display.span``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from skills.management.answers import details
from skills.spec.models import Skill, TriggerConfig

NOW = datetime(2026, 11, 27, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize(("ahead", "said"), [
    (timedelta(minutes=29, seconds=59), "(in 30 min)"),  # to the nearest minute, as a fire just stored is
    (timedelta(seconds=20), "(in less than a minute)"),
    (timedelta(hours=2, minutes=5), "(in 2 h 05 min)"),
    (timedelta(days=3, hours=4), "(in 3 days 4 h)"),
    (timedelta(minutes=-5), "(past)"),
])
def test_a_one_shot_says_how_far_off_it_fires(ahead: timedelta, said: str) -> None:
    skill = Skill(id=1, agent_id="me", name="water", trigger_type="cron", instructions="Drink water.",
                  trigger_config=TriggerConfig(at=NOW + ahead, timezone="UTC"), created_at=NOW, updated_at=NOW)
    assert f"It runs once, at {NOW + ahead:%Y-%m-%d %H:%M}" in details(skill, None, NOW)
    assert said in details(skill, None, NOW)
