"""Registration and management of skills: every change takes the same road.

normalize + validate -> store -> schedule. If the schedule cannot follow the
store, the store is put back, so a refused or failed change leaves nothing
half-written. A registration's road is one local activity (in the worker that runs
the workflow, within its first workflow task); a change's steps are activities.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TemporalError

from skills.naming import CHANGE_SKILL, REGISTER_SKILL, REGISTER_SKILLS

with workflow.unsafe.imports_passed_through():
    from activities.approvals import ApprovalActivities
    from activities.registration import RegistrationActivities
    from activities.schedules import ScheduleActivities
    from activities.store import StoreActivities
    from skills.errors import FieldError
    from skills.messages.manage import (
        BulkRegistrationResult,
        ChangeInput,
        ChangeResult,
        EnableInput,
        HookInput,
        PreviousSchedule,
        RegisterInput,
        RegisterManyInput,
        RegistrationResult,
        SaveInput,
        ScheduleSync,
        ScheduleSynced,
        UndoSave,
    )
    from skills.naming import APPROVAL_SIGNAL
    from skills.owner.approvals import ApprovalDecision, ApprovalsQuery
    from skills.spec.models import Skill
    from workflows.failures import activity_cause
    from workflows.options import BULK_REGISTRATION, FAIL_ON_BUG, REGISTER_LOCAL, SCHEDULE, STORE, STORE_LOCAL


@workflow.defn(name=REGISTER_SKILL, failure_exception_types=FAIL_ON_BUG)
class RegisterSkill:
    """Create a skill, or update one (``target`` set), and bring its schedule along."""

    @workflow.run
    async def run(self, request: RegisterInput) -> RegistrationResult:
        if workflow.patched("register-in-one"):
            # One local activity for the whole road (normalize, store, schedule, and the undo if the schedule
            # cannot follow): one round of the SDK and one marker, where a local activity a step cost three.
            asked = request.model_copy(update={"asked_at": workflow.info().start_time})
            done = await workflow.execute_local_activity_method(RegistrationActivities.register_skill, asked,
                                                                **REGISTER_LOCAL)
            if done.paused and done.result.skill is not None:
                await _deny_waiting(done.result.skill.id, "skill paused")  # an update with enabled: false
            return done.result
        prepared = await workflow.execute_local_activity_method(RegistrationActivities.prepare_skill, request,
                                                                **STORE_LOCAL)
        if prepared.errors or prepared.normalized is None:
            return RegistrationResult(ok=False, errors=prepared.errors)
        notes = prepared.normalized.notes

        change = SaveInput(normalized=prepared.normalized, existing_id=prepared.existing_id, by=request.by,
                           reverts=request.reverts)
        saved = await workflow.execute_local_activity_method(RegistrationActivities.save_skill, change, **STORE_LOCAL)
        if saved.skill is None:
            return RegistrationResult(ok=False, errors=saved.errors, notes=notes)
        # The stored instructions are the normalized ones: the save did not send them back.
        skill = saved.skill.model_copy(update={"instructions": prepared.normalized.spec.instructions})

        try:
            synced = await _sync(skill, previous=saved.previous)
        except SCHEDULE_FAILED as e:
            undo = UndoSave(skill_id=skill.id, previous=saved.previous)
            await workflow.execute_local_activity_method(RegistrationActivities.undo_save, undo, **STORE_LOCAL)
            if saved.previous is not None:
                await _sync(saved.previous, previous=skill)
            return RegistrationResult(ok=False, notes=notes, errors=[_schedule_error(e)])
        if saved.previous is not None and saved.previous.enabled and not skill.enabled:
            await _deny_waiting(skill.id, "skill paused")  # an update with enabled: false is a pause too
        return RegistrationResult(ok=True, skill=skill, notes=notes, next_fire=synced.next_fire)


@workflow.defn(name=REGISTER_SKILLS, failure_exception_types=FAIL_ON_BUG)
class RegisterSkills:
    """Register a batch of new skills in one activity: each on its own road, refused on its own."""

    @workflow.run
    async def run(self, request: RegisterManyInput) -> BulkRegistrationResult:
        return await workflow.execute_activity_method(RegistrationActivities.register_skills, request,
                                                      **BULK_REGISTRATION)


@workflow.defn(name=CHANGE_SKILL, failure_exception_types=FAIL_ON_BUG)
class ChangeSkill:
    """Delete, pause or resume a skill (pausing keeps the reason on the schedule's note), or set its hook."""

    @workflow.run
    async def run(self, request: ChangeInput) -> ChangeResult:
        try:
            skill = await workflow.execute_activity_method(StoreActivities.get_skill, request.target, **STORE)
        except ActivityError as e:
            return ChangeResult(ok=False, errors=[FieldError(field="target", message=activity_cause(e))])

        if request.action == "delete":
            deleted = await workflow.execute_activity_method(RegistrationActivities.delete_skill, request, **STORE)
            if deleted.schedule_id:
                await workflow.execute_activity_method(ScheduleActivities.delete_schedule, deleted.schedule_id, **SCHEDULE)
            await _deny_waiting(skill.id, "skill deleted")
            return ChangeResult(ok=True, skill=deleted)

        if request.action == "hook":
            hooked = await workflow.execute_activity_method(
                RegistrationActivities.set_skill_hook,
                HookInput(skill_id=skill.id, digest=request.hook_digest, now=workflow.now()), **STORE)
            return ChangeResult(ok=True, skill=hooked)

        enable = request.action == "resume"
        try:
            changed = await workflow.execute_activity_method(
                RegistrationActivities.set_skill_enabled,
                EnableInput(skill_id=skill.id, enabled=enable, reason=None if enable else request.reason,
                            now=workflow.now(), by=request.by),
                **STORE,
            )
        except ActivityError as e:
            # A refused resume (an ended schedule, a skill not yet trusted) is an answer, not a fault.
            return ChangeResult(ok=False, skill=skill, errors=[FieldError(field="enabled", message=activity_cause(e))])
        try:
            await _sync(changed, previous=skill)
        except SCHEDULE_FAILED as e:
            await workflow.execute_activity_method(
                RegistrationActivities.set_skill_enabled,
                EnableInput(skill_id=skill.id, enabled=skill.enabled, reason=skill.disabled_reason,
                            now=workflow.now(), by=request.by),
                **STORE,
            )
            return ChangeResult(ok=False, skill=skill, errors=[_schedule_error(e)])
        if not enable:
            await _deny_waiting(skill.id, "skill paused")
        return ChangeResult(ok=True, skill=changed)


async def _deny_waiting(skill_id: int, why: str) -> None:
    """A paused or deleted skill makes none of the calls its runs wait to make: each waiting run is told
    (the signal it waits for; it records the denial and acts on it as on the owner's)."""
    waiting = await workflow.execute_activity_method(
        ApprovalActivities.list_approvals, ApprovalsQuery(skill_id=skill_id, kind="tool_call", limit=500), **STORE)
    for approval in waiting:
        if not approval.workflow_id:
            continue
        try:
            await workflow.get_external_workflow_handle(approval.workflow_id).signal(
                APPROVAL_SIGNAL, ApprovalDecision(approval_id=approval.id, approve=False, by=why, reason=why))
        except TemporalError as e:  # that run has ended: nothing waits there any more
            workflow.logger.warning("approval %s: run %s not told (%s)", approval.id, approval.workflow_id, e)


async def _sync(skill: Skill, *, previous: Skill | None) -> ScheduleSynced:
    """Bring the stored skill's schedule in line; ``previous`` is the skill as its schedule was built."""
    request = ScheduleSync(skill_id=skill.id, previous=PreviousSchedule.of(previous) if previous else None)
    if workflow.patched("schedule-sync-local"):
        # In the worker that runs the change, within its workflow task: no activity task to dispatch and no
        # second workflow task to wait for, so a registration answers in one (a few schedule RPCs, retried
        # as a regular activity's would be; idempotent, so a replay after a worker crash may run it again).
        return await workflow.execute_local_activity_method(ScheduleActivities.sync_schedule, request, **SCHEDULE)
    return await workflow.execute_activity_method(ScheduleActivities.sync_schedule, request, **SCHEDULE)


SCHEDULE_FAILED = (ActivityError, ApplicationError)
"""What a schedule sync that failed raises: a local activity's failure comes as its own application error."""


def _schedule_error(error: ActivityError | ApplicationError) -> FieldError:
    cause = activity_cause(error) if isinstance(error, ActivityError) else error.message
    return FieldError(field="schedule", message=f"the schedule could not be updated: {cause}")
