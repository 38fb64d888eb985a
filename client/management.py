"""The management tools: what a model calls to create and manage skills.

``get_tool_catalog``, ``memory_store_skill``, ``memory_update_skill``,
``memory_list_skills``, ``memory_get_skill`` and ``memory_delete_skill`` (the names the
reference's playbooks use), and ``emit_event``, each a thin call of the :class:`SkillsClient` and an
answer a model can relay. Two roads lead here: ``skills mcp`` serves them to any MCP
client, and the chat's Agent loop (``ChatTurn``) offers them to its model. Either way a
change takes the registration road (RegisterSkill or ChangeSkill: normalizer,
validation, store, schedule).

Arguments reach the engine exactly as the model sent them: a root-level ``cron``,
``toolName`` in a plan or tool names as a JSON string are the normalizer's to fix. A
refusal is an error result listing every field problem as ``field: message``, so the
model can correct itself in its next call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypedDict
from zoneinfo import ZoneInfoNotFoundError

from temporalio.service import RPCError

from client.skills_client import SkillsClient
from skills.calendar import MAX_UPCOMING, coming_lines, next_skipped
from skills.errors import FieldError, SkillNotFoundError, SkillsError, SkillValidationError
from skills.fields import parse_bool
from skills.limits import (
    APPROVAL_TIMEOUT_MINUTES,
    IN_HOURS,
    IN_MINUTES,
    INTERVAL_MINUTES,
    JITTER_SECONDS,
    MAX_CONTEXT_FROM,
    MAX_DESTINATIONS,
    MAX_EXEMPT_TOOLS,
    MAX_RUNS,
    MAX_STEPS,
    MAX_TOKENS_PER_MONTH,
    NOTIFY_INTERVAL_MINUTES,
    REMIND_AFTER_MINUTES,
    TIMEOUT_MINUTES,
)
from skills.llm_models import MAX_FALLBACK_MODELS
from skills.messages.chat import zone_time
from skills.messages.manage import RegistrationResult
from skills.models import CATCH_UPS, DELIVERIES, ENDED, FIRED, MISSING_TOOLS, OVERLAPS, Skill
from skills.normalize import MAX_NAME_LENGTH
from skills.recall import SELF
from skills.rehearsal import rehearsal_lines

if TYPE_CHECKING:
    from mcp_types import CallToolResult

TRIGGER_TYPES = ("cron", "event", "manual")

# Keys a model uses to name the skill it means; the first one given wins.
REF_KEYS = ("skill_id", "id", "skillId", "skill", "ref")
AGENT_KEYS = ("agent_id", "agentId", "agent")
# The fields of emit_event, as models name them.
EVENT_KEYS = ("event", "name", "event_name", "eventName", "type")
DATA_KEYS = ("data", "payload", "body")
EVENT_ID_KEYS = ("id", "event_id", "eventId")
# An update's fields, when a model wraps them instead of sending them at the root.
PATCH_KEYS = ("updates", "fields", "changes", "patch")

Handler = Callable[[dict[str, Any]], Awaitable["CallToolResult"]]


class Hints(TypedDict, total=False):
    """A tool's MCP annotations, the fields of the protocol's ``ToolAnnotations`` (``skills mcp`` serves them
    as such): plain values here, so that a worker, which offers these tools to its chat, has no need of the
    protocol's types before it polls (``mcp_types``: 60 ms of its start)."""

    read_only_hint: bool
    destructive_hint: bool
    idempotent_hint: bool
    open_world_hint: bool


# --- what a model reads: the server's instructions, each tool's description and schema -----

INSTRUCTIONS = """\
Manage the skills of a durable skills engine: things the assistant does later, at a set time or \
again and again (a reminder in 5 minutes, a summary every morning). To create one, call \
get_tool_catalog for the exact tool names, then memory_store_skill. memory_list_skills and \
memory_get_skill read skills, memory_update_skill changes them (enabled: false pauses one), \
memory_delete_skill removes one for good; memory_next_fires lists when one fires next. A skill may instead run on an event \
(trigger_config {"event": "NAME"}): emit_event starts every skill subscribed to NAME. Every change is validated; a refusal names each bad \
field so you can fix it and call again."""

CATALOG_DESCRIPTION = """\
List every tool the engine can call when a skill fires, grouped by MCP server, with a one-line \
description each. Call it before memory_store_skill and use the names exactly as listed, in \
required_tools and in each execution_plan step's toolName: a skill naming an unknown tool is refused. \
If the tool a task needs is not listed, tell the user instead of creating the skill."""

