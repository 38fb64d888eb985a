"""MCP tools: the servers' config, one warm session per server, and the tool activities.

Tools come from MCP servers listed in an ``mcpServers`` JSON file (the format MCP
desktop clients use). The engine names every tool ``<server>_<tool>``.

A stdio connect costs over a second (a process start and a handshake) while a call
on an open session costs a few milliseconds, so the worker keeps one session per
server open for its whole life in a :class:`ToolHub`. Each session is owned by its
own asyncio task, because anyio cancel scopes (inside the MCP client) must be
entered and left by the same task; calls from activity tasks only exchange messages
with it. A session that breaks (process died, transport closed) is reopened by the
next call, which then retries once.

The catalog stays live without a restart: every ``catalog_ttl`` the hub re-lists the
tools of its connected servers and retries the failed ones; a server's
``notifications/tools/list_changed`` re-lists that server at once; a changed config
file (checked every ``config_poll`` seconds and on each catalog request) connects
new servers, closes removed ones and reconnects changed ones; and
``refresh_tool_catalog`` does all of it on demand.

Every call's arguments go through :func:`skills.arguments.prepare_arguments` (the
normalization pipeline of reference 000, then the tool's JSON Schema).

Wiring in the worker (the hub must start in the worker's event loop)::

    hub = ToolHub.from_config(settings.mcp_config, defaults={"outbox": outbox_server(settings.outbox_path)},
                              call_timeout=settings.tool_call_timeout.total_seconds(), rules=rules)
    async with hub:
        tools = ToolActivities(hub, call_timeout=settings.tool_call_timeout)
        worker = Worker(client, ..., activities=[tools.call_tool, tools.get_tool_catalog, ...])
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import os
import re
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import httpx2
import mcp.types as mcp_types
import yaml
from jsonschema.protocols import Validator
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic import ValidationError as PydanticValidationError
from temporalio import activity

from activities.failures import application_error
from activities.heartbeat import heartbeating
from skills.arguments import ArgumentRules, ParameterDefault, compile_schema, prepare_arguments
from skills.catalog import (
    CatalogEntry,
    CatalogRequest,
    ServerState,
    ServerStatus,
    ToolCallInput,
    ToolCallOutput,
    ToolCatalog,
    ToolInfo,
    ToolResult,
)
from skills.errors import (
    McpConfigError,
    ToolArgumentsError,
    ToolCallError,
    ToolServerError,
    ToolTimeoutError,
    UnknownToolError,
)

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------
# Errors


class _SessionLost(Exception):
    """Internal: the session under a call is gone; the hub reconnects and retries once."""

    def __init__(self, reason: str, generation: int) -> None:
        super().__init__(reason)
        self.generation = generation


# ---------------------------------------------------------------------------
# Configuration

_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpServerConfig(BaseModel):
    """One entry of ``mcpServers``: a stdio command or a streamable-HTTP URL.

    Values may contain ``${VAR}`` (or ``${VAR:-default}``) in ``args``, ``env``, ``url``
    and ``headers``. They stay unexpanded here, so tokens never reach Temporal payloads
    or logs; they are read from the environment each time the server is connected.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    type: Literal["stdio", "http", "streamable-http", "streamableHttp"] | None = None
    """The transport, as some desktop clients write it; otherwise inferred from ``command`` or ``url``."""
    command: str | None = None
    """Executable that starts a stdio server."""
    args: list[str] = Field(default_factory=list)
    """Arguments of ``command``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment of the stdio server (PATH, HOME and the like are inherited)."""
    cwd: Path | None = None
    """Working directory of the stdio server."""
    url: str | None = None
    """Endpoint of a streamable-HTTP server, e.g. ``http://127.0.0.1:8000/mcp``."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent with every request, e.g. ``{"Authorization": "Bearer ${API_TOKEN}"}``."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds one call of this server's tools may take; the hub's ``call_timeout`` by default.
    A call is also bounded by its activity's start-to-close timeout (``SKILLS_TOOL_CALL_TIMEOUT``)."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a stdio server) or `url` (a streamable-HTTP server)")
        if self.command is not None and (self.headers or self.type not in (None, "stdio")):
            raise ValueError("`headers` and an HTTP `type` need `url`, not `command`")
        if self.url is not None and (self.args or self.env or self.cwd or self.type == "stdio"):
            raise ValueError("`args`, `env`, `cwd` and type 'stdio' need `command`, not `url`")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"


def load_mcp_config(
    path: Path | None, *, defaults: Mapping[str, McpServerConfig]
) -> dict[str, McpServerConfig]:
    """The servers to connect: ``defaults`` overlaid by the ``mcpServers`` of the file at ``path``.

    A server in the file replaces a default of the same name. Raises
    :class:`McpConfigError` naming the file, the server and the field at fault.
    """
    servers = dict(defaults)
    if path is None:
        return servers
    try:
        document = json.loads(path.read_text())
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read the MCP config: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    entries = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(entries, dict):
        raise McpConfigError(f'{path}: expected an object {{"mcpServers": {{"<name>": {{...}}}}}}')
    for name, entry in entries.items():
        servers[name] = _parse_server(path, name, entry)
    return servers


def _parse_server(path: Path, name: str, entry: Any) -> McpServerConfig:
    where = f"{path}: server {name!r}"
    if not _SERVER_NAME.match(name):
        raise McpConfigError(f"{where}: a server name may hold only letters, digits, '_' and '-'")
    try:
        return McpServerConfig.model_validate(entry)
    except PydanticValidationError as exc:
        raise McpConfigError(
            f"{where}: " + "; ".join(_describe_field_error(e) for e in exc.errors())
        ) from exc


def _describe_field_error(error: Any) -> str:
    field = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        known = ", ".join(McpServerConfig.model_fields)
        return f"field {field!r}: unknown field (known: {known})"
    message = error["msg"].removeprefix("Value error, ")
    return f"field {field!r}: {message}" if field else message


@dataclass(frozen=True)
class McpConfigSource:
    """Where the hub's servers come from, so that it can read them again when the file changes."""

    path: Path | None
    defaults: Mapping[str, McpServerConfig] = field(default_factory=dict)

    def load(self) -> dict[str, McpServerConfig]:
        return load_mcp_config(self.path, defaults=self.defaults)

    def stamp(self) -> tuple[int, int, int] | None:
        """Changes whenever the file is written, replaced (a Kubernetes ConfigMap swap) or removed."""
        if self.path is None:
            return None
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino


TELEGRAM_CHAT_ID_LIMIT = 20
"""Reference 000 replaces a ``chat_id`` longer than this: real ids are short, invented ones are not."""


def load_argument_rules(
    path: Path | None, *, default_chat_id: str | None = None, environ: Mapping[str, str] | None = None
) -> ArgumentRules:
    """The argument pipeline's rules: the built-in ones, overlaid by the JSON or YAML file at ``path``.

    Built in: with ``default_chat_id``, ``telegram_send_message.chat_id`` is filled in when it
    is missing, not a string or longer than 20 characters (reference 000's ``injectChatId``).
    String ``value``s in the file may use ``${VAR}``, read from ``environ`` now.
    """
    rules = ArgumentRules()
    if default_chat_id:
        chat = ParameterDefault(value=default_chat_id, max_length=TELEGRAM_CHAT_ID_LIMIT)
        rules = ArgumentRules(defaults={"telegram_send_message": {"chat_id": chat}})
    if path is None:
        return rules
    try:
        document = yaml.safe_load(path.read_text()) or {}
        extra = ArgumentRules.model_validate(document)
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read the argument rules: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise McpConfigError(f"{path}: not valid JSON or YAML: {exc}") from exc
    except PydanticValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'rules'}: {e['msg']}" for e in exc.errors())
        raise McpConfigError(f"{path}: {problems}") from exc
    expand = _Expander(os.environ if environ is None else environ)
    try:
        defaults = {
            tool: {
                name: d.model_copy(update={"value": expand(d.value)}) if isinstance(d.value, str) else d
                for name, d in params.items()
            }
            for tool, params in extra.defaults.items()
        }
    except McpConfigError as exc:
        raise McpConfigError(f"{path}: {exc}") from exc
    return rules.merged(extra.model_copy(update={"defaults": defaults}))


