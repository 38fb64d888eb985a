"""Registration activities: normalize and validate, then store, in one transaction each.

The normalizer needs two things from the world, the clock and the live tool
catalog (the names, and each tool's input schema for the plan's parameters); this
activity supplies both, so the normalizer itself stays pure and the workflow stays
deterministic.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from activities.failures import as_application_errors
from activities.ports import RegistrationTools
from activities.schedules import ScheduleActivities
from activities.trust import trust_states
from adapters.llm.model_list import EndpointModels
from adapters.skill_folders import FOLDERS, file_skill
from adapters.store import Store
from client.calls import BUSY
from config.settings import LLM_SETTINGS, Settings
from skills.chat.proposals import as_spec, spec_digest
from skills.errors import FieldError, SkillFileError, SkillNotFoundError, SkillValidationError
from skills.messages.manage import (
    BulkRegistrationResult,
    ChangeInput,
    EnableInput,
    HookInput,
    ItemRegistration,
    Prepared,
    PreviousSchedule,
    Registered,
    RegisterInput,
    RegisterManyInput,
    RegistrationResult,
    Saved,
    SaveInput,
    ScheduleSync,
    ScheduleSynced,
    UndoSave,
)
from skills.run.deadline import SCHEDULE_RETRY, STORE_RETRY
from skills.skillmd.sync import file_request, with_toolset_tools
from skills.skillmd.trust import untrusted_reason
from skills.spec.collisions import MAX_COMPARED, MAX_COMPARED_CHARS, collision_note, collisions
from skills.spec.models import BY_USER, MISSING_TOOLS, NO_LLM, Normalized, Skill, SkillSpec
from skills.spec.normalize import NormalizeContext, normalize
from skills.spec.revisions import BY_CLIENT
from skills.when.spread import crowd


class RegistrationActivities:
    def __init__(self, store: Store, settings: Settings, tools: RegistrationTools, *,
                 schedules: ScheduleActivities | None = None) -> None:
        """``tools`` (the hub): the live catalog, against whose names, input schemas and annotations plan steps
        and pre-flight checks are checked, judged with its argument pipeline's ``rules``; and a wait for the MCP
        servers that could offer a skill's tools while they are still connecting (a skill naming a tool not (yet)
        in the catalog is checked again then). ``schedules`` syncs the schedules of a bulk registration."""
        self.schedules = schedules
        self.store = store
        self.settings = settings
        self.tools = tools
        self.models = EndpointModels(settings)

    @activity.defn
    def prepare_skill(self, request: RegisterInput) -> Prepared:
        """Normalize and validate; an update is merged over the stored skill first."""
        unknown: set[str] = set()
        prepared = self._prepare(request, unknown)
        if unknown and self.tools.waited_for_connects(unknown):
            prepared = self._prepare(request, set())  # their servers were still connecting: look again
        return prepared

    def _prepare(self, request: RegisterInput, unknown: set[str]) -> Prepared:
        existing: Skill | None = None
        existing_id: int | None = None
        try:
            if request.target is not None:
                existing = self.store.skills.find_skill(request.target.ref, request.target.agent_id)
                existing_id = existing.id
            hold = None
            if request.from_files:
                request, hold = self._as_the_file_says(request, existing)
            ctx = _recording(self._with_file_toolsets(self._context(request), request.data), unknown)
            normalized = _without_llm(normalize(request.data, ctx, existing=_spec(existing) if existing else None),
                                      self.settings)
            if hold is not None and normalized.spec.enabled:
                # Stored paused until its owner trusts what it reaches (a person's own pause is kept as it was).
                normalized.spec.enabled = False
                normalized.disabled_reason = hold
        except SkillValidationError as e:
            return Prepared(existing_id=existing_id, errors=e.errors)
        except SkillNotFoundError as e:
            return Prepared(errors=[FieldError(field="target", message=str(e))])
        if existing is None and not request.from_files:
            # A new skill that repeats one of its agent's: said, never refused (a chat's proposal shows it).
            others = self.store.skills.newest_skills(normalized.spec.agent_id, MAX_COMPARED,
                                                     instruction_chars=MAX_COMPARED_CHARS)
            note = collision_note(collisions(normalized.spec, others, datetime.now(UTC)))
            if note is not None:
                normalized.notes.append(note)
        return Prepared(normalized=normalized, existing_id=existing_id)

    def _context(self, request: RegisterInput) -> NormalizeContext:
        tools = self.tools.catalog()
        names = {tool.name for tool in tools}
        schemas = {tool.name: tool.input_schema for tool in tools}
        destructive = (names, {tool.name for tool in tools if tool.hints.destructive_said})
        now = datetime.now(UTC)
        return NormalizeContext(
            now=now,
            default_timezone=self.settings.timezone,
            default_agent_id=self.settings.default_agent_id,
            tool_catalog=names,
            tool_schemas=schemas,
            destructive_tools=destructive,
            argument_rules=self.tools.rules,
            destination_allowlists=_allowlists(self.settings),
            reserved_agents=self._reserved_agents(request),
            llm_models=self.models,
            skill_names=self.store.skills.skill_names,
            minute_crowd=lambda trigger: crowd(trigger, self.store.skills.cron_counts(), now),
            spread_fires_per_second=self.settings.spread_fires_per_second,
            notifier_tool=self.settings.notifier_tool,
        )

    def _as_the_file_says(self, request: RegisterInput, existing: Skill | None) -> tuple[RegisterInput, str | None]:
        """A sync's registration, read from the SKILL.md the worker's folders hold now, never from the payload:
        any namespace holder can start RegisterSkill and say ``from_files``. Only the name, the target (one of
        the files agent's skills) and ``enabled: true`` (the sync's re-enable) come from the request. With it,
        why the skill must stay paused (its owner has not trusted what it reaches as it is now), or None."""
        agent, name = self.settings.file_skills_agent, request.data.get("name")
        if existing is not None and existing.agent_id != agent:
            raise SkillValidationError.single("target", f"skill {existing.id} is not the files agent's: the "
                                              "SKILL.md sync updates only the skills it registered")
        found = file_skill(self.settings, name) if isinstance(name, str) and name else None
        if found is None or found.manifest.metadata.trigger_config is None:
            raise SkillValidationError.single("name", f"no scheduled SKILL.md named {str(name)[:100]!r} in the "
                                              "worker's skill folders: only the SKILL.md sync registers there")
        try:
            data = file_request(found, agent, FOLDERS)
        except SkillFileError as exc:
            raise SkillValidationError.single("name", str(exc)) from None
        if request.data.get("enabled") is True:
            data["enabled"] = True
        [state] = trust_states(self.store, self.settings, [found])
        return request.model_copy(update={"data": data}), None if state.runs else state.paused_reason()

    def _reserved_agents(self, request: RegisterInput) -> frozenset[str]:
        """The files agent, unless the sync asks for a scheduled SKILL.md of the worker's folders: a skill
        registered there by anyone else, named like an on-demand SKILL.md, would inherit its toolsets."""
        name = request.data.get("name")
        found = file_skill(self.settings, name) if request.from_files and isinstance(name, str) and name else None
        if found is not None and found.manifest.metadata.trigger_config is not None:
            return frozenset()
        return frozenset({self.settings.file_skills_agent})

    def _with_file_toolsets(self, ctx: NormalizeContext, data: Any) -> NormalizeContext:
        """For a file skill (the files agent's), its SKILL.md toolsets' tools count as known (``with_toolset_tools``)."""
        if not isinstance(data, dict) or data.get("agent_id") != self.settings.file_skills_agent:
            return ctx
        name = data.get("name")
        skill = file_skill(self.settings, name) if isinstance(name, str) and name else None
        return with_toolset_tools(ctx, skill.manifest, data) if skill is not None else ctx

    @activity.defn
    def save_skill(self, request: SaveInput) -> Saved:
        """Insert or replace the skill row (and nothing else) in one transaction."""
        normalized, now = request.normalized, datetime.now(UTC)
        try:
            existing = self.store.skills.get_skill(request.existing_id) if request.existing_id is not None else None
        except SkillNotFoundError as e:  # deleted since it was prepared
            return Saved(errors=[FieldError(field="target", message=str(e))])
        reason = normalized.disabled_reason or _disabled_reason(normalized.spec, normalized.missing_tools, existing)
        by = request.by or BY_CLIENT
        try:
            if existing is None:
                skill = self.store.skills.create_skill(normalized.spec, trigger_as_written=normalized.trigger_as_written,
                                                       disabled_reason=reason, now=now, by=by,
                                                       action="reverted" if request.reverts else "created")
            else:
                skill = self.store.skills.replace_skill(existing.id, normalized.spec,
                                                        trigger_as_written=normalized.trigger_as_written,
                                                        disabled_reason=reason, now=now, by=by,
                                                        action="reverted" if request.reverts else "updated")
        except SkillValidationError as e:
            return Saved(errors=e.errors)
        return Saved(skill=skill.without_instructions(), previous=existing)

    @activity.defn
    def undo_save(self, request: UndoSave) -> None:
        """Compensation when the schedule could not follow: put the store back as it was."""
        if request.previous is not None:
            self.store.skills.restore_skill(request.previous)
            return
        with suppress(SkillNotFoundError):  # a retry after the delete went through
            self.store.skills.delete_skill(request.skill_id, by=None)

    @activity.defn
    async def register_skill(self, request: RegisterInput) -> Registered:
        """A whole registration or update in one local activity: normalize and validate, store, bring the
        schedule along; if the schedule cannot follow, the store is put back (and an update's old schedule
        with it), so a refused change leaves nothing half-written. One activity, not one per step: each
        local activity costs the workflow's worker a round of the SDK (a few ms of CPU) and a marker.

        It raises only where the store itself fails (the save, or the undo), and the store's own
        transaction leaves nothing half-written there."""
        assert self.schedules is not None, "a registration needs the schedule activities"
        prepared = await asyncio.to_thread(self.prepare_skill, request)
        if prepared.errors or prepared.normalized is None:
            return Registered(result=RegistrationResult(ok=False, errors=prepared.errors))
        notes = prepared.normalized.notes
        saved = await asyncio.to_thread(self.save_skill, SaveInput(
            normalized=prepared.normalized, existing_id=prepared.existing_id, by=request.by, reverts=request.reverts))
        stored = saved.skill
        if stored is None and prepared.existing_id is None:
            stored = await asyncio.to_thread(self._stored_by_a_lost_attempt, prepared.normalized.spec, saved.errors,
                                             request.asked_at)
        if stored is None:
            return Registered(result=RegistrationResult(ok=False, errors=saved.errors, notes=notes))
        # The stored instructions are the normalized ones: the save did not send them back.
        skill = stored.model_copy(update={"instructions": prepared.normalized.spec.instructions})
        previous = saved.previous
        try:
            synced = await self._follow(skill, previous)
        except Exception as e:  # compensate: the store as it was, and an update's schedule as it was
            await _again(lambda: asyncio.to_thread(self.undo_save, UndoSave(skill_id=skill.id, previous=previous)))
            if previous is not None:
                try:
                    await self._follow(previous, skill)
                except Exception as again:  # not retried whole: the store is back, a retry would save again
                    raise ApplicationError(f"the schedule could not be updated ({_cause(e)}), nor put back as it "
                                           f"was: {_cause(again)}", non_retryable=True) from again
            return Registered(result=RegistrationResult(ok=False, notes=notes, errors=[FieldError(
                field="schedule", message=f"the schedule could not be updated: {_cause(e)}")]))
        paused = previous is not None and previous.enabled and not skill.enabled
        return Registered(result=RegistrationResult(ok=True, skill=skill, notes=notes, next_fire=synced.next_fire),
                          paused=paused)

    async def _follow(self, skill: Skill, previous: Skill | None) -> ScheduleSynced:
        """``skill``'s schedule brought in line with the store (``previous``: the skill its schedule was built
        from), a frontend too busy to answer asked again as the schedule activity's retry policy would."""
        assert self.schedules is not None
        request = ScheduleSync(skill_id=skill.id, previous=PreviousSchedule.of(previous) if previous else None)
        delay = SCHEDULE_RETRY.initial_interval.total_seconds()
        for attempt in range(1, SCHEDULE_RETRY.maximum_attempts + 1):
            try:
                if previous is None:  # just created: no one else has its id yet, so no read of it again
                    return await self.schedules.follow(skill, None)
                return await self.schedules.sync_schedule(request)
            except RPCError as e:
                if e.status not in BUSY or attempt == SCHEDULE_RETRY.maximum_attempts:
                    raise
            await asyncio.sleep(delay)
            delay *= SCHEDULE_RETRY.backoff_coefficient
        raise AssertionError("unreachable")

    @activity.defn
    async def register_skills(self, request: RegisterManyInput) -> BulkRegistrationResult:
        """Register new skills in one activity, a few at a time: each item normalized, stored and given its
        schedule on its own, its store write undone if its schedule fails, its refusal reported by index.

        The activity heartbeats the items done; a retry (a worker that died) skips them."""
        assert self.schedules is not None, "bulk registration needs the schedule activities"
        done = {item.index: item for item in _heartbeat_items()}
        gate = asyncio.Semaphore(BULK_CONCURRENCY)
        # Items of the same name go in their order (the first one wins, the later ones are refused as
        # taken); asyncio's locks are first come, first served, and the items come in order.
        same_name: dict[str, asyncio.Lock] = {}

        async def one(offset: int, data: Any) -> None:
            index = request.first_index + offset
            if index in done:
                return
            key = str(data.get("name") or "").strip().lower() if isinstance(data, dict) else ""
            async with same_name.setdefault(key, asyncio.Lock()), gate:
                done[index] = await self._register_one(index, data, request.by)
            activity.heartbeat([item.model_dump(mode="json") for item in done.values()])

        await asyncio.gather(*(one(i, data) for i, data in enumerate(request.items)))
        return BulkRegistrationResult(items=sorted(done.values(), key=lambda item: item.index))

    async def _register_one(self, index: int, data: Any, by: str = "") -> ItemRegistration:
        assert self.schedules is not None
        name = str(data.get("name") or "") if isinstance(data, dict) else ""
        refused = ItemRegistration(index=index, name=name, ok=False)
        if not isinstance(data, dict):
            return refused.model_copy(update={"errors": [FieldError(field="item", message=(
                f"each item must be a mapping of a skill's fields, not {type(data).__name__}"))]})
        prepared = await asyncio.to_thread(self.prepare_skill, RegisterInput(data=data))
        if prepared.errors or prepared.normalized is None:
            return refused.model_copy(update={"errors": prepared.errors})
        notes = prepared.normalized.notes
        saved = await asyncio.to_thread(self.save_skill, SaveInput(normalized=prepared.normalized, by=by))
        info = activity.info()
        skill = saved.skill or await asyncio.to_thread(self._stored_by_a_lost_attempt, prepared.normalized.spec,
                                                       saved.errors, info.scheduled_time if info.attempt > 1 else None)
        if skill is None:
            return refused.model_copy(update={"errors": saved.errors, "notes": notes})
        try:
            synced = await self.schedules.create(skill)
        except Exception as e:  # compensate: nothing half-stored
            await asyncio.to_thread(self.undo_save, UndoSave(skill_id=skill.id))
            return refused.model_copy(update={"notes": notes, "errors": [FieldError(
                field="schedule", message=f"the schedule could not be created: {e}")]})
        return ItemRegistration(index=index, name=skill.name, ok=True, skill_id=skill.id,
                                schedule_id=synced.schedule_id, next_fire=synced.next_fire, notes=notes)

    def _stored_by_a_lost_attempt(self, spec: SkillSpec, errors: list[FieldError], since: datetime | None
                                  ) -> Skill | None:
        """The skill an earlier run of this same registration stored before its answer was lost: the name is
        taken by a skill of exactly this definition, stored since ``since`` (when the registration was first
        asked for; None: this is its first run). Without this, the retry refused its own skill as "already has a
        skill named"; its schedule is written again (idempotent). A bulk registration's retry, after the items
        its last delivered heartbeat listed (its worker died, or the server timed the heartbeat out on a loaded
        worker), since its activity was first scheduled; a RegisterSkill's local activity, run again with its
        workflow task after a worker died between the save and the task's completion, since its workflow
        started."""
        if since is None or [e.field for e in errors] != ["name"]:
            return None
        try:
            stored = self.store.skills.find_skill(spec.name, spec.agent_id)
        except SkillNotFoundError:
            return None
        if stored.created_at < since - CLOCK_SKEW or spec_digest(as_spec(stored)) != spec_digest(spec):
            return None
        return stored

    @activity.defn
    def set_skill_enabled(self, request: EnableInput) -> Skill:
        with as_application_errors():
            if request.enabled:
                self._refuse_untrusted_resume(request.skill_id)
            return self.store.skills.set_enabled(request.skill_id, request.enabled, request.reason, request.now,
                                                 by=request.by or BY_CLIENT)

    def _refuse_untrusted_resume(self, skill_id: int) -> None:
        """A resume is not a trust: a skill the sync (or an untrust) paused for want of its owner's trust
        is resumed only once what it reaches is trusted as its SKILL.md holds it now (``skills trust``
        resumes it itself)."""
        stored = self.store.skills.get_skill(skill_id)
        if not untrusted_reason(stored.disabled_reason):
            return
        found = file_skill(self.settings, stored.name) if stored.agent_id == self.settings.file_skills_agent else None
        if found is None or not trust_states(self.store, self.settings, [found])[0].runs:
            raise SkillValidationError.single("enabled", (
                f"skill '{stored.name}' is paused until its owner trusts what it runs and reaches: review it "
                f"(`skills show {stored.name}`), then run `skills trust {stored.name}`, which resumes it"))

    @activity.defn
    def set_skill_hook(self, request: HookInput) -> Skill:
        """Set, replace or (digest None) remove a skill's hook token digest."""
        with as_application_errors():
            return self.store.events.set_hook(request.skill_id, request.digest, request.now)

    @activity.defn
    def delete_skill(self, request: ChangeInput) -> Skill:
        with as_application_errors():
            skill = self.store.skills.find_skill(request.target.ref, request.target.agent_id)
            return self.store.skills.delete_skill(skill.id, by=request.by or BY_CLIENT)


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


