"""What the engine checks for itself every minute: skills waiting for their tools, one-shots
whose time passed beyond the catch-up window."""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import UTC, datetime

from temporalio import activity

from activities.store import Store
from config.settings import Settings
from skills.errors import SkillNotFoundError
from skills.messages import MaintenanceScan, MissedOneShot, SkillBrief, SkillFilter
from skills.models import MISSED, MISSING_TOOLS, NO_LLM, RunRecord, Skill


class MaintenanceActivities:
    def __init__(self, store: Store, settings: Settings, tool_names: Callable[[], Collection[str]]) -> None:
        self.store = store
        self.settings = settings
        self.tool_names = tool_names

    @activity.defn(name="scan_skills")
    def scan(self) -> MaintenanceScan:
        available = set(self.tool_names())
        now = datetime.now(UTC)
        scan = MaintenanceScan()
        for skill in self.store.list_skills(SkillFilter(enabled=False)):
            # Only a skill waiting for its tools or for an LLM comes back by itself: one the user disabled
            # stays disabled, and a one-shot is never re-enabled.
            needed = {*skill.required_tools, *(check.tool for check in skill.preflight)}
            waiting = skill.disabled_reason == MISSING_TOOLS or (
                skill.disabled_reason == NO_LLM and self.settings.llm_configured)
            if waiting and not skill.is_one_shot and needed <= available:
                scan.ready.append(_brief(skill))
        for skill in self.store.list_skills(SkillFilter(enabled=True, trigger_type="cron")):
            at = skill.trigger_config.at if skill.trigger_config else None
            if at is not None and at + self.settings.catchup_window < now and not self.store.has_scheduled_runs(skill.id):
                scan.missed.append(_brief(skill))
        return scan

    @activity.defn(name="record_missed_one_shot")
    def record_missed(self, request: MissedOneShot) -> None:
        """A one-shot whose time passed while the engine was down for longer than the catch-up
        window: its fire is recorded as missed and the skill retired, as if it had fired."""
        try:
            skill = self.store.get_skill(request.skill_id)
        except SkillNotFoundError:
            return  # deleted since the scan
        at = skill.trigger_config.at if skill.trigger_config else None
        if at is None:  # changed into something else since the scan: nothing was missed
            return
        self.store.start_run(RunRecord(
            run_id=f"{request.workflow_id}-missed-{skill.id}", skill_id=skill.id, skill_name=skill.name,
            workflow_id=request.workflow_id, trigger="schedule", scheduled_at=at, started_at=at, finished_at=at,
            status="missed", summary="missed: the engine was down longer than the catch-up window", tier=skill.tier,
        ))
        self.store.retire_skill(skill.id, MISSED)


def _brief(skill: Skill) -> SkillBrief:
    return SkillBrief(id=skill.id, name=skill.name, schedule_id=skill.schedule_id)
