"""A server that starts only when let: it waits for the file $FAKE_GATE to exist before it answers
the handshake, so a test decides when it comes up (a slow start, without a fixed sleep).

It appends "waiting" when it starts waiting and "up" when the gate opened to $FAKE_GATE_LOG.
`echo(message)` answers; `fail(message)` returns an error result.
"""

import os
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("gated", log_level="WARNING")


def _log(line: str) -> None:
    with open(os.environ["FAKE_GATE_LOG"], "a") as log:
        log.write(line + "\n")


@server.tool()
def echo(message: str) -> str:
    """Answer with the message."""
    return f"echo: {message}"


@server.tool()
def fail(message: str) -> str:
    """Always fail."""
    raise ValueError(f"failing on purpose: {message}")


if __name__ == "__main__":
    _log("waiting")
    gate = Path(os.environ["FAKE_GATE"])
    while not gate.exists():
        time.sleep(0.05)
    _log("up")
    server.run()
