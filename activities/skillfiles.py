"""SKILL.md file activities: scan the skill folders, and apply one change of a sync.

The scan reads folders, the store and the live tool catalog, and returns the plan of
``skills.skillmd.sync.plan_sync``: names, paths and reasons only, so the sync's
history stays small whatever the files hold.

Applying a change runs the same workflow any client would: ``RegisterSkill`` (create,
or update with a target) or ``ChangeSkill`` (pause with the reason). The activity
reads the SKILL.md itself, so its body goes into the ``RegisterSkill`` run that
stores it and nowhere else. That run's id is the sync's workflow id, the change and the
sync's run id (``skills-sync-files-now-create-drink-water-<run id>``): a retried
activity finds the run it started instead of registering twice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity

from activities.ports import ConnectingTools
from activities.trust import trust_states, untrusted
from adapters.engine_workflows import EngineWorkflows
from adapters.skill_folders import FOLDERS, discover, file_skill, load_skill_file
from adapters.store import Store
from config.settings import Settings
from skills import linear
from skills.errors import SkillFileError, ToolsetRefusedError
from skills.messages.manage import (
    ChangeInput,
    ChangeResult,
    RegisterInput,
    RegistrationResult,
    SkillFilter,
    SkillRef,
)
from skills.naming import CHANGE_SKILL, REGISTER_SKILL
from skills.run.catalog import ToolInfo, ToolsetGrant, toolsets_digest
from skills.run.scripts import RUN_SCRIPT, tool_description, tool_schema
from skills.skillmd.limits import DEFAULT_LIMITS, Limits
from skills.skillmd.manifest import SkillFile
from skills.skillmd.scripts import declared_scripts
from skills.skillmd.sync import FileChange, SyncedSkill, SyncInput, SyncPlan, file_request, plan_sync
from skills.spec.mcpservers import ToolsetServer
from skills.spec.normalize import NormalizeContext

T = TypeVar("T")

_SKILL_NAME = linear.compile(r"[a-z0-9][a-z0-9-]{0,63}")
"""A SKILL.md name (and its folder's): a grant naming anything else names no folder of the worker's."""


class ToolsWhenAsked(Collection[str]):
    """The live tool catalog, read at its first question: only a file skill the sync creates or changes has its
    tools checked, so a round whose files are all as stored (every round but the first, mostly) connects no MCP
    server, and the worker does not load the MCP SDK for it (45 MiB resident, docs/performance.md, "Worker RSS").
    The first question waits for servers still connecting (a lazy hub starts them then), so that a file skill is
    not stored disabled for tools its server is about to offer."""

    def __init__(self, tools: ConnectingTools) -> None:
        self._tools = tools
        self._names: frozenset[str] | None = None

    def _read(self) -> frozenset[str]:
        if self._names is None:
            self._tools.waited_for_connects(None)
            self._names = frozenset(self._tools.tool_names())
        return self._names

    def __contains__(self, name: object) -> bool:
        return name in self._read()

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


class SkillFileActivities:
    def __init__(
        self,
        store: Store,
        workflows: EngineWorkflows,
        settings: Settings,
        tools: ConnectingTools,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        """``tools.waited_for_connects()`` waits for MCP servers still connecting, so that a file skill is not
        stored disabled for tools its server is about to offer."""
        self.store = store
        self.workflows = workflows
        self.settings = settings
        self.tools = tools
        self.limits = limits

    @activity.defn
    def scan_skill_files(self, request: SyncInput) -> SyncPlan:
        """What the sync must change: the folders' file skills against the files agent's stored skills."""
        agent = self.settings.file_skills_agent
        catalog = discover(**self.settings.skill_folders(), limits=self.limits)
        stored = self.store.skills.list_skills(SkillFilter(agent_id=agent))
        context = NormalizeContext(
            now=datetime.now(UTC),
            default_timezone=self.settings.timezone,
            default_agent_id=agent,
            tool_catalog=ToolsWhenAsked(self.tools),
        )
        scheduled = [skill for skill in catalog.skills.values() if skill.manifest.metadata.trigger_config is not None]
        held = {state.name: state.paused_reason() for state in trust_states(self.store, self.settings, scheduled)
                if not state.runs}
        return plan_sync(catalog, stored, context, FOLDERS, self.limits, untrusted=held)

    @activity.defn
    async def apply_skill_file(self, change: FileChange) -> SyncedSkill:
        """Run the registration (or the pause) one change needs, and report how it went."""
        if change.action == "disable":
            return await self._disable(change)
        return await self._register(change)

    async def _register(self, change: FileChange) -> SyncedSkill:
        # Read now, not at scan time: the newest content is what should be stored.
        assert change.path is not None and change.source is not None
        skill, problems = load_skill_file(Path(change.path), change.source, self.limits)
        if skill is None:
            return SyncedSkill(change=change, ok=False, errors=[p.message for p in problems])
        try:
            data = file_request(skill, self.settings.file_skills_agent, FOLDERS, self.limits)
        except SkillFileError as exc:
            return SyncedSkill(change=change, ok=False, errors=[str(exc)])
        if change.enable:
            data["enabled"] = True
        target = SkillRef(ref=str(change.skill_id)) if change.action == "update" else None
        result = await self._run(REGISTER_SKILL, RegisterInput(data=data, target=target, from_files=True, by="sync"),
                                 RegistrationResult,
                                 change)
        if isinstance(result, str):
            return SyncedSkill(change=change, ok=False, errors=[result])
        skill_id = result.skill.id if result.skill else None
        return SyncedSkill(change=change, ok=result.ok, skill_id=skill_id, next_fire=result.next_fire,
                           notes=result.notes, errors=[str(e) for e in result.errors])

    async def _disable(self, change: FileChange) -> SyncedSkill:
        request = ChangeInput(target=SkillRef(ref=str(change.skill_id)), action="pause", reason=change.reason,
                              by="sync")
        result = await self._run(CHANGE_SKILL, request, ChangeResult, change)
        if isinstance(result, str):
            return SyncedSkill(change=change, ok=False, errors=[result])
        return SyncedSkill(change=change, ok=result.ok, skill_id=change.skill_id,
                           errors=[str(e) for e in result.errors])

    async def _run(self, workflow: str, arg: Any, result_type: type[T], change: FileChange) -> T | str:
        """The workflow's result, or why it failed; started once per sync run and change."""
        info = activity.info()
        # The sync's run id, not only its workflow id: an on-demand sync reuses its workflow id.
        workflow_id = f"{info.workflow_id}-{change.action}-{change.name}-{info.workflow_run_id}"
        return await self.workflows.run_once(workflow, arg, result_type, workflow_id=workflow_id,
                                             summary=f"{change.action} file skill '{change.name}': {change.reason}")


def toolset_grant(skill: SkillFile) -> ToolsetGrant | None:
    """A SKILL.md skill's ``toolsets`` as granted to a run or chat turn, by reference (None: it declares none)."""
    if not skill.manifest.toolsets:
        return None
    return ToolsetGrant(skill=skill.name, servers=list(skill.manifest.toolsets),
                        digest=toolsets_digest(skill.manifest.toolsets))


def granted_toolsets(settings: Settings, grant: ToolsetGrant,
                     store: Store | None = None) -> tuple[Path, dict[str, ToolsetServer]]:
    """What a grant may start: the skill's folder and its ``toolsets``, read from the SKILL.md the worker's
    folders hold now, never from the grant. Raises :class:`ToolsetRefusedError` naming the skill when the
    grant does not match that file (the file changed since the run began, or the grant is forged), or,
    given the ``store``, when the owner does not trust what it runs: a run is refused that earlier, at
    ``begin_run``; this holds for a grant that did not come through it."""
    found = file_skill(settings, grant.skill) if _SKILL_NAME.fullmatch(grant.skill) else None
    if found is None or not found.manifest.toolsets:
        raise ToolsetRefusedError(
            f"skill '{grant.skill}' declares no toolsets in the worker's skill folders: its grant names servers "
            f"{', '.join(grant.servers) or '(none)'} that the worker does not serve, so nothing was started")
    toolsets = dict(found.manifest.toolsets)
    if list(toolsets) != list(grant.servers) or toolsets_digest(toolsets) != grant.digest:
        raise ToolsetRefusedError(
            f"the toolsets of skill '{grant.skill}' do not match its SKILL.md (it changed since the run began, or "
            "the grant was not made by this engine): nothing was started; the next run uses the file as it is")
    refusal = untrusted(store, settings, [found]) if store is not None else None
    if refusal is not None:
        raise ToolsetRefusedError(f"{refusal}: nothing was started")
    return found.folder, toolsets


def script_tool(settings: Settings, skills: list[str]) -> ToolInfo | None:
    """The ``run_script`` tool offered to a conversation whose sandbox holds ``skills``' scripts."""
    scripts: dict[str, list[str]] = {}
    for name in skills:
        found = file_skill(settings, name)
        if found is not None:
            declared, _ = declared_scripts(list(found.manifest.scripts))
            if declared:
                scripts[name] = [d.name for d in declared]
    if not scripts:
        return None
    return ToolInfo(name=RUN_SCRIPT, server="skills", tool=RUN_SCRIPT, description=tool_description(scripts),
                    input_schema=tool_schema(scripts))


def script_skills(settings: Settings, names: list[str]) -> list[str]:
    """Which of the file skills ``names`` declare scripts (none when scripts are disabled)."""
    if not settings.scripts_enabled:
        return []
    out = []
    for name in names:
        found = file_skill(settings, name)
        if found is not None and declared_scripts(list(found.manifest.scripts))[0]:
            out.append(name)
    return out
