"""The bundled outbox, answering late: `send_message` is the outbox's own (its file, its idempotency
keys and all) and then holds its answer while the file $FAKE_HOLD exists.

A test kills the worker while the answer is held: after the outbox stored the message and before the
activity that asked for it could complete, as when a worker dies, or its session breaks, with the
answer on the wire. The retry's call finds the hold gone and answers at once.
"""

import asyncio
import os
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult

from mcp_servers import outbox

server = MCPServer("outbox", log_level="WARNING")


@server.tool(description="Send a message to the user by storing it in the outbox.")
async def send_message(message: str, chat_id: str | None = None, ctx: Context | None = None) -> CallToolResult:
    result = await outbox.send_message(message, chat_id, ctx)
    await asyncio.to_thread(_held, Path(os.environ["FAKE_HOLD"]))
    return result


def _held(hold: Path) -> None:
    while hold.exists():
        time.sleep(0.05)


if __name__ == "__main__":
    server.run()
