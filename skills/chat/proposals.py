"""A change the assistant proposes in a chat: which changes wait for the owner's yes, what the owner is
shown, and what a plain yes is.

In a chat, what a model sends may come from text it read (a web page, an email, a tool's result), not
from the owner. So a change that widens what runs (a new skill, more tools, the Agent tier, enabling,
a delete, an event) is recorded as an approval of kind ``change`` (``skills.owner.approvals``) and made only
when the owner confirms it; a change that narrows (fewer tools, a pause) is made at once. The rule
(docs/chat-confirmation.md) is :func:`widening`.

Pure: the activities and workflows that record, decide and apply proposals import it.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel

from skills.display import span
from skills.owner.approvals import Approval, ApprovalDecision
from skills.owner.reach import spec_lines, spec_reach
from skills.spec.models import Skill, SkillSpec
from skills.when.calendar import UpcomingFire, coming_lines, upcoming
from skills.when.spread import skill_spread

CONFIRMED_TOOLS = ("memory_store_skill", "memory_update_skill", "memory_delete_skill", "emit_event", "memory_undo")
"""The management tools whose calls a chat may only propose (an update, only when it widens)."""

NEXT_FIRES = 3
"""How many next fires a proposal shows."""

INSTRUCTIONS_SHOWN = 1500
"""How much of a skill's instructions a proposal shows (the whole text is what is stored)."""

YES = frozenset({"yes", "y", "yep", "yeah", "yes please", "ok", "okay", "k", "sure", "confirm", "confirmed",
                 "do it", "go ahead", "approve", "approved", "oui", "ja", "si", "sí", "👍", "✅"})
NO = frozenset({"no", "n", "nope", "no thanks", "cancel", "don't", "dont", "do not", "stop", "deny", "denied",
                "non", "nein", "👎", "❌"})
MAX_ANSWER = 20
"""A plain answer is short: a longer message is a message, never a confirmation."""


def plain_answer(message: str) -> bool | None:
    """True for a plain yes, False for a plain no, None for anything else.

    Exact after trimming spaces and punctuation and folding case: "Yes!" and "  ok. " confirm;
    "yes, but at 10" and "I said yes" do not (an affirmative inside a longer sentence is a message
    for the model, which proposes again)."""
    if len(message) > MAX_ANSWER * 4:
        return None
    text = unicodedata.normalize("NFKC", message).strip().lower()
    text = re.sub(r"\s+", " ", text.strip(" \t\r\n.!?,;:\"'`()[]*_~-"))
    if not text or len(text) > MAX_ANSWER:
        return None
    if text in YES:
        return True
    if text in NO:
        return False
    return None


# --- what needs confirmation --------------------------------------------------------------------


def tools_of(spec: SkillSpec) -> set[str]:
    """Every tool a run of the skill may call: its required tools, its plan's and its pre-flight checks'."""
    return {*spec.required_tools, *(step.tool_name for step in spec.execution_plan or []),
            *(check.tool for check in spec.preflight)}


def widening(before: SkillSpec, after: SkillSpec) -> list[str]:
    """Why changing ``before`` into ``after`` widens what the skill's runs do, in words (empty: it does not).

    Derived from the one classification of a skill's fields (``skills.owner.reach``): a change of any reach field
    widens unless it only narrows, by that field's rule below (fewer tools, a shorter plan, fewer
    destinations or reads, a pause, a lower limit). So a reach field added later needs a yes until a rule
    says how it narrows. What a skill only says, and when it fires, are made at once."""
    reasons = []
    gained = sorted(tools_of(after) - tools_of(before))
    if gained:
        reasons.append(f"adds tools: {', '.join(gained)}")
    released = sorted(set(before.approval_required_tools) - set(after.approval_required_tools))
    if released:
        reasons.append(f"no longer asks approval for: {', '.join(released)}")
    exempted = sorted(set(after.approval_exempt_tools) - set(before.approval_exempt_tools))
    if exempted:
        reasons.append(f"runs tools marked destructive without asking: {', '.join(exempted)}")
    if before.tier == "direct" and after.tier == "agent":
        reasons.append("moves it to the Agent tier (an LLM decides what to call)")
    if after.enabled and not before.enabled:
        reasons.append("enables it")
    old, new = spec_reach(before), spec_reach(after)
    for name in dict.fromkeys([*new, *old]):
        if name in _SAID or new.get(name) == old.get(name) or _narrows(name, before, after):
            continue
        words = _WORDS.get(name)
        reasons.append(words(after) if words else f"changes {name}: {_short(new.get(name), 200)}")
    return reasons


