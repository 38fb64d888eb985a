"""A stand-in for a Gmail/Calendar MCP server (an outside service that cannot run here).

Its state is a JSON file named by $FAKE_GMAIL_STATE: {"events": [...], "new_emails": [...]};
every call is appended to $FAKE_GMAIL_STATE.calls.jsonl so tests can see the arguments.
"""

import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("gmail", log_level="WARNING")
STATE = Path(os.environ["FAKE_GMAIL_STATE"])


def _state() -> dict:
    return json.loads(STATE.read_text()) if STATE.exists() else {}


def _log(tool: str, arguments: dict) -> None:
    with open(f"{STATE}.calls.jsonl", "a") as calls:
        calls.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool()
def list_events(timeMin: str, timeMax: str) -> dict:  # noqa: N803 - the Calendar API's names
    """List calendar events between two times."""
    _log("list_events", {"timeMin": timeMin, "timeMax": timeMax})
    return {"events": _state().get("events", [])}


@server.tool()
def get_new_emails() -> dict:
    """Get the emails that arrived since the last check."""
    _log("get_new_emails", {})
    return {"emails": _state().get("new_emails", [])}


if __name__ == "__main__":
    server.run()
