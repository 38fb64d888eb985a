"""The servers of a :class:`~adapters.mcp.hub.ToolHub`: one warm session each, their connection's lifecycle.

A :class:`ServerPool` connects every configured server at once, or when first needed (a lazy start);
whatever needs a server still on its first connect waits for that server only. A failed server is tried
again when a registration names its tools; a session that breaks is reopened by the next call, which
then retries once. A changed config file connects new servers, closes removed ones and reconnects
changed ones; which session serves a tool is read by its ``<server>_`` prefix.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from adapters.mcp.config import McpConfigSource, McpServerConfig
from adapters.mcp.session import Launcher, ServerSession, SessionLost
from skills.errors import McpConfigError, ToolServerError
from skills.run.catalog import NOT_STARTED, ServerState

if TYPE_CHECKING:
    import mcp_types

logger = logging.getLogger(__name__)


class ServerPool:
    """Every configured server's session, connected, retried and replaced as the config file changes.

    ``sessions`` is replaced, never changed in place: the registration activity reads it from a thread.
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        *,
        source: McpConfigSource | None,
        connect_timeout: float,
        call_timeout: float,
        environ: Mapping[str, str] | None,
        launcher: Launcher | None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self._environ = environ
        self._launcher = launcher
        self.source = source
        self.source_stamp = source.stamp() if source is not None else None
        self.config_error: str | None = None
        self.sessions: dict[str, ServerSession] = {
            name: self._new_session(name, config) for name, config in servers.items()
        }
        self.closed = False
        self._reloading: asyncio.Task[bool] | None = None
        self._starting: asyncio.Task[None] | None = None
        self._then: Callable[[], None] | None = None
        self._begun = False
        """The first connects are begun (or asked of the loop, from a thread)."""
        self._settled = threading.Event()
        """Set when the first connect of every server has ended (connected or failed)."""
        self._first_connects = {name: threading.Event() for name in self.sessions}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._retry_lock = threading.Lock()
        self._retried: dict[str, float] = {}

    def _new_session(self, name: str, config: McpServerConfig) -> ServerSession:
        return ServerSession(
            name, config, connect_timeout=self.connect_timeout, call_timeout=self.call_timeout,
            environ=self._environ, launcher=self._launcher,
        )

    async def start(self, *, wait: bool, lazy: bool, then: Callable[[], None]) -> None:
        """Begin the first connects (``lazy``: when something first needs a server), and, on this loop, call
        ``then`` once they have ended, unless closed by then; ``wait``: return when they have."""
        self._loop = asyncio.get_running_loop()
        self._then = then
        if not lazy:
            self._begun = True
            self._begin()
        if wait and self._starting is not None:
            await asyncio.shield(self._starting)

    def _begin(self) -> None:
        """On the hub's loop: the first connects, once."""
        if self._starting is None and not self.closed:
            self._starting = asyncio.create_task(self._start(), name="mcp-hub-start")

    def needed(self) -> None:
        """Something needs the servers: begin their first connects if a lazy start left them for now (from
        the hub's loop or from a thread)."""
        if self._loop is None or self.closed:
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
                await self.connect_quietly(session)
            finally:
                if (event := self._first_connects.get(session.name)) is not None:  # None: added by a reload
                    event.set()

        try:
            await asyncio.gather(*(first(s) for s in self.sessions.values()))
        finally:
            self._settled.set()
            for event in self._first_connects.values():
                event.set()
        if self._then is not None and not self.closed:
            self._then()

    @property
    def settled(self) -> bool:
        """The first connect of every server has ended (each is connected or failed)."""
        return self._settled.is_set()

    async def settle(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - a bound, not a deadline
        """Wait, at most ``timeout`` seconds, for the servers still on their first connect; True when none is.
        A pool started lazily begins them now."""
        self.needed()
        if self._starting is None:
            return True
        return await within(self._starting, timeout)

    def waited_for_connects(self, tools: Collection[str] | None, timeout: float | None, retry_every: float) -> bool:
        """For a thread: wait, at most ``timeout`` seconds (the connect timeout when None), for the servers that
        could offer ``tools`` (all when None) while on their first connect, and try once more those of them that
        failed, each at most every ``retry_every`` seconds. True when there were any."""
        def could_offer(name: str) -> bool:
            return tools is None or any(t.startswith(name + "_") for t in tools)

        self.needed()

        pending = [event for name, event in self._first_connects.items() if not event.is_set() and could_offer(name)]
        deadline = time.monotonic() + (self.connect_timeout if timeout is None else timeout)
        for event in pending:
            event.wait(max(0.0, deadline - time.monotonic()))
        retried = self._retry_failed([s for s in self.sessions.values() if s.status == "failed" and could_offer(s.name)],
                                     deadline, retry_every)
        return bool(pending) or retried

    def _retry_failed(self, sessions: list[ServerSession], deadline: float, every: float) -> bool:
        """From a thread: reconnect ``sessions`` on the hub's loop, each at most every ``every`` seconds."""
        now = time.monotonic()
        with self._retry_lock:
            due = [s for s in sessions if now - self._retried.get(s.name, -every) >= every]
            self._retried.update((s.name, now) for s in due)
        if not due or self._loop is None or self.closed:
            return False
        futures = [asyncio.run_coroutine_threadsafe(self.connect_quietly(s), self._loop) for s in due]
        for future in futures:
            with suppress(Exception):  # a connect that failed again, or took too long: its status says so
                future.result(max(0.0, deadline - time.monotonic()))
        return any(s.status == "connected" for s in due)

    @staticmethod
    async def connect_quietly(session: ServerSession) -> None:
        if session.status == "connected":
            return
        with suppress(ToolServerError):  # already recorded in the session's status and reason
            await session.reconnect(session.generation)

    async def close(self, *tasks: asyncio.Task[Any] | None) -> None:
        """Close every session, after the first connects, ``tasks`` (the catalog's upkeep) and a reload are
        cancelled: closed first, so none of them begins another."""
        self.closed = True
        for task in (self._starting, *tasks, self._reloading):
            if task is not None:
                task.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await task
        await asyncio.gather(*(s.close() for s in self.sessions.values()))

    def states(self) -> list[ServerState]:
        """Every configured server's state, as it is: one a lazy start has not connected yet is ``not started``
        (and connects when first needed), never ``connecting``. Reading them begins no connect."""
        states = [session.state() for session in self.sessions.values()]
        if not self.lazy:
            return states
        return [state.model_copy(update={"reason": NOT_STARTED}) if state.status == "not started" else state
                for state in states]

    # -- the config file -------------------------------------------------

    async def reload_config(self, *, wait: float | None = None) -> bool:
        """If the config file changed: connect new servers, close removed ones, reconnect changed ones.

        Cheap when nothing changed (one ``stat``). With ``wait``, return after at most that many
        seconds (the reload goes on). True when a reload ran to its end, or none was needed.
        """
        if self.source is None or self.closed:
            return True
        if self._reloading is None or self._reloading.done():
            if self.source.stamp() == self.source_stamp:
                return True
            self._reloading = asyncio.create_task(self._reload(), name="mcp-config-reload")
        return await within(self._reloading, wait)

    async def _reload(self) -> bool:
        assert self.source is not None
        self.source_stamp = self.source.stamp()
        try:
            servers = self.source.load()
        except McpConfigError as exc:
            self.config_error = str(exc)
            logger.warning("MCP config not applied, the running servers stay as they are: %s", exc)
            return False
        self.config_error = None
        return await self._apply(servers)

    async def _apply(self, servers: Mapping[str, McpServerConfig]) -> bool:
        current = self.sessions
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
        self.sessions = sessions
        logger.info(
            "MCP config changed: connecting %s, closing %s",
            [s.name for s in started] or "-", [s.name for s in retired] or "-",
        )
        # A lazy start connects nothing before a need: the new servers wait for the first connects too, and are
        # waited for as the others (a new dict: threads read it).
        if self.lazy:
            self._first_connects = {**{s.name: threading.Event() for s in started}, **self._first_connects}
        connects = [] if self.lazy else [self.connect_quietly(s) for s in started]
        await asyncio.gather(*(s.close() for s in retired), *connects)
        return True

    # -- the session of a tool -------------------------------------------

    def route(self, tool_name: str) -> tuple[ServerSession, mcp_types.Tool] | None:
        """The connected session that offers ``tool_name`` (``<server>_<tool>``), and its tool."""
        for session in self.sessions.values():
            prefix = session.name + "_"
            if tool_name.startswith(prefix) and (tool := session.tools.get(tool_name[len(prefix) :])):
                return session, tool
        return None

    def owner_of(self, tool_name: str) -> ServerSession | None:
        """The session of the server ``tool_name`` names, connected or not."""
        found = self.route(tool_name)
        if found is not None:
            return found[0]
        return next((s for s in self.sessions.values() if tool_name.startswith(s.name + "_")), None)

    async def call(
        self, session: ServerSession, tool: str, arguments: dict[str, Any], read_timeout: float, key: str
    ) -> mcp_types.CallToolResult:
        """Call ``tool`` on ``session``; reconnect once (to the server's new session, if the config changed
        under the call) and retry if the session broke."""
        try:
            return await session.call(tool, arguments, read_timeout, idempotency_key=key)
        except SessionLost as lost:
            if self.closed:
                raise ToolServerError(f"MCP server {session.name!r}: the tool hub is closed") from lost
            if session.closed:
                # The config file changed under this call: go on with the server's new session, if any.
                replacement = self.sessions.get(session.name)
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


async def within(task: Awaitable[Any], wait: float | None) -> bool:
    """Wait for a shared task, at most ``wait`` seconds; the caller giving up never cancels it."""
    try:
        await asyncio.wait_for(asyncio.shield(task), wait)
    except TimeoutError:
        return False
    return True
