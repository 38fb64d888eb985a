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

import dataclasses
import difflib
import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import available_timezones

import re2
from pydantic import ValidationError

from skills.errors import FieldError, SkillValidationError
from skills.naming import MANAGEMENT_TOOLS, management_tool_problem
from skills.run.arguments import ArgumentRules, argument_problems
from skills.run.plans import analyse_plan, event_placeholders, recall_names
from skills.run.preflight import PreflightCheck, automatic_checks, time_offset_problems
from skills.run.recall import SELF
from skills.spec.fields import (
    Problems,
    boolean,
    integer,
    notify_on_completion,
    number,
    optional_text,
    parse_json,
    required_text,
    string_list,
    union,
    within_limit,
)
from skills.spec.limits import (
    APPROVAL_TIMEOUT_MINUTES,
    DIGEST_MINUTES,
    IN_HOURS,
    IN_MINUTES,
    INTERVAL_MINUTES,
    JITTER_SECONDS,
    MAX_CONTEXT_FROM,
    MAX_DESTINATION_BYTES,
    MAX_DESTINATIONS,
    MAX_EXEMPT_TOOLS,
    MAX_INSTRUCTIONS_BYTES,
    MAX_PLAN_BYTES,
    MAX_RECALL_CHARS,
    MAX_RUNS,
    MAX_SKILL_BYTES,
    MAX_STEPS,
    MAX_TOKENS_PER_MONTH,
    NOTIFY_INTERVAL_MINUTES,
    RELATIVE_MINUTES_LIMIT,
    REMIND_AFTER_MINUTES,
    TIMEOUT_MINUTES,
    body_too_large,
    json_size,
    too_large,
)
from skills.spec.llm_models import ModelList, check_models, fallback_models, model_name
from skills.spec.models import (
    CATCH_UPS,
    DELIVERIES,
    OVERLAPS,
    Destination,
    Normalized,
    PlanStep,
    Skill,
    SkillSpec,
    TriggerConfig,
)
from skills.suggest import did_you_mean
from skills.when.calendar import check_holidays
from skills.when.events import event_name_problem
from skills.when.triggers import LAST_CALENDAR_YEAR, MAX_ZONE_NAME, check_cron, zone_info

MAX_NAME_LENGTH = 200
MAX_AGENT_ID_LENGTH = 100
"""An agent id is a search attribute of every run (``SkillAgent``), which Temporal caps at 2,048 bytes:
a longer one registered, and then no run of the skill could start."""
MAX_CRON_LENGTH = 1000
"""Characters of a cron expression: every value of every field listed (0,1,...,59 ...) is under 400."""

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

TRIGGER_KEYS = {"schedule", "timezone", "interval_minutes", "at", "in_minutes", "in_hours", "event"}
WHEN_KEYS = TRIGGER_KEYS - {"timezone", "event"}
"""The keys that give a schedule (a cron-type skill); ``event`` makes an event-type skill."""

STEP_TOOL_ALIASES = ("toolName", "tool_name", "tool", "name")
STEP_PARAM_ALIASES = ("parameters", "params", "arguments", "args", "input")
CHECK_ALIASES = {"toolName": "tool", "tool_name": "tool", "name": "tool", "args": "arguments", "params": "arguments",
                 "parameters": "arguments", "skipIf": "skip_if", "skip_when": "skip_if", "condition": "skip_if"}

SPEC_FIELDS = set(SkillSpec.model_fields)
ENGINE_FIELDS = (set(Skill.model_fields) - SPEC_FIELDS) | {"tier", "next_fire", "file_path", "file_mtime",
                                                            "skipped_days"}
"""Fields a stored skill (``skills get --json``) or a SKILL.md registration request carries that the
engine keeps itself: read back in, they are ignored with a note, not refused as unknown."""
CANONICAL_FIELDS = SPEC_FIELDS | TRIGGER_KEYS
KNOWN_FIELDS = CANONICAL_FIELDS | FIELD_ALIASES.keys() | TRIGGER_ALIASES.keys()
"""What a skill input may say at its root: the canonical names and every alias the normalizer reads."""
TRIGGER_TYPES = ("cron", "event", "manual")