STORE_DESCRIPTION = """\
Create a skill: something done later, at a set time or repeatedly. The engine fixes common shape \
slips, validates, stores and schedules it; the answer says what was scheduled and when it fires next.

WHEN: trigger_config holds exactly one of
- {"in_minutes": N} or {"in_hours": N}: ONCE, N minutes/hours from now. "Remind me IN 5 minutes" \
= {"in_minutes": 5}. Never compute the clock time yourself.
- {"at": "YYYY-MM-DDTHH:MM:SS"}: ONCE at that local time ("at 3pm", "tomorrow at 9").
- {"schedule": "<cron>"}: REPEATING, classic 5-field cron "minute hour day-of-month month \
day-of-week" (day of week 0 = Sunday). "EVERY 5 minutes" = "*/5 * * * *"; every hour = "0 * * * *"; \
daily at 9 = "0 9 * * *"; weekdays at 8:30 = "30 8 * * 1-5". Add "timezone" (an IANA name such as \
"America/New_York") only when the user names a zone; the user's own zone is the default.
- {"interval_minutes": N}: REPEATING every N minutes from now, for steps cron cannot express \
("every 90 minutes").
- {"event": "NAME"}: no schedule; the skill runs each time the event NAME is emitted (emit_event), \
e.g. "when a parcel arrives" = {"event": "parcel.arrived"}. A plan step's parameters may use \
{{event.data.FIELD}}, {{event.name}}, {{event.id}}, {{event.time}}; an Agent-tier run gets the event.
Leave trigger_config out for a skill that runs only on demand. trigger_type is inferred.
A repeating skill may skip days: business_days_only: true skips weekends, skip_holidays: "US" (a \
country code, optionally "-" a subdivision: "US-CA", "DE-BY") skips its public holidays. "Every \
working day at 9" = schedule "0 9 * * *" with both (ask which country's holidays if unsure).

HOW (the tier):
- Direct tier, zero LLM tokens, for a fixed action (a reminder, a set message): give \
execution_plan = [{"id": "step1", "toolName": "<exact name>", "parameters": {...}}]. Write message \
text in full; nothing fills placeholders such as {{date}} or [name]. Leave notify_on_completion \
out: a run that itself messages the user sends no second completion notice.
- Agent tier, when something must be read, judged, summarized or written at fire time: give NO \
execution_plan; write instructions as complete orders for a future run that has never seen this \
conversation (what to read, how to decide, what to send, what to do when there is nothing), and \
list every tool it will call in required_tools. max_steps bounds its reasoning steps (default 10).

instructions is always required (one sentence for a Direct skill). Leave out agent_id unless told. \
A refusal lists every problem as "field: message": fix those fields and call memory_store_skill \
again. If the name is taken, change that skill with memory_update_skill or pick another name."""

UPDATE_DESCRIPTION = """\
Change an existing skill: pause or resume it (enabled: false / true), move its schedule \
(trigger_config, same formats as memory_store_skill), or replace its instructions, \
required_tools, execution_plan, name, description, max_steps or notification settings. \
Name the skill with skill_id (its id, or its current name) and give only the fields to change; \
the others keep their stored values, and the merged skill is validated again. To rename, give \
skill_id and the new name. execution_plan: null turns it into an Agent-tier skill; trigger_type: \
"manual" removes its schedule. A refusal lists every problem as "field: message" and leaves the \
skill as it was."""

LIST_DESCRIPTION = """\
List the stored skills, each with its id, name, tier, trigger, state and last run. Optional \
filters: enabled (true or false), trigger_type (cron, event or manual), agent_id."""

GET_DESCRIPTION = """\
Get one skill in full: its trigger, tier, tools, plan, instructions, state, last run and when it \
fires next. Name it with skill_id (its id, or its name)."""

EMIT_DESCRIPTION = """\
Emit an event: every enabled skill subscribed to it (trigger_config {"event": NAME}) starts a run \
now, with the event's data as its input ({{event.data.FIELD}} in a plan). Give event (the name) \
and optionally data (any JSON, usually an object) and id: the same id emitted again within the \
dedupe window starts nothing. The answer lists the runs started (skill names and workflow ids) and \
the subscribers skipped, and why (a paused skill); an event no skill subscribes to is not an error."""

NEXT_DESCRIPTION = """\
List a skill's next fire times, in its time zone, with the days its schedule skips (weekends of a \
business-days-only skill, public holidays of skip_holidays) marked where a fire would have been. \
Name it with skill_id (its id, or its name); count: how many fires (default 10, at most 100). Use it \
to tell the user exactly when a skill will run."""

DELETE_DESCRIPTION = """\
Delete a skill and its schedule, for good: it will not fire again. Name it with skill_id (its \
id, or its name). To stop a skill for a while, call memory_update_skill with enabled: false."""

_REF = {"type": ["integer", "string"], "description": "The skill's id (a number), or its name."}
_AGENT = {"type": "string", "description": "The agent that owns the skill; only needed when two agents "
                                           "have skills of the same name."}

