"""One MCP server's session: its owner task, its calls, and how a lost session is reported.

A stdio connect costs over a second (a process start and a handshake) while a call
on an open session costs a few milliseconds, so a session stays open for the
worker's whole life. Each session is owned by its own asyncio task, because anyio
cancel scopes (inside the MCP client) must be entered and left by the same task;
calls from activity tasks only exchange messages with it. A call that finds the
session gone raises :class:`SessionLost`, on which the hub reconnects and retries once.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import httpx2
    import mcp_types
    from jsonschema.protocols import Validator
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

from adapters.mcp.config import EnvExpander, InProcessServer, McpServerConfig
from adapters.mcp.stderr import StderrTail
from skills.errors import ToolArgumentsError, ToolServerError, ToolTimeoutError
from skills.run.arguments import compile_schema
from skills.run.catalog import ServerState, ServerStatus, ToolResult
from skills.run.idempotency import META_KEY

logger = logging.getLogger(__name__)


Launcher = Callable[[McpServerConfig, EnvExpander, AsyncExitStack], Awaitable["StdioServerParameters"]]
"""Makes the parameters that start a stdio server; what it leaves behind is closed with ``stack``."""

SDK_MODULES = ("mcp_types", "mcp_types.version", "mcp", "mcp.client.stdio", "mcp.client.streamable_http",
               "mcp.shared.exceptions")
"""The MCP SDK's client and its protocol types. Its package imports its server side too (uvicorn, starlette,
the server's models): a fifth of a second of CPU with the types, which a worker pays after it polls its task
queue, not before (see :func:`load_sdk`). Nothing here imports them at module level; a function that needs
them runs on a session the SDK connected, so its own import finds them loaded."""


async def load_sdk() -> None:
    """Import the MCP SDK in a thread, so the event loop (a worker that already polls) goes on meanwhile;
    at once when it is imported already. A thread of its own, not the loop's executor: the hub connects when
    first needed, and what needs it may be activities waiting for that connect in every executor thread."""
    if all(name in sys.modules for name in SDK_MODULES):
        return
    loop = asyncio.get_running_loop()
    imported: asyncio.Future[None] = loop.create_future()

    def settle(error: BaseException | None) -> None:
        if not imported.done():
            imported.set_result(None) if error is None else imported.set_exception(error)

    def run() -> None:
        error: BaseException | None = None
        try:
            for name in SDK_MODULES:
                importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            error = exc
        with suppress(RuntimeError):  # the loop closed meanwhile: nobody awaits it
            loop.call_soon_threadsafe(settle, error)

    threading.Thread(target=run, name="mcp-sdk-import", daemon=True).start()
    await imported


def _transport_error() -> type[Exception]:
    """httpx2's transport error, imported where the SDK's client (which imports httpx2) is in use: a worker
    that connects nothing does not load it (1 MiB)."""
    import httpx2

    return httpx2.TransportError


def is_mcp_error(exc: BaseException) -> bool:
    """An error of the MCP SDK's protocol (none can exist before the SDK is imported)."""
    module = sys.modules.get("mcp.shared.exceptions")
    return module is not None and isinstance(exc, module.MCPError)


class SessionLost(Exception):
    """The session under a call is gone; the hub reconnects and retries once (never leaves the package)."""

    def __init__(self, reason: str, generation: int) -> None:
        super().__init__(reason)
        self.generation = generation


