"""Every number has a bound, every regex over user text runs in linear time, and no parser's
RecursionError escapes: each test here is a reproduction that once registered, hung or crashed.

The time bounds are hang guards for a loaded CI machine, not speed checks: the inputs took
seconds to minutes before (measured in the comments), and take milliseconds now.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from skills import yamlsafe
from skills.errors import FrontmatterError, PlanError, SkillValidationError
from skills.management.manual import SCHEMAS
from skills.run.plans import StepOutput, resolve
from skills.run.preflight import PreflightCheck, render_arguments, should_skip
from skills.skillmd.parsing import parse_frontmatter
from skills.spec.limits import (
    APPROVAL_TIMEOUT_MINUTES,
    IN_HOURS,
    IN_MINUTES,
    INTERVAL_MINUTES,
    JITTER_SECONDS,
    KIB,
    MAX_NESTING,
    MAX_RUNS,
    MAX_STEPS,
    NOTIFY_INTERVAL_MINUTES,
    TIMEOUT_MINUTES,
    body_too_large,
    nesting_depth,
)
from skills.spec.mcpservers import McpServerConfig
from skills.spec.normalize import NormalizeContext, normalize
from skills.when.events import check_event

NOW = datetime(2026, 2, 14, 15, 0, tzinfo=UTC)
CTX = NormalizeContext(now=NOW, default_timezone="Europe/Paris", default_agent_id="thinker")
HANG_GUARD = 5.0
"""Seconds: far above what these inputs take now, far below what they took before."""


def refused(data: Any, ctx: NormalizeContext = CTX) -> dict[str, str]:
    with pytest.raises(SkillValidationError) as info:
        normalize(data, ctx)
    return {e.field: e.message for e in info.value.errors}


def skill(**fields: Any) -> dict[str, Any]:
    return {"name": "water", "instructions": "drink", **fields}


def timed(work: Callable[[], Any]) -> tuple[Any, float]:
    """The result of ``work`` and the CPU seconds this thread spent on it (a hang guard that does not move with
    the machine's load, as the wall clock does)."""
    started = time.thread_time()
    result = work()
    return result, time.thread_time() - started


# --- numbers ----------------------------------------------------------------------------------


def test_a_huge_notify_interval_is_refused_with_its_range() -> None:
    # Before: registered, then OverflowError in workflow code (completion_due) at the first fire,
    # retried for ever, the schedule's later fires skipped.
    assert refused(skill(notify_interval_minutes=2_000_000_000_000)) == {
        "notify_interval_minutes": "must be between 0 and 525600 (got 2000000000000)"}


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"interval_minutes": 2_000_000_000_000}, "trigger_config.interval_minutes",
     "must be between 1 and 525600 (got 2000000000000)"),
    ({"interval_minutes": 0}, "trigger_config.interval_minutes", "must be between 1 and 525600 (got 0)"),
    ({"interval_minutes": True}, "trigger_config.interval_minutes",
     "must be a whole number between 1 and 525600, got True"),
    ({"in_minutes": float("nan")}, "trigger_config.in_minutes",
     "must be a number more than 0 and at most 5270400, got nan"),
    ({"in_minutes": float("inf")}, "trigger_config.in_minutes",
     "must be a number more than 0 and at most 5270400, got inf"),
    ({"in_minutes": -5}, "trigger_config.in_minutes", "must be more than 0 and at most 5270400 (got -5)"),
    ({"in_minutes": "1e400"}, "trigger_config.in_minutes",
     "must be a number more than 0 and at most 5270400, got '1e400'"),
    ({"in_hours": 1e300}, "trigger_config.in_hours", "must be more than 0 and at most 87840 (got 1e+300)"),
    ({"in_hours": False}, "trigger_config.in_hours", "must be a number more than 0 and at most 87840, got False"),
    ({"max_steps": 101}, "max_steps", "must be between 1 and 100 (got 101)"),
    ({"max_steps": True}, "max_steps", "must be a whole number between 1 and 100, got True"),
    ({"notify_interval_minutes": -1}, "notify_interval_minutes", "must be between 0 and 525600 (got -1)"),
    ({"notify_interval_minutes": float("inf")}, "notify_interval_minutes",
     "must be a whole number between 0 and 525600, got inf"),
    # Python refuses to read an int of over 4,300 digits with a ValueError: a crash, before.
    ({"max_steps": "9" * 5000}, "max_steps", "must be a whole number between 1 and 100, got '99999999999999999"),
    ({"at": "9999-12-31T23:00:00"}, "trigger_config.at", "must be before 2101-01-01 (got 9999-12-31T22:00:00+00:00)"),
])
def test_every_number_out_of_its_range_is_refused_with_the_field_and_the_range(
        fields: dict[str, Any], field: str, message: str) -> None:
    problems = refused(skill(**fields))
    assert set(problems) == {field}
    assert problems[field].startswith(message)


