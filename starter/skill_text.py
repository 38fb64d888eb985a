"""A skill as the commands print it: `skills get`'s fields, a registration's lines, the columns of
`skills list`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from starter.command import current
from starter.output import fields, shorten, when

if TYPE_CHECKING:
    from skills.owner.approvals import Approval
    from skills.spec.models import Delivery, Skill
    from skills.when.outlook import Outlook


def registered(skill: Skill | None, notes: list[str], next_fire: datetime | None, verb: str) -> None:
    assert skill is not None
    print(f"{verb} skill {skill.id} '{skill.name}' (agent {skill.agent_id}, {skill.tier} tier)")
    rows: list[tuple[str, Any]] = []
    if skill.schedule_id:
        rows += [("schedule", f"{skill.schedule_id}: {trigger_text(skill)}"),
                 ("next fire", when(next_fire) + _spread_note(skill) if next_fire else when(next_fire))]
    if skill.subscribed_event:
        rows.append(("trigger", f"{trigger_text(skill)} (`skills emit {skill.subscribed_event}`)"))
    if not skill.enabled:
        rows.append(("disabled", skill.disabled_reason))
    rows += [("note", note) for note in notes]
    fields(rows, key_width=10, indent=2)


def _skips(skill: Skill, skipped: list[tuple[Any, str]]) -> list[tuple[str, Any]]:
    """The rows of ``skills get`` on the days the schedule skips."""
    rules = [*([f"public holidays of {skill.skip_holidays}"] if skill.skip_holidays else []),
             *(["weekends (business days only)"] if skill.business_days_only else [])]
    if not rules:
        return []
    days = ", ".join(f"{day:%a %Y-%m-%d} ({why})" for day, why in skipped)
    return [("skips", " and ".join(rules)), ("skipped next", days or "-")]


def describe(skill: Skill, next_fire: datetime | None, skipped: list[tuple[Any, str]] | None = None,
              waiting: list[Approval] | None = None, delivered: list[Delivery] | None = None,
              ahead: Outlook | None = None) -> None:
    rows: list[tuple[str, Any]] = [
        ("id", skill.id), ("agent", skill.agent_id), ("name", skill.name), ("description", skill.description),
        ("tier", skill.tier), ("state", state_text(skill)), ("trigger", trigger_text(skill)),
        ("schedule", skill.schedule_id or "-"), ("next fire", when(next_fire)),
        *[("next 30 days", line.removeprefix("next 30 days: ")) for line in (ahead.lines() if ahead else [])], *_skips(skill, skipped or []),
        ("required tools", ", ".join(skill.required_tools) or "-"), ("max steps", skill.max_steps),
        *_shape(skill), ("notify", _notify(skill)), ("deliver", DELIVER_TEXT[skill.deliver]),
        ("deliver to", "; ".join(d.label for d in skill.deliver_to) or "the notifier"),
        *[("delivered", f"{d.destination}: {d.status}{f' ({d.error})' if d.error else ''}") for d in delivered or []],
        ("incidents", f"told when they open and end, and again every {_every(skill.remind_after_minutes)} while "
                      "they last" if skill.remind_after_minutes else "told when they open and when they end"),
        ("remembers", _remembers(skill)),
        ("failures", _failures(skill)),
        ("approval", _approval(skill)),
        *[("waiting", f"for approval {a.id}: {shorten(a.summary, 120)}") for a in waiting or []],
        ("last run", last_run_text(skill)), ("created", when(skill.created_at)), ("updated", when(skill.updated_at)),
        ("revision", f"{skill.revision} (`skills history {skill.id}`)" if skill.revision else "none recorded yet"),
    ]
    rows[11:11] = _model_and_hook(skill)  # after "max steps"
    rows += [("pre-flight", f"{check.tool} {json.dumps(check.arguments)}: skip when {check.reason()}")
             for check in skill.preflight]
    fields(rows)
    if skill.execution_plan:
        print("plan")
        for step in skill.execution_plan:
            print(f"  {step.id}: {step.tool_name} {json.dumps(step.parameters, ensure_ascii=False)}")
    print("instructions")
    for line in skill.instructions.splitlines():
        print(f"  {line}")


def _model_and_hook(skill: Skill) -> list[tuple[str, Any]]:
    """The Agent tier's models (its own, then its fallbacks), and whether ``POST /hooks/<skill>`` may fire it."""
    rows: list[tuple[str, Any]] = []
    if skill.tier == "agent":
        model = skill.model or f"{current().settings().llm_model} (the default, SKILLS_LLM_MODEL)"
        rows.append(("model", model + "".join(f", then {m}" for m in skill.fallback_models)))
    rows.append(("hook", f"on: POST /hooks/{skill.id} with its token (`skills hook {skill.id} --revoke` "
                         "removes it)" if skill.has_hook else "off"))
    return rows


DELIVER_TEXT = {
    "always": "always (each successful run's result)",
    "on_change": "on change (a result only when it differs from the last one delivered)",
    "never": "never (no result is sent; failures still are)",
}


