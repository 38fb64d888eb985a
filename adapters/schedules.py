"""Each skill's Temporal Schedule, built whole from the stored skill (its spec from
``adapters.schedule_spec``, its action, policy and state), and the engine's own schedules
(the maintenance and sync rounds).

A schedule is always rebuilt from the stored skill, never patched field by field, so writing it
again is always safe (``activities.schedules`` writes it).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

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
from temporalio.common import TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from adapters.schedule_spec import schedule_spec
from client import schedules
from config.settings import Settings
from search_attributes import search_attributes
from skills.messages.run import SkillRunInput
from skills.naming import (
    MAINTENANCE,
    MAINTENANCE_JOB,
    SKILL_RUN,
    SYNC_JOB,
    SYNC_SKILL_FILES,
    engine_job_id,
    run_summary,
)
from skills.run.deadline import run_timeout
from skills.skillmd.sync import SyncInput
from skills.spec.models import BY_USER, FAILURES, Skill
from skills.when.calendar import skip_window, skipped_days, skips
from skills.when.spread import skill_spread


def build_schedule(skill: Skill, settings: Settings, skip_days: Mapping[date, str] | None = None) -> Schedule:
    """The whole schedule of a stored skill: when, what it starts, and whether it is paused.

    ``skip_days``: the days it skips (``skip_list``), when the skill skips any."""
    assert skill.trigger_config is not None and skill.schedule_id is not None
    one_shot = skill.trigger_config.kind == "at"
    remaining = 1 if one_shot else remaining_runs(skill)
    return Schedule(
        action=ScheduleActionStartWorkflow(
            SKILL_RUN,
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


# --- the schedule's shape (docs/skills.md#schedule-shape) ------------------------------------------

OVERLAP_POLICIES = {"skip": ScheduleOverlapPolicy.SKIP, "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,
                    "allow": ScheduleOverlapPolicy.ALLOW_ALL}
NO_CATCH_UP = timedelta(seconds=10)
"""The least catch-up window Temporal takes: a fire more than this late (the server was down) is dropped."""


def shaped_spec(skill: Skill, skip_days: Mapping[date, str] | None = None) -> ScheduleSpec:
    """The trigger's spec, with the days it skips, the skill's end and (for a recurring schedule) its spread:
    its own jitter or the default (``skills.when.spread``)."""
    assert skill.trigger_config is not None
    spec = schedule_spec(skill.trigger_config, anchor=skill.created_at, skip_days=skip_days)
    spec.end_at = skill.end_at
    spread = skill_spread(skill)
    if spread:
        spec.jitter = timedelta(seconds=spread)
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


def engine_schedules(settings: Settings) -> dict[str, Schedule]:
    """The engine's own rounds, each on its own schedule, by schedule id."""
    maintenance = engine_job_id(settings.task_queue, MAINTENANCE_JOB)
    sync = engine_job_id(settings.task_queue, SYNC_JOB)
    return {
        maintenance: _interval_schedule(
            maintenance, MAINTENANCE, None, settings.maintenance_interval, settings,
            "maintenance: auto-enable skills whose tools came back, retire missed one-shots"),
        sync: _interval_schedule(
            sync, SYNC_SKILL_FILES, SyncInput(), settings.skill_sync_interval, settings,
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


class ScheduleWriter:
    """The engine's writes to Temporal's Schedules, each written once: a schedule put (created, or brought to the
    one given when it exists), a spec set, a delete, and the next fire read back."""

    def __init__(self, client: Client) -> None:
        self.client = client

    @property
    def namespace(self) -> str:
        return self.client.namespace

    async def put(self, schedule_id: str, schedule: Schedule, *, memo: Mapping[str, Any] | None = None,
                  search_attributes: TypedSearchAttributes | None = None, keep_state: bool = False,
                  fire_on_create: bool = False) -> None:
        """Create the schedule, or update the one under ``schedule_id`` to ``schedule`` (a retry after a create that
        did succeed, a restart): the memo is written at creation only (Temporal updates no memo). ``keep_state``:
        an existing schedule keeps its state (paused, its note), so what an operator paused stays paused.
        ``fire_on_create``: a schedule created now also starts its action at once (a one-shot already due); one
        that exists is only updated (its create made that fire)."""
        try:
            await self.client.create_schedule(schedule_id, schedule, memo=memo, search_attributes=search_attributes,
                                              trigger_immediately=fire_on_create)
            return
        except ScheduleAlreadyRunningError:
            pass

        def update(current: ScheduleUpdateInput) -> ScheduleUpdate:
            if keep_state:
                schedule.state = current.description.schedule.state
            return ScheduleUpdate(schedule=schedule, search_attributes=search_attributes)

        await self.client.get_schedule_handle(schedule_id).update(update)

    async def set_spec(self, schedule_id: str, spec: ScheduleSpec) -> bool:
        """Replace the schedule's spec alone (its state stays as it is); False when there is no such schedule."""

        def new_spec(current: ScheduleUpdateInput) -> ScheduleUpdate:
            current.description.schedule.spec = spec
            return ScheduleUpdate(schedule=current.description.schedule)

        try:
            await self.client.get_schedule_handle(schedule_id).update(new_spec)
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:
                raise
            return False
        return True

    async def delete(self, schedule_id: str) -> None:
        """Delete the schedule; one already gone is no error."""
        try:
            await self.client.get_schedule_handle(schedule_id).delete()
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:
                raise

    async def next_fire(self, schedule_id: str) -> datetime | None:
        """When the schedule fires next, as Temporal computes it (``client.schedules.next_fire``)."""
        return await schedules.next_fire(self.client, schedule_id)


async def ensure_engine_schedules(client: Client, settings: Settings) -> None:
    """Create the engine's schedules, or bring them to the current settings; safe on every start.

    An existing schedule keeps its state, so a round an operator paused stays paused
    across worker restarts.
    """
    writer = ScheduleWriter(client)
    for schedule_id, schedule in engine_schedules(settings).items():
        await writer.put(schedule_id, schedule, keep_state=True)
