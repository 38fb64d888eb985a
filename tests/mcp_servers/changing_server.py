"""A stdio MCP server for tests whose tool list changes while it runs.

Run as ``python changing_server.py``. ``add_tool(name)`` adds a tool and tells the
client (on a ``subscriptions/listen`` stream on protocol 2026-07-28, with
``notifications/tools/list_changed`` before that); ``add_tool_quietly(name)`` adds
one without a word, so only a refresh can find it. ``wait(seconds)`` stands in for
a long call.
"""

from __future__ import annotations

import contextlib

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing", log_level="WARNING")


def _add(name: str) -> None:
    server.add_tool(lambda: name, name=name, description=f"Added while running: {name}. Returns its name.")


@server.tool(description="Add a tool called `name` and announce the change.")
async def add_tool(name: str, ctx: Context) -> str:
    _add(name)
    # Whichever the connection's protocol supports; the other one is not deliverable there.
    with contextlib.suppress(Exception):
        await ctx.notify_tools_changed()
    with contextlib.suppress(Exception):
        await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool(description="Add a tool called `name` without telling anyone.")
def add_tool_quietly(name: str) -> str:
    _add(name)
    return f"added {name}"


@server.tool(description="Wait, then answer. Stands in for a long-running tool.")
async def wait(seconds: float) -> str:
    await anyio.sleep(seconds)
    return "waited"


if __name__ == "__main__":
    server.run("stdio")