@dataclass(frozen=True)
class NormalizeContext:
    """What the normalizer needs from the world, given by its caller."""

    now: datetime
    """The current instant, time-zone aware."""
    default_timezone: str
    default_agent_id: str
    tool_catalog: Collection[str] | None = None
    """Names of the tools available now; None skips the tool check."""
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None
    """Each available tool's input JSON Schema, by name; None skips the parameter check."""
    argument_rules: ArgumentRules | None = None
    """The argument pipeline's rules, so a parameter is judged as a call would judge it."""
    destination_allowlists: Mapping[str, Mapping[str, Collection[str]]] = dataclasses.field(default_factory=dict)
    """tool -> parameter -> the values a ``deliver_to`` destination may give it (the owner's Telegram chats):
    a result is never sent where its owner did not allow."""
    reserved_agents: frozenset[str] = frozenset()
    """Agents this input may not register under: the files agent, for every caller but the SKILL.md sync
    (a skill there named like a SKILL.md would be given that file's toolsets and scripts)."""
    llm_models: Callable[[bool], ModelList] | None = None
    """The LLM endpoint's models (``True``: asked again, not a kept list), asked for only when a skill
    names one; None skips the check."""
    destructive_tools: tuple[Collection[str], Collection[str]] | None = None
    """The catalog's tools now, and those of them its servers mark destructive (``destructiveHint: true``):
    an ``approval_exempt_tools`` entry the catalog knows must be one of the latter; None skips the check."""
    skill_names: Callable[[str], Collection[str]] | None = None
    """The names of an agent's skills now, lowercased (``context_from``, ``{{skill:NAME.last}}``); None
    skips the check."""


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

    trigger = _normalize_trigger(data, ctx, notes, problems)
    plan, plan_positions = _normalize_plan(within_limit(data, "execution_plan", MAX_PLAN_BYTES, problems), problems)
    tools = string_list(data.get("required_tools"), "required_tools", problems)
    approval_tools = string_list(data.get("approval_required_tools"), "approval_required_tools", problems)
    exempt_tools = _exempt_list(data, problems)
    preflight, preflight_positions = _normalize_preflight(data.get("preflight"), problems)

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
            _check_parameters(f"execution_plan[{i}]", "parameters", step.tool_name, step.parameters, ctx, problems)
        for i, check in zip(preflight_positions, preflight, strict=True):
            _check_parameters(f"preflight[{i}]", "arguments", check.tool, check.arguments, ctx, problems)

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
        "deliver": _deliver(data, given, notes, problems),
        "remind_after_minutes": _remind_after(data, problems),
        "max_tokens_per_month": integer(data.get("max_tokens_per_month"), "max_tokens_per_month", None, problems,
                                        bound=MAX_TOKENS_PER_MONTH),
        "deliver_to": _deliver_to(data.get("deliver_to"), problems),
        "context_from": context_from(data.get("context_from"), problems),
        "preflight": preflight,
        "model": model_name(data.get("model"), "model", problems),
        "approval_required_tools": approval_tools,
        "approval_exempt_tools": exempt_tools,
        "approval_timeout_minutes": _approval_timeout(data, problems),
    }
    fields["fallback_models"] = fallback_models(data.get("fallback_models"), fields["model"], notes, problems)
    check_models(fields, bool(plan), ctx.llm_models, notes, problems)
    fields |= _schedule_shape(data, given, trigger, ctx, notes, problems, new=existing is None, agent=not plan)
    fields.update(_skip_days(data, skips_given, fields["trigger_type"], notes, problems))
    if fields["skip_holidays"] or fields["business_days_only"]:
        fields["trigger_config"] = _skip_zone(fields["trigger_config"], ctx, notes)
    # A delivery is a call like any other: its tool may be asked for, or exempted, as a plan's.
    called = union(tools, [destination.tool for destination in fields["deliver_to"]])
    for tool in approval_tools:
        if tool not in called:
            # An approval for a call the skill never makes would promise a safeguard that never acts.
            problems.add("approval_required_tools", f"'{tool}' is not one of the skill's tools (required_tools "
                                                    "or the plan's toolName): list it there too, or drop it here")
    _check_exempt(exempt_tools, called, approval_tools, ctx, problems)
    if "agent_id" not in data:
        notes.append(f"agent_id defaulted to '{ctx.default_agent_id}'")
    if fields["agent_id"] in ctx.reserved_agents:
        problems.add("agent_id", f"the agent '{fields['agent_id']}' is reserved for the skills the SKILL.md sync "
                                 "registers from the skill folders: choose another agent_id")
    _check_recalled(fields, plan_positions, plan or [], ctx, notes, problems)
    if fields["trigger_type"] != "event":
        for i, step in zip(plan_positions, plan or [], strict=False):
            for expression in event_placeholders(step.parameters):
                problems.add(f"execution_plan[{i}].parameters",
                             f"'{{{{{expression}}}}}' is filled from the event that starts a run, but this skill "
                             "is not started by events (give trigger_type 'event' and trigger_config.event)")
    # Before the catalog check, whatever ``enabled`` says: a disabled skill may wait for a tool that is
    # not there yet, never for one it may not have at all (a manual run would hand it over).
    reserved = _reserved_tools(tools, preflight, problems)
    needed = [t for t in union(tools, [c.tool for c in preflight]) if t not in reserved]
    missing = _check_tools(needed, ctx.tool_catalog, fields["enabled"], problems)
    _check_destinations(fields["deliver_to"], ctx, problems)
    if missing:
        notes.append(f"registered disabled until these tools are available: {', '.join(missing)}")

    if problems.errors:
        raise SkillValidationError(problems.errors)
    spec = SkillSpec.model_validate(fields)
    # Each field is within its limit, but an update's merged whole must fit a payload too.
    oversize = too_large("", json_size(spec), MAX_SKILL_BYTES)
    if oversize is not None:
        raise SkillValidationError([oversize])
    return Normalized(spec=spec, notes=notes, trigger_as_written=trigger_as_written, missing_tools=missing)


