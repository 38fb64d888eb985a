"""MCP servers no one here wrote, configured as a user would, reached through the ToolHub.

- ``mcp-server-time`` from PyPI (installed into the venv by the dev extras);
- ``@modelcontextprotocol/server-everything`` from npm, run with ``npx -y``.

The first ``npx -y`` of a package downloads it (about 10 s on a fresh npm cache here,
about 1.5 s once cached), so a session fixture fetches it once, with a generous
timeout, before any hub has to connect within its usual 30 s.

Fixtures for other tests (an end-to-end Direct-tier skill, say):

- ``third_party_mcp_config``: the path of an ``mcpServers`` JSON file with ``time`` and
  ``everything``, exactly as a user writes it (``Settings(mcp_config=...)``);
- ``third_party_hub``: a started :class:`ToolHub` over that file.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.tools import ToolActivities
from adapters.mcp import ToolHub
from config.settings import Settings
from skills.run.catalog import ToolCallInput
from tests.conftest import Engine, eventually

logger = logging.getLogger(__name__)

EVERYTHING = "@modelcontextprotocol/server-everything"
NPX_FETCH_TIMEOUT = 300.0
"""The first fetch downloads the package and its dependencies; a slow registry may take minutes."""
TIME_SERVER = Path(sys.executable).parent / "mcp-server-time"


@pytest.fixture(scope="session")
async def everything_fetched() -> float:
    """Fetch the npm server once (``npx -y`` caches it) and prove it starts; the seconds it took.

    Waits for the server's answer to ``initialize``, not for a fixed time.
    """
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed (Node.js 18+ is needed for the npm MCP server)")
    started = time.monotonic()
    # npm may say a lot while it installs: a file, not a pipe no one reads until the end.
    stderr = tempfile.TemporaryFile()
    process = await asyncio.create_subprocess_exec(
        npx, "-y", EVERYTHING,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
        start_new_session=True,  # npx runs the server as its child: stop the whole group
    )
    assert process.stdin is not None and process.stdout is not None
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "skills-engine-tests", "version": "0"}},
    }
    process.stdin.write((json.dumps(initialize) + "\n").encode())
    await process.stdin.drain()
    try:
        async with asyncio.timeout(NPX_FETCH_TIMEOUT):
            while line := await process.stdout.readline():
                if b'"id":1' in line.replace(b" ", b""):
                    break
            else:
                stderr.seek(0)
                said = stderr.read().decode(errors="replace")
                pytest.fail(f"npx -y {EVERYTHING} exited without answering: {said[-2000:]}")
    except TimeoutError:
        pytest.fail(f"npx -y {EVERYTHING} did not start within {NPX_FETCH_TIMEOUT:g} s (is the npm registry reachable?)")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        stderr.close()
    elapsed = time.monotonic() - started
    logger.info("npx -y %s answered after %.1f s", EVERYTHING, elapsed)
    return elapsed


@pytest.fixture(scope="session")
def third_party_mcp_config(tmp_path_factory: pytest.TempPathFactory, everything_fetched: float) -> Path:
    """An mcpServers file as a user writes it; the npm package is already in npx's cache."""
    path = tmp_path_factory.mktemp("third-party") / "mcp.json"
    path.write_text(json.dumps({
        "mcpServers": {
            "time": {"command": str(TIME_SERVER), "args": ["--local-timezone", "UTC"]},
            "everything": {"command": "npx", "args": ["-y", EVERYTHING]},
        }
    }, indent=2))
    return path


@pytest.fixture(scope="session")
async def third_party_hub(third_party_mcp_config: Path) -> AsyncIterator[ToolHub]:
    async with ToolHub.from_config(third_party_mcp_config, defaults={}, catalog_ttl=None) as hub:
        yield hub


def activity_env() -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, start_to_close_timeout=timedelta(seconds=30))
    return env


async def test_both_servers_connect_and_list_their_tools(third_party_hub: ToolHub) -> None:
    catalog = await activity_env().run(ToolActivities(third_party_hub).get_tool_catalog)

    assert {s.name: s.status for s in catalog.servers} == {"time": "connected", "everything": "connected"}
    assert catalog.unavailable == {}
    time_tools = {entry.name: entry.description for entry in catalog.catalog["time"]}
    assert set(time_tools) == {"time_get_current_time", "time_convert_time"}
    assert time_tools["time_get_current_time"].startswith("Get current time")
    everything = {entry.name for entry in catalog.catalog["everything"]}
    assert {"everything_echo", "everything_get-sum"} <= everything
    assert catalog.summary == f"{2 + len(everything)} tools across 2 MCP servers"


