"""Maintenance: the engine's own rounds, on its own schedule (every minute by default).

- Auto-enable: a skill registered disabled because its tools were missing is
  enabled, and its schedule resumed, once every tool it needs is in the catalog.
- Missed one-shots: a one-shot whose time passed while the engine was down for
  longer than the catch-up window never fires; its fire is recorded as missed and
  the skill retired.
- Runs that never ended: a run row left ``running`` past its deadline (its workflow was
  terminated, timed out, or failed on a store outage longer than its retries) is closed as
  ``error`` with the reason, counted for backoff once, and notified like any failed run.
- Stuck skills: a skill whose scheduled fires are being skipped behind a run still going,
  ``overlap_notice_fires`` times or more, gets one notice per such run.
- The LLM endpoint: one alert when it goes down, one when it is back.
- Ended schedules: a skill whose ``end_at`` passed is recorded ``ended`` and its schedule paused, saying so.
- Skip lists: the schedules whose list of skipped days (business days, holidays) runs out within
  30 days get the next year's, a bounded batch a round.
- The run history: records past the retention (``run_retention_days``, ``max_runs_per_skill``) are
  deleted in bounded batches; the gauges of skills overdue and of the LLM endpoint are set.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

from skills.naming import MAINTENANCE

with workflow.unsafe.imports_passed_through():
    from activities.agent import AgentActivities
    from activities.maintenance import MaintenanceActivities
    from activities.registration import RegistrationActivities
    from activities.retention import RetentionActivities
    from activities.runs import RunActivities
    from activities.schedules import ScheduleActivities
    from activities.watch import WatchActivities
    from skills.messages.maintenance import MaintenanceReport, MissedOneShot, OverdueQuery
    from skills.messages.manage import EnableInput, ScheduleSync, SkipRenewal
    from skills.messages.run import NotifyInput
    from workflows.failures import activity_cause
    from workflows.options import FAIL_ON_BUG, NOTIFY, SCHEDULE, STORE
    from workflows.run import aftermath, run_notice


@workflow.defn(name=MAINTENANCE, failure_exception_types=FAIL_ON_BUG)
class Maintenance:
    @workflow.run
    async def run(self) -> MaintenanceReport:
        scan = await workflow.execute_activity_method(MaintenanceActivities.scan_skills, **STORE)
        report = MaintenanceReport()
        for skill in scan.ready:
            await workflow.execute_activity_method(
                RegistrationActivities.set_skill_enabled,
                EnableInput(skill_id=skill.id, enabled=True, now=workflow.now()), **STORE,
            )
            await workflow.execute_activity_method(ScheduleActivities.sync_schedule, ScheduleSync(skill_id=skill.id),
                                                   **SCHEDULE)
            report.enabled.append(skill.name)
        for skill in scan.missed:
            await workflow.execute_activity_method(
                MaintenanceActivities.record_missed_one_shot,
                MissedOneShot(skill_id=skill.id, workflow_id=workflow.info().workflow_id), **STORE,
            )
            if skill.schedule_id:
                await workflow.execute_activity_method(ScheduleActivities.delete_schedule, skill.schedule_id, **SCHEDULE)
            report.missed.append(skill.name)
        # Patched: a round in flight when a worker of the previous version stopped replays as it ran.
        if workflow.patched("close-stale-runs"):
            await self._close_stale_runs(report)
            for stuck in await workflow.execute_activity_method(MaintenanceActivities.find_stuck_skills, **STORE):
                report.stuck.append(stuck.skill.name)
                await self._alert(stuck.message)
        if workflow.patched("schedule-ends"):
            for ended in await workflow.execute_activity_method(MaintenanceActivities.end_skills, **STORE):
                await workflow.execute_activity_method(ScheduleActivities.sync_schedule, ScheduleSync(skill_id=ended.id),
                                                       **SCHEDULE)
                report.ended.append(ended.name)
        if workflow.patched("renew-skip-lists"):
            await self._renew_skip_lists(report)
        change = await workflow.execute_activity_method(AgentActivities.check_llm_endpoint, **STORE)
        if change is not None:
            report.endpoint = "up" if change.up else "down"
            message = ("✅ The LLM endpoint is reachable again." if change.up else
                       f"⚠️ The LLM endpoint is {change.reason}. Agent-tier skills fail until it is back.")
            await workflow.execute_activity_method(
                RunActivities.notify_user, NotifyInput(skill_id=None, message=message, at=workflow.now()),
                **NOTIFY,
            )
        if workflow.patched("retention-and-overdue"):
            report.pruned = await workflow.execute_activity_method(RetentionActivities.prune_runs, **STORE)
            report.overdue = (await workflow.execute_activity_method(
                WatchActivities.find_overdue_skills, OverdueQuery(limit=0), **STORE)).count
        if report.enabled or report.missed or report.closed or report.stuck or report.ended or report.skips_renewed:
            workflow.logger.info("maintenance: enabled %s, missed one-shots %s, runs closed %s, stuck %s, ended %s, "
                                 "skip lists renewed %s", report.enabled, report.missed, report.closed,
                                 report.stuck, report.ended, report.skips_renewed)
        return report

    @staticmethod
    async def _close_stale_runs(report: MaintenanceReport) -> None:
        """Close the runs past their deadline, then see to what each means as SkillRun would have:
        retire a fired one-shot, pause a skill at its failure limit, send the failure notice."""
        closed = await workflow.execute_activity_method(MaintenanceActivities.close_stale_runs, **STORE)
        for outcome in closed.outcomes:
            report.closed.append(outcome.run.run_id)
            if outcome.skill is None:
                continue  # deleted since: nobody to tell
            try:
                await aftermath(outcome.skill, outcome, run_notice(outcome.skill, outcome, timedelta(0), ""))
            except ActivityError as e:
                # The run is closed and counted; one schedule call failing must not hold up the others.
                workflow.logger.warning("after closing run %s: %s", outcome.run.run_id, activity_cause(e))

    @staticmethod
    async def _renew_skip_lists(report: MaintenanceReport) -> None:
        try:
            report.skips_renewed = await workflow.execute_activity_method(
                ScheduleActivities.renew_skip_lists, SkipRenewal(), **SCHEDULE)
        except ActivityError as e:
            # The lists reach 30 days past the renewal's start: the next round tries again.
            workflow.logger.warning("skip lists not renewed: %s", activity_cause(e))

    @staticmethod
    async def _alert(message: str) -> None:
        try:
            await workflow.execute_activity_method(
                RunActivities.notify_user, NotifyInput(skill_id=None, message=message, at=workflow.now()), **NOTIFY)
        except ActivityError as e:
            workflow.logger.warning("alert not sent: %s", activity_cause(e))
