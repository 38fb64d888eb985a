"""File skills that schedule themselves: what a sync must do, decided from the files and the store.

``plan_sync`` compares the SKILL.md files that carry ``metadata.trigger_config`` with
the stored skills of the files agent and returns the changes: create (no stored
skill of that name), update (file newer than the stored skill, or saying something
else), disable (file removed, ``default_enabled: false``, or no ``trigger_config``
any more). The activity that calls it supplies the clock, the store's rows, the live tool
catalog and the reader of the files.

The messages of the ``SyncSkillFiles`` workflow live here too, so the client can
start it without importing the worker's dependencies. They carry names, paths and
reasons, never SKILL.md bodies: a body goes only into the ``RegisterSkill`` run
that stores it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_core import to_jsonable_python

from skills.errors import SkillFileError, SkillValidationError
from skills.run.scripts import RUN_SCRIPT
from skills.skillmd.limits import DEFAULT_LIMITS, Limits
from skills.skillmd.manifest import SkillFile, SkillManifest, SourceName
from skills.skillmd.problems import Problem
from skills.skillmd.registration import registration_request
from skills.skillmd.resources import SkillReader
from skills.skillmd.sources import Catalog, is_skipped
from skills.skillmd.trust import untrusted_reason
from skills.spec.models import Skill, SkillSpec
from skills.spec.normalize import NormalizeContext, normalize

FILE_REMOVED = "file removed"
DISABLED_IN_FILE = "default_enabled: false in file"
UNSCHEDULED_IN_FILE = "no trigger_config in file"
SYNC_REASONS = frozenset({FILE_REMOVED, DISABLED_IN_FILE, UNSCHEDULED_IN_FILE})
"""Disabled reasons the sync owns: it re-enables such a skill when its file schedules it again,
but never one a person paused. An untrusted skill's pause (``skills.skillmd.trust.untrusted_reason``) is
the sync's too: it ends when the owner trusts the skill as its file is."""

# The fields a file decides. `enabled` is not one of them: a pause by a person survives file edits.
_COMPARED = ("description", "instructions", "trigger_type", "required_tools", "execution_plan", "max_steps",
             "notify_on_completion")
# The comparison normalizes with a clock at the epoch, so no time check (an `at` now past) can fail
# and make an unchanged file look changed; the trigger is compared as written, not as converted.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FILE_ONLY_KEYS = ("file_path", "file_mtime")

Action = Literal["create", "update", "disable"]


class SyncInput(BaseModel):
    dry_run: bool = False
    """Plan only: report what would change, change nothing."""


class FileChange(BaseModel):
    """One change the sync makes to one skill, and why."""

    action: Action
    name: str
    reason: str
    """Why, in words; for ``disable`` it is the disabled reason stored on the skill."""
    path: str | None = None
    """The SKILL.md (create, update)."""
    source: SourceName | None = None
    skill_id: int | None = None
    """The stored skill (update, disable)."""
    enable: bool = False
    """An update that also re-enables a skill the sync had disabled (its file is back)."""


class RefusedFile(BaseModel):
    """A file (or a skill) the sync could not bring in line; the stored skill, if any, is left as it was."""

    name: str | None = None
    path: str | None = None
    errors: list[str] = Field(default_factory=list)


class SyncedSkill(BaseModel):
    """The outcome of one applied change."""

    change: FileChange
    ok: bool
    skill_id: int | None = None
    next_fire: datetime | None = None
    notes: list[str] = Field(default_factory=list)
    """What the registration normalizer did (time zone injected, ...)."""
    errors: list[str] = Field(default_factory=list)


class SyncPlan(BaseModel):
    changes: list[FileChange] = Field(default_factory=list)
    refused: list[RefusedFile] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    shadowed: list[str] = Field(default_factory=list)
    """File skills hidden by one of the same name in a source that takes precedence."""


class SyncResult(BaseModel):
    """What a sync did."""

    created: list[SyncedSkill] = Field(default_factory=list)
    updated: list[SyncedSkill] = Field(default_factory=list)
    disabled: list[SyncedSkill] = Field(default_factory=list)
    refused: list[RefusedFile] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    shadowed: list[str] = Field(default_factory=list)
    planned: list[FileChange] = Field(default_factory=list)
    """A dry run's changes, not made."""
    dry_run: bool = False

    def record(self, done: SyncedSkill) -> None:
        """File an applied change under its action, or under ``refused`` if it failed."""
        if not done.ok:
            change = done.change
            self.refused.append(RefusedFile(name=change.name, path=change.path, errors=done.errors))
            return
        {"create": self.created, "update": self.updated, "disable": self.disabled}[done.change.action].append(done)


