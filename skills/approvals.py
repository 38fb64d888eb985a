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

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

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