def _remembers(skill: Skill) -> str:
    """``context_from``: whose last delivered result each run is given."""
    from skills.run.recall import SELF

    if not skill.context_from:
        return "-"
    return ", ".join("its own last result" if n == SELF else f"{n}'s last result" for n in skill.context_from)


def _notify(skill: Skill) -> str:
    """When the user hears about a run, as a person says it."""
    if skill.notify_on_completion is False or skill.deliver == "never":
        return "on failure only"
    automatic = ", unless the run messaged the user itself" if skill.notify_on_completion is None else ""
    if skill.notify_interval_minutes:
        return (f"after each run{automatic}, at most every {_every(skill.notify_interval_minutes)}; "
                "failures always")
    default = current().settings().notify_interval
    return (f"after each run{automatic}, at most every {_every(default / timedelta(minutes=1))} "
            "(the default, SKILLS_NOTIFY_INTERVAL); failures always")


def _approval(skill: Skill) -> str:
    steps = [step.id for step in skill.execution_plan or [] if step.approval]
    exempt = (f"; runs unattended though marked destructive: {', '.join(skill.approval_exempt_tools)}"
              if skill.approval_exempt_tools else "")
    if not skill.approval_required_tools and not steps:
        return f"none listed (a tool marked destructive asks){exempt}"
    asked = ", ".join([*skill.approval_required_tools, *(f"step {s}" for s in steps)])
    timeout = (_every(skill.approval_timeout_minutes) if skill.approval_timeout_minutes
               else f"{_every(current().settings().approval_timeout / timedelta(minutes=1))} (SKILLS_APPROVAL_TIMEOUT)")
    return f"{asked}; unanswered in {timeout}: denied{exempt}"


def _every(minutes: float) -> str:
    """The cadence after "every": ``hour``, ``2 hours``, ``5 minutes``."""
    if minutes >= 60 and minutes % 60 == 0:
        hours = int(minutes // 60)
        return "hour" if hours == 1 else f"{hours} hours"
    if minutes == 1:
        return "minute"
    return f"{minutes:g} minutes"


def trigger_text(skill: Skill) -> str:
    return skill.trigger_config.describe() if skill.trigger_config else skill.trigger_type


def state_text(skill: Skill) -> str:
    from skills.spec.models import ENDED

    ended = skill.ended(datetime.now(UTC))
    if ended is not None and (skill.enabled or skill.disabled_reason == ENDED):
        return f"ended ({ended})"
    return "enabled" if skill.enabled else f"disabled ({skill.disabled_reason or 'by user'})"


def _shape(skill: Skill) -> list[tuple[str, Any]]:
    """The schedule's shape and the run's limit (docs/skills.md#schedule-shape), as `skills get` shows them."""
    deadline = f"{skill.run_timeout_seconds / 60:g} min" if skill.run_timeout_seconds else "the engine's"
    rows: list[tuple[str, Any]] = [("timeout", f"{skill.timeout_minutes:g} min (then the run is an error)"
                                    if skill.timeout_minutes is not None else f"- (the engine's deadline: {deadline})")]
    if not skill.is_scheduled:
        return rows
    ends = [f"at {when(skill.end_at)}"] if skill.end_at else []
    if skill.max_runs is not None:
        ends.append(f"after {skill.max_runs} runs ({skill.scheduled_runs} so far)")
    return rows + [("ends", " or ".join(ends) or "never"),
                   ("jitter", _spread_text(skill)),
                   ("overlap", skill.overlap), ("catch-up", skill.catch_up)]


def _spread_note(skill: Skill) -> str:
    """`` (spread up to 5 min)`` after a fire the schedule's own calendar names, for a spread skill."""
    from skills.display import span
    from skills.when.spread import skill_spread

    spread = skill_spread(skill)
    return f" (spread up to {span(timedelta(seconds=spread))})" if spread else ""


def _spread_text(skill: Skill) -> str:
    """How late each fire may start, and whose choice that is (docs/triggers.md#spread)."""
    from skills.display import span
    from skills.when.spread import skill_spread

    spread = skill_spread(skill)
    if skill.jitter_seconds:
        return f"up to {skill.jitter_seconds} s"
    if spread:
        return f"up to {span(timedelta(seconds=spread))} (the default spread; `spread: false` for the exact time)"
    return "none"


def _failures(skill: Skill) -> str:
    if not skill.consecutive_failures:
        return "none"
    text = f"{skill.consecutive_failures} in a row, last at {when(skill.last_failure_at)}"
    if skill.backoff_until:
        text += f"; backing off until {when(skill.backoff_until)}"
    return f"{text}; last error: {shorten(skill.last_error or '', 200)}"


def last_run_text(skill: Skill) -> str:
    if skill.last_run_at is None:
        return "-"
    return f"{skill.last_run_status} at {when(skill.last_run_at)}"
