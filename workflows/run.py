"""SkillRun: one fire of one skill.

The input is the skill's id, not its body: the body is loaded by an activity at
fire time, so an update between two fires takes effect without touching the
schedule, and payloads stay small.

    begin_run -> skip? (disabled, backoff) -> pre-flight checks -> tier -> finish_run
    (begin_run and finish_run are local activities: store calls, no task-queue round trip)
              -> retire a fired one-shot / pause a skill that failed too often -> notify
              -> a run in error fails the workflow (SkillRunFailed, the recorded run as details)

A failed run is a Failed workflow, so `ExecutionStatus='Failed'` finds it and the Web UI counts
it; a skipped or successful run completes. The failure is non-retryable (the schedule's next
fire is the retry, with backoff) and does not stop the schedule.

A bug in this workflow's own code (an exception that is not a Temporal failure) would fail the
workflow *task*, which Temporal retries for ever: the run would never end, and the schedule's
overlap policy would skip every later fire. So such an exception fails the run instead: it is
recorded as ``error`` with the exception's type and message, counted by the backoff and
notified, like any failed run (docs/resilience.md#a-run-always-ends).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import datetime, timedelta
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TemporalError
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

from skills.naming import SKILL_RUN

# All passed through, agent_loop too: imported once per worker, not again in every run's sandbox
# (it keeps no state; its workflow calls find the running workflow from the context).
with workflow.unsafe.imports_passed_through():
    from temporalio.worker.workflow_sandbox import RestrictedWorkflowAccessError

    from activities.agent import AgentActivities
    from activities.approvals import ApprovalActivities
    from activities.digests import DigestActivities
    from activities.runs import RunActivities
    from activities.schedules import ScheduleActivities
    from activities.scripts import ScriptActivities
    from activities.tools import ToolActivities
    from search_attributes import SCHEDULED_START_TIME, SKILL_APPROVAL, SKILL_WAITING
    from skills.display import span
    from skills.errors import PlanError, SkillRunFailed, WorkflowInputError
    from skills.messages.agent import AgentLoopState, AgentStart, LoopLimits, PreflightResult, ToolCallRef
    from skills.messages.manage import PreviousSchedule, ScheduleSync
    from skills.messages.run import (
        AgentResume,
        BeginRun,
        DeliveriesRecord,
        DeliverInput,
        DigestItem,
        DigestQueue,
        NotifyInput,
        RunOutcome,
        RunStart,
        ScriptRun,
        SkillRunInput,
    )
    from skills.naming import APPROVAL_SIGNAL
    from skills.owner.approvals import (
        TIMEOUT,
        Approval,
        ApprovalAnswer,
        ApprovalAsk,
        ApprovalDecision,
        ApprovalOutcome,
        denial_text,
    )
    from skills.run.catalog import ToolCallInput, ToolCallOutput
    from skills.run.deadline import RUN_MARGIN
    from skills.run.idempotency import call_key, fire_id, run_prefix, step_place
    from skills.run.notify import (
        Notice,
        completion_due,
        completion_message,
        disabled_message,
        failure_message,
        incident_message,
        recovered_message,
        reminder_message,
        result_digest,
        sentence,
    )
    from skills.run.plans import StepOutput, recall_names, resolve
    from skills.run.preflight import render_arguments, should_skip
    from skills.run.recall import RecallRef
    from skills.run.rehearsal import NOT_RUN_SCRIPT, would_send
    from skills.run.scripts import RUN_SCRIPT
    from skills.spec.models import BUDGET, ENDED, FAILURES, Delivery, RunRecord, Skill, ToolCallRecord
    from workflows.agent_loop import agent_loop, open_toolsets
    from workflows.failures import activity_cause
    from workflows.options import NOTIFY, SCHEDULE, STORE, STORE_LOCAL, script_options, tool_options

RESULT_EXCERPT = 2000


@workflow.defn(name=SKILL_RUN)
class SkillRun:
    def __init__(self) -> None:
        # What the run has got to, for the failure path of an unexpected exception.
        self._start: RunStart | None = None
        self._run: RunRecord | None = None
        self._key_prefix = ""
        # The owner's answers by approval id, the first one each (a signal: durable with no worker running).
        self._answers: dict[int, ApprovalDecision] = {}
        # When the chain's first run started: the execution timeout is the chain's, not this run's.
        self._chain_start: datetime | None = None

    @workflow.signal(name=APPROVAL_SIGNAL)
    def answer(self, decision: ApprovalDecision) -> None:
        self._answers.setdefault(decision.approval_id, decision)

    @workflow.run
    async def run(self, request: SkillRunInput) -> RunRecord | None:
        try:
            return await self._fire(request)
        except Exception as e:
            # Temporal's own failures (an activity's, SkillRunFailed) end the workflow as they are, and a
            # non-determinism error must fail the task (a fixed deploy replays it); anything else is a bug.
            if isinstance(e, TemporalError) and not isinstance(e, RestrictedWorkflowAccessError):
                raise
            return await self._crashed(e)

    async def _fire(self, request: SkillRunInput) -> RunRecord | None:
        if request.resume is not None:
            resume = request.resume
            if resume.start.skill is None:
                # A bad input is not a fault a retry fixes: fail the run, typed and non-retryable.
                raise ApplicationError("a resumed run must carry its skill", non_retryable=True,
                                       type=WorkflowInputError.failure_type())
            self._start, self._run = resume.start, resume.run
            self._chain_start = resume.chain_started_at or resume.run.started_at
            self._key_prefix = resume.loop.key_prefix or _key_prefix(resume.run, request)
            run = await self._bounded(resume.start.skill, resume.run,
                                      self._agent_loop(resume.start.skill, resume.run, resume.start, request,
                                                       resume.loop))
            return await self._close(resume.start.skill, run, resume.start)
        info = workflow.info()
        self._chain_start = info.workflow_start_time
        start = await workflow.execute_local_activity_method(
            RunActivities.begin_run,
            BeginRun(skill_id=request.skill_id, run_id=info.run_id, workflow_id=info.workflow_id,
                     trigger=request.trigger, scheduled_at=info.typed_search_attributes.get(SCHEDULED_START_TIME),
                     started_at=workflow.now(), rehearse=request.rehearse),
            **STORE_LOCAL,
        )
        if start.skill is None or start.run is None:
            return None
        self._start, self._run = start, start.run
        run = await self._bounded(start.skill, start.run, self._execute(start.skill, start.run, start, request))
        return await self._close(start.skill, run, start)

    async def _bounded(self, skill: Skill, run: RunRecord, work: Coroutine[Any, Any, RunRecord]) -> RunRecord:
        """The run's work within the skill's ``timeout_minutes``, counted from the run's start (so across a
        carry-over too). Past it the work is cancelled (the call in flight with it: a cancelled call ends
        the tier at once) and the run ends as ``error``, timed out, recorded and counted here like any
        failure; the execution timeout stays the backstop above it."""
        if skill.timeout_minutes is None:
            return await work
        limit = timedelta(minutes=skill.timeout_minutes)
        left = (run.started_at + limit - workflow.now()).total_seconds()
        partial: Any = None
        if left > 0:
            task = asyncio.create_task(work)
            try:
                await workflow.wait_condition(task.done, timeout=left)
                return await task
            except TimeoutError:
                task.cancel()
                try:
                    partial = await task  # what the tier got to, its cancelled call recorded
                except (asyncio.CancelledError, Exception) as e:  # the run has timed out, whatever the work says
                    workflow.logger.info("timed-out run's work ended with %s", type(e).__name__)
        else:
            work.close()  # resumed after its deadline: nothing more is started
        done = partial if isinstance(partial, RunRecord) else run
        return done.model_copy(update={"status": "error", "summary": f"timed out: the run took longer than its "
                                                                      f"timeout_minutes ({skill.timeout_minutes:g})"})

    async def _crashed(self, error: Exception) -> NoReturn:
        """Fail the run for an exception of this workflow's own code: recorded as ``error`` with the
        exception's type and message (counted, notified) when the run row is open, and the workflow
        failed in any case. Nothing here may send the workflow task back to retrying: an exception
        of this path too ends the workflow, failed."""
        reason = f"internal error: {type(error).__name__}: {error}"[:RESULT_EXCERPT]
        workflow.logger.error("skill run failed in the engine's own code: %s", reason, exc_info=error)
        start, run = self._start, self._run
        if start is None or start.skill is None or run is None:
            raise ApplicationError(reason, type=SkillRunFailed.failure_type(), non_retryable=True) from None
        try:
            await self._close(start.skill, run.model_copy(update={"status": "error", "summary": reason}), start)
        except TemporalError:
            raise  # SkillRunFailed with the recorded run, as for any failed run (or the store's failure)
        except Exception as again:
            workflow.logger.error("and the failed run could not be closed: %s: %s", type(again).__name__, again)
            raise ApplicationError(f"{reason}; closing the run failed too: {type(again).__name__}: {again}",
                                   type=SkillRunFailed.failure_type(), non_retryable=True) from None
        # _close fails the workflow for a run in error: it does not come back.
        raise ApplicationError(reason, type=SkillRunFailed.failure_type(), non_retryable=True)

    async def _close(self, skill: Skill, run: RunRecord, start: RunStart) -> RunRecord:
        """Record the run, see to what it means (retire, pause, notify), then end the workflow:
        completed with the run, or, for a run in error, failed with it."""
        run = run.model_copy(update={"finished_at": workflow.now()})
        if start.rehearsal:
            # What it would have sent, recorded with it; nothing is sent, counted or failed: the owner reads it.
            run = run.model_copy(update={"deliveries": would_send(skill, run, start.notifier_tool)})
            self._run = run
            outcome = await workflow.execute_local_activity_method(RunActivities.finish_run, run, **STORE_LOCAL)
            return outcome.run
        self._run = run
        outcome = await workflow.execute_local_activity_method(RunActivities.finish_run, run, **STORE_LOCAL)
        notice = run_notice(skill, outcome, timedelta(seconds=start.notify_interval_seconds), start.notifier_tool)
        denied = await self._delivery_approvals(skill, run, start, notice)
        await aftermath(skill, outcome, notice, self._key_prefix, denied=denied)
        if outcome.run.status == "error":
            raise ApplicationError(outcome.run.summary or "the run failed", outcome.run.model_dump(mode="json"),
                                   type=SkillRunFailed.failure_type(), non_retryable=True)
        return outcome.run

    async def _delivery_approvals(self, skill: Skill, run: RunRecord, start: RunStart,
                                  notice: Notice | None) -> dict[int, str]:
        """A delivery is a tool call like any other: a destination whose tool is destructive (not exempt) or
        listed for approval waits for the owner's yes (or a standing grant), with the message it would send.
        The destinations not approved, by index, with why (they are recorded as not delivered)."""
        if notice is None or not notice.result or not skill.deliver_to \
                or not workflow.patched("deliveries-ask-approval"):
            return {}
        denied: dict[int, str] = {}
        for index, destination in enumerate(skill.deliver_to):
            if destination.tool not in start.destructive_tools \
                    and destination.tool not in skill.approval_required_tools:
                continue
            approval = await self._approval(start, run, f"deliver-{index}", destination.tool,
                                            arguments={**destination.arguments, "message": notice.result})
            if approval is not None and approval.status != "approved":
                denied[index] = denial_text(approval)
            elif approval is not None:
                await workflow.execute_activity_method(
                    ApprovalActivities.approval_outcome,
                    ApprovalOutcome(approval_id=approval.id, outcome="approved: delivered after the run"), **STORE)
        return denied

    async def _execute(self, skill: Skill, run: RunRecord, start: RunStart, request: SkillRunInput) -> RunRecord:
        self._key_prefix = _key_prefix(run, request)
        if start.skip:
            if start.skip_notice:  # told once (begin_run decides), not as the skill's notice: no throttle moved
                await _tell(None, start.skip_notice, call_key(self._key_prefix, "skip-notice", 1))
            return _skipped(run, start.skip)
        if start.refused:
            return run.model_copy(update={"status": "error", "summary": start.refused})
        calls: list[ToolCallRecord] = []
        for i, check in enumerate(skill.preflight):
            arguments = render_arguments(check.arguments, workflow.now(), _zone(skill))
            out = await self._call(check.tool, arguments, f"preflight-{i + 1}", start, calls, "pre-flight ",
                                   place=f"preflight-{i + 1}")
            if out is None:
                return _failed(run, calls)
            if not out.rehearsed and should_skip(check, out.text, out.structured):
                return _skipped(run.model_copy(update={"tool_calls": calls}), f"pre-flight: {check.reason()}")
        if skill.tier == "agent":
            return await self._agent(skill, run.model_copy(update={"tool_calls": calls}), start, request)
        outputs: dict[str, StepOutput] = {}
        for step in skill.execution_plan or []:
            # A remembered result ({{last.result}}) is left as a marker of a nonce drawn here; the call's
            # activity reads the text from the store. Drawn only for such a step: no plan before them had one.
            remembered = recall_names(step.parameters)
            recall = RecallRef(skill_id=skill.id, names=remembered, nonce=workflow.uuid4().hex) if remembered else None
            try:
                if recall is not None and step.tool_name == RUN_SCRIPT:
                    raise PlanError("a script's arguments cannot take a remembered result")
                arguments = resolve(step.parameters, outputs, workflow.now(), _zone(skill),
                                    request.event.model_dump(mode="json") if request.event else None,
                                    recall.nonce if recall else None)
            except PlanError as e:
                return run.model_copy(update={"status": "error", "tool_calls": calls,
                                              "summary": f"step {step.id} could not be prepared: {e}"})
            approval = None
            # A tool marked destructive asks as a listed one does (begin_run decided which, from the catalog:
            # empty in older histories, so they replay as they ran).
            needs_approval = step.approval or step.tool_name in skill.approval_required_tools \
                or step.tool_name in start.destructive_tools
            if needs_approval and not start.rehearsal:  # a rehearsal records such a call, asking no one
                approval = await self._approval(start, run, step.id, step.tool_name, arguments=arguments)
                if approval is not None and approval.status != "approved":
                    return run.model_copy(update={"status": "denied", "tool_calls": calls,
                                                  "summary": f"step {step.id}: {denial_text(approval)}"})
            out = await self._call(step.tool_name, arguments, step.id, start, calls, recall=recall,
                                   record_only=needs_approval)
            if approval is not None:
                await workflow.execute_activity_method(
                    ApprovalActivities.approval_outcome, ApprovalOutcome(approval_id=approval.id, outcome=calls[-1].result),
                    **STORE)
            if out is None:
                return _failed(run, calls)
            outputs[step.id] = StepOutput(text=out.text, structured=out.structured)
        summary = "; ".join(f"{c.tool}: {c.result}" for c in calls if not c.step_id.startswith("preflight"))
        return run.model_copy(update={"status": "success", "tool_calls": calls, "summary": summary[:RESULT_EXCERPT]})

    async def _agent(self, skill: Skill, run: RunRecord, start: RunStart, request: SkillRunInput) -> RunRecord:
        """Connect the toolsets of the skill and of the skills it depends on (their tools join the sandbox),
        open the conversation (kept in the store, by run id), then run the loop. A toolset server that
        cannot start fails the run."""
        toolset_tools, grants, failures = await open_toolsets(
            ([start.toolsets] if start.toolsets else []) + start.dependency_toolsets, start.tool_timeout_seconds)
        if failures:
            return run.model_copy(update={"status": "error", "summary": failures[0]})
        session = await workflow.execute_activity_method(
            AgentActivities.start_agent,
            AgentStart(conversation_id=run.run_id, skill_id=skill.id, now=workflow.now(), event=request.event,
                       skill=skill if start.rehearsal and request.rehearse is not None else None,
                       toolset_tools=toolset_tools, dependencies=start.dependencies,
                       preflight=[PreflightResult(tool=c.tool, result=c.result) for c in run.tool_calls
                                  if c.step_id.startswith("preflight") and c.ok]),
            **STORE,
        )
        loop = AgentLoopState(conversation_id=run.run_id, model=session.model, tools=session.tools,
                              calls=run.tool_calls, script_skills=session.script_skills, toolsets=grants,
                              key_prefix=self._key_prefix, fallback_models=session.fallback_models,
                              approval_tools=list(dict.fromkeys([*skill.approval_required_tools,
                                                                 *start.destructive_tools])),
                              rehearsal=start.rehearsal, closed_world=start.closed_world)
        return await self._agent_loop(skill, run, start, request, loop)

    async def _agent_loop(self, skill: Skill, run: RunRecord, start: RunStart, request: SkillRunInput,
                          loop: AgentLoopState) -> RunRecord:
        def carry_over(state: AgentLoopState) -> NoReturn:
            workflow.continue_as_new(SkillRunInput(skill_id=skill.id, trigger=request.trigger, event=request.event,
                                                   resume=AgentResume(start=start, run=run, loop=state,
                                                                      chain_started_at=self._chain_start),
                                                   rehearse=request.rehearse))

        limits = LoopLimits(max_steps=skill.max_steps, token_cap=start.run_token_cap,
                            malformed_limit=start.malformed_call_limit, llm_timeout_seconds=start.llm_timeout_seconds,
                            tool_timeout_seconds=start.tool_timeout_seconds,
                            script_timeout_seconds=start.script_timeout_seconds)
        async def approve(step: int, message_seq: int, ref: ToolCallRef) -> ToolCallRecord | None:
            approval = await self._approval(start, run, f"turn-{step}", ref.name, message_seq=message_seq,
                                            call_id=ref.id)
            if approval is None or approval.status == "approved":
                return None
            return ToolCallRecord(step_id=f"turn-{step}", tool=ref.name, ok=False, duration_ms=0,
                                  result=denial_text(approval))

        end = await agent_loop(loop, limits, carry_over, None if start.rehearsal else approve)
        return run.model_copy(update={"status": end.status, "summary": end.summary, "tool_calls": end.state.calls,
                                      "prompt_tokens": end.state.prompt_tokens,
                                      "completion_tokens": end.state.completion_tokens,
                                      "model": end.state.answered_by})

    async def _approval(self, start: RunStart, run: RunRecord, step_id: str, tool: str, *,
                        arguments: dict | None = None, message_seq: int | None = None,
                        call_id: str | None = None) -> Approval | None:
        """Record the call, wait for the owner's answer (a signal) or the approval timeout (a timer),
        and record the answer; the approval comes back decided (None: nothing to approve). While it
        waits the run shows as ``waiting`` (its row) and ``SkillWaiting=true`` (its workflow)."""
        agent = call_id is not None
        ask = ApprovalAsk(
            request_key=f"{run.run_id}:{step_id}" + (f":{call_id}" if agent else ""), skill_id=run.skill_id,
            skill_name=run.skill_name, run_id=run.run_id, workflow_id=workflow.info().workflow_id, tool=tool,
            arguments=arguments or {}, conversation_id=run.run_id if agent else None, message_seq=message_seq,
            call_id=call_id, requested_at=workflow.now(), timeout_seconds=self._approval_wait(start))
        approval = await workflow.execute_activity_method(ApprovalActivities.ask_approval, ask, **STORE,
                                                          summary=f"approval of {tool}")
        if approval is None or not approval.pending:
            return approval
        workflow.upsert_search_attributes([SKILL_WAITING.value_set(True), SKILL_APPROVAL.value_set(approval.id)])
        wait = (approval.expires_at - workflow.now()).total_seconds()
        if approval.id not in self._answers and wait > 0:
            try:
                await workflow.wait_condition(lambda: approval.id in self._answers, timeout=wait,
                                              timeout_summary=f"approval {approval.id} times out")
            except TimeoutError:
                pass  # the timer won the race: denied, below
        decision = self._answers.get(approval.id) or ApprovalDecision(
            approval_id=approval.id, approve=False, by=TIMEOUT,
            reason=f"no answer within {span(approval.expires_at - approval.requested_at)}")
        decision = decision.model_copy(update={"reason": decision.reason[:RESULT_EXCERPT]})
        # No longer waiting before the answer is stored: a client that finds the approval answered in the
        # store must not find this run still waiting for it (it would signal an answer nobody reads).
        unset_first = workflow.patched("approval-unset-before-answer")
        if unset_first:
            workflow.upsert_search_attributes([SKILL_WAITING.value_set(False), SKILL_APPROVAL.value_unset()])
        approval = await workflow.execute_activity_method(
            ApprovalActivities.answer_approval,
            ApprovalAnswer(decision=decision, run_id=run.run_id, now=workflow.now(),
                           conversation_id=ask.conversation_id, call_id=call_id), **STORE)
        if not unset_first:
            workflow.upsert_search_attributes([SKILL_WAITING.value_set(False), SKILL_APPROVAL.value_unset()])
        if approval.decided_by == TIMEOUT:
            # Not as the skill's notice (skill_id None): the completion notices' throttle is not touched.
            await _tell(None, f"⏳ {run.skill_name}: {denial_text(approval)} Approval {approval.id} "
                              f"was waiting for you: {approval.summary}",
                        call_key(self._key_prefix or _key_prefix(run, None), f"approval-{approval.id}", 1))
        return approval

    def _approval_wait(self, start: RunStart) -> float:
        """The approval timeout, but never past the run's own deadline (less its margin to close): the
        execution timeout of the chain, which counts from its first run (an Agent loop continues as new)."""
        info = workflow.info()
        wait = start.approval_timeout_seconds
        if info.execution_timeout is not None:
            began = self._chain_start or info.start_time
            left = began + info.execution_timeout - RUN_MARGIN - workflow.now()
            wait = min(wait, max(left.total_seconds(), 1.0))
        return wait

    async def _call(self, tool: str, arguments: dict, step_id: str, start: RunStart,
                    calls: list[ToolCallRecord], label: str = "", *, place: str = "",
                    recall: RecallRef | None = None, record_only: bool = False) -> ToolCallOutput | None:
        """One tool call as its own activity; its record is appended, None if it failed. ``place`` names
        it in its idempotency key (a plan step's by its id when not given). In a rehearsal the activity
        makes the call only if its tool is read-only and not ``record_only``, and a script is not run."""
        began = workflow.now()
        key = "" if tool == RUN_SCRIPT else call_key(self._key_prefix, place or step_place(step_id), 1)
        if start.rehearsal and tool == RUN_SCRIPT:
            calls.append(ToolCallRecord(step_id=step_id, tool=tool, ok=True, duration_ms=0, result=NOT_RUN_SCRIPT,
                                        rehearsed=True, arguments=arguments))
            return ToolCallOutput(ok=True, text=NOT_RUN_SCRIPT, duration_ms=0, rehearsed=True, arguments=arguments)
        try:
            out = await (workflow.execute_activity_method(  # a script step runs in the sandbox
                ScriptActivities.run_script, ScriptRun(skill=start.run.skill_name if start.run else "", arguments=arguments,
                                                step_id=step_id),
                **script_options(start.script_timeout_seconds), summary=f"{label}{tool}",
            ) if tool == RUN_SCRIPT else workflow.execute_activity_method(
                ToolActivities.call_tool,
                ToolCallInput(tool=tool, arguments=arguments, step_id=step_id, toolsets=start.toolsets,
                              idempotency_key=key, recall=recall, rehearsal=start.rehearsal,
                              record_only=record_only, closed_world=start.closed_world),
                **tool_options(start.tool_timeout_seconds),
                summary=f"{label}{tool}",
            ))
            ok, text, elapsed, adjusted = out.ok, out.text, out.duration_ms, out.adjusted
        except ActivityError as e:
            out, ok, text, adjusted = None, False, activity_cause(e), []
            elapsed = int((workflow.now() - began).total_seconds() * 1000)
        calls.append(ToolCallRecord(step_id=step_id, tool=tool, ok=ok, duration_ms=elapsed,
                                    result=text[:RESULT_EXCERPT], adjusted=adjusted, idempotency_key=key,
                                    rehearsed=out is not None and out.rehearsed,
                                    arguments=out.arguments if out is not None else None))
        return out if ok else None


async def aftermath(skill: Skill, outcome: RunOutcome, notice: Notice | None, key_prefix: str = "",
                    denied: dict[int, str] | None = None) -> None:
    """Retire a fired one-shot, pause a skill that failed too often, and tell the user (a closed run's
    consequences: SkillRun's, and Maintenance's for a run it closed). The notice's idempotency key is the
    run's ``notify`` call (``key_prefix``: the run's; derived from the run's record when not given)."""
    if outcome.retired_schedule:
        # Local: one server call, idempotent (a schedule already gone is fine); no task-queue round trip
        # before a fired one-shot's run closes.
        await workflow.execute_local_activity_method(ScheduleActivities.delete_schedule, outcome.retired_schedule,
                                                     **SCHEDULE)
    if outcome.disabled in (FAILURES, BUDGET, ENDED) and outcome.skill is not None:
        await workflow.execute_activity_method(
            ScheduleActivities.sync_schedule,
            ScheduleSync(skill_id=skill.id, previous=PreviousSchedule.of(skill)), **SCHEDULE,
        )
    prefix, run_id = key_prefix or _key_prefix(outcome.run, None), outcome.run.run_id
    if notice is not None and notice.result and skill.deliver_to:
        # The result goes to its destinations, each a step of its own; what concerns the skill's health
        # stays with the notifier. (Decided by the skill begin_run recorded: older histories had none.)
        if notice.health:
            await _tell(skill.id, notice.health, call_key(prefix, "notify", 1), run_id=run_id)
        await _deliver(skill, outcome.run, notice.result, notice.digest, prefix, denied or {})
    elif notice is not None:
        await _tell(skill.id, notice.text, call_key(prefix, "notify", 1), notice.digest, run_id=run_id)


async def _deliver(skill: Skill, run: RunRecord, result: str, digest: str | None, prefix: str,
                   denied: dict[int, str]) -> None:
    """The result to each ``deliver_to`` destination, one activity each (retried, with its own idempotency
    key: a worker lost between two destinations sends each once), then the outcomes recorded on the run.
    When every destination failed, the owner hears it through the notifier, once."""
    deliveries: list[Delivery] = []
    for index, destination in enumerate(skill.deliver_to):
        if index in denied:  # its tool waited for the owner's yes, and did not get it: nothing sent
            deliveries.append(Delivery(destination=destination.label, status="failed", error=denied[index][:300]))
            continue
        if destination.digest_minutes:
            # Gathered with what else goes there within its minutes, and sent as one (DeliveryDigest).
            try:
                await workflow.execute_activity_method(
                    DigestActivities.queue_digest,
                    DigestQueue(key=destination.key, label=destination.label, minutes=destination.digest_minutes,
                                item=DigestItem(run_id=run.run_id, skill_id=skill.id, destination=index)),
                    **NOTIFY, summary=f"digest for {destination.label}"[:200])
                deliveries.append(Delivery(destination=destination.label, status="queued"))
            except ActivityError as e:
                deliveries.append(Delivery(destination=destination.label, status="failed",
                                           error=activity_cause(e)[:300]))
            continue
        try:
            await workflow.execute_activity_method(
                RunActivities.deliver, DeliverInput(destination=destination, message=result, run_id=run.run_id,
                                                    idempotency_key=call_key(prefix, f"deliver-{index}", 1)),
                **NOTIFY, summary=f"deliver to {destination.label}"[:200])
            deliveries.append(Delivery(destination=destination.label, status="delivered"))
        except ActivityError as e:
            # A call that timed out may have sent the message: not known, rather than failed.
            status = "unknown" if isinstance(e.cause, ActivityTimeoutError) else "failed"
            deliveries.append(Delivery(destination=destination.label, status=status,
                                       error=activity_cause(e)[:300]))
    delivered = any(d.status == "delivered" for d in deliveries)
    try:
        await workflow.execute_activity_method(
            RunActivities.record_deliveries,
            DeliveriesRecord(run_id=run.run_id, skill_id=skill.id, deliveries=deliveries, at=workflow.now(),
                             digest=digest if delivered else None), **STORE)
    except ActivityError as e:
        workflow.logger.warning("deliveries of run %s not recorded: %s", run.run_id, activity_cause(e))
    if deliveries and all(d.status == "failed" for d in deliveries):
        reasons = "; ".join(f"{d.destination}: {d.error}" for d in deliveries)
        await _tell(skill.id, f"⚠️ {skill.name}: its result reached none of its destinations ({reasons}). "
                              f"The result: {result}", call_key(prefix, "undelivered", 1))


async def _tell(skill_id: int | None, message: str, idempotency_key: str, digest: str | None = None,
                run_id: str | None = None) -> None:
    """``run_id``: the run the notice tells of, remembered with the message a chat delivered (a reply to it
    continues with that run). Only the activity's input changes with it: histories replay as they were."""
    try:
        await workflow.execute_activity_method(
            RunActivities.notify_user, NotifyInput(skill_id=skill_id, message=message, at=workflow.now(),
                                                   idempotency_key=idempotency_key, digest=digest,
                                                   run_id=run_id), **NOTIFY
        )
    except ActivityError as e:
        # The run itself is recorded; a notification that cannot be sent must not undo it.
        workflow.logger.warning("notification for skill %s not sent: %s", skill_id, activity_cause(e))


def run_notice(skill: Skill, outcome: RunOutcome, notify_interval: timedelta, notifier_tool: str) -> Notice | None:
    """What to tell the user about a closed run, if anything. A ``quiet`` run, a skip or a denial tells
    nothing; a success's result goes out as ``completion_due`` and the skill's ``deliver`` say (finish_run
    recorded whether it is ``unchanged``), its digest with it."""
    run, after = outcome.run, outcome.skill or skill
    if outcome.disabled == FAILURES:
        return Notice(disabled_message(skill, f"{after.consecutive_failures} consecutive failures",
                                       f"Last error: {sentence(run.summary)} Resume it with "
                                       f"`skills resume {skill.id}`."))
    if outcome.disabled == BUDGET:
        return Notice(disabled_message(skill, "budget", f"{outcome.budget}. This run: {run.prompt_tokens:,} prompt + "
                                       f"{run.completion_tokens:,} completion tokens. Resume it with "
                                       f"`skills resume {skill.id}`."))
    note = outcome.incident  # None in the histories of runs closed before incidents: they notify as they did
    if run.status == "error":
        if note is None:
            return Notice(failure_message(skill, run, after.consecutive_failures, outcome.retry_after))
        if note.event == "repeated":
            return None  # the incident's notice went out when it opened
        if note.event == "reminded":  # still open, and its skill's remind_after_minutes have passed
            return Notice(reminder_message(skill, run, note.incident))
        return Notice(incident_message(skill, run, note.incident, outcome.retry_after))
    if run.status != "success":
        return None
    recovered = recovered_message(skill, note.incident) if note is not None and note.event == "recovered" else None
    done = completion_message(skill, run) if completion_due(skill, run, workflow.now(), notify_interval,
                                                            notifier_tool) else None
    text = "\n".join(part for part in (recovered, done) if part)
    return Notice(text, result_digest(run.summary) if done else None, done, recovered) if text else None


def _key_prefix(run: RunRecord, request: SkillRunInput | None) -> str:
    """What this fire's idempotency keys begin with (an Agent loop carries it over a continue-as-new).
    Without the run's input (a run Maintenance closed) an event's run is named by its run id: its
    workflow id is the same for every emit of one event id."""
    event = request.event if request is not None else None
    return run_prefix(run.skill_id, fire_id(
        run.trigger, scheduled_at=run.scheduled_at, event_id=event.id if event else None,
        event_time=event.time if event else None,
        workflow_id=run.run_id if run.trigger == "event" and event is None else run.workflow_id))


def _zone(skill: Skill) -> str:
    return skill.trigger_config.timezone if skill.trigger_config and skill.trigger_config.timezone else "UTC"


def _skipped(run: RunRecord, reason: str) -> RunRecord:
    return run.model_copy(update={"status": "skipped", "summary": reason})


def _failed(run: RunRecord, calls: list[ToolCallRecord]) -> RunRecord:
    last = calls[-1]
    return run.model_copy(update={"status": "error", "tool_calls": calls,
                                  "summary": f"{last.tool} failed: {last.result}"})
