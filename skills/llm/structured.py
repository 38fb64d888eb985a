"""A chat turn that needs no free-form tool calling: the model answers one JSON object, to a schema.

Small models do not call tools reliably; most servers (llama.cpp, vLLM, Ollama, OpenAI) can hold a model
to a JSON schema (``response_format: {"type": "json_schema", ...}``): llama.cpp and Ollama turn it into a
grammar, so even a 1.5B model's answer has the shape. The answer names an action and its fields:

    {"action": "create", "skill": {"name": ..., "instructions": ..., "trigger_config": {...}, ...},
     "reply": "I can remind you ... Shall I?"}

``structured_calls`` turns it into the management tool call it means (``create`` is ``memory_store_skill``
with ``skill``), which takes the road of every other call: the normalizer checks it, a widening change is
proposed. The schema and its instruction are small (about 300 tokens, and no tool schemas are sent), so a
4,096-token context holds them. Pure code, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from skills.llm.textcalls import MAX_CHARS, TextCall, unfenced

ACTIONS: dict[str, str] = {
    "create": "memory_store_skill",
    "update": "memory_update_skill",
    "delete": "memory_delete_skill",
    "list": "memory_list_skills",
}
"""Each action and the management tool it calls; ``reply`` calls none."""
REPLY = "reply"
SCHEMA_NAME = "chat_action"
MAX_TOOL_NAMES = 60
"""Tool names the instruction lists for a skill's plan: a catalog past it is cut (the normalizer still checks)."""

_SKILL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "instructions": {"type": "string"},
        "trigger_config": {"type": "object", "properties": {
            "in_minutes": {"type": "integer"}, "in_hours": {"type": "integer"}, "at": {"type": "string"},
            "schedule": {"type": "string"}, "interval_minutes": {"type": "integer"}, "timezone": {"type": "string"}}},
        "execution_plan": {"type": "array", "items": {"type": "object", "properties": {
            "toolName": {"type": "string"}, "parameters": {"type": "object"}}, "required": ["toolName"]}},
        "required_tools": {"type": "array", "items": {"type": "string"}},
        "business_days_only": {"type": "boolean"},
    },
}


def actions(offered: Collection[str]) -> list[str]:
    """The actions a turn offering these tools may answer with (``reply`` always)."""
    return [action for action, tool in ACTIONS.items() if tool in offered] + [REPLY]


def answer_schema(offered: Collection[str]) -> dict[str, Any]:
    """The ``response_format`` of a structured turn: one object, ``action`` first and ``reply`` last (a
    grammar writes the fields in order, so the reply is written once the skill is)."""
    allowed = actions(offered)
    properties: dict[str, Any] = {"action": {"type": "string", "enum": allowed}}
    if any(a in allowed for a in ("update", "delete")):
        properties["skill_id"] = {"type": "string"}
    if any(a in allowed for a in ("create", "update")):
        properties["skill"] = _SKILL
    properties["reply"] = {"type": "string"}
    return {"type": "json_schema", "json_schema": {
        "name": SCHEMA_NAME, "strict": False,
        "schema": {"type": "object", "properties": properties, "required": ["action", "reply"]}}}


def instruction(offered: Collection[str], tool_names: list[str]) -> str:
    """What the system prompt says of the answer's shape (the schema alone does not reach every model's
    eyes: a grammar holds its output, it does not show it the fields). ``tool_names``: the tools a skill's
    plan may call."""
    allowed = actions(offered)
    lines = ["Answer with ONE JSON object and nothing else (no tool calls): "
             '{"action": ..., "skill_id": ..., "skill": {...}, "reply": "..."}. action is one of: '
             + ", ".join(allowed) + "."]
    if "create" in allowed:
        lines.append('- "create": a new skill. skill: name, instructions, trigger_config (exactly one of '
                     'in_minutes, in_hours, at "YYYY-MM-DDTHH:MM:SS", schedule as 5-field cron, interval_minutes); '
                     'for a fixed message an execution_plan [{"toolName": ..., "parameters": {...}}]; for work '
                     "that reads or judges, required_tools and no plan.")
    if "update" in allowed:
        lines.append('- "update": skill_id (its id or name) and skill with only the fields to change.')
    if "delete" in allowed:
        lines.append('- "delete": skill_id.')
    if "list" in allowed:
        lines.append('- "list": the user asks which skills exist.')
    lines.append('- "reply": only talk (a question back, an answer, or no tool can do it).')
    lines.append("reply: one or two sentences to the user. Say what you propose; never say it is done.")
    if tool_names:
        shown = tool_names[:MAX_TOOL_NAMES]
        more = f" (and {len(tool_names) - len(shown)} more)" if len(tool_names) > len(shown) else ""
        lines.append(f"Tools a skill may use: {', '.join(shown)}{more}.")
    return "\n".join(lines)


def structured_calls(text: str | None, offered: Collection[str]) -> tuple[list[TextCall], str] | None:
    """The management call a structured answer means, and its reply to the user; None when ``text`` is no
    such answer (not JSON, no known action): it is then text, as any reply. A missing field is sent as
    missing: the tool's refusal names it, and the model answers again."""
    if not text or len(text) > MAX_CHARS:
        return None
    try:
        value = json.loads(unfenced(text))
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or value.get("action") not in actions(offered):
        return None
    reply = value.get("reply")
    reply = reply.strip() if isinstance(reply, str) else ""
    action = value["action"]
    if action == REPLY:
        return [], reply
    skill = value.get("skill") if isinstance(value.get("skill"), dict) else {}
    arguments: dict[str, Any] = {}
    if action == "create":
        arguments = dict(skill)
    elif action == "update":
        arguments = {**skill, "skill_id": value.get("skill_id")}
    elif action == "delete":
        arguments = {"skill_id": value.get("skill_id")}
    return [TextCall(name=ACTIONS[action], arguments=json.dumps(arguments, ensure_ascii=False))], reply
