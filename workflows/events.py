"""EmitEvent: one emitted event starts a run of every enabled skill subscribed to it.

    claim_event (dedupe: an id seen within the window starts nothing; the subscribers)
      -> a SkillRun child per enabled subscriber (abandoned: it outlives this workflow)
      -> record_event (what was started, for a duplicate's answer)

The workflow id is derived from the event's name and id (``skills.when.events.event_workflow_id``),
so two emits of one id at once are one execution; the claim in the store covers a later emit
within the window, however long Temporal keeps the closed workflow. A child's id is derived
from the skill and the event id: started as a workflow command, it is started once, whatever
is retried.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

from skills.naming import EMIT_EVENT, SKILL_RUN

with workflow.unsafe.imports_passed_through():
    from temporalio.common import WorkflowIDReusePolicy

    from activities.events import EventActivities
    from search_attributes import skill_attributes
    from skills.messages.run import SkillRunInput
    from skills.when.events import (
        ClaimEvent,
        EmitInput,
        EmitResult,
        RecordEvent,
        SkippedSkill,
        StartedRun,
        Subscriber,
        event_run_id,
    )
    from workflows.options import FAIL_ON_BUG, STORE


@workflow.defn(name=EMIT_EVENT, failure_exception_types=FAIL_ON_BUG)
class EmitEvent:
    @workflow.run
    async def run(self, request: EmitInput) -> EmitResult:
        info, event, now = workflow.info(), request.event, workflow.now()
        claim = await workflow.execute_activity_method(
            EventActivities.claim_event,
            ClaimEvent(name=event.name, event_id=event.id, dedupe=request.dedupe, claimer=info.run_id, now=now,
                       skill_id=request.skill_id),
            **STORE,
        )
        if claim.duplicate is not None:
            return claim.duplicate.model_copy(update={"workflow_id": info.workflow_id})
        result = EmitResult(event=event.name, event_id=event.id, workflow_id=info.workflow_id,
                            dedupe_until=claim.dedupe_until, emitted_at=now)
        enabled = [s for s in claim.subscribers if s.enabled]
        result.skipped = [SkippedSkill(skill_id=s.skill_id, name=s.name,
                                       reason=f"disabled: {s.disabled_reason or 'by user'}")
                          for s in claim.subscribers if not s.enabled]
        outcomes = await asyncio.gather(*(self._start(s, request) for s in enabled))
        for subscriber, outcome in zip(enabled, outcomes, strict=True):
            if isinstance(outcome, StartedRun):
                result.started.append(outcome)
            else:
                result.skipped.append(SkippedSkill(skill_id=subscriber.skill_id, name=subscriber.name,
                                                   reason=outcome))
        if request.dedupe:
            await workflow.execute_activity_method(EventActivities.record_event,
                                                   RecordEvent(claimer=info.run_id, result=result), **STORE)
        return result

    @staticmethod
    async def _start(subscriber: Subscriber, request: EmitInput) -> StartedRun | str:
        """Start the subscriber's run for this event; the reason it was not started otherwise."""
        run_id = event_run_id(subscriber.run_prefix, request.event.id)
        try:
            handle = await workflow.start_child_workflow(
                SKILL_RUN,
                SkillRunInput(skill_id=subscriber.skill_id, trigger="event" if request.skill_id is None else "hook",
                              event=request.event),
                id=run_id,
                task_queue=workflow.info().task_queue,
                # The run is the skill's, not the emit's: it goes on after this workflow ends.
                parent_close_policy=ParentClosePolicy.ABANDON,
                # After the dedupe window the same id may run the skill again.
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                search_attributes=skill_attributes(subscriber.name, subscriber.agent_id, subscriber.tier),
                static_summary=f"event id {request.event.id} · {subscriber.summary}",
                # A run always ends: past its deadline Temporal ends it, and Maintenance closes its row.
                execution_timeout=timedelta(seconds=subscriber.run_timeout_seconds)
                if subscriber.run_timeout_seconds else None,
            )
        except WorkflowAlreadyStartedError:
            return f"its run for this event id ({run_id}) is still running"
        return StartedRun(skill_id=subscriber.skill_id, name=subscriber.name, workflow_id=handle.id)