class ServerSession:
    """One server: an owner task that keeps the MCP client open, and calls routed through it."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        connect_timeout: float,
        call_timeout: float,
        environ: Mapping[str, str] | None,
        launcher: Launcher | None = None,
    ) -> None:
        """``launcher`` says how to start a stdio server (a skill's toolset: in the sandbox); without it, the
        config's command runs as the worker's other servers do."""
        self.name = name
        self.config = config
        self.status: ServerStatus = "not started"
        self.reason: str | None = None
        self.since = datetime.now(UTC)
        self.tools: dict[str, mcp_types.Tool] = {}
        """Last known tools by the server's own name (kept while down, so calls can route and reconnect)."""
        self.generation = 0
        """Counts connects, so that concurrent calls that saw the same loss reconnect only once."""
        self.revision = 0
        """Counts changes of status or tools, so the hub's catalog is rebuilt only when something changed."""
        self.call_timeout = config.timeout or call_timeout
        self.closed = False
        """Closed for good: the hub closed, or the server left (or changed in) the config file."""
        self._connect_timeout = connect_timeout
        self._environ = environ
        self._launcher = launcher
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self._validators: dict[str, Validator | None] = {}
        self._relisting: asyncio.Task[None] | None = None
        self._relist_pending = False

    # -- lifecycle -------------------------------------------------------

    async def reconnect(self, seen_generation: int) -> None:
        """Open a fresh session unless another caller already did since ``seen_generation``."""
        async with self._lock:
            if self.closed:
                raise ToolServerError(f"MCP server {self.name!r} is closed")
            if self.status == "connected" and self.generation != seen_generation:
                return
            await self._connect()

    async def refresh(self) -> None:
        """Re-list the tools of a connected server; try a failed one again. Never raises."""
        if self.closed:
            return
        if self.status == "connected":
            generation = self.generation
            try:
                await self.relist()
                return
            except SessionLost as lost:
                logger.warning("MCP server %s: session lost while listing tools (%s); reconnecting", self.name, lost)
                generation = lost.generation
        else:
            generation = self.generation
        with suppress(ToolServerError):  # recorded in status and reason
            await self.reconnect(generation)

    async def relist(self) -> None:
        """Ask the server for its tools again (past the MCP client's response cache)."""
        client, generation = self._client, self.generation
        if client is None:
            raise SessionLost(self.reason or "not connected", generation)
        from mcp.shared.exceptions import MCPError  # imported by the connect that made the client

        try:
            async with asyncio.timeout(self._connect_timeout):
                tools = await _list_tools(client, cache_mode="refresh")
        except TimeoutError as exc:
            raise SessionLost(f"no answer to tools/list within {self._connect_timeout:g} s", generation) from exc
        except MCPError as exc:
            if _is_session_loss(exc):
                raise SessionLost(str(exc), generation) from exc
            logger.warning("MCP server %s: listing its tools failed (%s); keeping the last list", self.name, exc)
            return
        except (OSError, _transport_error(), EOFError) as exc:
            raise SessionLost(f"{type(exc).__name__}: {exc}", generation) from exc
        if self._client is client:  # not replaced by a reconnect meanwhile
            self._set_tools(tools)

    def _set_tools(self, tools: list[mcp_types.Tool]) -> None:
        listed = {t.name: t for t in tools}
        if listed != self.tools:
            before = set(self.tools)
            self.tools, self._validators = listed, {}
            self.revision += 1
            added, removed = sorted(set(listed) - before), sorted(before - set(listed))
            if added or removed:
                logger.info("MCP server %s: tools added %s, removed %s", self.name, added or "-", removed or "-")

    def _set_status(self, status: ServerStatus, reason: str | None = None) -> None:
        if (status, reason) != (self.status, self.reason):
            self.since = datetime.now(UTC)
        self.status, self.reason = status, reason
        self.revision += 1

    async def _connect(self) -> None:
        await self._stop_owner()
        self._set_status("connecting")
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._owner = asyncio.create_task(self._hold_session(ready, self._stop), name=f"mcp-session-{self.name}")
        try:
            # shield: a caller that gives up must not cancel the owner half-way through its handshake.
            await asyncio.wait_for(asyncio.shield(ready), self._connect_timeout)
        except TimeoutError:
            await self._stop_owner(cancel=True)
            self._mark_failed(f"no answer within {self._connect_timeout:g} s while connecting")
        if self.status != "connected":
            raise ToolServerError(f"MCP server {self.name!r} is unavailable: {self.reason}")

    async def _hold_session(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """The owner task: enter the client, publish it, wait for stop, leave the client (all in this task)."""
        expand = EnvExpander(os.environ if self._environ is None else self._environ)
        stderr: StderrTail | None = None
        http_errors: deque[str] = deque(maxlen=3)
        try:
            async with AsyncExitStack() as stack:
                await load_sdk()
                from mcp import Client

                if self.config.transport == "stdio":
                    stderr = StderrTail(self.name, expand.redact)
                    await stderr.start()
                transport = await self._open_transport(stack, expand, stderr, http_errors)
                client = await stack.enter_async_context(Client(transport, message_handler=self._on_message))
                if stderr is not None:
                    stderr.child_started()
                tools = await _list_tools(client)
                self._client = client
                self._set_tools(tools)
                self._set_status("connected")
                self.generation += 1
                ready.set_result(None)
                logger.info("MCP server %s connected (%d tools)", self.name, len(tools))
                await self._follow_tool_changes(client, stop)
        except Exception as exc:  # anything that ends the session: report it, never crash the hub
            if stderr is not None:
                await stderr.finish(wait=1.0)
            reason = expand.redact(_describe_failure(exc, stderr, http_errors))
            if not stop.is_set():
                self._mark_failed(reason if not ready.done() else f"connection lost: {reason}")
        finally:
            self._client = None
            if stderr is not None:
                await stderr.finish(wait=0)
            if not ready.done():
                ready.set_result(None)  # the status says how it went

    async def _follow_tool_changes(self, client: Client, stop: asyncio.Event) -> None:
        """Until ``stop``: re-list the tools whenever the server says they changed.

        Servers on protocol 2026-07-28 announce it on a ``subscriptions/listen`` stream (opened
        here, in the owner task, since it holds a cancel scope); older ones send
        ``notifications/tools/list_changed``, which :meth:`_on_message` receives.
        """
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools_capability = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (
            tools_capability and tools_capability.list_changed
        ):
            await stop.wait()
            return
        async with AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(self._connect_timeout):
                    events = await stack.enter_async_context(client.listen(tools_list_changed=True))
            except Exception as exc:  # noqa: BLE001 - a server without the stream is still a good server
                logger.info("MCP server %s: no tool-change stream (%s); the TTL refresh covers it", self.name, exc)
                await stop.wait()
                return
            pump = asyncio.create_task(self._pump(events), name=f"mcp-listen-{self.name}")
            stopped = asyncio.create_task(stop.wait())
            try:
                await asyncio.wait({pump, stopped}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                pump.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await pump
        try:
            await stopped  # the stream may end before the session does
        finally:
            stopped.cancel()

    async def _pump(self, events: Any) -> None:
        try:
            async for _event in events:
                self._tools_changed()
        except Exception as exc:  # noqa: BLE001 - the stream dropped; calls will find out about the session
            logger.info("MCP server %s: the tool-change stream ended (%s)", self.name, exc)

    async def _on_message(self, message: object) -> None:
        # Called from the client's receive loop: never wait here, or the answer to our own
        # tools/list could not be read.
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._tools_changed()

    def _tools_changed(self) -> None:
        self._relist_pending = True
        if self._relisting is None and not self.closed:
            self._relisting = asyncio.create_task(self._relist_on_notice(), name=f"mcp-relist-{self.name}")

    async def _relist_on_notice(self) -> None:
        try:
            # A notice that arrives while listing may describe a change the listing missed: list again.
            while self._relist_pending and not self.closed:
                self._relist_pending = False
                logger.info("MCP server %s: its tool list changed; listing again", self.name)
                await self.refresh()
        finally:
            self._relisting = None

    async def _open_transport(
        self, stack: AsyncExitStack, expand: EnvExpander, stderr: StderrTail | None, http_errors: deque[str]
    ) -> Any:
        return await open_transport(self.config, stack, expand, stderr, http_errors, launcher=self._launcher)

    def _mark_failed(self, reason: str) -> None:
        self._set_status("failed", reason)
        logger.warning("MCP server %s: %s", self.name, reason)

    async def _stop_owner(self, *, cancel: bool = False) -> None:
        owner, self._owner = self._owner, None
        if owner is None:
            return
        self._stop.set()
        if cancel:
            owner.cancel()
        # The stdio transport stops its child within a few bounded seconds; never hang the hub on it.
        _done, pending = await asyncio.wait({owner}, timeout=10.0)
        for task in pending:
            task.cancel()
        with suppress(asyncio.CancelledError, Exception):
            await owner

    async def close(self) -> None:
        self.closed = True
        relisting = self._relisting
        if relisting is not None and relisting is not asyncio.current_task():
            relisting.cancel()
        async with self._lock:
            await self._stop_owner()
            self._client = None
            self._set_status("closed")

    # -- calls -----------------------------------------------------------

    async def call(
        self, tool: str, arguments: dict[str, Any], read_timeout: float, *, idempotency_key: str = ""
    ) -> mcp_types.CallToolResult:
        client, generation = self._client, self.generation
        if client is None:
            raise SessionLost(self.reason or "not connected", generation)
        import mcp_types
        from mcp.shared.exceptions import MCPError  # imported by the connect that made the client

        try:
            # read_timeout_seconds (not only our asyncio.timeout) so the server is told to stop the call.
            return await client.call_tool(tool, arguments, read_timeout_seconds=read_timeout,
                                          meta=idempotency_meta(idempotency_key))
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise ToolTimeoutError(
                    f"{self.name}_{tool} did not answer within {read_timeout:g} s"
                ) from exc
            if _is_session_loss(exc):
                raise SessionLost(str(exc), generation) from exc
            if exc.code == mcp_types.INVALID_PARAMS:
                raise ToolArgumentsError(
                    f"{self.name}_{tool}: the server refused the arguments: {exc}"
                ) from exc
            raise ToolServerError(f"{self.name}_{tool}: protocol error {exc.code}: {exc}") from exc
        except (OSError, _transport_error(), EOFError) as exc:
            raise SessionLost(f"{type(exc).__name__}: {exc}", generation) from exc
        except Exception as exc:
            # The session was closed or replaced under this call, or anyio's Closed/BrokenResourceError
            # surfaced from a transport torn down mid-call: either way the answer is lost with the session.
            if self._client is not client or type(exc).__module__.startswith("anyio"):
                raise SessionLost(f"{type(exc).__name__}: {exc}", generation) from exc
            # Anything else (say a result that breaks the tool's output schema) is the server's fault.
            raise ToolServerError(f"{self.name}_{tool}: {type(exc).__name__}: {exc}") from exc

    def validator(self, tool: mcp_types.Tool) -> Validator | None:
        if tool.name not in self._validators:
            self._validators[tool.name] = _compile_schema(self.name, tool)
        return self._validators[tool.name]

    def state(self) -> ServerState:
        return ServerState(
            name=self.name,
            transport=self.config.transport,
            status=self.status,
            reason=self.reason,
            tools=len(self.tools) if self.status == "connected" else 0,
            timeout=self.call_timeout,
            since=self.since,
        )


async def _list_tools(client: Client, *, cache_mode: Literal["use", "refresh"] = "use") -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _page in range(100):  # a server that paginates forever must not hang the connect
        page = await client.list_tools(cursor=cursor, cache_mode=cache_mode)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _is_session_loss(exc: MCPError) -> bool:
    # CONNECTION_CLOSED: the process or socket went away. "Session terminated": an HTTP
    # server that restarted and no longer knows our session id.
    import mcp_types

    return exc.code == mcp_types.CONNECTION_CLOSED or (
        exc.code == mcp_types.INVALID_REQUEST and "session terminated" in exc.message.lower()
    )


async def open_transport(
    config: McpServerConfig, stack: AsyncExitStack, expand: EnvExpander, stderr: StderrTail | None,
    http_errors: deque[str], *, launcher: Launcher | None = None, stdio: Callable[..., Any] | None = None,
) -> Any:
    """The transport to one server of the config (its child started, or its HTTP client open), closed
    with ``stack``; ``${VAR}`` references expanded by ``expand`` only now. A server run in this process
    (:class:`InProcessServer`) is the server itself, which the MCP client connects to in memory."""
    await load_sdk()
    if isinstance(config, InProcessServer):
        return config.build(expand)
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client as sdk_stdio_client
    from mcp.client.streamable_http import streamable_http_client

    stdio_client = stdio or sdk_stdio_client

    if config.command is not None and launcher is not None:
        params = await launcher(config, expand, stack)
        return stdio_client(params, errlog=stderr.sink if stderr else sys.stderr)
    if config.command is not None:
        params = StdioServerParameters(
            command=expand(config.command),
            args=[expand(a) for a in config.args],
            env={k: expand(v) for k, v in config.env.items()},
            cwd=config.cwd,
        )
        return stdio_client(params, errlog=stderr.sink if stderr else sys.stderr)

    import httpx2  # the SDK's client imports it: loaded with the SDK

    async def note_http_error(response: httpx2.Response) -> None:
        # The transport turns a 401/403/5xx into a bare "error response"; keep the status for the reason.
        if response.status_code >= 400:
            http_errors.append(f"HTTP {response.status_code} {response.reason_phrase}")

    http = await stack.enter_async_context(
        httpx2.AsyncClient(
            headers={k: expand(v) for k, v in config.headers.items()},
            timeout=httpx2.Timeout(30.0, read=300.0),  # the MCP SDK's own defaults
            event_hooks={"response": [note_http_error]},
        )
    )
    return streamable_http_client(expand(config.url or ""), http_client=http)


@asynccontextmanager
async def one_off_client(
    name: str, config: McpServerConfig, *, timeout: float, environ: Mapping[str, str] | None = None,
    extensions: Sequence[Any] = (), stdio: Callable[..., Any] | None = None,
) -> AsyncIterator[Client]:
    """A client of one server for one task (``skills install mcp:NAME``), closed on leaving. A server
    that cannot be reached raises :class:`ToolServerError` with the reason (its stderr's tail included).
    ``stdio``: the transport to a stdio server, in place of the SDK's ``stdio_client``."""
    expand = EnvExpander(os.environ if environ is None else environ)
    stderr = StderrTail(name, expand.redact) if config.transport == "stdio" else None
    http_errors: deque[str] = deque(maxlen=3)
    await load_sdk()
    from mcp import Client

    if stderr is not None:
        await stderr.start()
    try:
        async with AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(timeout):
                    transport = await open_transport(config, stack, expand, stderr, http_errors, stdio=stdio)
                    client = await stack.enter_async_context(Client(transport, extensions=list(extensions)))
            except Exception as exc:  # noqa: BLE001 - every way of not connecting is reported the same way
                if stderr is not None:
                    await stderr.finish(wait=1.0)
                reason = f"no answer within {timeout:g} s" if isinstance(exc, TimeoutError) else (
                    _describe_failure(exc, stderr, http_errors))
                raise ToolServerError(f"MCP server {name!r} is unavailable: {expand.redact(reason)}") from None
            if stderr is not None:
                stderr.child_started()
            yield client
    except BaseExceptionGroup as group:
        # The transports' task groups wrap what the caller's own code raised: give it back as raised.
        raise _leaf_exception(group) from None
    finally:
        if stderr is not None:
            await stderr.finish(wait=0)


def _describe_failure(exc: BaseException, stderr: StderrTail | None, http_errors: deque[str]) -> str:
    leaf = _leaf_exception(exc)
    text = str(leaf) or type(leaf).__name__
    if is_mcp_error(leaf) and leaf.code == sys.modules["mcp_types"].CONNECTION_CLOSED:  # type: ignore[attr-defined]
        text = "the server closed the connection (did it exit?)"
    elif isinstance(leaf, OSError | _transport_error()):
        text = f"{type(leaf).__name__}: {text}"
    if http_errors:
        text = f"{http_errors[-1]} ({text})"
    if stderr is not None and stderr.tail():
        text = f"{text}; stderr: {stderr.tail()}"
    return text


def _leaf_exception(exc: BaseException) -> BaseException:
    # anyio task groups wrap the one real error in (nested) exception groups.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _compile_schema(server: str, tool: mcp_types.Tool) -> Validator | None:
    validator = compile_schema(tool.input_schema)
    if validator is None:
        # A server with a broken schema still gets its calls; it will judge the arguments itself.
        logger.warning("MCP server %s: tool %s has an invalid input schema", server, tool.name)
    return validator


def idempotency_meta(key: str) -> mcp_types.RequestParamsMeta | None:
    """The ``_meta`` of a ``tools/call`` with an idempotency key (none without one). SEP-3182 proposes a
    request field for the key, for servers that advertise the capability; the SDK's ``call_tool`` has
    none yet (and drops unknown request fields), so every server gets it in ``_meta``, where one that
    honours the key reads it and one that does not passes it by."""
    return {META_KEY: key} if key else None  # type: ignore[typeddict-unknown-key]


def to_result(result: mcp_types.CallToolResult) -> ToolResult:
    """An MCP call's result as the engine's :class:`ToolResult`: its blocks as text, error flag kept."""
    return ToolResult(
        ok=not result.is_error,
        text="\n".join(_content_text(block) for block in result.content),
        structured=result.structured_content,
    )


def _content_text(block: mcp_types.ContentBlock) -> str:
    import mcp_types

    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.EmbeddedResource) and isinstance(
        block.resource, mcp_types.TextResourceContents
    ):
        return block.resource.text
    # Images, audio and links cannot travel as text; say that they were there.
    return f"[{block.type} content]"
