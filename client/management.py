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
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfoNotFoundError

from temporalio.service import RPCError

from client.skills_client import SkillsClient
from skills.calendar import MAX_UPCOMING, coming_lines, next_skipped
from skills.errors import FieldError, SkillNotFoundError, SkillsError, SkillValidationError
from skills.messages import RegistrationResult, zone_time
from skills.models import ENDED, FIRED, MISSING_TOOLS, Skill
from skills.recall import SELF
from skills.rehearsal import rehearsal_lines
from skills.tool_arguments import (
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
from skills.tool_manual import TRIGGER_TYPES

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
        return _registered("Stored", result, datetime.now(UTC))

    async def memory_update_skill(self, fields: dict[str, Any]) -> CallToolResult:
        ref, agent_id, patch = update_request(fields)
        result = await self.skills.update(ref, patch, agent_id)
        return _registered("Updated", result, datetime.now(UTC))

    async def memory_list_skills(self, fields: dict[str, Any]) -> CallToolResult:
        enabled = optional_bool(fields.get("enabled"), "enabled")
        trigger_type = fields.get("trigger_type") or fields.get("triggerType")
        if trigger_type is not None and trigger_type not in TRIGGER_TYPES:
            raise SkillValidationError.single("trigger_type", f"'{trigger_type}' is not one of "
                                                              f"{', '.join(TRIGGER_TYPES)}")
        found = await self.skills.list(agent_id=agent_of(fields), enabled=enabled, trigger_type=trigger_type)
        text = f"{len(found)} skill{'s' * (len(found) != 1)}" + (":" if found else ".")
        lines = [text, *(f"- {_headline(skill)}" for skill in found)]
        return _answer("\n".join(lines), {"count": len(found), "skills": [_skill_json(s) for s in found]})

    async def memory_get_skill(self, fields: dict[str, Any]) -> CallToolResult:
        skill = await self.skills.get(required_ref(fields, "memory_get_skill"), agent_of(fields))
        next_fire = await self.skills.next_fire(skill)
        now = datetime.now(UTC)
        skipped = [{"date": day.isoformat(), "why": why} for day, why in next_skipped(skill, now=now)]
        return _answer(_details(skill, next_fire, now), {"skill": _skill_json(skill), "next_fire": _iso(next_fire),
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
        lines = [text, *(f"- {a.id} ({a.status}, asked {_iso(a.requested_at)}, expires {_iso(a.expires_at)}): "
                         f"{a.summary}" for a in found)]
        return _answer("\n".join(lines), {"count": len(found),
                                          "approvals": [a.model_dump(mode="json") for a in found]})

    async def approve(self, fields: dict[str, Any]) -> CallToolResult:
        said = await self.skills.approve(approval_id(fields), by="mcp")
        return _answer(str(said), {"ok": True, "result": str(said)})

    async def deny(self, fields: dict[str, Any]) -> CallToolResult:
        reason = fields.get("reason")
        said = await self.skills.deny(approval_id(fields), str(reason) if reason is not None else "", by="mcp")
        return _answer(str(said), {"ok": True, "result": str(said)})

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
        return _answer(text, {"ok": True, "deleted": _skill_json(skill)})


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


def _registered(verb: str, result: RegistrationResult, now: datetime) -> CallToolResult:
    skill = result.skill
    assert skill is not None  # the client raises on a refusal
    lines = [f"{verb} skill {skill.id} '{skill.name}' (agent {skill.agent_id}).", _tier(skill),
             _when(skill, result.next_fire, now)]
    coming = _coming(skill, now)
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


def _when(skill: Skill, next_fire: datetime | None, now: datetime) -> str:
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
        return f"It runs once, at {_moment(trigger.at, skill, now)}."
    repeats = f"on cron '{trigger.schedule}' ({trigger.timezone})" if trigger.kind == "cron" \
        else f"every {trigger.interval_minutes} minutes"
    return f"It repeats {repeats}; next fire {_moment(next_fire, skill, now)}."


def _coming(skill: Skill, now: datetime, count: int = 5) -> list[str]:
    """The next fires of a repeating skill in its zone, skipped days marked (``memory_next_fires`` has more):
    what the reply to a new skill tells the user, so a wrong schedule is seen before it fires."""
    return coming_lines(skill, now=now, count=count)


def _skipping(skill: Skill, now: datetime) -> str | None:
    """What days the skill's schedule skips, and the next few of them."""
    rules = [*([f"the public holidays of {skill.skip_holidays}"] if skill.skip_holidays else []),
             *(["weekends"] if skill.business_days_only else [])]
    if not rules:
        return None
    days = ", ".join(f"{day:%a %Y-%m-%d} ({why})" for day, why in next_skipped(skill, now=now))
    return f"It skips {' and '.join(rules)}" + (f"; next skipped: {days}." if days else ".")


def _headline(skill: Skill) -> str:
    trigger = skill.trigger_config.describe() if skill.trigger_config else skill.trigger_type
    state = "enabled" if skill.enabled else f"disabled ({skill.disabled_reason or 'by user'})"
    last = f"last run {skill.last_run_status} at {_moment(skill.last_run_at, skill)}" \
        if skill.last_run_at else "never run"
    return f"{skill.id} '{skill.name}' (agent {skill.agent_id}): {skill.tier} tier, {trigger}, {state}, {last}"


def _details(skill: Skill, next_fire: datetime | None, now: datetime) -> str:
    lines = [f"Skill {_headline(skill)}."]
    if skill.description:
        lines.append(f"Description: {skill.description}")
    lines += [_tier(skill), _when(skill, next_fire, now)]
    skipping = _skipping(skill, now)
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


def _moment(moment: datetime | None, skill: Skill, now: datetime | None = None) -> str:
    """A time in the skill's zone (else this machine's), and how far off from ``now`` when given, as a person
    would say it."""
    if moment is None:
        return "unknown"
    zone = skill.trigger_config.timezone if skill.trigger_config else None
    try:
        text = zone_time(moment, zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # A zone this machine does not know: its own clock, still named by the skill's zone.
        text = f"{moment.astimezone():%Y-%m-%d %H:%M} {zone}"
    return f"{text} ({_from_now(moment, now)})" if now is not None else text


def _from_now(moment: datetime, now: datetime) -> str:
    minutes = round((moment - now).total_seconds() / 60)
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
