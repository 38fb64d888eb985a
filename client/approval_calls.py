"""The owner's word, from a client: the approvals a run or a chat waits on, answered (a signal to the waiting
run, or a DecideChange workflow for a proposed change), and the standing grants that answer ahead of time.

A part of :class:`client.skills_client.SkillsClient` (:mod:`client.base`).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from client.base import ClientBase
from search_attributes import SKILL_APPROVAL
from skills.chat.proposals import ChangeDecided, DecideChangeInput
from skills.errors import FieldError, SkillNotFoundError, SkillsError, SkillValidationError
from skills.naming import (
    APPROVAL_SIGNAL,
    CHANGE_GRANT,
    DECIDE_CHANGE,
    GET_APPROVAL,
    LIST_APPROVALS,
    LIST_GRANTS,
    slug,
)
from skills.owner.approvals import PENDING, Approval, ApprovalDecision, ApprovalsQuery, ApprovalStatus
from skills.owner.grants import Grant, GrantChange, GrantRequest, GrantResult, GrantsQuery

MAX_REASON = 1000
"""Characters of a denial's reason: it travels in the signal and is shown to the model and the owner."""


class ApprovalCalls(ClientBase):
    """Approvals, their answers, and standing grants."""

    async def approvals(self, status: ApprovalStatus | None = PENDING, skill: str | int | None = None,
                        limit: int = 50, *, skill_id: int | None = None) -> list[Approval]:
        """What waits for the owner's answer (``status=None``: answered ones too), newest first; of one
        skill: ``skill`` (a reference, looked up first) or ``skill_id`` (the id of a skill already read)."""
        if skill is not None:
            skill_id = (await self.get(skill)).id
        return await self.calls.read(LIST_APPROVALS, ApprovalsQuery(status=status, skill_id=skill_id, limit=limit),
                                list[Approval])

    async def approval(self, approval_id: int) -> Approval:
        return await self.calls.read(GET_APPROVAL, approval_id, Approval)

    async def approve(self, approval_id: int, by: str = "client") -> Any:
        """Approve: the waiting run makes its call, once (or the proposed change is made)."""
        return await self._answer(ApprovalDecision(approval_id=approval_id, approve=True, by=by))

    async def deny(self, approval_id: int, reason: str = "", by: str = "client") -> Any:
        """Deny: the call is not made (an Agent run is told and goes on; a Direct run ends ``denied``)."""
        return await self._answer(ApprovalDecision(approval_id=approval_id, approve=False, by=by,
                                                   reason=reason[:MAX_REASON]))

    async def _answer(self, decision: ApprovalDecision) -> Any:
        """A run's call: the answer is a signal to the run's workflow, found through Temporal's visibility
        (``SkillApproval`` on this engine's task queue), so it is kept, durably, even while no worker runs; the
        run records it. A proposed change: :meth:`decide_change` makes it. Returns a sentence saying what was
        done (for a change, what ``decide_change`` returns)."""
        said = await self.answer(decision.approval_id, decision.approve, reason=decision.reason, by=decision.by)
        return said.approval if isinstance(said, ChangeDecided) else said

    async def answer(self, approval_id: int, approve: bool, *, reason: str = "",
                     by: str = "client") -> str | ChangeDecided:
        """Approve or deny, as :meth:`approve` and :meth:`deny` do, and say what came of it: a run's call
        answered is a sentence; a change a chat proposed comes back whole, the approval as it stands and the
        skill made, changed or deleted with its next fire (``skills.chat.proposals.decided_sentence`` says it
        in words: ``skills approve`` prints it)."""
        decision = ApprovalDecision(approval_id=approval_id, approve=approve, by=by, reason=reason[:MAX_REASON])
        sent = await self._signal_waiting_run(decision)
        if sent is not None:
            return sent
        approval = await self.approval(approval_id)
        self._require_pending(approval)
        if approval.kind == "change":
            return await self._decided(approval, decision)
        return await self._signal_run(approval, decision)

    async def _signal_waiting_run(self, decision: ApprovalDecision) -> str | None:
        """The answer signalled to the run that waits for it, found through Temporal's visibility; None: none
        waits (a change a chat proposed, or a run gone)."""
        verb = "approved" if decision.approve else "denied"
        # Approval ids are per store: engines sharing a namespace each have an approval 1. The task queue is
        # this engine's, so the search names only its own runs.
        query = f"{SKILL_APPROVAL.name}={decision.approval_id} AND TaskQueue='{self.task_queue}'"
        async for found in self.client.list_workflows(query, limit=1):
            handle = self.client.get_workflow_handle(found.id)
            # The list lags behind the run; the run's own description does not.
            described = await handle.describe()
            if (described.status == WorkflowExecutionStatus.RUNNING
                    and described.typed_search_attributes.get(SKILL_APPROVAL) == decision.approval_id):
                await handle.signal(APPROVAL_SIGNAL, decision)
                return (f"approval {decision.approval_id} {verb}: sent to its run ({found.id}), which acts on the "
                        "first answer it gets")
        return None

    @staticmethod
    def _require_pending(approval: Approval) -> None:
        if not approval.pending:
            raise SkillsError(f"approval {approval.id} was already answered: {approval.status}"
                              f"{f' by {approval.decided_by}' if approval.decided_by else ''}")

    async def _signal_run(self, approval: Approval, decision: ApprovalDecision) -> str:
        verb = "approved" if decision.approve else "denied"
        if not approval.workflow_id:
            raise SkillsError(f"approval {approval.id} names no run to answer")
        try:
            await self.client.get_workflow_handle(approval.workflow_id).signal(APPROVAL_SIGNAL, decision)
        except RPCError as e:
            raise SkillsError(f"approval {approval.id}: its run ({approval.workflow_id}) no longer waits: "
                              f"{e.message}") from e
        return (f"approval {approval.id} {verb}: sent to its run ({approval.workflow_id}), which acts on the first "
                "answer it gets")

    async def decide_change(self, approval: Approval, decision: ApprovalDecision) -> Approval:
        """Answer ``approval``, a change a chat proposed, as a DecideChange workflow: the approval as it
        stands after the answer, with the change's outcome when this answer made it. An approval
        already answered is returned as it was answered (a change is made at most once); an expired one
        comes back ``expired``."""
        result = await self._decided(approval, decision)
        assert result.approval is not None
        return result.approval

    async def _decided(self, approval: Approval, decision: ApprovalDecision) -> ChangeDecided:
        if approval.kind != "change":
            raise SkillsError(f"approval #{approval.id} is not a proposed change")
        decision = decision.model_copy(update={"approval_id": approval.id})
        verb = "approve" if decision.approve else "deny"
        result = await self.calls.workflow(DECIDE_CHANGE, DecideChangeInput(decision=decision), ChangeDecided,
                                      f"decide-change-{approval.id}", f"{verb} change #{approval.id}")
        if result.approval is None:
            raise SkillNotFoundError(result.problem or f"no approval with id {approval.id}")
        if result.problem:
            raise SkillsError(result.problem)
        return result

    # --- standing grants ---------------------------------------------------------------------

    async def grant(self, tool: str, *, skill: str | int | None = None, agent_id: str | None = None,
                    where: dict[str, str] | None = None, minutes: int | None = None, by: str = "client") -> Grant:
        """A standing grant: calls of ``tool`` (of ``skill``, or any) whose arguments equal ``where`` are approved
        without asking, for ``minutes`` (None: until revoked). Refused, naming the field: an unknown tool, a
        management tool, no such skill, a duration out of bounds."""
        request = GrantRequest(tool=tool, skill=str(skill) if skill is not None else None, agent_id=agent_id,
                               where=where or {}, minutes=minutes, by=by)
        return await self._grant_change(GrantChange(action="grant", grant=request), f"grant-{slug(tool)}",
                                        f"grant {tool}")

    async def grants(self, *, everything: bool = False, limit: int = 100) -> list[Grant]:
        """The live standing grants, newest first (``everything``: revoked and expired ones too)."""
        return await self.calls.read(LIST_GRANTS, GrantsQuery(all=everything, limit=limit), list[Grant])

    async def revoke_grant(self, grant_id: int) -> Grant:
        """Revoke a standing grant: from now on its calls wait for the owner again."""
        return await self._grant_change(GrantChange(action="revoke", grant_id=grant_id), f"revoke-grant-{grant_id}",
                                        f"revoke grant {grant_id}")

    async def _grant_change(self, change: GrantChange, id_prefix: str, summary: str) -> Grant:
        result = await self.calls.workflow(CHANGE_GRANT, change, GrantResult, id_prefix, summary)
        if not result.ok or result.grant is None:
            if any(e.message.startswith(("no grant", "no skill")) for e in result.errors):
                raise SkillNotFoundError("; ".join(e.message for e in result.errors))
            raise SkillValidationError(result.errors or [FieldError(field="grant", message=f"{summary} failed")])
        return result.grant
