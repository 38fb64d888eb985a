"""The worker polls at once: an MCP server that is slow to start delays only the calls of its tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.client import Client

from client import SkillsClient
from config.settings import Settings
from tests.conftest import eventually, free_port, worker_process
from tests.service.http import answers, gated_config


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
        # Ready (polling, store fine) while the gated server is still in its handshake.
        status, body = await eventually(lambda: _ready(port), timeout=60)
        assert json.loads(body)["mcp"]["gated"]["status"] == "connecting"

        await skills.register(_note("quick", "outbox_send_message"))
        run = await skills.run("quick")
        assert run.status == "success", run.summary
        # The run is over, and the slow server has not even started its handshake yet.
        assert log.read_text().splitlines() == ["waiting"]
        assert json.loads((await answers(port, "/readyz") or (0, "{}"))[1])["mcp"]["gated"]["status"] == "connecting"

        # A skill that needs the slow server: its registration and its run wait for it, then succeed.
        waiting = asyncio.create_task(_register_and_run(skills))
        done, _ = await asyncio.wait({waiting}, timeout=1.0)
        assert not done, "the registration needing the gated server did not wait for it"
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
