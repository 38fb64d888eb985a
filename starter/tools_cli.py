"""`skills catalog`: the worker's live tool catalog, server by server.

    skills catalog               servers with their state, tools grouped by server (first sentence each)
    skills catalog --refresh     refresh first: config file, tool lists, failed servers retried
    skills catalog --json        the tools grouped by server, plus the servers' states

It reads through Temporal like every other read (a standalone ``get_tool_catalog`` or
``refresh_tool_catalog`` activity on the worker's task queue): the catalog is the
worker's, the servers run there. ``add_parsers`` and ``COMMANDS`` plug it into ``skills``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from client import SkillsClient
from skills.catalog import ServerState, ToolCatalog
from skills.errors import SkillsError

Handler = Callable[[argparse.Namespace, SkillsClient], Awaitable[Any]]


def add_parsers(sub: Any) -> None:
    """Add ``catalog`` to the ``skills`` sub-commands."""
    catalog_parser = sub.add_parser("catalog", help="the worker's tools, grouped by MCP server, with each server's state")
    catalog_parser.add_argument("--refresh", action="store_true",
                                help="refresh first: re-read the config file, list tools again, retry failed servers")
    catalog_parser.add_argument("--json", action="store_true", help="print JSON")


async def catalog(args: argparse.Namespace, skills: SkillsClient) -> ToolCatalog:
    """Print the live catalog; return it (for callers and tests)."""
    found = await skills.catalog(refresh=args.refresh)
    if not isinstance(found, ToolCatalog):  # a worker older than this client answers differently
        raise SkillsError(f"the catalog answered {type(found).__name__}, not a tool catalog")
    if args.json:
        print(json.dumps(found.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        print_catalog(found)
    return found


def print_catalog(found: ToolCatalog) -> None:
    refreshed = f"; refreshed {_when(found.refreshed_at)}" if found.refreshed_at else ""
    print(f"{found.summary}{refreshed}")
    if found.config_error:
        print(f"config not applied (the servers of the last good one keep running): {found.config_error}")
    servers = found.servers or []
    width = max((len(s.name) for s in servers), default=0)
    name_width = max((len(e.name) for entries in found.catalog.values() for e in entries), default=0)
    for state in servers:
        print()
        print(f"{state.name:<{width}}  {_state_line(state)}")
        for entry in found.catalog.get(state.name, []):
            print(f"  {entry.name:<{name_width}}  {entry.description}".rstrip())
    # Servers a worker older than this client does not report in `servers`.
    for name in found.catalog.keys() - {s.name for s in servers}:
        print(f"\n{name}")
        for entry in found.catalog[name]:
            print(f"  {entry.name:<{name_width}}  {entry.description}".rstrip())


def _state_line(state: ServerState) -> str:
    parts = [f"{state.status:<10}", f"{state.transport:<5}"]
    if state.status == "connected":
        parts.append(f"{state.tools} tool{'s' * (state.tools != 1)}")
        if state.timeout is not None:
            parts.append(f"timeout {state.timeout:g} s")
    if state.since is not None:
        parts.append(f"since {_when(state.since)}")
    line = "  ".join(parts)
    return f"{line}\n    {state.reason}" if state.reason else line


def _when(moment: datetime | None) -> str:
    return moment.astimezone().isoformat(timespec="seconds") if moment else "-"


COMMANDS: dict[str, Handler] = {"catalog": catalog}
