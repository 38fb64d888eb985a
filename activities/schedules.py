"""Schedule activities: each skill's Temporal Schedule follows the stored skill.

The store is the source of truth; a schedule is always rebuilt from the stored
skill, never patched field by field, so calling `sync` again is always safe.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import activity
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleState,
    ScheduleUpdate,
)
from temporalio.service import RPCError, RPCStatusCode

from skills.messages import ScheduleSync, ScheduleSynced, SkillRunInput
from skills.models import Skill
from skills.naming import run_summary, search_attributes
from skills.settings import Settings
from skills.triggers import schedule_spec

SKILL_RUN_WORKFLOW = "SkillRun"


def build_schedule(skill: Skill, settings: Settings) -> Schedule:
    """The whole schedule of a stored skill: when, what it starts, and whether it is paused."""
    assert skill.trigger_config is not None and skill.schedule_id is not None
    one_shot = skill.trigger_config.kind == "at"
    return Schedule(
        action=ScheduleActionStartWorkflow(
            SKILL_RUN_WORKFLOW,
            SkillRunInput(skill_id=skill.id),
            id=skill.schedule_id,
            task_queue=settings.task_queue,
            typed_search_attributes=search_attributes(skill),
            static_summary=run_summary(skill),
        ),
        spec=schedule_spec(skill.trigger_config, anchor=skill.created_at),
        policy=SchedulePolicy(
            # A fire that finds the previous one still running is skipped, not queued.
            overlap=ScheduleOverlapPolicy.SKIP,
            catchup_window=settings.catchup_window,
        ),
        state=ScheduleState(
            paused=not skill.enabled,
            note=pause_note(skill),
            limited_actions=one_shot,
            remaining_actions=1 if one_shot else 0,
        ),
    )


def pause_note(skill: Skill) -> str:
    if skill.enabled:
        return f"skill {skill.id} '{skill.name}' ({skill.agent_id})"
    return f"disabled: {skill.disabled_reason or 'by user'}"


class ScheduleActivities:
    def __init__(self, client: Client, settings: Settings) -> None:
        self.client = client
        self.settings = settings

    @activity.defn(name="sync_schedule")
    async def sync(self, request: ScheduleSync) -> ScheduleSynced:
        """Create, replace, update or remove the skill's schedule so it matches the store."""
        skill, previous = request.skill, request.previous
        old_id = previous.schedule_id if previous else None
        if old_id and old_id != skill.schedule_id:
            await self._delete(old_id)
        if skill.schedule_id is None:
            return ScheduleSynced()
        schedule = build_schedule(skill, self.settings)
        # The schedule memo keeps the trigger as written, and a memo can only be set at
        # creation: a new trigger means a new schedule under the same id.
        trigger_changed = previous is not None and old_id == skill.schedule_id and (
            previous.trigger_config != skill.trigger_config or previous.trigger_as_written != skill.trigger_as_written
        )
        if trigger_changed:
            await self._delete(skill.schedule_id)
        await self._create_or_update(skill, schedule)
        return ScheduleSynced(schedule_id=skill.schedule_id, next_fire=await self.next_fire(skill.schedule_id))

    @activity.defn(name="delete_schedule")
    async def delete(self, schedule_id: str) -> None:
        await self._delete(schedule_id)

    async def next_fire(self, schedule_id: str) -> datetime | None:
        description = await self.client.get_schedule_handle(schedule_id).describe()
        if description.schedule.state.paused:
            return None
        times = description.info.next_action_times
        return times[0] if times else None

    async def _create_or_update(self, skill: Skill, schedule: Schedule) -> None:
        assert skill.schedule_id is not None
        attributes = search_attributes(skill)
        try:
            await self.client.create_schedule(
                skill.schedule_id,
                schedule,
                memo={
                    "skill_id": skill.id,
                    "agent_id": skill.agent_id,
                    "trigger": skill.trigger_as_written or skill.trigger_config.model_dump(mode="json",
                                                                                           exclude_none=True),
                },
                search_attributes=attributes,
            )
        except ScheduleAlreadyRunningError:
            # A retry of this activity after a create that did succeed.
            await self.client.get_schedule_handle(skill.schedule_id).update(
                lambda _: ScheduleUpdate(schedule=schedule, search_attributes=attributes)
            )
        activity.logger.info("schedule %s is in sync with skill %s", skill.schedule_id, skill.id)

    async def _delete(self, schedule_id: str) -> None:
        try:
            await self.client.get_schedule_handle(schedule_id).delete()
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:
                raise
