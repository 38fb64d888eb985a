"""SkillRun: one fire of one skill.

The input is the skill's id, not its body: the body is loaded by an activity at
fire time, so an update between two fires takes effect without touching the
schedule, and payloads stay small.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities.runs import RunActivities
    from activities.tools import ToolActivities, ToolCallInput
    from skills.messages import BeginRun, SkillRunInput
    from skills.models import RunRecord, Skill, ToolCallRecord
    from skills.naming import SCHEDULED_START_TIME

STORE = {"start_to_close_timeout": timedelta(seconds=30), "retry_policy": RetryPolicy(maximum_attempts=10)}
# A tool call may have side effects (a message sent), so it is retried only a few
# times, and only for failures that may be transient (unknown tools and bad
# arguments are raised as non-retryable by the activity).
TOOL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0, maximum_attempts=3)
RESULT_EXCERPT = 2000


@workflow.defn(name="SkillRun")
class SkillRun:
    @workflow.run
    async def run(self, request: SkillRunInput) -> RunRecord | None:
        info = workflow.info()
        start = await workflow.execute_activity_method(
            RunActivities.begin,
            BeginRun(
                skill_id=request.skill_id,
                run_id=info.run_id,
                workflow_id=info.workflow_id,
                trigger=request.trigger,
                scheduled_at=info.typed_search_attributes.get(SCHEDULED_START_TIME),
                started_at=workflow.now(),
            ),
            **STORE,
        )
        if start.skill is None or start.run is None:
            return None
        skill, run = start.skill, start.run

        if request.trigger == "schedule" and not skill.enabled:
            run = run.model_copy(update={"status": "skipped", "summary": f"disabled: {skill.disabled_reason}"})
        elif skill.tier == "direct":
            run = await self._direct(skill, run, timedelta(seconds=start.tool_timeout_seconds))
        else:
            run = run.model_copy(
                update={"status": "unavailable", "summary": "agent tier not available in this version of the engine"}
            )
        run = run.model_copy(update={"finished_at": workflow.now()})
        return await workflow.execute_activity_method(RunActivities.finish, run, **STORE)

    async def _direct(self, skill: Skill, run: RunRecord, timeout: timedelta) -> RunRecord:
        """The fixed plan, one activity per tool call, in order; the first failure ends the run."""
        calls: list[ToolCallRecord] = []
        for step in skill.execution_plan or []:
            began = workflow.now()
            try:
                out = await workflow.execute_activity_method(
                    ToolActivities.call_tool,
                    ToolCallInput(tool=step.tool_name, arguments=step.parameters, step_id=step.id),
                    start_to_close_timeout=timeout,
                    heartbeat_timeout=timedelta(seconds=30),
                    retry_policy=TOOL_RETRY,
                    summary=step.tool_name,
                )
                ok, text = out.ok, out.text
            except ActivityError as e:
                ok, text = False, _cause(e)
            elapsed = int((workflow.now() - began).total_seconds() * 1000)
            calls.append(ToolCallRecord(step_id=step.id, tool=step.tool_name, ok=ok, duration_ms=elapsed,
                                        result=text[:RESULT_EXCERPT]))
            if not ok:
                return run.model_copy(
                    update={"status": "error", "tool_calls": calls, "summary": f"{step.tool_name} failed: {text}"}
                )
        summary = "; ".join(f"{c.tool}: {c.result}" for c in calls)
        return run.model_copy(update={"status": "success", "tool_calls": calls, "summary": summary[:RESULT_EXCERPT]})


def _cause(error: ActivityError) -> str:
    cause = error.cause
    while cause is not None and cause.cause is not None:
        cause = cause.cause
    return str(getattr(cause, "message", None) or cause or error)
