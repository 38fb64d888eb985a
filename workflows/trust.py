"""TrustSkill: the owner trusts (or untrusts) a SKILL.md skill's executable parts.

A change like any other, so it runs as a workflow (visible in Temporal, the only road to the
``trust_skill`` activity): the worker reads the skill from its own folders and records the digest
of its toolsets and scripts as they are now. A refusal (no such skill, another copy than the one
reviewed) comes back as the result; the workflow fails only on a fault. A trust resumes the schedule
the sync paused for want of it; an untrust pauses a firing schedule at once, with the sync's reason.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

from skills.naming import CHANGE_SKILL, TRUST_SKILL

with workflow.unsafe.imports_passed_through():
    from activities.trust import TrustActivities
    from skills.messages.manage import ChangeInput, ChangeResult, SkillRef
    from skills.skillmd.trust import TrustInput, TrustResult
    from workflows.failures import activity_cause
    from workflows.options import FAIL_ON_BUG, STORE


@workflow.defn(name=TRUST_SKILL, failure_exception_types=FAIL_ON_BUG)
class TrustSkill:
    @workflow.run
    async def run(self, request: TrustInput) -> TrustResult:
        try:
            result = await workflow.execute_activity_method(
                TrustActivities.trust_skill, request, summary=f"{request.action} {request.name}", **STORE)
        except ActivityError as e:
            return TrustResult(ok=False, error=activity_cause(e))
        if result.pause is not None and result.state is not None:
            # Untrusted, it stops firing now (not at the next sync), paused with the sync's own reason so
            # that the next trust resumes it.
            paused = await workflow.execute_child_workflow(
                CHANGE_SKILL, ChangeInput(target=SkillRef(ref=str(result.pause)), action="pause", by="trust",
                                          reason=result.state.paused_reason()),
                result_type=ChangeResult, id=f"{workflow.info().workflow_id}-pause",
                static_summary=f"pause '{request.name}', untrusted")
            if not paused.ok:
                result.error = "untrusted, but its schedule could not be paused: " + "; ".join(
                    e.message for e in paused.errors)
        if result.resume is not None:
            # Its schedule was paused for want of this trust: it fires from now on, as any resumed skill.
            resumed = await workflow.execute_child_workflow(
                CHANGE_SKILL, ChangeInput(target=SkillRef(ref=str(result.resume)), action="resume", by="trust"),
                result_type=ChangeResult, id=f"{workflow.info().workflow_id}-resume",
                static_summary=f"resume '{request.name}', trusted")
            if not resumed.ok:
                result.error = "trusted, but its schedule could not be resumed: " + "; ".join(
                    e.message for e in resumed.errors)
        return result
