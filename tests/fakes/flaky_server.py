"""A server that can be taken down: while the file $FAKE_FLAKY_DOWN exists it refuses to start.

Killing its process and creating the file keeps it down (the engine's reconnects fail);
removing the file lets the next reconnect succeed.
"""

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("flaky", log_level="WARNING")


@server.tool()
def ping(message: str = "ping") -> str:
    """Answer pong."""
    return f"pong: {message}"


if __name__ == "__main__":
    if Path(os.environ["FAKE_FLAKY_DOWN"]).exists():
        sys.exit("flaky: down on purpose")
    server.run()
