"""Registration activities: normalize and validate, then store, in one transaction each.

The normalizer needs two things from the world, the clock and the live tool
catalog (the names, and each tool's input schema for the plan's parameters); this
activity supplies both, so the normalizer itself stays pure and the workflow stays
deterministic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.failures import as_application_errors
from activities.skillfiles import file_skill
from activities.store import Store
from config.settings import LLM_SETTINGS, Settings
from skills.arguments import ArgumentRules
from skills.catalog import ToolInfo
from skills.errors import FieldError, SkillNotFoundError, SkillValidationError
from skills.messages import ChangeInput, EnableInput, Prepared, RegisterInput, Saved, SaveInput, UndoSave
from skills.models import BY_USER, MISSING_TOOLS, NO_LLM, Normalized, Skill, SkillSpec
from skills.normalize import NormalizeContext, normalize
from skills.skillmd.sync import with_toolset_tools


class RegistrationActivities:
    def __init__(self, store: Store, settings: Settings, tool_names: Callable[[], Collection[str]], *,
                 catalog: Callable[[], list[ToolInfo]] | None = None, rules: ArgumentRules | None = None,
                 await_connects: Callable[[Collection[str]], bool] | None = None) -> None:
        """``catalog`` (the live tools with their input schemas) lets plan steps and pre-flight checks be
        checked against each tool's schema, judged with the argument pipeline's ``rules``; without it
        only the tool names are checked. ``await_connects(tools)`` waits for the MCP servers that could
        offer ``tools`` while they are still connecting (True if there were any): a skill naming a tool
        not (yet) in the catalog is checked again then."""
        self.store = store
        self.settings = settings
        self.tool_names = tool_names
        self.catalog = catalog
        self.rules = rules
        self.await_connects = await_connects

    @activity.defn(name="prepare_skill")
    def prepare(self, request: RegisterInput) -> Prepared:
        """Normalize and validate; an update is merged over the stored skill first."""
        unknown: set[str] = set()
        prepared = self._prepare(request, unknown)
        if unknown and self.await_connects is not None and self.await_connects(unknown):
            prepared = self._prepare(request, set())  # their servers were still connecting: look again
        return prepared

    def _prepare(self, request: RegisterInput, unknown: set[str]) -> Prepared:
        existing: Skill | None = None
        existing_id: int | None = None
        try:
            if request.target is not None:
                existing = self.store.find_skill(request.target.ref, request.target.agent_id)
                existing_id = existing.id
            ctx = _recording(self._with_file_toolsets(self._context(), request.data), unknown)
            normalized = _without_llm(normalize(request.data, ctx, existing=_spec(existing) if existing else None),
                                      self.settings)
        except SkillValidationError as e:
            return Prepared(existing_id=existing_id, errors=e.errors)
        except SkillNotFoundError as e:
            return Prepared(errors=[FieldError(field="target", message=str(e))])
        return Prepared(normalized=normalized, existing_id=existing_id)

    def _context(self) -> NormalizeContext:
        names: Collection[str]
        schemas: dict[str, Any] | None = None
        if self.catalog is not None:
            tools = self.catalog()
            names = {tool.name for tool in tools}
            schemas = {tool.name: tool.input_schema for tool in tools}
        else:
            names = set(self.tool_names())
        return NormalizeContext(
            now=datetime.now(UTC),
            default_timezone=self.settings.timezone,
            default_agent_id=self.settings.default_agent_id,
            tool_catalog=names,
            tool_schemas=schemas,
            argument_rules=self.rules,
        )

    def _with_file_toolsets(self, ctx: NormalizeContext, data: Any) -> NormalizeContext:
        """For a file skill (the files agent's), its SKILL.md toolsets' tools count as known (``with_toolset_tools``)."""
        if not isinstance(data, dict) or data.get("agent_id") != self.settings.file_skills_agent:
            return ctx
        name = data.get("name")
        skill = file_skill(self.settings, name) if isinstance(name, str) and name else None
        return with_toolset_tools(ctx, skill.manifest, data) if skill is not None else ctx

    @activity.defn(name="save_skill")
    def save(self, request: SaveInput) -> Saved:
        """Insert or replace the skill row (and nothing else) in one transaction."""
        normalized, now = request.normalized, datetime.now(UTC)
        try:
            existing = self.store.get_skill(request.existing_id) if request.existing_id is not None else None
        except SkillNotFoundError as e:  # deleted since it was prepared
            return Saved(errors=[FieldError(field="target", message=str(e))])
        reason = normalized.disabled_reason or _disabled_reason(normalized.spec, normalized.missing_tools, existing)
        try:
            if existing is None:
                skill = self.store.create_skill(normalized.spec, trigger_as_written=normalized.trigger_as_written,
                                                disabled_reason=reason, now=now)
            else:
                skill = self.store.replace_skill(existing.id, normalized.spec,
                                                 trigger_as_written=normalized.trigger_as_written,
                                                 disabled_reason=reason, now=now)
        except SkillValidationError as e:
            return Saved(errors=e.errors)
        return Saved(skill=skill.without_instructions(), previous=existing)

    @activity.defn(name="undo_save")
    def undo(self, request: UndoSave) -> None:
        """Compensation when the schedule could not follow: put the store back as it was."""
        if request.previous is not None:
            self.store.restore_skill(request.previous)
            return
        with suppress(SkillNotFoundError):  # a retry after the delete went through
            self.store.delete_skill(request.skill_id)

    @activity.defn(name="set_skill_enabled")
    def set_enabled(self, request: EnableInput) -> Skill:
        with as_application_errors():
            return self.store.set_enabled(request.skill_id, request.enabled, request.reason, request.now)

    @activity.defn(name="delete_skill")
    def delete(self, request: ChangeInput) -> Skill:
        with as_application_errors():
            skill = self.store.find_skill(request.target.ref, request.target.agent_id)
            return self.store.delete_skill(skill.id)


class Catalog(set[str]):
    """Tool names that remember which names were asked for and missing (in ``unknown``)."""

    def __init__(self, names: Iterable[str], unknown: set[str]) -> None:
        super().__init__(names)
        self.unknown = unknown

    def __contains__(self, name: object) -> bool:
        found = super().__contains__(name)
        if not found and isinstance(name, str):
            self.unknown.add(name)
        return found


def _recording(ctx: NormalizeContext, unknown: set[str]) -> NormalizeContext:
    """``ctx`` whose tool catalog notes in ``unknown`` every tool the normalizer looked for and missed."""
    if ctx.tool_catalog is None:
        return ctx
    return dataclasses.replace(ctx, tool_catalog=Catalog(ctx.tool_catalog, unknown))


def _without_llm(normalized: Normalized, settings: Settings) -> Normalized:
    """A scheduled Agent-tier skill on a worker with no LLM is stored disabled, not left to fail every fire."""
    spec = normalized.spec
    if settings.llm_configured or spec.tier != "agent" or not spec.is_scheduled or not spec.enabled:
        return normalized
    note = (f"stored disabled: no LLM is configured ({LLM_SETTINGS}); it enables itself once the worker "
            "has one")
    return normalized.model_copy(update={"spec": spec.model_copy(update={"enabled": False}),
                                         "notes": [*normalized.notes, note], "disabled_reason": NO_LLM})


def _spec(skill: Skill) -> SkillSpec:
    return SkillSpec.model_validate(skill.model_dump(include=set(SkillSpec.model_fields)))


def _disabled_reason(spec: SkillSpec, missing_tools: list[str], existing: Skill | None) -> str | None:
    if spec.enabled:
        return None
    if missing_tools:
        return MISSING_TOOLS
    if existing is not None and not existing.enabled and existing.disabled_reason:
        return existing.disabled_reason
    return BY_USER
