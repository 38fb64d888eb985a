"""The worker's workflow runner (service/workflow_sandbox.py) on a real dev server: Temporal's sandbox
with its code strings compiled once still refuses what the sandbox refuses, and still runs workflows
whose payloads cross activities (the serialization context it compiles is asked for each of them)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():  # this module is imported again in each run's sandbox
    from service.workflow_sandbox import WORKFLOW_RUNNER, compiled


@activity.defn
async def echo(text: str) -> str:
    return f"echo {text}"


@workflow.defn(sandboxed=True, failure_exception_types=[workflow.NondeterminismError])
class ReadsTheClock:
    @workflow.run
    async def run(self) -> str:
        return datetime.now(UTC).isoformat()  # the wall clock: the sandbox refuses it


@workflow.defn(sandboxed=True)
class Echoes:
    @workflow.run
    async def run(self, text: str) -> list[str]:
        return [await workflow.execute_activity(echo, f"{text} {i}", start_to_close_timeout=timedelta(seconds=30))
                for i in range(3)]


async def test_the_compiled_sandbox_still_refuses_the_wall_clock_and_runs_activities(client: Client) -> None:
    queue = f"sandbox-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[ReadsTheClock, Echoes], activities=[echo],
                      workflow_runner=WORKFLOW_RUNNER):
        assert type(WORKFLOW_RUNNER).__name__ == "CompiledSandboxRunner"  # not the SDK's fallback
        hits = compiled.cache_info().hits

        with pytest.raises(WorkflowFailureError) as refused:
            await client.execute_workflow(ReadsTheClock.run, id=f"clock-{queue}", task_queue=queue)
        assert "Cannot access datetime.datetime.now" in str(refused.value.cause)

        assert await client.execute_workflow(Echoes.run, "hi", id=f"echo-{queue}", task_queue=queue) == [
            "echo hi 0", "echo hi 1", "echo hi 2"]
        assert compiled.cache_info().hits > hits  # the sandbox ran its code strings from the cache
