"""The health server's HTTP, over real sockets: what a probe, a scraper or a stray client gets."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from config.settings import Settings
from service import health
from service.health import HealthServer, Readiness
from skills.run.catalog import ServerState


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


async def test_a_silent_client_does_not_hold_up_the_probes(server: HealthServer,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # The time a client may take to send its request, 5 s in production, made one no loaded machine's answer
    # comes near: a probe served behind the silent client would come after it, one served beside it within 30 s.
    monkeypatch.setattr(health, "REQUEST_TIMEOUT", 120.0)
    _, silent = await asyncio.open_connection("127.0.0.1", server.port)  # connects, never sends a byte
    try:
        answer = await asyncio.wait_for(_raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n"), 30)
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


def outside_address() -> str | None:
    """An address of this machine that is not a loopback one, as a caller from elsewhere reaches it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))  # no packet is sent: this only picks the outgoing interface
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if ipaddress.ip_address(address).is_loopback else address


async def test_readyz_tells_a_caller_from_elsewhere_ready_or_not_and_no_more(tmp_path: Path) -> None:
    address = outside_address()
    if address is None:
        pytest.skip("this machine has no address but loopback: no caller from elsewhere to play")
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.connect():
        pass
    servers = [ServerState(name="payroll-internal", transport="http", status="failed", reason="HTTP 401 Unauthorized")]
    readiness = Readiness(engine, lambda: servers)
    readiness.polling = True
    running = HealthServer("0.0.0.0", 0, {}, {"/readyz": readiness})
    await running.start()
    try:
        async def ask(host: str) -> bytes:
            reader, writer = await asyncio.open_connection(host, running.port)
            writer.write(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return answer

        stranger = await ask(address)
        assert stranger.startswith(b"HTTP/1.1 200 ") and stranger.endswith(b'\r\n\r\n{"ready": true}\n'), stranger
        # From the pod itself (kubectl exec, port-forward): every check and every MCP server's state.
        local = json.loads((await ask("127.0.0.1")).split(b"\r\n\r\n", 1)[1])
        assert local["ready"] is True and local["mcp"]["payroll-internal"]["reason"] == "HTTP 401 Unauthorized"
        readiness.polling = False
        assert (await ask(address)).endswith(b'\r\n\r\n{"ready": false}\n')
    finally:
        await running.close()


def test_the_health_server_listens_on_loopback_unless_told_otherwise() -> None:
    assert Settings().health_host == "127.0.0.1"
    assert Settings.from_env(environ={"SKILLS_HEALTH_HOST": "0.0.0.0"}).health_host == "0.0.0.0"