_SAID = frozenset({"required_tools", "approval_required_tools", "approval_exempt_tools", "enabled"})
"""Reach fields whose every widening change the rules above name (gained tools, released approvals,
new exemptions, enabling): any other change of theirs narrows."""

_WORDS = {
    "instructions": lambda after: "changes the instructions its LLM follows",
    "execution_plan": lambda after: "changes what its plan calls",
    "model": lambda after: f"changes its model to {after.model or 'the default'}",
    "max_steps": lambda after: f"raises max_steps to {after.max_steps}",
    "deliver_to": lambda after: "changes deliver_to: " + "; ".join(d.label for d in after.deliver_to),
    "context_from": lambda after: "changes context_from: reads " + ", ".join(after.context_from),
}

_DELIVERS = {"never": 0, "on_change": 1, "always": 2}


def _narrows(name: str, before: SkillSpec, after: SkillSpec) -> bool:
    """Whether the change of reach field ``name`` only narrows what runs (or is already said another way)."""
    moved_to_agent = before.tier == "direct" and after.tier == "agent"
    match name:
        case "execution_plan":
            return moved_to_agent or (after.tier == before.tier == "direct" and _fewer_steps(before, after))
        case "instructions":
            return moved_to_agent or after.tier == "direct"
        case "model" | "fallback_models":
            return after.tier == "direct"
        case "max_steps":
            return after.tier == "direct" or after.max_steps <= before.max_steps
        case "max_tokens_per_month":
            return after.max_tokens_per_month is not None and (
                before.max_tokens_per_month is None or after.max_tokens_per_month <= before.max_tokens_per_month)
        case "deliver_to":
            return all(d in before.deliver_to for d in after.deliver_to)
        case "context_from":
            return set(after.context_from) <= set(before.context_from)
        case "preflight":
            kept = [c for c in before.preflight if not c.automatic]
            return all(c.automatic or c in kept for c in after.preflight)
        case "deliver":
            return _DELIVERS[after.deliver] <= _DELIVERS[before.deliver]
        case "trigger_config.event":
            return after.subscribed_event is None
    return False


def _fewer_steps(before: SkillSpec, after: SkillSpec) -> bool:
    """``after``'s plan is ``before``'s with steps left out, each step otherwise as it was."""
    old = [step.model_dump(mode="json") for step in before.execution_plan or []]
    remaining = iter(old)
    return all(any(step == previous for previous in remaining)
               for step in (s.model_dump(mode="json") for s in after.execution_plan or []))


def spec_digest(spec: SkillSpec) -> str:
    """A skill's definition, summed: an update is applied only to the skill it was proposed for."""
    fields = spec.model_dump(mode="json", include=set(SkillSpec.model_fields))
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def as_spec(skill: Skill) -> SkillSpec:
    return SkillSpec.model_validate(skill.model_dump(include=set(SkillSpec.model_fields)))


def applied_fields(spec: SkillSpec) -> dict[str, Any]:
    """A normalized spec as the input that stores exactly it: every field given (an absent plan
    would keep an update's old one), the automatic pre-flight checks left to be derived again."""
    data = spec.model_dump(mode="json")
    data["preflight"] = [check for check in data.get("preflight", []) if not check.get("automatic")]
    return data


# --- what the owner is shown --------------------------------------------------------------------


def next_fires(spec: SkillSpec, now: datetime, count: int = NEXT_FIRES) -> list[UpcomingFire]:
    """When the skill would fire next if stored now (an interval counts from now), the days its schedule
    skips marked, by the rules ``skills next`` uses; none if it would not fire."""
    if not spec.enabled or not spec.is_scheduled or spec.trigger_config is None:
        return []
    try:
        return upcoming(spec, anchor=now, now=now, count=count)
    except ValueError:
        return []