CLOCK_SKEW = timedelta(seconds=5)
"""How far the server's clock (an activity's scheduled time) may be from the worker's (a skill's created_at)."""

BULK_CONCURRENCY = 16
"""Items of a bulk registration in flight at once: the store writes queue on one another, the
schedule creates overlap their round trips to the frontend."""


def _heartbeat_items() -> list[ItemRegistration]:
    """The items a previous attempt of this activity finished, from its last heartbeat."""
    details = activity.info().heartbeat_details
    if not details:
        return []
    return [ItemRegistration.model_validate(item) for item in details[0]]


def _without_llm(normalized: Normalized, settings: Settings) -> Normalized:
    """A scheduled Agent-tier skill on a worker with no LLM is stored disabled, not left to fail every fire."""
    spec = normalized.spec
    if settings.llm_configured or spec.tier != "agent" or not spec.is_scheduled or not spec.enabled:
        return normalized
    note = (f"stored disabled: no LLM is configured ({LLM_SETTINGS}); it enables itself once the worker "
            "has one")
    return normalized.model_copy(update={"spec": spec.model_copy(update={"enabled": False}),
                                         "notes": [*normalized.notes, note], "disabled_reason": NO_LLM})


async def _again(undo: Callable[[], Awaitable[None]]) -> None:
    """The undo of a save, retried as the store's local activities are (a retry of the whole registration
    would find its own save and refuse the name); its last failure raised, not retried."""
    delay = STORE_RETRY.initial_interval.total_seconds()
    for attempt in range(1, UNDO_ATTEMPTS + 1):
        try:
            return await undo()
        except Exception as e:
            if attempt == UNDO_ATTEMPTS:
                raise ApplicationError(f"a save whose schedule failed could not be undone: {e}",
                                       non_retryable=True) from e
        await asyncio.sleep(delay)
        delay *= STORE_RETRY.backoff_coefficient


UNDO_ATTEMPTS = 5


def _cause(error: Exception) -> str:
    """Why a schedule write failed, in the words the schedule activity's failure gives."""
    return error.message if isinstance(error, (ApplicationError, RPCError)) else str(error)


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


def _allowlists(settings: Settings) -> dict[str, dict[str, list[str]]]:
    """Where ``deliver_to`` may send: the owner's Telegram chats (``SKILLS_TELEGRAM_CHATS`` and the default
    chat), when any are set; the telegram server refuses any other chat again at each call."""
    chats = [*settings.telegram_chats, *([settings.default_chat_id] if settings.default_chat_id else [])]
    return {"telegram_send_message": {"chat_id": chats}} if chats else {}
