"""The tool hub: warm MCP sessions for every configured server, calls routed by ``<server>_<tool>``.

The worker keeps one session per server open for its whole life in a :class:`ToolHub`.
It connects them when first needed (``start(wait=False, lazy=True)``; until then each is
``not started``) and polls at once: whatever needs a server still on its first connect waits
for that server only (a call, through the session's connect lock; a registration, through
:meth:`ToolHub.waited_for_connects`).
A session that breaks (process died, transport closed) is reopened by the next call,
which then retries once.

The catalog stays live without a restart: every ``catalog_ttl`` the hub re-lists the
tools of its connected servers and retries the failed ones; a server's
``notifications/tools/list_changed`` re-lists that server at once; a changed config
file (checked every ``config_poll`` seconds and on each catalog request) connects
new servers, closes removed ones and reconnects changed ones; and
``refresh_tool_catalog`` does all of it on demand.

Every call's arguments go through :func:`skills.run.arguments.prepare_arguments` (string
booleans, nulls, invented parameters and defaults fixed, then coerced to and checked
against the tool's JSON Schema).
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.mcp.catalog import LiveCatalog
from adapters.mcp.config import (
    McpConfigSource,
    McpServerConfig,
    env_references,
    load_argument_rules,
    outbox_server,
)
from adapters.mcp.servers import ServerPool
from adapters.mcp.session import Launcher, ServerSession, to_result
from adapters.metrics import EngineMetrics
from skills.errors import ToolServerError, ToolTimeoutError, UnknownToolError
from skills.run.arguments import ArgumentRules, PreparedArguments, prepare_arguments
from skills.run.catalog import ServerState, ToolCatalog, ToolHints, ToolInfo, ToolResult
from skills.run.rehearsal import rehearsed

if TYPE_CHECKING:
    import mcp_types

    from config.settings import Settings

logger = logging.getLogger(__name__)

RETRY_FAILED_EVERY = 15.0
"""Seconds between two tries of a failed server prompted by registrations naming its tools (the
catalog's own refresh retries every failed server every ``catalog_ttl``)."""


class ToolHub:
    """Warm MCP sessions for every configured server, and calls routed by ``<server>_<tool>``: the servers'
    lifecycle is a :class:`~adapters.mcp.servers.ServerPool`'s, the catalog a
    :class:`~adapters.mcp.catalog.LiveCatalog`'s, the calls the hub's own.

    Use it from one event loop (the worker's, or a benchmark's)::

        async with ToolHub.from_config(path, defaults={"outbox": outbox_server(outbox)}) as hub:
            result = await hub.call("outbox_send_message", {"message": "hi"})
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        *,
        source: McpConfigSource | None = None,
        connect_timeout: float = 30.0,
        call_timeout: float = 60.0,
        catalog_ttl: float | None = 600.0,
        config_poll: float = 2.0,
        rules: ArgumentRules | None = None,
        environ: Mapping[str, str] | None = None,
        metrics: EngineMetrics | None = None,
        launcher: Launcher | None = None,
    ) -> None:
        """Connect ``servers``; with ``source``, follow changes of its file.

        ``call_timeout`` bounds a call of a server without its own ``timeout``. Every
        ``catalog_ttl`` seconds (None: never) the tools are listed again and failed servers
        retried; the config file is checked every ``config_poll`` seconds. ``rules``
        configure the argument pipeline. ``environ`` is where ``${VAR}`` is looked up, at
        each connect; the process environment by default. ``metrics`` count the calls. ``launcher``
        starts the stdio servers (a skill's toolsets: in the sandbox).
        """
        self.metrics = metrics or EngineMetrics()
        self.rules = rules or ArgumentRules()
        self._servers = ServerPool(servers, source=source, connect_timeout=connect_timeout,
                                   call_timeout=call_timeout, environ=environ, launcher=launcher)
        self._catalog = LiveCatalog(self._servers, catalog_ttl=catalog_ttl, config_poll=config_poll)

    @classmethod
    def from_config(
        cls, path: Path | None, *, defaults: Mapping[str, McpServerConfig], **options: Any
    ) -> ToolHub:
        """A hub for the ``mcpServers`` file at ``path`` over ``defaults``, following the file's changes.

        Raises :class:`McpConfigError` when the file is unusable now (later changes that break
        it are reported in the catalog's ``config_error`` and leave the running servers alone).
        """
        source = McpConfigSource(path, defaults)
        stamp = source.stamp()  # before reading: a write during the read is then seen as a change
        hub = cls(source.load(), source=source, **options)
        hub._servers.source_stamp = stamp
        return hub

    @classmethod
    def from_settings(cls, settings: Settings, metrics: EngineMetrics | None = None) -> ToolHub:
        """The worker's hub: the ``mcp_config`` file over the bundled outbox server (run in this process), with
        the settings' call timeout, catalog refresh and argument rules."""
        return cls.from_config(
            settings.mcp_config,
            defaults={"outbox": outbox_server(settings.outbox_path, settings.idempotency_window_hours, in_process=True)},
            call_timeout=settings.tool_call_timeout.total_seconds(),
            catalog_ttl=settings.tool_catalog_ttl.total_seconds() or None,
            rules=load_argument_rules(settings.argument_rules, default_chat_id=settings.default_chat_id),
            metrics=metrics,
        )

    async def __aenter__(self) -> ToolHub:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def start(self, *, wait: bool = True, lazy: bool = False) -> None:
        """Connect every server at once. A server that fails is recorded as failed; the others still work.

        ``wait=False`` returns at once and connects in the background (the worker polls its task
        queue meanwhile): a call of a server still connecting waits for it (within the call's
        timeout), and :meth:`settle` / :meth:`waited_for_connects` wait for the first connects to end.

        ``lazy``: connect nothing yet; the first connects begin when something first needs a server (a
        call, a catalog read, :meth:`settle`, :meth:`waited_for_connects`). An idle worker then never
        imports the MCP SDK (its client and server, 45 MiB resident: docs/performance.md)."""
        await self._servers.start(wait=wait, lazy=lazy, then=self._catalog.keep_current)

    @property
    def lazy(self) -> bool:
        """Started lazily, and nothing has needed a server yet."""
        return self._servers.lazy

    @property
    def settled(self) -> bool:
        """The first connect of every server has ended (each is connected or failed)."""
        return self._servers.settled

    async def settle(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - a bound, not a deadline
        """Wait, at most ``timeout`` seconds, for the servers still on their first connect; True when none is.
        A hub started lazily begins them now."""
        return await self._servers.settle(timeout)

    def waited_for_connects(self, tools: Collection[str] | None = None, timeout: float | None = None) -> bool:
        """For a thread (a synchronous activity; never the hub's event loop): wait, at most ``timeout``
        seconds (the connect timeout by default), for the servers that could offer ``tools`` (all
        servers when None) while they are on their first connect, and try once more those of them that
        failed (at most every :data:`RETRY_FAILED_EVERY` seconds: a server down when the worker started
        may be up now). True when there were any, so a catalog read before may have missed their tools."""
        return self._servers.waited_for_connects(tools, timeout, RETRY_FAILED_EVERY)

    async def close(self) -> None:
        await self._servers.close(self._catalog.maintainer, self._catalog.refreshing)

    # -- the catalog -----------------------------------------------------

    def catalog(self) -> list[ToolInfo]:
        """Tools of the connected servers, in config order, each named ``<server>_<tool>``.

        Rebuilt only when a server's status or tools changed, so it is cheap to call often.
        """
        return self._catalog.tools()

    def tool_names(self) -> frozenset[str]:
        """The live tool names; cheap, and safe to call from another thread (the registration activity)."""
        return self._catalog.names()

    def referenced_variables(self) -> frozenset[str]:
        """The worker's variables its own servers' configs expand (``${TELEGRAM_BOT_TOKEN}``, a mail
        token): secrets the engine holds for those servers, which no skill's toolset may have."""
        return frozenset(name for session in self._servers.sessions.values() for name in env_references(session.config))

    def server_states(self) -> list[ServerState]:
        """Every configured server's state, as it is: one a lazy start has not connected yet is ``not started``
        (and connects when first needed), never ``connecting``. Reading them begins no connect."""
        return self._servers.states()

    def tool_catalog(self) -> ToolCatalog:
        """The catalog grouped by server (see :func:`build_catalog`), with every server's state."""
        return self._catalog.grouped()

    @property
    def config_error(self) -> str | None:
        return self._servers.config_error

    async def refresh(self, *, wait: float | None = None) -> bool:
        """Apply a changed config file, list every connected server's tools again, retry failed servers.

        Concurrent callers share one refresh. With ``wait``, return after at most that many
        seconds (the refresh goes on); True when it finished.
        """
        return await self._catalog.refresh(wait=wait)

    async def reload_config(self, *, wait: float | None = None) -> bool:
        """If the config file changed: connect new servers, close removed ones, reconnect changed ones.

        Cheap when nothing changed (one ``stat``). With ``wait``, return after at most that many
        seconds (the reload goes on). True when a reload ran to its end, or none was needed.
        """
        return await self._servers.reload_config(wait=wait)

    # -- calls -----------------------------------------------------------

    async def call(  # noqa: ASYNC109 - also sent to the server as the request's read timeout
        self, tool_name: str, arguments: dict[str, Any], *, timeout: float | None = None, idempotency_key: str = ""
    ) -> ToolResult:
        """Call ``<server>_<tool>`` with arguments put through the pipeline; reconnect once if the session broke.

        The call may take the server's ``timeout`` (the hub's ``call_timeout`` by default),
        and at most ``timeout`` seconds when given. Raises :class:`UnknownToolError` and
        :class:`ToolArgumentsError` (retrying cannot help), :class:`ToolServerError` /
        :class:`ToolTimeoutError` (the server is down or slow). A result the server flags
        as an error is returned with ``ok=False``.

        ``idempotency_key`` (``skills.run.idempotency``) goes to the server in the request's ``_meta``, on
        the first try and on the reconnect's retry alike: a server that honours it acts once.
        """
        if self._servers.closed:
            raise ToolServerError(f"cannot call {tool_name}: the tool hub is closed")
        owner = self._servers.owner_of(tool_name)
        limit = owner.call_timeout if owner is not None else self._servers.call_timeout
        if timeout is not None:
            limit = min(limit, timeout)
        started, outcome = time.monotonic(), "cancelled"
        try:
            async with asyncio.timeout(limit):
                session, tool = await self._resolve(tool_name)
                prepared = prepare_arguments(
                    tool_name, arguments, tool.input_schema, self.rules, validator=session.validator(tool)
                )
                raw = await self._servers.call(session, tool.name, prepared.arguments, limit, idempotency_key)
            result = to_result(raw).model_copy(update={"adjusted": prepared.changes})
            outcome = "ok" if result.ok else "error"
            return result
        except TimeoutError as exc:
            outcome = ToolTimeoutError.__name__
            raise ToolTimeoutError(f"{tool_name} did not answer within {limit:g} s") from exc
        except Exception as exc:
            outcome = type(exc).__name__
            raise
        finally:
            self.metrics.tool_call(owner.name if owner is not None else "unknown", outcome,
                                   (time.monotonic() - started) * 1000)

    async def prepare(self, tool_name: str, arguments: dict[str, Any]) -> PreparedArguments:
        """The arguments a call of ``tool_name`` would send, put through the pipeline, without calling it
        (what the owner approves is what goes out). Raises as :meth:`call` does for an unknown tool or
        arguments the schema refuses."""
        session, tool = await self._resolve(tool_name)
        return prepare_arguments(tool_name, arguments, tool.input_schema, self.rules, validator=session.validator(tool))

    def hints(self, tool_name: str) -> ToolHints:
        """What the tool's server says of it (its MCP annotations); nothing said for a tool not in the catalog."""
        return next((tool.hints for tool in self.catalog() if tool.name == tool_name), ToolHints())

    async def rehearse(  # noqa: ASYNC109 - passed on to the call, as in :meth:`call`
        self, tool_name: str, arguments: dict[str, Any], *, timeout: float | None = None, idempotency_key: str = "",
        record_only: bool = False, closed_world: bool = False,
    ) -> ToolResult:
        """A rehearsal's call: made for real only when its server marks the tool ``readOnlyHint: true`` (and
        ``record_only`` is not asked: a call that would wait for approval; with ``closed_world``, only when it
        says ``openWorldHint: false`` too, absent meaning open as MCP reads it); otherwise its arguments go
        through the pipeline, as a call's would, and come back recorded, with nothing sent. A chat proposal's
        rehearsal (``closed_world``), which runs before the owner answers, acts on a server's hints only when
        its config entry vouches for them (``trust_hints``, or a bundled server): a hint is the server's word."""
        hints = self.hints(tool_name)
        owner = self._servers.owner_of(tool_name)
        vouched = owner is not None and owner.config.hints_trusted
        if not record_only and hints.read_only is True and (not closed_world or hints.open_world is False and vouched):
            return await self.call(tool_name, arguments, timeout=timeout, idempotency_key=idempotency_key)
        prepared = await self.prepare(tool_name, arguments)
        return rehearsed(prepared.arguments, prepared.changes)

    async def _resolve(self, tool_name: str) -> tuple[ServerSession, mcp_types.Tool]:
        self._servers.needed()  # a lazy start's first connects; the server of this tool is waited for below
        found = self._servers.route(tool_name)
        if found is not None:
            return found
        # The tool may belong to a server that never connected: try to bring it up once.
        for session in list(self._servers.sessions.values()):
            if (
                session.status != "connected"
                and tool_name.startswith(session.name + "_")
                and not self._servers.closed
            ):
                await session.reconnect(session.generation)
                found = self._servers.route(tool_name)
                if found is not None:
                    return found
        known = [tool.name for tool in self.catalog()]
        down = [s.name for s in self._servers.sessions.values() if s.status != "connected"]
        raise UnknownToolError(tool_name, difflib.get_close_matches(tool_name, known, n=3, cutoff=0.6), down)
