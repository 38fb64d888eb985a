"""SkillToolsets against a real stdio MCP server: per-skill sessions, idle ones closed, a bad server's reason."""

from __future__ import annotations

import pytest

from activities.mcp.toolsets import SkillToolsets
from skills.catalog import ToolsetGrant
from skills.errors import ToolServerError
from tests.conftest import PYTHON, ROOT

SERVER = {"changing": {"command": PYTHON, "args": [str(ROOT / "tests" / "mcp_servers" / "changing_server.py")]}}


def grant(skill: str, servers: dict[str, dict[str, object]] = SERVER) -> ToolsetGrant:
    return ToolsetGrant(skill=skill, servers=servers)


async def test_sessions_are_per_skill_and_idle_ones_close() -> None:
    toolsets = SkillToolsets(idle=0.0)
    try:
        first = await toolsets.call(grant("one"), "changing_add_tool_quietly", {"name": "a"})
        assert first.ok and first.text == "added a"
        assert toolsets.open_sessions() == [("one", "changing")]
        # Another skill gets a session of its own; the first one, idle, is closed on the way.
        await toolsets.call(grant("two"), "changing_add_tool_quietly", {"name": "b"})
        assert toolsets.open_sessions() == [("two", "changing")]
        # What an Agent-tier run of it is offered: the server's own tools, named as everywhere else.
        listed = {tool.name for tool in await toolsets.tools(grant("two"))}
        assert {"changing_add_tool", "changing_add_tool_quietly", "changing_wait"} <= listed
        with pytest.raises(ToolServerError, match="not a tool of a toolset of skill 'two'"):
            await toolsets.call(grant("two"), "outbox_send_message", {})
        bad = {"bad": {"command": PYTHON, "args": ["-c", "raise SystemExit('no licence')"]}}
        with pytest.raises(ToolServerError, match="toolset server 'bad' of skill 'three' failed to start"):
            await toolsets.call(grant("three", bad), "bad_x", {})
    finally:
        await toolsets.close()
    assert toolsets.open_sessions() == []
