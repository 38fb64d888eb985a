"""What a closed run does to its skill (``skills.run.closing``): the rule alone, without a store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from skills.run.backoff import BackoffPolicy
from skills.run.closing import Tally, closed
from skills.spec.models import ENDED, FAILURES, FIRED, RunRecord

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
POLICY = BackoffPolicy(limit=3)


def tally(**changes: Any) -> Tally:
    base: dict[str, Any] = {
        "enabled": True, "disabled_reason": None, "consecutive_failures": 0, "last_run_at": None,
        "last_run_status": None, "last_run_summary": None, "last_failure_at": None, "last_error": None,
        "schedule_id": "skills-1-tea", "trigger_config": {"schedule": "0 9 * * *"}, "max_runs": None,
        "scheduled_runs": 1}
    return Tally(**{**base, **changes})


def run(status: str = "success", trigger: str = "schedule", summary: str = "done") -> RunRecord:
    return RunRecord(run_id="r", skill_id=1, skill_name="tea", workflow_id="w", trigger=trigger, started_at=NOW,
                     finished_at=NOW + timedelta(seconds=3), status=status, summary=summary, tier="direct")


def test_a_success_is_the_last_run_and_clears_the_failures() -> None:
    after = closed(tally(consecutive_failures=2), run(), POLICY)
    assert (after.tally.consecutive_failures, after.tally.last_run_status, after.tally.last_run_at) == \
        (0, "success", NOW + timedelta(seconds=3))
    assert (after.disabled, after.retired_schedule, after.tally.enabled) == (None, None, True)


def test_the_limit_th_failure_disables_the_skill_and_keeps_the_error() -> None:
    second = closed(tally(consecutive_failures=1), run("error", summary="x" * 1500), POLICY)
    assert (second.tally.consecutive_failures, second.tally.enabled, second.disabled) == (2, True, None)
    assert second.tally.last_error == "x" * 1000 and second.tally.last_failure_at == NOW + timedelta(seconds=3)
    third = closed(second.tally, run("error"), POLICY)
    assert (third.tally.enabled, third.tally.disabled_reason, third.disabled) == (False, FAILURES, FAILURES)


def test_a_failure_of_a_skill_already_paused_does_not_say_it_disabled_it() -> None:
    after = closed(tally(enabled=False, disabled_reason="user", consecutive_failures=4), run("error", "manual"),
                   POLICY)
    assert (after.tally.consecutive_failures, after.tally.disabled_reason, after.disabled) == (5, "user", None)


@pytest.mark.parametrize("status", ["running", "waiting", "missed"])
def test_a_run_not_ended_or_missed_is_not_the_last_run(status: str) -> None:
    assert closed(tally(), run(status), POLICY).tally == tally()


@pytest.mark.parametrize("status", ["success", "error", "skipped"])
def test_a_one_shots_fire_retires_its_schedule_whatever_came_of_it(status: str) -> None:
    after = closed(tally(trigger_config={"at": "2026-03-02T09:00:00+00:00"}), run(status), POLICY)
    assert (after.tally.enabled, after.tally.disabled_reason, after.tally.schedule_id) == (False, FIRED, None)
    assert (after.disabled, after.retired_schedule) == (FIRED, "skills-1-tea")


def test_a_one_shot_run_by_hand_keeps_its_schedule() -> None:
    after = closed(tally(trigger_config={"at": "2026-03-02T09:00:00+00:00"}), run(trigger="manual"), POLICY)
    assert (after.tally.enabled, after.tally.schedule_id, after.retired_schedule) == (True, "skills-1-tea", None)


def test_the_fire_that_reaches_max_runs_pauses_the_skill_saying_it_ended() -> None:
    assert closed(tally(max_runs=3, scheduled_runs=2), run(), POLICY).disabled is None
    after = closed(tally(max_runs=3, scheduled_runs=3), run(), POLICY)
    assert (after.tally.enabled, after.tally.disabled_reason, after.disabled, after.tally.schedule_id) == \
        (False, ENDED, ENDED, "skills-1-tea")


def test_the_last_allowed_fire_failing_for_the_limit_th_time_says_failures() -> None:
    after = closed(tally(max_runs=3, scheduled_runs=3, consecutive_failures=2), run("error"), POLICY)
    assert (after.tally.disabled_reason, after.disabled) == (FAILURES, FAILURES)
