"""SkillToolsets against a real stdio MCP server: per-skill sessions, idle ones closed, a bad server's reason."""

from __future__ import annotations

import pytest

from activities.mcp.toolsets import SkillToolsets
from skills.errors import ToolServerError
from tests.conftest import PYTHON, ROOT

SERVER = {"changing": {"command": PYTHON, "args": [str(ROOT / "tests" / "mcp_servers" / "changing_server.py")]}}


async def test_sessions_are_per_skill_and_idle_ones_close() -> None:
    toolsets = SkillToolsets(idle=0.0)
    try:
        first = await toolsets.call("one", SERVER, "changing_add_tool_quietly", {"name": "a"})
        assert first.ok and first.text == "added a"
        assert toolsets.open_sessions() == [("one", "changing")]
        # Another skill gets a session of its own; the first one, idle, is closed on the way.
        await toolsets.call("two", SERVER, "changing_add_tool_quietly", {"name": "b"})
        assert toolsets.open_sessions() == [("two", "changing")]
        with pytest.raises(ToolServerError, match="not a tool of a toolset of skill 'two'"):
            await toolsets.call("two", SERVER, "outbox_send_message", {})
        bad = {"bad": {"command": PYTHON, "args": ["-c", "raise SystemExit('no licence')"]}}
        with pytest.raises(ToolServerError, match="toolset server 'bad' of skill 'three' failed to start"):
            await toolsets.call("three", bad, "bad_x", {})
    finally:
        await toolsets.close()
    assert toolsets.open_sessions() == []
