"""The engine's own workflows as its activities reach them: a port over the Temporal client, so that an
activity says what it wants done (queue to a workflow that gathers, run a workflow once per id, ask whether a
run goes on) and never holds the client, its handles or its policies (docs/architecture.md).

``activities.schedules`` reaches Schedules the same way, through ``adapters.schedules.ScheduleWriter``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

T = TypeVar("T")

SUMMARY_LIMIT = 200
"""The characters of a workflow's static summary the engine writes (the UI shows it in one line)."""


class RunUnknownError(Exception):
    """Temporal could not say now whether a workflow runs (the server busy or unreachable): ask again later."""


class EngineWorkflows:
    """Workflows of the engine on its task queue, started and read through one Temporal client."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self.client = client
        self.task_queue = task_queue

    async def signal_with_start(self, workflow: str, arg: Any, *, workflow_id: str, signal: str,
                                signal_args: Sequence[Any], summary: str) -> None:
        """Signal the running ``workflow_id``, or start it with ``arg`` and the signal as its first event."""
        await self.client.start_workflow(
            workflow, arg, id=workflow_id, task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            start_signal=signal, start_signal_args=list(signal_args), static_summary=summary[:SUMMARY_LIMIT])

    async def run_once(self, workflow: str, arg: Any, result_type: type[T], *, workflow_id: str,
                       summary: str) -> T | str:
        """Run ``workflow`` to its end once per ``workflow_id``: a second call (an activity's retry) joins the
        execution the first started, running or done. Its result, or why it failed."""
        try:
            handle = await self.client.start_workflow(
                workflow, arg, id=workflow_id, task_queue=self.task_queue, result_type=result_type,
                static_summary=summary[:SUMMARY_LIMIT],
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
        except WorkflowAlreadyStartedError:
            handle = self.client.get_workflow_handle(workflow_id, result_type=result_type)
        try:
            return await handle.result()
        except WorkflowFailureError as exc:
            return f"{workflow} failed: {exc.cause or exc}"

    async def still_running(self, workflow_id: str, run_id: str) -> bool:
        """Whether the chain of runs ``run_id`` began (its first run's id; an Agent loop continues as new) is
        still running under ``workflow_id``. Gone past the namespace's retention: ended long ago, False.
        Raises :class:`RunUnknownError` when Temporal cannot answer now."""
        try:
            described = await self.client.get_workflow_handle(workflow_id).describe()
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                return False
            raise RunUnknownError(f"workflow {workflow_id} could not be described: {e}") from e
        if described.status != WorkflowExecutionStatus.RUNNING:
            return False
        # The workflow id is the newest execution's: an event's runs share theirs, so a running one may be a
        # later chain, which says nothing of this one.
        first = described.raw_description.workflow_execution_info.first_run_id or described.run_id
        return run_id in (first, described.run_id)