def file_request(skill: SkillFile, agent_id: str, reader: SkillReader, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """The registration input of a scheduled file skill, every field the file decides spelled out.

    Every field is explicit (``execution_plan: None`` when the file has none) because an
    update merges over the stored skill: a field left out would keep its old value.
    JSON types only (a YAML date becomes its ISO text), as the data crosses Temporal.
    """
    request = registration_request(skill, reader, limits)
    if request is None:
        raise SkillFileError(f"{skill.path}: metadata has no trigger_config")
    for key in _FILE_ONLY_KEYS:
        request.pop(key, None)
    request.setdefault("execution_plan", None)
    request.setdefault("notify_on_completion", SkillSpec.model_fields["notify_on_completion"].default)
    request["agent_id"] = agent_id
    return to_jsonable_python(request)


def plan_sync(
    catalog: Catalog, stored: Iterable[Skill], context: NormalizeContext, reader: SkillReader,
    limits: Limits = DEFAULT_LIMITS, untrusted: Mapping[str, str] | None = None,
) -> SyncPlan:
    """The changes that bring the files agent's stored skills in line with the files.

    ``stored`` are the files agent's skills; ``context`` is what the registration
    normalizer gets (now, time zone, the files agent as default agent, the tool
    catalog), so a file the registration would refuse is refused here, before any
    workflow starts. ``untrusted``: the scheduled files whose reach their owner has not
    trusted as they are now, name -> the paused reason (``TrustState.paused_reason``): such
    a skill is stored paused, and a stored one that fires is paused. ``reader`` reads each scheduled
    file's body and problems now.
    """
    agent = context.default_agent_id
    stored_by_name = {skill.name: skill for skill in stored}
    plan = SyncPlan(shadowed=[_shadow_note(s.name, s.path, s.source, s.winner_path, s.winner_source)
                              for s in catalog.shadowed])
    plan.refused += _skipped_files(catalog.problems)
    handled = {refused.name for refused in plan.refused}

    for skill in catalog.skills.values():
        if skill.manifest.metadata.trigger_config is None and not _schedule_dropped(skill, catalog.problems):
            continue
        handled.add(skill.name)
        refused, change = _plan_file(skill, stored_by_name.get(skill.name), context, agent, reader, limits,
                                     (untrusted or {}).get(skill.name))
        if refused is not None:
            plan.refused.append(refused)
        elif change is not None:
            plan.changes.append(change)
        else:
            plan.unchanged.append(skill.name)

    for skill in stored_by_name.values():
        if skill.name in handled:
            continue
        change = _plan_disable(skill, _why_unscheduled(skill.name, catalog))
        if change is not None:
            plan.changes.append(change)
    return plan


def _plan_file(
    skill: SkillFile,
    stored: Skill | None,
    context: NormalizeContext,
    agent: str,
    reader: SkillReader,
    limits: Limits,
    hold: str | None = None,
) -> tuple[RefusedFile | None, FileChange | None]:
    """A refusal, a change, or neither (the stored skill already says what the file says)."""
    path = str(skill.path)
    errors = _spec_errors(skill, reader, limits)
    if errors:
        # A scheduled skill runs unattended: it must pass the specification, not only lenient loading.
        return RefusedFile(name=skill.name, path=path, errors=errors), None
    try:
        request = file_request(skill, agent, reader, limits)
    except SkillFileError as exc:
        return RefusedFile(name=skill.name, path=path, errors=[str(exc)]), None

    if stored is None:
        action: Action = "create"
        reason = "new file"
    else:
        action = "update"
        reason = _why_update(skill, request, stored, context, hold)
        if reason is None:
            return None, None
    errors = _registration_errors(request, stored, with_toolset_tools(context, skill.manifest, request))
    if errors:
        return RefusedFile(name=skill.name, path=path, errors=errors), None
    return None, FileChange(
        action=action,
        name=skill.name,
        reason=reason,
        path=path,
        source=skill.source,
        skill_id=stored.id if stored else None,
        enable=stored is not None and _disabled_by_sync(stored) and hold is None,
    )


def _why_update(skill: SkillFile, request: dict[str, Any], stored: Skill, context: NormalizeContext,
                hold: str | None = None) -> str | None:
    if hold is not None and stored.enabled:
        return hold  # its reach changed since trusted (or was never trusted): the registration pauses it
    if _disabled_by_sync(stored) and hold is None:
        if untrusted_reason(stored.disabled_reason):
            return "trusted by its owner as its file is now"
        return f"file schedules it again (was disabled: {stored.disabled_reason})"
    if skill.mtime > stored.updated_at:
        return "file is newer than the stored skill"
    # Also by content: a copy that keeps an old mtime (cp -p, rsync -t, tar) or an edit of the
    # stored skill through the API would otherwise never be brought back in line with the file.
    if _differs(request, stored, context):
        return "file differs from the stored skill"
    return None


def _differs(request: dict[str, Any], stored: Skill, context: NormalizeContext) -> bool:
    try:
        normalized = normalize(request, dataclasses.replace(context, now=_EPOCH, tool_catalog=None))
    except SkillValidationError:
        return True  # the stored skill passed, so the file must say something else now
    spec = normalized.spec
    if any(getattr(spec, name) != getattr(stored, name) for name in _COMPARED):
        return True
    return normalized.trigger_as_written != stored.trigger_as_written


def with_toolset_tools(context: NormalizeContext, manifest: SkillManifest, request: dict[str, Any]) -> NormalizeContext:
    """The context with the tools a registration names from the skill's own toolsets taken as known: those
    servers are connected only when the skill runs, so the worker's catalog cannot list them."""
    if context.tool_catalog is None or not (manifest.toolsets or manifest.scripts):
        return context
    named = [*(request.get("required_tools") or []),
             *(step.get("toolName") or step.get("tool_name") or "" for step in request.get("execution_plan") or [])]
    own = {t for t in named if isinstance(t, str) and any(t.startswith(s + "_") for s in manifest.toolsets)}
    if manifest.scripts and RUN_SCRIPT in named:
        own.add(RUN_SCRIPT)  # a skill that declares scripts may run them (a plan step, an Agent's tool)
    return dataclasses.replace(context, tool_catalog={*context.tool_catalog, *own}) if own else context


def _registration_errors(request: dict[str, Any], stored: Skill | None, context: NormalizeContext) -> list[str]:
    """What the registration would refuse, checked with the same normalizer and inputs."""
    existing = SkillSpec.model_validate(stored.model_dump(include=set(SkillSpec.model_fields))) if stored else None
    try:
        normalize(request, context, existing=existing)
    except SkillValidationError as exc:
        return [str(error) for error in exc.errors]
    return []


def _plan_disable(skill: Skill, reason: str) -> FileChange | None:
    # A skill a person paused stays paused with their reason; a reason of ours is brought up to date.
    if skill.enabled or (_disabled_by_sync(skill) and skill.disabled_reason != reason):
        return FileChange(action="disable", name=skill.name, reason=reason, skill_id=skill.id)
    return None


def _why_unscheduled(name: str, catalog: Catalog) -> str:
    if name in catalog.disabled:
        return DISABLED_IN_FILE
    if name in catalog.skills:
        return UNSCHEDULED_IN_FILE
    return FILE_REMOVED


def _disabled_by_sync(skill: Skill) -> bool:
    return not skill.enabled and (skill.disabled_reason in SYNC_REASONS or untrusted_reason(skill.disabled_reason))


def _skipped_files(problems: list[Problem]) -> list[RefusedFile]:
    """Files that could not be loaded at all. Skill names equal folder names, so the folder's
    name is the skill the file meant to be: its stored version is kept, not disabled as removed."""
    return [
        RefusedFile(name=p.path.parent.name if p.path else None, path=str(p.path) if p.path else None,
                    errors=[p.message])
        for p in problems
        if is_skipped(p)
    ]


def _schedule_dropped(skill: SkillFile, problems: list[Problem]) -> bool:
    """Whether lenient loading dropped an invalid ``trigger_config`` or ``execution_plan``: the file
    meant to be scheduled, and must be refused with the reason rather than quietly left out."""
    return any(
        p.path == skill.path and (p.field or "").startswith(("metadata.trigger_config", "metadata.execution_plan"))
        for p in problems
    )


def _spec_errors(skill: SkillFile, reader: SkillReader, limits: Limits) -> list[str]:
    return [p.message for p in reader.problems(skill, limits) if p.severity == "error"]


def _shadow_note(name: str, path: Any, source: str, winner_path: Any, winner_source: str) -> str:
    return f"{name}: {path} ({source}) is shadowed by {winner_path} ({winner_source})"
