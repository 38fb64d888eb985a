"""The outbox MCP server over real stdio, through the MCP client."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def outbox(path: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_servers.outbox"],
        env={"SKILLS_OUTBOX_PATH": str(path)},
        cwd=ROOT,
    )
    async with Client(params) as client:
        yield client


def stored_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_lists_its_two_tools_with_descriptions(tmp_path: Path) -> None:
    async with outbox(tmp_path / "outbox.jsonl") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert set(tools) == {"send_message", "list_messages"}
    send = tools["send_message"]
    assert send.description and send.description.startswith("Send a message to the user")
    assert send.input_schema["required"] == ["message"]
    assert set(send.input_schema["properties"]) == {"message", "chat_id"}


async def test_send_stores_a_line_and_confirms_with_the_id(tmp_path: Path) -> None:
    path = tmp_path / "data" / "outbox.jsonl"  # the directory does not exist yet
    async with outbox(path) as client:
        result = await client.call_tool("send_message", {"message": "Backup done", "chat_id": "42"})

    assert not result.is_error
    sent = result.structured_content
    assert sent is not None and sent["chat_id"] == "42" and sent["message"] == "Backup done"
    assert sent["id"] in result.content[0].text
    [line] = stored_lines(path)
    assert line == sent
    assert line["at"].endswith("Z") or line["at"].endswith("+00:00")


async def test_list_is_newest_first_with_limit_and_chat_filter(tmp_path: Path) -> None:
    async with outbox(tmp_path / "outbox.jsonl") as client:
        for text, chat in [("one", "a"), ("two", "b"), ("three", "a"), ("four", None)]:
            await client.call_tool("send_message", {"message": text, "chat_id": chat})

        newest_two = await client.call_tool("list_messages", {"limit": 2})
        chat_a = await client.call_tool("list_messages", {"chat_id": "a"})
        everything = await client.call_tool("list_messages", {})

    def texts(result) -> list[str]:
        assert not result.is_error
        return [m["message"] for m in result.structured_content["messages"]]

    assert texts(newest_two) == ["four", "three"]
    assert texts(chat_a) == ["three", "one"]
    assert texts(everything) == ["four", "three", "two", "one"]


async def test_bad_input_comes_back_as_a_readable_tool_error(tmp_path: Path) -> None:
    async with outbox(tmp_path / "outbox.jsonl") as client:
        empty = await client.call_tool("send_message", {"message": "   "})
        too_many = await client.call_tool("list_messages", {"limit": 0})

    assert empty.is_error and "message is empty" in empty.content[0].text
    assert too_many.is_error and "limit must be between 1 and 500" in too_many.content[0].text


async def test_a_torn_line_from_a_killed_writer_is_skipped_and_not_glued_to(tmp_path: Path) -> None:
    path = tmp_path / "outbox.jsonl"
    path.write_bytes(b'{"id": "dead", "at": "2026-01-01T00:00:00Z", "mess')  # no newline: a writer died here
    async with outbox(path) as client:
        await client.call_tool("send_message", {"message": "after the crash"})
        listed = await client.call_tool("list_messages", {})

    assert [m["message"] for m in listed.structured_content["messages"]] == ["after the crash"]
    assert json.loads(path.read_text().splitlines()[-1])["message"] == "after the crash"


async def test_concurrent_writers_in_two_processes_write_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "outbox.jsonl"
    per_writer = 40
    # Big messages make an unlocked, interleaved write very likely to show up as a broken line.
    body = "x" * 20_000

    async def writer(name: str) -> None:
        async with outbox(path) as client:
            # Concurrent calls: the server runs each sync tool on its own thread, so this
            # also races threads of one process besides the two processes.
            results = await asyncio.gather(
                *(
                    client.call_tool("send_message", {"message": f"{name}-{i}-{body}", "chat_id": name})
                    for i in range(per_writer)
                )
            )
            assert not any(r.is_error for r in results)

    await asyncio.gather(writer("left"), writer("right"))

    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    lines = stored_lines(path)  # every line parses as one whole JSON object
    assert len(lines) == 2 * per_writer
    assert {line["message"].rsplit("-", 1)[0] for line in lines} == {
        f"{name}-{i}" for name in ("left", "right") for i in range(per_writer)
    }
    assert len({line["id"] for line in lines}) == 2 * per_writer
