"""The management tools' arguments as models send them: the keys they name a skill, an agent or an event by,
and the shapes to unwrap. Pure: the handler (``client.management``) and a chat's proposals
(``activities.proposals``) read a call the same way."""

from __future__ import annotations

import json
from typing import Any

from skills.errors import SkillValidationError
from skills.spec.fields import parse_bool

# Keys a model uses to name the skill it means; the first one given wins.
REF_KEYS = ("skill_id", "id", "skillId", "skill", "ref")
AGENT_KEYS = ("agent_id", "agentId", "agent")
# The fields of emit_event, as models name them.
EVENT_KEYS = ("event", "name", "event_name", "eventName", "type")
DATA_KEYS = ("data", "payload", "body")
EVENT_ID_KEYS = ("id", "event_id", "eventId")
# An update's fields, when a model wraps them instead of sending them at the root.
PATCH_KEYS = ("updates", "fields", "changes", "patch")


def update_request(fields: dict[str, Any]) -> tuple[str, str | None, dict[str, Any]]:
    """(the skill, its agent, the fields to change) of a memory_update_skill call."""
    ref, agent_id = first(fields, REF_KEYS), agent_of(fields)
    patch = {key: value for key, value in fields.items() if key not in (*REF_KEYS, *AGENT_KEYS)}
    for key in PATCH_KEYS:
        nested = json_object(patch.get(key))
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


def required_ref(fields: dict[str, Any], tool: str) -> str:
    ref = first(fields, (*REF_KEYS, "name"))
    if ref is None or str(ref).strip() == "":
        raise SkillValidationError.single("skill_id", f"required: the id or the name of the skill ({tool})")
    return str(ref)


def approval_id(fields: dict[str, Any]) -> int:
    value = first(fields, ("approval_id", "approvalId", "id"))
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) < 19:
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**63:
        raise SkillValidationError.single("approval_id", "required: the approval's id, a whole number from "
                                                         "list_approvals")
    return value


def agent_of(fields: dict[str, Any]) -> str | None:
    agent = first(fields, AGENT_KEYS)
    return None if agent is None else str(agent)


def first(fields: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((fields[key] for key in keys if fields.get(key) is not None), None)


def json_object(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # too deep for the parser: not an object the engine reads
            return None
    return value if isinstance(value, dict) else None


def optional_bool(value: Any, field: str) -> bool | None:
    if value is None:
        return None
    try:
        return parse_bool(value, on_off=False)
    except ValueError:
        raise SkillValidationError.single(field, f"expected true or false, got {value!r}") from None
