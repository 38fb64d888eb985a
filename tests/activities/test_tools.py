"""The tool hub and the tool activities, against real MCP servers (stdio and streamable HTTP)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

from activities.tools import ToolActivities
from adapters.mcp import (
    McpServerConfig,
    ToolHub,
    build_catalog,
    first_sentence,
    load_argument_rules,
    load_mcp_config,
    outbox_server,
)
from adapters.mcp import hub as hub_module
from adapters.mcp.config import InProcessServer
from client import SkillsClient
from config.settings import Settings
from skills.errors import (
    McpConfigError,
    ToolArgumentsError,
    ToolServerError,
    ToolTimeoutError,
    UnknownToolError,
)
from skills.run.arguments import ArgumentRules, ParameterDefault
from skills.run.catalog import ToolCallInput, ToolCatalog
from starter import tools_cli
from tests.conftest import eventually

ROOT = Path(__file__).resolve().parents[2]
SECURED_SERVER = ROOT / "tests" / "mcp_servers" / "secured_http_server.py"
CHANGING_SERVER = ROOT / "tests" / "mcp_servers" / "changing_server.py"


def outbox_config(path: Path) -> McpServerConfig:
    return McpServerConfig(
        command=sys.executable,
        args=["-m", "mcp_servers.outbox"],
        env={"SKILLS_OUTBOX_PATH": str(path)},
        cwd=ROOT,
    )


def stored_messages(path: Path) -> list[str]:
    return [json.loads(line)["message"] for line in path.read_text().splitlines()]


def crashing_server(message: str) -> McpServerConfig:
    code = f"import sys; sys.stderr.write({message!r} + '\\n'); sys.exit(3)"
    return McpServerConfig(command=sys.executable, args=["-c", code])


@pytest.fixture(scope="module")
def outbox_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outbox") / "outbox.jsonl"


@pytest.fixture(scope="module")
async def hub(outbox_path: Path) -> AsyncIterator[ToolHub]:
    # One warm hub for the read-mostly tests: a stdio connect costs over a second.
    async with ToolHub({"outbox": outbox_config(outbox_path)}) as hub:
        yield hub


def activity_env(**info_changes: object) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, start_to_close_timeout=timedelta(seconds=30), **info_changes)
    return env


# ---------------------------------------------------------------------------
# Config


def test_config_reads_the_desktop_format_over_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "${TZ:-UTC}"}},
                    "remote": {
                        "type": "http",
                        "url": "https://example.test/mcp",
                        "headers": {"X-Key": "${KEY}"},
                    },
                    "outbox": {"command": "my-outbox"},
                }
            }
        )
    )
    servers = load_mcp_config(path, defaults={"outbox": outbox_server(tmp_path / "o.jsonl")})

    assert list(servers) == ["outbox", "time", "remote"]
    assert servers["outbox"].command == "my-outbox"  # the file replaces the default
    assert servers["time"].transport == "stdio" and servers["remote"].transport == "http"
    assert servers["remote"].headers == {"X-Key": "${KEY}"}  # kept unexpanded until connect time
    assert load_mcp_config(None, defaults=servers) == servers


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ('{"mcpServers": {"gh": {"comand": "x"}}}', "server 'gh': field 'comand': unknown field"),
        ('{"mcpServers": {"gh": {"command": "x", "url": "http://h"}}}', "server 'gh': give either `command`"),
        ('{"mcpServers": {"gh": {"command": "x", "args": "--fast"}}}', "server 'gh': field 'args'"),
        (
            '{"mcpServers": {"my server": {"command": "x"}}}',
            "server 'my server': a server name may hold only",
        ),
        ('{"servers": {}}', 'expected an object {"mcpServers"'),
        ('{"mcpServers": {', "not valid JSON"),
    ],
)
def test_a_bad_config_names_the_server_and_field(tmp_path: Path, document: str, expected: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(document)
    with pytest.raises(McpConfigError) as caught:
        load_mcp_config(path, defaults={})
    assert expected in str(caught.value)
    assert str(path) in str(caught.value)


async def test_the_worker_runs_the_bundled_outbox_in_its_own_process(settings: Settings) -> None:
    children_before = _children()
    async with ToolHub.from_settings(settings) as hub:
        [state] = hub.server_states()
        sent = await hub.call("outbox_send_message", {"message": "in process"}, timeout=10, idempotency_key="k-1")
        again = await hub.call("outbox_send_message", {"message": "in process"}, timeout=10, idempotency_key="k-1")
        started = _children() - children_before

    assert (state.name, state.transport, state.status) == ("outbox", "in-process", "connected")
    assert not started  # no server process: the outbox is the worker's own code
    assert sent.ok and again.structured == sent.structured  # its idempotency keys hold in memory too
    assert stored_messages(settings.outbox_path) == ["in process"]
    assert settings.outbox_path.with_name("outbox.keys.db").exists()


def test_a_config_file_cannot_put_a_server_in_the_workers_process(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    for entry in ({"command": sys.executable, "args": ["-m", "mcp_servers.outbox"], "type": "in-process"},
                  {"command": sys.executable, "args": ["-m", "mcp_servers.outbox"], "in_process": True}):
        path.write_text(json.dumps({"mcpServers": {"outbox": entry}}))
        with pytest.raises(McpConfigError, match="server 'outbox'"):
            load_mcp_config(path, defaults={})
    # The bundled outbox named in the file is the file's: a process, as it says.
    path.write_text(json.dumps({"mcpServers": {"outbox": {"command": sys.executable,
                                                          "args": ["-m", "mcp_servers.outbox"]}}}))
    servers = load_mcp_config(path, defaults={"outbox": outbox_server(tmp_path / "o.jsonl", in_process=True)})
    assert servers["outbox"].transport == "stdio"
    # And the engine's own code cannot run anything but a bundled server in its process.
    with pytest.raises(ValueError, match="only a bundled server"):
        InProcessServer(command=sys.executable, args=["-m", "http.server"])


def _children() -> set[int]:
    """The pids of this process's children now."""
    me = os.getpid()
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                found.add(int(entry.name))
    return found


