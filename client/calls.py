"""The client's calls to the engine over Temporal: a change run as a workflow to its end, a read as a
standalone activity on the worker's task queue, and the check that a worker polls it, each failure said as
the client's own error (no worker, not found, failed and why).

:class:`client.skills_client.SkillsClient` and the other client modules (:mod:`client.trust`) reach the
engine through one :class:`EngineCalls`, ``skills.calls``.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import ActivityFailureError, Client, WorkflowFailureError
from temporalio.common import RetryPolicy, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, TimeoutError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from skills.errors import (
    RunNotFoundError,
    SkillNotFoundError,
    SkillsError,
    WorkerUnavailableError,
    error_class,
)

READ_TIMEOUT = timedelta(seconds=30)
BUSY_READ_TIMEOUT = timedelta(minutes=2)
"""How long a read is asked again for when it found no worker free, but a worker took a task from the queue
within it: a worker that is there and busy (a burst of fires on a loaded machine) answers late, not never."""
CHANGE_TIMEOUT = timedelta(minutes=2)
WORKER_GRACE = timedelta(seconds=30)
"""How long a chat turn waits for a worker to poll its task queue before saying there is none."""
CLOCK_SKEW = timedelta(seconds=5)
"""How far the server's clock (a poller's last access) may be from this machine's: a worker seen polling this
long before a read was sent still counts as one that was there for it."""
BUSY = frozenset({RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.UNAVAILABLE,
                  RPCStatusCode.RESOURCE_EXHAUSTED})
"""What a loaded server answers a call it had no time for (seen: ``operation was canceled`` from a dev
server under load): no answer at all, to be asked again."""

T = TypeVar("T")


class EngineCalls:
    """Workflows and reads on one task queue of one Temporal client."""

    def __init__(self, client: Client, task_queue: str) -> None:
        self.client = client
        self.task_queue = task_queue

    async def workflow(self, workflow: str, arg: Any, result_type: type[T], id_prefix: str, summary: str,
                       timeout: timedelta = CHANGE_TIMEOUT, workflow_id: str | None = None) -> T:
        """Run ``workflow`` to its end. With ``workflow_id`` it runs once per id: a second call
        attaches to the first execution, running or finished, and returns its result."""
        try:
            try:
                return await self.client.execute_workflow(
                    workflow,
                    arg,
                    id=workflow_id or f"{id_prefix}-{uuid.uuid4().hex[:8]}",
                    task_queue=self.task_queue,
                    result_type=result_type,
                    static_summary=summary,
                    id_conflict_policy=(WorkflowIDConflictPolicy.USE_EXISTING if workflow_id
                                        else WorkflowIDConflictPolicy.FAIL),
                    # Only a failed (or timed-out) execution may run again under the same id.
                    id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
                    # Without a worker the change would wait forever; this turns that into an answer.
                    execution_timeout=timeout,
                )
            except WorkflowAlreadyStartedError:
                if workflow_id is None:
                    raise
                return await self.client.get_workflow_handle(workflow_id, result_type=result_type).result()
        except WorkflowFailureError as e:
            raise self.failed(workflow, timeout, e) from e

    def failed(self, workflow: str, timeout: timedelta, e: WorkflowFailureError) -> SkillsError:
        """A change workflow's failure as the client's error: timed out means no worker answered."""
        if isinstance(e.cause, TimeoutError):
            return WorkerUnavailableError(
                f"{workflow} did not finish within {int(timeout.total_seconds())}s: is a worker running on "
                f"task queue '{self.task_queue}' (`skills worker` or `make run`)?")
        first = root(e)
        if isinstance(first, ApplicationError) and error_class(first.type) is RunNotFoundError:
            return RunNotFoundError(first.message)  # a chat's reply_to: the words say what to give
        return SkillsError(f"{workflow} failed: {root_message(e)}")

    async def require_worker(self) -> None:
        """Say soon, not after CHAT_TIMEOUT, that no worker serves the task queue.

        The server lists a worker's pollers for a few minutes after its last poll,
        so this catches the worker that was never started (the common slip); one that died a
        moment ago is still caught, later, by the workflow's timeout. A worker that is
        starting has ``WORKER_GRACE`` to begin polling."""
        request = DescribeTaskQueueRequest(
            namespace=self.client.namespace,
            task_queue=TaskQueue(name=self.task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
        deadline = asyncio.get_running_loop().time() + WORKER_GRACE.total_seconds()
        while True:
            try:
                if (await self.client.workflow_service.describe_task_queue(request)).pollers:
                    return
                answered = True
            except RPCError as e:
                if e.status not in BUSY:
                    raise
                # The check is a courtesy: a server too busy to answer it has said nothing of the worker.
                answered = False
            if asyncio.get_running_loop().time() > deadline:
                if not answered:
                    return  # go on: the workflow's own timeout still catches a worker that is not there
                raise WorkerUnavailableError(
                    f"no worker is polling task queue '{self.task_queue}' on namespace "
                    f"'{self.client.namespace}': start one with `skills worker` (or `make run`)")
            await asyncio.sleep(0.25)

    async def read(self, name: str, arg: Any, result_type: Any, retry_policy: RetryPolicy | None = None) -> Any:
        """A read, answered by a worker within ``READ_TIMEOUT``; if none answered but one took a task from the
        queue meanwhile (busy, not gone), asked again for ``BUSY_READ_TIMEOUT``."""
        asked = datetime.now(UTC)
        try:
            return await self._read(name, arg, result_type, retry_policy, READ_TIMEOUT)
        except TimeoutError:
            seen = await self.last_taken()
            if seen is None or seen < asked - CLOCK_SKEW:
                raise WorkerUnavailableError(
                    f"no worker answered on task queue '{self.task_queue}' within {READ_TIMEOUT.seconds}s: "
                    "is `skills worker` (or `make run`) running?") from None
        try:
            return await self._read(name, arg, result_type, retry_policy, BUSY_READ_TIMEOUT)
        except TimeoutError:
            waited = int((READ_TIMEOUT + BUSY_READ_TIMEOUT).total_seconds())
            raise WorkerUnavailableError(
                f"the workers on task queue '{self.task_queue}' are taking tasks, but none answered this read "
                f"within {waited}s: they are busy or stuck (`temporal task-queue describe --task-queue "
                f"{self.task_queue}` lists them)") from None

    async def _read(self, name: str, arg: Any, result_type: Any, retry_policy: RetryPolicy | None,
                    timeout: timedelta) -> Any:
        """One read as a standalone activity; a TimeoutError (the SDK's) when no worker answered in ``timeout``."""
        try:
            return await self.client.execute_activity(
                name,
                arg,
                id=f"{name}-{uuid.uuid4().hex}",
                task_queue=self.task_queue,
                result_type=result_type,
                schedule_to_close_timeout=timeout,
                retry_policy=retry_policy,
            )
        except ActivityFailureError as e:
            cause = e.cause
            if isinstance(cause, ApplicationError) and error_class(cause.type) is SkillNotFoundError:
                raise SkillNotFoundError(cause.message) from e
            if isinstance(cause, TimeoutError):
                raise cause from e
            raise SkillsError(f"{name} failed: {root_message(e)}") from e

    async def last_taken(self) -> datetime | None:
        """When a worker last asked the queue for an activity task (the server's account), or None: no
        poller listed, or a server too busy to say. A worker asks again as soon as it takes one, so a time
        after a read was sent means a worker that is there; one whose slots are all taken does not ask."""
        request = DescribeTaskQueueRequest(
            namespace=self.client.namespace,
            task_queue=TaskQueue(name=self.task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        )
        try:
            pollers = (await self.client.workflow_service.describe_task_queue(request)).pollers
        except RPCError as e:
            if e.status not in BUSY:
                raise
            return None
        return max((p.last_access_time.ToDatetime(tzinfo=UTC) for p in pollers), default=None)


def root(error: BaseException) -> BaseException:
    """The first cause of a chain of failures: what went wrong, under the SDK's wrappers."""
    while error.__cause__ is not None:
        error = error.__cause__
    return error


def root_message(error: BaseException) -> str:
    error = root(error)
    return str(getattr(error, "message", None) or error)
