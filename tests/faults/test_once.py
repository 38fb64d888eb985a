"""Exactly-once effects through a worker's death: the worker is SIGKILLed after the outbox stored the
message and before the activity completed; the retry, on a new worker, sends the same idempotency
key, and the outbox answers it with the first result instead of storing the message again."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from client import SkillsClient
from config.settings import Settings
from skills.run.idempotency import call_key, run_prefix
from tests.conftest import Engine, WorkerProcess, eventually, worker_process
from tests.fakes.holding import held_outbox, release
from tests.fakes.llm_server import ScriptedLLM, call, say
from tests.faults.test_faults import address_of

pytestmark = pytest.mark.slow


async def kill_once_stored(settings: Settings, client: Client, hold: Path, name: str, skill: dict,
                           **env: str) -> str:
    """Register ``skill``, run it, SIGKILL the worker the moment the outbox holds its message (the
    activity still waiting for the held answer), release the hold; the run's workflow id."""
    skills = SkillsClient(client, settings.task_queue)
    outbox = Engine(settings, client).outbox
    first = WorkerProcess(settings, address_of(client), **env).start()
    try:
        await skills.register(skill)
        workflow_id = await skills.run(name, wait=False)
        assert isinstance(workflow_id, str)
        await eventually(outbox, timeout=60, interval=0.02)
        first.kill()  # SIGKILL: the call was made, its activity never completed
    finally:
        first.stop()
        release(hold)
    return workflow_id


async def test_a_direct_step_retried_after_the_worker_died_stores_its_message_once(
        client: Client, settings: Settings, tmp_path: Path) -> None:
    settings, hold = held_outbox(settings, tmp_path)
    workflow_id = await kill_once_stored(settings, client, hold, "once", {
        "name": "once", "instructions": "x", "notify_on_completion": False,
        "execution_plan": [{"id": "tell", "toolName": "outbox_send_message", "parameters": {"message": "hello"}}]})

    with worker_process(settings, address_of(client)):
        run = await client.get_workflow_handle(workflow_id).result()
        runs = await SkillsClient(client, settings.task_queue).runs("once")
    assert run["status"] == "success"
    assert [m["message"] for m in Engine(settings, client).outbox()] == ["hello"]
    [stored] = runs
    [made] = stored.tool_calls
    assert made.ok and made.idempotency_key == call_key(run_prefix(stored.skill_id, f"run-{workflow_id}"), "step-tell", 1)
    assert Engine(settings, client).outbox()[0]["idempotency_key"] == made.idempotency_key
    assert made.result == runs[0].summary.removeprefix("outbox_send_message: ")


async def test_an_agent_tool_call_retried_after_the_worker_died_stores_its_message_once(
        client: Client, settings: Settings, tmp_path: Path, llm: ScriptedLLM) -> None:
    settings, hold = held_outbox(settings, tmp_path)
    llm.script("default", [call("outbox_send_message", {"message": "Good morning!"}), say("Sent.")])
    env = {"SKILLS_LLM_BASE_URL": llm.base_url, "SKILLS_LLM_API_KEY": "sk-fake", "SKILLS_LLM_MODEL": "default"}
    workflow_id = await kill_once_stored(settings, client, hold, "briefing", {
        "name": "briefing", "instructions": "Send me a short good-morning note.",
        "required_tools": ["outbox_send_message"], "notify_on_completion": False}, **env)

    with worker_process(settings, address_of(client), **env):
        run = await client.get_workflow_handle(workflow_id).result()
        runs = await SkillsClient(client, settings.task_queue).runs("briefing")
    assert (run["status"], run["summary"]) == ("success", "Sent.")
    assert [m["message"] for m in Engine(settings, client).outbox()] == ["Good morning!"]
    [stored] = runs
    [made] = stored.tool_calls
    assert made.ok and made.idempotency_key == call_key(run_prefix(stored.skill_id, f"run-{workflow_id}"), "turn-1", 1)
    # The model was asked once per turn: no turn was repeated. An attempt retried on a loaded machine (its
    # heartbeat late) asks again with its turn's Idempotency-Key and is answered the same (`replayed`).
    assert len([r for r in llm.requests_for("default") if not r.replayed]) == 2
