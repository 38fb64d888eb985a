"""MCP servers shipped with the engine.

Each module is a complete server that runs on its own (``python -m mcp_servers.<name>``)
and is reached by the engine like any third-party server: through an ``mcpServers``
entry, over stdio or streamable HTTP. Nothing here is imported by the worker at run time.
"""
