"""Every fix the normalizer makes, every validation rule, and properties."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skills.errors import SkillValidationError
from skills.run.plans import analyse_plan
from skills.spec.fields import parse_bool
from skills.spec.limits import (
    APPROVAL_TIMEOUT_MINUTES,
    JITTER_SECONDS,
    MAX_INSTRUCTIONS_BYTES,
    MAX_PLAN_BYTES,
    MAX_RUNS,
    MAX_SKILL_BYTES,
    TIMEOUT_MINUTES,
)
from skills.spec.llm_models import MAX_FALLBACK_MODELS
from skills.spec.models import SkillSpec
from skills.spec.normalize import FIELD_ALIASES, TRIGGER_ALIASES, NormalizeContext, normalize
from skills.when.triggers import LAST_CALENDAR_YEAR, check_cron
from tests.fuzz.strategies import FIELD_VALUES

NOW = datetime(2026, 2, 14, 15, 0, tzinfo=UTC)
CATALOG = {"outbox_send_message", "telegram_send_message", "gmail_list_messages", "gmail_get_message"}
CTX = NormalizeContext(now=NOW, default_timezone="Europe/Paris", default_agent_id="thinker", tool_catalog=CATALOG)


def ok(**data: object):
    return normalize({"name": "water", "instructions": "drink", **data}, CTX)


def refused(data: dict[str, object], ctx: NormalizeContext = CTX) -> dict[str, str]:
    with pytest.raises(SkillValidationError) as info:
        normalize(data, ctx)
    return {e.field: e.message for e in info.value.errors}


# --- re-nesting and aliases ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("schedule", "0 * * * *", {"schedule": "0 * * * *", "timezone": "Europe/Paris"}),
        ("interval_minutes", 30, {"interval_minutes": 30}),
        ("at", "2026-02-14T18:00:00", {"at": datetime(2026, 2, 14, 17, 0, tzinfo=UTC)}),
        ("in_minutes", 5, {"at": NOW + timedelta(minutes=5)}),
        ("in_hours", 2, {"at": NOW + timedelta(hours=2)}),
    ],
)
def test_flattened_trigger_fields_are_nested(field: str, value: object, expected: dict[str, object]) -> None:
    result = ok(**{field: value})
    trigger = result.spec.trigger_config
    assert trigger is not None
    for key, want in expected.items():
        assert getattr(trigger, key) == want
    assert result.spec.trigger_type == "cron"
    assert any(f"moved root '{field}'" in n for n in result.notes)


@pytest.mark.parametrize("alias", ["cronExpression", "cron", "cron_expression", "expression"])
def test_cron_aliases_become_schedule(alias: str) -> None:
    nested = ok(trigger_config={alias: "*/5 * * * *"}).spec.trigger_config
    root = ok(**{alias: "*/5 * * * *"}).spec.trigger_config
    assert nested is not None and root is not None
    assert nested.schedule == root.schedule == "*/5 * * * *"


@pytest.mark.parametrize("alias", ["intervalMinutes", "interval", "every_minutes"])
def test_interval_aliases(alias: str) -> None:
    trigger = ok(trigger_config={alias: "45"}).spec.trigger_config
    assert trigger is not None and trigger.interval_minutes == 45


def test_camel_case_fields_are_read() -> None:
    spec = normalize(
        {
            "name": "brief",
            "instructions": "summarize",
            "agentId": "main",
            "triggerType": "cron",
            "triggerConfig": {"cronExpression": "0 6 * * *", "timeZone": "America/New_York"},
            "requiredTools": ["gmail_list_messages"],
            "maxSteps": "15",
            "notifyOnCompletion": "false",
            "notifyIntervalMinutes": "30",
        },
        CTX,
    ).spec
    assert spec.agent_id == "main"
    assert spec.trigger_config is not None
    assert (spec.trigger_config.schedule, spec.trigger_config.timezone) == ("0 6 * * *", "America/New_York")
    assert spec.required_tools == ["gmail_list_messages"]
    assert (spec.max_steps, spec.notify_on_completion, spec.notify_interval_minutes) == (15, False, 30)


def test_trigger_config_given_as_json_string() -> None:
    trigger = ok(trigger_config='{"schedule": "0 9 * * 1-5"}').spec.trigger_config
    assert trigger is not None and trigger.schedule == "0 9 * * 1-5"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), (False, False), (1, True), (0, False), ("TRUE", True), (" no ", False), ("Yes", True),
     ("1", True), ("0", False), ("on", True), ("OFF", False)],
)
def test_booleans_as_json_or_a_person_writes_them(value: object, expected: bool) -> None:
    assert parse_bool(value) is expected


@pytest.mark.parametrize("value", [2, 1.0, "maybe", "", [True], "on", "off"])
def test_what_is_not_a_boolean_without_on_off(value: object) -> None:
    # The management tools' filters take yes/no words but not on/off.
    with pytest.raises(ValueError):
        parse_bool(value, on_off=False)


def test_a_boolean_field_that_is_not_one_is_named() -> None:
    assert refused({"name": "water", "instructions": "drink", "enabled": "maybe"}) == {
        "enabled": "must be true or false, got 'maybe'"}


# --- relative times, inference, defaults ----------------------------------------------------


def test_in_minutes_and_in_hours_add_up_to_one_absolute_at() -> None:
    result = ok(trigger_config={"in_hours": 1, "in_minutes": "30"})
    assert result.spec.trigger_config is not None
    assert result.spec.trigger_config.at == NOW + timedelta(minutes=90)
    assert result.trigger_as_written == {"in_hours": 1, "in_minutes": "30"}


def test_a_relative_time_too_small_to_add_is_the_next_second() -> None:
    # Found by the property test below: 5e-191 minutes is no timedelta at all, and the one-shot's `at` was
    # `now` itself, not in the future.
    for amount in (5.061938313323521e-191, 1e-9, 0.001):
        at = ok(trigger_config={"in_minutes": amount}).spec.trigger_config
        assert at is not None and at.at == NOW + timedelta(seconds=1), amount


def test_naive_at_is_read_in_the_trigger_zone_then_default_zone() -> None:
    explicit = ok(trigger_config={"at": "2026-03-01T09:00:00", "timezone": "America/New_York"}).spec.trigger_config
    default = ok(trigger_config={"at": "2026-03-01T09:00:00"}).spec.trigger_config
    zulu = ok(trigger_config={"at": "2026-03-01T09:00:00Z"}).spec.trigger_config
    assert explicit is not None and default is not None and zulu is not None
    assert explicit.at == datetime(2026, 3, 1, 9, tzinfo=ZoneInfo("America/New_York"))
    assert default.at == datetime(2026, 3, 1, 9, tzinfo=ZoneInfo("Europe/Paris"))
    assert zulu.at == datetime(2026, 3, 1, 9, tzinfo=UTC)


def test_trigger_type_is_inferred() -> None:
    assert ok(schedule="0 * * * *").spec.trigger_type == "cron"
    assert ok().spec.trigger_type == "manual"
    assert ok(trigger_type="EVENT", event="mail.in").spec.trigger_type == "event"
    changed = ok(trigger_type="manual", interval_minutes=10)
    assert changed.spec.trigger_type == "cron"
    assert any("changed to 'cron'" in n for n in changed.notes)


def test_timezone_is_injected_only_when_missing() -> None:
    injected = ok(schedule="0 9 * * *")
    kept = ok(schedule="0 9 * * *", timezone="Asia/Tokyo")
    assert injected.spec.trigger_config is not None and kept.spec.trigger_config is not None
    assert injected.spec.trigger_config.timezone == "Europe/Paris"
    assert any("injected" in n for n in injected.notes)
    assert kept.spec.trigger_config.timezone == "Asia/Tokyo"


def test_default_agent_id() -> None:
    result = ok()
    assert result.spec.agent_id == "thinker"
    assert any("agent_id defaulted" in n for n in result.notes)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('["gmail_list_messages", "gmail_get_message"]', ["gmail_list_messages", "gmail_get_message"]),
        ("telegram_send_message", ["telegram_send_message"]),
        ("gmail_list_messages, gmail_get_message", ["gmail_list_messages", "gmail_get_message"]),
        (["outbox_send_message", "outbox_send_message"], ["outbox_send_message"]),
    ],
)
def test_required_tools_from_strings(value: object, expected: list[str]) -> None:
    assert ok(required_tools=value).spec.required_tools == expected


def test_max_steps_from_string() -> None:
    assert ok(max_steps="7").spec.max_steps == 7


# --- plans and the safety net -------------------------------------------------------------


def test_single_step_plan_stays_direct_and_its_tool_becomes_required() -> None:
    spec = ok(execution_plan=[{"toolName": "outbox_send_message", "parameters": {"message": "hi"}}]).spec
    assert spec.tier == "direct"
    assert spec.execution_plan is not None and spec.execution_plan[0].id == "step1"
    assert spec.required_tools == ["outbox_send_message"]


def test_step_aliases_and_json_string_plan() -> None:
    spec = ok(execution_plan='[{"id": "a", "tool": "outbox_send_message", "params": "{\\"message\\": \\"x\\"}"}]').spec
    assert spec.execution_plan is not None
    assert (spec.execution_plan[0].tool_name, spec.execution_plan[0].parameters) == ("outbox_send_message", {"message": "x"})


def test_a_plan_piped_from_earlier_results_stays_direct() -> None:
    result = ok(execution_plan=[
        {"id": "fetch", "toolName": "gmail_list_messages", "parameters": {}},
        {"id": "send", "toolName": "telegram_send_message",
         "parameters": {"message": "Newest: {{steps.fetch.messages.0.subject}} ({{fetch.result}})"}},
    ])
    assert result.spec.tier == "direct" and result.spec.execution_plan is not None
    assert any("runs Direct, at zero tokens: 2 placeholder(s) piped" in n for n in result.notes)


def test_independent_steps_stay_direct() -> None:
    result = ok(execution_plan=[
        {"toolName": "outbox_send_message", "parameters": {"message": "one"}},
        {"toolName": "telegram_send_message", "parameters": {"message": "two, on {{today}}"}},
    ])
    assert result.spec.tier == "direct" and any("the steps are independent" in n for n in result.notes)


@pytest.mark.parametrize("message", ["{{summarize the emails}}", "{{send.result}}", "{{nowhere.result}}"])
def test_a_plan_that_needs_reasoning_becomes_agent_tier(message: str) -> None:
    result = ok(
        required_tools=["gmail_get_message"],
        execution_plan=[
            {"id": "fetch", "toolName": "gmail_list_messages", "parameters": {}},
            {"id": "send", "toolName": "telegram_send_message", "parameters": {"message": message}},
        ],
    )
    assert result.spec.tier == "agent" and result.spec.execution_plan is None
    assert result.spec.required_tools == ["gmail_get_message", "gmail_list_messages", "telegram_send_message"]
    assert any("converted to Agent tier: step 'send' uses" in n and "needs reasoning" in n for n in result.notes)


# --- plan parameters against the tools' schemas ------------------------------------------

SCHEMAS = {
    "outbox_send_message": {
        "type": "object",
        "properties": {"message": {"type": "string"}, "chat_id": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "required": ["message"],
    },
    "gmail_list_messages": {"type": "object", "properties": {"max": {"type": "integer"}}},
}
SCHEMA_CTX = NormalizeContext(now=NOW, default_timezone="Europe/Paris", default_agent_id="thinker",
                              tool_catalog=CATALOG, tool_schemas=SCHEMAS)


def test_a_plan_step_is_checked_against_its_tools_schema() -> None:
    errors = refused({"name": "x", "instructions": "y",
                      "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"msg": "hi"}}]}, SCHEMA_CTX)
    assert errors == {
        "execution_plan[0] (outbox_send_message).parameters.msg": "unknown parameter; did you mean 'message'?",
        "execution_plan[0] (outbox_send_message)": "missing required parameter 'message'",
    }


def test_a_parameter_of_the_wrong_type_after_coercion_names_step_and_parameter() -> None:
    plan = [{"toolName": "outbox_send_message", "parameters": {"message": "hi"}},
            {"toolName": "gmail_list_messages", "parameters": {"max": "five"}}]
    assert refused({"name": "x", "instructions": "y", "execution_plan": plan}, SCHEMA_CTX) == {
        "execution_plan[1] (gmail_list_messages).parameters.max": "'five' is not of type 'integer'"}
    plan[1]["parameters"] = {"max": "5"}  # what a call coerces is fine
    assert normalize({"name": "x", "instructions": "y", "execution_plan": plan}, SCHEMA_CTX).spec.tier == "direct"


def test_a_piped_placeholder_stands_for_any_type() -> None:
    plan = [{"id": "fetch", "toolName": "gmail_list_messages", "parameters": {"max": "{{now}}"}},
            {"id": "send", "toolName": "outbox_send_message",
             "parameters": {"message": "{{fetch.messages}}", "chat_id": "{{fetch.messages.0.chat}}"}}]
    assert normalize({"name": "x", "instructions": "y", "execution_plan": plan}, SCHEMA_CTX).spec.tier == "direct"


def test_declared_preflight_arguments_are_checked_too() -> None:
    errors = refused({"name": "x", "instructions": "y",
                      "preflight": [{"tool": "gmail_list_messages", "arguments": {"maximum": 3}}]}, SCHEMA_CTX)
    assert errors == {"preflight[0] (gmail_list_messages).arguments.maximum": "unknown parameter; did you mean 'max'?"}


def test_a_tool_without_a_schema_and_a_plan_made_agent_tier_are_not_checked() -> None:
    # telegram_send_message is in the catalog but its schema is not known: today's behaviour.
    ok_plan = [{"toolName": "telegram_send_message", "parameters": {"anything": 1}}]
    assert normalize({"name": "x", "instructions": "y", "execution_plan": ok_plan}, SCHEMA_CTX).spec.tier == "direct"
    # A plan that needs reasoning is removed: the model calls the tools with its own arguments.
    agent = [{"toolName": "outbox_send_message", "parameters": {"msg": "{{a summary}}"}}]
    assert normalize({"name": "x", "instructions": "y", "execution_plan": agent}, SCHEMA_CTX).spec.tier == "agent"


# --- validation ---------------------------------------------------------------------------


def test_missing_name_and_instructions_are_both_reported() -> None:
    errors = refused({"description": "nothing else"})
    assert "is required" in errors["name"] and "is required" in errors["instructions"]


@pytest.mark.parametrize("cron", ["61 * * * *", "* * *", "0 0 L * *", "@reboot", "0 0 30 2 *", "every hour"])
def test_bad_cron_is_refused_naming_the_field(cron: str) -> None:
    errors = refused({"name": "x", "instructions": "y", "schedule": cron})
    assert "trigger_config.schedule" in errors


def test_unknown_time_zone() -> None:
    errors = refused({"name": "x", "instructions": "y", "schedule": "0 9 * * *", "timezone": "Mars/Olympus"})
    assert "unknown time zone 'Mars/Olympus'" in errors["trigger_config.timezone"]


def test_at_in_the_past() -> None:
    errors = refused({"name": "x", "instructions": "y", "at": "2026-02-14T14:00:00Z"})
    assert "is in the past" in errors["trigger_config.at"]


@pytest.mark.parametrize("value", [0, -5, "0", 1.5, "soon"])
def test_interval_must_be_a_whole_number_of_at_least_one(value: object) -> None:
    errors = refused({"name": "x", "instructions": "y", "interval_minutes": value})
    assert "trigger_config.interval_minutes" in errors


def test_two_kinds_of_trigger_at_once() -> None:
    errors = refused({"name": "x", "instructions": "y", "schedule": "0 * * * *", "interval_minutes": 5})
    assert "exactly one of" in errors["trigger_config"]


def test_cron_type_without_a_schedule() -> None:
    errors = refused({"name": "x", "instructions": "y", "trigger_type": "cron"})
    assert "needs one of schedule" in errors["trigger_config"]


def test_unknown_tools_are_refused_with_close_names() -> None:
    errors = refused({"name": "x", "instructions": "y", "required_tools": ["telegram_send_mesage"]})
    assert "unknown tool 'telegram_send_mesage'" in errors["required_tools"]
    assert "did you mean 'telegram_send_message'" in errors["required_tools"]


def test_plan_tools_are_checked_too() -> None:
    errors = refused({"name": "x", "instructions": "y",
                      "execution_plan": [{"toolName": "nope_nothing", "parameters": {}}]})
    assert "unknown tool 'nope_nothing'" in errors["required_tools"]


def test_a_disabled_skill_may_wait_for_missing_tools() -> None:
    result = ok(enabled=False, required_tools=["weather_forecast"])
    assert result.missing_tools == ["weather_forecast"] and not result.spec.enabled


def test_every_problem_is_reported_at_once() -> None:
    errors = refused({"name": "", "instructions": "y", "schedule": "99 * * * *", "max_steps": "many",
                      "notify_interval_minutes": -1, "required_tools": ["zzz"]})
    assert set(errors) == {"name", "trigger_config.schedule", "max_steps", "notify_interval_minutes", "required_tools"}


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"shedule": "0 9 * * *"}, "shedule", "unknown field; did you mean 'schedule'?"),
        ({"nmae": "x"}, "nmae", "unknown field; did you mean 'name'?"),
        ({"requiredTool": ["outbox_send_message"]}, "requiredTool", "unknown field; did you mean 'requiredTools'?"),
        ({"trigger_config": {"shedule": "0 9 * * *"}}, "trigger_config.shedule",
         "unknown trigger field; did you mean 'schedule'?"),
    ],
)
def test_an_unknown_field_is_refused_with_the_close_name(data: dict[str, object], field: str, message: str) -> None:
    assert refused({"name": "x", "instructions": "y", **data}) == {field: message}


def test_an_unknown_field_with_no_close_name_lists_the_fields() -> None:
    message = refused({"name": "x", "instructions": "y", "colour": "blue"})["colour"]
    assert message.startswith("unknown field (expected one of agent_id, ") and message.endswith(")")
    listed = message.removeprefix("unknown field (expected one of ").removesuffix(")").split(", ")
    assert listed == sorted(listed) and {"execution_plan", "instructions", "trigger_config", "in_minutes"} <= set(listed)


def test_an_update_with_an_unknown_field_is_refused() -> None:
    existing = ok(schedule="0 9 * * *").spec
    with pytest.raises(SkillValidationError) as info:
        normalize({"nmae": "renamed"}, CTX, existing=existing)
    assert [str(e) for e in info.value.errors] == ["nmae: unknown field; did you mean 'name'?"]


@pytest.mark.parametrize("alias", sorted(FIELD_ALIASES.keys() | TRIGGER_ALIASES.keys()))
def test_every_alias_the_normalizer_reads_is_still_accepted(alias: str) -> None:
    values = {"trigger_config": {"schedule": "0 9 * * *"}, "trigger": {"schedule": "0 9 * * *"},
              "triggerConfig": {"schedule": "0 9 * * *"}, "prompt": "y", "agent": "main", "agentId": "main",
              "type": "manual", "triggerType": "manual", "requiredTools": ["outbox_send_message"],
              "tools": ["outbox_send_message"], "maxSteps": 3, "notify": False, "notifyOnCompletion": False,
              "notifyIntervalMinutes": 5, "executionPlan": [], "plan": [], "pre_flight": [], "preFlight": [],
              "preflight_checks": [], "preflightChecks": []}
    trigger_value = {"schedule": "0 9 * * *", "interval_minutes": 5, "at": "2026-03-01T09:00:00", "in_minutes": 5,
                     "in_hours": 1, "timezone": "Asia/Tokyo"}
    canonical = FIELD_ALIASES.get(alias) or TRIGGER_ALIASES[alias]
    value = values.get(alias, trigger_value.get(canonical))
    data = {key: v for key, v in {"name": "x", "instructions": "y"}.items() if key != canonical}
    data[alias] = value
    if canonical == "timezone":
        data["schedule"] = "0 9 * * *"
    result = normalize(data, CTX)
    assert any(f"'{alias}' read as '{canonical}'" in n for n in result.notes)


def test_what_the_engine_keeps_is_ignored_with_a_note_not_refused() -> None:
    # A stored skill read back in (`skills get --json`), or a SKILL.md's registration request.
    result = ok(id=7, schedule_id="skills-7-water", last_run_status="success", tier="direct", next_fire=None,
                file_path="/x/SKILL.md", file_mtime="2026-01-01T00:00:00Z")
    assert any("ignored 'schedule_id': it is kept by the engine" in n for n in result.notes)
    assert any("ignored 'file_path'" in n for n in result.notes)


def test_an_unknown_time_zone_gets_the_close_name() -> None:
    errors = refused({"name": "x", "instructions": "y", "schedule": "0 9 * * *", "timezone": "Europe/Pari"})
    assert errors == {"trigger_config.timezone": "unknown time zone 'Europe/Pari'; did you mean 'Europe/Paris'?"}
    errors = refused({"name": "x", "instructions": "y", "schedule": "0 9 * * *", "timezone": "europe/paris"})
    assert errors["trigger_config.timezone"].endswith("did you mean 'Europe/Paris'?")


def test_not_an_object() -> None:
    with pytest.raises(SkillValidationError, match="must be an object"):
        normalize(["name"], CTX)


# --- size limits --------------------------------------------------------------------------


def test_instructions_over_the_limit_are_refused_naming_it() -> None:
    errors = refused({"name": "x", "instructions": "é" * (MAX_INSTRUCTIONS_BYTES // 2 + 1)})
    assert errors == {"instructions": f"is {MAX_INSTRUCTIONS_BYTES + 2:,} bytes in UTF-8; the limit is 1 MiB "
                                      "(1,048,576 bytes)"}
    assert ok(instructions="a" * MAX_INSTRUCTIONS_BYTES).spec.instructions  # at the limit is fine


def test_a_plan_over_the_limit_is_refused_naming_it() -> None:
    plan = [{"toolName": "outbox_send_message", "parameters": {"message": "a" * MAX_PLAN_BYTES}}]
    errors = refused({"name": "x", "instructions": "y", "execution_plan": plan})
    assert list(errors) == ["execution_plan"]
    assert errors["execution_plan"].endswith("bytes as JSON; the limit is 256 KiB (262,144 bytes)")


def test_a_whole_body_over_the_limit_is_refused_before_anything_else() -> None:
    # Two fields each within their limits, and a description that has none: the whole is too big.
    errors = refused({"nmae": "x", "instructions": "a" * MAX_INSTRUCTIONS_BYTES, "description": "d" * 600_000})
    assert list(errors) == [""] and errors[""].startswith("the skill is ")
    assert errors[""].endswith("bytes as JSON; the limit is 1.5 MiB (1,572,864 bytes)")


def test_an_update_whose_merged_skill_is_too_big_is_refused() -> None:
    existing = ok(instructions="a" * MAX_INSTRUCTIONS_BYTES).spec
    with pytest.raises(SkillValidationError) as info:
        normalize({"description": "d" * 600_000}, CTX, existing=existing)
    assert info.value.errors[0].field == "" and "the limit is 1.5 MiB" in info.value.errors[0].message
    assert MAX_SKILL_BYTES == 1536 * 1024


# --- updates ------------------------------------------------------------------------------


def test_update_merges_over_the_existing_skill() -> None:
    existing = ok(schedule="0 9 * * *", timezone="Asia/Tokyo").spec
    updated = normalize({"schedule": "30 7 * * *", "maxSteps": 3}, CTX, existing=existing).spec
    assert updated.trigger_config is not None
    assert (updated.trigger_config.schedule, updated.trigger_config.timezone) == ("30 7 * * *", "Asia/Tokyo")
    assert (updated.max_steps, updated.name) == (3, "water")


def test_update_from_schedule_to_one_shot_replaces_the_trigger() -> None:
    existing = ok(schedule="0 9 * * *").spec
    updated = normalize({"in_minutes": 10}, CTX, existing=existing).spec
    assert updated.trigger_config is not None
    assert updated.trigger_config.schedule is None and updated.trigger_config.at == NOW + timedelta(minutes=10)


def test_update_to_manual_drops_the_schedule() -> None:
    existing = ok(schedule="0 9 * * *").spec
    updated = normalize({"trigger_type": "manual"}, CTX, existing=existing).spec
    assert updated.trigger_type == "manual" and updated.trigger_config is None


# --- properties ---------------------------------------------------------------------------

TRIGGER_VALUES = st.one_of(
    st.none(), st.integers(-10, 10_000), st.floats(allow_nan=True), st.text(max_size=20),
    st.sampled_from(["0 * * * *", "*/5 * * * *", "@daily", "0 0 31 2 *", "61 * * * *", "2026-02-14T16:00:00",
                     "2020-01-01T00:00:00Z", "Europe/Paris", "Nowhere/Town", "5", "-1", "true"]),
)
KEYS = st.sampled_from(
    ["name", "instructions", "description", "agent_id", "enabled", "trigger_type", "trigger_config", "schedule",
     "cron", "cronExpression", "interval_minutes", "intervalMinutes", "at", "in_minutes", "in_hours", "timezone",
     "required_tools", "execution_plan", "max_steps", "notify_on_completion", "notify_interval_minutes", "junk",
     "model", *FIELD_VALUES]
)
STEP = st.fixed_dictionaries(
    {"toolName": st.one_of(st.sampled_from(sorted(CATALOG)), st.text(max_size=10)),
     "parameters": st.one_of(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2), st.text(max_size=5))}
)
VALUES = st.one_of(
    TRIGGER_VALUES,
    st.lists(st.one_of(st.sampled_from(sorted(CATALOG)), st.text(max_size=8)), max_size=3),
    st.lists(STEP, max_size=3),
    st.dictionaries(st.sampled_from(["schedule", "at", "in_minutes", "interval_minutes", "timezone", "cron", "x"]),
                    TRIGGER_VALUES, max_size=3),
    st.booleans(),
    *FIELD_VALUES.values(),
)


def assert_storable(spec: SkillSpec, ctx: NormalizeContext) -> None:
    """What the store may hold: everything a fire or a schedule will rely on."""
    SkillSpec.model_validate(spec.model_dump())
    assert spec.name.strip() and spec.instructions.strip() and spec.agent_id
    assert spec.trigger_type in ("cron", "event", "manual")
    assert 1 <= spec.max_steps and spec.notify_interval_minutes >= 0
    if spec.enabled:
        assert set(spec.required_tools) <= CATALOG
    if spec.execution_plan:
        assert analyse_plan(spec.execution_plan).direct
        assert {step.tool_name for step in spec.execution_plan} <= set(spec.required_tools)
    if spec.trigger_type == "cron":
        trigger = spec.trigger_config
        assert trigger is not None and trigger.kind is not None
        assert sum(v is not None for v in (trigger.schedule, trigger.interval_minutes, trigger.at)) == 1
        if trigger.schedule is not None:
            assert check_cron(trigger.schedule) == trigger.schedule and trigger.timezone
            ZoneInfo(trigger.timezone)
        if trigger.interval_minutes is not None:
            assert trigger.interval_minutes >= 1
        if trigger.at is not None:
            assert trigger.at.tzinfo is not None and trigger.at > ctx.now
    else:
        assert spec.trigger_config is None
    # The schedule's shape, approvals and models (issues 21 and 22): each within its bound, or absent.
    assert spec.timeout_minutes is None or TIMEOUT_MINUTES.problem(spec.timeout_minutes) is None
    assert spec.max_runs is None or MAX_RUNS.problem(spec.max_runs) is None
    assert JITTER_SECONDS.problem(spec.jitter_seconds) is None
    assert spec.approval_timeout_minutes is None or APPROVAL_TIMEOUT_MINUTES.problem(spec.approval_timeout_minutes) is None
    assert spec.end_at is None or (spec.end_at.tzinfo is not None and spec.end_at.year <= LAST_CALENDAR_YEAR)
    assert (spec.overlap, spec.catch_up) != ("allow", "all")
    assert set(spec.approval_required_tools) <= set(spec.required_tools)
    assert len(spec.fallback_models) <= MAX_FALLBACK_MODELS and spec.model not in spec.fallback_models
    if spec.skip_holidays or spec.business_days_only:
        assert spec.trigger_config is not None and spec.trigger_config.kind in ("cron", "interval")


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "400")), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=8), st.booleans(), st.booleans())
def test_random_inputs_never_crash_and_never_yield_an_invalid_skill(data: dict[str, object], base: bool,
                                                                    schemas: bool) -> None:
    if base:
        data = {"name": "n", "instructions": "i", **data}
    ctx = SCHEMA_CTX if schemas else CTX
    try:
        result = normalize(data, ctx)
    except SkillValidationError as e:
        assert e.errors and all(err.message for err in e.errors)
        return
    assert_storable(result.spec, ctx)


# --- approvals ------------------------------------------------------------------------------


def test_approval_fields_are_read_checked_and_kept() -> None:
    plan = [{"id": "send", "tool": "outbox_send_message", "params": {"message": "hi"}, "approval": "true"}]
    spec = ok(execution_plan=plan, approvalRequiredTools="outbox_send_message", approvalTimeoutMinutes="90").spec
    assert spec.approval_required_tools == ["outbox_send_message"] and spec.approval_timeout_minutes == 90
    assert spec.execution_plan is not None and spec.execution_plan[0].approval
    # A plan step without approval is stored as before (no `approval: false` in every plan).
    plain = ok(execution_plan=[{"toolName": "outbox_send_message", "parameters": {"message": "hi"}}]).spec
    assert plain.execution_plan is not None and "approval" not in plain.execution_plan[0].model_dump()


def test_approval_for_a_tool_the_skill_never_calls_is_refused_with_its_field() -> None:
    problems = refused({"name": "w", "instructions": "x", "required_tools": ["outbox_send_message"],
                        "approval_required_tools": ["telegram_send_message"], "approval_timeout_minutes": 0,
                        "execution_plan": [{"toolName": "outbox_send_message", "approval": "maybe"}]})
    assert "'telegram_send_message' is not one of the skill's tools" in problems["approval_required_tools"]
    assert problems["approval_timeout_minutes"] == "must be between 1 and 10080 (got 0)"
    assert "execution_plan[0].approval" in problems


def test_a_step_approval_survives_the_safety_net() -> None:
    plan = [{"id": "send", "toolName": "outbox_send_message", "approval": True,
             "parameters": {"message": "{{a summary of my day}}"}}]
    spec = ok(execution_plan=plan).spec
    assert spec.tier == "agent" and spec.approval_required_tools == ["outbox_send_message"]
