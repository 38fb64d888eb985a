"""A skill's toolsets: MCP servers connected while the skill runs, their tools for that run only.

A SKILL.md's ``toolsets`` are ``mcpServers`` entries. They are not in the worker's
:class:`~adapters.mcp.ToolHub`: a run is granted its skill's (:class:`~skills.run.catalog.ToolsetGrant`,
made when the run begins), and a call of a tool the grant owns is routed here, to a small hub
of that skill's own, connected on first use and keyed by (skill, server name, config), so two
skills never share a session and a skill that declares no toolset cannot reach another's. A
session unused for ``idle`` seconds is closed.

A grant is a reference: the skill, its servers' names, a digest. What runs comes from the
skill's SKILL.md as the worker's folders hold it (``resolve``), and a grant that does not match
the file is refused (:class:`~skills.errors.ToolsetRefusedError`, naming the skill). A stdio
server runs in the sandbox (:mod:`adapters.mcp.launch`); ``${VAR}`` in an entry is expanded
only from the allowlisted variables, never from the engine's own.

A Direct plan's call carries the grant (``ToolCallInput.toolsets``); an Agent-tier run and a
chat turn list the grant's tools (:meth:`SkillToolsets.tools`) into their sandbox and route
the model's calls of them here.

A server that fails to start fails the call with its reason (``ToolServerError``), so the skill's
run fails, never the worker.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Collection
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.mcp.config import EnvExpander, engine_variable, env_references, toolset_environ
from adapters.mcp.hub import ToolHub
from adapters.mcp.launch import ToolsetSandbox, check_cwd
from adapters.metrics import EngineMetrics
from skills.errors import SandboxUnavailableError, ToolServerError, ToolsetRefusedError
from skills.run.catalog import ToolInfo, ToolResult, ToolsetGrant
from skills.run.scripts import ScriptLimits
from skills.spec.mcpservers import McpServerConfig, ToolsetServer

if TYPE_CHECKING:
    from mcp import StdioServerParameters

logger = logging.getLogger(__name__)

IDLE_SECONDS = 300.0
"""A skill's toolset server unused this long is closed (the next call connects it again)."""

Resolve = Callable[[ToolsetGrant], tuple[Path, dict[str, ToolsetServer]]]
"""A grant's skill folder and toolsets, read from the worker's folders (``activities.skillfiles.granted_toolsets``)."""


def _serves_none(grant: ToolsetGrant) -> tuple[Path, dict[str, ToolsetServer]]:
    raise ToolsetRefusedError(f"this worker serves no skill folders: the toolsets of skill '{grant.skill}' are "
                              "not started")


