"""The registration normalizer: what an LLM (or a person) sends becomes a valid SkillSpec.

It fixes what models commonly get wrong (re-nest flattened trigger fields,
aliases, relative to absolute time, inferred trigger type, string arrays and
numbers, default agent, time zone injection, the multi-step safety net) and then
validates, collecting every problem so one answer names them all: unknown fields
(with the closest name), sizes (``skills.spec.limits``), tools, and each Direct step's
parameters against its tool's schema. It is pure: ``now``, the default zone and the
tool catalog (names, input schemas, argument rules) are parameters, so the activity
that calls it owns the clock and the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from skills.errors import FieldError, SkillValidationError
from skills.run.plans import analyse_plan, event_placeholders
from skills.run.preflight import automatic_checks, time_offset_problems
from skills.spec.context import NormalizeContext
from skills.spec.delivery_fields import check_destinations, context_from, deliver, deliver_to, remind_after
from skills.spec.fields import (
    Problems,
    boolean,
    integer,
    notify_on_completion,
    optional_text,
    parse_json,
    required_text,
    string_list,
    union,
    within_limit,
)
from skills.spec.limits import (
    MAX_INSTRUCTIONS_BYTES,
    MAX_NAME_LENGTH,
    MAX_PLAN_BYTES,
    MAX_SKILL_BYTES,
    MAX_STEPS,
    MAX_TOKENS_PER_MONTH,
    NOTIFY_INTERVAL_MINUTES,
    body_too_large,
    json_size,
    too_large,
)
from skills.spec.llm_models import check_models, fallback_models, model_name
from skills.spec.models import (
    Normalized,
    Skill,
    SkillSpec,
)
from skills.spec.reach_fields import (
    approval_timeout,
    check_exempt,
    check_parameters,
    check_recalled,
    check_tools,
    exempt_list,
    normalize_plan,
    normalize_preflight,
    reserved_tools,
)
from skills.spec.when_fields import (
    SKIP_FIELDS,
    TRIGGER_KEYS,
    TRIGGER_TYPES,
    WHEN_KEYS,
    crowded_spread,
    normalize_trigger,
    schedule_shape,
    skip_days,
    skip_zone,
)
from skills.suggest import did_you_mean

MAX_AGENT_ID_LENGTH = 100
"""An agent id is a search attribute of every run (``SkillAgent``), which Temporal caps at 2,048 bytes:
a longer one registered, and then no run of the skill could start."""

# Root-level aliases an LLM tends to send, mapped to the canonical field.
FIELD_ALIASES = {
    "agentId": "agent_id",
    "agent": "agent_id",
    "triggerType": "trigger_type",
    "type": "trigger_type",
    "triggerConfig": "trigger_config",
    "trigger": "trigger_config",
    "requiredTools": "required_tools",
    "tools": "required_tools",
    "executionPlan": "execution_plan",
    "plan": "execution_plan",
    "maxSteps": "max_steps",
    "notifyOnCompletion": "notify_on_completion",
    "notify": "notify_on_completion",
    "notifyIntervalMinutes": "notify_interval_minutes",
    "remindAfterMinutes": "remind_after_minutes",
    "maxTokensPerMonth": "max_tokens_per_month",
    "deliverTo": "deliver_to",
    "delivery": "deliver",
    "deliverOn": "deliver",
    "contextFrom": "context_from",
    "approvalRequiredTools": "approval_required_tools",
    "approval_tools": "approval_required_tools",
    "approvalTimeoutMinutes": "approval_timeout_minutes",
    "approvalExemptTools": "approval_exempt_tools",
    "prompt": "instructions",
    "pre_flight": "preflight",
    "preFlight": "preflight",
    "preflight_checks": "preflight",
    "preflightChecks": "preflight",
    "fallbackModels": "fallback_models",
    "fallbacks": "fallback_models",
    # The schedule's shape.
    "timeoutMinutes": "timeout_minutes",
    "timeout": "timeout_minutes",
    "endAt": "end_at",
    "until": "end_at",
    "maxRuns": "max_runs",
    "jitterSeconds": "jitter_seconds",
    "jitter": "jitter_seconds",
    "catchUp": "catch_up",
    "catchup": "catch_up",
    "overlap_policy": "overlap",
    "overlapPolicy": "overlap",
    # business days and holidays (skills.when.calendar)
    "skipHolidays": "skip_holidays",
    "holidays": "skip_holidays",
    "businessDaysOnly": "business_days_only",
    "business_days": "business_days_only",
    "businessDays": "business_days_only",
}

TRIGGER_ALIASES = {
    "cron": "schedule",
    "cronExpression": "schedule",
    "cron_expression": "schedule",
    "cronSchedule": "schedule",
    "expression": "schedule",
    "intervalMinutes": "interval_minutes",
    "interval": "interval_minutes",
    "every_minutes": "interval_minutes",
    "everyMinutes": "interval_minutes",
    "inMinutes": "in_minutes",
    "delay_minutes": "in_minutes",
    "inHours": "in_hours",
    "runAt": "at",
    "run_at": "at",
    "datetime": "at",
    "when": "at",
    "timeZone": "timezone",
    "time_zone": "timezone",
    "tz": "timezone",
    "event_name": "event",
    "eventName": "event",
    "on_event": "event",
    "onEvent": "event",
}


SPEC_FIELDS = set(SkillSpec.model_fields)
ENGINE_FIELDS = (set(Skill.model_fields) - SPEC_FIELDS) | {"tier", "next_fire", "file_path", "file_mtime",
                                                           "skipped_days"}
"""Fields a stored skill (``skills get --json``) or a SKILL.md registration request carries that the
engine keeps itself: read back in, they are ignored with a note, not refused as unknown."""
CANONICAL_FIELDS = SPEC_FIELDS | TRIGGER_KEYS
KNOWN_FIELDS = CANONICAL_FIELDS | FIELD_ALIASES.keys() | TRIGGER_ALIASES.keys()
"""What a skill input may say at its root: the canonical names and every alias the normalizer reads."""


def normalize(raw: Any, ctx: NormalizeContext, *, existing: SkillSpec | None = None) -> Normalized:
    """Normalize and validate one skill input; raise SkillValidationError naming every problem.

    With ``existing`` the input is a partial update: its fields replace the
    existing ones, and the merged whole is validated again.
    """
    # Measured first: an oversize input is refused before any work is spent on it.
    oversize = (too_large("", len(raw.encode(errors="replace")), MAX_SKILL_BYTES)
                if isinstance(raw, str) else body_too_large(raw))
    if oversize is not None:
        raise SkillValidationError([oversize])
    if isinstance(raw, str):
        parsed = Problems()
        raw = parse_json(raw, "skill", parsed)
        if parsed.errors:
            raise SkillValidationError(parsed.errors)
    if not isinstance(raw, Mapping):
        raise SkillValidationError.single("", f"a skill must be an object, got {type(raw).__name__}")

    notes: list[str] = []
    problems = Problems()
    data = _canonical_fields(dict(raw), notes, problems)
    trigger_as_written = _nest_trigger(data, notes, problems)
    given = set(data)
    skips_given = SKIP_FIELDS & data.keys()
    if existing is not None:
        data = _merge_update(existing, data)

    trigger = normalize_trigger(data, ctx, notes, problems)
    plan, plan_positions = normalize_plan(within_limit(data, "execution_plan", MAX_PLAN_BYTES, problems), problems)
    tools = string_list(data.get("required_tools"), "required_tools", problems)
    approval_tools = string_list(data.get("approval_required_tools"), "approval_required_tools", problems)
    exempt_tools = exempt_list(data, problems)
    preflight, preflight_positions = normalize_preflight(data.get("preflight"), problems)

    if plan:
        tools = union(tools, [s.tool_name for s in plan])
        verdict = analyse_plan(plan)
        if not verdict.direct:
            # A step's own approval outlives its plan: the Agent tier asks for every call of its tool.
            approval_tools = union(approval_tools, [s.tool_name for s in plan if s.approval])
            # The safety net: a placeholder only reasoning can fill would be sent literally
            # by the Direct tier, so an LLM works through the plan's intent instead.
            notes.append(f"execution_plan converted to Agent tier: {verdict.reason} "
                         "(plan removed, its tools added to required_tools)")
            plan = None
        elif len(plan) > 1:
            notes.append(f"execution_plan of {len(plan)} steps runs Direct, at zero tokens: {verdict.reason}")
    for i, step in zip(plan_positions, plan or [], strict=False):
        for problem in time_offset_problems(step.parameters):
            problems.add(f"execution_plan[{i}].parameters", problem)
    for i, check in zip(preflight_positions, preflight, strict=True):
        for problem in time_offset_problems(check.arguments):
            problems.add(f"preflight[{i}].arguments", problem)
    if ctx.tool_schemas is not None:
        for i, step in zip(plan_positions, plan or [], strict=False):
            check_parameters(f"execution_plan[{i}]", "parameters", step.tool_name, step.parameters, ctx, problems)
        for i, check in zip(preflight_positions, preflight, strict=True):
            check_parameters(f"preflight[{i}]", "arguments", check.tool, check.arguments, ctx, problems)

    name = required_text(data.get("name"), "name", problems, limit=MAX_NAME_LENGTH)
    added = automatic_checks(name, tools, preflight)
    for check in added:
        notes.append(f"pre-flight check added: skip when {check.reason()}")
    preflight = [*preflight, *added]

    fields: dict[str, Any] = {
        "agent_id": _agent_id(data.get("agent_id"), problems) or ctx.default_agent_id,
        "name": name,
        "description": optional_text(data.get("description"), "description", problems) or "",
        "enabled": boolean(data.get("enabled"), "enabled", True, problems),
        "trigger_type": _trigger_type(data, notes, problems),
        "trigger_config": trigger,
        "instructions": required_text(data.get("instructions"), "instructions", problems,
                                      max_bytes=MAX_INSTRUCTIONS_BYTES),
        "required_tools": tools,
        "execution_plan": plan,
        "max_steps": integer(data.get("max_steps"), "max_steps", 10, problems, bound=MAX_STEPS),
        "notify_on_completion": notify_on_completion(data.get("notify_on_completion"), problems),
        "notify_interval_minutes": integer(
            data.get("notify_interval_minutes"), "notify_interval_minutes", 0, problems, bound=NOTIFY_INTERVAL_MINUTES
        ),
        "deliver": deliver(data, given, notes, problems),
        "remind_after_minutes": remind_after(data, problems),
        "max_tokens_per_month": integer(data.get("max_tokens_per_month"), "max_tokens_per_month", None, problems,
                                        bound=MAX_TOKENS_PER_MONTH),
        "deliver_to": deliver_to(data.get("deliver_to"), problems),
        "context_from": context_from(data.get("context_from"), problems),
        "preflight": preflight,
        "model": model_name(data.get("model"), "model", problems),
        "approval_required_tools": approval_tools,
        "approval_exempt_tools": exempt_tools,
        "approval_timeout_minutes": approval_timeout(data, problems),
    }
    fields["fallback_models"] = fallback_models(data.get("fallback_models"), fields["model"], notes, problems)
    check_models(fields, bool(plan), ctx.llm_models, notes, problems)
    fields |= schedule_shape(data, given, trigger, ctx, notes, problems)
    fields.update(skip_days(data, skips_given, fields["trigger_type"], notes, problems))
    if fields["skip_holidays"] or fields["business_days_only"]:
        fields["trigger_config"] = skip_zone(fields["trigger_config"], ctx, notes)
    # A delivery is a call like any other: its tool may be asked for, or exempted, as a plan's.
    called = union(tools, [destination.tool for destination in fields["deliver_to"]])
    for tool in approval_tools:
        if tool not in called:
            # An approval for a call the skill never makes would promise a safeguard that never acts.
            problems.add("approval_required_tools", f"'{tool}' is not one of the skill's tools (required_tools "
                                                    "or the plan's toolName): list it there too, or drop it here")
    check_exempt(exempt_tools, called, approval_tools, ctx, problems)
    if "agent_id" not in data:
        notes.append(f"agent_id defaulted to '{ctx.default_agent_id}'")
    if fields["agent_id"] in ctx.reserved_agents:
        problems.add("agent_id", f"the agent '{fields['agent_id']}' is reserved for the skills the SKILL.md sync "
                                 "registers from the skill folders: choose another agent_id")
    check_recalled(fields, plan_positions, plan or [], ctx, notes, problems)
    if fields["trigger_type"] != "event":
        for i, step in zip(plan_positions, plan or [], strict=False):
            for expression in event_placeholders(step.parameters):
                problems.add(f"execution_plan[{i}].parameters",
                             f"'{{{{{expression}}}}}' is filled from the event that starts a run, but this skill "
                             "is not started by events (give trigger_type 'event' and trigger_config.event)")
    # Before the catalog check, whatever ``enabled`` says: a disabled skill may wait for a tool that is
    # not there yet, never for one it may not have at all (a manual run would hand it over).
    reserved = reserved_tools(tools, preflight, problems)
    needed = [t for t in union(tools, [c.tool for c in preflight]) if t not in reserved]
    missing = check_tools(needed, ctx.tool_catalog, fields["enabled"], problems)
    check_destinations(fields["deliver_to"], ctx, problems)
    if missing:
        notes.append(f"registered disabled until these tools are available: {', '.join(missing)}")

    if problems.errors:
        raise SkillValidationError(problems.errors)
    spec = SkillSpec.model_validate(fields)
    crowded = crowded_spread(spec, given, ctx, new=existing is None)
    if crowded is not None:
        spec.spread = True
        notes.append(crowded)
    # Each field is within its limit, but an update's merged whole must fit a payload too.
    oversize = too_large("", json_size(spec), MAX_SKILL_BYTES)
    if oversize is not None:
        raise SkillValidationError([oversize])
    return Normalized(spec=spec, notes=notes, trigger_as_written=trigger_as_written, missing_tools=missing)


def own_field_problems(fields: Mapping[str, Any], zone: str) -> list[FieldError]:
    """What the normalizer says of each of these fields on its own (the schedule's shape, the skipped
    days, the approvals: what a scheduled SKILL.md passes on to its registration), so ``skills
    validate`` refuses what the sync's registration would, in the same words. The checks that weigh a
    field against the rest of the skill or against the clock (an approval for a tool it never calls,
    holidays without a repeating schedule, an ``end_at`` already past) are left to the registration.
    ``zone``: the one a naive ``end_at`` is read in."""
    problems = Problems()
    data = dict(fields)
    ctx = NormalizeContext(now=datetime.min.replace(tzinfo=UTC), default_timezone=zone, default_agent_id="")
    schedule_shape(data, set(data), None, ctx, [], problems)
    skip_days(data, (), "cron", [], problems)
    string_list(data.get("approval_required_tools"), "approval_required_tools", problems)
    exempt_list(data, problems)
    approval_timeout(data, problems)
    deliver(data, (), [], problems)
    remind_after(data, problems)
    context_from(data.get("context_from"), problems)
    return problems.errors


# --- the schedule's shape: a run's limit, the schedule's end, jitter, overlap, catch-up ------------------


def spec_as_input(spec: SkillSpec) -> dict[str, Any]:
    """A stored spec as the input dict it could have come from (for merging updates)."""
    return spec.model_dump(mode="json", exclude_none=True)


# --- fields -------------------------------------------------------------------------------


def _canonical_fields(data: dict[str, Any], notes: list[str], problems: Problems) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        canonical = FIELD_ALIASES.get(key) or TRIGGER_ALIASES.get(key) or key
        if canonical != key:
            if canonical in data:
                notes.append(f"ignored '{key}': '{canonical}' was also given")
                continue
            notes.append(f"'{key}' read as '{canonical}'")
        if canonical in ENGINE_FIELDS:
            notes.append(f"ignored '{key}': it is kept by the engine, not given")
            continue
        if canonical not in SPEC_FIELDS and canonical not in TRIGGER_KEYS:
            # A misspelt field would otherwise be dropped and the skill silently never fire as meant.
            problems.add(str(key), "unknown field" + did_you_mean(str(key), KNOWN_FIELDS, CANONICAL_FIELDS))
            continue
        out[canonical] = value
    return out


def _nest_trigger(data: dict[str, Any], notes: list[str], problems: Problems) -> dict[str, Any] | None:
    """Move trigger fields given at the root into trigger_config; return the trigger as written."""
    config = data.get("trigger_config")
    if isinstance(config, str):
        config = parse_json(config, "trigger_config", problems)
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        problems.add("trigger_config", f"must be an object, got {type(config).__name__}")
        config = {}
    nested: dict[str, Any] = {}
    for key, value in config.items():
        if value is None:
            continue
        canonical = TRIGGER_ALIASES.get(key, key)
        if canonical != key:
            notes.append(f"trigger_config.{key} read as trigger_config.{canonical}")
        if canonical not in TRIGGER_KEYS:
            problems.add(f"trigger_config.{key}", "unknown trigger field"
                         + did_you_mean(str(key), TRIGGER_KEYS | TRIGGER_ALIASES.keys(), TRIGGER_KEYS))
            continue
        nested[canonical] = value
    for key in sorted(TRIGGER_KEYS & data.keys()):
        value = data.pop(key)
        if value is None:
            continue
        if key in nested and nested[key] != value:
            notes.append(f"ignored root '{key}': trigger_config.{key} was also given")
            continue
        nested[key] = value
        notes.append(f"moved root '{key}' into trigger_config")
    data.pop("trigger_config", None)
    if nested:
        data["trigger_config"] = nested
    return dict(nested) if nested else None


def _merge_update(existing: SkillSpec, patch: dict[str, Any]) -> dict[str, Any]:
    merged = spec_as_input(existing)
    # Automatic pre-flight checks are derived again from the merged skill's shape.
    merged["preflight"] = [c for c in merged.get("preflight", []) if not c.get("automatic")]
    new_trigger = patch.pop("trigger_config", None)
    if new_trigger is None and patch.get("trigger_type") in ("manual", "event"):
        merged.pop("trigger_config", None)
    if new_trigger is not None:
        old = merged.get("trigger_config", {})
        if "event" in new_trigger:
            old = {}  # an event replaces a schedule (and a former event) whole
        elif WHEN_KEYS & new_trigger.keys():
            old = {k: v for k, v in old.items() if k == "timezone"}
        merged["trigger_config"] = {**old, **new_trigger}
        if "trigger_type" not in patch and merged.get("trigger_type") != "cron":
            merged.pop("trigger_type", None)
    merged.update(patch)
    return merged


def _trigger_type(data: dict[str, Any], notes: list[str], problems: Problems) -> str:
    config = data.get("trigger_config", {})
    has_schedule = bool(WHEN_KEYS & config.keys())
    given = data.get("trigger_type")
    if given is not None and not isinstance(given, str):
        problems.add("trigger_type", f"must be one of {', '.join(TRIGGER_TYPES)}")
        return "manual"
    given = given.strip().lower() if given else None
    if "event" in config:
        # Both at once is reported by normalize_trigger; the event skill is what was asked for.
        if given not in (None, "event"):
            notes.append(f"trigger_type '{given}' changed to 'event' because trigger_config has an event")
        elif given is None:
            notes.append("trigger_type inferred as 'event' from trigger_config.event")
        return "event"
    if given == "event":
        problems.add("trigger_config.event", "is required for trigger_type 'event': the name of the event "
                                             "that starts the skill (e.g. 'email.received')")
        return "event"
    if has_schedule:
        if given not in (None, "cron"):
            notes.append(f"trigger_type '{given}' changed to 'cron' because trigger_config has a schedule")
        elif given is None:
            notes.append("trigger_type inferred as 'cron' from trigger_config")
        return "cron"
    if given is None:
        notes.append("trigger_type inferred as 'manual' (no trigger_config)")
        return "manual"
    if given not in TRIGGER_TYPES:
        problems.add("trigger_type", f"'{given}' is not one of {', '.join(TRIGGER_TYPES)}")
        return "manual"
    if given == "cron":
        problems.add(
            "trigger_config",
            "a cron skill needs one of schedule, interval_minutes, at, in_minutes or in_hours",
        )
    return given


# --- trigger ------------------------------------------------------------------------------


# --- business days and holidays (skills.when.calendar) -------------------------------------------


def _agent_id(value: Any, problems: Problems) -> str | None:
    agent = optional_text(value, "agent_id", problems)
    if agent and len(agent) > MAX_AGENT_ID_LENGTH:
        problems.add("agent_id", f"is {len(agent):,} characters long; the limit is {MAX_AGENT_ID_LENGTH}")
        return None
    return agent


# --- plan and tools -----------------------------------------------------------------------