def _deliver(data: Mapping[str, Any], given: Collection[str], notes: list[str], problems: Problems) -> str:
    """``deliver``: always, on_change or never (``skills.run.notify``); ``given``: the fields of this input."""
    deliver = _choice(data.get("deliver"), "deliver", DELIVERIES, problems)
    if deliver != "always" and data.get("notify_on_completion") is False and "deliver" in given:
        notes.append(f"deliver '{deliver}': no effect, notify_on_completion false sends no completion notice")
    return deliver


def context_from(value: Any, problems: Problems) -> list[str]:
    """``context_from``: ``self`` or skill names (``skills.run.recall``), a list (or one name, or a comma-separated
    text), at most ``MAX_CONTEXT_FROM``, each once."""
    field = "context_from"
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, str):
        text = value.strip()
        value = parse_json(text, field, problems) if text.startswith("[") else [p for p in text.split(",")]
        if value is None:
            return []
    if not isinstance(value, list):
        problems.add(field, f"must be a list of skill names or 'self' (got {type(value).__name__})")
        return []
    if len(value) > MAX_CONTEXT_FROM:
        problems.add(field, f"names {len(value)} skills; at most {MAX_CONTEXT_FROM} are allowed (each brings up "
                            f"to {MAX_RECALL_CHARS:,} characters to every run's first turn)")
        return []
    names: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            problems.add(f"{field}[{i}]", "must be a skill name or 'self'")
            continue
        name = item.strip()
        if len(name) > MAX_NAME_LENGTH:
            problems.add(f"{field}[{i}]", f"is {len(name)} characters; a skill name is at most {MAX_NAME_LENGTH}")
            continue
        name = SELF if name.lower() == SELF else name
        if name.lower() not in {n.lower() for n in names}:
            names.append(name)
    return names


def _check_recalled(fields: dict[str, Any], plan_positions: list[int], plan: list[PlanStep], ctx: NormalizeContext,
                    notes: list[str], problems: Problems) -> None:
    """The skills ``context_from`` and ``{{skill:NAME.last}}`` name are the agent's (the skill's own name is
    ``self``); an unknown one is refused, naming where it was given."""
    own = (fields.get("name") or "").strip().lower()
    known = None if ctx.skill_names is None else {n.lower() for n in ctx.skill_names(fields["agent_id"])}
    agent = fields["agent_id"]

    def unknown(name: str) -> bool:
        return known is not None and name != SELF and name.lower() != own and name.lower() not in known

    remembered = fields.get("context_from") or []
    for i, name in enumerate(remembered):
        if unknown(name):
            problems.add(f"context_from[{i}]", f"no skill {name[:100]!r} for agent '{agent}': name a skill of "
                                               "the same agent, or 'self' for this one")
    fields["context_from"] = list(dict.fromkeys(SELF if n.lower() == own else n for n in remembered))
    if remembered and plan:
        notes.append("context_from gives the Agent tier its context; a Direct plan reads a result with "
                     "{{last.result}} or {{skill:NAME.last}} in a step's parameters")
    read = {name.lower() for step in plan for name in recall_names(step.parameters)}
    if len(read) > MAX_CONTEXT_FROM:
        problems.add("execution_plan", f"reads the results of {len(read)} skills ({{{{last.result}}}}, "
                                       f"{{{{skill:NAME.last}}}}); at most {MAX_CONTEXT_FROM} are allowed")
    for i, step in zip(plan_positions, plan, strict=False):
        for name in recall_names(step.parameters):
            if unknown(name):
                problems.add(f"execution_plan[{i}].parameters",
                             f"'{{{{skill:{name[:100]}.last}}}}': no skill {name[:100]!r} for agent '{agent}'")


def _exempt_list(data: Mapping[str, Any], problems: Problems) -> list[str]:
    exempt = string_list(data.get("approval_exempt_tools"), "approval_exempt_tools", problems)
    if len(exempt) > MAX_EXEMPT_TOOLS:
        problems.add("approval_exempt_tools", f"at most {MAX_EXEMPT_TOOLS} tools (got {len(exempt)})")
        return []
    return exempt


