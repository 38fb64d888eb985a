"""What makes two failures one incident, and how long one lasted, as the notices say it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from skills.errors import SkillValidationError
from skills.run.incidents import CAUSE_LENGTH, Incident, cause_of, reminder_due
from skills.run.notify import incident_message, reminder_message
from skills.spec.models import RunRecord, Skill
from skills.spec.normalize import NormalizeContext, normalize
from tests.cpu import cpu_budget

T = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
CONTEXT = NormalizeContext(now=T, default_timezone="UTC", default_agent_id="main")


def test_failures_that_differ_only_in_numbers_and_ids_have_one_cause() -> None:
    assert cause_of("webhook_post failed: timed out after 30 s (attempt 2)") == \
        cause_of("webhook_post failed: timed out after 31.5 s (attempt 3)")
    assert cause_of("call 4f3a9c2e-1b2c-4d5e failed: HTTP 503") == cause_of("call 9e8d7c6b-0a1b-2c3d failed: HTTP 502")
    assert cause_of("outbox_send_message failed: message is empty") != cause_of("outbox_list_messages failed: limit")
    assert cause_of("first line\nsecond line 1") == cause_of("first line\nanother second line")
    assert cause_of("") == "failed"


def test_a_hostile_summary_is_folded_in_bounded_time_and_length() -> None:
    hostile = ("1." * 50_000) + "x" + ("a" * 7 + "-") * 20_000
    with cpu_budget(0.5) as spent:  # CPU s (a loaded machine's waiting is not counted); it takes under 1 ms
        cause = cause_of(hostile)
        assert spent() < 0.5
    assert len(cause) <= CAUSE_LENGTH


def test_a_reminder_is_due_only_when_asked_for_and_its_minutes_have_passed() -> None:
    told = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    assert not reminder_due(0, told, told + timedelta(days=30))
    assert not reminder_due(30, told, told + timedelta(minutes=29, seconds=59))
    assert reminder_due(30, told, told + timedelta(minutes=30))


def test_the_reminder_and_the_opening_notice_say_how_often() -> None:
    skill = Skill.model_validate({"id": 3, "name": "inbox", "instructions": "x", "agent_id": "a",
                                  "trigger_type": "cron", "trigger_config": {"schedule": "0 * * * *"},
                                  "remind_after_minutes": 120, "created_at": T, "updated_at": T})
    incident = Incident(id=7, skill_id=3, skill_name="inbox", cause="c", first_error="e", last_error="e",
                        opened_at=T, last_failure_at=T + timedelta(hours=2, minutes=5), failures=3)
    run = RunRecord(run_id="r", skill_id=3, skill_name="inbox", workflow_id="w", trigger="schedule",
                    started_at=T, status="error", summary="HTTP 503 from the mail server", tier="direct")
    assert incident_message(skill, run, incident, None).endswith(
        "Incident 7: while it fails the same way you hear again every 2 h; `skills incidents` shows it, "
        "`skills runs 3` every run.")
    assert reminder_message(skill, run, incident) == (
        "❌ inbox still failing: incident 7, for 2 h 05 min (3 failed runs). Last error: HTTP 503 from the mail "
        "server. `skills runs 3` shows every run.")


def test_remind_after_minutes_is_bounded_and_named() -> None:
    with pytest.raises(SkillValidationError) as refused:
        normalize({"name": "x", "instructions": "x", "remind_after_minutes": -5}, CONTEXT)
    assert [e.field for e in refused.value.errors] == ["remind_after_minutes"], refused.value.errors
    assert normalize({"name": "x", "instructions": "x", "remindAfterMinutes": "90"}, CONTEXT).spec \
        .remind_after_minutes == 90
