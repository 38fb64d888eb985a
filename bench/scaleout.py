"""Scale-out beside raw Temporal: 1, 2 and 4 worker processes on one task queue share an aligned burst.

For each worker count W, raw first, then the engine, each on a dev server of its own:

- raw: W processes of raw's worker (``python -m bench.raw``: the one-activity workflow), N schedules due the
  same second;
- the engine: a throwaway PostgreSQL database (tests/postgres.py), W real workers (``python -m worker``) on
  one task queue and that one store, N Direct-tier skills registered in bulk (one MCP tool call each), due
  the same second.

The burst starts only once the server sees W distinct pollers on the queue. Per side, from the fires of the
window (bench.aligned's accounting): the throughput in the burst, the lag to done (p50/p95), the fires not
accounted for, the duplicates (for the engine, two run records of one skill and minute), and for the engine
the ERROR lines in the workers' logs (a store conflict would be one). Then each W's throughput over W=1's, for
both sides: what a second worker buys. All workers share this machine's cores with the dev server and
PostgreSQL, so on a small machine the ratio says what the CPU allows, not what separate machines would.

    .venv/bin/python -m bench.scaleout [--n 1000] [--workers 1,2,4] [--minutes 1]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from adapters.store import Store
from bench.aligned import (
    CRON,
    END_AFTER,
    REGISTERING,
    drain,
    figures,
    listed,
    ready,
    skipped,
    still_open,
    window,
)
from bench.aligned import raw_side as aligned_raw_side
from bench.harness import RAW_QUEUE, header, row, started, wait_for
from bench.soak import start_workers
from client import SkillsClient
from client.codec import data_converter
from client.temporal_cli import temporal_binary
from search_attributes import SKILL_AGENT, SKILL_NAME, SKILL_TIER
from skills.naming import SKILL_RUN
from starter import exit_process
from tests.postgres import running_cluster

QUEUE = "bench-scaleout"
POLLERS_WAIT = 120.0
"""Seconds the workers are given to start and poll."""


async def pollers(client: Client, queue: str) -> int:
    """Distinct worker identities polling ``queue`` for workflow tasks, as the server sees them."""
    answer = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    return len({p.identity for p in answer.pollers})


async def until_polling(client: Client, queue: str, count: int, processes: list[subprocess.Popen[bytes]]) -> None:
    """Wait until the server sees ``count`` workers poll ``queue``; a worker that exits first ends the benchmark."""

    async def polling() -> bool:
        if dead := [p.args for p in processes if p.poll() is not None]:
            raise SystemExit(f"a worker exited before it polled: {dead}")
        return await pollers(client, queue) >= count

    await wait_for(polling, POLLERS_WAIT)


def start_raw_workers(count: int, address: str) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-m", "bench.raw", address, RAW_QUEUE]) for _ in range(count)]


def log_errors(data: Path) -> int:
    """ERROR records and tracebacks in the logs bench.soak's workers write under ``data``."""
    return sum(line.count(" ERROR ") + line.count("Traceback")
               for log in data.glob("worker-*/worker.log") for line in log.read_text(errors="replace").splitlines())


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for p in processes:
        p.terminate()
    for p in processes:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()


async def raw_side(n: int, workers: int, minutes: int) -> dict[str, float]:
    async with started(worker_in_process=False, raw_in_process=False) as h:
        address = h.client.service_client.config.target_host
        processes = start_raw_workers(workers, address)
        try:
            await until_polling(h.client, RAW_QUEUE, workers, processes)
            return await aligned_raw_side(h.client, h.settings, n, minutes, spread=False)
        finally:
            stop(processes)


