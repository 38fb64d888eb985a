"""DecideChange: the owner's answer to a change a chat proposed, and, approved, the change made.

The answer is recorded first, as a compare-and-set (``decide_change``): of two answers at once one
wins, and only an approving winner goes on, so a change is made at most once however often it is
confirmed. The change then takes the road every client's does (RegisterSkill, ChangeSkill,
EmitEvent, as child workflows) with exactly what the proposal showed, and what came of it is
recorded with the approval, for the chat's reply and ``skills approvals``.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, WorkflowAlreadyStartedError

from skills.naming import CHANGE_SKILL, DECIDE_CHANGE, EMIT_EVENT, REGISTER_SKILL

with workflow.unsafe.imports_passed_through():
    from activities.proposals import ProposalActivities
    from skills.chat.proposals import (
        ChangeDecided,
        ChangeOutcome,
        ChangeVerdict,
        DecideChangeInput,
        DecideChangeRequest,
        change_facts,
    )
    from skills.messages.manage import ChangeInput, ChangeResult, RegisterInput, RegistrationResult, SkillRef
    from skills.owner.approvals import Approval
    from skills.when.events import EmitInput, EmitResult, EventInfo, event_workflow_id
    from workflows.failures import activity_cause
    from workflows.options import FAIL_ON_BUG, STORE


@workflow.defn(name=DECIDE_CHANGE, failure_exception_types=FAIL_ON_BUG)
class DecideChange:
    @workflow.run
    async def run(self, request: DecideChangeInput) -> ChangeDecided:
        verdict: ChangeVerdict = await workflow.execute_activity_method(
            ProposalActivities.decide_change,
            DecideChangeRequest(decision=request.decision, session_id=request.session_id, now=workflow.now()),
            **STORE,
        )
        if not verdict.apply or verdict.approval is None:
            return ChangeDecided(approval=verdict.approval, problem=verdict.problem)
        outcome, change = await _apply(verdict.approval)
        approval = await workflow.execute_activity_method(
            ProposalActivities.record_change_outcome, ChangeOutcome(approval_id=verdict.approval.id, outcome=outcome),
            **STORE,
        )
        return ChangeDecided(approval=approval, applied=True, change=change)


async def _apply(approval: Approval) -> tuple[str, dict[str, Any] | None]:
    """Make the change; what came of it in words, and the skill changed (none for an event or a refusal)."""
    arguments = approval.arguments
    child = f"{workflow.info().workflow_id}-apply"
    try:
        match approval.tool:
            case "memory_store_skill" | "memory_update_skill":
                target = SkillRef(ref=str(arguments["skill_id"])) if approval.tool == "memory_update_skill" else None
                data = arguments["patch"] if target is not None else arguments["data"]
                registered = await workflow.execute_child_workflow(
                    REGISTER_SKILL, RegisterInput(data=data, target=target, by=_by(approval)), id=child,
                    result_type=RegistrationResult)
                if not registered.ok or registered.skill is None:
                    return _refused(registered.errors), None
                skill, verb = registered.skill, "Stored" if target is None else "Updated"
                return (f"{verb} skill {skill.id} '{skill.name}' ({skill.tier} tier)",
                        change_facts("created" if target is None else "updated", skill, registered.next_fire,
                                     workflow.now()))
            case "memory_delete_skill":
                changed = await workflow.execute_child_workflow(
                    CHANGE_SKILL, ChangeInput(target=SkillRef(ref=str(arguments["skill_id"])), action="delete",
                                              by=_by(approval)),
                    id=child, result_type=ChangeResult)
                if not changed.ok or changed.skill is None:
                    return _refused(changed.errors), None
                return (f"Deleted skill {changed.skill.id} '{changed.skill.name}'",
                        change_facts("deleted", changed.skill, None))
            case "emit_event":
                event = EventInfo(name=arguments["event"], id=arguments["event_id"], data=arguments.get("data"),
                                  time=workflow.now())
                emitted = await workflow.execute_child_workflow(
                    EMIT_EVENT, EmitInput(event=event, dedupe=True),
                    id=event_workflow_id(workflow.info().task_queue, event.name, event.id), result_type=EmitResult)
                return emitted.message, None
    except WorkflowAlreadyStartedError:
        return "already made: its workflow had started before", None
    except ChildWorkflowError as e:
        return f"failed: {activity_cause(e)}", None
    return f"not made: '{approval.tool}' is not a change this engine makes", None


def _by(approval: Approval) -> str:
    """Who made a change a chat proposed, for its revision: the chat session."""
    return f"chat:{approval.session_id}" if approval.session_id else "chat"


def _refused(errors: list[Any]) -> str:
    return "Refused; nothing was changed: " + "; ".join(str(e) for e in errors)