def test_first_sentence_of_a_description() -> None:
    assert first_sentence("Send a message. Returns its id.") == "Send a message."
    assert first_sentence("  List files\n  in a folder.\n\nArgs: ...") == "List files in a folder."
    assert first_sentence("") == ""


# ---------------------------------------------------------------------------
# Catalog and calls on a warm session


async def test_catalog_names_tools_server_underscore_tool(hub: ToolHub) -> None:
    tools = {tool.name: tool for tool in hub.catalog()}

    assert set(tools) == {"outbox_send_message", "outbox_list_messages"}
    send = tools["outbox_send_message"]
    assert (send.server, send.tool) == ("outbox", "send_message")
    assert send.input_schema["required"] == ["message"]
    [state] = hub.server_states()
    assert state.model_dump(exclude={"since"}) == {
        "name": "outbox",
        "transport": "stdio",
        "status": "connected",
        "reason": None,
        "tools": 2,
        "timeout": 60.0,
    }
    assert state.since is not None and state.since.tzinfo is not None


async def test_get_tool_catalog_has_the_reference_shape(hub: ToolHub) -> None:
    catalog = await activity_env().run(ToolActivities(hub).get_tool_catalog)

    assert catalog.model_dump(include={"summary", "catalog", "unavailable"}) == {
        "summary": "2 tools across 1 MCP server",
        "catalog": {
            "outbox": [
                {
                    "name": "outbox_send_message",
                    "description": "Send a message to the user by storing it in the outbox.",
                    "hints": [],  # it writes, and says it is neither destructive nor idempotent
                },
                {
                    "name": "outbox_list_messages",
                    "description": "List the newest messages in the outbox, newest first.",
                    "hints": ["read-only"],  # the server's own annotation, read from its tools/list
                },
            ]
        },
        "unavailable": {},
    }
    assert catalog.tool_names() == {"outbox_send_message", "outbox_list_messages"}
    assert [(s.name, s.status) for s in catalog.servers] == [("outbox", "connected")]
    assert catalog.config_error is None


async def test_call_returns_text_and_structured_content(hub: ToolHub, outbox_path: Path) -> None:
    sent = await hub.call("outbox_send_message", {"message": "hub says hi", "chat_id": "7"}, timeout=10)
    listed = await hub.call("outbox_list_messages", {"limit": 1, "chat_id": "7"}, timeout=10)

    assert sent.ok and not sent.is_error
    assert sent.structured is not None and sent.structured["id"] in sent.text
    assert listed.ok and listed.structured == {"messages": [sent.structured]}
    assert stored_messages(outbox_path)[-1] == "hub says hi"


