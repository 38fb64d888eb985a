"""Schedule activities: each skill's Temporal Schedule follows the stored skill.

The store is the source of truth; a schedule is always rebuilt from the stored
skill, never patched field by field, so calling `sync` again is always safe.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from temporalio import activity
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.service import RPCError, RPCStatusCode

from activities.failures import application_error
from activities.schedule_spec import schedule_spec
from activities.store import Store
from config.settings import Settings
from skills.deadline import run_timeout
from skills.errors import NamespaceSetupError, SkillNotFoundError
from skills.messages import ScheduleSync, ScheduleSynced, SkillRunInput
from skills.models import BY_USER, FAILURES, Skill
from skills.naming import SEARCH_ATTRIBUTES, engine_job_id, run_summary, search_attributes
from skills.skillmd.sync import SYNC_JOB, SYNC_WORKFLOW, SyncInput
from skills.triggers import trigger_next_times

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
            # A run always ends: past its deadline Temporal ends it, and Maintenance closes its row.
            execution_timeout=run_timeout(skill, settings.run_limits),
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
    if skill.disabled_reason == FAILURES:
        return (f"disabled: {FAILURES} ({skill.consecutive_failures} in a row); "
                f"last error: {(skill.last_error or '')[:300]}")
    return f"disabled: {skill.disabled_reason or BY_USER}"


MAINTENANCE_WORKFLOW = "Maintenance"


def engine_schedules(settings: Settings) -> dict[str, Schedule]:
    """The engine's own rounds, each on its own schedule, by schedule id."""
    maintenance = engine_job_id(settings.task_queue, "maintenance")
    sync = engine_job_id(settings.task_queue, SYNC_JOB)
    return {
        maintenance: _interval_schedule(
            maintenance, MAINTENANCE_WORKFLOW, None, settings.maintenance_interval, settings,
            "maintenance: auto-enable skills whose tools came back, retire missed one-shots"),
        sync: _interval_schedule(
            sync, SYNC_WORKFLOW, SyncInput(), settings.skill_sync_interval, settings,
            "sync the skills of SKILL.md files that carry a schedule"),
    }


def _interval_schedule(schedule_id: str, workflow: str, arg: object, every: timedelta, settings: Settings,
                       summary: str) -> Schedule:
    """An engine job that runs every ``every`` (a maintenance or sync round)."""
    args = [] if arg is None else [arg]
    return Schedule(
        action=ScheduleActionStartWorkflow(workflow, args=args, id=schedule_id, task_queue=settings.task_queue,
                                           static_summary=summary),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        # A round that finds the previous one still running, or that was missed while the
        # server was down, is not worth catching up: the next one sees the same state.
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=every),
    )


async def ensure_engine_schedules(client: Client, settings: Settings) -> None:
    """Create the engine's schedules, or bring them to the current settings; safe on every start.

    An existing schedule keeps its state, so a round an operator paused stays paused
    across worker restarts.
    """
    for schedule_id, schedule in engine_schedules(settings).items():
        try:
            await client.create_schedule(schedule_id, schedule)
            continue
        except ScheduleAlreadyRunningError:
            pass

        def keep_state(current: ScheduleUpdateInput, schedule: Schedule = schedule) -> ScheduleUpdate:
            schedule.state = current.description.schedule.state
            return ScheduleUpdate(schedule=schedule)

        await client.get_schedule_handle(schedule_id).update(keep_state)


class ScheduleActivities:
    def __init__(self, client: Client, settings: Settings, store: Store) -> None:
        self.client = client
        self.settings = settings
        self.store = store

    @activity.defn(name="sync_schedule")
    async def sync(self, request: ScheduleSync) -> ScheduleSynced:
        """Create, replace, update or remove the skill's schedule so it matches the store."""
        previous = request.previous
        try:
            skill: Skill | None = await asyncio.to_thread(self.store.get_skill, request.skill_id)
        except SkillNotFoundError:
            skill = None  # deleted since: its schedule goes too
        old_id = previous.schedule_id if previous else None
        if old_id and (skill is None or old_id != skill.schedule_id):
            await self._delete(old_id)
        if skill is None or skill.schedule_id is None:
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

    async def create(self, skill: Skill) -> ScheduleSynced:
        """The schedule of a skill just stored (a bulk registration's item): created from the skill in hand,
        with no store read, and its next fire computed from the trigger rather than asked of the server,
        so the create is the only server call."""
        if skill.schedule_id is None or skill.trigger_config is None:
            return ScheduleSynced()
        await self._create_or_update(skill, build_schedule(skill, self.settings))
        upcoming = trigger_next_times(skill.trigger_config, anchor=skill.created_at, after=datetime.now(UTC),
                                      count=1) if skill.enabled else []
        return ScheduleSynced(schedule_id=skill.schedule_id, next_fire=upcoming[0] if upcoming else None)

    @activity.defn(name="delete_schedule")
    async def delete(self, schedule_id: str) -> None:
        await self._delete(schedule_id)

    async def next_fire(self, schedule_id: str) -> datetime | None:
        from client import schedules

        return await schedules.next_fire(self.client, schedule_id)

    async def _create_or_update(self, skill: Skill, schedule: Schedule) -> None:
        try:
            await self._write(skill, schedule)
        except RPCError as e:
            if e.status == RPCStatusCode.INVALID_ARGUMENT and "search attribute" in e.message:
                raise application_error(NamespaceSetupError(
                    f"Temporal namespace '{self.client.namespace}' lacks the engine's search attributes "
                    f"({e.message}): run `skills setup` against it (on Temporal Cloud, add "
                    f"{', '.join(f'{name}={kind}' for name, kind in SEARCH_ATTRIBUTES.items())} in the UI or with tcld; "
                    "see docs/deploy.md)")) from e
            raise

    async def _write(self, skill: Skill, schedule: Schedule) -> None:
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
