"""`skills catalog`: the worker's live tool catalog, server by server.

    skills catalog               servers with their state, tools grouped by server (first sentence each)
    skills catalog --refresh     refresh first: config file, tool lists, failed servers retried
    skills catalog --json        the tools grouped by server, plus the servers' states

It reads through Temporal like every other read (a standalone ``get_tool_catalog`` or
``refresh_tool_catalog`` activity on the worker's task queue): the catalog is the
worker's, the servers run there. ``catalog_command`` is the ``skills catalog`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from skills.errors import SkillsError
from skills.run.catalog import ServerState, ToolCatalog
from starter.command import current, data_command, with_client
from starter.output import print_json, show, when

if TYPE_CHECKING:
    from client import SkillsClient


@click.command("catalog", short_help="The worker's tools by MCP server, with their state.")
@click.option("--refresh", is_flag=True,
              help="Refresh first: re-read the config file, list tools again, retry failed servers.")
@data_command
def catalog_command(refresh: bool) -> int:
    """The worker's tools, grouped by MCP server, with each server's state."""
    options = current()

    async def work(skills: SkillsClient) -> None:
        await catalog(_Args(json=options.json, refresh=refresh), skills)

    return with_client(work)


class _Args:
    def __init__(self, json: bool, refresh: bool) -> None:
        self.json = json
        self.refresh = refresh


async def catalog(args: Any, skills: SkillsClient) -> ToolCatalog:
    """Print the live catalog (``args.json``, ``args.refresh``); return it (for callers and tests)."""
    found = await skills.catalog(refresh=args.refresh)
    if not isinstance(found, ToolCatalog):  # a worker older than this client answers differently
        raise SkillsError(f"the catalog answered {type(found).__name__}, not a tool catalog")
    trust = await _trust(skills, found)
    if args.json:
        print_json({**found.model_dump(mode="json"), "skill_trust": trust})
    else:
        print_catalog(found, trust)
    return found


async def _trust(skills: SkillsClient, found: ToolCatalog) -> dict[str, str]:
    """Each skill with toolsets: whether its owner trusts them (they connect only then)."""
    from client.trust import trust_states

    names = sorted({toolset.skill for toolset in found.skill_toolsets})
    try:
        states = await trust_states(skills, names)
    except SkillsError as e:  # a worker older than this client has no trust_states
        return dict.fromkeys(names, f"unknown ({e})")
    return {name: states[name].describe() if name in states else "unknown" for name in names}


def print_catalog(found: ToolCatalog, trust: dict[str, str] | None = None) -> None:
    refreshed = f"; refreshed {when(found.refreshed_at)}" if found.refreshed_at else ""
    print(f"{found.summary}{refreshed}")
    if found.config_error:
        print(f"config not applied (the servers of the last good one keep running): {found.config_error}")
    servers = found.servers or []
    width = max((len(s.name) for s in servers), default=0)
    name_width = max((len(e.name) for entries in found.catalog.values() for e in entries), default=0)
    # Servers a worker older than this client does not report in `servers` come last, bare.
    unreported = sorted(found.catalog.keys() - {s.name for s in servers})
    for state in [*servers, *unreported]:
        print(flush=True)
        if isinstance(state, ServerState):
            line = Table.grid(padding=(0, 2, 0, 0))
            line.add_column(min_width=width, style="bold")
            line.add_column(min_width=10, style=_STATUS_STYLES.get(state.status, ""))
            line.add_column(min_width=5)
            line.add_column()
            line.add_row(state.name, state.status, state.transport, "  ".join(_state_parts(state)))
            show(line)
            if state.reason:
                show(Padding(Text(state.reason), (0, 0, 0, 4)))
            name = state.name
        else:
            print(state)
            name = state
        tools = Table.grid(padding=(0, 2, 0, 0))
        tools.add_column(min_width=name_width, no_wrap=True)
        tools.add_column()
        for entry in found.catalog.get(name, []):
            hints = f"  [{', '.join(entry.hints)}]" if entry.hints else ""
            tools.add_row(Text(entry.name), Text(entry.description + hints))
        if tools.row_count:
            show(Padding(tools, (0, 0, 0, 2)))
    if found.skill_toolsets:
        print("\nskills' own toolsets (SKILL.md `toolsets`: connected while the skill runs, for its runs only)")
        for toolset in found.skill_toolsets:
            state = (f"connected, {len(toolset.tools)} tool{'s' * (len(toolset.tools) != 1)}" if toolset.connected
                     else "connected at the skill's next run")
            shadows = f"  (shadows the worker's {toolset.server} for this skill)" if toolset.shadows else ""
            trusted = (trust or {}).get(toolset.skill)
            if trusted is not None and not trusted.startswith("trusted"):
                state = f"{trusted}: not connected until `skills trust {toolset.skill}`"
            print(f"  {toolset.skill}: {toolset.server}  {toolset.transport}  {state}{shadows}")
            for name in toolset.tools:
                print(f"    {name}")


_STATUS_STYLES = {"connected": "green", "failed": "red"}


def _state_parts(state: ServerState) -> list[str]:
    parts = []
    if state.status == "connected":
        parts.append(f"{state.tools} tool{'s' * (state.tools != 1)}")
        if state.timeout is not None:
            parts.append(f"timeout {state.timeout:g} s")
    if state.since is not None:
        parts.append(f"since {when(state.since)}")
    return parts
