"""Events and hooks, from a client: an event emitted to its subscribers, a hooked skill fired once (each an
EmitEvent workflow, one per event id while the dedupe window lasts), and a skill's hook token given or revoked.

A part of :class:`client.skills_client.SkillsClient` (:mod:`client.base`).
"""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from client.base import ClientBase, raise_refusal
from client.calls import CHANGE_TIMEOUT
from skills.errors import SkillValidationError
from skills.messages.manage import ChangeInput, ChangeResult, SkillRef
from skills.naming import CHANGE_SKILL, EMIT_EVENT, slug
from skills.spec.models import Skill
from skills.when.events import EmitInput, EmitResult, EventInfo, check_event, event_workflow_id
from skills.when.hooks import TOKEN_BYTES, hook_event_name, hook_workflow_id, token_digest


class EventCalls(ClientBase):
    """Events emitted, hooks fired, hook tokens."""

    async def emit(self, name: str, data: Any = None, event_id: str | None = None) -> EmitResult:
        """Emit the event ``name``: every enabled skill subscribed to it (``trigger_type: event``,
        ``trigger_config: {event: name}``) starts a run with the event in its input; the result
        lists the runs started (names and workflow ids) and the subscribers skipped, and why.

        ``data`` is any JSON value (a plan reads it as ``{{event.data.…}}``). With ``event_id``,
        the same id emitted again within the worker's ``event_dedupe_window`` starts nothing and
        answers with what the first emit started (``duplicate``); without one, an id is made up."""
        problems = check_event(name, event_id, data)
        if problems:
            raise SkillValidationError(problems)
        event = EventInfo(name=name.strip(), id=event_id or uuid.uuid4().hex, data=data, time=datetime.now(UTC))
        request = EmitInput(event=event, dedupe=event_id is not None)
        return await self._emit(request, event_workflow_id(self.task_queue, event.name, event.id))

    async def fire_hook(self, skill_id: int, data: Any = None, key: str | None = None) -> EmitResult:
        """Run one hooked skill once with ``data`` as its event (``POST /hooks/<skill>``, in the worker,
        after the token was checked): an emit aimed at the skill, deduped by ``key`` like an event id.
        The worker runs it only while the skill has a hook token."""
        problems = check_event("hook", key, data)
        if problems:
            raise SkillValidationError(problems)
        event = EventInfo(name=hook_event_name(skill_id), id=key or uuid.uuid4().hex, data=data,
                          time=datetime.now(UTC))
        request = EmitInput(event=event, dedupe=key is not None, skill_id=skill_id)
        return await self._emit(request, hook_workflow_id(self.task_queue, skill_id, event.id))

    async def hook(self, ref: str | int, agent_id: str | None = None, revoke: bool = False) -> tuple[Skill, str | None]:
        """Give the skill a new hook token (replacing any; returned, once: only its digest is stored), or
        with ``revoke`` remove it. The token is made here and never enters a workflow's payload."""
        token = None if revoke else secrets.token_urlsafe(TOKEN_BYTES)
        request = ChangeInput(target=SkillRef(ref=str(ref), agent_id=agent_id), action="hook",
                              hook_digest=token_digest(token) if token else None)
        result = await self.calls.workflow(CHANGE_SKILL, request, ChangeResult, f"hook-{slug(str(ref))}",
                                      f"{'revoke the hook of' if revoke else 'hook'} '{ref}'")
        if not result.ok:
            raise_refusal(result.errors)
        assert result.skill is not None
        return result.skill, token

    async def _emit(self, request: EmitInput, workflow_id: str) -> EmitResult:
        try:
            try:
                # One workflow per event id: a second emit while the first runs attaches to it, and
                # one after it closed is answered by it (below) while the dedupe window lasts.
                handle = await self._start_emit(request, workflow_id, WorkflowIDReusePolicy.REJECT_DUPLICATE)
            except WorkflowAlreadyStartedError:
                previous = await self._emitted(workflow_id)
                if previous is not None and previous.dedupe_until and previous.dedupe_until > datetime.now(UTC):
                    return previous.model_copy(update={
                        "duplicate": True, "skipped": [],
                        "first_seen_at": previous.first_seen_at or previous.emitted_at})
                # Past the window (or the first emit failed): the store's claim decides again.
                handle = await self._start_emit(request, workflow_id, WorkflowIDReusePolicy.ALLOW_DUPLICATE)
            return await handle.result()
        except WorkflowFailureError as e:
            raise self.calls.failed(EMIT_EVENT, CHANGE_TIMEOUT, e) from e

    async def _start_emit(self, request: EmitInput, workflow_id: str,
                          reuse: WorkflowIDReusePolicy) -> WorkflowHandle[Any, EmitResult]:
        return await self.client.start_workflow(
            EMIT_EVENT, request, id=workflow_id, task_queue=self.task_queue, result_type=EmitResult,
            static_summary=f"{'hook' if request.skill_id is not None else 'event'} {request.event.name} "
                           f"({request.event.id})",
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING, id_reuse_policy=reuse,
            execution_timeout=CHANGE_TIMEOUT,
        )

    async def _emitted(self, workflow_id: str) -> EmitResult | None:
        """What the closed EmitEvent under ``workflow_id`` answered; None if it did not complete."""
        try:
            return await self.client.get_workflow_handle(workflow_id, result_type=EmitResult).result()
        except WorkflowFailureError:
            return None
