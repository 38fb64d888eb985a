"""The worker's HTTP surface: ``/healthz``, ``/readyz`` and ``/metrics`` on the ``health_port``.

A few lines of HTTP/1.1 over :func:`asyncio.start_server` (one request per connection, then
close): probes and scrapes need nothing more, and the worker gains no web framework.

- ``/healthz``: 200 while the process's event loop answers.
- ``/readyz``: 200 when the worker polls its task queue (started, not shutting down) and the
  store answers ``SELECT 1`` within :data:`STORE_TIMEOUT`; else 503. The JSON body says ready or not;
  to a caller on loopback, each check and every MCP server's state (not started: the worker connects its
  servers when first needed; connecting; connected; failed and why). A server that is down does not
  make the worker unready: the calls of its tools fail (and say why), everything else works.
- ``/metrics``: the Prometheus exposition of the worker's runtime (see :mod:`service.telemetry`).
- ``/codec/encode``, ``/codec/decode``: Temporal's remote codec protocol, when enabled (see
  :mod:`service.codec`), and ``POST /hooks/<skill>`` when hooks are on (:mod:`service.hooks`): the only
  endpoints that take a request body (bounded by :data:`MAX_BODY`, or the endpoint's ``max_body``). An
  endpoint with an ``admit`` method is asked first, from the request's head: its refusal (a 401) is
  answered before a byte of the body is read.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from config.secrets import redact
from skills.run.catalog import ServerState

logger = logging.getLogger(__name__)

STORE_TIMEOUT = 2.0
"""Seconds the store may take to answer ``SELECT 1`` before the worker is reported unready."""
REQUEST_TIMEOUT = 5.0
"""Seconds a client may take to send its request line, headers and body."""

MAX_BODY = 16 * 1024 * 1024
"""Bytes a request body may have (a codec request carries payloads of up to 2 MB each, in base64)."""
MAX_HEADERS = 100

Handler = Callable[[], Awaitable[tuple[int, str, str]]]
"""A GET endpoint: returns (status, content type, body)."""


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Mapping[str, str]
    """Header names in lower case."""
    body: bytes = b""
    peer: str = ""
    admitted: Any = None
    """What the endpoint's ``admit`` gave for the request's head, before its body was read."""


@dataclass(frozen=True)
class Reply:
    status: int
    kind: str
    body: str
    headers: Mapping[str, str] = field(default_factory=dict)


RequestHandler = Callable[[Request], Awaitable[Reply]]
"""An endpoint that answers every method itself (and reads the body): the codec's."""

REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
           403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 413: "Content Too Large",
           415: "Unsupported Media Type", 500: "Internal Server Error", 503: "Service Unavailable"}