def describe_spec(spec: SkillSpec, fires: list[UpcomingFire], zone_time: Any) -> list[str]:
    """The lines a proposal shows of a skill as it would be stored. ``zone_time(moment, zone)`` formats
    a time (skills.messages.chat.zone_time)."""
    zone = spec.trigger_config.timezone if spec.trigger_config else None
    lines = [f"name: {spec.name} (agent {spec.agent_id})"]
    if spec.description:
        lines.append(f"description: {spec.description}")
    spread = skill_spread(spec)
    lines.append(f"when: {spec.trigger_config.describe() if spec.trigger_config else spec.trigger_type}"
                 + (f", each fire spread up to {span(timedelta(seconds=spread))}" if spread else "")
                 + ("" if spec.enabled else " (disabled: it will not fire)"))
    if fires:
        lines.append("next fires: " + ", ".join(
            f"{fire.at:%Y-%m-%d} skipped: {fire.skipped}" if fire.skipped else _at(fire.at, zone, zone_time)
            for fire in fires))
    if spec.execution_plan:
        lines.append("tier: Direct (fixed tool calls, no LLM), plan:")
        lines += [f"  {step.id}: {step.tool_name} {json.dumps(step.parameters, ensure_ascii=False)}"
                  for step in spec.execution_plan]
    else:
        lines.append(f"tier: Agent (an LLM, at most {spec.max_steps} steps"
                     f"{', model ' + spec.model if spec.model else ''}), tools: "
                     f"{', '.join(spec.required_tools) or 'none'}")
    for check in spec.preflight:
        lines.append(f"pre-flight: {check.tool} {json.dumps(check.arguments, ensure_ascii=False)}")
    if spec.approval_required_tools:
        lines.append(f"asks approval for: {', '.join(spec.approval_required_tools)}")
    if spec.approval_exempt_tools:
        lines.append(f"runs without asking, though marked destructive: {', '.join(spec.approval_exempt_tools)}")
    lines += spec_lines(spec)
    text = spec.instructions
    cut = f" [... {len(text) - INSTRUCTIONS_SHOWN} more characters]" if len(text) > INSTRUCTIONS_SHOWN else ""
    lines.append(f"instructions: {text[:INSTRUCTIONS_SHOWN]}{cut}")
    return lines


def describe_update(before: SkillSpec, after: SkillSpec, reasons: list[str]) -> list[str]:
    """What an update changes, field by field (old -> new), after why it needs a yes."""
    lines = [f"why it needs your yes: {'; '.join(reasons)}"]
    old, new = before.model_dump(mode="json"), after.model_dump(mode="json")
    for field in SkillSpec.model_fields:
        if old.get(field) != new.get(field):
            lines.append(f"{field}: {_short(old.get(field))} -> {_short(new.get(field))}")
    return lines + [f"then: {line}" for line in spec_lines(after)]


