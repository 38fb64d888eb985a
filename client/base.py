"""What every part of :class:`client.skills_client.SkillsClient` works on: the Temporal client, the task queue,
the engine's calls on it, who the changes are recorded as made by, and the read of one skill the others stand
on (a run, an approval's filter, a revert, a forecast each begin with it).

The parts are one module an aggregate, as the store's repositories are: :mod:`client.skill_calls` (skills and
their revisions), :mod:`client.run_calls` (runs and rehearsals), :mod:`client.approval_calls` (approvals and
standing grants), :mod:`client.event_calls` (events and hooks), :mod:`client.worker_calls` (the worker's tools,
outbox and sandbox). Each is a :class:`ClientBase`, and ``SkillsClient`` is all of them: a method's code is in
its aggregate's module, and a part reaches another only through this base.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from temporalio.client import Client

from client.calls import EngineCalls
from skills.errors import FieldError, SkillNotFoundError, SkillValidationError
from skills.messages.manage import SkillRef
from skills.naming import GET_SKILL
from skills.spec.limits import body_too_large
from skills.spec.models import Skill

ATTRIBUTION: ContextVar[str | None] = ContextVar("attribution", default=None)
"""Who the changes made in this context are recorded as made by, over the client's own ``by``: one client
serves every chat of a worker, and each chat's management tool says which session asked."""


class ClientBase:
    """The state the client's parts share, and the read of one skill."""

    def __init__(self, client: Client, task_queue: str, by: str) -> None:
        self.client = client
        self.task_queue = task_queue
        self.calls = EngineCalls(client, task_queue)
        """The engine's workflows and reads, for the other client modules too (:mod:`client.trust`)."""
        self.by = by

    @property
    def attribution(self) -> str:
        """Who this client's changes are recorded as made by, now (``ATTRIBUTION``, else ``by``)."""
        return ATTRIBUTION.get() or self.by

    async def get(self, ref: str | int, agent_id: str | None = None) -> Skill:
        return await self.calls.read(GET_SKILL, SkillRef(ref=str(ref), agent_id=agent_id), Skill)


def refuse_oversize(body: Any) -> None:
    """Refuse a body too big for a workflow payload here, naming the limit: Temporal would refuse it
    with a raw RPC error (or a warning on stdout), saying neither what is too big nor by how much."""
    oversize = body_too_large(body)
    if oversize is not None:
        raise SkillValidationError([oversize])


def raise_refusal(errors: list[FieldError]) -> None:
    """A refusal the worker answered, as the client's error: no such skill when the target is at fault."""
    if any(e.field == "target" for e in errors):
        raise SkillNotFoundError("; ".join(e.message for e in errors))
    raise SkillValidationError(errors)
