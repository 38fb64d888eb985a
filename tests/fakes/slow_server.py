"""Tools that take their time: for killing a worker in the middle of a call, and a slow notifier.

`slow(seconds, message)` appends "start <message>" then, after `seconds`, "done <message>"
to $FAKE_SLOW_LOG. `notify(message)` does the same after $FAKE_SLOW_NOTIFY_SECONDS (12 by
default): a notifier slower than an activity's 10 s heartbeat timeout.
"""

import asyncio
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("slow", log_level="WARNING")


def _log(line: str) -> None:
    with open(os.environ["FAKE_SLOW_LOG"], "a") as log:
        log.write(line + "\n")


@server.tool()
async def slow(seconds: float, message: str) -> str:
    """Wait, then answer."""
    _log(f"start {message}")
    await asyncio.sleep(seconds)
    _log(f"done {message}")
    return f"slept {seconds}s for {message}"


@server.tool()
async def notify(message: str) -> str:
    """Deliver a notification, slowly."""
    return await slow(float(os.environ.get("FAKE_SLOW_NOTIFY_SECONDS", "12")), message)


if __name__ == "__main__":
    server.run()
