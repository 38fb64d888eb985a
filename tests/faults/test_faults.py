"""Faults survived, with real processes: a worker SIGKILLed mid-call, the Temporal server
killed and restarted on its db file, an MCP server that dies and comes back."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from client import SkillsClient, connect
from client.temporal_cli import temporal_binary
from config.settings import Settings
from search_attributes import SEARCH_ATTRIBUTES
from skills.when.triggers import trigger_next_times
from tests.conftest import (
    ROOT,
    Engine,
    WorkerProcess,
    eventually,
    schedule_exists,
    trigger_schedule,
    worker_process,
    write_mcp_config,
)

pytestmark = pytest.mark.slow

FAKES = ROOT / "tests" / "fakes"


def address_of(client: Client) -> str:
    return client.service_client.config.target_host


async def test_a_worker_killed_mid_call_loses_nothing(client: Client, settings: Settings, tmp_path: Path) -> None:
    slow_log = tmp_path / "slow.log"
    settings = settings.model_copy(update={"mcp_config": write_mcp_config(tmp_path / "mcp.json", {
        "slow": {"command": sys.executable, "args": [str(FAKES / "slow_server.py")],
                 "env": {"FAKE_SLOW_LOG": str(slow_log)}}})})
    skills = SkillsClient(client, settings.task_queue)
    first = WorkerProcess(settings, address_of(client)).start()
    try:
        await skills.register({"name": "slow", "instructions": "x", "notify_on_completion": False, "execution_plan": [
            {"toolName": "slow_slow", "parameters": {"seconds": 4, "message": "hello"}}]})
        workflow_id = await skills.run("slow", wait=False)
        assert isinstance(workflow_id, str)
        # Within the call's 4 s: the kill must land in its middle.
        await eventually(lambda: slow_log.exists() and "start hello" in slow_log.read_text(), timeout=30, interval=0.1)
        first.kill()  # SIGKILL in the middle of the tool call: no drain, no goodbye
    finally:
        first.stop()

    with worker_process(settings, address_of(client)):
        run = await client.get_workflow_handle(workflow_id).result()
    assert run["status"] == "success" and run["trigger"] == "manual"
    assert "slept 4" in run["summary"]
    stored = await _runs_via_new_worker(settings, client)
    assert [r.status for r in stored] == ["success"]


async def _runs_via_new_worker(settings: Settings, client: Client):  # noqa: ANN202
    with worker_process(settings, address_of(client)) as worker:
        await worker.polling()
        return await SkillsClient(client, settings.task_queue).runs("slow")


BACKOFF = timedelta(seconds=20)
"""The window after the failure in which the schedule's fire is skipped. The fire is triggered after the failed run
is read back, the schedule found idle and the clock past its last second, and its run begins (``begin_run``
compares its start with the window): at 3 s, a loaded machine took longer than that (2 runs in 12 under
`make flakes` at a load of 20), and the fire ran, retrying the server kept down, instead of being skipped."""


async def test_an_mcp_server_that_dies_fails_runs_into_backoff_then_recovers(
        client: Client, settings: Settings, tmp_path: Path) -> None:
    down = tmp_path / "down"
    settings = settings.model_copy(update={
        "backoff_steps": [BACKOFF],
        "mcp_config": write_mcp_config(tmp_path / "mcp.json", {
            "flaky": {"command": sys.executable, "args": [str(FAKES / "flaky_server.py")],
                      "env": {"FAKE_FLAKY_DOWN": str(down)}}}),
    })
    engine = await Engine(settings, client).start()
    try:
        skill = (await engine.skills.register({
            "name": "ping", "instructions": "x", "schedule": "0 0 1 1 *", "notify_on_completion": False,
            "execution_plan": [{"toolName": "flaky_ping", "parameters": {"message": "hi"}}]})).skill
        assert skill is not None and skill.schedule_id
        assert (await engine.skills.run("ping")).status == "success"

        down.touch()
        _kill_server_processes("flaky_server.py")
        failed = await engine.skills.run("ping")
        assert failed.status == "error" and "flaky" in failed.summary
        stored = await engine.skills.get("ping")
        assert stored.consecutive_failures == 1 and stored.backoff_until is not None

        await trigger_schedule(client, skill.schedule_id)
        skipped = await eventually(lambda: _newest_scheduled(engine), timeout=30)
        assert skipped.status == "skipped" and skipped.summary.startswith("backoff")

        down.unlink()
        await eventually(lambda: datetime.now(UTC) > stored.backoff_until, timeout=BACKOFF.total_seconds() + 30)
        await trigger_schedule(client, skill.schedule_id)
        recovered = await eventually(lambda: _newest_scheduled(engine, "success"), timeout=60)
        assert recovered.status == "success"
        assert (await engine.skills.get("ping")).consecutive_failures == 0
    finally:
        await engine.stop()


async def _newest_scheduled(engine: Engine, status: str | None = None):  # noqa: ANN202
    runs = [r for r in await engine.skills.runs("ping") if r.trigger == "schedule" and r.status != "running"]
    if runs and (status is None or runs[0].status == status):
        return runs[0]
    return None


def _kill_server_processes(script: str) -> None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if script in (entry / "cmdline").read_text(errors="ignore"):
                    os.kill(int(entry.name), signal.SIGKILL)


# --- the Temporal server goes down --------------------------------------------------------


class DevServer:
    """A Temporal dev server of this test's own, on a db file that outlives its process."""

    def __init__(self, db: Path, attributes: dict[str, str] = SEARCH_ATTRIBUTES) -> None:
        self.attributes = attributes
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.db = db
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> Client:
        command = [temporal_binary(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port),
                   "--headless", "--db-filename", str(self.db), "--log-level", "error",
                   "--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"]
        for name, kind in self.attributes.items():
            command += ["--search-attribute", f"{name}={kind}"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return await eventually(self._connect, timeout=60, interval=0.3)

    async def _connect(self) -> Client | None:
        try:
            return await connect(self.address)
        except Exception:
            return None

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


@pytest.fixture
async def dev_server(tmp_path: Path) -> AsyncIterator[DevServer]:
    server = DevServer(tmp_path / "temporal.db")
    yield server
    if server.process is not None and server.process.poll() is None:
        server.kill()


async def test_the_server_killed_and_restarted_on_its_db(dev_server: DevServer, settings: Settings) -> None:
    """Down across: a one-shot beyond the catch-up window (recorded missed), a one-shot inside it
    (fires once), two fires of a recurring skill inside it (one run stands for both)."""
    settings = settings.model_copy(update={"catchup_window": timedelta(seconds=90)})
    client = await dev_server.start()
    skills = SkillsClient(client, settings.task_queue)
    with worker_process(settings, dev_server.address) as worker:
        # Relative times, counted when each registration is normalized: a busy machine cannot make them past.
        # "too late" first, so that any delay before the next registration only widens its margin.
        too_late = (await skills.register(_note("too late", in_minutes=0.3))).skill
        every = (await skills.register(_note("every minute", interval_minutes=1))).skill
        just_in_time = (await skills.register(_note("just in time", in_minutes=1.6))).skill
        before = await skills.run("every minute")  # history from before the outage
        assert every is not None and every.trigger_config is not None and before.status == "success"
        assert too_late and too_late.trigger_config and just_in_time and just_in_time.trigger_config
        missed_at, fired_at = too_late.trigger_config.at, just_in_time.trigger_config.at
        assert missed_at is not None and fired_at is not None
        first, second = trigger_next_times(every.trigger_config, anchor=every.created_at,
                                           after=every.created_at, count=2)

        dev_server.kill()
        assert datetime.now(UTC) < missed_at, "set-up took longer than the first one-shot's delay"
        # The outage itself: the server stays down across these scheduled times, however long that takes.
        # Coming back (the server's start, then its schedule catching up) may take a busy machine 25 s more
        # before the recurring skill's first fire leaves the catch-up window.
        back_at = max(second, fired_at) + timedelta(seconds=5)
        assert back_at - first + timedelta(seconds=25) <= settings.catchup_window < back_at - missed_at
        assert back_at - fired_at < settings.catchup_window
        await asyncio.sleep((back_at - datetime.now(UTC)).total_seconds())
        client = await dev_server.start()
        skills = SkillsClient(client, settings.task_queue)

        names = {s.name: s for s in await skills.list()}
        assert set(names) == {"every minute", "too late", "just in time"}
        # The schedules lived through it (the one-shot's own may already have fired and retired: checked below).
        assert names["every minute"].schedule_id is not None
        assert await schedule_exists(client, names["every minute"].schedule_id)
        earlier = [w async for w in client.list_workflows(f"WorkflowId = '{before.workflow_id}'")]
        assert len(earlier) == 1

        recurring = await eventually(lambda: _finished(skills, "every minute"), timeout=60)  # scheduled runs only
        assert len(recurring) == 1 and recurring[0].status == "success"
        assert recurring[0].scheduled_at == first
        info = (await client.get_schedule_handle(names["every minute"].schedule_id).describe()).info
        assert info.num_actions_skipped_overlap >= 1  # the second missed fire, coalesced into the first

        just = await eventually(lambda: _finished(skills, "just in time"), timeout=60)
        assert [r.status for r in just] == ["success"]
        fired = await eventually(lambda: _disabled(skills, "just in time"), timeout=30)
        assert fired.disabled_reason == "fired" and fired.schedule_id is None
        await eventually(lambda: _outbox_has(settings, "just in time"), timeout=30)

        # The engine's maintenance round (every five minutes) records it; trigger it rather than wait.
        await trigger_schedule(client, f"{settings.task_queue}-maintenance")
        late = await eventually(lambda: _disabled(skills, "too late"), timeout=60)
        assert late.disabled_reason == "missed" and late.schedule_id is None
        assert [(r.status, r.scheduled_at) for r in await skills.runs("too late")] == [("missed", missed_at)]
        assert worker.process is not None and worker.process.poll() is None  # the worker rode it out


def _note(name: str, **trigger: object) -> dict[str, object]:
    return {"name": name, "instructions": "x", "notify_on_completion": False, **trigger,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": name}}]}


async def _finished(skills: SkillsClient, name: str):  # noqa: ANN202
    runs = [r for r in await skills.runs(name) if r.trigger == "schedule"]
    return runs if runs and all(r.status != "running" for r in runs) else None


async def _disabled(skills: SkillsClient, name: str):  # noqa: ANN202
    skill = await skills.get(name)
    return None if skill.enabled else skill


def _outbox_has(settings: Settings, message: str) -> bool:
    path = settings.outbox_path
    return path.exists() and any(json.loads(line)["message"] == message for line in path.read_text().splitlines())


async def test_a_worker_adds_the_search_attributes_a_namespace_set_up_by_an_older_release_lacks(
        tmp_path: Path, settings: Settings) -> None:
    """A namespace with only the first release's attributes: a run that waits for approval sets SkillWaiting,
    which the namespace would refuse for ever; the worker adds what is missing when it starts."""
    old = {name: kind for name, kind in SEARCH_ATTRIBUTES.items() if name in ("SkillName", "SkillAgent", "SkillTier")}
    server = DevServer(tmp_path / "temporal.db", attributes=old)
    client = await server.start()
    try:
        with worker_process(settings, server.address):
            async def registered() -> bool:
                listed = await client.operator_service.list_search_attributes(
                    ListSearchAttributesRequest(namespace=client.namespace))
                return set(SEARCH_ATTRIBUTES) <= set(listed.custom_attributes)

            await eventually(registered, timeout=60)
    finally:
        server.kill()
