"""Acting activities refuse to run outside a workflow of this engine.

Any holder of the namespace can start any activity on the task queue. The client's reads stay open;
an activity that acts, started by a client or by a workflow type the engine does not have, is refused
before its code runs, and nothing happens.
"""

from __future__ import annotations

import importlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from skills.naming import WORKFLOW_TYPES
from tests.conftest import ROOT, Engine

WATER = {"name": "drink water", "instructions": "Remind me to drink water", "schedule": "0 9 * * *",
         "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Drink water!"}}]}


async def start(client: Client, engine: Engine, name: str, arg: Any) -> Any:
    return await client.execute_activity(
        name, arg, id=f"guard-{uuid.uuid4().hex}", task_queue=engine.settings.task_queue,
        schedule_to_close_timeout=timedelta(seconds=30), retry_policy=RetryPolicy(maximum_attempts=3))


def refused(error: BaseException) -> ApplicationError:
    cause = error.__cause__
    assert isinstance(cause, ApplicationError), error
    assert cause.type == "OutsideEngineError" and cause.non_retryable
    return cause


async def test_a_client_reads_but_cannot_act(engine: Engine, client: Client) -> None:
    registered = await engine.skills.register(WATER)
    assert registered.ok and registered.skill is not None
    skill = registered.skill
    now = datetime.now(UTC).isoformat()
    acts: list[tuple[str, Any]] = [
        ("set_skill_enabled", {"skill_id": skill.id, "enabled": False, "now": now}),
        ("delete_skill", {"target": {"ref": str(skill.id)}, "action": "delete"}),
        ("call_tool", {"tool": "outbox_send_message", "arguments": {"message": "from a client"}}),
        ("call_tool", {"tool": "outbox_list_messages", "arguments": {},
                       "toolsets": {"skill": "x", "servers": ["outbox"], "digest": "sha256:0"}}),
        ("run_script", {"skill": "x", "arguments": {"script": "y.py"}}),
        ("notify_user", {"skill_id": skill.id, "message": "hi", "at": now}),
        ("sync_schedule", {"skill_id": skill.id}),
    ]
    for name, arg in acts:
        with pytest.raises(Exception) as caught:  # noqa: PT011 - the activity's failure, checked below
            await start(client, engine, name, arg)
        reason = refused(caught.value)
        assert f"activity '{name}' acts, and was started outside a workflow of this engine" in reason.message
    # Nothing happened: the skill is there, enabled; nothing reached the outbox.
    after = await engine.skills.get(skill.id)
    assert after.enabled
    assert engine.outbox() == []
    # The client's reads still work.
    assert [s.id for s in await engine.skills.list()] == [skill.id]
    assert await engine.skills.runs(skill.id) == []
    assert "outbox" in (await engine.skills.catalog()).catalog
    assert await engine.skills.outbox() == []


@workflow.defn(name="NotOurs")
class Stranger:
    @workflow.run
    async def run(self, queue: str) -> Any:
        return await workflow.execute_activity(
            "call_tool", {"tool": "outbox_send_message", "arguments": {"message": "from a stranger"}},
            task_queue=queue, start_to_close_timeout=timedelta(seconds=30))


async def test_a_workflow_type_the_engine_does_not_have_cannot_act(engine: Engine, client: Client) -> None:
    queue = f"stranger-{uuid.uuid4().hex}"
    async with Worker(client, task_queue=queue, workflows=[Stranger], workflow_runner=UnsandboxedWorkflowRunner()):
        with pytest.raises(WorkflowFailureError) as caught:
            await client.execute_workflow("NotOurs", engine.settings.task_queue, id=queue, task_queue=queue,
                                          execution_timeout=timedelta(seconds=60))
    assert isinstance(caught.value.cause, ActivityError)
    assert "workflow type 'NotOurs', which is not one of this engine's" in refused(caught.value.cause).message
    assert engine.outbox() == []


def test_the_engines_workflow_types_are_all_named() -> None:
    """Every workflow class of workflows/ is registered under a name of WORKFLOW_TYPES, so the guard lets it act."""
    names = set()
    for path in (ROOT / "workflows").glob("*.py"):
        module = importlib.import_module(f"workflows.{path.stem}")
        for value in vars(module).values():
            definition = getattr(value, "__temporal_workflow_definition", None)
            if isinstance(value, type) and definition is not None and value.__module__ == module.__name__:
                names.add(definition.name)
    assert names == WORKFLOW_TYPES
