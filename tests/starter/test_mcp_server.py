"""`skills mcp` as an MCP client sees it, against a real worker and dev server.

The server runs as a user starts it (`python -m starter.mcp_server`, over stdio and
over streamable HTTP with a bearer token) and a real MCP client session drives it.
Refusals and the catalog are checked on the same server built in-process
(`build_server`), still through a real client session.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from skills.errors import SkillNotFoundError
from starter.mcp_server import build_server, run
from tests.conftest import PYTHON, ROOT, Engine, eventually, free_port, schedule_exists
from tests.starter.test_cli import options, run_skills

TOOLS = {"get_tool_catalog", "memory_store_skill", "memory_update_skill", "memory_list_skills",
         "memory_get_skill", "memory_delete_skill", "emit_event", "memory_next_fires",
         "list_approvals", "approve", "deny", "rehearse_skill"}
TOKEN = "test-token-7f3a9c"


def stretch(**fields: Any) -> dict[str, Any]:
    """What the playbook's first example sends: a one-shot Direct-tier reminder."""
    return {
        "name": "stretch",
        "description": "One-off reminder to stretch.",
        "instructions": "Remind the user to stretch.",
        "trigger_config": {"in_minutes": 30},
        "execution_plan": [{"id": "step1", "toolName": "outbox_send_message",
                            "parameters": {"message": "Time to stretch!"}}],
        "notify_on_completion": False,
        **fields,
    }


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def server_env(engine: Engine) -> dict[str, str]:
    """This test's Temporal and task queue, the way a user points the server at an engine."""
    client = engine.skills.client
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "SKILLS_"))}
    return {**env, "TEMPORAL_ADDRESS": client.service_client.config.target_host,
            "TEMPORAL_NAMESPACE": client.namespace, "SKILLS_TASK_QUEUE": engine.settings.task_queue}


async def manage_a_skill(session: Client, engine: Engine) -> None:
    """The whole life of one skill through the six tools, checked against the engine itself."""
    listed = await session.list_tools()
    assert {tool.name for tool in listed.tools} == TOOLS

    stored = await session.call_tool("memory_store_skill", stretch())
    assert not stored.is_error, text(stored)
    assert stored.structured_content is not None and stored.structured_content["ok"]
    skill_id = stored.structured_content["skill"]["id"]
    assert "Stored skill" in text(stored) and "It runs once, at" in text(stored) and "(in 30 min)" in text(stored)
    assert "Direct tier" in text(stored) and "outbox_send_message" in text(stored)
    kept = await engine.skills.get(skill_id)
    assert kept.is_one_shot and kept.trigger_config is not None and kept.trigger_config.at is not None
    assert abs(kept.trigger_config.at - (datetime.now(UTC) + timedelta(minutes=30))) < timedelta(minutes=1)
    assert kept.schedule_id is not None and await schedule_exists(engine.skills.client, kept.schedule_id)

    found = await session.call_tool("memory_list_skills", {"enabled": True})
    assert not found.is_error and found.structured_content is not None
    assert [s["name"] for s in found.structured_content["skills"]] == ["stretch"]
    assert f"{skill_id} 'stretch'" in text(found)

    got = await session.call_tool("memory_get_skill", {"skill_id": skill_id})
    assert not got.is_error and got.structured_content is not None
    assert got.structured_content["skill"]["name"] == "stretch" and got.structured_content["next_fire"]
    assert "Time to stretch!" in text(got)

    updated = await session.call_tool("memory_update_skill",
                                      {"skill_id": skill_id, "trigger_config": {"schedule": "*/5 * * * *"}})
    assert not updated.is_error, text(updated)
    assert "It repeats on cron '*/5 * * * *'" in text(updated)
    changed = await engine.skills.get(skill_id)
    assert changed.trigger_config is not None and changed.trigger_config.schedule == "*/5 * * * *"
    assert changed.schedule_id is not None

    deleted = await session.call_tool("memory_delete_skill", {"skill_id": "stretch"})
    assert not deleted.is_error and f"Deleted skill {skill_id} 'stretch'" in text(deleted)
    with pytest.raises(SkillNotFoundError):
        await engine.skills.get(skill_id)
    assert not await schedule_exists(engine.skills.client, changed.schedule_id)


# --- stdio ----------------------------------------------------------------------------------


