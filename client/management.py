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

What a model reads of these tools is ``skills.management.manual``; how their arguments are read,
``skills.management.arguments``; the text of their answers, ``skills.management.answers``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from temporalio.service import RPCError

from client.skills_client import SkillsClient
from skills.chat.account import touched_words
from skills.chat.proposals import ChangeDecided, decided_sentence
from skills.errors import FieldError, SkillNotFoundError, SkillsError, SkillValidationError
from skills.management.answers import details, iso, listed, refusal, registered, skill_json
from skills.management.arguments import (
    DATA_KEYS,
    EVENT_ID_KEYS,
    EVENT_KEYS,
    REF_KEYS,
    agent_of,
    approval_id,
    first,
    json_object,
    optional_bool,
    required_ref,
    update_request,
)
from skills.management.manual import TRIGGER_TYPES
from skills.run.rehearsal import rehearsal_lines
from skills.when.calendar import MAX_UPCOMING, next_skipped

if TYPE_CHECKING:
    from mcp_types import CallToolResult

Handler = Callable[[dict[str, Any]], Awaitable["CallToolResult"]]


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
        return _answer(*registered("Stored", result, datetime.now(UTC)))

    async def memory_update_skill(self, fields: dict[str, Any]) -> CallToolResult:
        ref, agent_id, patch = update_request(fields)
        result = await self.skills.update(ref, patch, agent_id)
        text, structured = registered("Updated", result, datetime.now(UTC))
        # What the update changed, as its revision records it: the chat's account names every field it touched
        # (a pause made with a move is told, not only "updated"), and the model reads it too.
        assert result.skill is not None  # the client raises on a refusal
        revisions = await self.skills.history(result.skill.id, result.skill.agent_id, limit=1)
        if revisions and revisions[0].rev == result.skill.revision:
            structured["changed"] = [change.model_dump(mode="json") for change in revisions[0].diff]
            words = touched_words({"changed": structured["changed"], "enabled": result.skill.enabled,
                                   "trigger": structured["skill"].get("trigger_config")})
            text += f"\nWhat changed: {words}."
        return _answer(text, structured)

    async def memory_list_skills(self, fields: dict[str, Any]) -> CallToolResult:
        enabled = optional_bool(fields.get("enabled"), "enabled")
        trigger_type = fields.get("trigger_type") or fields.get("triggerType")
        if trigger_type is not None and trigger_type not in TRIGGER_TYPES:
            raise SkillValidationError.single("trigger_type", f"'{trigger_type}' is not one of "
                                                              f"{', '.join(TRIGGER_TYPES)}")
        found = await self.skills.list(agent_id=agent_of(fields), enabled=enabled, trigger_type=trigger_type)
        return _answer(listed(found), {"count": len(found), "skills": [skill_json(s) for s in found]})

    async def memory_get_skill(self, fields: dict[str, Any]) -> CallToolResult:
        skill = await self.skills.get(required_ref(fields, "memory_get_skill"), agent_of(fields))
        next_fire = await self.skills.next_fire(skill)
        now = datetime.now(UTC)
        skipped = [{"date": day.isoformat(), "why": why} for day, why in next_skipped(skill, now=now)]
        return _answer(details(skill, next_fire, now), {"skill": skill_json(skill), "next_fire": iso(next_fire),
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
        found = await self.skills.next(required_ref(fields, "memory_next_fires"), agent_of(fields), count)
        head = f"Skill {found.skill_id} '{found.name}', {found.trigger}"
        if found.paused:
            head += f"; {found.paused}: it does not fire until enabled, then at these times"
        lines = [head + ":", *(f"- {line}" for line in found.lines())] if found.fires else \
            [head + ": no fire to come."]
        return _answer("\n".join(lines), {"ok": True, **found.model_dump(mode="json")})

    async def emit_event(self, fields: dict[str, Any]) -> CallToolResult:
        name = first(fields, EVENT_KEYS)
        data = first(fields, DATA_KEYS)
        if isinstance(data, str) and json_object(data) is not None:
            data = json_object(data)  # an object sent as JSON text, as models do
        event_id = first(fields, EVENT_ID_KEYS)
        result = await self.skills.emit(name, data, None if event_id is None else str(event_id))
        return _answer(result.message, {"ok": True, **result.model_dump(mode="json")})

    async def list_approvals(self, fields: dict[str, Any]) -> CallToolResult:
        everything = optional_bool(fields.get("all"), "all")
        found = await self.skills.approvals(status=None if everything else "pending")
        text = f"{len(found)} approval{'s' * (len(found) != 1)}" + (":" if found else " waiting.")
        lines = [text, *(f"- {a.id} ({a.status}, asked {iso(a.requested_at)}, expires {iso(a.expires_at)}): "
                         f"{a.summary}" for a in found)]
        return _answer("\n".join(lines), {"count": len(found),
                                          "approvals": [a.model_dump(mode="json") for a in found]})

    async def approve(self, fields: dict[str, Any]) -> CallToolResult:
        return _decided(await self.skills.answer(approval_id(fields), True, by="mcp"))

    async def deny(self, fields: dict[str, Any]) -> CallToolResult:
        reason = fields.get("reason")
        return _decided(await self.skills.answer(approval_id(fields), False, by="mcp",
                                                 reason=str(reason) if reason is not None else ""))

    async def rehearse_skill(self, fields: dict[str, Any]) -> CallToolResult:
        ref = first(fields, REF_KEYS)
        definition = fields.get("skill")
        if isinstance(definition, str):
            definition = json_object(definition)
        if definition is not None and not isinstance(definition, dict):
            raise SkillValidationError.single("skill", "a definition is an object of the skill's fields")
        run = await self.skills.rehearse(None if ref is None else str(ref), agent_of(fields), data=definition)
        assert not isinstance(run, str)
        return _answer("\n".join(rehearsal_lines(run)), {"ok": run.status != "error",
                                                         "run": run.model_dump(mode="json")})

    async def memory_delete_skill(self, fields: dict[str, Any]) -> CallToolResult:
        skill = await self.skills.delete(required_ref(fields, "memory_delete_skill"), agent_of(fields))
        schedule = " and its schedule" if skill.schedule_id else ""
        text = f"Deleted skill {skill.id} '{skill.name}'{schedule}; it will not run again."
        return _answer(text, {"ok": True, "deleted": skill_json(skill)})


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


# --- answers --------------------------------------------------------------------------------


def _decided(said: str | ChangeDecided) -> CallToolResult:
    """An answer's outcome: a run's call, a sentence; a proposed change, a sentence (``Approved #2: stored skill
    4 ...``) with the approval and the change made as data, never the record's repr."""
    if not isinstance(said, ChangeDecided):
        return _answer(said, {"ok": True, "result": said})
    sentence = decided_sentence(said)
    approval = said.approval.model_dump(mode="json") if said.approval else None
    return _answer(sentence, {"ok": True, "result": sentence, "approval": approval, "change": said.change})


def _answer(text: str, structured: dict[str, Any]) -> CallToolResult:
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _error(text: str, errors: list[FieldError]) -> CallToolResult:
    from mcp_types import CallToolResult, TextContent

    structured = {"ok": False, "errors": [e.model_dump() for e in errors]}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured,
                          is_error=True)


def _refused(tool: str, errors: list[FieldError]) -> CallToolResult:
    return _error(refusal(tool, errors), errors)
