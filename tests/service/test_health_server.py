"""The health server's HTTP, over real sockets: what a probe, a scraper or a stray client gets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from service.health import HealthServer, Readiness
from skills.catalog import ServerState


async def _raw(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


async def _broken() -> tuple[int, str, str]:
    raise RuntimeError("the check itself broke")


async def _fine() -> tuple[int, str, str]:
    return 200, "text/plain", "ok\n"


@pytest.fixture
async def server() -> AsyncIterator[HealthServer]:
    running = HealthServer("127.0.0.1", 0, {"/healthz": _fine, "/broken": _broken})
    await running.start()
    yield running
    await running.close()


async def test_get_head_and_the_wrong_requests(server: HealthServer) -> None:
    ok = await _raw(server.port, b"GET /healthz?probe=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200 OK\r\n") and ok.endswith(b"\r\n\r\nok\n") and b"Content-Length: 3" in ok
    head = await _raw(server.port, b"HEAD /healthz HTTP/1.1\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")
    assert (await _raw(server.port, b"POST /healthz HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 405 ")
    missing = await _raw(server.port, b"GET /nope HTTP/1.1\r\n\r\n")
    assert missing.startswith(b"HTTP/1.1 404 ") and b"/healthz" in missing
    broken = await _raw(server.port, b"GET /broken HTTP/1.1\r\n\r\n")
    assert broken.startswith(b"HTTP/1.1 500 ") and b"RuntimeError: the check itself broke" in broken


async def test_a_silent_client_does_not_hold_up_the_probes(server: HealthServer) -> None:
    _, silent = await asyncio.open_connection("127.0.0.1", server.port)  # connects, never sends a byte
    try:
        # Well within the 5 s a client may take to send its request: connections are served side by side.
        answer = await asyncio.wait_for(_raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n"), 2)
        assert answer.startswith(b"HTTP/1.1 200")
    finally:
        silent.close()


async def test_readiness_needs_polling_and_the_store(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    engine = create_engine(f"sqlite:///{db}")
    with engine.connect():
        pass  # the file exists now
    servers = [ServerState(name="jira", transport="http", status="failed", reason="HTTP 401 Unauthorized")]
    readiness = Readiness(engine, lambda: servers)
    status, _, body = await readiness.check()
    assert status == 503 and json.loads(body)["worker"].startswith("not polling")
    readiness.polling = True
    status, _, body = await readiness.check()
    assert status == 200 and json.loads(body)["mcp"] == {
        "jira": {"status": "failed", "tools": 0, "reason": "HTTP 401 Unauthorized"}}
    db.unlink()
    status, _, body = await readiness.check()
    assert status == 503 and json.loads(body)["store"].startswith("unreachable: OperationalError"), body