def test_a_cron_expression_has_a_length_limit() -> None:
    # 100 KB of "5," took croniter seconds to expand; every value of every field listed is under 400.
    expression = ",".join(["5"] * 50_000) + " 9 * * *"
    problems, took = timed(lambda: refused(skill(schedule=expression)))
    assert problems == {"trigger_config.schedule": "is 100,007 characters long; the limit is 1,000"}
    assert took < HANG_GUARD
    every = ",".join(str(m) for m in range(60)) + " " + ",".join(str(h) for h in range(24)) + " * * *"
    assert normalize(skill(schedule=every), CTX).spec.trigger_config is not None


def test_the_bounds_themselves_are_accepted() -> None:
    for fields in ({"interval_minutes": 525600, "max_steps": 100, "notify_interval_minutes": 525600},
                   {"interval_minutes": 1, "max_steps": 1, "notify_interval_minutes": 0},
                   {"in_hours": 87840}, {"in_minutes": 0.5}):
        assert normalize(skill(**fields), CTX).spec


def test_a_time_placeholder_that_reaches_past_ten_years_is_refused() -> None:
    # Before: registered, then timedelta overflowed in workflow code at every fire.
    plan = [{"toolName": "outbox_send_message", "parameters": {"message": "at {{now+99999999999d}}"}}]
    assert refused(skill(execution_plan=plan)) == {
        "execution_plan[0].parameters": "'{{now+99999999999d}}': the offset must be between 0 and 3660 days "
                                        "(ten years)"}
    check = [{"tool": "gmail_list_events", "arguments": {"timeMax": "{{now+9999999w}}"}}]
    assert "preflight[0].arguments" in refused(skill(preflight=check))
    # One stored before the bound stays as written at the fire instead of failing the workflow task.
    assert render_arguments({"a": "{{now+99999999999d}}"}, NOW, "UTC") == {"a": "{{now+99999999999d}}"}


def test_the_management_schemas_give_the_same_bounds() -> None:
    store = SCHEMAS["memory_store_skill"]["properties"]
    trigger = store["trigger_config"]["properties"]
    for schema, bound in ((store["max_steps"], MAX_STEPS), (store["notify_interval_minutes"], NOTIFY_INTERVAL_MINUTES),
                          (trigger["interval_minutes"], INTERVAL_MINUTES), (trigger["in_minutes"], IN_MINUTES),
                          (trigger["in_hours"], IN_HOURS), (store["timeout_minutes"], TIMEOUT_MINUTES),
                          (store["max_runs"], MAX_RUNS), (store["jitter_seconds"], JITTER_SECONDS),
                          (store["approval_timeout_minutes"], APPROVAL_TIMEOUT_MINUTES)):
        assert schema.get("minimum", schema.get("exclusiveMinimum")) == bound.low
        assert schema["maximum"] == bound.high
        assert schema["type"] == ("integer" if bound.whole else "number")
    assert SCHEMAS["memory_update_skill"]["properties"]["max_steps"]["maximum"] == MAX_STEPS.high
    assert store["notify_interval_minutes"]["maximum"] == 525600
    assert store["timeout_minutes"]["minimum"] == 0.05


@pytest.mark.parametrize("timeout", [1e-300, 5e-324, 0.001, 0.0499])
def test_a_run_timeout_too_short_for_any_run_is_refused_with_its_range(timeout: float) -> None:
    # 1e-300 passed "more than 0": every run of the skill then ended "timed out" before its first call.
    assert refused(skill(timeout_minutes=timeout)) == {
        "timeout_minutes": f"must be between 0.05 and 10080 (got {timeout:g})"}
    assert normalize(skill(timeout_minutes=0.05), CTX).spec.timeout_minutes == 0.05