class HealthServer:
    """Serves the given endpoints (path -> handler) until closed."""

    def __init__(self, host: str, port: int, routes: dict[str, Handler],
                 requests: dict[str, RequestHandler] | None = None) -> None:
        self.host, self.port = host, port
        self.routes = routes
        self.requests = requests or {}
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        """Listen; returns the bound port (a free one when ``port`` is 0)."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT):
                line = (await reader.readline()).decode("latin-1").split()
                headers: dict[str, str] = {}
                while header := (await reader.readline()).strip():
                    if len(headers) >= MAX_HEADERS:
                        raise ValueError("too many headers")
                    name, _, value = header.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                peer = writer.get_extra_info("peername")
                head = Request(line[0], line[1].split("?", 1)[0], headers, b"",
                               str(peer[0]) if isinstance(peer, tuple) else "") if len(line) >= 2 else None
                # An endpoint that authenticates decides from the head first: a stranger's declared
                # body is never waited for.
                admitted = await self._admit(head)
                body = admitted if isinstance(admitted, Reply) else await self._read_body(reader, line, headers)
            if isinstance(body, Reply):
                reply = body
            else:
                request = replace(head, body=body, admitted=admitted) if head is not None else None
                reply = await self._answer(request)
            head = line[0] if line else ""
            payload = reply.body.encode()
            extra = "".join(f"{name}: {value}\r\n" for name, value in reply.headers.items())
            writer.write(
                f"HTTP/1.1 {reply.status} {REASONS.get(reply.status, '')}\r\nContent-Type: {reply.kind}\r\n"
                f"Content-Length: {len(payload)}\r\nCache-Control: no-store\r\n{extra}Connection: close\r\n\r\n"
                .encode() + (b"" if head == "HEAD" else payload))
            await writer.drain()
        except (TimeoutError, ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ValueError):
            pass  # a client that went away, never spoke, or sent a line too long: nothing to answer
        finally:
            writer.close()
            with suppress(Exception):
                await writer.wait_closed()

    def _endpoint(self, path: str) -> RequestHandler | None:
        """The request endpoint of ``path``: by the exact path, or by a prefix ending in ``/`` (``/hooks/``)."""
        if path in self.requests:
            return self.requests[path]
        return next((handler for prefix, handler in self.requests.items()
                     if prefix.endswith("/") and path.startswith(prefix)), None)

    async def _admit(self, head: Request | None) -> Any:
        endpoint = self._endpoint(head.path) if head is not None else None
        admit = getattr(endpoint, "admit", None)
        if head is None or admit is None:
            return None
        try:
            return await admit(head)
        except Exception as exc:
            logger.exception("endpoint %s failed", head.path)
            return Reply(500, "text/plain", redact(f"{type(exc).__name__}: {exc}\n"))

    async def _read_body(self, reader: asyncio.StreamReader, line: list[str], headers: dict[str, str]) -> bytes | Reply:
        """The body of a request to an endpoint that takes one; a Reply when it cannot be read."""
        endpoint = self._endpoint(line[1].split("?", 1)[0]) if len(line) >= 2 else None
        if endpoint is None:
            return b""  # the probes' endpoints take no body: never read one
        limit = getattr(endpoint, "max_body", MAX_BODY)  # an endpoint may take less (a hook: an event's data)
        length = headers.get("content-length", "0")
        if not length.isdigit():
            return Reply(400, "text/plain", "Content-Length: not a number\n")
        if int(length) > limit:
            return Reply(413, "text/plain", f"body of {length} bytes; at most {limit}\n")
        return await reader.readexactly(int(length))

    async def _answer(self, request: Request | None) -> Reply:
        if request is None:
            return Reply(404, "text/plain", "bad request\n")
        endpoint = self._endpoint(request.path)
        if endpoint is not None:
            try:
                return await endpoint(request)
            except Exception as exc:
                logger.exception("endpoint %s failed", request.path)
                return Reply(500, "text/plain", redact(f"{type(exc).__name__}: {exc}\n"))
        handler = self.routes.get(request.path)
        if handler is None:
            return Reply(404, "text/plain", f"not found; try {', '.join(sorted([*self.routes, *self.requests]))}\n")
        if request.method not in ("GET", "HEAD"):
            return Reply(405, "text/plain", "GET only\n")
        try:
            return Reply(*await handler())
        except Exception as exc:  # a probe must answer, whatever broke
            logger.exception("health endpoint %s failed", request.path)
            return Reply(500, "text/plain", f"{type(exc).__name__}: {exc}\n")


class Readiness:
    """What ``/readyz`` checks: the worker polls, the store answers; and how the MCP servers are.

    As an endpoint (``Readiness(request)``), it tells a caller from elsewhere ready or not (``{"ready":
    true}``) and no more: every check, and the MCP servers by name with why one failed, only to a
    caller on the pod's own loopback (``kubectl exec``, ``kubectl port-forward``)."""

    max_body = 0

    def __init__(self, engine: Engine, servers: Callable[[], list[ServerState]]) -> None:
        self._engine = engine
        self._servers = servers
        self.polling = False
        """Set by the worker while it polls its task queue; cleared when it begins to shut down."""
        self._ping: asyncio.Future[None] | None = None

    async def check(self) -> tuple[int, str, str]:
        store = await self._store()
        worker = "polling" if self.polling else "not polling (starting or shutting down)"
        ready = self.polling and store == "ok"
        body: dict[str, Any] = {
            "ready": ready,
            "worker": worker,
            "store": store,
            "mcp": {s.name: {"status": s.status, "tools": s.tools, **({"reason": s.reason} if s.reason else {})}
                    for s in self._servers()},
            "note": "an MCP server that is not connected does not make the worker unready; calls of its tools fail",
        }
        return (200 if ready else 503), "application/json", json.dumps(body, indent=1) + "\n"

    async def __call__(self, request: Request) -> Reply:
        if request.method not in ("GET", "HEAD"):
            return Reply(405, "text/plain", "GET only\n")
        status, kind, body = await self.check()
        if not _loopback(request.peer):
            body = json.dumps({"ready": status == 200}) + "\n"
        return Reply(status, kind, body)

    async def _store(self) -> str:
        # One ping at a time: a store that hangs must not pile up a thread per probe.
        if self._ping is None or self._ping.done():
            self._ping = asyncio.ensure_future(asyncio.to_thread(ping_store, self._engine))
        try:
            await asyncio.wait_for(asyncio.shield(self._ping), STORE_TIMEOUT)
        except TimeoutError:
            return f"no answer to SELECT 1 within {STORE_TIMEOUT:g} s"
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            return redact(f"unreachable: {type(exc).__name__}: {first}")
        return "ok"


def _loopback(peer: str) -> bool:
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False  # no address known (a Unix socket is not served): the short answer
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def ping_store(engine: Engine) -> None:
    """``SELECT 1`` on a fresh connection; raises if the store cannot answer.

    A SQLite file is opened anew (read-write, never created): a pooled connection would keep
    answering from a file that was deleted or moved away under it."""
    url = engine.url
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        connection = sqlite3.connect(f"file:{url.database}?mode=rw", uri=True, timeout=STORE_TIMEOUT)
        try:
            connection.execute("SELECT 1").fetchone()
        finally:
            connection.close()
        return
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))