def _check_exempt(exempt: list[str], tools: list[str], approval_tools: list[str], ctx: NormalizeContext,
                  problems: Problems) -> None:
    """``approval_exempt_tools``: each one of the skill's tools, not also asked for, and (when the catalog
    knows the tool) one its server marks destructive: an exemption of anything else would exempt nothing."""
    for tool in exempt:
        if tool not in tools:
            problems.add("approval_exempt_tools", f"'{tool}' is not one of the skill's tools (required_tools or "
                                                  "the plan's toolName): drop it here")
        elif tool in approval_tools:
            problems.add("approval_exempt_tools", f"'{tool}' is in approval_required_tools too: a tool either "
                                                  "waits for approval or runs unattended, not both")
        elif ctx.destructive_tools is not None and tool in ctx.destructive_tools[0] \
                and tool not in ctx.destructive_tools[1]:
            problems.add("approval_exempt_tools", f"'{tool}' is not marked destructive by its server "
                                                  "(destructiveHint: true): its calls do not wait, nothing to exempt")


def _approval_timeout(data: Mapping[str, Any], problems: Problems) -> int | None:
    return integer(data.get("approval_timeout_minutes"), "approval_timeout_minutes", None, problems,
                   bound=APPROVAL_TIMEOUT_MINUTES)


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
    _schedule_shape(data, set(data), None, ctx, [], problems, new=False)
    _skip_days(data, (), "cron", [], problems)
    string_list(data.get("approval_required_tools"), "approval_required_tools", problems)
    _exempt_list(data, problems)
    _approval_timeout(data, problems)
    _deliver(data, (), [], problems)
    _remind_after(data, problems)
    context_from(data.get("context_from"), problems)
    return problems.errors


DESTINATION_TOOL_KEYS = ("tool", "toolName", "tool_name", "name")


def _deliver_to(value: Any, problems: Problems) -> list[Destination]:
    """``deliver_to``: a list of destinations, each ``{tool: NAME, ...its fixed arguments}`` (a tool name
    alone is a destination without arguments; one object is a list of one)."""
    if value is None or value == []:
        return []
    if isinstance(value, str):
        value = parse_json(value, "deliver_to", problems) if value.strip()[:1] in "[{" else [value]
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        problems.add("deliver_to", "must be a list of destinations, each {tool: NAME, ...its fixed arguments}")
        return []
    if len(value) > MAX_DESTINATIONS:
        problems.add("deliver_to", f"at most {MAX_DESTINATIONS} destinations, got {len(value)}")
        return []
    destinations: list[Destination] = []
    for i, raw in enumerate(value):
        where = f"deliver_to[{i}]"
        if isinstance(raw, str):
            raw = {"tool": raw}
        if not isinstance(raw, Mapping):
            problems.add(where, "each destination is {tool: NAME, ...its fixed arguments}")
            continue
        key = next((k for k in DESTINATION_TOOL_KEYS if k in raw), None)
        tool = raw.get(key) if key else None
        if not isinstance(tool, str) or not tool.strip():
            problems.add(f"{where}.tool", "give the send tool (from get_tool_catalog), e.g. outbox_send_message")
            continue
        arguments = {k: v for k, v in raw.items() if k != key}
        digest = arguments.pop("digest_minutes", arguments.pop("digestMinutes", None))
        if isinstance(arguments.get("arguments"), Mapping) and len(arguments) == 1:
            arguments = dict(arguments["arguments"])  # {tool, arguments: {...}}, as it is stored
        if digest is not None:
            digest = number(digest, f"{where}.digest_minutes", problems, bound=DIGEST_MINUTES)
            if digest is None:
                continue
        if "message" in arguments:
            problems.add(f"{where}.message", "the message is the run's result: give only the fixed arguments "
                                             "(who it goes to)")
            continue
        oversize = too_large(where, json_size(arguments), MAX_DESTINATION_BYTES)
        if oversize is not None:
            problems.errors.append(oversize)
            continue
        destinations.append(Destination(tool=tool.strip(), arguments=arguments, digest_minutes=digest))
    return destinations