async def test_time_get_current_time_in_a_timezone(third_party_hub: ToolHub) -> None:
    output = await activity_env().run(
        ToolActivities(third_party_hub).call_tool,
        ToolCallInput(tool="time_get_current_time", arguments={"timezone": "Asia/Tokyo"}, step_id="now"),
    )

    assert output.ok and output.structured is not None
    assert output.structured["timezone"] == "Asia/Tokyo"
    assert datetime.fromisoformat(output.structured["datetime"]).utcoffset() == timedelta(hours=9)


async def test_time_convert_time_and_its_own_error_results(third_party_hub: ToolHub) -> None:
    converted = await third_party_hub.call(
        "time_convert_time",
        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Kolkata"},
    )
    unknown_zone = await third_party_hub.call("time_get_current_time", {"timezone": "Mars/Olympus_Mons"})

    assert converted.ok and converted.structured is not None
    assert converted.structured["target"]["datetime"].endswith("T17:30:00+05:30")
    assert unknown_zone.is_error and "Mars/Olympus_Mons" in unknown_zone.text


async def test_everything_echo_and_add_with_llm_style_arguments(third_party_hub: ToolHub) -> None:
    echoed = await third_party_hub.call("everything_echo", {"message": "hello from the engine"})
    summed = await third_party_hub.call("everything_get-sum", {"a": "2", "b": 3.5, "teamId": None})

    assert echoed.ok and echoed.text == "Echo: hello from the engine"
    assert summed.ok and summed.text == "The sum of 2 and 3.5 is 5.5."
    assert summed.adjusted == ["'teamId': null removed", "'a': \"2\" → 2"]


# --- the engine, end to end ---------------------------------------------------------------


async def test_a_direct_skill_fires_through_both_third_party_servers(
        third_party_mcp_config: Path, client: Client, settings: Settings) -> None:
    """A one-shot Direct skill, through its real schedule: the PyPI server's answer is piped
    into the npm server's echo, and that into the outbox, at zero tokens."""
    engine = await Engine(settings.model_copy(update={"mcp_config": third_party_mcp_config}), client).start()
    try:
        result = await engine.skills.register({
            "name": "time echo", "instructions": "Echo the time in Paris into the outbox",
            "in_minutes": 0.05, "notify_on_completion": False,
            "execution_plan": [
                {"id": "now", "toolName": "time_get_current_time", "parameters": {"timezone": "Europe/Paris"}},
                {"id": "echo", "toolName": "everything_echo",
                 "parameters": {"message": "Paris: {{steps.now.datetime}} ({{now.day_of_week}})"}},
                {"id": "send", "toolName": "outbox_send_message", "parameters": {"message": "{{echo.result}}"}},
            ],
        })
        assert result.skill is not None and result.skill.tier == "direct"
        assert any("runs Direct, at zero tokens" in note for note in result.notes)

        # The run's end first: a failure then says what went wrong, not only that no message came.
        run = await eventually(lambda: _finished_run(engine), timeout=60)
        assert run.status == "success", run.summary
        messages = engine.outbox()
        # The time in Paris, piped whole: "+01:00 (" held in winter only (Paris is +02:00 from March to October).
        echoed = re.fullmatch(r"Echo: Paris: (\S+) \((\w+)\)", messages[0]["message"])
        assert echoed, messages[0]["message"]
        paris = datetime.fromisoformat(echoed[1])
        assert paris.utcoffset() == paris.astimezone(ZoneInfo("Europe/Paris")).utcoffset(), echoed[1]
        assert echoed[2] == paris.strftime("%A"), messages[0]["message"]
        assert (run.status, run.trigger, run.prompt_tokens, run.completion_tokens) == ("success", "schedule", 0, 0)
        assert [c.tool for c in run.tool_calls] == ["time_get_current_time", "everything_echo", "outbox_send_message"]
    finally:
        await engine.stop()


async def _finished_run(engine: Engine):  # noqa: ANN202
    runs = await engine.skills.runs("time echo")
    return runs[0] if runs and runs[0].status != "running" else None
