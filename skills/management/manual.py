"""The management tools as a model reads them: the server's instructions, each tool's title, description,
annotations and JSON Schema, whole (what ``skills mcp`` serves) and compact (what a chat offers its model).
Pure data: the handler (``client.management``) and the chat (``activities.chat``) both read it."""

from __future__ import annotations

from typing import Any, TypedDict

from skills.naming import GET_TOOL_CATALOG, LIST_APPROVALS
from skills.spec.limits import (
    APPROVAL_TIMEOUT_MINUTES,
    IN_HOURS,
    IN_MINUTES,
    INTERVAL_MINUTES,
    JITTER_SECONDS,
    MAX_CONTEXT_FROM,
    MAX_DESTINATIONS,
    MAX_EXEMPT_TOOLS,
    MAX_NAME_LENGTH,
    MAX_RUNS,
    MAX_STEPS,
    MAX_TOKENS_PER_MONTH,
    NOTIFY_INTERVAL_MINUTES,
    REMIND_AFTER_MINUTES,
    TIMEOUT_MINUTES,
)
from skills.spec.llm_models import MAX_FALLBACK_MODELS
from skills.spec.models import CATCH_UPS, DELIVERIES, OVERLAPS
from skills.when.calendar import MAX_UPCOMING

TRIGGER_TYPES = ("cron", "event", "manual")


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
    "spread": {"type": "boolean", "description": "A cron with no jitter_seconds starts each fire up to 5 min "
               "late (less for frequent ones) so skills sharing a minute do not all start at once (by default "
               "only for a new Agent-tier skill in a crowded minute, never for a reminder); true to ask for it, "
               "false when the user wants the exact time ('exactly at 9')."},
    "overlap": {"type": "string", "enum": list(OVERLAPS), "description": "A fire while the previous run is "
                "still going: skip it (default), buffer_one (run it after), or allow (run both)."},
    "catch_up": {"type": "string", "enum": list(CATCH_UPS), "description": "Fires missed while the engine was "
                 "down (within the catch-up window): once (one run, default), none, or all (each, in turn)."},
    # business days and holidays (skills.when.calendar)
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
    GET_TOOL_CATALOG: _schema({}),
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
    LIST_APPROVALS: _schema({
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
    GET_TOOL_CATALOG: "List the tools a skill may use, by MCP server. Call it before memory_store_skill and use "
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
    GET_TOOL_CATALOG: _schema({}),
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


TOOLS: dict[str, tuple[str, str, Hints]] = {
    # name: (title, description, annotations)
    GET_TOOL_CATALOG: ("Tool catalog", CATALOG_DESCRIPTION,
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
    LIST_APPROVALS: ("List approvals", "What waits for the owner's yes: runs' calls of tools that need "
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