def _check_destinations(destinations: list[Destination], ctx: NormalizeContext, problems: Problems) -> None:
    """Each destination as a call of its tool would be judged: a tool of the catalog that takes a
    ``message``, and its fixed arguments within the tool's schema and the argument rules' allowlists."""
    for i, destination in enumerate(destinations):
        where, tool = f"deliver_to[{i}]", destination.tool
        if tool in MANAGEMENT_TOOLS:
            problems.add(f"{where}.tool", management_tool_problem(tool))
            continue
        if ctx.tool_catalog is not None and tool not in ctx.tool_catalog:
            close = difflib.get_close_matches(tool, list(ctx.tool_catalog), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else \
                "; call get_tool_catalog (or `skills catalog`) for the available tools"
            problems.add(f"{where}.tool", f"unknown tool '{tool}'{hint}")
            continue
        schema = (ctx.tool_schemas or {}).get(tool)
        if schema is not None and "message" not in (schema.get("properties") or {}):
            problems.add(f"{where}.tool", f"'{tool}' takes no `message`: a destination is a tool that sends one "
                                          "(outbox_send_message, telegram_send_message, ...)")
            continue
        for parameter, allowed in ctx.destination_allowlists.get(tool, {}).items():
            value = destination.arguments.get(parameter)
            if value is not None and str(value) not in allowed:
                problems.add(f"{where}.{parameter}", f"'{value}' is not an allowed destination of {tool}: the owner "
                                                     f"allows {', '.join(sorted(allowed)) or 'none'}")
        _check_parameters(where, "arguments", tool, {**destination.arguments, "message": "(the result)"}, ctx,
                          problems)


def _remind_after(data: Mapping[str, Any], problems: Problems) -> int:
    return integer(data.get("remind_after_minutes"), "remind_after_minutes", 0, problems, bound=REMIND_AFTER_MINUTES)


# --- the schedule's shape: a run's limit, the schedule's end, jitter, overlap, catch-up ------------------


def _schedule_shape(data: dict[str, Any], given: set[str], trigger: TriggerConfig | None, ctx: NormalizeContext,
                    notes: list[str], problems: Problems, *, new: bool, agent: bool = False) -> dict[str, Any]:
    """The shape fields, each checked. ``given``: the fields of this input (an update's merged fields were
    accepted when they were given: an ``end_at`` passed since then is the skill's end, not a mistake);
    ``new``: a skill registered now, not an update of a stored one; ``agent``: it runs on the Agent tier."""
    timeout = data.get("timeout_minutes")
    end_at = data.get("end_at")
    if end_at is not None:
        zone = (trigger.timezone if trigger else None) or ctx.default_timezone
        end_at = _instant(end_at, zone, problems, "end_at")
        if end_at is not None and "end_at" in given and end_at <= ctx.now:
            problems.add("end_at", f"{end_at.isoformat()} is in the past (now is {ctx.now.isoformat()})")
        elif end_at is not None and end_at.year > LAST_CALENDAR_YEAR:
            problems.add("end_at", f"must be before {LAST_CALENDAR_YEAR + 1}-01-01 (got {end_at.isoformat()})")
    shape = {
        "timeout_minutes": number(timeout, "timeout_minutes", problems, bound=TIMEOUT_MINUTES)
        if timeout is not None else None,
        "end_at": end_at,
        "max_runs": integer(data.get("max_runs"), "max_runs", None, problems, bound=MAX_RUNS),
        "jitter_seconds": integer(data.get("jitter_seconds"), "jitter_seconds", 0, problems, bound=JITTER_SECONDS),
        "spread": _spread(data, given, new and agent, problems),
        "overlap": _choice(data.get("overlap"), "overlap", OVERLAPS, problems),
        "catch_up": _choice(data.get("catch_up"), "catch_up", CATCH_UPS, problems),
    }
    if shape["catch_up"] == "all" and shape["overlap"] == "allow":
        problems.add("catch_up", "'all' runs the missed fires one after another; overlap 'allow' would start "
                                 "them all at once: give one of the two")
    elif shape["catch_up"] == "all" and {"catch_up", "overlap"} & given:
        notes.append("catch_up 'all' queues fires: a fire that finds the previous run still going waits for "
                     "it instead of being skipped")
    kind = trigger.kind if trigger else None
    scheduled_only = [f for f in ("end_at", "max_runs", "jitter_seconds", "overlap", "catch_up")
                      if f in given and data.get(f) not in (None, 0, "skip", "once")]
    if kind is None and scheduled_only:
        notes.append(f"{', '.join(scheduled_only)}: no effect, this skill has no schedule")
    elif kind == "at" and {"max_runs", "jitter_seconds"} & set(scheduled_only):
        notes.append("max_runs and jitter_seconds: no effect on a one-shot, which fires once at its time")
    return shape


def _spread(data: Mapping[str, Any], given: set[str], by_default: bool, problems: Problems) -> bool:
    """Whether a cron takes the default spread (``skills.when.spread``) when it has no ``jitter_seconds``.

    Said, it is what was said (a ``jitter_seconds`` above 0 replaces the default either way, so a stored skill
    with both reads back as it was); a ``jitter_seconds`` said without it (even 0: no jitter) is the owner's
    own answer, so no default. Otherwise ``by_default``: a new Agent-tier skill takes it (a summary every
    morning may start a few minutes late; a burst of them at 09:00 is what the spread is for), a new Direct
    one does not (a plan's fixed calls, a reminder among them: a reminder set for 8:30 that comes at 8:34 is
    a wrong reminder), and a stored one keeps what it has: an update or a file's re-sync never adds a spread
    its owner did not approve."""
    if "spread" in given:
        return boolean(data.get("spread"), "spread", False, problems)
    if "jitter_seconds" in given:
        return False
    return True if by_default else boolean(data.get("spread"), "spread", False, problems)


def _choice(value: Any, field: str, choices: tuple[str, ...], problems: Problems) -> str:
    """One of ``choices`` (the first when absent), read case- and dash-insensitively."""
    if value is None:
        return choices[0]
    text = value.strip().lower().replace("-", "_") if isinstance(value, str) else None
    if text not in choices:
        problems.add(field, f"must be one of {', '.join(choices)} (got {str(value)[:60]!r})")
        return choices[0]
    return text


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
        # Both at once is reported by _normalize_trigger; the event skill is what was asked for.
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


def _normalize_trigger(
    data: dict[str, Any], ctx: NormalizeContext, notes: list[str], problems: Problems
) -> TriggerConfig | None:
    config = data.get("trigger_config")
    if config and "event" in config:
        return _event_trigger(config, problems)
    if not config or not WHEN_KEYS & config.keys():
        # A cron trigger_type without any of these is reported by _trigger_type.
        return None
    zone = config.get("timezone")
    if zone is not None:
        zone = _timezone(zone, problems)

    at = None
    relative = {k: config[k] for k in ("in_minutes", "in_hours") if config.get(k) is not None}
    if relative:
        amounts = {k: number(v, f"trigger_config.{k}", problems, bound=IN_HOURS if k == "in_hours" else IN_MINUTES)
                   for k, v in relative.items()}
        minutes = sum((amount or 0) * (60 if k == "in_hours" else 1) for k, amount in amounts.items())
        if minutes > RELATIVE_MINUTES_LIMIT:
            problems.add("trigger_config", "in_minutes and in_hours together are more than ten years ahead; "
                                           "give an absolute 'at' instead")
            minutes = 0
        at = ctx.now.astimezone(UTC) + timedelta(minutes=minutes)
        # Schedules have whole seconds: round up, so a fraction of a minute is still in the future.
        at = at.replace(microsecond=0) + (timedelta(seconds=1) if at.microsecond else timedelta())
        # An amount too small for a timedelta (in_minutes: 1e-191) adds nothing: the next second, then.
        at = max(at, ctx.now.astimezone(UTC).replace(microsecond=0) + timedelta(seconds=1))
        words = " and ".join(f"{k}={v}" for k, v in relative.items())
        notes.append(f"{words} converted to at={at.isoformat()}")
    if config.get("at") is not None:
        if relative:
            problems.add("trigger_config.at", "give either at or in_minutes/in_hours, not both")
        else:
            at = _instant(config["at"], zone or ctx.default_timezone, problems)
            if at is not None and at <= ctx.now:
                problems.add("trigger_config.at", f"{at.isoformat()} is in the past (now is {ctx.now.isoformat()})")
            elif at is not None and at.year > LAST_CALENDAR_YEAR:
                # Temporal's calendars match no later year: the schedule would never fire.
                problems.add("trigger_config.at", f"must be before {LAST_CALENDAR_YEAR + 1}-01-01 (got {at.isoformat()})")

    schedule = config.get("schedule")
    if schedule is not None:
        if not isinstance(schedule, str):
            problems.add("trigger_config.schedule", "must be a cron expression string")
            schedule = None
        elif len(schedule) > MAX_CRON_LENGTH:
            # croniter expands lists value by value: 100 KB of "1," took seconds.
            problems.add("trigger_config.schedule", f"is {len(schedule):,} characters long; the limit is "
                                                    f"{MAX_CRON_LENGTH:,}")
            schedule = None
        else:
            try:
                schedule = check_cron(schedule)
            except ValueError as e:
                problems.add("trigger_config.schedule", str(e))
                schedule = None
        if zone is None and config.get("timezone") is None:
            zone = ctx.default_timezone
            notes.append(f"timezone '{zone}' injected for the cron schedule")

    interval = config.get("interval_minutes")
    if interval is not None:
        interval = integer(interval, "trigger_config.interval_minutes", None, problems, bound=INTERVAL_MINUTES)

    given = [k for k in ("schedule", "interval_minutes", "at") if config.get(k) is not None]
    if relative and "at" not in given:
        given.append("in_minutes/in_hours")
    if len(given) > 1:
        problems.add("trigger_config", f"give exactly one of schedule, interval_minutes, at (got {', '.join(given)})")
        return None
    if not given:
        return None
    if zone is None and at is not None:
        zone = ctx.default_timezone
    return TriggerConfig(schedule=schedule, timezone=zone, interval_minutes=interval, at=at)


def _event_trigger(config: Mapping[str, Any], problems: Problems) -> TriggerConfig | None:
    """``{event: NAME}`` (and optionally a timezone): no schedule beside it."""
    others = sorted(WHEN_KEYS & config.keys())
    if others:
        problems.add("trigger_config", f"give either event or a schedule, not both (got event and {', '.join(others)})")
        return None
    zone = _timezone(config["timezone"], problems) if config.get("timezone") is not None else None
    problem = event_name_problem(config["event"])
    if problem:
        problems.add("trigger_config.event", problem)
        return None
    # A time zone may come along: the one {{now}} and {{today}} are read in by a run's plan.
    return TriggerConfig(event=config["event"].strip(), timezone=zone)


# --- business days and holidays (skills.when.calendar) -------------------------------------------

SKIP_FIELDS = frozenset({"skip_holidays", "business_days_only"})


def _skip_days(data: dict[str, Any], given: Collection[str], trigger_type: str, notes: list[str],
               problems: Problems) -> dict[str, Any]:
    """``skip_holidays`` (a supported country[-subdivision]) and ``business_days_only``: only a repeating
    schedule has days to skip. Kept from a stored skill whose update takes its schedule away, they go
    with a note; given with no repeating schedule, they are refused."""
    value = data.get("skip_holidays")
    holidays = None
    if value not in (None, "", False):
        try:
            holidays = check_holidays(value)
        except ValueError as e:
            problems.add("skip_holidays", str(e))
    business = boolean(data.get("business_days_only"), "business_days_only", False, problems)
    config = data.get("trigger_config")
    repeats = trigger_type == "cron" and isinstance(config, Mapping) and "event" not in config and any(
        config.get(key) is not None for key in ("schedule", "interval_minutes"))
    for field, on in (("skip_holidays", holidays is not None), ("business_days_only", business)):
        if not on or repeats:
            continue
        if field in given:
            problems.add(field, "only a repeating schedule (trigger_config.schedule or interval_minutes) skips "
                                "days; a one-shot, an event or a manual skill has none to skip")
        else:
            notes.append(f"{field} dropped: the skill no longer has a repeating schedule")
    if not repeats:
        return {"skip_holidays": None, "business_days_only": False}
    return {"skip_holidays": holidays, "business_days_only": business}


def _skip_zone(trigger: TriggerConfig | None, ctx: NormalizeContext, notes: list[str]) -> TriggerConfig | None:
    """Days are the dates of the skill's zone: an interval, which needs none to fire, gets the default one."""
    if trigger is None or trigger.timezone is not None:
        return trigger
    notes.append(f"timezone '{ctx.default_timezone}' injected: the days skipped are its dates")
    return trigger.model_copy(update={"timezone": ctx.default_timezone})


def _agent_id(value: Any, problems: Problems) -> str | None:
    agent = optional_text(value, "agent_id", problems)
    if agent and len(agent) > MAX_AGENT_ID_LENGTH:
        problems.add("agent_id", f"is {len(agent):,} characters long; the limit is {MAX_AGENT_ID_LENGTH}")
        return None
    return agent


def _timezone(value: Any, problems: Problems) -> str | None:
    if not isinstance(value, str) or not value.strip():
        problems.add("trigger_config.timezone", "must be an IANA time zone name such as 'Europe/Paris'")
        return None
    try:
        zone_info(value.strip())
    except ValueError:
        name = value.strip()
        if len(name) > MAX_ZONE_NAME:
            problems.add("trigger_config.timezone", f"is {len(name):,} characters; a time zone name has at most "
                                                    f"{MAX_ZONE_NAME} (use an IANA name such as America/New_York)")
            return None
        hint = did_you_mean(name, _zone_names())
        problems.add("trigger_config.timezone",
                     f"unknown time zone '{value}'{hint or ' (use an IANA name such as America/New_York)'}")
        return None
    return value.strip()


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def _instant(value: Any, zone: str, problems: Problems, field: str = "trigger_config.at") -> datetime | None:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            problems.add(field, f"'{value}' is not an ISO 8601 date-time such as '2026-02-14T15:00:00'")
            return None
    else:
        problems.add(field, "must be an ISO 8601 date-time string")
        return None
    if moment.tzinfo is None:
        try:
            moment = moment.replace(tzinfo=zone_info(zone))
        except ValueError:
            return None
    try:
        return moment.astimezone(UTC).replace(microsecond=0)
    except OverflowError:  # year 1 or 9999 shifted by its zone leaves the calendar
        problems.add(field, f"must be before {LAST_CALENDAR_YEAR + 1}-01-01 (got {value})")
        return None


# --- plan and tools -----------------------------------------------------------------------


def _normalize_plan(value: Any, problems: Problems) -> tuple[list[PlanStep] | None, list[int]]:
    """The steps, and the position of each in the list as given (for messages)."""
    if value is None or value == "" or value == []:
        return None, []
    if isinstance(value, str):
        value = parse_json(value, "execution_plan", problems)
        if value is None:
            return None, []
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        problems.add("execution_plan", "must be a list of steps {id, toolName, parameters}")
        return None, []
    steps: list[PlanStep] = []
    positions: list[int] = []
    for i, raw in enumerate(value):
        where = f"execution_plan[{i}]"
        if not isinstance(raw, Mapping):
            problems.add(where, "each step must be an object {id, toolName, parameters}")
            continue
        tool = next((raw[k] for k in STEP_TOOL_ALIASES if raw.get(k)), None)
        if not isinstance(tool, str) or not tool.strip():
            problems.add(f"{where}.toolName", "is required: the exact name of the tool to call")
            continue
        params = next((raw[k] for k in STEP_PARAM_ALIASES if k in raw), {})
        if isinstance(params, str):
            before = len(problems.errors)
            params = parse_json(params, f"{where}.parameters", problems)
            if len(problems.errors) > before:
                continue  # unreadable: reported; judging the step as if it had no parameters would add noise
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            problems.add(f"{where}.parameters", "must be an object of tool arguments")
            continue
        step_id = raw.get("id")
        positions.append(i)
        steps.append(
            PlanStep(id=str(step_id) if step_id not in (None, "") else f"step{i + 1}", tool_name=tool.strip(),
                     parameters=dict(params), approval=boolean(raw.get("approval"), f"{where}.approval", False,
                                                                problems))
        )
    ids = [s.id for s in steps]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.add("execution_plan", f"step id '{dup}' is used more than once")
    return steps or None, positions


def _normalize_preflight(value: Any, problems: Problems) -> tuple[list[PreflightCheck], list[int]]:
    """The checks, and the position of each in the list as given (for messages)."""
    if value is None or value == "" or value == []:
        return [], []
    if isinstance(value, str):
        value = parse_json(value, "preflight", problems)
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        problems.add("preflight", "must be a list of checks {tool, arguments, skip_if, path}")
        return [], []
    checks: list[PreflightCheck] = []
    positions: list[int] = []
    for i, raw in enumerate(value):
        where = f"preflight[{i}]"
        if not isinstance(raw, Mapping):
            problems.add(where, "each check must be an object {tool, arguments, skip_if, path}")
            continue
        fields = {CHECK_ALIASES.get(k, k): v for k, v in raw.items()}
        if isinstance(fields.get("arguments"), str):
            fields["arguments"] = parse_json(fields["arguments"], f"{where}.arguments", problems) or {}
        if isinstance(fields.get("skip_if"), str):
            fields["skip_if"] = {"nonempty": "not_empty", "not empty": "not_empty"}.get(
                fields["skip_if"].strip().lower(), fields["skip_if"].strip().lower())
        fields.pop("automatic", None)
        try:
            checks.append(PreflightCheck.model_validate(fields))
            positions.append(i)
        except ValidationError as e:
            for err in e.errors():
                field = ".".join(str(p) for p in err["loc"])
                problems.add(f"{where}.{field}" if field else where, _pydantic_message(err))
    return checks, positions


def _check_parameters(where: str, key: str, tool: str, arguments: dict[str, Any], ctx: NormalizeContext,
                      problems: Problems) -> None:
    """A step's (or a check's) arguments against its tool's schema, as the call would judge them.

    A tool missing from the catalog is the tool check's to report (or to wait for, disabled)."""
    schema = (ctx.tool_schemas or {}).get(tool)
    if schema is None:
        return
    for problem in argument_problems(tool, arguments, schema, ctx.argument_rules, any_value=_has_placeholder):
        if problem.parameter:
            problems.add(f"{where} ({tool}).{key}.{problem.parameter}", problem.message)
        else:
            problems.add(f"{where} ({tool})", problem.message)


_PLACEHOLDER = re2.compile(r"\{\{.*?\}\}")
"""Searched in every string of a plan's parameters: RE2 runs in linear time (Python's re took minutes
on 256 KiB of ``{{``, trying every opening against the rest of the text)."""


def _has_placeholder(value: Any) -> bool:
    """Text holding a placeholder (``{{fetch.result}}``, ``{{now}}``): filled at run time, so of any type then."""
    return isinstance(value, str) and _PLACEHOLDER.search(value) is not None


def _pydantic_message(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown field (expected tool, arguments, skip_if, path, description)"
    if error["type"] == "literal_error":
        return "must be 'empty' or 'not_empty'"
    return str(error["msg"]).removeprefix("Value error, ")


def _reserved_tools(tools: list[str], preflight: list[PreflightCheck], problems: Problems) -> set[str]:
    """Refuse the management tools in required_tools (the plan's among them) and the pre-flight checks."""
    found = set()
    for tool in tools:
        if tool in MANAGEMENT_TOOLS:
            found.add(tool)
            problems.add("required_tools", management_tool_problem(tool))
    for i, check in enumerate(preflight):
        if check.tool in MANAGEMENT_TOOLS:
            found.add(check.tool)
            problems.add(f"preflight[{i}].tool", management_tool_problem(check.tool))
    return found


def _check_tools(
    tools: list[str], catalog: Collection[str] | None, enabled: bool, problems: Problems
) -> list[str]:
    """Check tools against the live catalog; a disabled skill may wait for missing tools."""
    if catalog is None:
        return []
    missing = [t for t in tools if t not in catalog]
    if missing and enabled:
        for tool in missing:
            close = difflib.get_close_matches(tool, list(catalog), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else \
                "; call get_tool_catalog (or `skills catalog`) for the available tools"
            problems.add("required_tools", f"unknown tool '{tool}'{hint}")
        return []
    return missing
