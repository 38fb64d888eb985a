"""A skill's toolsets: MCP servers connected while the skill runs, their tools for that run only.

A SKILL.md's ``toolsets`` are ``mcpServers`` entries. They are not in the worker's
:class:`~activities.mcp.ToolHub`: a run is granted its skill's (:class:`~skills.catalog.ToolsetGrant`,
read when the run begins), and a call of a tool the grant owns is routed here, to a small hub
of that skill's own, connected on first use and keyed by (skill, server name, config), so two
skills never share a session and a skill that declares no toolset cannot reach another's. A
session unused for ``idle`` seconds is closed.

A Direct plan's call carries the grant (``ToolCallInput.toolsets``); an Agent-tier run and a
chat turn list the grant's tools (:meth:`SkillToolsets.tools`) into their sandbox and route
the model's calls of them here.

A server that fails to start fails the call with its reason (``ToolServerError``), so the skill's
run fails, never the worker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from activities.mcp.config import McpServerConfig
from activities.mcp.hub import ToolHub
from activities.metrics import EngineMetrics
from skills.catalog import ToolInfo, ToolResult, ToolsetGrant
from skills.errors import ToolServerError

logger = logging.getLogger(__name__)

IDLE_SECONDS = 300.0
"""A skill's toolset server unused this long is closed (the next call connects it again)."""


def server_config(skill: str, name: str, entry: Mapping[str, Any], folder: Path | None = None) -> McpServerConfig:
    """A toolset entry as an ``mcpServers`` config; a relative ``cwd`` is the skill folder's."""
    data = dict(entry)
    if folder is not None and data.get("command") is not None:
        cwd = Path(data["cwd"]) if data.get("cwd") else Path()
        data["cwd"] = str(cwd if cwd.is_absolute() else folder / cwd)
    try:
        return McpServerConfig.model_validate(data)
    except ValidationError as exc:
        reasons = "; ".join(f"{'.'.join(map(str, e['loc'])) or name}: {e['msg']}" for e in exc.errors())
        raise ToolServerError(f"toolset server '{name}' of skill '{skill}' is misconfigured: {reasons}") from None


class SkillToolsets:
    """Per-skill sessions of toolset servers, opened on demand and closed when idle."""

    def __init__(self, *, connect_timeout: float = 30.0, call_timeout: float = 60.0, idle: float = IDLE_SECONDS,
                 environ: Mapping[str, str] | None = None, metrics: EngineMetrics | None = None) -> None:
        """``metrics`` count the calls under the toolset server's name, as the worker's hub counts its own."""
        self._connect_timeout = connect_timeout
        self._call_timeout = call_timeout
        self._idle = idle
        self._environ = environ
        self._metrics = metrics
        self._hubs: dict[tuple[str, str, str], tuple[ToolHub, float]] = {}
        self._lock = asyncio.Lock()
        self._closed = False

    async def call(self, grant: ToolsetGrant, tool_name: str, arguments: dict[str, Any], *,
                   timeout: float | None = None) -> ToolResult:  # noqa: ASYNC109
        """Call ``<server>_<tool>`` of one of the grant's servers, connecting it first if needed."""
        server = grant.owner(tool_name)
        if server is None:
            raise ToolServerError(f"{tool_name} is not a tool of a toolset of skill '{grant.skill}'")
        started = time.monotonic()
        try:
            hub = await self._hub(grant.skill, server, self._config(grant, server))
        except ToolServerError:
            if self._metrics is not None:  # a server that could not start is a failed call (the hub counts the rest)
                self._metrics.tool_call(server, ToolServerError.__name__, (time.monotonic() - started) * 1000)
            raise
        return await hub.call(tool_name, arguments, timeout=timeout)

    async def tools(self, grant: ToolsetGrant) -> list[ToolInfo]:
        """Every tool of the grant's servers, connecting them: what joins an Agent-tier run's sandbox.
        A server that cannot start raises ``ToolServerError`` with its reason."""
        found: list[ToolInfo] = []
        for server in grant.servers:
            hub = await self._hub(grant.skill, server, self._config(grant, server))
            found += hub.catalog()
        return found

    @staticmethod
    def _config(grant: ToolsetGrant, server: str) -> McpServerConfig:
        return server_config(grant.skill, server, grant.servers[server], Path(grant.folder) if grant.folder else None)

    async def _hub(self, skill: str, server: str, config: McpServerConfig) -> ToolHub:
        key = (skill, server, config.model_dump_json())  # a changed config is a new session
        async with self._lock:
            if self._closed:
                raise ToolServerError("the worker is shutting down: toolsets are closed")
            await self._close_idle(keep=key)
            held = self._hubs.get(key)
            if held is None:
                hub = ToolHub({server: config}, connect_timeout=self._connect_timeout,
                              call_timeout=self._call_timeout, catalog_ttl=None, environ=self._environ,
                              metrics=self._metrics)
                await hub.start()
                [state] = hub.server_states()
                if state.status != "connected":
                    await hub.close()
                    raise ToolServerError(
                        f"toolset server '{server}' of skill '{skill}' failed to start: {state.reason or state.status}"
                    )
                logger.info("toolset server %s of skill %s connected", server, skill)
            else:
                hub = held[0]
            self._hubs[key] = (hub, time.monotonic())
            return hub

    async def _close_idle(self, keep: tuple[str, str, str]) -> None:
        now = time.monotonic()
        stale = [key for key, (_, used) in self._hubs.items() if key != keep and now - used > self._idle]
        for key in stale:
            hub, _ = self._hubs.pop(key)
            logger.info("toolset server %s of skill %s closed (idle)", key[1], key[0])
            with suppress(Exception):
                await hub.close()

    def open_tools(self) -> dict[tuple[str, str], list[str]]:
        """The tools of every open toolset session, by (skill, server)."""
        return {(skill, server): [t.name for t in hub.catalog()] for (skill, server, _), (hub, _) in self._hubs.items()}

    def open_sessions(self) -> list[tuple[str, str]]:
        """(skill, server) of every open toolset session."""
        return [(skill, server) for skill, server, _ in self._hubs]

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
            hubs, self._hubs = list(self._hubs.values()), {}
        for hub, _ in hubs:
            with suppress(Exception):
                await hub.close()