# The canonical fields of a skill, as the reference's memory_store_skill examples send them.
SKILL_PROPERTIES: dict[str, Any] = {
    "name": {"type": "string", "description": "Short and human, unique among the user's skills: "
                                              "'drink water', 'morning inbox summary'."},
    "description": {"type": "string", "description": "One sentence on what the skill does."},
    "instructions": {"type": "string", "description": "What the skill is for. Direct tier: one sentence. "
                                                      "Agent tier: the full task, as orders to a future run."},
    "trigger_type": {"type": "string", "enum": list(TRIGGER_TYPES),
                     "description": "Usually left out: cron when trigger_config has a time, else manual."},
    "trigger_config": {
        "type": "object",
        "description": "When it fires: exactly one of schedule (+ timezone), interval_minutes, at, "
                       "in_minutes/in_hours; or event, for a skill run by emit_event.",
        "properties": {
            "schedule": {"type": "string", "description": "Classic 5-field cron, e.g. '0 9 * * 1-5'."},
            "timezone": {"type": "string", "description": "IANA zone of schedule or at; only if the user "
                                                          "names one."},
            "interval_minutes": {**INTERVAL_MINUTES.schema(), "description": "Every N minutes."},
            "at": {"type": "string", "description": "Once, at this local time: 'YYYY-MM-DDTHH:MM:SS'."},
            "in_minutes": {**IN_MINUTES.schema(), "description": "Once, N minutes from now."},
            "in_hours": {**IN_HOURS.schema(), "description": "Once, N hours from now."},
            "event": {"type": "string", "description": "No schedule: run each time this event is emitted, "
                                                       "e.g. 'parcel.arrived'."},
        },
        "additionalProperties": True,
    },
    "execution_plan": {
        "type": "array",
        "description": "Direct tier only: the tool calls to make at each fire, in order, with fixed "
                       "arguments. Leave out for the Agent tier.",
        "items": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "A step id, e.g. 'step1'."},
                "toolName": {"type": "string", "description": "Exact name from get_tool_catalog."},
                "parameters": {"type": "object", "description": "The tool's arguments."},
                "approval": {"type": "boolean", "description": "true: this call waits for the owner's "
                                                               "approval at each run (default false)."},
            },
            "required": ["toolName"],
            "additionalProperties": True,
        },
    },
    "required_tools": {"type": "array", "items": {"type": "string"},
                       "description": "Agent tier: every tool the run may call, exact names from "
                                      "get_tool_catalog. Direct tier: may be left out (taken from the plan)."},
    "approval_required_tools": {
        "type": "array", "items": {"type": "string"},
        "description": "Tools (among the skill's) whose every call waits for the owner's approval, e.g. a send "
                       "or a payment. Only when the user asks for confirmation before such calls."},
    "approval_exempt_tools": {
        "type": "array", "items": {"type": "string"}, "maxItems": MAX_EXEMPT_TOOLS,
        "description": "Tools (among the skill's) marked destructive by their server whose calls run without "
                       "asking: a destructive tool's call otherwise waits for the owner's approval. Only when "
                       "the user says so."},
    "approval_timeout_minutes": {**APPROVAL_TIMEOUT_MINUTES.schema(),
                                 "description": "Minutes a call waits for the answer before it is denied "
                                                "(default: the engine's setting)."},
    "max_steps": {**MAX_STEPS.schema(),
                  "description": "Agent tier: at most this many reasoning steps (default 10)."},
    "notify_on_completion": {"type": "boolean", "description": "Send the run's summary to the user "
                                                               "(default true; false when the plan sends "
                                                               "the message itself)."},
    "notify_interval_minutes": {**NOTIFY_INTERVAL_MINUTES.schema(),
                                "description": "Minimum minutes between notifications (0: the default)."},
    "deliver_to": {"type": "array", "maxItems": MAX_DESTINATIONS,
                   "items": {"type": "object", "properties": {"tool": {"type": "string"}}, "required": ["tool"],
                             "additionalProperties": True},
                   "description": "Where the result goes instead of the default notice: send tools of the catalog "
                                  "with their fixed arguments, e.g. [{\"tool\": \"telegram_send_message\", "
                                  "\"chat_id\": \"42\"}] (the result is their message); a destination's digest_minutes "
                                  "gathers what is sent there within those minutes into one message."},
    "max_tokens_per_month": {**MAX_TOKENS_PER_MONTH.schema(),
                             "description": "Agent tier: the skill's tokens in any 30 days; a fire that would pass it "
                                            "is skipped, and the user told once."},
    "remind_after_minutes": {**REMIND_AFTER_MINUTES.schema(),
                             "description": "While the same failure repeats, tell it again after this many minutes "
                                            "(0, the default: once when it starts, once when it ends)."},
    "deliver": {"type": "string", "enum": list(DELIVERIES),
                "description": "Whether a run's result is sent to the user: always (default), on_change (only "
                               "when it differs from the last one sent: 'tell me when something changes'), or "
                               "never. Failures are told whatever this says."},
    "context_from": {"type": "array", "items": {"type": "string", "maxLength": MAX_NAME_LENGTH},
                     "maxItems": MAX_CONTEXT_FROM,
                     "description": "Agent tier: 'self' and/or names of the user's other skills whose last "
                                    "delivered result each run is given as context ('what did you tell me last "
                                    "time'). A Direct plan uses {{last.result}} or {{skill:NAME.last}} in a "
                                    "step's parameters instead."},
    "agent_id": {"type": "string", "description": "The agent that owns the skill; leave out unless told."},
    "enabled": {"type": "boolean", "description": "false stores the skill paused (default true)."},
    "model": {"type": "string", "description": "Agent tier: the model for this skill (default: the engine's)."},
    "fallback_models": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_FALLBACK_MODELS,
                        "description": "Agent tier: models tried in order when the model is unknown, "
                                       "overloaded or rate-limited."},
    # The schedule's shape (docs/skills.md#schedule-shape): leave each out unless the user asks for it.
    "timeout_minutes": {**TIMEOUT_MINUTES.schema(), "description": "A run still going after this many minutes "
                                                                   "ends as an error (timed out)."},
    "end_at": {"type": "string", "description": "The schedule ends at this local time: 'YYYY-MM-DDTHH:MM:SS'."},
    "max_runs": {**MAX_RUNS.schema(), "description": "The schedule ends after this many runs."},
    "jitter_seconds": {**JITTER_SECONDS.schema(), "description": "Delay each fire by a random 0..N seconds, "
                                                                 "for skills whose exact second does not matter."},
    "overlap": {"type": "string", "enum": list(OVERLAPS), "description": "A fire while the previous run is "
                "still going: skip it (default), buffer_one (run it after), or allow (run both)."},
    "catch_up": {"type": "string", "enum": list(CATCH_UPS), "description": "Fires missed while the engine was "
                 "down (within the catch-up window): once (one run, default), none, or all (each, in turn)."},
    # business days and holidays (skills.calendar)
    "skip_holidays": {"type": ["string", "null"],
                      "description": "Repeating schedules only: skip the public holidays of this country, "
                                     "optionally with a subdivision: 'US', 'US-CA', 'GB-SCT', 'DE-BY' (dates "
                                     "of the skill's time zone). Only when the user asks; null removes it."},
    "business_days_only": {"type": "boolean",
                           "description": "Repeating schedules only: skip weekends (the skip_holidays "
                                          "country's, else Saturday and Sunday). 'Every working day at 9': "
                                          "schedule '0 9 * * *' with business_days_only and skip_holidays."},
}


