"""Maintenance: the engine's own rounds, on its own schedule (every minute by default).

- Auto-enable: a skill registered disabled because its tools were missing is
  enabled, and its schedule resumed, once every tool it needs is in the catalog.
- Missed one-shots: a one-shot whose time passed while the engine was down for
  longer than the catch-up window never fires; its fire is recorded as missed and
  the skill retired.
- The LLM endpoint: one alert when it goes down, one when it is back.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.agent import AgentActivities
    from activities.maintenance import MaintenanceActivities
    from activities.registration import RegistrationActivities
    from activities.runs import RunActivities
    from activities.schedules import ScheduleActivities
    from skills.messages import EnableInput, MaintenanceReport, MissedOneShot, NotifyInput, ScheduleSync
    from workflows.options import NOTIFY, SCHEDULE, STORE

@workflow.defn(name="Maintenance")
class Maintenance:
    @workflow.run
    async def run(self) -> MaintenanceReport:
        scan = await workflow.execute_activity_method(MaintenanceActivities.scan, **STORE)
        report = MaintenanceReport()
        for skill in scan.ready:
            await workflow.execute_activity_method(
                RegistrationActivities.set_enabled,
                EnableInput(skill_id=skill.id, enabled=True, now=workflow.now()), **STORE,
            )
            await workflow.execute_activity_method(ScheduleActivities.sync, ScheduleSync(skill_id=skill.id),
                                                   **SCHEDULE)
            report.enabled.append(skill.name)
        for skill in scan.missed:
            await workflow.execute_activity_method(
                MaintenanceActivities.record_missed,
                MissedOneShot(skill_id=skill.id, workflow_id=workflow.info().workflow_id), **STORE,
            )
            if skill.schedule_id:
                await workflow.execute_activity_method(ScheduleActivities.delete, skill.schedule_id, **SCHEDULE)
            report.missed.append(skill.name)
        change = await workflow.execute_activity_method(AgentActivities.check_endpoint, **STORE)
        if change is not None:
            report.endpoint = "up" if change.up else "down"
            message = ("✅ The LLM endpoint is reachable again." if change.up else
                       f"⚠️ The LLM endpoint is {change.reason}. Agent-tier skills fail until it is back.")
            await workflow.execute_activity_method(
                RunActivities.notify, NotifyInput(skill_id=None, message=message, at=workflow.now()),
                **NOTIFY,
            )
        if report.enabled or report.missed:
            workflow.logger.info("maintenance: enabled %s, missed one-shots %s", report.enabled, report.missed)
        return report