class SkillToolsets:
    """Per-skill sessions of toolset servers, opened on demand and closed when idle."""

    def __init__(self, resolve: Resolve = _serves_none, *, sandbox: ToolsetSandbox | None = None,
                 allowlist: Collection[str] = (), connect_timeout: float = 30.0, call_timeout: float = 60.0,
                 idle: float = IDLE_SECONDS, metrics: EngineMetrics | None = None,
                 reserved: Callable[[], Collection[str]] = frozenset) -> None:
        """``resolve`` reads a grant's toolsets from the worker's folders; ``sandbox`` starts their stdio
        servers; ``allowlist`` names the worker's variables their ``${VAR}`` may expand, less the ones
        ``reserved`` gives (those the worker's own servers use, asked at each start: the config can
        change). ``metrics`` count the calls under the toolset server's name, as the worker's hub counts
        its own."""
        self._resolve = resolve
        self._sandbox = sandbox or ToolsetSandbox(ScriptLimits())
        self._allowlist = frozenset(allowlist)
        self._reserved = reserved
        self._connect_timeout = connect_timeout
        self._call_timeout = call_timeout
        self._idle = idle
        self._metrics = metrics
        self._hubs: dict[tuple[str, str, str], tuple[ToolHub, float]] = {}
        self._lock = asyncio.Lock()
        self._closed = False

    async def call(self, grant: ToolsetGrant, tool_name: str, arguments: dict[str, Any], *,
                   timeout: float | None = None, idempotency_key: str = "") -> ToolResult:  # noqa: ASYNC109
        """Call ``<server>_<tool>`` of one of the grant's servers, connecting it first if needed; the
        idempotency key goes with it (:meth:`ToolHub.call`)."""
        server = grant.owner(tool_name)
        if server is None:
            raise ToolServerError(f"{tool_name} is not a tool of a toolset of skill '{grant.skill}'")
        started = time.monotonic()
        try:
            folder, configs = await asyncio.to_thread(self._resolve, grant)
            hub = await self._hub(grant.skill, server, configs[server], folder)
        except (ToolServerError, ToolsetRefusedError) as exc:
            if self._metrics is not None:  # a server that could not start is a failed call (the hub counts the rest)
                self._metrics.tool_call(server, type(exc).__name__, (time.monotonic() - started) * 1000)
            raise
        return await hub.call(tool_name, arguments, timeout=timeout, idempotency_key=idempotency_key)

    async def tools(self, grant: ToolsetGrant) -> list[ToolInfo]:
        """Every tool of the grant's servers, connecting them: what joins an Agent-tier run's sandbox.
        A server that cannot start raises ``ToolServerError`` with its reason; a grant that does not
        match the skill's file, ``ToolsetRefusedError``."""
        folder, configs = await asyncio.to_thread(self._resolve, grant)
        found: list[ToolInfo] = []
        for server in grant.servers:
            hub = await self._hub(grant.skill, server, configs[server], folder)
            found += hub.catalog()
        return found

    def _refusal(self, config: McpServerConfig) -> str | None:
        """Why this toolset server is not started, before anything runs, or None."""
        for name, has_default in env_references(config).items():
            if engine_variable(name):
                return f"it names ${{{name}}}, one of the engine's own variables, which a toolset never gets"
            if name in self._reserved():
                return (f"it names ${{{name}}}, which the worker's own MCP servers use (their secrets are the "
                        "engine's): a toolset never gets it")
            if name not in self._allowlist and not has_default:
                return (f"it names ${{{name}}}, which is not in SKILLS_TOOLSET_ENV_ALLOWLIST (the worker's variables "
                        "a toolset may use)")
        return check_cwd(config) if config.command is not None else None

    async def _hub(self, skill: str, server: str, config: ToolsetServer, folder: Path) -> ToolHub:
        key = (skill, server, config.model_dump_json() + str(folder))  # a changed config is a new session
        async with self._lock:
            if self._closed:
                raise ToolServerError("the worker is shutting down: toolsets are closed")
            await self._close_idle(keep=key)
            held = self._hubs.get(key)
            if held is None:
                hub = await self._start(skill, server, config, folder)
            else:
                hub = held[0]
            self._hubs[key] = (hub, time.monotonic())
            return hub

    async def _start(self, skill: str, server: str, config: ToolsetServer, folder: Path) -> ToolHub:
        refusal = self._refusal(config)
        if refusal is None and config.command is not None:
            try:
                await self._sandbox.check()
            except SandboxUnavailableError as exc:
                refusal = str(exc)
        if refusal is not None:
            raise ToolsetRefusedError(f"toolset server '{server}' of skill '{skill}' is not started: {refusal}")
        launcher = functools.partial(self._launch, folder, config)
        hub = ToolHub({server: config}, connect_timeout=self._connect_timeout, call_timeout=self._call_timeout,
                      catalog_ttl=None, environ=toolset_environ(self._allowlist - set(self._reserved())), metrics=self._metrics,
                      launcher=launcher)
        await hub.start()
        [state] = hub.server_states()
        if state.status != "connected":
            await hub.close()
            raise ToolServerError(
                f"toolset server '{server}' of skill '{skill}' failed to start: {state.reason or state.status}")
        logger.info("toolset server %s of skill %s connected (sandboxed)", server, skill)
        return hub

    async def _launch(self, folder: Path, config: ToolsetServer, _entry: McpServerConfig, expand: EnvExpander,
                      stack: AsyncExitStack) -> StdioServerParameters:
        # The entry the session holds is ``config`` itself; the sandbox needs its network key too.
        return await self._sandbox.stdio_params(folder, config, expand, stack)

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
