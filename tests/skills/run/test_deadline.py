"""A run's deadline (its SkillRun's execution timeout) adds up the worst case of every call it may make."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from temporalio.common import RetryPolicy

from skills.run.deadline import RUN_TIMEOUT_CAP, Retry, RunLimits, run_timeout, worst_case
from skills.spec.models import Skill
from workflows import options

NOW = datetime(2026, 11, 23, tzinfo=UTC)


def _skill(**fields: object) -> Skill:
    return Skill.model_validate({"id": 1, "agent_id": "a", "name": "x", "trigger_type": "cron", "instructions": "x",
                                 "created_at": NOW, "updated_at": NOW, **fields})


STORE_CALL = worst_case(options.STORE["start_to_close_timeout"], options.STORE["retry_policy"])


def _step(tool: str) -> dict[str, object]:
    return {"id": tool, "toolName": tool, "parameters": {}}


def test_the_worst_case_of_a_call_counts_every_attempt_and_every_wait() -> None:
    # docs/resilience.md gives these numbers.
    assert worst_case(options.STORE_LOCAL["start_to_close_timeout"], options.STORE_LOCAL["retry_policy"]) == 627
    assert worst_case(timedelta(seconds=60), options.TOOL_RETRY) == 186
    assert worst_case(timedelta(seconds=120), options.LLM_RETRY) == 782
    assert worst_case(options.SCHEDULE["start_to_close_timeout"], options.SCHEDULE["retry_policy"]) == 165
    assert worst_case(options.NOTIFY["start_to_close_timeout"], options.NOTIFY["retry_policy"]) == 906


def test_the_deadline_grows_with_what_a_run_may_do_and_is_capped() -> None:
    limits = RunLimits()
    one = run_timeout(_skill(execution_plan=[_step("t")]), limits)
    assert timedelta(minutes=45) < one < timedelta(minutes=55)
    assert run_timeout(_skill(execution_plan=[_step("t"), _step("u")]), limits) - one == timedelta(seconds=186)
    assert run_timeout(_skill(execution_plan=[_step("t"), _step("run_script")]), limits) - one == \
        timedelta(seconds=3 * 90 + 6)
    assert run_timeout(_skill(execution_plan=[_step("t")]), RunLimits(tool_seconds=600)) > one
    agent = run_timeout(_skill(max_steps=10), limits)
    assert timedelta(hours=3) < agent < timedelta(hours=5)
    assert run_timeout(_skill(max_steps=20), limits) > agent
    # However large a stored value (the front door bounds them; a row may say anything).
    assert run_timeout(_skill(max_steps=10**18), limits) == RUN_TIMEOUT_CAP
    assert run_timeout(_skill(max_steps=10), RunLimits(llm_seconds=float("inf"))) == RUN_TIMEOUT_CAP


def test_a_run_that_may_wait_for_approval_has_the_time_to_wait() -> None:
    assert STORE_CALL == 927  # record, answer and outcome: three store activities a wait may add
    limits = RunLimits(approval_seconds=3600)
    plain = run_timeout(_skill(execution_plan=[_step("t"), _step("u")]), limits)
    asked = run_timeout(_skill(execution_plan=[_step("t"), _step("u")], approval_required_tools=["u"]), limits)
    assert asked - plain == timedelta(seconds=3600 + 3 * STORE_CALL)
    own = run_timeout(_skill(execution_plan=[_step("t"), {**_step("u"), "approval": True}],
                             approval_timeout_minutes=10), limits)
    assert own - plain == timedelta(seconds=600 + 3 * STORE_CALL)
    # The Agent tier may ask at every turn; a week caps it all.
    agent = run_timeout(_skill(max_steps=10, approval_required_tools=["t"]), limits)
    assert agent - run_timeout(_skill(max_steps=10), limits) == timedelta(seconds=10 * (3600 + 3 * STORE_CALL))
    assert run_timeout(_skill(max_steps=100, approval_required_tools=["t"]),
                       RunLimits(approval_seconds=7 * 86400)) == RUN_TIMEOUT_CAP


def test_a_skill_timeout_longer_than_its_calls_raises_the_deadline_above_it() -> None:
    """``timeout_minutes`` ends a run from inside (a timer), then the run records its end: the execution
    timeout must sit above both, or Temporal kills the run first and nothing says "timed out"."""
    limits = RunLimits()
    plain = run_timeout(_skill(execution_plan=[_step("t")]), limits)
    one_call = timedelta(seconds=worst_case(timedelta(seconds=60), options.TOOL_RETRY))
    long = run_timeout(_skill(execution_plan=[_step("t")], timeout_minutes=600), limits)
    # The calls' worst case gives way to the timeout: margin, begin and end, then the timer.
    assert long == plain - one_call + timedelta(minutes=600)
    assert long > timedelta(minutes=600) + timedelta(minutes=30)
    # A timeout shorter than the calls' worst case leaves the deadline as it was (the timer fires first anyway).
    assert run_timeout(_skill(execution_plan=[_step("t")], timeout_minutes=1), limits) == plain
    assert run_timeout(_skill(execution_plan=[_step("t")], timeout_minutes=0.5), limits) == plain
    # An Agent skill too, and the week still caps it.
    agent = run_timeout(_skill(max_steps=10), limits)
    assert run_timeout(_skill(max_steps=10, timeout_minutes=60), limits) == agent
    assert run_timeout(_skill(max_steps=10, timeout_minutes=24 * 60), limits) > timedelta(hours=24)
    assert run_timeout(_skill(max_steps=10, timeout_minutes=7 * 24 * 60), limits) == RUN_TIMEOUT_CAP


def test_the_pure_policies_are_temporals_field_for_field() -> None:
    """``skills.run.deadline`` holds its policies without temporalio: each has Temporal's fields and defaults,
    so the options build the very policy the deadline adds up."""
    assert options.retry_policy(Retry()) == RetryPolicy()
    assert options.TOOL_RETRY == RetryPolicy(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0,
                                             maximum_attempts=3)
    assert options.LLM_RETRY.maximum_interval == timedelta(minutes=1)