async def test_call_tool_activity_reports_duration(hub: ToolHub) -> None:
    call = ToolCallInput(
        tool="outbox_send_message", arguments={"message": "from an activity"}, step_id="notify"
    )
    output = await activity_env().run(ToolActivities(hub).call_tool, call)

    assert output.ok and "stored in the outbox" in output.text
    assert output.duration_ms >= 0


async def test_a_tool_error_result_is_returned_not_raised(hub: ToolHub) -> None:
    result = await hub.call("outbox_send_message", {"message": " "}, timeout=10)
    output = await activity_env().run(
        ToolActivities(hub).call_tool, ToolCallInput(tool="outbox_list_messages", arguments={"limit": 0})
    )

    assert result.is_error and "message is empty" in result.text
    assert not output.ok and "limit must be between 1 and 500" in output.text


async def test_an_unknown_tool_suggests_close_names(hub: ToolHub) -> None:
    with pytest.raises(UnknownToolError, match="did you mean 'outbox_send_message'") as caught:
        await hub.call("outbox_send_mesage", {"message": "x"}, timeout=10)
    assert caught.value.suggestions[0] == "outbox_send_message"

    with pytest.raises(ApplicationError) as failure:
        await activity_env().run(ToolActivities(hub).call_tool, ToolCallInput(tool="outbox_sendmessage"))
    assert failure.value.non_retryable and failure.value.type == "UnknownToolError"


async def test_bad_arguments_name_the_parameter_and_are_not_retried(hub: ToolHub) -> None:
    with pytest.raises(ToolArgumentsError, match="missing required argument 'message'"):
        await hub.call("outbox_send_message", {}, timeout=10)
    with pytest.raises(ToolArgumentsError, match="argument 'limit': 'ten' is not of type 'integer'"):
        await hub.call("outbox_list_messages", {"limit": "ten"}, timeout=10)

    with pytest.raises(ApplicationError) as failure:
        await activity_env().run(ToolActivities(hub).call_tool, ToolCallInput(tool="outbox_send_message"))
    assert failure.value.non_retryable and failure.value.type == "ToolArgumentsError"


# ---------------------------------------------------------------------------
# Failures and reconnects


async def test_a_server_that_fails_to_start_is_reported_while_others_work(tmp_path: Path) -> None:
    servers = {
        "outbox": outbox_config(tmp_path / "outbox.jsonl"),
        "crashes": crashing_server("fatal: GITHUB_TOKEN is missing"),
        "absent": McpServerConfig(command=str(tmp_path / "no-such-server")),
        "unset": McpServerConfig(command=sys.executable, env={"TOKEN": "${SKILLS_TEST_SURELY_UNSET}"}),
    }
    async with ToolHub(servers) as hub:
        states = {state.name: state for state in hub.server_states()}
        result = await hub.call("outbox_send_message", {"message": "still here"}, timeout=10)
        with pytest.raises(ToolServerError, match="GITHUB_TOKEN is missing"):
            await hub.call("crashes_anything", {}, timeout=10)
        catalog = build_catalog(hub.catalog(), hub.server_states())

    assert states["outbox"].status == "connected"
    assert states["crashes"].status == "failed" and "fatal: GITHUB_TOKEN is missing" in (
        states["crashes"].reason or ""
    )
    assert states["absent"].status == "failed" and "FileNotFoundError" in (states["absent"].reason or "")
    assert "SKILLS_TEST_SURELY_UNSET is not set" in (states["unset"].reason or "")
    assert result.ok
    assert catalog.summary == "2 tools across 1 MCP server"
    assert set(catalog.unavailable) == {"crashes", "absent", "unset"}


def outbox_pids(outbox_file: Path) -> list[int]:
    """Our child processes that serve this outbox file (found through /proc: Linux only)."""
    marker = f"SKILLS_OUTBOX_PATH={outbox_file}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and marker in environ and not is_dead(int(entry.name)):
            pids.append(int(entry.name))
    return pids


def is_dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


