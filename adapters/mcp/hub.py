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
import threading
import time
from collections.abc import Awaitable, Collection, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.mcp.catalog import build_catalog
from adapters.mcp.config import (
    McpConfigSource,
    McpServerConfig,
    env_references,
    load_argument_rules,
    outbox_server,
)
from adapters.mcp.session import Launcher, ServerSession, SessionLost, to_result
from adapters.metrics import EngineMetrics
from skills.errors import McpConfigError, ToolServerError, ToolTimeoutError, UnknownToolError
from skills.run.arguments import ArgumentRules, PreparedArguments, prepare_arguments
from skills.run.catalog import NOT_STARTED, ServerState, ToolCatalog, ToolHints, ToolInfo, ToolResult
from skills.run.rehearsal import rehearsed

if TYPE_CHECKING:
    import mcp_types

    from config.settings import Settings

logger = logging.getLogger(__name__)

RETRY_FAILED_EVERY = 15.0
"""Seconds between two tries of a failed server prompted by registrations naming its tools (the
catalog's own refresh retries every failed server every ``catalog_ttl``)."""


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
        self._connect_timeout = connect_timeout
        self._call_timeout = call_timeout
        self._environ = environ
        self._launcher = launcher
        self._source = source
        self._source_stamp = source.stamp() if source is not None else None
        self._catalog_ttl = catalog_ttl
        self._config_poll = config_poll
        self.rules = rules or ArgumentRules()
        # Replaced, never changed in place: the registration activity reads it from a thread.
        self._sessions: dict[str, ServerSession] = {
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
        self._starting: asyncio.Task[None] | None = None
        self._begun = False
        """The first connects are begun (or asked of the loop, from a thread)."""
        self._settled = threading.Event()
        """Set when the first connect of every server has ended (connected or failed)."""
        self._first_connects = {name: threading.Event() for name in self._sessions}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._retry_lock = threading.Lock()
        self._retried: dict[str, float] = {}

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

    def _new_session(self, name: str, config: McpServerConfig) -> ServerSession:
        return ServerSession(
            name, config, connect_timeout=self._connect_timeout, call_timeout=self._call_timeout,
            environ=self._environ, launcher=self._launcher,
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
        self._loop = asyncio.get_running_loop()
        if not lazy:
            self._begun = True
            self._begin()
        if wait and self._starting is not None:
            await asyncio.shield(self._starting)

    def _begin(self) -> None:
        """On the hub's loop: the first connects, once."""
        if self._starting is None and not self._closed:
            self._starting = asyncio.create_task(self._start(), name="mcp-hub-start")

    def _needed(self) -> None:
        """Something needs the servers: begin their first connects if a lazy start left them for now (from
        the hub's loop or from a thread)."""
        if self._loop is None or self._closed:
            return
        if self._on_loop():
            self._begun = True
            self._begin()
        elif not self._begun:
            self._begun = True  # at once, for the thread's next read: the loop begins them at its next turn
            self._loop.call_soon_threadsafe(self._begin)

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    @property
    def lazy(self) -> bool:
        """Started lazily, and nothing has needed a server yet."""
        return not self._begun and self._loop is not None

    async def _start(self) -> None:
        async def first(session: ServerSession) -> None:
            try:
                await self._connect_quietly(session)
            finally:
                if (event := self._first_connects.get(session.name)) is not None:  # None: added by a reload
                    event.set()

        try:
            await asyncio.gather(*(first(s) for s in self._sessions.values()))
        finally:
            self._settled.set()
            for event in self._first_connects.values():
                event.set()
        self._refreshed_mono = time.monotonic()
        if self._maintainer is None and (self._catalog_ttl or self._source is not None) and not self._closed:
            self._maintainer = asyncio.create_task(self._maintain(), name="mcp-catalog-maintainer")

    @property
    def settled(self) -> bool:
        """The first connect of every server has ended (each is connected or failed)."""
        return self._settled.is_set()

    async def settle(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - a bound, not a deadline
        """Wait, at most ``timeout`` seconds, for the servers still on their first connect; True when none is.
        A hub started lazily begins them now."""
        self._needed()
        if self._starting is None:
            return True
        return await _within(self._starting, timeout)

    def waited_for_connects(self, tools: Collection[str] | None = None, timeout: float | None = None) -> bool:
        """For a thread (a synchronous activity; never the hub's event loop): wait, at most ``timeout``
        seconds (the connect timeout by default), for the servers that could offer ``tools`` (all
        servers when None) while they are on their first connect, and try once more those of them that
        failed (at most every :data:`RETRY_FAILED_EVERY` seconds: a server down when the worker started
        may be up now). True when there were any, so a catalog read before may have missed their tools."""
        def could_offer(name: str) -> bool:
            return tools is None or any(t.startswith(name + "_") for t in tools)

        self._needed()

        pending = [event for name, event in self._first_connects.items() if not event.is_set() and could_offer(name)]
        deadline = time.monotonic() + (self._connect_timeout if timeout is None else timeout)
        for event in pending:
            event.wait(max(0.0, deadline - time.monotonic()))
        retried = self._retry_failed([s for s in self._sessions.values() if s.status == "failed" and could_offer(s.name)],
                                     deadline)
        return bool(pending) or retried

    def _retry_failed(self, sessions: list[ServerSession], deadline: float) -> bool:
        """From a thread: reconnect ``sessions`` on the hub's loop, each at most every RETRY_FAILED_EVERY s."""
        now = time.monotonic()
        with self._retry_lock:
            due = [s for s in sessions if now - self._retried.get(s.name, -RETRY_FAILED_EVERY) >= RETRY_FAILED_EVERY]
            self._retried.update((s.name, now) for s in due)
        if not due or self._loop is None or self._closed:
            return False
        futures = [asyncio.run_coroutine_threadsafe(self._connect_quietly(s), self._loop) for s in due]
        for future in futures:
            with suppress(Exception):  # a connect that failed again, or took too long: its status says so
                future.result(max(0.0, deadline - time.monotonic()))
        return any(s.status == "connected" for s in due)

    @staticmethod
    async def _connect_quietly(session: ServerSession) -> None:
        if session.status == "connected":
            return
        with suppress(ToolServerError):  # already recorded in the session's status and reason
            await session.reconnect(session.generation)

    async def close(self) -> None:
        self._closed = True
        for task in (self._starting, self._maintainer, self._refreshing, self._reloading):
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
        self._needed()  # a lazy start's first connects: a reader that wants them waits (waited_for_connects, settle)
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
                        hints=_hints(tool.annotations),
                    )
                )
        # Several threads may rebuild at once; each publishes a complete, consistent result.
        self._catalog, self._names, self._catalog_key = tools, frozenset(seen), key

    def referenced_variables(self) -> frozenset[str]:
        """The worker's variables its own servers' configs expand (``${TELEGRAM_BOT_TOKEN}``, a mail
        token): secrets the engine holds for those servers, which no skill's toolset may have."""
        return frozenset(name for session in self._sessions.values() for name in env_references(session.config))

    def server_states(self) -> list[ServerState]:
        """Every configured server's state, as it is: one a lazy start has not connected yet is ``not started``
        (and connects when first needed), never ``connecting``. Reading them begins no connect."""
        states = [session.state() for session in self._sessions.values()]
        if not self.lazy:
            return states
        return [state.model_copy(update={"reason": NOT_STARTED}) if state.status == "not started" else state
                for state in states]

    def tool_catalog(self) -> ToolCatalog:
        """The catalog grouped by server (see :func:`build_catalog`), with every server's state."""
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
        sessions: dict[str, ServerSession] = {}
        started: list[ServerSession] = []
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
        # A lazy start connects nothing before a need: the new servers wait for the first connects too, and are
        # waited for as the others (a new dict: threads read it).
        if self.lazy:
            self._first_connects = {**{s.name: threading.Event() for s in started}, **self._first_connects}
        connects = [] if self.lazy else [self._connect_quietly(s) for s in started]
        await asyncio.gather(*(s.close() for s in retired), *connects)
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
        if self._closed:
            raise ToolServerError(f"cannot call {tool_name}: the tool hub is closed")
        owner = self._owner_of(tool_name)
        limit = owner.call_timeout if owner is not None else self._call_timeout
        if timeout is not None:
            limit = min(limit, timeout)
        started, outcome = time.monotonic(), "cancelled"
        try:
            async with asyncio.timeout(limit):
                session, tool = await self._resolve(tool_name)
                prepared = prepare_arguments(
                    tool_name, arguments, tool.input_schema, self.rules, validator=session.validator(tool)
                )
                raw = await self._call_with_reconnect(session, tool.name, prepared.arguments, limit,
                                                      idempotency_key)
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
        owner = self._owner_of(tool_name)
        vouched = owner is not None and owner.config.hints_trusted
        if not record_only and hints.read_only is True and (not closed_world or hints.open_world is False and vouched):
            return await self.call(tool_name, arguments, timeout=timeout, idempotency_key=idempotency_key)
        prepared = await self.prepare(tool_name, arguments)
        return rehearsed(prepared.arguments, prepared.changes)

    def _owner_of(self, tool_name: str) -> ServerSession | None:
        found = self._route(tool_name)
        if found is not None:
            return found[0]
        return next((s for s in self._sessions.values() if tool_name.startswith(s.name + "_")), None)

    async def _call_with_reconnect(
        self, session: ServerSession, tool: str, arguments: dict[str, Any], read_timeout: float, key: str
    ) -> mcp_types.CallToolResult:
        try:
            return await session.call(tool, arguments, read_timeout, idempotency_key=key)
        except SessionLost as lost:
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
        # The retry may repeat a call whose request reached the server before the session broke, as a
        # retried activity may: it carries the same idempotency key, so a server that honours the key
        # answers it with the first call's result and acts once; one that does not may act twice.
        try:
            return await session.call(tool, arguments, read_timeout, idempotency_key=key)
        except SessionLost as again:
            raise ToolServerError(
                f"MCP server {session.name!r} lost the session again after reconnecting: {again}"
            ) from again

    async def _resolve(self, tool_name: str) -> tuple[ServerSession, mcp_types.Tool]:
        self._needed()  # a lazy start's first connects; the server of this tool is waited for below
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

    def _route(self, tool_name: str) -> tuple[ServerSession, mcp_types.Tool] | None:
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


def _hints(annotations: Any) -> ToolHints:
    """A tool's MCP annotations as the engine keeps them (a server may send none)."""
    if annotations is None:
        return ToolHints()
    return ToolHints(read_only=annotations.read_only_hint, destructive=annotations.destructive_hint,
                     idempotent=annotations.idempotent_hint, open_world=annotations.open_world_hint)
