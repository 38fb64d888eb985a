"""SyncSkillFiles: bring the skills registered from SKILL.md files in line with the files.

One activity scans the folders and decides; then one activity per change runs the
registration workflow any client would run (RegisterSkill or ChangeSkill), so a
file skill is normalized, validated, stored and scheduled exactly like the others.
Changes are applied one after the other, so `temporal workflow show` reads as a
list: scan, then "create drink-water", "disable old-report"... A change that fails
is reported in the result and the others still go through.
"""

from __future__ import annotations

from temporalio import workflow

from skills.naming import SYNC_SKILL_FILES

with workflow.unsafe.imports_passed_through():
    from activities.skillfiles import SkillFileActivities
    from skills.skillmd.sync import SyncInput, SyncResult
    from workflows.options import FAIL_ON_BUG, FILE_SCAN, REGISTRATION


@workflow.defn(name=SYNC_SKILL_FILES, failure_exception_types=FAIL_ON_BUG)
class SyncSkillFiles:
    @workflow.run
    async def run(self, request: SyncInput) -> SyncResult:
        plan = await workflow.execute_activity_method(SkillFileActivities.scan_skill_files, request, **FILE_SCAN)
        result = SyncResult(refused=plan.refused, unchanged=plan.unchanged, shadowed=plan.shadowed,
                            dry_run=request.dry_run)
        if request.dry_run:
            result.planned = plan.changes
            return result
        for change in plan.changes:
            done = await workflow.execute_activity_method(
                SkillFileActivities.apply_skill_file, change, summary=f"{change.action} {change.name}", **REGISTRATION
            )
            result.record(done)
        workflow.logger.info(
            "synced file skills: %d created, %d updated, %d disabled, %d refused, %d unchanged",
            len(result.created), len(result.updated), len(result.disabled), len(result.refused),
            len(result.unchanged),
        )
        return result
