"""Registration and management of skills: every change takes the same road.

normalize + validate -> store -> schedule. If the schedule cannot follow the
store, the store is put back, so a refused or failed change leaves nothing
half-written.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.registration import RegistrationActivities
    from activities.schedules import ScheduleActivities
    from activities.store import StoreActivities
    from skills.errors import FieldError
    from skills.messages import (
        ChangeInput,
        ChangeResult,
        EnableInput,
        RegisterInput,
        RegistrationResult,
        SaveInput,
        ScheduleSync,
    )
    from skills.models import Skill

STORE = {"start_to_close_timeout": timedelta(seconds=30), "retry_policy": RetryPolicy(maximum_attempts=5)}
SCHEDULE = {
    "start_to_close_timeout": timedelta(seconds=30),
    "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=5),
}


@workflow.defn(name="RegisterSkill")
class RegisterSkill:
    """Create a skill, or update one (``target`` set), and bring its schedule along."""

    @workflow.run
    async def run(self, request: RegisterInput) -> RegistrationResult:
        prepared = await workflow.execute_activity_method(RegistrationActivities.prepare, request, **STORE)
        if prepared.errors or prepared.normalized is None:
            return RegistrationResult(ok=False, errors=prepared.errors)
        notes = prepared.normalized.notes

        change = SaveInput(normalized=prepared.normalized, existing=prepared.existing)
        saved = await workflow.execute_activity_method(RegistrationActivities.save, change, **STORE)
        if saved.skill is None:
            return RegistrationResult(ok=False, errors=saved.errors, notes=notes)

        try:
            synced = await workflow.execute_activity_method(
                ScheduleActivities.sync, ScheduleSync(skill=saved.skill, previous=prepared.existing), **SCHEDULE
            )
        except ActivityError as e:
            await workflow.execute_activity_method(RegistrationActivities.undo, change, **STORE)
            if prepared.existing is not None:
                await _resync(prepared.existing, saved.skill)
            return RegistrationResult(ok=False, notes=notes, errors=[_schedule_error(e)])
        return RegistrationResult(ok=True, skill=saved.skill, notes=notes, next_fire=synced.next_fire)


@workflow.defn(name="ChangeSkill")
class ChangeSkill:
    """Delete, pause or resume a skill; pausing keeps the reason on the schedule's note."""

    @workflow.run
    async def run(self, request: ChangeInput) -> ChangeResult:
        try:
            skill = await workflow.execute_activity_method(StoreActivities.get_skill, request.target, **STORE)
        except ActivityError as e:
            return ChangeResult(ok=False, errors=[FieldError(field="target", message=_message(e))])

        if request.action == "delete":
            deleted = await workflow.execute_activity_method(RegistrationActivities.delete, request, **STORE)
            if deleted.schedule_id:
                await workflow.execute_activity_method(ScheduleActivities.delete, deleted.schedule_id, **SCHEDULE)
            return ChangeResult(ok=True, skill=deleted)

        enable = request.action == "resume"
        changed = await workflow.execute_activity_method(
            RegistrationActivities.set_enabled,
            EnableInput(skill_id=skill.id, enabled=enable, reason=None if enable else request.reason,
                        now=workflow.now()),
            **STORE,
        )
        try:
            await _resync(changed, skill)
        except ActivityError as e:
            await workflow.execute_activity_method(
                RegistrationActivities.set_enabled,
                EnableInput(skill_id=skill.id, enabled=skill.enabled, reason=skill.disabled_reason,
                            now=workflow.now()),
                **STORE,
            )
            return ChangeResult(ok=False, skill=skill, errors=[_schedule_error(e)])
        return ChangeResult(ok=True, skill=changed)


async def _resync(skill: Skill, previous: Skill) -> None:
    await workflow.execute_activity_method(
        ScheduleActivities.sync, ScheduleSync(skill=skill, previous=previous), **SCHEDULE
    )


def _message(error: ActivityError) -> str:
    cause = error.cause
    return str(cause.message if cause is not None and hasattr(cause, "message") else error)


def _schedule_error(error: ActivityError) -> FieldError:
    return FieldError(field="schedule", message=f"the schedule could not be updated: {_message(error)}")