def outbox_server(outbox_path: Path) -> McpServerConfig:
    """The bundled outbox server, writing to ``outbox_path``, run with this interpreter."""
    return McpServerConfig(
        command=sys.executable,
        args=["-m", "mcp_servers.outbox"],
        env={"SKILLS_OUTBOX_PATH": str(outbox_path)},
        # The package may not be installed (a checkout run in place): start where it can be imported.
        cwd=PROJECT_ROOT,
    )


class _Expander:
    """Expands ``${VAR}`` at connect time and remembers the values, so they can be hidden in error texts."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.secrets: set[str] = set()

    def __call__(self, value: str) -> str:
        return _ENV_REFERENCE.sub(self._substitute, value)

    def _substitute(self, match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = self._environ.get(name)
        if value is None:
            if default is None:
                raise McpConfigError(f"environment variable {name} is not set (used as ${{{name}}})")
            return default
        if len(value) >= 4:  # shorter values would blot out ordinary words in messages
            self.secrets.add(value)
        return value

    def redact(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text


# ---------------------------------------------------------------------------
# What the hub reports


def build_catalog(
    tools: list[ToolInfo],
    states: list[ServerState],
    *,
    refreshed_at: datetime | None = None,
    config_error: str | None = None,
) -> ToolCatalog:
    """Group ``tools`` by server as reference 000 shows them."""
    grouped: dict[str, list[CatalogEntry]] = {}
    for tool in tools:
        grouped.setdefault(tool.server, []).append(
            CatalogEntry(name=tool.name, description=first_sentence(tool.description))
        )
    tool_count, server_count = len(tools), len(grouped)
    return ToolCatalog(
        summary=f"{tool_count} {_plural(tool_count, 'tool')} across {server_count} MCP {_plural(server_count, 'server')}",
        catalog=grouped,
        unavailable={s.name: s.reason or s.status for s in states if s.status != "connected"},
        servers=states,
        refreshed_at=refreshed_at,
        config_error=config_error,
    )


def _plural(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def first_sentence(text: str, *, limit: int = 200) -> str:
    """The first sentence of a description (up to the first paragraph break), on one line."""
    paragraph = text.strip().split("\n\n", 1)[0]
    flat = " ".join(paragraph.split())
    sentence = _SENTENCE_END.split(flat, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


# ---------------------------------------------------------------------------
# One server's session


class _StderrTail:
    """A stdio server's stderr: each line goes to the log, the last few explain a failed start."""

    def __init__(self, server: str, redact: Callable[[str], str]) -> None:
        self._server = server
        self._redact = redact
        self.lines: deque[str] = deque(maxlen=12)
        read_fd, write_fd = os.pipe()
        self.sink = os.fdopen(write_fd, "w")
        """Handed to the child as its stderr."""
        self._source = os.fdopen(read_fd, "rb")
        self._pump: asyncio.Task[None] | None = None
        self._transport: asyncio.ReadTransport | None = None

    async def start(self) -> None:
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), self._source
        )
        self._pump = asyncio.create_task(self._read(reader), name=f"mcp-stderr-{self._server}")

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            text = self._redact(line.decode(errors="replace").rstrip())
            if text:
                self.lines.append(text)
                logger.info("[%s] %s", self._server, text)

    def child_started(self) -> None:
        # The child holds its own copy now; closing ours lets the reader see EOF when the child exits.
        if not self.sink.closed:
            self.sink.close()

    async def finish(self, wait: float) -> None:
        """Read what the (now stopped) child left, at most ``wait`` seconds, then release the pipe."""
        self.child_started()
        if self._pump is not None:
            with suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._pump), wait)
            self._pump.cancel()
        if self._transport is not None:
            self._transport.close()

    def tail(self) -> str:
        return " | ".join(list(self.lines)[-3:])


