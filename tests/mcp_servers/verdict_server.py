"""A stdio MCP server whose one tool succeeds or fails as asked: ``verdict(ok)`` answers "fine"
or raises (an error result), so a Direct-tier plan can make a skill that always fails."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("verdict", log_level="WARNING")


@server.tool()
def verdict(ok: bool = True) -> str:
    """Answer 'fine', or fail when ``ok`` is false."""
    if not ok:
        raise ValueError("failing on purpose")
    return "fine"


if __name__ == "__main__":
    server.run()
