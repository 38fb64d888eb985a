"""Run bookkeeping: open a run row when a fire starts, close it when it ends."""

from __future__ import annotations

from temporalio import activity

from activities.store import Store
from skills.errors import SkillNotFoundError
from skills.messages import BeginRun, RunStart
from skills.models import RunRecord
from skills.settings import Settings


class RunActivities:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    @activity.defn(name="begin_run")
    def begin(self, request: BeginRun) -> RunStart:
        """Load the skill as it is now and open its run row (idempotent on the run id)."""
        try:
            skill = self.store.get_skill(request.skill_id)
        except SkillNotFoundError:
            # The skill was deleted after this fire was scheduled: nothing to run or record.
            activity.logger.warning("skill %s no longer exists; fire ignored", request.skill_id)
            return RunStart(skill=None, run=None)
        run = self.store.start_run(
            RunRecord(
                run_id=request.run_id,
                skill_id=skill.id,
                skill_name=skill.name,
                workflow_id=request.workflow_id,
                trigger=request.trigger,
                scheduled_at=request.scheduled_at,
                started_at=request.started_at,
                tier=skill.tier,
            )
        )
        return RunStart(skill=skill, run=run, tool_timeout_seconds=self.settings.tool_call_timeout.total_seconds())

    @activity.defn(name="finish_run")
    def finish(self, run: RunRecord) -> RunRecord:
        return self.store.finish_run(run)