def test_a_toolset_timeout_is_finite_and_at_most_an_hour() -> None:
    for timeout in (float("inf"), float("nan"), 3601, 0):
        with pytest.raises(ValueError, match="timeout"):
            McpServerConfig(command="x", timeout=timeout)
    assert McpServerConfig(command="x", timeout=3600).timeout == 3600


# --- linear placeholders and patterns -----------------------------------------------------------


@pytest.mark.parametrize("text", [
    "{{" * (125 * KIB),  # was ~12 s at 40 KB: minutes at the plan limit (256 KiB as JSON)
    "{{ " * (83 * KIB),
    "{{now" + " " * (250 * KIB),  # the time placeholder's spaces: quadratic in the spaces
    "{{a" + "}" * (250 * KIB),
    "{{x\n" * (48 * KIB),
])
def test_a_placeholder_bomb_normalizes_and_resolves_in_bounded_time(text: str) -> None:
    plan = [{"id": "send", "toolName": "outbox_send_message", "parameters": {"message": text}}]
    result, took = timed(lambda: normalize(skill(execution_plan=plan), CTX))
    assert took < HANG_GUARD
    assert result.spec.execution_plan is not None or result.spec.tier == "agent"
    started = time.thread_time()
    with contextlib.suppress(PlanError):  # "{{a}}}}…" names no earlier step: refused, and quickly
        resolve({"message": text}, {}, NOW, "UTC")
    assert time.thread_time() - started < HANG_GUARD


def test_placeholders_still_mean_what_they_meant() -> None:
    outputs = {"fetch": StepOutput(text="hello", structured={"items": [{"title": "t"}]})}
    filled = resolve({"a": "{{fetch.result}}", "b": "say {{ fetch.items.0.title }} and {{fetch}}",
                      "c": ["{{fetch.items}}"]}, outputs, NOW, "UTC")
    assert filled == {"a": "hello", "b": "say t and hello", "c": [[{"title": "t"}]]}
    assert render_arguments("from {{now-1d}} to {{ today }}", NOW, "UTC") == \
        "from 2026-02-13T15:00:00+00:00 to 2026-02-14"


def test_a_number_pattern_over_a_long_digit_run_is_linear() -> None:
    # ``\d+\.?\d*`` let two digit runs share every split: 1 s at 4,000 digits, quadratic past that.
    schemas = {"outbox_list_messages": {"type": "object", "properties": {"limit": {"type": "number"}}}}
    ctx = NormalizeContext(now=NOW, default_timezone="UTC", default_agent_id="a", tool_schemas=schemas)
    plan = [{"toolName": "outbox_list_messages", "parameters": {"limit": "1" * 3990 + "x"}}]
    problems, took = timed(lambda: refused(skill(execution_plan=plan), ctx))
    assert took < HANG_GUARD and "execution_plan[0] (outbox_list_messages).parameters.limit" in problems
    plan = [{"toolName": "outbox_list_messages", "parameters": {"limit": "9" * 5000}}]
    assert "execution_plan[0] (outbox_list_messages).parameters.limit" in refused(skill(execution_plan=plan), ctx)


def test_a_tool_schemas_property_pattern_cannot_hang_on_a_long_name() -> None:
    # The pattern is the tool server's, the name the model's or the plan's: ^(a+)+$ against 40 a's and
    # a b is 2^40 steps for Python's re.
    schema = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}, "^x_": {"type": "integer"}},
              "additionalProperties": False}
    ctx = NormalizeContext(now=NOW, default_timezone="UTC", default_agent_id="a", tool_schemas={"t": schema})
    plan = [{"toolName": "t", "parameters": {"a" * 40 + "b": 1, "x_limit": "five"}}]
    problems, took = timed(lambda: refused(skill(execution_plan=plan), ctx))
    assert took < HANG_GUARD
    assert problems["execution_plan[0] (t).parameters.x_limit"] == "'five' is not of type 'integer'"
    # The same for a value against a property's pattern (at registration, and at every call).
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}}}
    ctx = NormalizeContext(now=NOW, default_timezone="UTC", default_agent_id="a", tool_schemas={"t": schema})
    plan = [{"toolName": "t", "parameters": {"code": "a" * 40 + "b"}}]
    problems, took = timed(lambda: refused(skill(execution_plan=plan), ctx))
    assert took < HANG_GUARD
    assert problems == {"execution_plan[0] (t).parameters.code": "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab' does not "
                                                                 "match '^(a+)+$'"}


