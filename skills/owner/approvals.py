"""Approvals: what waits for the owner's yes before it happens.

Two kinds share one list (``skills approvals``) and one way to answer it (``skills approve ID`` /
``skills deny ID``, the Telegram buttons, the MCP tools, the Python client):

- ``tool_call``: a skill's run reached a call of a tool that needs approval
  (``approval_required_tools``, or a plan step's ``approval: true``). The run waits durably for
  the answer; approved, the call is made once; denied (or unanswered by ``expires_at``), it is not.
- ``change``: in a chat, the assistant proposed a change to the skills (create one, widen its
  tools, move it to the Agent tier, enable, delete, emit an event). Nothing is stored until the
  owner confirms.

These are plain models (the store keeps them in the ``approvals`` table): they cross workflow and
activity boundaries.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from skills.display import shown

ApprovalKind = Literal["tool_call", "change"]
ApprovalStatus = Literal["pending", "approved", "denied", "expired"]

PENDING: ApprovalStatus = "pending"
DECIDED: tuple[ApprovalStatus, ...] = ("approved", "denied", "expired")


class ApprovalRequest(BaseModel):
    """What asks for the owner's answer, as the engine records it."""

    kind: ApprovalKind
    request_key: str
    """Unique per request, the same on every retry of the step that records it (a run's call key, a
    chat's message and call): recording it twice keeps one approval."""
    skill_id: int | None = None
    """The skill the run belongs to, or the skill a change touches (None for a new skill)."""
    skill_name: str = ""
    run_id: str | None = None
    workflow_id: str | None = None
    """The waiting run's workflow (``tool_call``): the answer is sent to it."""
    session_id: str | None = None
    """The chat session that proposed it (``change``)."""
    tool: str
    """The tool to call (``tool_call``) or the management tool that makes the change (``change``)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments after the pipeline, or the change's arguments as they will be sent."""
    summary: str = ""
    """What will happen, for a person: the call, or the change as it would be stored."""
    requested_at: datetime
    expires_at: datetime
    """Unanswered by then: denied, with a notice."""


class Approval(ApprovalRequest):
    """A recorded approval and, once answered, its answer."""

    id: int
    status: ApprovalStatus = PENDING
    decided_at: datetime | None = None
    decided_by: str | None = None
    """Who answered: ``cli``, ``telegram:<user>``, ``mcp``, ``chat``, ``timeout``, ``skill paused``..."""
    reason: str | None = None
    """Why it was denied, when the owner said (or the engine: timed out, skill paused or deleted)."""
    outcome: str | None = None
    """What came of it once acted on: the call's result excerpt, the change's answer."""

    @property
    def pending(self) -> bool:
        return self.status == PENDING


class ApprovalDecision(BaseModel):
    """An answer to one approval."""

    approval_id: int
    approve: bool
    reason: str = ""
    by: str = ""


# --- what crosses the run's workflow and its activities -------------------------------------


class ApprovalAsk(BaseModel):
    """A run asks to make a call that needs approval (the ``ask_approval`` activity)."""

    request_key: str
    """``<run id>:<step id>`` (Direct) or ``<run id>:turn-<n>:<call id>`` (Agent): the same on every
    replay and retry, and across a run's continue-as-new (the run id is the first one's)."""
    skill_id: int
    skill_name: str = ""
    run_id: str
    workflow_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    """A Direct step's arguments, placeholders filled (the activity puts them through the pipeline)."""
    conversation_id: str | None = None
    message_seq: int | None = None
    call_id: str | None = None
    """An Agent call, by reference: its arguments are read from the stored conversation."""
    requested_at: datetime
    timeout_seconds: float


class ApprovalAnswer(BaseModel):
    """The run records the answer it got (the ``answer_approval`` activity)."""

    decision: ApprovalDecision
    run_id: str
    now: datetime
    conversation_id: str | None = None
    call_id: str | None = None
    """An Agent call: a denial is stored as the call's result, so the model reads it and goes on."""


class ApprovalOutcome(BaseModel):
    approval_id: int
    outcome: str


class ApprovalsQuery(BaseModel):
    """Which approvals to list (``list_approvals``): pending ones by default, newest first."""

    status: ApprovalStatus | None = PENDING
    skill_id: int | None = None
    kind: ApprovalKind | None = None
    limit: int = Field(default=50, ge=1, le=500)


TIMEOUT = "timeout"
"""``decided_by`` of a call nobody answered in time."""


def describe_call(tool: str, arguments: dict[str, Any], limit: int = 1500) -> str:
    """The call as the owner reads it before answering: the tool and its arguments as they would be sent."""
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) > limit:
        text = text[:limit] + f"… ({len(text) - limit} more characters)"
    return shown(f"{tool}({text})")  # JSON escapes the controls; a bidi override it leaves as it is


def denial_text(approval: Approval) -> str:
    """What a denied call tells the Agent tier's model (its result) and a Direct run's summary."""
    who = "no answer in time" if approval.decided_by == TIMEOUT else f"denied by {approval.decided_by or 'the owner'}"
    reason = f": {approval.reason}" if approval.reason else ""
    return f"The owner did not approve this call of {approval.tool} ({who}{reason}); it was not made."