def _short(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else f"{text[:limit]} [... {len(text) - limit} more characters]"


def _at(moment: datetime, zone: str | None, zone_time: Any) -> str:
    try:
        return str(zone_time(moment, zone or "UTC"))
    except (ValueError, OSError, LookupError):
        return moment.isoformat()


# --- deciding and applying ----------------------------------------------------------------------


class DecideChangeInput(BaseModel):
    """The owner's answer to a proposed change (the DecideChange workflow's input)."""

    decision: ApprovalDecision
    session_id: str | None = None
    """Set when the answer is a reply in a chat: only a proposal of that session takes it."""


class DecideChangeRequest(BaseModel):
    """The decide_change activity's input: the answer, and the workflow's now (expiry is judged by it)."""

    decision: ApprovalDecision
    session_id: str | None = None
    now: datetime


class ChangeVerdict(BaseModel):
    """What the decide_change activity found: the approval as it now stands, and whether to apply it."""

    approval: Approval | None = None
    apply: bool = False
    """True only for the one answer that approved it (a compare-and-set): a change is made at most once."""
    problem: str | None = None
    """Why the answer was not taken (no such proposal, another session's, not a change)."""


class ChangeOutcome(BaseModel):
    approval_id: int
    outcome: str


class ChangeDecided(BaseModel):
    """What came of an answer: the approval (with its outcome once applied), the change made, if any."""

    approval: Approval | None = None
    applied: bool = False
    change: dict[str, Any] | None = None
    """The skill changed, as a chat reply lists it (action, id, name, tier, trigger, next_fire)."""
    problem: str | None = None


def change_facts(action: str, skill: Skill | None, next_fire: datetime | None,
                 now: datetime | None = None) -> dict[str, Any]:
    """The key facts of a changed skill, as ``ChatReply.changes`` holds them: with ``now``, a repeating
    skill's next fires too, skipped days marked (as the answer of a skill stored at once says them)."""
    if skill is None:
        return {"action": action}
    data = skill.model_dump(mode="json")
    coming = coming_lines(skill, now=now) if now is not None else []
    return {"action": action, "id": skill.id, "name": skill.name, "tier": skill.tier,
            "trigger": data.get("trigger_config") or {}, "next_fire": next_fire.isoformat() if next_fire else None,
            "enabled": skill.enabled, "disabled_reason": skill.disabled_reason, "coming": coming}


def answered_text(results: list[ChangeDecided]) -> str:
    """The reply to a plain yes or no in a chat: what was made or dropped, one line each."""
    lines = []
    for result in results:
        approval = result.approval
        first = approval.summary.splitlines()[0].rstrip(":") if approval and approval.summary else ""
        label = f"#{approval.id} ({first or approval.tool})" if approval else "?"
        if result.problem:
            lines.append(f"{label}: {result.problem}")
        elif approval is None:
            continue
        elif result.applied:
            lines.append(f"Done, {label}: {approval.outcome or 'applied'}")
        elif approval.status == "expired":
            lines.append(f"{label} expired before it was confirmed: nothing was changed. Ask again.")
        elif approval.status == "denied":
            lines.append(f"Not made, {label}: {approval.reason}." if approval.reason
                         else f"Cancelled {label}: nothing was changed.")
        else:
            by = f" by {approval.decided_by}" if approval.decided_by else ""
            lines.append(f"{label} was already {approval.status}{by}.")
    return "\n".join(lines) or "There was nothing to confirm."


def decided_sentence(result: ChangeDecided) -> str:
    """What came of the owner's answer to a proposed change, as one sentence (``skills approve`` and ``deny``
    print it): ``Approved #2: stored skill 4 'reminder: leave for the train' (direct tier), first fire Mon
    2026-11-30 08:30 UTC``. The fire is the schedule's, in the skill's zone."""
    approval = result.approval
    if approval is None:
        return result.problem or "No such proposal."
    first = approval.summary.splitlines()[0].rstrip(":") if approval.summary else approval.tool
    if result.applied:
        change = result.change
        if change is None or change.get("id") is None:  # an event emitted, or a change the registration refused
            return f"Approved #{approval.id}: {approval.outcome or 'applied'}"
        verb = {"created": "stored", "updated": "updated", "deleted": "deleted"}.get(change["action"], change["action"])
        said = f"Approved #{approval.id}: {verb} skill {change['id']} '{change.get('name')}'"
        if change["action"] == "deleted":
            return said
        said += f" ({change['tier']} tier)" if change.get("tier") else ""
        fire = "first fire" if change["action"] == "created" else "next fire"
        if change.get("next_fire"):
            return f"{said}, {fire} {_weekday_time(change['next_fire'], (change.get('trigger') or {}).get('timezone'))}"
        return f"{said}, {'paused: it will not fire' if change.get('enabled') is False else 'no fire scheduled'}"
    if approval.status == "denied":
        return f"Denied #{approval.id}: {first}, not made" + (f" ({approval.reason})" if approval.reason else "")
    if approval.status == "expired":
        return f"#{approval.id} ({first}) expired before it was answered: nothing was changed"
    by = f" by {approval.decided_by}" if approval.decided_by else ""
    return f"#{approval.id} ({first}) was already {approval.status}{by}"


def _weekday_time(iso: str, zone: str | None) -> str:
    """``Mon 2026-11-30 08:30 Europe/Paris``: a moment as the skill's zone shows it (UTC if it has none)."""
    try:
        local = datetime.fromisoformat(iso).astimezone(ZoneInfo(zone or "UTC"))
    except (ValueError, ZoneInfoNotFoundError):
        return iso
    return f"{local:%a %Y-%m-%d %H:%M} {zone or 'UTC'}"
