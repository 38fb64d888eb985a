"""The approval activities: a run records the call it waits to make, then the owner's answer.

The waiting itself is the run's workflow's (a signal and a timer, no activity held open):
these only read and write the store, and put a Direct step's arguments through the MCP
argument pipeline without calling the tool, so what the owner approves is what would be
sent. The clients' reads (``skills approvals``) are here too.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

from temporalio import activity

from activities.failures import as_application_errors
from activities.ports import ArgumentPreparer
from adapters.store import Store
from config.secrets import redact
from skills.errors import ToolCallError
from skills.llm.agent import ChatMessage, tool_result_text
from skills.naming import GET_APPROVAL, LIST_APPROVALS
from skills.owner.approvals import (
    Approval,
    ApprovalAnswer,
    ApprovalAsk,
    ApprovalOutcome,
    ApprovalRequest,
    ApprovalsQuery,
    denial_text,
    describe_call,
)
from skills.owner.grants import GRANT_PREFIX, describe_grant


class ApprovalActivities:
    def __init__(self, store: Store, tools: ArgumentPreparer | None = None) -> None:
        """``tools.prepare(tool, arguments)``: the tool hub's pipeline without the call."""
        self.store = store
        self.tools = tools

    @activity.defn
    async def ask_approval(self, request: ApprovalAsk) -> Approval | None:
        """Record the call the run is about to make (idempotent by its request key) and show the run
        as waiting. None: there is nothing to approve (an Agent call whose arguments are not a JSON
        object: the tool activity refuses it without calling anything)."""
        tool, arguments = request.tool, request.arguments
        if request.conversation_id is not None:
            message = await asyncio.to_thread(self.store.conversations.get_message, request.conversation_id,
                                              request.message_seq or 0)
            call = next((c for c in (message.tool_calls if message else []) if c.id == request.call_id), None)
            if call is None:
                return None
            try:
                arguments = json.loads(call.arguments or "{}")
            except (ValueError, RecursionError):
                return None
            if not isinstance(arguments, dict):
                return None
            tool = call.name
        summary = ""
        if self.tools is not None:
            try:
                arguments = (await self.tools.prepare(tool, arguments)).arguments
            except ToolCallError as e:
                # Asked anyway: the call fails as it is now, but a server back by then would take it.
                summary = f" (not checked against the tool's schema: {e})"
        now = datetime.now(UTC)
        grant = await asyncio.to_thread(self.store.approvals.matching_grant, tool, request.skill_id, arguments, now)
        arguments = json.loads(redact(json.dumps(arguments, default=str)))
        approval = await asyncio.to_thread(self.store.approvals.add_approval, ApprovalRequest(
            kind="tool_call", request_key=request.request_key, skill_id=request.skill_id,
            skill_name=request.skill_name, run_id=request.run_id, workflow_id=request.workflow_id, tool=tool,
            arguments=arguments, summary=f"{request.skill_name}: {describe_call(tool, arguments)}{summary}",
            requested_at=request.requested_at,
            expires_at=request.requested_at + timedelta(seconds=request.timeout_seconds)))
        if approval.pending and grant is not None:
            # The owner said yes beforehand: recorded as approved by the grant, and the run goes on.
            approval, _ = await asyncio.to_thread(
                self.store.approvals.decide_approval, approval.id, "approved", now=now, by=f"{GRANT_PREFIX}{grant.id}",
                reason=f"approved by standing {describe_grant(grant)}")
            activity.logger.info("approval %s: approved by grant %s: %s", approval.id, grant.id, approval.summary)
            return approval
        if approval.pending:
            await asyncio.to_thread(self.store.runs.set_run_waiting, request.run_id, True)
        activity.logger.info("approval %s: %s waits for the owner", approval.id, approval.summary)
        return approval

    @activity.defn
    def answer_approval(self, request: ApprovalAnswer) -> Approval:
        """Record the answer (only a pending approval takes one) and show the run as running again. The
        approval comes back as it stands: the first answer recorded is the one the run acts on. An Agent
        call not approved gets its denial as its result, so the model reads it and goes on."""
        decision = request.decision
        approval, _ = self.store.approvals.decide_approval(decision.approval_id, "approved" if decision.approve else "denied",
                                                           now=request.now, by=decision.by, reason=decision.reason or None)
        self.store.runs.set_run_waiting(request.run_id, False)
        if (approval.status != "approved" and request.conversation_id is not None and request.call_id is not None
                and not self.store.conversations.has_tool_result(request.conversation_id, request.call_id)):
            message = ChatMessage(role="tool", tool_call_id=request.call_id,
                                  content=tool_result_text(f"Error: {denial_text(approval)} Go on without it."))
            self.store.conversations.append_messages(request.conversation_id, [message], datetime.now(UTC))
        return approval

    @activity.defn
    def approval_outcome(self, request: ApprovalOutcome) -> None:
        self.store.approvals.record_approval_outcome(request.approval_id, redact(request.outcome)[:2000])

    @activity.defn(name=LIST_APPROVALS)
    def list_approvals(self, query: ApprovalsQuery) -> list[Approval]:
        found = self.store.approvals.list_approvals(status=query.status, skill_id=query.skill_id,
                                                    limit=query.limit if query.kind is None else 500)
        return [a for a in found if query.kind is None or a.kind == query.kind][:query.limit]

    @activity.defn(name=GET_APPROVAL)
    def get_approval(self, approval_id: int) -> Approval:
        with as_application_errors():
            return self.store.approvals.get_approval(approval_id)
