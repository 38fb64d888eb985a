"""The worker's probes, asked over HTTP of a real `python -m worker` as Kubernetes asks them."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from pathlib import Path

from temporalio.client import Client

from adapters.store import Store
from client import SkillsClient
from config.settings import Settings
from tests.conftest import Engine, eventually, free_port, trigger_schedule, worker_process, write_mcp_config
from tests.service.http import FAKES, answers, get, samples, value

NOT_STARTED = {"status": "not started", "tools": 0, "reason": "connects when first needed"}
"""A server in /readyz before anything needed it: the worker connects its servers when first needed."""


async def _status(port: int, path: str, wanted: int) -> dict | None:
    answer = await answers(port, path)
    return json.loads(answer[1]) if answer and answer[0] == wanted else None


async def test_ready_after_start_and_unready_while_the_store_is_gone(client: Client, settings: Settings) -> None:
    port = free_port()
    with worker_process(settings, client.service_client.config.target_host, SKILLS_HEALTH_PORT=str(port)) as worker:
        ready = await eventually(lambda: _status(port, "/readyz", 200), timeout=60)
        assert ready["ready"] is True and ready["worker"] == "polling" and ready["store"] == "ok"
        assert ready["mcp"]["outbox"] == NOT_STARTED  # nothing has needed it yet
        assert await get(port, "/healthz") == (200, "ok\n")
        assert (await get(port, "/nowhere"))[0] == 404

        # The SQLite file goes away under the worker: not ready, and the body says why.
        db = settings.data_dir / "skills.db"
        moved = db.rename(settings.data_dir / "elsewhere.db")
        unready = await eventually(lambda: _status(port, "/readyz", 503), timeout=20)
        assert unready["ready"] is False and unready["store"].startswith("unreachable"), unready
        assert unready["worker"] == "polling"
        assert (await get(port, "/healthz"))[0] == 200  # alive all the same: no restart for a store outage

        moved.rename(db)
        await SkillsClient(client, settings.task_queue).catalog()  # the servers connect when first needed
        back = await eventually(lambda: _connected(port, "outbox"), timeout=30)
        assert back["ready"] is True and back["mcp"]["outbox"] == {"status": "connected", "tools": 2}
        assert worker.process is not None and worker.process.poll() is None


async def test_a_failed_mcp_server_is_reported_but_leaves_the_worker_ready(client: Client, settings: Settings,
                                                                          tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", {
        "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit('no way')"]}})
    settings = settings.model_copy(update={"mcp_config": config})
    port = free_port()
    with worker_process(settings, client.service_client.config.target_host, SKILLS_HEALTH_PORT=str(port)):
        ready = await eventually(lambda: _status(port, "/readyz", 200), timeout=60)
        assert ready["mcp"]["broken"] == NOT_STARTED
        await SkillsClient(client, settings.task_queue).catalog()  # the servers connect when first needed
        body = await eventually(lambda: _failed(port), timeout=60)
        assert body["ready"] is True and "no way" in body["mcp"]["broken"]["reason"], body


async def test_a_server_reads_not_started_until_a_fire_needs_it_then_connected(client: Client,
                                                                               settings: Settings) -> None:
    """The worker connects its MCP servers when first needed: /readyz says so of a server nothing has needed (never
    "connecting", which no connect is), and "connected" once a scheduled fire has called its tool."""
    engine = await Engine(settings, client).start()  # registers the skill, then leaves: the worker below only fires
    try:
        skill = (await engine.skills.register({
            "name": "water", "instructions": "remind", "notify_on_completion": False, "schedule": "0 0 1 1 *",
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "Drink water!"}}]})).skill
    finally:
        await engine.stop()
    assert skill is not None and skill.schedule_id is not None
    port = free_port()
    with worker_process(settings, client.service_client.config.target_host, SKILLS_HEALTH_PORT=str(port)) as worker:
        ready = await eventually(lambda: _status(port, "/readyz", 200), timeout=60)
        assert ready["mcp"] == {"outbox": NOT_STARTED}, ready
        # Neither up nor down on /metrics; and reading either starts no connect.
        status, text = await get(port, "/metrics")
        assert status == 200 and not [s for s in samples(text) if s[0] == "skills_mcp_server_up"], text
        assert (await _status(port, "/readyz", 200) or {}).get("mcp") == {"outbox": NOT_STARTED}

        await trigger_schedule(client, skill.schedule_id)
        store = Store.from_settings(settings)
        runs = await eventually(lambda: [r for r in store.runs.list_runs(skill.id) if r.status != "running"], timeout=60)
        assert [(r.status, r.trigger) for r in runs] == [("success", "schedule")], runs
        fired = await _status(port, "/readyz", 200)
        assert fired is not None and fired["mcp"] == {"outbox": {"status": "connected", "tools": 2}}, fired
        assert value((await get(port, "/metrics"))[1], "skills_mcp_server_up", server="outbox") == 1
        assert worker.process is not None and worker.process.poll() is None


async def _connected(port: int, server: str) -> dict | None:
    body = await _status(port, "/readyz", 200)
    return body if body and body["mcp"].get(server, {}).get("status") == "connected" else None


async def _failed(port: int) -> dict | None:
    body = await _status(port, "/readyz", 200)
    return body if body and body["mcp"].get("broken", {}).get("status") == "failed" else None


async def test_sigterm_makes_the_worker_unready_before_it_drains(client: Client, settings: Settings,
                                                                 tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    settings = settings.model_copy(update={"mcp_config": write_mcp_config(tmp_path / "mcp.json", {
        "slow": {"command": sys.executable, "args": [str(FAKES / "slow_server.py")],
                 "env": {"FAKE_SLOW_LOG": str(log)}}})})
    port = free_port()
    skills = SkillsClient(client, settings.task_queue)
    with worker_process(settings, client.service_client.config.target_host, SKILLS_HEALTH_PORT=str(port)) as worker:
        await eventually(lambda: _status(port, "/readyz", 200), timeout=60)
        await skills.register({"name": "long", "instructions": "x", "notify_on_completion": False, "execution_plan": [
            # Long enough that a loaded machine still sees the worker unready while the call runs; within the
            # worker's 20 s graceful shutdown, so the drain lets it finish.
            {"toolName": "slow_slow", "parameters": {"seconds": 15, "message": "drain"}}]})
        await skills.run("long", wait=False)
        await eventually(lambda: log.exists() and "start drain" in log.read_text(), timeout=60)

        assert worker.process is not None
        worker.process.send_signal(signal.SIGTERM)
        draining = await eventually(lambda: _status(port, "/readyz", 503), timeout=15)
        assert draining["worker"].startswith("not polling"), draining
        assert "done drain" not in log.read_text()  # unready while the call is still in flight
        assert (await get(port, "/healthz"))[0] == 200

        assert worker.process.wait(timeout=60) == 0
        assert "done drain" in log.read_text()  # the drain let the call finish


async def test_a_health_port_in_use_is_one_clear_line(client: Client, settings: Settings) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with worker_process(settings, client.service_client.config.target_host, SKILLS_HEALTH_PORT=str(port),
                            SKILLS_HEALTH_HOST="127.0.0.1") as worker:
            assert worker.process is not None
            assert await asyncio.to_thread(worker.process.wait, 60) == 2
    lines = worker.log.read_text().strip().splitlines()
    assert "Traceback" not in worker.log.read_text()
    assert lines[-1].startswith(f"error: SKILLS_HEALTH_PORT: cannot listen on 127.0.0.1:{port}"), lines[-1]