def _schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    # additionalProperties: aliases and flattened fields are welcome; the normalizer reads them.
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": True}
    if required:
        schema["required"] = required
    return schema


SCHEMAS: dict[str, dict[str, Any]] = {
    "get_tool_catalog": _schema({}),
    "memory_store_skill": _schema(SKILL_PROPERTIES, ["name", "instructions"]),
    "memory_update_skill": _schema({"skill_id": _REF, **SKILL_PROPERTIES, "agent_id": _AGENT}, ["skill_id"]),
    "memory_list_skills": _schema({
        "enabled": {"type": "boolean", "description": "Only enabled (true) or only disabled (false) skills."},
        "trigger_type": {"type": "string", "enum": list(TRIGGER_TYPES), "description": "Only this trigger type."},
        "agent_id": {"type": "string", "description": "Only this agent's skills."},
    }),
    "memory_get_skill": _schema({"skill_id": _REF, "agent_id": _AGENT}, ["skill_id"]),
    "memory_delete_skill": _schema({"skill_id": _REF, "agent_id": _AGENT}, ["skill_id"]),
    "memory_undo": _schema({}),
    "memory_next_fires": _schema({"skill_id": _REF, "agent_id": _AGENT,
                                  "count": {"type": "integer", "minimum": 1, "maximum": MAX_UPCOMING,
                                            "description": "How many fires to list (default 10)."}},
                                 ["skill_id"]),
    "emit_event": _schema({
        "event": {"type": "string", "description": "The event's name, as the skills' trigger_config.event "
                                                   "says it (exact, case included), e.g. 'parcel.arrived'."},
        "data": {"description": "The event's data, any JSON value (usually an object); a plan reads it as "
                                "{{event.data.FIELD}}."},
        "id": {"type": "string", "description": "The event's id, for dedupe: the same id again within the "
                                                "window starts nothing. Leave out for a one-off event."},
    }, ["event"]),
    "list_approvals": _schema({
        "all": {"type": "boolean", "description": "Answered ones too (default: only those waiting)."},
    }),
    "approve": _schema({"approval_id": {"type": "integer", "minimum": 1,
                                        "description": "The approval's id, from list_approvals."}},
                       ["approval_id"]),
    "deny": _schema({"approval_id": {"type": "integer", "minimum": 1,
                                     "description": "The approval's id, from list_approvals."},
                     "reason": {"type": "string", "description": "Why, in a few words (the run is told)."}},
                    ["approval_id"]),
    "rehearse_skill": _schema({
        "skill_id": {"type": ["integer", "string"], "description": "A stored skill to rehearse (id or name)."},
        "skill": {"type": "object", "description": "A definition to rehearse (the fields memory_store_skill "
                                                   "takes); with skill_id: the fields to change first."},
    }),
}


# --- the same tools as a chat's model reads them: compact ----------------------------------------
# A chat's first request must fit a local model's context and be read before its first token (at tens of
# tokens a second on a CPU): the playbook the message matched teaches the fields, so the chat's tools carry
# one line each and the fields a typical skill needs. Every other field of SKILL_PROPERTIES is still taken
# (additionalProperties), named in the playbook's references; the normalizer reads what the model sends.

CHAT_DESCRIPTIONS: dict[str, str] = {
    "get_tool_catalog": "List the tools a skill may use, by MCP server. Call it before memory_store_skill and use "
                        "the names exactly.",
    "memory_store_skill": "Create a skill. Direct tier: a fixed execution_plan. Agent tier: instructions and "
                          "required_tools, no plan. A refusal names each bad field: fix them and call again.",
    "memory_update_skill": "Change a skill: give skill_id and only the fields to change (any field of "
                           "memory_store_skill); enabled: false pauses it.",
    "memory_list_skills": "List the user's skills: id, name, tier, trigger, state, last run.",
    "memory_get_skill": "One skill in full, with when it fires next.",
    "memory_next_fires": "A skill's next fire times, with the days it skips.",
    "memory_undo": "Undo this chat's last change (\"undo that\").",
    "memory_delete_skill": "Delete a skill and its schedule for good (to stop it for a while: update enabled: "
                           "false).",
    "emit_event": "Emit an event: every skill with trigger_config {\"event\": NAME} runs now, with data as its "
                  "input.",
}

_CHAT_SKILL_FIELDS: dict[str, str | None] = {
    # field: its description for a chat's model (None: the name says it)
    "name": "Short, human, unique",
    "description": None,
    "instructions": "Direct: one sentence. Agent: the full task, as orders to a future run",
    "trigger_config": "One of: in_minutes, in_hours, at, schedule (5-field cron), interval_minutes, event",
    "execution_plan": "Direct tier only: [{id, toolName, parameters}]",
    "required_tools": "Agent tier: every tool the run calls",
    "max_steps": None,
    "end_at": None,
    "max_runs": None,
    "business_days_only": None,
    "skip_holidays": "Country code, e.g. 'US'",
    "enabled": None,
}
_CHAT_TRIGGER_FIELDS = ("in_minutes", "in_hours", "at", "schedule", "timezone", "interval_minutes", "event")
_CHAT_REF = {"type": ["integer", "string"], "description": "Its id or name"}