async def test_a_client_manages_a_skill_over_stdio(engine: Engine) -> None:
    server = StdioServerParameters(command=PYTHON, args=["-m", "starter.mcp_server"], env=server_env(engine),
                                   cwd=ROOT)
    async with Client(server) as session:
        assert session.instructions is not None and "memory_store_skill" in session.instructions
        await manage_a_skill(session, engine)


# --- streamable HTTP ------------------------------------------------------------------------


@pytest.fixture
async def http_url(engine: Engine, tmp_path: Path) -> AsyncIterator[str]:
    """`python -m starter.mcp_server --http` with the token from the environment, once it answers."""
    port, log = free_port(), tmp_path / "mcp-server.log"
    with log.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            PYTHON, "-m", "starter.mcp_server", "--http", "--port", str(port), cwd=ROOT,
            env={**server_env(engine), "SKILLS_MCP_TOKEN": TOKEN}, stderr=stderr)
    url = f"http://127.0.0.1:{port}/mcp"

    async def answers() -> bool:
        if process.returncode is not None:
            raise AssertionError(f"the server exited with {process.returncode}: {log.read_text()}")
        try:
            async with httpx2.AsyncClient() as http:
                await http.get(url)
        except httpx2.TransportError:
            return False
        return True

    try:
        await eventually(answers, timeout=120)  # a process start: on a loaded machine, past 30 s (4 at once)
        yield url
    finally:
        process.terminate()
        await process.wait()


async def test_a_client_with_the_token_manages_a_skill_over_http(http_url: str, engine: Engine) -> None:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(http_url, http_client=http)) as session,
    ):
        await manage_a_skill(session, engine)


