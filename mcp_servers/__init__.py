"""MCP servers shipped with the engine.

Each module is a complete server that runs on its own (``python -m mcp_servers.<name>``)
and is reached by the engine like any third-party server: through an ``mcpServers``
entry, over stdio or streamable HTTP. Nothing here is imported by the worker at run time.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any


def run_server(server: Any, module: str, doc: str, port: int, argv: list[str] | None = None) -> None:
    """The command line every bundled server shares: stdio by default, or streamable HTTP."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="streamable-http only")
    parser.add_argument("--port", type=int, default=port, help="streamable-http only")
    args = parser.parse_args(argv)
    # Its INFO lines carry request URLs, and those can carry a secret (a bot token, a webhook's URL).
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port)
