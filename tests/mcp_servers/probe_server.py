"""A stdio MCP server for tests of the toolset sandbox: its tools report what the server can reach.

Run as ``python probe_server.py`` from a skill's folder. Every tool answers with what happened
(``"denied: ..."`` when the system refused), never raises, so a test reads the wall from the text.
"""

from __future__ import annotations

import os
import socket

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("probe", log_level="WARNING")


def _attempt(action: object) -> str:
    try:
        return str(action())  # type: ignore[operator]
    except Exception as e:  # noqa: BLE001 - the refusal is the answer
        return f"denied: {type(e).__name__}: {e}"


@server.tool(description="The server's own environment, as NAME=value lines.")
def environment() -> str:
    return "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))


@server.tool(description="The _meta of this very request, as JSON (the idempotency key arrives there).")
def request_meta(ctx: Context) -> str:
    import json

    return json.dumps(dict(ctx.request_context.meta or {}), default=str)


@server.tool(description="Read a file.")
def read(path: str) -> str:
    return _attempt(lambda: open(path, "rb").read().decode(errors="replace"))


@server.tool(description="Write a file.")
def write(path: str, text: str) -> str:
    def go() -> str:
        with open(path, "w") as f:
            f.write(text)
        return "written"
    return _attempt(go)


@server.tool(description="The pids visible in /proc.")
def pids() -> str:
    return " ".join(sorted(p for p in os.listdir("/proc") if p.isdigit()))


@server.tool(description="Open a TCP connection.")
def connect(host: str, port: int) -> str:
    def go() -> str:
        with socket.create_connection((host, port), timeout=3):
            return "connected"
    return _attempt(go)


@server.tool(description="Who the server runs as, and where.")
def whoami() -> str:
    return f"uid={os.getuid()} gid={os.getgid()} cwd={os.getcwd()}"


if __name__ == "__main__":
    server.run("stdio")