def _chat_field(name: str, description: str | None) -> dict[str, Any]:
    """A skill field as the chat offers it: its type, its subfields' types (bounds are the normalizer's to
    check: a value out of them comes back as an error naming the field)."""
    full = SKILL_PROPERTIES[name]
    field = {key: value for key, value in full.items() if key in ("type", "enum", "additionalProperties")}
    if name == "trigger_config":
        field["properties"] = {key: {"type": full["properties"][key]["type"]} for key in _CHAT_TRIGGER_FIELDS}
    elif name == "execution_plan":
        step = full["items"]
        field["items"] = {"type": "object", "properties": {key: {"type": step["properties"][key]["type"]}
                                                           for key in ("id", "toolName", "parameters")},
                          "required": step["required"]}
    elif "items" in full:
        field["items"] = full["items"]
    if name == "skip_holidays":
        field["type"] = "string"
    if description:
        field["description"] = description
    return field


_CHAT_SKILL = {name: _chat_field(name, description) for name, description in _CHAT_SKILL_FIELDS.items()}

CHAT_SCHEMAS: dict[str, dict[str, Any]] = {
    "get_tool_catalog": _schema({}),
    "memory_store_skill": _schema(_CHAT_SKILL, ["name", "instructions"]),
    "memory_update_skill": _schema({"skill_id": _CHAT_REF, "enabled": _CHAT_SKILL["enabled"],
                                    "trigger_config": {"type": "object"}}, ["skill_id"]),
    "memory_list_skills": _schema({"enabled": {"type": "boolean"}}),
    "memory_get_skill": _schema({"skill_id": _CHAT_REF}, ["skill_id"]),
    "memory_delete_skill": _schema({"skill_id": _CHAT_REF}, ["skill_id"]),
    "memory_undo": _schema({}),
    "memory_next_fires": _schema({"skill_id": _CHAT_REF, "count": {"type": "integer", "minimum": 1,
                                                                   "maximum": MAX_UPCOMING}}, ["skill_id"]),
    "emit_event": _schema({"event": {"type": "string"}, "data": {}, "id": {"type": "string"}}, ["event"]),
}
"""The management tools' schemas as a chat offers them; ``SCHEMAS`` (whole) is what ``skills mcp`` serves."""


# --- the tools ------------------------------------------------------------------------------


class ManagementTools:
    """The six tools, each a thin call of the SkillsClient and an answer a model can relay."""

    def __init__(self, skills: SkillsClient) -> None:
        self.skills = skills

    async def get_tool_catalog(self, fields: dict[str, Any]) -> CallToolResult:
        found = await self.skills.catalog()
        lines = [f"{found.summary}. Use these names exactly, in required_tools and in execution_plan toolName."]
        for server, entries in found.catalog.items():
            lines += ["", f"{server}:", *(f"- {e.name}: {e.description}".rstrip(": ") for e in entries)]
        if found.unavailable:
            lines += ["", "Not connected now (their tools are missing above):",
                      *(f"- {server}: {reason}" for server, reason in found.unavailable.items())]
        structured = found.model_dump(mode="json", include={"summary", "catalog", "unavailable"})
        return _answer("\n".join(lines), structured)

    async def memory_store_skill(self, fields: dict[str, Any]) -> CallToolResult:
        result = await self.skills.register(fields)
        return _registered("Stored", result)

    async def memory_update_skill(self, fields: dict[str, Any]) -> CallToolResult:
        ref, agent_id, patch = _update_request(fields)
        result = await self.skills.update(ref, patch, agent_id)
        return _registered("Updated", result)

    async def memory_list_skills(self, fields: dict[str, Any]) -> CallToolResult:
        enabled = _optional_bool(fields.get("enabled"), "enabled")
        trigger_type = fields.get("trigger_type") or fields.get("triggerType")
        if trigger_type is not None and trigger_type not in TRIGGER_TYPES:
            raise SkillValidationError.single("trigger_type", f"'{trigger_type}' is not one of "
                                                              f"{', '.join(TRIGGER_TYPES)}")
        found = await self.skills.list(agent_id=_agent(fields), enabled=enabled, trigger_type=trigger_type)
        text = f"{len(found)} skill{'s' * (len(found) != 1)}" + (":" if found else ".")
        lines = [text, *(f"- {_headline(skill)}" for skill in found)]
        return _answer("\n".join(lines), {"count": len(found), "skills": [_skill_json(s) for s in found]})

    async def memory_get_skill(self, fields: dict[str, Any]) -> CallToolResult:
        skill = await self.skills.get(_required_ref(fields, "memory_get_skill"), _agent(fields))
        next_fire = await self.skills.next_fire(skill)
        skipped = [{"date": day.isoformat(), "why": why} for day, why in next_skipped(skill, now=datetime.now(UTC))]
        return _answer(_details(skill, next_fire), {"skill": _skill_json(skill), "next_fire": _iso(next_fire),
                                                    "skipped_days": skipped})

    async def memory_undo(self, fields: dict[str, Any]) -> CallToolResult:
        """Reached only where a chat's changes are not proposed (a chat's undo is always proposed: Proposals)."""
        raise SkillsError("memory_undo takes back a chat's last change, as a proposal for the owner's yes; here, "
                          "`skills history NAME` lists a skill's changes and `skills revert NAME REV` restores one")

    async def memory_next_fires(self, fields: dict[str, Any]) -> CallToolResult:
        count = fields.get("count", fields.get("n", 10))
        if isinstance(count, str) and count.strip().isdigit():
            count = int(count.strip())
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_UPCOMING:
            raise SkillValidationError.single("count", f"must be a whole number from 1 to {MAX_UPCOMING}, "
                                                       f"got {count!r}")
        found = await self.skills.next(_required_ref(fields, "memory_next_fires"), _agent(fields), count)
        head = f"Skill {found.skill_id} '{found.name}', {found.trigger}"
        if found.paused:
            head += f"; {found.paused}: it does not fire until enabled, then at these times"
        lines = [head + ":", *(f"- {line}" for line in found.lines())] if found.fires else \
            [head + ": no fire to come."]
        return _answer("\n".join(lines), {"ok": True, **found.model_dump(mode="json")})

    async def emit_event(self, fields: dict[str, Any]) -> CallToolResult:
        name = _first(fields, EVENT_KEYS)
        data = _first(fields, DATA_KEYS)
        if isinstance(data, str) and _json_object(data) is not None:
            data = _json_object(data)  # an object sent as JSON text, as models do
        event_id = _first(fields, EVENT_ID_KEYS)
        result = await self.skills.emit(name, data, None if event_id is None else str(event_id))
        return _answer(result.message, {"ok": True, **result.model_dump(mode="json")})

    async def list_approvals(self, fields: dict[str, Any]) -> CallToolResult:
        everything = _optional_bool(fields.get("all"), "all")
        found = await self.skills.approvals(status=None if everything else "pending")
        text = f"{len(found)} approval{'s' * (len(found) != 1)}" + (":" if found else " waiting.")
        lines = [text, *(f"- {a.id} ({a.status}, asked {_iso(a.requested_at)}, expires {_iso(a.expires_at)}): "
                         f"{a.summary}" for a in found)]
        return _answer("\n".join(lines), {"count": len(found),
                                          "approvals": [a.model_dump(mode="json") for a in found]})

    async def approve(self, fields: dict[str, Any]) -> CallToolResult:
        said = await self.skills.approve(_approval_id(fields), by="mcp")
        return _answer(str(said), {"ok": True, "result": str(said)})

    async def deny(self, fields: dict[str, Any]) -> CallToolResult:
        reason = fields.get("reason")
        said = await self.skills.deny(_approval_id(fields), str(reason) if reason is not None else "", by="mcp")
        return _answer(str(said), {"ok": True, "result": str(said)})

    async def rehearse_skill(self, fields: dict[str, Any]) -> CallToolResult:
        ref = _first(fields, REF_KEYS)
        definition = fields.get("skill")
        if isinstance(definition, str):
            definition = _json_object(definition)
        if definition is not None and not isinstance(definition, dict):
            raise SkillValidationError.single("skill", "a definition is an object of the skill's fields")
        run = await self.skills.rehearse(None if ref is None else str(ref), _agent(fields), data=definition)
        assert not isinstance(run, str)
        return _answer("\n".join(rehearsal_lines(run)), {"ok": run.status != "error",
                                                         "run": run.model_dump(mode="json")})

    async def memory_delete_skill(self, fields: dict[str, Any]) -> CallToolResult:
        skill = await self.skills.delete(_required_ref(fields, "memory_delete_skill"), _agent(fields))
        schedule = " and its schedule" if skill.schedule_id else ""
        text = f"Deleted skill {skill.id} '{skill.name}'{schedule}; it will not run again."
        return _answer(text, {"ok": True, "deleted": _skill_json(skill)})