async def test_a_request_without_the_right_token_gets_401(http_url: str) -> None:
    """No token, a wrong one, the right one without ``Bearer``: each refused, by one server (none of them
    changes its state); the right header, checked last on the same server, is answered."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "0"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": TOKEN}):
            answer = await http.post(http_url, json=initialize, headers={**accept, **headers})
            assert answer.status_code == 401, headers
            assert answer.headers["www-authenticate"].startswith("Bearer"), headers
        answer = await http.post(http_url, json=initialize, headers={**accept, "Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200, answer.text


def test_http_refuses_to_start_without_a_token(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SKILLS_MCP_TOKEN", raising=False)
    assert run(["--http"]) == 2
    assert "SKILLS_MCP_TOKEN" in capsys.readouterr().err
    assert run(["--http", "--host", "0.0.0.0", "--no-auth"]) == 2
    assert "loopback" in capsys.readouterr().err
    assert run(["--token", TOKEN]) == 2  # a token means nothing on stdio: say so rather than ignore it
    assert "--http only" in capsys.readouterr().err


# --- answers a model can act on (the server in-process, a real client session) -------------


def in_process(engine: Engine) -> Client:
    # Entered in the test itself: the client's task group must be left by the task that entered it.
    return Client(build_server(engine.skills))


async def test_a_refused_input_names_every_field_and_stores_nothing(engine: Engine) -> None:
    async with in_process(engine) as session:
        plan = [{"id": "step1", "toolName": "outbox_send_mesage", "parameters": {"message": "Tea!"}}]
        refused = await session.call_tool("memory_store_skill", stretch(trigger_config={"schedule": "0 25 * * *"},
                                                                        execution_plan=plan))
        assert refused.is_error
        message = text(refused)
        assert "trigger_config.schedule: '0 25 * * *'" in message and "hour 25" in message
        assert "unknown tool 'outbox_send_mesage'" in message and "did you mean 'outbox_send_message'" in message
        assert "call memory_store_skill again" in message
        assert refused.structured_content is not None
        assert {e["field"] for e in refused.structured_content["errors"]} >= {"trigger_config.schedule"}
        assert await engine.skills.list() == []

        # The model fixes the fields it was told about and calls again.
        fixed = await session.call_tool("memory_store_skill", stretch(trigger_config={"schedule": "0 23 * * *"}))
        assert not fixed.is_error, text(fixed)


async def test_flattened_and_aliased_fields_reach_the_normalizer(engine: Engine) -> None:
    async with in_process(engine) as session:
        sent = {"name": "hydrate", "instructions": "Remind the user to drink water", "cron": "*/5 * * * *",
                "executionPlan": '[{"tool": "outbox_send_message", "params": {"message": "Drink water"}}]',
                "notifyOnCompletion": "false"}
        stored = await session.call_tool("memory_store_skill", sent)
        assert not stored.is_error, text(stored)
        assert "'cron' read as 'schedule'" in text(stored)

        skill = await engine.skills.get("hydrate")
        assert skill.trigger_config is not None and skill.trigger_config.schedule == "*/5 * * * *"
        assert skill.tier == "direct" and not skill.notify_on_completion


async def test_update_by_name_pauses_and_a_missing_skill_is_a_clear_error(engine: Engine) -> None:
    async with in_process(engine) as session:
        await engine.skills.register(stretch(trigger_config={"schedule": "0 9 * * *"}))
        paused = await session.call_tool("memory_update_skill", {"name": "stretch", "enabled": False})
        assert not paused.is_error, text(paused)
        assert "It is disabled (by user)" in text(paused)
        assert not (await engine.skills.get("stretch")).enabled

        missing = await session.call_tool("memory_get_skill", {"skill_id": "no such skill"})
        assert missing.is_error and "no skill named 'no such skill'" in text(missing)
        assert "memory_list_skills" in text(missing)

        nothing = await session.call_tool("memory_update_skill", {"skill_id": "stretch"})
        assert nothing.is_error and "nothing to change" in text(nothing)


async def test_the_tool_catalog_lists_the_outbox_tools(engine: Engine) -> None:
    async with in_process(engine) as session:
        catalog = await session.call_tool("get_tool_catalog", {})
        assert not catalog.is_error and catalog.structured_content is not None
        names = {entry["name"] for entry in catalog.structured_content["catalog"]["outbox"]}
        assert {"outbox_send_message", "outbox_list_messages"} <= names
        assert "- outbox_send_message:" in text(catalog)
        assert catalog.structured_content["summary"].endswith("across 1 MCP server")
        # The server's own annotations (MCP tool hints), read from its tools/list: shown by `skills catalog` too.
        hints = {entry["name"]: entry["hints"] for entry in catalog.structured_content["catalog"]["outbox"]}
        assert hints == {"outbox_send_message": [], "outbox_list_messages": ["read-only"]}
    shown = await asyncio.to_thread(run_skills, "catalog", *options(engine))
    assert shown.returncode == 0, shown.stderr
    [listed] = [line for line in shown.stdout.splitlines() if "outbox_list_messages" in line]
    assert listed.rstrip().endswith("[read-only]"), shown.stdout


# --- events ---------------------------------------------------------------------------------


async def test_a_client_emits_an_event_over_stdio(engine: Engine) -> None:
    """A skill stored with an event trigger through the server, and run by emit_event through it."""
    server = StdioServerParameters(command=PYTHON, args=["-m", "starter.mcp_server"], env=server_env(engine),
                                   cwd=ROOT)
    async with Client(server) as session:
        tool = next(t for t in (await session.list_tools()).tools if t.name == "emit_event")
        assert tool.input_schema["required"] == ["event"] and "data" in tool.input_schema["properties"]
        stored = await session.call_tool("memory_store_skill", stretch(
            name="greet", trigger_config={"event": "guest.arrived"},
            execution_plan=[{"toolName": "outbox_send_message", "parameters": {"message": "Hi {{event.guest}}!"}}]))
        assert not stored.is_error, text(stored)
        assert "runs each time the event 'guest.arrived' is emitted" in text(stored)

        emitted = await session.call_tool("emit_event", {"event": "guest.arrived", "data": '{"guest": "Ada"}',
                                                         "id": "visit-1"})
        assert not emitted.is_error, text(emitted)
        assert emitted.structured_content is not None
        [started] = emitted.structured_content["started"]
        assert started["name"] == "greet" and started["workflow_id"].endswith("-event-visit-1")
        assert "started 1 run" in text(emitted) and started["workflow_id"] in text(emitted)
        assert await eventually(lambda: [m["message"] for m in engine.outbox()] == ["Hi Ada!"])

        again = await session.call_tool("emit_event", {"event": "guest.arrived", "id": "visit-1"})
        assert not again.is_error and again.structured_content is not None and again.structured_content["duplicate"]
        assert "already emitted" in text(again)

        refused = await session.call_tool("emit_event", {"event": "guest arrived"})
        assert refused.is_error and "event: 'guest arrived' is not a valid event name" in text(refused)
