"""What the management tools answer, as text a model relays and a person reads: a stored skill, its schedule
and next fires, a refusal. Pure: ``now`` is passed in (``client.management`` wraps the text in the
protocol's result)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfoNotFoundError

from skills.display import span
from skills.errors import FieldError
from skills.messages.chat import zone_time
from skills.messages.manage import RegistrationResult
from skills.run.recall import SELF
from skills.spec.models import ENDED, FIRED, MISSING_TOOLS, Skill
from skills.when.calendar import coming_lines, next_skipped


def refusal(tool: str, errors: list[FieldError]) -> str:
    """What a refused call answers: every problem as ``field: message``, and how to fix it."""
    lines = [f"Refused; nothing was changed. {len(errors)} problem{'s' * (len(errors) != 1)}:",
             *(f"- {e}" for e in errors)]
    messages = " ".join(e.message for e in errors)
    if "unknown tool" in messages:
        lines.append("Tool names must be exactly as get_tool_catalog lists them (take a suggested name).")
    if "already has a skill named" in messages:
        lines.append("To change that skill, call memory_update_skill with its name; or choose another name.")
    lines.append(f"Fix these fields and call {tool} again.")
    return "\n".join(lines)


def registered(verb: str, result: RegistrationResult, now: datetime) -> tuple[str, dict[str, Any]]:
    """What a stored or changed skill answers: what it does, when it fires, what the engine adjusted."""
    skill = result.skill
    assert skill is not None  # the client raises on a refusal
    lines = [f"{verb} skill {skill.id} '{skill.name}' (agent {skill.agent_id}).", _tier(skill),
             _when(skill, result.next_fire, now)]
    coming = coming_fires(skill, now)
    if coming:
        lines.append(f"Its next fires ({skill.trigger_config.timezone if skill.trigger_config else 'UTC'}): "
                     f"{'; '.join(coming)}.")
    if result.notes:
        lines += ["The engine adjusted the input:", *(f"- {note}" for note in result.notes)]
    structured = {"ok": True, "skill": skill_json(skill), "next_fire": iso(result.next_fire),
                  "notes": result.notes, "errors": [], "coming": coming}
    return "\n".join(lines), structured


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


def coming_fires(skill: Skill, now: datetime, count: int = 5) -> list[str]:
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


def headline(skill: Skill) -> str:
    """A skill on one line, as ``memory_list_skills`` lists it."""
    trigger = skill.trigger_config.describe() if skill.trigger_config else skill.trigger_type
    state = "enabled" if skill.enabled else f"disabled ({skill.disabled_reason or 'by user'})"
    last = f"last run {skill.last_run_status} at {_moment(skill.last_run_at, skill)}" \
        if skill.last_run_at else "never run"
    return f"{skill.id} '{skill.name}' (agent {skill.agent_id}): {skill.tier} tier, {trigger}, {state}, {last}"


def listed(skills: list[Skill]) -> str:
    """Skills one line each, as ``memory_list_skills`` answers (and a structured chat turn's ``list``)."""
    return "\n".join([f"{len(skills)} skill{'s' * (len(skills) != 1)}" + (":" if skills else "."),
                      *(f"- {headline(skill)}" for skill in skills)])


def details(skill: Skill, next_fire: datetime | None, now: datetime) -> str:
    """A skill in full, as ``memory_get_skill`` answers."""
    lines = [f"Skill {headline(skill)}."]
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


def skill_json(skill: Skill) -> dict[str, Any]:
    return {**skill.model_dump(mode="json", by_alias=True), "tier": skill.tier}


def iso(moment: datetime | None) -> str | None:
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
    # To the nearest minute: a fire asked for in 30 minutes is still "in 30 min" a moment after it was stored.
    minutes = round((moment - now).total_seconds() / 60)
    if minutes < 0:
        return "past"
    if minutes < 1:
        return "in less than a minute"
    return f"in {span(timedelta(minutes=minutes))}"