async def engine_side(n: int, workers: int, minutes: int) -> dict[str, float]:
    with running_cluster() as cluster, tempfile.TemporaryDirectory(prefix="skills-scaleout-") as tmp:
        database_url = cluster.database()
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_binary(), data_converter=data_converter(None),
            search_attributes=[SKILL_NAME, SKILL_AGENT, SKILL_TIER],
            dev_server_extra_args=["--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"])
        address = env.client.service_client.config.target_host
        processes = start_workers(workers, address, database_url, Path(tmp), queue=QUEUE)
        try:
            await until_polling(env.client, QUEUE, workers, processes)
            skills = SkillsClient(env.client, QUEUE)
            times = window(minutes, ready_margin=10 + REGISTERING * n)
            result = await skills.register_many([
                {"name": f"bench scaleout {i}", "instructions": "bench", "schedule": CRON,
                 "notify_on_completion": False, "end_at": (times[-1] + END_AFTER).isoformat(), "spread": False,
                 "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": f"scaleout {i}"}}]}
                for i in range(n)])
            assert not result.refused, result.refused[:3]
            ready(times)
            query = f"WorkflowType = '{SKILL_RUN}' AND SkillName STARTS_WITH 'bench scaleout'"
            cpu = await drain(env.client, query, times, n * minutes)
            runs = await listed(env.client, query, times)
            late = await still_open(env.client, query, times)
            skips, silent = await skipped(env.client, [i.schedule_id for i in result.items if i.schedule_id])
            ids = {item.skill_id for item in result.items}
            store = Store.open(database_url, schedule_prefix=QUEUE)
            records = Counter((r.skill_id, r.scheduled_at) for r in store.runs.list_runs(limit=10 * n * minutes)
                              if r.skill_id in ids and r.scheduled_at is not None
                              and times[0] <= r.scheduled_at <= times[-1])
            found = figures(runs, n * minutes, sum(c - 1 for c in records.values()), cpu, late, skips, silent)
        finally:
            stop(processes)
            await env.shutdown()
        found["errors"] = log_errors(Path(tmp))
        return found


async def main(n: int, counts: list[int], minutes: int) -> None:
    results: dict[int, tuple[dict[str, float], dict[str, float]]] = {}
    for workers in counts:
        raw = await raw_side(n, workers, minutes)
        engine = await engine_side(n, workers, minutes)
        results[workers] = (engine, raw)
        print(f"W={workers}: engine {engine['rate']:.1f} fires/s, raw {raw['rate']:.1f}", flush=True)
    header()
    first_engine, first_raw = results[counts[0]]
    for workers, (engine, raw) in results.items():
        at = f"N={n}, {workers} worker{'s' if workers > 1 else ''}"
        row(f"{at}: runs closed / expected", f"{engine['runs']}/{engine['expected']}",
            f"{raw['runs']}/{raw['expected']}", f"{minutes} fire minute(s), exact; engine on PostgreSQL")
        row(f"{at}: throughput in the burst (fires/s)", f"{engine['rate']:.1f}", f"{raw['rate']:.1f}",
            f"over {counts[0]} worker(s): engine {engine['rate'] / max(1e-9, first_engine['rate']):.2f}x, "
            f"raw {raw['rate'] / max(1e-9, first_raw['rate']):.2f}x")
        row(f"{at}: lag to done p50/p95 (ms)", f"{engine['done50']:.0f}/{engine['done95']:.0f}",
            f"{raw['done50']:.0f}/{raw['done95']:.0f}", f"p95 ratio {engine['done95'] / max(1e-9, raw['done95']):.2f}")
        row(f"{at}: unaccounted / duplicate / late", f"{engine['unaccounted']}/{engine['dup']}/{engine['late']}",
            f"{raw['unaccounted']}/{raw['dup']}/{raw['late']}",
            "neither closed, open nor skipped; two runs of one skill and minute; still open after the drain")
        row(f"{at}: ERROR lines in the workers' logs", f"{engine['errors']:.0f}", "", "a store conflict would be one")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated")
    parser.add_argument("--minutes", type=int, default=1)
    args = parser.parse_args()
    asyncio.run(main(args.n, [int(w) for w in args.workers.split(",")], args.minutes))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
