"""A stdio MCP server with a read-only tool that reaches the open world: ``fetch`` says ``readOnlyHint: true``
and nothing of ``openWorldHint`` (MCP reads that as open world), as a web fetcher does. Every URL it is
asked for is appended to ``$FETCH_LOG``: a test reads there whether a request would have left the machine."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("web", log_level="WARNING")


@server.tool(description="Fetch a web page.", annotations=ToolAnnotations(readOnlyHint=True))
def fetch(url: str) -> str:
    with open(os.environ["FETCH_LOG"], "a", encoding="utf-8") as log:
        log.write(url + "\n")
    return f"fetched {url}"


if __name__ == "__main__":
    server.run()
