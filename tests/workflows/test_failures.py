"""What users see in Temporal is true: a failed run is a Failed workflow, a skipped or successful
one a Completed workflow, and the engine's own rounds can be filtered out of the list.

Checked with the real `temporal` CLI, with the queries docs/cli.md gives."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from client.temporal_cli import temporal_binary
from config.settings import Settings
from search_attributes import SKILL_AGENT, SKILL_NAME, SKILL_TIER
from skills.errors import SkillRunFailed
from skills.spec.models import RunRecord
from tests.conftest import DEV_SERVER_STARTUP, Engine, eventually, trigger_schedule
from tests.fakes.llm_server import ScriptedLLM, call
from tests.history import replayer
from tests.workflows.test_resilience import broken, fire
from workflows.run import SkillRun

FAILED = "WORKFLOW_EXECUTION_STATUS_FAILED"
COMPLETED = "WORKFLOW_EXECUTION_STATUS_COMPLETED"
CONTINUED = "WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW"


async def temporal_list(client: Client, query: str) -> list[dict[str, Any]]:
    """`temporal workflow list --query ...` as a user runs it: the executions, newest first."""
    process = await asyncio.create_subprocess_exec(
        temporal_binary(), "workflow", "list", "--address", client.service_client.config.target_host,
        "--namespace", client.namespace, "--query", query, "--output", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    assert process.returncode == 0, f"the CLI refused {query!r}: {err.decode()}"
    return json.loads(out)


async def listed(client: Client, query: str, count: int | None = None,
                 until: Callable[[list[dict[str, Any]]], bool] | None = None) -> list[dict[str, Any]]:
    """The executions the query lists, once visibility (a moment behind the workflows) shows
    ``count`` of them, or what ``until`` waits for."""
    async def probe() -> list[dict[str, Any]] | None:
        found = await temporal_list(client, query)
        return found if (len(found) == count if until is None else until(found)) else None

    return await eventually(probe, timeout=30, interval=0.5)


def ids(executions: list[dict[str, Any]]) -> set[str]:
    return {e["execution"]["workflowId"] for e in executions}


@pytest.fixture
def slow_backoff(settings: Settings) -> Settings:
    # A fire right after a failure is always inside the first window: it is skipped.
    return settings.model_copy(update={"backoff_steps": [timedelta(minutes=10)]})


async def test_a_failed_run_is_a_failed_workflow_and_the_schedule_fires_on(client: Client,
                                                                         slow_backoff: Settings) -> None:
    engine = await Engine(slow_backoff, client).start()
    try:
        skill = (await engine.skills.register(broken())).skill
        assert skill is not None and skill.schedule_id is not None
        queue = engine.settings.task_queue

        failed = await fire(client, engine, skill.schedule_id)
        assert failed.status == "error"
        # The workflow failed with the run's error as its message and the run as its details,
        # after the run was recorded, its notice sent and its backoff stored.
        with pytest.raises(WorkflowFailureError) as ended:
            await client.get_workflow_handle(failed.workflow_id, run_id=failed.run_id).result()
        cause = ended.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == SkillRunFailed.failure_type()
        assert cause.message == failed.summary and cause.non_retryable
        assert RunRecord.model_validate(cause.details[0]) == failed
        notices = [m["message"] for m in engine.outbox()]
        assert len(notices) == 1 and notices[0].startswith(f"❌ broken: {failed.summary}. Scheduled fires resume after ")
        stored = await engine.skills.get("broken")
        assert stored.consecutive_failures == 1 and stored.backoff_until is not None
        # Failing is deterministic: the history replays.
        history = await client.get_workflow_handle(failed.workflow_id, run_id=failed.run_id).fetch_history()
        await replayer(SkillRun).replay_workflow(history)

        # The schedule goes on firing after a failed run: this fire is skipped (backoff), and
        # a skipped run is a Completed workflow.
        skipped = await fire(client, engine, skill.schedule_id)
        assert skipped.status == "skipped" and skipped.summary.startswith("backoff")
        description = await client.get_schedule_handle(skill.schedule_id).describe()
        assert not description.schedule.state.paused and len(description.info.recent_actions) == 2

        # A manual run fails its workflow the same way, and the client still returns the run.
        manual = await engine.skills.run("broken")
        assert isinstance(manual, RunRecord) and manual.status == "error" and manual.trigger == "manual"

        # The query docs/cli.md gives finds exactly the failed runs, with the real CLI.
        failures = await listed(client, f"SkillName='broken' AND TaskQueue='{queue}' AND ExecutionStatus='Failed'", 2)
        assert ids(failures) == {failed.workflow_id, manual.workflow_id}
        assert {e["status"] for e in failures} == {FAILED}
        tier_query = f"SkillTier='direct' AND TaskQueue='{queue}' AND ExecutionStatus='Failed'"
        assert ids(await listed(client, tier_query, 2)) == ids(failures)

        # Fixed, a run succeeds: Completed, like the skipped one.
        await engine.skills.update("broken", {"execution_plan": [
            {"toolName": "outbox_send_message", "parameters": {"message": "fixed"}}]})
        fixed = await engine.skills.run("broken")
        assert fixed.status == "success"
        completed = await listed(client, f"SkillName='broken' AND TaskQueue='{queue}' AND "
                                         "ExecutionStatus='Completed'", 2)
        assert ids(completed) == {skipped.workflow_id, fixed.workflow_id}
    finally:
        await engine.stop()


@pytest.fixture
async def short_histories() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server of its own that suggests a continue-as-new after 20 history events, so an
    Agent-tier run carries over every turn or two, as a long one does on a real server."""
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(), dev_server_startup_timeout=DEV_SERVER_STARTUP,
        data_converter=pydantic_data_converter, search_attributes=[SKILL_NAME, SKILL_AGENT, SKILL_TIER],
        dev_server_extra_args=["--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=20"],
    )
    yield environment
    await environment.shutdown()