TOOLS: dict[str, tuple[str, str, Hints]] = {
    # name: (title, description, annotations)
    "get_tool_catalog": ("Tool catalog", CATALOG_DESCRIPTION,
                         Hints(read_only_hint=True, idempotent_hint=True, open_world_hint=False)),
    "memory_store_skill": ("Create a skill", STORE_DESCRIPTION,
                           Hints(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                           open_world_hint=False)),
    "memory_update_skill": ("Change a skill", UPDATE_DESCRIPTION,
                            Hints(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                            open_world_hint=False)),
    "memory_list_skills": ("List skills", LIST_DESCRIPTION,
                           Hints(read_only_hint=True, idempotent_hint=True, open_world_hint=False)),
    "memory_get_skill": ("Get a skill", GET_DESCRIPTION,
                         Hints(read_only_hint=True, idempotent_hint=True, open_world_hint=False)),
    "memory_undo": ("Undo the chat's last change", "Undo this chat's last change to a skill (the user says \"undo "
                    "that\"): a created skill deleted, a change reverted, a deleted skill made again; always "
                    "proposed for the user's yes. Only in a chat.",
                    Hints(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                    open_world_hint=False)),
    "memory_next_fires": ("A skill's next fires", NEXT_DESCRIPTION,
                          Hints(read_only_hint=True, idempotent_hint=True, open_world_hint=False)),
    "memory_delete_skill": ("Delete a skill", DELETE_DESCRIPTION,
                            Hints(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                            open_world_hint=False)),
    "emit_event": ("Emit an event", EMIT_DESCRIPTION,
                   Hints(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                   open_world_hint=False)),
}

CHAT_ONLY_TOOLS = frozenset({"memory_undo"})
"""Offered in a chat only: ``skills mcp`` does not serve them (its client has ``skills revert``)."""

OWNER_TOOLS: dict[str, tuple[str, str, Hints]] = {
    "list_approvals": ("List approvals", "What waits for the owner's yes: runs' calls of tools that need "
                       "approval, and proposed changes, each with its id, what it would do and when it expires.",
                       Hints(read_only_hint=True, idempotent_hint=True, open_world_hint=False)),
    "approve": ("Approve", "Approve one waiting call or change by its id (from list_approvals): the call is made "
                "once. Only when the owner says so.",
                Hints(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                open_world_hint=True)),
    "deny": ("Deny", "Deny one waiting call or change by its id: it is not made (an Agent run is told the reason "
             "and goes on; a Direct run ends as denied).",
             Hints(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)),
    "rehearse_skill": ("Rehearse a skill", "Try a skill once without its effects: a stored one (skill_id), a "
                       "definition (skill), or a stored one changed by it (both). Tools marked read-only are "
                       "called; every other call is recorded with its arguments and not sent; nothing is "
                       "delivered. Answers with the calls, the messages it would send and the tokens.",
                       Hints(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                       open_world_hint=True)),
}
"""The owner's answers, and rehearsals, served by ``skills mcp`` to the owner's own MCP client. Not in ``TOOLS``:
the engine's chat never offers them to its model (text the model read must not answer for the owner, and
a rehearsal's read-only calls would hand it what they read: a chat's proposals are rehearsed for the owner
alone), and a skill's run may not have them (``skills.naming.MANAGEMENT_TOOLS``)."""



