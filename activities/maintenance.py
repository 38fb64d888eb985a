"""What the engine checks for itself every round: skills waiting for their tools, one-shots whose
time passed beyond the catch-up window, runs that ended without recording it, and skills whose
fires are being skipped behind a run still going."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from temporalio import activity

from activities.ports import ToolNames
from adapters.engine_workflows import EngineWorkflows, RunUnknownError
from adapters.metrics import EngineMetrics
from adapters.store import Store
from config.settings import Settings
from skills.display import span
from skills.errors import SkillNotFoundError
from skills.messages.maintenance import ClosedRuns, MaintenanceScan, MissedOneShot, SkillBrief, StuckSkill
from skills.messages.manage import SkillFilter
from skills.messages.run import RunOutcome
from skills.run.deadline import RUN_MARGIN, RUN_TIMEOUT_CAP, run_timeout
from skills.spec.models import FAILURES, MISSED, MISSING_TOOLS, NO_LLM, REHEARSAL, RunRecord, Skill
from skills.when.calendar import fire_times
from skills.when.fires import held_behind, skipped_behind

STUCK_STATE = "stuck-run:{skill_id}"
"""The engine state that remembers, per skill, the run whose skipped fires were last counted (and noticed)."""

MAX_COUNTED_SKIPS = 1000
"""Fires counted behind one run at most: enough to say how stuck a skill is, cheap for any trigger."""


class MaintenanceActivities:
    def __init__(self, store: Store, settings: Settings, tools: ToolNames,
                 metrics: EngineMetrics | None = None, *, workflows: EngineWorkflows) -> None:
        self.store = store
        self.workflows = workflows
        self.settings = settings
        self.tools = tools
        self.metrics = metrics or EngineMetrics()

    @activity.defn
    def scan_skills(self) -> MaintenanceScan:
        available: set[str] | None = None  # read when a skill waits: a read may connect the MCP servers
        now = datetime.now(UTC)
        scan = MaintenanceScan()
        for skill in self.store.skills.list_skills(SkillFilter(enabled=False)):
            # Only a skill waiting for its tools or for an LLM comes back by itself: one the user disabled
            # stays disabled, and a one-shot is never re-enabled.
            needed = {*skill.required_tools, *(check.tool for check in skill.preflight)}
            waiting = skill.disabled_reason == MISSING_TOOLS or (
                skill.disabled_reason == NO_LLM and self.settings.llm_configured)
            if waiting and not skill.is_one_shot and available is None:
                available = set(self.tools.tool_names())
            if waiting and not skill.is_one_shot and needed <= (available or set()):
                scan.ready.append(_brief(skill))
        for skill in self.store.skills.list_skills(SkillFilter(enabled=True, trigger_type="cron")):
            at = skill.trigger_config.at if skill.trigger_config else None
            if at is not None and at + self.settings.catchup_window < now and not self.store.runs.has_scheduled_runs(skill.id):
                scan.missed.append(_brief(skill))
        return scan

    @activity.defn
    def end_skills(self) -> list[SkillBrief]:
        """The skills whose ``end_at`` has passed, recorded as ``ended`` (their schedules fire no more)."""
        return [_brief(skill) for skill in self.store.skills.end_skills(datetime.now(UTC))]

    @activity.defn
    def record_missed_one_shot(self, request: MissedOneShot) -> None:
        """A one-shot whose time passed while the engine was down for longer than the catch-up
        window: its fire is recorded as missed and the skill retired, as if it had fired."""
        try:
            skill = self.store.skills.get_skill(request.skill_id)
        except SkillNotFoundError:
            return  # deleted since the scan
        at = skill.trigger_config.at if skill.trigger_config else None
        if at is None:  # changed into something else since the scan: nothing was missed
            return
        self.store.runs.start_run(RunRecord(
            run_id=f"{request.workflow_id}-missed-{skill.id}", skill_id=skill.id, skill_name=skill.name,
            workflow_id=request.workflow_id, trigger="schedule", scheduled_at=at, started_at=at, finished_at=at,
            status="missed", summary="missed: the engine was down longer than the catch-up window", tier=skill.tier,
        ))
        self.store.skills.retire_skill(skill.id, MISSED)

    @activity.defn
    async def close_stale_runs(self) -> ClosedRuns:
        """Close as ``error`` each run left ``running`` past its deadline (the execution timeout of its
        workflow, ``skills.run.deadline``) whose workflow is no longer running: it ended without recording it
        (terminated, timed out, failed on a store outage longer than its retries). Counted and notified
        like any failed run; a row the run itself closed meanwhile is left alone.

        The deadline is reckoned from the skill as it is now, which may be shorter than the one the run
        was started with (an update since): so a row past it is only a candidate, closed once Temporal
        says its workflow is not running. Only candidates are described: a round stays cheap."""
        now = datetime.now(UTC)
        closed = ClosedRuns()
        for run, deadline in await asyncio.to_thread(self._past_deadline, now):
            if await self._still_going(run):
                continue
            outcome = await asyncio.to_thread(self._close, run, deadline, now)
            if outcome is not None:
                closed.outcomes.append(outcome)
        return closed

    def _past_deadline(self, now: datetime) -> list[tuple[RunRecord, timedelta]]:
        past = []
        for run in self.store.runs.running_runs(started_before=now - RUN_MARGIN):
            try:
                deadline = run_timeout(self.store.skills.get_skill(run.skill_id), self.settings.run_limits)
            except SkillNotFoundError:
                deadline = RUN_TIMEOUT_CAP
            if run.started_at + deadline <= now:
                past.append((run, deadline))
        return past

    async def _still_going(self, run: RunRecord) -> bool:
        """Whether the run's workflow chain (its first run is the row's run id; an Agent loop continues as
        new) is still running. An answer Temporal cannot give now leaves the row for the next round."""
        try:
            return await self.workflows.still_running(run.workflow_id, run.run_id)
        except RunUnknownError as e:
            activity.logger.warning("run %s left open this round: %s", run.run_id, e)
            return True

    def _close(self, run: RunRecord, deadline: timedelta, now: datetime) -> RunOutcome | None:
        failed = run.model_copy(update={
            "status": "error", "finished_at": now,
            "summary": f"no end recorded within {span(deadline)}: the run's workflow ended without "
                       "recording it"})
        if run.trigger == REHEARSAL:
            # Recorded as it ended, and nothing more: a rehearsal counts toward nothing and tells no one.
            self.store.runs.record_rehearsal(failed)
            activity.logger.warning("rehearsal run %s closed: %s", run.run_id, failed.summary)
            return None
        outcome = self.store.runs.record_outcome(failed, self.settings.backoff, if_running=True)
        if outcome is None:
            return None
        activity.logger.warning("run %s of skill %s closed: %s", run.run_id, run.skill_id, failed.summary)
        self.metrics.run_recorded(outcome.run, agent=outcome.skill.agent_id if outcome.skill else None,
                                  disabled=outcome.disabled if outcome.disabled == FAILURES else None)
        if outcome.skill is not None:
            outcome.skill = outcome.skill.without_instructions()
        return outcome

    @activity.defn
    def find_stuck_skills(self) -> list[StuckSkill]:
        """Skills whose scheduled fires are being skipped behind a run still going, ``overlap_notice_fires``
        times or more: each is returned once per such run, with its notice. What counts as skipped follows
        the skill's overlap policy (``skills.when.fires.skipped_behind``): with ``allow`` nothing is, with
        ``buffer_one`` the fire held to start next is not. The gauge ``skills_stuck`` says how many are stuck
        now; ``skills_overlap_skips`` counts the fires."""
        now = datetime.now(UTC)
        found: list[StuckSkill] = []
        stuck = 0
        # Not the runs waiting for the owner (never stuck, and they may wait days): asked for, they could
        # fill the batch and hide the running ones behind them.
        for run in _holding(self.store.runs.running_runs(started_before=now, statuses=("running",))):
            try:
                skill = self.store.skills.get_skill(run.skill_id)
            except SkillNotFoundError:
                continue
            trigger = skill.trigger_config
            if not skill.enabled or trigger is None or trigger.kind not in ("cron", "interval"):
                continue  # a paused schedule skips nothing; a one-shot has no later fire
            if skipped_behind(skill.overlap, skill.catch_up, MAX_COUNTED_SKIPS) == 0:
                continue  # its schedule skips no fire, however long a run takes (the state is left alone)
            # Not cut by max_runs: a fire skipped behind a running run takes none of the schedule's actions.
            came = 0
            for at, reason in fire_times(trigger, anchor=skill.created_at, now=run.scheduled_at,
                                         skip_holidays=skill.skip_holidays, business_days_only=skill.business_days_only,
                                         end_at=skill.end_at):
                if at > now or came >= MAX_COUNTED_SKIPS:
                    break
                came += reason is None
            skipped = skipped_behind(skill.overlap, skill.catch_up, came)
            key = STUCK_STATE.format(skill_id=skill.id)
            seen = self.store.conversations.get_state(key) or {}
            counted = seen.get("skipped", 0) if seen.get("run_id") == run.run_id else 0
            if skipped > counted:
                self.metrics.overlap_skips(skipped - counted)
            if skipped < self.settings.overlap_notice_fires:
                if skipped > counted:
                    self.store.conversations.set_state(key, {**seen, "run_id": run.run_id, "skipped": skipped}, now)
                continue
            stuck += 1
            noticed = seen.get("run_id") == run.run_id and seen.get("noticed", False)
            self.store.conversations.set_state(key, {"run_id": run.run_id, "skipped": skipped, "noticed": True}, now)
            if noticed:
                continue
            more = "+" if came >= MAX_COUNTED_SKIPS else ""
            held = held_behind(skill.overlap, skill.catch_up, came)
            waits = f" (and {held} waits to start after it)" if held else ""
            found.append(StuckSkill(skill=_brief(skill), run_id=run.run_id, skipped=skipped, message=(
                f"⏳ {skill.name}: its run started {span(now - run.started_at)} ago is still going, and "
                f"{skipped}{more} scheduled fire{'s' if skipped != 1 else ''} since were skipped behind it{waits}. "
                f"Its workflow: {run.workflow_id} (`temporal workflow show --workflow-id {run.workflow_id}`).")))
        self.metrics.stuck_skills(stuck)
        return found


def _holding(runs: list[RunRecord]) -> list[RunRecord]:
    """The run that holds each skill's schedule: its newest scheduled fire still going. A manual or event run
    does not hold the schedule back; a run waiting for the owner's approval does, but it is not stuck: it
    waits for an answer the owner was asked for. One run a skill, so the per-skill record of what was counted
    and noticed stays with it (two runs at once, after an ``allow``, made it flip and notice each again)."""
    newest: dict[int, RunRecord] = {}
    for run in runs:
        if run.trigger != "schedule" or run.scheduled_at is None or run.status == "waiting":
            continue
        held = newest.get(run.skill_id)
        if held is None or (held.scheduled_at is not None and run.scheduled_at > held.scheduled_at):
            newest[run.skill_id] = run
    return list(newest.values())


def _brief(skill: Skill) -> SkillBrief:
    return SkillBrief(id=skill.id, name=skill.name, schedule_id=skill.schedule_id)