def test_an_mcp_env_reference_bomb_expands_in_bounded_time() -> None:
    from adapters.mcp.config import EnvExpander

    value = "${A:-" * (10 * KIB)  # 11 s with Python's re
    _, took = timed(lambda: EnvExpander({})(value))
    assert took < HANG_GUARD


# --- nesting ------------------------------------------------------------------------------------


def nested(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def test_deeply_nested_json_in_a_registration_is_a_field_error() -> None:
    # Before: RecursionError out of the normalizer (the registration activity failed, no field named).
    deep = "[" * 100_000 + "]" * 100_000
    assert refused(json.dumps(skill(execution_plan=None))[:-1] + f', "execution_plan": {deep}}}') == {
        "skill": f"is JSON nested more than {MAX_NESTING} levels deep; at most {MAX_NESTING} are allowed"}
    assert refused(skill(execution_plan=deep)) == {
        "execution_plan": f"is JSON nested more than {MAX_NESTING} levels deep; at most {MAX_NESTING} are allowed"}
    step = {"toolName": "outbox_send_message", "parameters": json.dumps({"a": nested(40)})}
    assert set(refused(skill(execution_plan=[step]))) == {"execution_plan[0].parameters"}


def test_a_deep_body_is_refused_by_depth_without_recursing() -> None:
    body = skill(execution_plan=[{"toolName": "t", "parameters": {"a": nested(200_000)}}])
    problem = body_too_large(body)
    assert problem is not None and problem.field == "" and f"more than {MAX_NESTING} levels" in problem.message
    assert refused(body) == {"": problem.message}
    assert nesting_depth(nested(MAX_NESTING)) == MAX_NESTING
    assert body_too_large(skill(execution_plan=[{"toolName": "t", "parameters": {"a": nested(25)}}])) is None


def test_deep_event_data_is_refused_by_its_field() -> None:
    [problem] = check_event("parcel.arrived", None, nested(100_000))
    assert problem.field == "data" and "levels deep" in problem.message


def test_a_frontmatter_of_nested_brackets_is_refused_quickly_naming_the_file() -> None:
    # Before: 40 KB of "[" raised RecursionError out of discovery (after seconds in libyaml).
    text = "---\nname: a\ndescription: b\nmetadata: " + "[" * (40 * KIB) + "\n---\nbody\n"
    with pytest.raises(FrontmatterError, match=r"SKILL\.md: more than 32 levels of nested \[") as info:
        timed(lambda: parse_frontmatter(text))
    assert "RecursionError" not in str(info.value)
    indented = "---\nname: a\ndescription: b\nmetadata:\n" + "".join(
        " " * (i + 1) + f"k{i}:\n" for i in range(300)) + " " * 301 + "v: 1\n---\nbody\n"
    with pytest.raises(FrontmatterError, match="more than 32 levels deep"):
        parse_frontmatter(indented)


def test_yaml_values_python_cannot_build_are_invalid_yaml_not_a_crash() -> None:
    for text in ("a: 2026-13-45", "a: " + "9" * 5000):
        with pytest.raises(Exception) as info:
            yamlsafe.load(text, source="x.yaml")
        assert info.type.__module__.startswith("yaml") and "x.yaml" in str(info.value)


def test_tool_results_nested_past_the_parser_do_not_break_a_run() -> None:
    # resolve and should_skip run in workflow code: a RecursionError there failed the workflow task.
    deep = "[" * 100_000 + "]" * 100_000
    outputs = {"fetch": StepOutput(text=deep, structured=None)}
    with pytest.raises(Exception) as info:
        resolve({"a": "{{fetch.items}}"}, outputs, NOW, "UTC")
    assert type(info.value).__name__ == "PlanError"
    assert should_skip(PreflightCheck(tool="t", path="events"), deep, None) is True
