"""Every field of a skill, classified once: what makes the engine act or reach, when it acts, what it only
says, and the bookkeeping the engine keeps about it.

- ``reach``: what the engine calls, with what, for whom, where the result goes and what it reads: tools and
  their arguments, the plan, pre-flight checks, approval lists and exemptions, deliveries, context reads,
  dependencies, toolsets, scripts, the tier, the model and its limits, an Agent skill's instructions,
  events, hooks, enabling;
- ``when``: when it acts (its trigger, end, jitter and spread, runs, business days, timeouts, message triggers);
- ``says``: what it only tells (name, description, notices);
- ``bookkeeping``: what the engine records about it (ids, timestamps, counters, digests).

Everything that must know what reaches is derived from these tables, never from a list of its own: what
a chat change must propose before it is made (``skills.chat.proposals.widening``), what the owner's trust
pins (``skills.skillmd.trust``), and what install, ``skills show`` and ``skills trust`` put before the
owner (:func:`reach_lines`). A test fails on any model field missing here, so a field added later
cannot slip past all three.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from skills.run.notify import is_messaging_tool
from skills.run.plans import recall_names
from skills.spec.models import Skill, SkillSpec, TriggerConfig

Kind = Literal["reach", "when", "says", "bookkeeping"]

SKILL_FIELDS: dict[str, Kind] = {
    # SkillSpec: what a skill is.
    "agent_id": "reach",  # whose skills its context reads and templates name
    "name": "says",
    "description": "says",
    "enabled": "reach",  # an enabled skill acts
    "trigger_type": "when",
    "trigger_config": "when",  # but its ``event`` is reach: TRIGGER_FIELDS
    "instructions": "reach",  # what an Agent skill's LLM does (a Direct skill never reads them)
    "required_tools": "reach",
    "execution_plan": "reach",
    "max_steps": "reach",
    "notify_on_completion": "says",
    "notify_interval_minutes": "says",
    "deliver": "reach",  # whether a result goes out to the deliver_to destinations at all
    "deliver_to": "reach",
    "max_tokens_per_month": "reach",
    "remind_after_minutes": "says",
    "context_from": "reach",
    "preflight": "reach",
    "model": "reach",
    "approval_required_tools": "reach",
    "approval_exempt_tools": "reach",
    "approval_timeout_minutes": "when",
    "fallback_models": "reach",
    "timeout_minutes": "when",
    "end_at": "when",
    "max_runs": "when",
    "jitter_seconds": "when",
    "spread": "when",
    "overlap": "when",
    "catch_up": "when",
    "skip_holidays": "when",
    "business_days_only": "when",
    # Skill: what the engine keeps about it.
    "id": "bookkeeping",
    "schedule_id": "bookkeeping",
    "disabled_reason": "bookkeeping",
    "trigger_as_written": "when",
    "consecutive_failures": "bookkeeping",
    "last_failure_at": "bookkeeping",
    "last_error": "bookkeeping",
    "backoff_until": "bookkeeping",
    "run_timeout_seconds": "bookkeeping",
    "skips_until": "bookkeeping",
    "last_run_at": "bookkeeping",
    "last_run_status": "bookkeeping",
    "last_run_summary": "bookkeeping",
    "last_notified_at": "bookkeeping",
    "delivered_digest": "bookkeeping",
    "has_hook": "reach",  # an outside caller may start its runs (set by the owner's `skills hook` alone)
    "scheduled_runs": "bookkeeping",
    "revision": "bookkeeping",
    "created_at": "bookkeeping",
    "updated_at": "bookkeeping",
}
"""The fields of :class:`skills.spec.models.Skill` (and so of its :class:`SkillSpec`)."""

TRIGGER_FIELDS: dict[str, Kind] = {
    "schedule": "when", "timezone": "when", "interval_minutes": "when", "at": "when",
    "event": "reach",  # `skills emit` (and a chat's emit) start its runs
}
"""The fields of :class:`skills.spec.models.TriggerConfig`."""

MANIFEST_FIELDS: dict[str, Kind] = {
    "name": "says", "description": "says", "license": "says", "compatibility": "says", "version": "says",
    "brief_description": "says",
    "allowed_tools": "reach",
    "metadata": "reach",  # by its own fields: METADATA_FIELDS
    "triggers": "when",  # the messages that bring it into a chat
    "default_enabled": "when",
    "toolsets": "reach",
    "scripts": "reach",
    "depends": "reach",
}
"""The frontmatter fields of a SKILL.md (:class:`skills.skillmd.manifest.SkillManifest`)."""

METADATA_FIELDS: dict[str, Kind] = {
    "keywords": "when", "priority": "when",
    "required_tools": "reach", "max_steps": "reach", "execution_plan": "reach",
    # A schedule is reach: a file that fires by itself acts without its owner's message, as often as it says.
    "trigger_config": "reach",
    "notify_on_completion": "says",
    # What a scheduled SKILL.md passes on to its registration as written (skills.skillmd.registration.FILE_FIELDS).
    "timeout_minutes": "when", "end_at": "when", "max_runs": "when", "jitter_seconds": "when", "spread": "when",
    "overlap": "when", "catch_up": "when", "skip_holidays": "when", "business_days_only": "when",
    "approval_required_tools": "reach", "approval_exempt_tools": "reach", "approval_timeout_minutes": "when",
    "deliver": "reach", "remind_after_minutes": "says",
}
"""The keys of a SKILL.md's ``metadata`` the engine reads (:class:`SkillMetadata`'s and ``FILE_FIELDS``)."""


def fields_of(table: Mapping[str, Kind], kind: Kind) -> tuple[str, ...]:
    return tuple(name for name, found in table.items() if found == kind)


SKILL_REACH = fields_of(SKILL_FIELDS, "reach")
SPEC_REACH = tuple(name for name in SKILL_REACH if name in SkillSpec.model_fields)
"""What a chat change to these must propose before it is made."""


def spec_reach(spec: SkillSpec) -> dict[str, Any]:
    """The reach of a skill as stored, field -> JSON value: every reach field, the trigger's reach fields
    (``trigger_config.event``), and the instructions only for the Agent tier (a Direct plan never reads them)."""
    data = spec.model_dump(mode="json", include=set(SPEC_REACH))
    if spec.tier == "direct":
        data.pop("instructions", None)
    trigger = spec.trigger_config.model_dump(mode="json") if spec.trigger_config else {}
    for name in fields_of(TRIGGER_FIELDS, "reach"):
        data[f"trigger_config.{name}"] = trigger.get(name)
    return data


# --- a SKILL.md's reach ----------------------------------------------------------------------------


def reminds_only(spec: SkillSpec, notifier_tool: str) -> bool:
    """Whether ``spec`` is a reminder to its owner, read from its reach fields alone: every call it may make
    (``required_tools``, the plan's steps, ``deliver_to``) messages the owner (the notifier, or a tool named
    ``*_send_message``/``*_post_message``), and it reads nothing first (no ``context_from``, no pre-flight
    check). An Agent skill with no tools is one: its answer goes to the notifier. Its time is the point, so it
    is never spread unless its owner asks (``skills.when.spread``); work that reads something ("a summary
    every morning") may start a few minutes late."""
    calls = [*spec.required_tools, *(step.tool_name for step in spec.execution_plan or []),
             *(destination.tool for destination in spec.deliver_to)]
    return not spec.context_from and not spec.preflight and all(is_messaging_tool(t, notifier_tool) for t in calls)


def file_reach(manifest: Any, body: str | None = None) -> dict[str, Any]:
    """The reach of a SKILL.md (a :class:`SkillManifest`), field -> JSON value, as trust pins it.

    A skill without ``trigger_config`` runs only in a chat, on the owner's message: there its reach is
    its toolsets and scripts alone (its instructions guide the owner's own conversation). One with a
    ``trigger_config`` fires by itself, so its trigger is reach (what starts it and how often), and so is
    every other reach field and ``body`` (its instructions: what an Agent-tier run's LLM does on the
    owner's model, with nothing else declared). A schedule with only a body is an Agent run every time it
    fires: never "nothing to trust". Empty values are left out, so a field that says nothing pins nothing."""
    data = manifest.model_dump(mode="json", by_alias=False)
    metadata = data.pop("metadata", {}) or {}
    found: dict[str, Any] = {}
    scheduled = metadata.get("trigger_config") is not None
    for name in fields_of(MANIFEST_FIELDS, "reach"):
        if name == "metadata" or (not scheduled and name not in ("toolsets", "scripts")):
            continue
        found[name] = data.get(name)
    if scheduled:
        for name in fields_of(METADATA_FIELDS, "reach"):  # the trigger whole, its ``event`` with it
            found[f"metadata.{name}"] = metadata.get(name)
    reach = {name: value for name, value in found.items() if value not in (None, [], {}, "")}
    if scheduled and body is not None:
        reach["instructions"] = body
    return reach


def canonical(reach: Mapping[str, Any]) -> str:
    """One text for a reach (sorted JSON): what a digest sums."""
    return json.dumps(reach, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def reach_lines(manifest: Any) -> list[str]:
    """What a SKILL.md makes the engine do, as the owner reviews it before trusting it: the tools it calls
    with their arguments, where its results go, what it reads, which approvals it skips, what starts it.
    (Toolsets and scripts are listed by ``skills.skillmd.trust``, with the files they run.)"""
    reach = file_reach(manifest)
    metadata = manifest.metadata
    extra = metadata.model_extra or {}
    lines = []
    trigger = metadata.trigger_config
    if trigger is not None:
        lines.append("fires by itself: " + _trigger_words(trigger))
        if not metadata.execution_plan:
            lines.append("an Agent run on your model each time, following its instructions (the SKILL.md body)")
    for step in metadata.execution_plan or []:
        arguments = json.dumps(step.parameters, ensure_ascii=False, sort_keys=True)
        lines.append(f"calls {step.tool_name} {arguments}")
        for name in recall_names(step.parameters):
            lines.append(f"reads the last result of {'this skill' if name == 'self' else 'skill ' + name}")
    if trigger is not None and metadata.required_tools and not metadata.execution_plan:
        lines.append(f"lets an LLM call: {', '.join(metadata.required_tools)}")
    exempt = extra.get("approval_exempt_tools") if reach else None
    if exempt:
        lines.append(f"skips your approval for (marked destructive): {_names(exempt)}")
    if reach and extra.get("approval_required_tools") is not None:
        lines.append(f"asks your approval for: {_names(extra['approval_required_tools'])}")
    if reach and manifest.depends:
        lines.append(f"brings along skills: {', '.join(manifest.depends)}")
    return lines


def _names(value: Any) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _trigger_words(trigger: Mapping[str, Any]) -> str:
    try:
        return TriggerConfig.model_validate(trigger).describe()
    except ValueError:
        return json.dumps(trigger, ensure_ascii=False, default=str)


def spec_lines(spec: SkillSpec | Skill) -> list[str]:
    """A stored skill's deliveries and reads, as a proposal or ``skills show`` lists them (each destination
    with its address; each skill whose result it reads)."""
    lines = [f"delivers to: {d.label}" for d in spec.deliver_to]
    lines += [f"reads the last result of {'this skill' if n == 'self' else 'skill ' + n}" for n in spec.context_from]
    for step in spec.execution_plan or []:
        lines += [f"step {step.id} reads the last result of {'this skill' if n == 'self' else 'skill ' + n}"
                  for n in recall_names(step.parameters)]
    return lines


_KIND_WORDS: dict[Kind, str] = {
    "reach": "**reach**: what makes the engine act or reach",
    "when": "**when**: when it acts",
    "says": "**says**: what it only tells",
    "bookkeeping": "**bookkeeping**: what the engine records",
}
_KIND_EFFECTS: dict[Kind, str] = {
    "reach": "pinned by trust (a SKILL.md that fires by itself); a chat change needs the owner's yes, unless "
             "it only narrows; listed by install, `skills show`, `skills trust`",
    "when": "not pinned: changes freely; a chat change is made at once",
    "says": "not pinned: changes freely; a chat change is made at once",
    "bookkeeping": "the engine's own: no one writes it",
}


def coverage_table() -> str:
    """docs/security.md's "What trust covers" table, from the classification (a test holds the page to it)."""
    rows = ["| kind | stored skill | SKILL.md frontmatter | what follows |", "|---|---|---|---|"]
    for kind in ("reach", "when", "says", "bookkeeping"):
        stored = [*fields_of(SKILL_FIELDS, kind), *(f"trigger_config.{f}" for f in fields_of(TRIGGER_FIELDS, kind))]
        file = [*(f for f in fields_of(MANIFEST_FIELDS, kind) if f != "metadata"),
                *(f"metadata.{f}" for f in fields_of(METADATA_FIELDS, kind))]
        rows.append(f"| {_KIND_WORDS[kind]} | {', '.join(f'`{f}`' for f in stored) or '-'} | "
                    f"{', '.join(f'`{f}`' for f in file) or '-'} | {_KIND_EFFECTS[kind]} |")
    return "\n".join(rows)
