"""What every benchmark beside raw Temporal starts: its own dev server (in memory), the engine's worker in
this process, a raw worker (one no-op activity) on its own task queue, and the CPU meters. Both workers'
client converts payloads as `skills worker`'s does (`client.codec.data_converter`, no payload keys).

    async with started() as h:
        h.skills.register(...); h.client.create_schedule(...)
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import worker
from bench.raw import RAW_ACTIVITIES, RAW_WORKFLOWS
from client import SkillsClient
from client.codec import data_converter
from client.temporal_cli import temporal_binary
from config.settings import Settings
from search_attributes import SKILL_AGENT, SKILL_NAME, SKILL_TIER

RAW_QUEUE = "bench-raw"


@dataclass
class Harness:
    env: WorkflowEnvironment
    client: Client
    skills: SkillsClient
    settings: Settings


@asynccontextmanager
async def started(queue: str = "bench-engine", worker_in_process: bool = True, raw_in_process: bool = True,
                  **settings: object) -> AsyncIterator[Harness]:
    """A dev server, the engine's worker (``worker_in_process``) and raw's (``raw_in_process``) in this process."""
    with tempfile.TemporaryDirectory(prefix="skills-bench-") as tmp:
        config = Settings(task_queue=queue, data_dir=Path(tmp), timezone="UTC", **settings)  # type: ignore[arg-type]
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_binary(), data_converter=data_converter(None),
            search_attributes=[SKILL_NAME, SKILL_AGENT, SKILL_TIER],
            dev_server_extra_args=["--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"],
        )
        stop, ready = asyncio.Event(), asyncio.Event()
        engine = None
        if worker_in_process:
            engine = asyncio.create_task(worker.run_worker(config, env.client, stop, ready))
            await ready.wait()
        harness = Harness(env, env.client, SkillsClient(env.client, config.task_queue), config)
        try:
            if not raw_in_process:
                yield harness
                return
            async with Worker(env.client, task_queue=RAW_QUEUE, workflows=RAW_WORKFLOWS, activities=RAW_ACTIVITIES,
                              max_concurrent_activities=100):
                yield harness
        finally:
            stop.set()
            if engine is not None:
                await engine
            await env.shutdown()


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


async def wait_for(probe: Callable[[], Awaitable[bool]], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not await probe():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark condition not reached")
        await asyncio.sleep(0.2)


ROWS = "BENCH_ROWS"
"""A file each printed figure is also appended to, as a JSON line, when set: how bench.report gathers the
figures of the benchmarks it runs into one table."""


def row(what: str, engine: str, raw: str, note: str = "") -> None:
    print(f"{what:<46} {engine:>14} {raw:>14}   {note}", flush=True)
    record(what, engine, raw, note)


def record(what: str, engine: str, raw: str, note: str = "") -> None:
    if path := os.environ.get(ROWS):
        with open(path, "a") as rows:
            rows.write(json.dumps({"what": what, "engine": engine, "raw": raw, "note": note}) + "\n")


def header() -> None:
    print(f"{'':<46} {'engine':>14} {'raw Temporal':>14}", flush=True)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def this_pid() -> int:
    return os.getpid()
