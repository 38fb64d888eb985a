"""Tool-call latency: a warm MCP session against reconnecting for every call.

Calls ``outbox_send_message`` (or, with ``--tool list_messages``, a read that skips the
fsync of every stored message) on the bundled outbox server over stdio, with a
throw-away outbox file, and prints the median and 95th percentile per call:

- ``warm session``: one ToolHub kept open, as the worker does;
- ``raw client``: the MCP client alone on an open session (what the hub adds is the difference);
- ``reconnect per call``: a new ToolHub (process start, handshake, tool listing) for each call.

Then the argument pipeline alone (``skills.run.arguments.prepare_arguments``, which every
hub call runs before it sends anything), on the tool's real input schema:

- ``pipeline, clean arguments``: nothing to fix, the schema check only;
- ``pipeline, LLM-style arguments``: a null, a string number, a hallucinated parameter and
  a default to inject, all fixed;
- ``pipeline, schema compiled per call``: what caching the compiled validator saves.

Run from the project root::

    .venv/bin/python -m bench.tool_latency [--warm-calls 500] [--cold-calls 20] [--tool list_messages] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path

from mcp import Client, StdioServerParameters

from adapters.mcp import McpServerConfig, ToolHub, outbox_server
from skills.run.arguments import ArgumentRules, ParameterDefault, compile_schema, prepare_arguments

CALL_TIMEOUT = 30.0
ARGUMENTS = {"send_message": lambda i: {"message": f"bench {i}"}, "list_messages": lambda i: {"limit": 1}}
# What an LLM tends to send instead: a null, a number as a string, an invented parameter, no chat.
LOOSE_ARGUMENTS = {
    "send_message": {"message": "bench", "chat_id": None, "teamId": "t-1"},
    "list_messages": {"limit": "5", "chat_id": None, "teamId": "t-1"},
}
RULES = ArgumentRules(
    hallucinated={"outbox_": ["teamId"]},
    defaults={"outbox_send_message": {"chat_id": ParameterDefault(value="42", max_length=20)},
              "outbox_list_messages": {"chat_id": ParameterDefault(value="42", max_length=20)}},
)
PIPELINE_CALLS = 20_000


async def timed(calls: int, one_call: Callable[[int], Awaitable[object]]) -> list[float]:
    """Milliseconds of each of ``calls`` sequential calls."""
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        await one_call(i)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def warm_hub(config: McpServerConfig, tool: str, calls: int) -> list[float]:
    arguments = ARGUMENTS[tool]
    async with ToolHub({"outbox": config}) as hub:
        await hub.call(f"outbox_{tool}", arguments(-1), timeout=CALL_TIMEOUT)  # warm-up
        return await timed(calls, lambda i: hub.call(f"outbox_{tool}", arguments(i), timeout=CALL_TIMEOUT))


async def raw_client(config: McpServerConfig, tool: str, calls: int) -> list[float]:
    arguments = ARGUMENTS[tool]
    params = StdioServerParameters(
        command=config.command or "", args=config.args, env=config.env, cwd=config.cwd
    )
    async with Client(params) as client:
        await client.call_tool(tool, arguments(-1))  # warm-up
        return await timed(calls, lambda i: client.call_tool(tool, arguments(i)))


async def reconnect_per_call(config: McpServerConfig, tool: str, calls: int) -> list[float]:
    arguments = ARGUMENTS[tool]

    async def connect_call_close(i: int) -> None:
        async with ToolHub({"outbox": config}) as hub:
            await hub.call(f"outbox_{tool}", arguments(i), timeout=CALL_TIMEOUT)

    return await timed(calls, connect_call_close)


def pipeline(schema: dict[str, object], tool: str, *, loose: bool, cached: bool, calls: int) -> list[float]:
    """Milliseconds per ``prepare_arguments`` call, in batches of 100 (one call is below the clock's grain)."""
    arguments = LOOSE_ARGUMENTS[tool] if loose else ARGUMENTS[tool](0)
    validator = compile_schema(schema) if cached else None
    samples = []
    for _batch in range(calls // 100):
        started = time.perf_counter()
        for _ in range(100):
            prepare_arguments(f"outbox_{tool}", arguments, schema, RULES, validator=validator)
        samples.append((time.perf_counter() - started) * 1000 / 100)
    return samples


def summary(name: str, samples: list[float], calls: int | None = None) -> dict[str, object]:
    return {
        "mode": name,
        "calls": calls or len(samples),
        "median_ms": round(statistics.median(samples), 4),
        "p95_ms": round(statistics.quantiles(samples, n=20)[18], 4),
    }


async def run(tool: str, warm_calls: int, cold_calls: int) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory() as scratch:
        config = outbox_server(Path(scratch) / "outbox.jsonl")
        async with ToolHub({"outbox": config}) as hub:
            schema = next(t.input_schema for t in hub.catalog() if t.tool == tool)
        return [
            summary("warm session (ToolHub)", await warm_hub(config, tool, warm_calls)),
            summary("raw client, warm session", await raw_client(config, tool, warm_calls)),
            summary("reconnect per call", await reconnect_per_call(config, tool, cold_calls)),
            summary("pipeline, clean arguments",
                    pipeline(schema, tool, loose=False, cached=True, calls=PIPELINE_CALLS), PIPELINE_CALLS),
            summary("pipeline, LLM-style arguments",
                    pipeline(schema, tool, loose=True, cached=True, calls=PIPELINE_CALLS), PIPELINE_CALLS),
            summary("pipeline, schema compiled per call",
                    pipeline(schema, tool, loose=True, cached=False, calls=PIPELINE_CALLS // 10), PIPELINE_CALLS // 10),
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-calls", type=int, default=500)
    parser.add_argument("--cold-calls", type=int, default=20)
    parser.add_argument("--tool", choices=sorted(ARGUMENTS), default="send_message")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    rows = asyncio.run(run(args.tool, args.warm_calls, args.cold_calls))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"outbox_{args.tool} over stdio; Python {platform.python_version()}, mcp {version('mcp')}, "
        f"{platform.system()} {platform.machine()}"
    )
    print(f"{'mode':<36}{'calls':>7}{'median ms':>12}{'p95 ms':>10}")
    for row in rows:
        digits = 2 if float(row["median_ms"]) >= 0.1 else 4  # type: ignore[arg-type]
        print(f"{row['mode']:<36}{row['calls']:>7}{row['median_ms']:>12.{digits}f}{row['p95_ms']:>10.{digits}f}")


if __name__ == "__main__":
    sys.exit(main())