class _ServerSession:
    """One server: an owner task that keeps the MCP client open, and calls routed through it."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        connect_timeout: float,
        call_timeout: float,
        environ: Mapping[str, str] | None,
    ) -> None:
        self.name = name
        self.config = config
        self.status: ServerStatus = "connecting"
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
            except _SessionLost as lost:
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
            raise _SessionLost(self.reason or "not connected", generation)
        try:
            async with asyncio.timeout(self._connect_timeout):
                tools = await _list_tools(client, cache_mode="refresh")
        except TimeoutError as exc:
            raise _SessionLost(f"no answer to tools/list within {self._connect_timeout:g} s", generation) from exc
        except MCPError as exc:
            if _is_session_loss(exc):
                raise _SessionLost(str(exc), generation) from exc
            logger.warning("MCP server %s: listing its tools failed (%s); keeping the last list", self.name, exc)
            return
        except (OSError, httpx2.TransportError, EOFError) as exc:
            raise _SessionLost(f"{type(exc).__name__}: {exc}", generation) from exc
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
        self._owner = asyncio.create_task(self._own(ready, self._stop), name=f"mcp-session-{self.name}")
        try:
            # shield: a caller that gives up must not cancel the owner half-way through its handshake.
            await asyncio.wait_for(asyncio.shield(ready), self._connect_timeout)
        except TimeoutError:
            await self._stop_owner(cancel=True)
            self._mark_failed(f"no answer within {self._connect_timeout:g} s while connecting")
        if self.status != "connected":
            raise ToolServerError(f"MCP server {self.name!r} is unavailable: {self.reason}")

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """The owner task: enter the client, publish it, wait for stop, leave the client (all in this task)."""
        expand = _Expander(os.environ if self._environ is None else self._environ)
        stderr: _StderrTail | None = None
        http_errors: deque[str] = deque(maxlen=3)
        try:
            async with AsyncExitStack() as stack:
                if self.config.transport == "stdio":
                    stderr = _StderrTail(self.name, expand.redact)
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
        self, stack: AsyncExitStack, expand: _Expander, stderr: _StderrTail | None, http_errors: deque[str]
    ) -> Any:
        config = self.config
        if config.command is not None:
            params = StdioServerParameters(
                command=expand(config.command),
                args=[expand(a) for a in config.args],
                env={k: expand(v) for k, v in config.env.items()},
                cwd=config.cwd,
            )
            return stdio_client(params, errlog=stderr.sink if stderr else sys.stderr)

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
        self, tool: str, arguments: dict[str, Any], read_timeout: float
    ) -> mcp_types.CallToolResult:
        client, generation = self._client, self.generation
        if client is None:
            raise _SessionLost(self.reason or "not connected", generation)
        try:
            # read_timeout_seconds (not only our asyncio.timeout) so the server is told to stop the call.
            return await client.call_tool(tool, arguments, read_timeout_seconds=read_timeout)
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise ToolTimeoutError(
                    f"{self.name}_{tool} did not answer within {read_timeout:g} s"
                ) from exc
            if _is_session_loss(exc):
                raise _SessionLost(str(exc), generation) from exc
            if exc.code == mcp_types.INVALID_PARAMS:
                raise ToolArgumentsError(
                    f"{self.name}_{tool}: the server refused the arguments: {exc}"
                ) from exc
            raise ToolServerError(f"{self.name}_{tool}: protocol error {exc.code}: {exc}") from exc
        except (OSError, httpx2.TransportError, EOFError) as exc:
            raise _SessionLost(f"{type(exc).__name__}: {exc}", generation) from exc
        except Exception as exc:
            # The session was closed or replaced under this call, or anyio's Closed/BrokenResourceError
            # surfaced from a transport torn down mid-call: either way the answer is lost with the session.
            if self._client is not client or type(exc).__module__.startswith("anyio"):
                raise _SessionLost(f"{type(exc).__name__}: {exc}", generation) from exc
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
    return exc.code == mcp_types.CONNECTION_CLOSED or (
        exc.code == mcp_types.INVALID_REQUEST and "session terminated" in exc.message.lower()
    )


def _describe_failure(exc: BaseException, stderr: _StderrTail | None, http_errors: deque[str]) -> str:
    leaf = _leaf_exception(exc)
    text = str(leaf) or type(leaf).__name__
    if isinstance(leaf, MCPError) and leaf.code == mcp_types.CONNECTION_CLOSED:
        text = "the server closed the connection (did it exit?)"
    elif isinstance(leaf, OSError | httpx2.TransportError):
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


def _to_result(result: mcp_types.CallToolResult) -> ToolResult:
    return ToolResult(
        ok=not result.is_error,
        text="\n".join(_content_text(block) for block in result.content),
        structured=result.structured_content,
    )


def _content_text(block: mcp_types.ContentBlock) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.EmbeddedResource) and isinstance(
        block.resource, mcp_types.TextResourceContents
    ):
        return block.resource.text
    # Images, audio and links cannot travel as text; say that they were there.
    return f"[{block.type} content]"


# ---------------------------------------------------------------------------
# The hub


class ToolHub:
    """Warm MCP sessions for every configured server, and calls routed by ``<server>_<tool>``.

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
    ) -> None:
        """Connect ``servers``; with ``source``, follow changes of its file.

        ``call_timeout`` bounds a call of a server without its own ``timeout``. Every
        ``catalog_ttl`` seconds (None: never) the tools are listed again and failed servers
        retried; the config file is checked every ``config_poll`` seconds. ``rules``
        configure the argument pipeline. ``environ`` is where ``${VAR}`` is looked up, at
        each connect; the process environment by default.
        """
        self._connect_timeout = connect_timeout
        self._call_timeout = call_timeout
        self._environ = environ
        self._source = source
        self._source_stamp = source.stamp() if source is not None else None
        self._catalog_ttl = catalog_ttl
        self._config_poll = config_poll
        self.rules = rules or ArgumentRules()
        # Replaced, never changed in place: the registration activity reads it from a thread.
        self._sessions: dict[str, _ServerSession] = {
            name: self._new_session(name, config) for name, config in servers.items()
        }
        self._closed = False
        self._config_error: str | None = None
        self._refreshed_at: datetime | None = None
        self._refreshed_mono = time.monotonic()
        self._refreshing: asyncio.Task[None] | None = None
        self._reloading: asyncio.Task[bool] | None = None
        self._maintainer: asyncio.Task[None] | None = None
        self._catalog_key: tuple[object, ...] = ()
        self._catalog: list[ToolInfo] = []
        self._names: frozenset[str] = frozenset()

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
        hub._source_stamp = stamp
        return hub

    def _new_session(self, name: str, config: McpServerConfig) -> _ServerSession:
        return _ServerSession(
            name, config, connect_timeout=self._connect_timeout, call_timeout=self._call_timeout,
            environ=self._environ,
        )

    async def __aenter__(self) -> ToolHub:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect every server at once. A server that fails is recorded as failed; the others still work."""
        await asyncio.gather(*(self._connect_quietly(s) for s in self._sessions.values()))
        self._refreshed_mono = time.monotonic()
        if self._maintainer is None and (self._catalog_ttl or self._source is not None):
            self._maintainer = asyncio.create_task(self._maintain(), name="mcp-catalog-maintainer")

    @staticmethod
    async def _connect_quietly(session: _ServerSession) -> None:
        if session.status == "connected":
            return
        with suppress(ToolServerError):  # already recorded in the session's status and reason
            await session.reconnect(session.generation)

    async def close(self) -> None:
        self._closed = True
        for task in (self._maintainer, self._refreshing, self._reloading):
            if task is not None:
                task.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await task
        await asyncio.gather(*(s.close() for s in self._sessions.values()))

    # -- the catalog -----------------------------------------------------

    def catalog(self) -> list[ToolInfo]:
        """Tools of the connected servers, in config order, each named ``<server>_<tool>``.

        Rebuilt only when a server's status or tools changed, so it is cheap to call often.
        """
        self._rebuild_if_changed()
        return list(self._catalog)

    def tool_names(self) -> frozenset[str]:
        """The live tool names; cheap, and safe to call from another thread (the registration activity)."""
        self._rebuild_if_changed()
        return self._names

    def _rebuild_if_changed(self) -> None:
        sessions = list(self._sessions.values())
        key = tuple((id(s), s.revision) for s in sessions)
        if key == self._catalog_key:
            return
        seen: set[str] = set()
        tools: list[ToolInfo] = []
        for session in sessions:
            if session.status != "connected":
                continue
            for tool in list(session.tools.values()):
                name = f"{session.name}_{tool.name}"
                if name in seen:  # server "a_b" tool "c" against server "a" tool "b_c": the first one wins
                    logger.warning("tool name %s is offered twice; keeping the first", name)
                    continue
                seen.add(name)
                tools.append(
                    ToolInfo(
                        name=name,
                        server=session.name,
                        tool=tool.name,
                        description=tool.description or "",
                        input_schema=tool.input_schema,
                    )
                )
        # Several threads may rebuild at once; each publishes a complete, consistent result.
        self._catalog, self._names, self._catalog_key = tools, frozenset(seen), key

    def server_states(self) -> list[ServerState]:
        return [session.state() for session in self._sessions.values()]

    def tool_catalog(self) -> ToolCatalog:
        """The catalog in reference 000's shape, with every server's state."""
        return build_catalog(
            self.catalog(), self.server_states(), refreshed_at=self._refreshed_at, config_error=self._config_error
        )

    @property
    def config_error(self) -> str | None:
        return self._config_error

    async def refresh(self, *, wait: float | None = None) -> bool:
        """Apply a changed config file, list every connected server's tools again, retry failed servers.

        Concurrent callers share one refresh. With ``wait``, return after at most that many
        seconds (the refresh goes on); True when it finished.
        """
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.create_task(self._refresh(), name="mcp-catalog-refresh")
        return await _within(self._refreshing, wait)

    async def _refresh(self) -> None:
        await self.reload_config()
        await asyncio.gather(*(s.refresh() for s in list(self._sessions.values())))
        self._refreshed_at = datetime.now(UTC)
        self._refreshed_mono = time.monotonic()
        logger.info("MCP tool catalog refreshed: %s", self.tool_catalog().summary)

    async def reload_config(self, *, wait: float | None = None) -> bool:
        """If the config file changed: connect new servers, close removed ones, reconnect changed ones.

        Cheap when nothing changed (one ``stat``). With ``wait``, return after at most that many
        seconds (the reload goes on). True when a reload ran to its end, or none was needed.
        """
        if self._source is None or self._closed:
            return True
        if self._reloading is None or self._reloading.done():
            if self._source.stamp() == self._source_stamp:
                return True
            self._reloading = asyncio.create_task(self._reload(), name="mcp-config-reload")
        return await _within(self._reloading, wait)

    async def _reload(self) -> bool:
        assert self._source is not None
        self._source_stamp = self._source.stamp()
        try:
            servers = self._source.load()
        except McpConfigError as exc:
            self._config_error = str(exc)
            logger.warning("MCP config not applied, the running servers stay as they are: %s", exc)
            return False
        self._config_error = None
        return await self._apply(servers)

    async def _apply(self, servers: Mapping[str, McpServerConfig]) -> bool:
        current = self._sessions
        sessions: dict[str, _ServerSession] = {}
        started: list[_ServerSession] = []
        retired = [session for name, session in current.items() if name not in servers]
        for name, config in servers.items():
            session = current.get(name)
            if session is not None and session.config == config:
                sessions[name] = session
                continue
            if session is not None:
                retired.append(session)
            sessions[name] = self._new_session(name, config)
            started.append(sessions[name])
        if not started and not retired and list(sessions) == list(current):
            return True
        self._sessions = sessions
        logger.info(
            "MCP config changed: connecting %s, closing %s",
            [s.name for s in started] or "-", [s.name for s in retired] or "-",
        )
        await asyncio.gather(*(s.close() for s in retired), *(self._connect_quietly(s) for s in started))
        return True

    async def _maintain(self) -> None:
        """The background task: pick up config changes, and refresh the whole catalog every TTL."""
        while not self._closed:
            due = (
                self._refreshed_mono + self._catalog_ttl - time.monotonic()
                if self._catalog_ttl
                else float("inf")
            )
            poll = self._config_poll if self._source is not None else float("inf")
            await asyncio.sleep(max(0.0, min(poll, due)))
            try:
                if self._catalog_ttl and time.monotonic() >= self._refreshed_mono + self._catalog_ttl:
                    await self.refresh()
                else:
                    await self.reload_config()
            except Exception:  # a bad moment must not end the upkeep for the worker's whole life
                logger.exception("keeping the MCP tool catalog fresh failed; trying again later")

    # -- calls -----------------------------------------------------------

    async def call(  # noqa: ASYNC109 - also sent to the server as the request's read timeout
        self, tool_name: str, arguments: dict[str, Any], *, timeout: float | None = None
    ) -> ToolResult:
        """Call ``<server>_<tool>`` with arguments put through the pipeline; reconnect once if the session broke.

        The call may take the server's ``timeout`` (the hub's ``call_timeout`` by default),
        and at most ``timeout`` seconds when given. Raises :class:`UnknownToolError` and
        :class:`ToolArgumentsError` (retrying cannot help), :class:`ToolServerError` /
        :class:`ToolTimeoutError` (the server is down or slow). A result the server flags
        as an error is returned with ``ok=False``.
        """
        if self._closed:
            raise ToolServerError(f"cannot call {tool_name}: the tool hub is closed")
        owner = self._owner_of(tool_name)
        limit = owner.call_timeout if owner is not None else self._call_timeout
        if timeout is not None:
            limit = min(limit, timeout)
        try:
            async with asyncio.timeout(limit):
                session, tool = await self._resolve(tool_name)
                prepared = prepare_arguments(
                    tool_name, arguments, tool.input_schema, self.rules, validator=session.validator(tool)
                )
                raw = await self._call_with_reconnect(session, tool.name, prepared.arguments, limit)
        except TimeoutError as exc:
            raise ToolTimeoutError(f"{tool_name} did not answer within {limit:g} s") from exc
        return _to_result(raw).model_copy(update={"adjusted": prepared.changes})

    def _owner_of(self, tool_name: str) -> _ServerSession | None:
        found = self._route(tool_name)
        if found is not None:
            return found[0]
        return next((s for s in self._sessions.values() if tool_name.startswith(s.name + "_")), None)

    async def _call_with_reconnect(
        self, session: _ServerSession, tool: str, arguments: dict[str, Any], read_timeout: float
    ) -> mcp_types.CallToolResult:
        try:
            return await session.call(tool, arguments, read_timeout)
        except _SessionLost as lost:
            if self._closed:
                raise ToolServerError(f"MCP server {session.name!r}: the tool hub is closed") from lost
            if session.closed:
                # The config file changed under this call: go on with the server's new session, if any.
                replacement = self._sessions.get(session.name)
                if replacement is None:
                    raise ToolServerError(
                        f"MCP server {session.name!r} was removed from the config during the call"
                    ) from lost
                session = replacement
                if session.status != "connected":
                    await session.reconnect(session.generation)
            else:
                logger.warning("MCP server %s: session lost (%s); reconnecting", session.name, lost)
                await session.reconnect(lost.generation)
        # The retry may repeat a call whose request reached the server before the session broke:
        # tool calls are at-least-once, like any Temporal activity.
        try:
            return await session.call(tool, arguments, read_timeout)
        except _SessionLost as again:
            raise ToolServerError(
                f"MCP server {session.name!r} lost the session again after reconnecting: {again}"
            ) from again

    async def _resolve(self, tool_name: str) -> tuple[_ServerSession, mcp_types.Tool]:
        found = self._route(tool_name)
        if found is not None:
            return found
        # The tool may belong to a server that never connected: try to bring it up once.
        for session in list(self._sessions.values()):
            if (
                session.status != "connected"
                and tool_name.startswith(session.name + "_")
                and not self._closed
            ):
                await session.reconnect(session.generation)
                found = self._route(tool_name)
                if found is not None:
                    return found
        known = [tool.name for tool in self.catalog()]
        down = [s.name for s in self._sessions.values() if s.status != "connected"]
        raise UnknownToolError(tool_name, difflib.get_close_matches(tool_name, known, n=3, cutoff=0.6), down)

    def _route(self, tool_name: str) -> tuple[_ServerSession, mcp_types.Tool] | None:
        for session in self._sessions.values():
            prefix = session.name + "_"
            if tool_name.startswith(prefix) and (tool := session.tools.get(tool_name[len(prefix) :])):
                return session, tool
        return None


async def _within(task: Awaitable[Any], wait: float | None) -> bool:
    """Wait for a shared task, at most ``wait`` seconds; the caller giving up never cancels it."""
    try:
        await asyncio.wait_for(asyncio.shield(task), wait)
    except TimeoutError:
        return False
    return True


# ---------------------------------------------------------------------------
# Activities

MAX_RESULT_CHARS = 64_000
"""A tool result lands in workflow history (payloads are capped at 2 MB, histories at 50 MB): keep it modest."""


class ToolActivities:
    """The tool activities, bound to a started :class:`ToolHub`."""

    def __init__(self, hub: ToolHub, *, call_timeout: timedelta | None = None) -> None:
        """``call_timeout`` caps every call, on top of each server's own timeout."""
        self._hub = hub
        self._call_timeout = call_timeout

    @activity.defn(name="call_tool")
    async def call_tool(self, call: ToolCallInput) -> ToolCallOutput:
        """Call one MCP tool. An error result comes back as ``ok=False``; the workflow decides what it means."""
        started = time.monotonic()
        try:
            # Long tool calls must heartbeat, or a heartbeat timeout would fail them and
            # cancellation would never reach them.
            async with heartbeating(call.step_id, call.tool):
                result = await self._hub.call(call.tool, call.arguments, timeout=self._timeout())
        except ToolCallError as exc:
            activity.logger.warning("tool %s (step %s) failed: %s", call.tool, call.step_id, exc)
            raise application_error(exc) from exc
        duration_ms = round((time.monotonic() - started) * 1000)
        if result.adjusted:
            activity.logger.info("tool %s (step %s): arguments adjusted: %s", call.tool, call.step_id,
                                 "; ".join(result.adjusted))
        activity.logger.info(
            "tool %s (step %s): %s in %d ms",
            call.tool,
            call.step_id,
            "ok" if result.ok else "error",
            duration_ms,
        )
        return ToolCallOutput(**_bounded(result).model_dump(), duration_ms=duration_ms)

    @activity.defn(name="get_tool_catalog")
    async def get_tool_catalog(self, request: CatalogRequest | None = None) -> ToolCatalog:
        """The live tool catalog: every tool of every connected server, first sentence of each description.

        A config file changed since the last look is applied first (within ``wait_seconds``).
        """
        await self._hub.reload_config(wait=(request or CatalogRequest()).wait_seconds)
        return self._hub.tool_catalog()

    @activity.defn(name="refresh_tool_catalog")
    async def refresh_tool_catalog(self, request: CatalogRequest | None = None) -> ToolCatalog:
        """Refresh now (config file, tool lists, failed servers), then answer as ``get_tool_catalog``."""
        await self._hub.refresh(wait=(request or CatalogRequest()).wait_seconds)
        return self._hub.tool_catalog()

    @activity.defn(name="get_server_states")
    async def get_server_states(self, request: CatalogRequest | None = None) -> list[ServerState]:
        """Every configured server: connected, or failed and why."""
        await self._hub.reload_config(wait=(request or CatalogRequest()).wait_seconds)
        return self._hub.server_states()

    def _timeout(self) -> float | None:
        timeout = self._call_timeout.total_seconds() if self._call_timeout else None
        start_to_close = activity.info().start_to_close_timeout
        if start_to_close:
            # End the call a little before Temporal ends the attempt, so the failure says "ToolTimeoutError".
            cap = start_to_close.total_seconds() * 0.9
            timeout = cap if timeout is None else min(timeout, cap)
        return timeout


def _bounded(result: ToolResult) -> ToolResult:
    text, structured = result.text, result.structured
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[... {len(result.text) - MAX_RESULT_CHARS} more characters cut]"
    if structured is not None and len(json.dumps(structured, default=str)) > MAX_RESULT_CHARS:
        structured = None
        text += "\n[structured content omitted: too large for workflow history]"
    return result.model_copy(update={"text": text, "structured": structured})
