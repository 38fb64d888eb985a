"""Schedule activities: each skill's Temporal Schedule follows the stored skill.

The store is the source of truth; a schedule is always rebuilt from the stored
skill, never patched field by field, so calling `sync` again is always safe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta

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
from skills.calendar import SKIP_RENEW_BEFORE, skip_window, skipped_days, skips, upcoming
from skills.deadline import run_timeout
from skills.errors import NamespaceSetupError, SkillNotFoundError
from skills.messages import ScheduleSync, ScheduleSynced, SkillRunInput, SkipRenewal
from skills.models import BY_USER, FAILURES, Skill
from skills.naming import SEARCH_ATTRIBUTES, engine_job_id, run_summary, search_attributes
from skills.skillmd.sync import SYNC_JOB, SYNC_WORKFLOW, SyncInput

SKILL_RUN_WORKFLOW = "SkillRun"


def build_schedule(skill: Skill, settings: Settings, skip_days: Mapping[date, str] | None = None) -> Schedule:
    """The whole schedule of a stored skill: when, what it starts, and whether it is paused.

    ``skip_days``: the days it skips (``skip_list``), when the skill skips any."""
    assert skill.trigger_config is not None and skill.schedule_id is not None
    one_shot = skill.trigger_config.kind == "at"
    remaining = 1 if one_shot else remaining_runs(skill)
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
        spec=shaped_spec(skill, skip_days),
        policy=schedule_policy(skill, settings.catchup_window),
        state=ScheduleState(
            # No runs left: paused (Temporal takes no limit of zero actions).
            paused=not skill.enabled or remaining == 0,
            note=pause_note(skill),
            limited_actions=bool(remaining),
            remaining_actions=remaining or 0,
        ),
    )


# --- the schedule's shape (issue 22; docs/skills.md#schedule-shape) --------------------------------

OVERLAP_POLICIES = {"skip": ScheduleOverlapPolicy.SKIP, "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,
                    "allow": ScheduleOverlapPolicy.ALLOW_ALL}
NO_CATCH_UP = timedelta(seconds=10)
"""The least catch-up window Temporal takes: a fire more than this late (the server was down) is dropped."""


def shaped_spec(skill: Skill, skip_days: Mapping[date, str] | None = None) -> ScheduleSpec:
    """The trigger's spec, with the days it skips, the skill's end and (for a recurring schedule) its jitter."""
    assert skill.trigger_config is not None
    spec = schedule_spec(skill.trigger_config, anchor=skill.created_at, skip_days=skip_days)
    spec.end_at = skill.end_at
    if skill.jitter_seconds and skill.trigger_config.kind != "at":
        spec.jitter = timedelta(seconds=skill.jitter_seconds)
    return spec


def schedule_policy(skill: Skill, catchup_window: timedelta) -> SchedulePolicy:
    """Overlap and catch-up. Temporal catches up by starting each missed fire in the window through the
    overlap policy: with ``skip`` the first one runs and the rest find it running (one run stands for
    them all: ``once``); ``all`` queues them (BUFFER_ALL), so each runs, one after another."""
    overlap = ScheduleOverlapPolicy.BUFFER_ALL if skill.catch_up == "all" else OVERLAP_POLICIES[skill.overlap]
    return SchedulePolicy(overlap=overlap, catchup_window=NO_CATCH_UP if skill.catch_up == "none" else catchup_window)


def remaining_runs(skill: Skill) -> int | None:
    """The runs a skill with ``max_runs`` has left (Temporal's remaining actions); None: no limit."""
    return None if skill.max_runs is None else max(0, skill.max_runs - skill.scheduled_runs)
def skip_list(skill: Skill, now: datetime) -> tuple[dict[date, str], datetime | None]:
    """The days the skill's schedule skips from ``now`` to ``SKIP_HORIZON`` ahead, and when that list runs
    out (None: the skill skips no day)."""
    if not skips(skill) or skill.trigger_config is None or not skill.is_scheduled:
        return {}, None
    first, last, until = skip_window(skill.trigger_config, now)
    return skipped_days(skill.skip_holidays, skill.business_days_only, first, last), until


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
        days, until = skip_list(skill, datetime.now(UTC))
        schedule = build_schedule(skill, self.settings, days)
        # The schedule memo keeps the trigger as written, and a memo can only be set at
        # creation: a new trigger means a new schedule under the same id.
        trigger_changed = previous is not None and old_id == skill.schedule_id and (
            previous.trigger_config != skill.trigger_config or previous.trigger_as_written != skill.trigger_as_written
        )
        if trigger_changed:
            await self._delete(skill.schedule_id)
        await self._create_or_update(skill, schedule)
        await self._record_skips(skill, until)
        return ScheduleSynced(schedule_id=skill.schedule_id, next_fire=await self.next_fire(skill.schedule_id))

    async def create(self, skill: Skill) -> ScheduleSynced:
        """The schedule of a skill just stored (a bulk registration's item): created from the skill in hand,
        with no store read, and its next fire computed from the trigger rather than asked of the server,
        so the create is the only server call."""
        if skill.schedule_id is None or skill.trigger_config is None:
            return ScheduleSynced()
        now = datetime.now(UTC)
        days, until = skip_list(skill, now)
        await self._create_or_update(skill, build_schedule(skill, self.settings, days))
        await self._record_skips(skill, until)
        coming = [fire.at for fire in upcoming(skill, anchor=skill.created_at, now=now, count=1)
                  if fire.skipped is None] if skill.enabled else []
        return ScheduleSynced(schedule_id=skill.schedule_id, next_fire=coming[0] if coming else None)

    # --- business days and holidays ----------------------------------------------------------

    @activity.defn(name="renew_skip_lists")
    async def renew_skips(self, request: SkipRenewal) -> list[str]:
        """Rewrite the skip list of each schedule whose list runs out within ``SKIP_RENEW_BEFORE`` (at most
        ``request.limit`` of them, the soonest first: a bounded batch each Maintenance round); only the
        spec changes, so a schedule's state (paused, its note) stays as it is. The names renewed."""
        now = datetime.now(UTC)
        due = await asyncio.to_thread(self.store.skips_running_out, now + SKIP_RENEW_BEFORE, request.limit)
        renewed = []
        for listed in due:
            activity.heartbeat(listed.id)
            try:
                # Read again just before the write: a change since the query is synced with its own spec.
                skill = await asyncio.to_thread(self.store.get_skill, listed.id)
            except SkillNotFoundError:
                continue
            if skill.schedule_id is None or not skill.enabled:
                continue
            days, until = skip_list(skill, now)
            spec = build_schedule(skill, self.settings, days).spec

            def new_spec(current: ScheduleUpdateInput, spec: ScheduleSpec = spec) -> ScheduleUpdate:
                current.description.schedule.spec = spec
                return ScheduleUpdate(schedule=current.description.schedule)

            try:
                await self.client.get_schedule_handle(skill.schedule_id).update(new_spec)
            except RPCError as e:
                if e.status != RPCStatusCode.NOT_FOUND:
                    raise
                # No schedule (deleted behind the engine's back): the sync that recreates it writes the list.
                activity.logger.warning("skip list of skill %s not renewed: schedule %s not found", skill.id,
                                        skill.schedule_id)
                continue
            await self._record_skips(skill, until)
            renewed.append(skill.name)
        return renewed

    async def _record_skips(self, skill: Skill, until: datetime | None) -> None:
        if until != skill.skips_until:
            await asyncio.to_thread(self.store.set_skips_until, skill.id, until)

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