async def wait_until(condition: Callable[[], bool], within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 - /proc offers no event to wait on; poll it
            await asyncio.sleep(0.01)


@pytest.mark.slow
async def test_a_killed_server_is_reconnected_by_the_next_call(tmp_path: Path) -> None:
    path = tmp_path / "outbox.jsonl"
    async with ToolHub({"outbox": outbox_config(path)}) as hub:
        assert (await hub.call("outbox_send_message", {"message": "before"}, timeout=10)).ok
        [first] = outbox_pids(path)

        os.kill(first, signal.SIGKILL)
        await wait_until(lambda: is_dead(first))

        after = await hub.call("outbox_send_message", {"message": "after"}, timeout=30)
        [second] = outbox_pids(path)

        assert after.ok
        assert second != first
        assert hub.server_states()[0].status == "connected"
    assert stored_messages(path) == ["before", "after"]


async def test_a_call_to_a_server_that_stays_down_is_a_clear_retryable_error(tmp_path: Path) -> None:
    async with ToolHub({"flaky": crashing_server("cannot reach the database")}) as hub:
        with pytest.raises(ApplicationError) as failure:
            await activity_env().run(ToolActivities(hub).call_tool, ToolCallInput(tool="flaky_query"))

    assert failure.value.type == "ToolServerError" and not failure.value.non_retryable
    assert "MCP server 'flaky' is unavailable" in str(failure.value)
    assert "cannot reach the database" in str(failure.value)


# ---------------------------------------------------------------------------
# Streamable HTTP


async def start_secured_server() -> tuple[asyncio.subprocess.Process, str]:
    """A streamable-HTTP MCP server on a free loopback port that wants ``X-Api-Key: test-token-123``."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SECURED_SERVER),
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "EXPECTED_HEADER": "X-Api-Key", "EXPECTED_VALUE": "test-token-123"},
    )
    assert process.stdout is not None
    port = int(await asyncio.wait_for(process.stdout.readline(), timeout=120))  # printed once it listens
    return process, f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
async def secured_url() -> AsyncIterator[str]:
    process, url = await start_secured_server()
    yield url
    process.terminate()
    await process.wait()


@pytest.fixture
def secured_servers(secured_url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, McpServerConfig]:
    monkeypatch.setenv("SECURED_API_KEY", "test-token-123")
    return {
        "secured": McpServerConfig(url=secured_url, headers={"X-Api-Key": "${SECURED_API_KEY}"}),
        "anonymous": McpServerConfig(url=secured_url),
    }


async def test_http_server_gets_the_header_expanded_from_the_environment(
    secured_servers: dict[str, McpServerConfig],
) -> None:
    async with ToolHub(secured_servers) as hub:
        result = await hub.call("secured_echo", {"text": "over http"}, timeout=10)
        states = {state.name: state for state in hub.server_states()}

    assert result.ok and result.text == "over http"
    assert states["secured"].status == "connected" and states["secured"].transport == "http"
    assert states["anonymous"].status == "failed" and "HTTP 401" in (states["anonymous"].reason or "")
    # The token lives in the environment only: not in the config, not in any state.
    assert "test-token-123" not in secured_servers["secured"].model_dump_json()
    assert all("test-token-123" not in state.model_dump_json() for state in states.values())


async def test_a_long_call_heartbeats(secured_servers: dict[str, McpServerConfig]) -> None:
    heartbeats: list[tuple] = []
    env = activity_env(heartbeat_timeout=timedelta(seconds=0.3))
    env.on_heartbeat = lambda *details: heartbeats.append(details)
    call = ToolCallInput(tool="secured_slow_echo", arguments={"text": "done", "seconds": 0.6}, step_id="wait")

    async with ToolHub({"secured": secured_servers["secured"]}) as hub:
        output = await env.run(ToolActivities(hub).call_tool, call)

    assert output.ok and output.text == "done"
    assert heartbeats and heartbeats[0] == ("wait", "secured_slow_echo")


async def test_a_slow_tool_times_out_retryably_and_the_session_survives(
    secured_servers: dict[str, McpServerConfig],
) -> None:
    tools_env = activity_env()
    async with ToolHub({"secured": secured_servers["secured"]}) as hub:
        tools = ToolActivities(hub, call_timeout=timedelta(seconds=0.3))
        slow = ToolCallInput(tool="secured_slow_echo", arguments={"text": "late", "seconds": 5})
        with pytest.raises(ApplicationError) as failure:
            await tools_env.run(tools.call_tool, slow)
        # The same hub, so the same session; a timeout a loaded machine's round trip cannot pass.
        patient = ToolActivities(hub, call_timeout=timedelta(seconds=30))
        quick = await tools_env.run(
            patient.call_tool, ToolCallInput(tool="secured_echo", arguments={"text": "hi"})
        )

    assert failure.value.type == "ToolTimeoutError" and not failure.value.non_retryable
    assert quick.ok and quick.text == "hi"


async def test_an_http_server_that_went_away_is_a_retryable_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECURED_API_KEY", "test-token-123")
    process, url = await start_secured_server()
    config = McpServerConfig(url=url, headers={"X-Api-Key": "${SECURED_API_KEY}"})
    async with ToolHub({"gone": config}) as hub:
        assert (await hub.call("gone_echo", {"text": "here"}, timeout=10)).ok
        process.kill()
        await process.wait()

        with pytest.raises(ApplicationError) as failure:
            await activity_env().run(
                ToolActivities(hub).call_tool, ToolCallInput(tool="gone_echo", arguments={"text": "?"})
            )
        state = hub.server_states()[0]

    assert failure.value.type == "ToolServerError" and not failure.value.non_retryable
    assert "ConnectError" in str(failure.value)
    assert state.status == "failed" and "ConnectError" in (state.reason or "")


# ---------------------------------------------------------------------------
# Per-server timeouts, the argument pipeline in calls


def test_config_takes_a_per_server_timeout(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"slow": {"url": "http://h/mcp", "timeout": 120}}}))
    assert load_mcp_config(path, defaults={})["slow"].timeout == 120

    path.write_text(json.dumps({"mcpServers": {"slow": {"url": "http://h/mcp", "timeout": 0}}}))
    with pytest.raises(McpConfigError, match="server 'slow': field 'timeout'"):
        load_mcp_config(path, defaults={})


async def test_a_server_timeout_bounds_its_calls(secured_servers: dict[str, McpServerConfig]) -> None:
    slow_server = secured_servers["secured"].model_copy(update={"timeout": 0.3})
    async with ToolHub({"secured": slow_server}, call_timeout=30) as hub:
        with pytest.raises(ToolTimeoutError, match="secured_slow_echo did not answer within 0.3 s"):
            await hub.call("secured_slow_echo", {"text": "late", "seconds": 5})
        quick = await hub.call("secured_echo", {"text": "still there"})
        [state] = hub.server_states()

    assert quick.ok and quick.text == "still there"
    assert state.timeout == 0.3


async def test_calls_go_through_the_argument_pipeline(
    hub: ToolHub, outbox_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        hub,
        "rules",
        ArgumentRules(
            hallucinated={"outbox_": ["teamId"]},
            defaults={"outbox_send_message": {"chat_id": ParameterDefault(value="42", max_length=20)}},
        ),
    )
    call = ToolCallInput(
        tool="outbox_send_message",
        arguments={"message": "pipeline", "chat_id": "x" * 40, "teamId": "t-1"},
        step_id="notify",
    )
    sent = await activity_env().run(ToolActivities(hub).call_tool, call)
    listed = await hub.call("outbox_list_messages", {"limit": "1", "chat_id": 42})

    assert sent.ok and sent.structured is not None and sent.structured["chat_id"] == "42"
    assert sent.adjusted == [
        "'teamId': removed (not a parameter of outbox_send_message)",
        "'chat_id': suspiciously long (40 characters), the configured default filled in",
    ]
    assert listed.ok and [m["message"] for m in listed.structured["messages"]] == ["pipeline"]
    assert listed.adjusted == ["'limit': \"1\" → 1", "'chat_id': 42 → \"42\""]


def test_argument_rules_file_adds_to_the_built_in_chat_rule(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(
        "hallucinated: {vercel_: [teamId, slug]}\n"
        "defaults:\n"
        "  gmail_send_email: {from: {value: '${MAIL_FROM}'}}\n"
    )
    rules = load_argument_rules(path, default_chat_id="123456", environ={"MAIL_FROM": "me@example.com"})

    assert rules.hallucinated == {"vercel_": ["teamId", "slug"]}
    assert rules.defaults["telegram_send_message"]["chat_id"] == ParameterDefault(
        value="123456", max_length=20
    )
    assert rules.defaults["gmail_send_email"]["from"].value == "me@example.com"
    assert load_argument_rules(None) == ArgumentRules()

    path.write_text("defaults: {gmail_send_email: {from: {valeu: x}}}\n")
    with pytest.raises(
        McpConfigError, match=r"rules.yaml: .*defaults.gmail_send_email.from.valeu: Extra inputs"
    ):
        load_argument_rules(path)


# ---------------------------------------------------------------------------
# A live catalog: config file changes, TTL, on demand, tool-change notices


def changing_server() -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[str(CHANGING_SERVER)])


def write_config(path: Path, servers: dict[str, McpServerConfig | dict]) -> None:
    """Write an mcpServers file so that its stamp surely changes (timestamps are coarser than writes)."""
    previous = path.stat().st_mtime_ns if path.exists() else 0
    entries = {
        name: (s.model_dump(mode="json", exclude_defaults=True) if isinstance(s, McpServerConfig) else s)
        for name, s in servers.items()
    }
    path.write_text(json.dumps({"mcpServers": entries}))
    stamp = max(previous + 1_000_000, time.time_ns())
    os.utime(path, ns=(stamp, stamp))


async def test_a_changed_config_file_connects_closes_and_reconnects_servers(tmp_path: Path) -> None:
    config, first, second = tmp_path / "mcp.json", tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    write_config(config, {"one": outbox_config(first)})
    async with ToolHub.from_config(config, defaults={}, config_poll=0.05, catalog_ttl=None) as hub:
        assert hub.tool_names() == {"one_send_message", "one_list_messages"}

        write_config(config, {"one": outbox_config(first), "two": outbox_config(second)})
        await eventually(lambda: "two_send_message" in hub.tool_names())  # the background poll saw it
        assert (await hub.call("two_send_message", {"message": "to two"})).ok

        # Changed: "one" now writes elsewhere; removed: "two". The catalog request applies it at once.
        write_config(config, {"one": outbox_config(second)})
        catalog = await activity_env().run(ToolActivities(hub).get_tool_catalog)
        assert catalog.tool_names() == {"one_send_message", "one_list_messages"}
        assert [s.name for s in catalog.servers] == ["one"]
        assert (await hub.call("one_send_message", {"message": "one, moved"})).ok
        with pytest.raises(UnknownToolError):
            await hub.call("two_send_message", {"message": "gone"})

    assert not first.exists()
    assert stored_messages(second) == ["to two", "one, moved"]
    assert outbox_pids(first) == outbox_pids(second) == []  # removed and replaced servers were stopped


async def test_a_lazy_hub_reports_its_servers_not_started_through_a_reload_and_connects_them_at_a_need(
        tmp_path: Path) -> None:
    """A worker's hub connects when first needed: until then every server, one a changed config file added too,
    reads ``not started`` (never ``connecting``), and the states asked (as /readyz and get_server_states ask)
    start none; the first need connects them all, the added one with them."""
    config, outbox = tmp_path / "mcp.json", tmp_path / "outbox.jsonl"
    write_config(config, {"outbox": outbox_config(outbox)})
    hub = ToolHub.from_config(config, defaults={}, config_poll=60, catalog_ttl=None)
    await hub.start(wait=False, lazy=True)
    try:
        not_started = ("not started", "connects when first needed")
        assert [(s.name, s.status, s.reason) for s in hub.server_states()] == [("outbox", *not_started)]
        write_config(config, {"outbox": outbox_config(outbox), "changing": changing_server()})
        states = await activity_env().run(ToolActivities(hub).get_server_states)
        assert [(s.name, s.status, s.reason) for s in states] == [("outbox", *not_started), ("changing", *not_started)]
        assert hub.lazy and outbox_pids(outbox) == []  # nothing was started to report them

        assert await asyncio.to_thread(hub.waited_for_connects, ["changing_add_tool"])
        await hub.settle(30)
        assert {s.name: (s.status, s.reason) for s in hub.server_states()} == {
            "outbox": ("connected", None), "changing": ("connected", None)}
        assert (await hub.call("outbox_send_message", {"message": "up"})).ok
    finally:
        await hub.close()


async def test_a_broken_config_file_keeps_the_running_servers(tmp_path: Path) -> None:
    config, outbox = tmp_path / "mcp.json", tmp_path / "outbox.jsonl"
    write_config(config, {"outbox": outbox_config(outbox)})
    async with ToolHub.from_config(config, defaults={}, config_poll=60, catalog_ttl=None) as hub:
        write_config(config, {"outbox": {"comand": "typo"}})
        broken = await activity_env().run(ToolActivities(hub).get_tool_catalog)
        still = await hub.call("outbox_send_message", {"message": "still up"})

        write_config(config, {"outbox": outbox_config(outbox), "changing": changing_server()})
        fixed = await activity_env().run(ToolActivities(hub).get_tool_catalog)

    assert broken.config_error is not None and "server 'outbox': field 'comand'" in broken.config_error
    assert broken.tool_names() == {"outbox_send_message", "outbox_list_messages"}
    assert still.ok
    assert fixed.config_error is None and "changing_add_tool" in fixed.tool_names()


async def test_the_ttl_relists_tools_and_retries_failed_servers(tmp_path: Path) -> None:
    flag = tmp_path / "may-start"
    late_starter = McpServerConfig(
        command=sys.executable,
        args=[
            "-c",
            (
                "import os, runpy, sys; sys.exit(3) if not os.path.exists(sys.argv[1]) else None; "
                "sys.argv = ['outbox']; runpy.run_module('mcp_servers.outbox', run_name='__main__')"
            ),
            str(flag),
        ],
        env={"SKILLS_OUTBOX_PATH": str(tmp_path / "outbox.jsonl")},
        cwd=ROOT,
    )
    async with ToolHub({"late": late_starter, "changing": changing_server()}, catalog_ttl=0.2) as hub:
        assert {s.name: s.status for s in hub.server_states()} == {"late": "failed", "changing": "connected"}
        await hub.call("changing_add_tool_quietly", {"name": "found_by_ttl"})
        flag.touch()

        def refreshed_with_both() -> ToolCatalog | None:
            # A refresh publishes its tools server by server and stamps the catalog once all are done.
            catalog = hub.tool_catalog()
            done = catalog.refreshed_at is not None and {"changing_found_by_ttl", "late_send_message"} <= (
                catalog.tool_names()
            )
            return catalog if done else None

        catalog = await eventually(refreshed_with_both)

    assert catalog.unavailable == {}


async def test_a_registration_tries_a_failed_server_again_before_calling_its_tools_unknown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Down when the worker started, up now: a registration naming its tool must not wait for the TTL.
    flag = tmp_path / "may-start"
    late_starter = McpServerConfig(
        command=sys.executable,
        args=["-c", ("import os, runpy, sys; sys.exit(3) if not os.path.exists(sys.argv[1]) else None; "
                     "sys.argv = ['outbox']; runpy.run_module('mcp_servers.outbox', run_name='__main__')"), str(flag)],
        env={"SKILLS_OUTBOX_PATH": str(tmp_path / "outbox.jsonl")},
        cwd=ROOT,
    )
    async with ToolHub({"late": late_starter}, catalog_ttl=None) as hub:
        assert [s.status for s in hub.server_states()] == ["failed"]
        # A tool of another server: no try.
        assert await asyncio.to_thread(hub.waited_for_connects, {"other_tool"}) is False
        # Tried, still down. Then up, but tried again only RETRY_FAILED_EVERY seconds later, so a broken
        # server named by many registrations does not hold each of them for a connect.
        assert await asyncio.to_thread(hub.waited_for_connects, {"late_send_message"}) is False
        flag.touch()
        assert await asyncio.to_thread(hub.waited_for_connects, {"late_send_message"}) is False
        assert [s.status for s in hub.server_states()] == ["failed"]
        monkeypatch.setattr(hub_module, "RETRY_FAILED_EVERY", 0.0)
        assert await asyncio.to_thread(hub.waited_for_connects, {"late_send_message"}) is True
        assert "late_send_message" in hub.tool_names()


async def test_refresh_tool_catalog_on_demand(tmp_path: Path) -> None:
    async with ToolHub({"changing": changing_server()}, catalog_ttl=None) as hub:
        tools = ToolActivities(hub)
        before = await activity_env().run(tools.get_tool_catalog)
        await hub.call("changing_add_tool_quietly", {"name": "on_demand"})
        unrefreshed = await activity_env().run(tools.get_tool_catalog)
        refreshed = await activity_env().run(tools.refresh_tool_catalog)
        states = await activity_env().run(tools.get_server_states)

    assert before.refreshed_at is None and "changing_on_demand" not in unrefreshed.tool_names()
    assert "changing_on_demand" in refreshed.tool_names() and refreshed.refreshed_at is not None
    assert {"name": "changing_on_demand", "description": "Added while running: on_demand.", "hints": []} in [
        entry.model_dump() for entry in refreshed.catalog["changing"]
    ]
    assert [(s.name, s.status, s.tools) for s in states] == [("changing", "connected", 4)]


async def test_a_server_announcing_new_tools_is_listed_again_at_once() -> None:
    async with ToolHub({"changing": changing_server()}, catalog_ttl=None) as hub:
        await hub.call("changing_add_tool", {"name": "announced"})
        await eventually(lambda: "changing_announced" in hub.tool_names())
        result = await hub.call("changing_announced", {})

    assert result.ok and result.text == "announced"


async def test_tool_names_are_cached_until_something_changes() -> None:
    async with ToolHub({"changing": changing_server()}, catalog_ttl=None) as hub:
        first = await asyncio.to_thread(hub.tool_names)  # as the registration activity calls it
        assert hub.tool_names() is first
        await hub.call("changing_add_tool_quietly", {"name": "later"})
        await hub.refresh()
        assert hub.tool_names() is not first and "changing_later" in hub.tool_names()


async def test_a_call_on_a_server_removed_from_the_config_fails_clearly(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    write_config(config, {"changing": changing_server()})
    async with ToolHub.from_config(config, defaults={}, config_poll=60, catalog_ttl=None) as hub:
        call = asyncio.create_task(hub.call("changing_wait", {"seconds": 30}))
        write_config(config, {})
        assert await hub.reload_config()
        with pytest.raises(ToolServerError, match="'changing' was removed from the config"):
            await call


# ---------------------------------------------------------------------------
# `skills catalog`, through a real Temporal server and worker


async def test_skills_catalog_prints_servers_and_tools_through_temporal(
    client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_queue = f"test-catalog-{uuid.uuid4().hex[:8]}"
    servers = {"outbox": outbox_config(tmp_path / "outbox.jsonl"), "crashes": crashing_server("no token")}
    async with ToolHub(servers, catalog_ttl=None) as hub:
        tools = ToolActivities(hub)
        activities = [tools.get_tool_catalog, tools.refresh_tool_catalog, tools.get_server_states]
        async with Worker(client, task_queue=task_queue, activities=activities):
            skills = SkillsClient(client, task_queue)
            capsys.readouterr()  # the dev server's banner, when this test started it
            shown = await tools_cli.catalog(argparse.Namespace(json=False, refresh=False), skills)
            human = capsys.readouterr().out
            await tools_cli.catalog(argparse.Namespace(json=True, refresh=True), skills)
            as_json = json.loads(capsys.readouterr().out)

    lines = human.splitlines()
    assert lines[0] == "2 tools across 1 MCP server"
    assert any(line.startswith("outbox   connected   stdio  2 tools  timeout 60 s  since ") for line in lines)
    assert "  outbox_send_message   Send a message to the user by storing it in the outbox." in lines
    assert any(line.startswith("crashes  failed      stdio  since ") for line in lines)
    assert any(line.startswith("    ") and "no token" in line for line in lines)
    assert shown.tool_names() == {"outbox_send_message", "outbox_list_messages"}
    assert as_json["summary"] == "2 tools across 1 MCP server" and as_json["refreshed_at"] is not None
    assert [s["status"] for s in as_json["servers"]] == ["connected", "failed"]
    assert as_json["catalog"]["outbox"][1] == {
        "name": "outbox_list_messages", "description": "List the newest messages in the outbox, newest first.",
        "hints": ["read-only"],
    }
