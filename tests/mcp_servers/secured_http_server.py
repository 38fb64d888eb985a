"""A streamable-HTTP MCP server for tests that insists on one request header.

Run as ``python secured_http_server.py``. It binds a free loopback port itself and
prints that port on its first stdout line, so a test waits for the line instead of
sleeping. Every request without ``$EXPECTED_HEADER: $EXPECTED_VALUE`` gets a 401.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("secured", log_level="WARNING")


@server.tool(description="Echo the text back. Proves that a call went through the header check.")
def echo(text: str) -> str:
    return text


@server.tool(description="Echo the text back after waiting. Stands in for a long-running tool.")
async def slow_echo(text: str, seconds: float) -> str:
    await anyio.sleep(seconds)
    return text


class RequireHeader:
    """ASGI middleware: 401 unless the expected header carries the expected value."""

    def __init__(self, app: Any, name: str, value: str) -> None:
        self.app = app
        self.name = name.lower().encode()
        self.value = value.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (self.name, self.value) not in scope["headers"]:
            await send(
                {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]}
            )
            await send({"type": "http.response.body", "body": b"missing or wrong credentials"})
            return
        await self.app(scope, receive, send)


def main() -> None:
    app = RequireHeader(
        server.streamable_http_app(), os.environ["EXPECTED_HEADER"], os.environ["EXPECTED_VALUE"]
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    # The socket already accepts connections (the kernel queues them), so announcing
    # the port now is safe even though uvicorn has not started serving yet.
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