async def test_an_agent_run_that_fails_after_continuing_as_new_is_a_failed_workflow(
        short_histories: WorkflowEnvironment, settings: Settings, llm: ScriptedLLM) -> None:
    client = short_histories.client
    llm.script("default", [call("outbox_list_messages", {})] * 4)
    engine = await Engine(settings.model_copy(update={"llm_base_url": llm.base_url, "llm_api_key": "sk-fake-test-key",
                                                      "llm_model": "default"}), client).start()
    try:
        await engine.skills.register({"name": "looper", "instructions": "Look at the outbox until told to stop.",
                                      "required_tools": ["outbox_list_messages"], "max_steps": 4})
        run = await engine.skills.run("looper")
        assert isinstance(run, RunRecord) and run.tier == "agent" and run.status == "error"
        assert run.summary == "stopped: max_steps (4) reached without a final answer"
        assert len(run.tool_calls) == 4 and llm.remaining("default") == 0
        assert [r.status for r in await engine.skills.runs("looper")] == ["error"]  # one run, recorded once

        # Every run of the chain but the last continued as new; the last one failed.
        chain = await listed(client, f"WorkflowId='{run.workflow_id}'",
                             until=lambda found: len(found) >= 2 and FAILED in {e["status"] for e in found})
        statuses = [e["status"] for e in sorted(chain, key=lambda e: e["startTime"])]
        assert set(statuses[:-1]) == {CONTINUED} and statuses[-1] == FAILED
        # docs/cli.md's query, as given (this server holds this test's workflows only).
        assert ids(await listed(client, "SkillTier='agent' AND ExecutionStatus='Failed'", 1)) == {run.workflow_id}
    finally:
        await engine.stop()
        async for schedule in await client.list_schedules():
            await client.get_schedule_handle(schedule.id).delete()


async def test_the_documented_queries_leave_the_engine_rounds_out(engine: Engine, client: Client) -> None:
    """docs/cli.md: `WorkflowType='SkillRun'` (or `SkillName IS NOT NULL`) lists skill runs only;
    `WorkflowType NOT IN ('Maintenance', 'SyncSkillFiles')` everything but the engine's rounds;
    `TemporalScheduledById` one schedule's workflows."""
    queue = engine.settings.task_queue
    await engine.skills.register({"name": "ping", "instructions": "x", "execution_plan": [
        {"toolName": "outbox_send_message", "parameters": {"message": "pong"}}]})
    assert (await engine.skills.run("ping")).status == "success"
    await trigger_schedule(client, f"{queue}-maintenance")
    await trigger_schedule(client, f"{queue}-sync-files")
    scope = f"TaskQueue='{queue}'"
    # A round may also fire by itself: at least one of each.
    rounds = await listed(client, f"{scope} AND WorkflowType IN ('Maintenance', 'SyncSkillFiles')", until=lambda
                          found: {e["type"]["name"] for e in found} == {"Maintenance", "SyncSkillFiles"})

    runs = await listed(client, f"{scope} AND WorkflowType='SkillRun'", 1)
    assert [e["type"]["name"] for e in runs] == ["SkillRun"]
    assert ids(await listed(client, f"{scope} AND SkillName IS NOT NULL", 1)) == ids(runs)
    rest = await listed(client, f"{scope} AND WorkflowType NOT IN ('Maintenance', 'SyncSkillFiles')", 2)
    assert {e["type"]["name"] for e in rest} == {"RegisterSkill", "SkillRun"} and not ids(rest) & ids(rounds)
    maintenance = await listed(client, f"TemporalScheduledById='{queue}-maintenance'",
                               until=lambda found: len(found) >= 1)
    assert {e["type"]["name"] for e in maintenance} == {"Maintenance"}