def answering(tool: str, handler: Handler) -> Handler:
    """Turn the engine's errors into error results a model can act on (the SDK would hide their text)."""

    async def answer(fields: dict[str, Any]) -> CallToolResult:
        try:
            return await handler(fields)
        except SkillValidationError as e:
            return _refused(tool, e.errors)
        except SkillNotFoundError as e:
            return _error(f"Not found: {e}. memory_list_skills lists the skills with their ids and names.",
                          [FieldError(field="skill_id", message=str(e))])
        except (SkillsError, RPCError) as e:
            if isinstance(e, RPCError) and _too_large(e):
                # The client refuses oversize input before Temporal sees it (a SkillValidationError,
                # above); anything else Temporal finds too big is still a problem with the input.
                return _refused(tool, [FieldError(field="", message=f"the input is too large: {e}")])
            # Temporal or the worker is down: say so, or the model would go on fixing a good input.
            return _error(f"The skills engine could not do it (not a problem with the input): {e}",
                          [FieldError(field="", message=str(e))])

    return answer


def _too_large(e: RPCError) -> bool:
    """Temporal's refusals of a payload (2 MB) or a gRPC message (4 MB) over its limits."""
    text = str(e).lower()
    return "size exceeds limit" in text or "larger than max" in text


# --- reading the arguments ------------------------------------------------------------------


def _update_request(fields: dict[str, Any]) -> tuple[str, str | None, dict[str, Any]]:
    """(the skill, its agent, the fields to change) of a memory_update_skill call."""
    ref, agent_id = _first(fields, REF_KEYS), _agent(fields)
    patch = {key: value for key, value in fields.items() if key not in (*REF_KEYS, *AGENT_KEYS)}
    for key in PATCH_KEYS:
        nested = _json_object(patch.get(key))
        if nested is not None:
            del patch[key]
            patch.update(nested)
    if ref is None:
        # Without an id, `name` names the skill to change rather than a new name.
        ref = patch.pop("name", None)
    if ref is None or str(ref).strip() == "":
        raise SkillValidationError.single("skill_id", "required: the id or the name of the skill to change "
                                                      "(memory_list_skills lists them)")
    if not patch:
        raise SkillValidationError.single("", "nothing to change: give the fields to change beside skill_id")
    return str(ref), agent_id, patch


def _required_ref(fields: dict[str, Any], tool: str) -> str:
    ref = _first(fields, (*REF_KEYS, "name"))
    if ref is None or str(ref).strip() == "":
        raise SkillValidationError.single("skill_id", f"required: the id or the name of the skill ({tool})")
    return str(ref)


def _approval_id(fields: dict[str, Any]) -> int:
    value = _first(fields, ("approval_id", "approvalId", "id"))
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) < 19:
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**63:
        raise SkillValidationError.single("approval_id", "required: the approval's id, a whole number from "
                                                         "list_approvals")
    return value


def _agent(fields: dict[str, Any]) -> str | None:
    agent = _first(fields, AGENT_KEYS)
    return None if agent is None else str(agent)


