"""Answering a change a chat proposed (an approval of kind ``change``), from any client.

The client's ``approve``/``deny`` come here for a proposed change: the answer runs as a DecideChange
workflow, which records it once and, approved, makes the change along the registration road.
"""

from __future__ import annotations

from client.skills_client import SkillsClient
from skills.approvals import Approval, ApprovalDecision
from skills.errors import SkillNotFoundError, SkillsError
from skills.naming import DECIDE_CHANGE
from skills.proposals import ChangeDecided, DecideChangeInput


async def decide_change(skills: SkillsClient, approval: Approval, decision: ApprovalDecision) -> Approval:
    """Answer ``approval`` (a proposed change): the approval as it stands after the answer, with the
    change's outcome when this answer made it. An approval already answered is returned as it was
    answered (a change is made at most once); an expired one comes back ``expired``."""
    if approval.kind != "change":
        raise SkillsError(f"approval #{approval.id} is not a proposed change")
    decision = decision.model_copy(update={"approval_id": approval.id})
    verb = "approve" if decision.approve else "deny"
    result = await skills._workflow(DECIDE_CHANGE, DecideChangeInput(decision=decision), ChangeDecided,
                                    f"decide-change-{approval.id}", f"{verb} change #{approval.id}")
    if result.approval is None:
        raise SkillNotFoundError(result.problem or f"no approval with id {approval.id}")
    if result.problem:
        raise SkillsError(result.problem)
    return result.approval
