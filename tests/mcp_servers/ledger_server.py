"""A stdio MCP server whose tools carry MCP annotations: ``remove`` says ``destructiveHint: true``,
``entries`` says ``readOnlyHint: true``, ``add`` says nothing (as most servers' tools). Each answers
with what it did, so a test reads from a run's record whether the call was made."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("ledger", log_level="WARNING")
_entries: list[str] = ["rent", "coffee"]


@server.tool(description="Remove an entry from the ledger.",
             annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True))
def remove(entry: str) -> str:
    if entry in _entries:
        _entries.remove(entry)
    return f"removed {entry}"


@server.tool(description="The ledger's entries.", annotations=ToolAnnotations(readOnlyHint=True))
def entries() -> str:
    return ", ".join(_entries)


@server.tool(description="Add an entry to the ledger.")
def add(entry: str) -> str:
    _entries.append(entry)
    return f"added {entry}"


if __name__ == "__main__":
    server.run()