def _first(fields: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((fields[key] for key in keys if fields.get(key) is not None), None)


def _json_object(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # too deep for the parser: not an object the engine reads
            return None
    return value if isinstance(value, dict) else None


def _optional_bool(value: Any, field: str) -> bool | None:
    if value is None:
        return None
    try:
        return parse_bool(value, on_off=False)
    except ValueError:
        raise SkillValidationError.single(field, f"expected true or false, got {value!r}") from None


# --- answers --------------------------------------------------------------------------------


def _answer(text: str, structured: dict[str, Any]) -> CallToolResult:
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _error(text: str, errors: list[FieldError]) -> CallToolResult:
    from mcp_types import CallToolResult, TextContent

    structured = {"ok": False, "errors": [e.model_dump() for e in errors]}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured,
                          is_error=True)


def _refused(tool: str, errors: list[FieldError]) -> CallToolResult:
    lines = [f"Refused; nothing was changed. {len(errors)} problem{'s' * (len(errors) != 1)}:",
             *(f"- {e}" for e in errors)]
    messages = " ".join(e.message for e in errors)
    if "unknown tool" in messages:
        lines.append("Tool names must be exactly as get_tool_catalog lists them (take a suggested name).")
    if "already has a skill named" in messages:
        lines.append("To change that skill, call memory_update_skill with its name; or choose another name.")
    lines.append(f"Fix these fields and call {tool} again.")
    return _error("\n".join(lines), errors)


def _registered(verb: str, result: RegistrationResult) -> CallToolResult:
    skill = result.skill
    assert skill is not None  # the client raises on a refusal
    lines = [f"{verb} skill {skill.id} '{skill.name}' (agent {skill.agent_id}).", _tier(skill),
             _when(skill, result.next_fire)]
    coming = _coming(skill)
    if coming:
        lines.append(f"Its next fires ({skill.trigger_config.timezone if skill.trigger_config else 'UTC'}): "
                     f"{'; '.join(coming)}.")
    if result.notes:
        lines += ["The engine adjusted the input:", *(f"- {note}" for note in result.notes)]
    structured = {"ok": True, "skill": _skill_json(skill), "next_fire": _iso(result.next_fire),
                  "notes": result.notes, "errors": [], "coming": coming}
    return _answer("\n".join(lines), structured)


def _tier(skill: Skill) -> str:
    if skill.execution_plan:
        calls = ", ".join(step.tool_name for step in skill.execution_plan)
        return f"Direct tier: each fire calls {calls} with fixed arguments, no LLM (zero tokens)."
    tools = ", ".join(skill.required_tools) or "no tools"
    return (f"Agent tier: each fire, an LLM follows the instructions with only these tools: {tools} "
            f"(at most {skill.max_steps} steps).")


def _when(skill: Skill, next_fire: datetime | None) -> str:
    trigger = skill.trigger_config
    if not skill.enabled:
        if skill.disabled_reason == MISSING_TOOLS:
            return "It is disabled until every tool it needs is available, then it enables itself."
        if skill.disabled_reason == FIRED:
            return "It has fired: a one-shot runs once. Give it a new time to use it again."
        if skill.disabled_reason == ENDED:
            return "Its schedule has ended (end_at or max_runs): give a later end_at or more max_runs, then resume it."
        return f"It is disabled ({skill.disabled_reason or 'by user'}): it does not fire until it is enabled."
    if skill.subscribed_event is not None:
        return f"It runs each time the event '{skill.subscribed_event}' is emitted (emit_event); it has no schedule."
    if trigger is None or trigger.kind is None or not skill.is_scheduled:
        return f"It has no schedule (trigger_type {skill.trigger_type}): it runs only when started on demand."
    if trigger.kind == "at":
        return f"It runs once, at {_moment(trigger.at, skill)}."
    repeats = f"on cron '{trigger.schedule}' ({trigger.timezone})" if trigger.kind == "cron" \
        else f"every {trigger.interval_minutes} minutes"
    return f"It repeats {repeats}; next fire {_moment(next_fire, skill)}."


def _coming(skill: Skill, count: int = 5) -> list[str]:
    """The next fires of a repeating skill in its zone, skipped days marked (``memory_next_fires`` has more):
    what the reply to a new skill tells the user, so a wrong schedule is seen before it fires."""
    return coming_lines(skill, now=datetime.now(UTC), count=count)


def _skipping(skill: Skill) -> str | None:
    """What days the skill's schedule skips, and the next few of them."""
    rules = [*([f"the public holidays of {skill.skip_holidays}"] if skill.skip_holidays else []),
             *(["weekends"] if skill.business_days_only else [])]
    if not rules:
        return None
    days = ", ".join(f"{day:%a %Y-%m-%d} ({why})" for day, why in next_skipped(skill, now=datetime.now(UTC)))
    return f"It skips {' and '.join(rules)}" + (f"; next skipped: {days}." if days else ".")


def _headline(skill: Skill) -> str:
    trigger = skill.trigger_config.describe() if skill.trigger_config else skill.trigger_type
    state = "enabled" if skill.enabled else f"disabled ({skill.disabled_reason or 'by user'})"
    last = f"last run {skill.last_run_status} at {_moment(skill.last_run_at, skill, relative=False)}" \
        if skill.last_run_at else "never run"
    return f"{skill.id} '{skill.name}' (agent {skill.agent_id}): {skill.tier} tier, {trigger}, {state}, {last}"


def _details(skill: Skill, next_fire: datetime | None) -> str:
    lines = [f"Skill {_headline(skill)}."]
    if skill.description:
        lines.append(f"Description: {skill.description}")
    lines += [_tier(skill), _when(skill, next_fire)]
    skipping = _skipping(skill)
    if skipping:
        lines.append(skipping)
    if skill.execution_plan:
        lines.append("Plan:")
        lines += [f"- {step.id}: {step.tool_name} {json.dumps(step.parameters, ensure_ascii=False)}"
                  for step in skill.execution_plan]
    lines.append(f"Instructions: {skill.instructions}")
    if skill.deliver != "always":
        lines.append("Results are sent to the user " + ("only when they differ from the last one sent."
                                                       if skill.deliver == "on_change" else
                                                       "never (failures are still told)."))
    if skill.context_from:
        lines.append("Each run is given the last delivered result of: "
                     + ", ".join("this skill" if n == SELF else n for n in skill.context_from) + ".")
    if skill.consecutive_failures:
        lines.append(f"Failures in a row: {skill.consecutive_failures}; last error: {(skill.last_error or '')[:300]}")
    if skill.last_run_summary:
        lines.append(f"Last run summary: {skill.last_run_summary[:500]}")
    return "\n".join(lines)


def _skill_json(skill: Skill) -> dict[str, Any]:
    return {**skill.model_dump(mode="json", by_alias=True), "tier": skill.tier}


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _moment(moment: datetime | None, skill: Skill, relative: bool = True) -> str:
    """A time in the skill's zone (else this machine's), and how far off, as a person would say it."""
    if moment is None:
        return "unknown"
    zone = skill.trigger_config.timezone if skill.trigger_config else None
    try:
        text = zone_time(moment, zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # A zone this machine does not know: its own clock, still named by the skill's zone.
        text = f"{moment.astimezone():%Y-%m-%d %H:%M} {zone}"
    return f"{text} ({_from_now(moment)})" if relative else text


def _from_now(moment: datetime) -> str:
    minutes = round((moment - datetime.now(UTC)).total_seconds() / 60)
    if minutes < 0:
        return "past"
    if minutes < 1:
        return "in less than a minute"
    if minutes < 60:
        return f"in {minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"in {hours} h {minutes} min" if minutes else f"in {hours} h"
    return f"in {round(hours / 24)} days"
