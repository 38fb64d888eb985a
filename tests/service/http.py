"""Reading the worker's HTTP surface as Kubernetes and Prometheus do: plain GETs, and the text format."""

from __future__ import annotations

import asyncio
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path

from config.settings import Settings
from tests.conftest import write_mcp_config

FAKES = Path(__file__).resolve().parent.parent / "fakes"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def get(port: int, path: str) -> tuple[int, str]:
    """(status, body) of ``GET http://127.0.0.1:<port><path>``."""
    return await asyncio.to_thread(_get, f"http://127.0.0.1:{port}{path}")


async def answers(port: int, path: str) -> tuple[int, str] | None:
    """Like :func:`get`, None while nothing listens yet (for ``eventually``)."""
    try:
        return await get(port, path)
    except (urllib.error.URLError, ConnectionError):
        return None


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of a Prometheus text exposition: (name, labels, value)."""
    found = []
    for line in text.splitlines():
        match = SAMPLE.match(line.strip())
        if match and not line.startswith("#"):
            found.append((match[1], dict(LABEL.findall(match[2] or "")), float(match[3])))
    return found


def value(text: str, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when there is none)."""
    return sum(v for n, got, v in samples(text) if n == name and labels.items() <= got.items())


def gated_config(settings: Settings, gate: Path, log: Path) -> Settings:
    """``settings`` with the gated MCP server (tests/fakes/gated_server.py), up once ``gate`` exists."""
    config = write_mcp_config(settings.data_dir / "mcp.json", {
        "gated": {"command": sys.executable, "args": [str(FAKES / "gated_server.py")],
                  "env": {"FAKE_GATE": str(gate), "FAKE_GATE_LOG": str(log)}}})
    return settings.model_copy(update={"mcp_config": config})
