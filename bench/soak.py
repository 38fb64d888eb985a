"""Soak on PostgreSQL: N skills firing every minute for M minutes, served by W worker processes on one store.

A throwaway PostgreSQL cluster (tests/postgres.py: initdb + pg_ctl), one dev server, W real `python -m worker`
processes on one task queue and one database, N Direct-tier skills registered in bulk (one MCP tool call
each, cron every minute). After the window and a drain, from the store and from Temporal's visibility:

- lost fires: a (skill, scheduled minute) with no run record and no recorded skip;
- duplicates: a (skill, scheduled minute) with two run records, or two SkillRun executions;
- lag from the scheduled second to the run's start and close, p50/p95/max;
- each worker's RSS, sampled every 5 s, peak.

    .venv/bin/python -m bench.soak                                  # 1,000 skills x 10 minutes, 2 workers
    .venv/bin/python -m bench.soak --skills 200 --minutes 3         # a shorter look
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from adapters.store import Store
from bench.aligned import DRAIN, listed, sleep_until, window
from bench.harness import percentile, rss_mib
from client import SkillsClient
from client.temporal_cli import temporal_binary
from search_attributes import SKILL_AGENT, SKILL_NAME, SKILL_TIER
from skills.naming import SKILL_RUN
from starter import exit_process
from tests.postgres import running_cluster

ROOT = Path(__file__).resolve().parent.parent
QUEUE = "bench-soak"


def start_workers(count: int, address: str, database_url: str, data: Path,
                  queue: str = QUEUE) -> list[subprocess.Popen[bytes]]:
    """``count`` real workers (``python -m worker``) on ``queue`` and one store, each with a data folder and a log
    (``worker.log``) of its own under ``data``, and no skill folder to sync."""
    workers = []
    for i in range(count):
        folder = data / f"worker-{i}"
        folder.mkdir()
        env = {**os.environ, "TEMPORAL_ADDRESS": address, "SKILLS_TASK_QUEUE": queue, "SKILLS_DATABASE_URL": database_url,
               "SKILLS_DATA_DIR": str(folder), "SKILLS_TIMEZONE": "UTC", "SKILLS_HEALTH_PORT": "0",
               "SKILLS_BUNDLED_SKILLS_DIR": str(folder / "none"), "SKILLS_USER_SKILLS_DIR": str(folder / "none"),
               "SKILLS_PROJECT_SKILLS_DIR": str(folder / "none"), "SKILLS_LOG_LEVEL": "WARNING"}
        with open(folder / "worker.log", "ab") as log:
            workers.append(subprocess.Popen([sys.executable, "-m", "worker"], cwd=ROOT, env=env, stdout=log, stderr=log))
    return workers


async def sample_rss(workers: list[subprocess.Popen[bytes]], peaks: dict[int, float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        for w in workers:
            if w.poll() is None:
                peaks[w.pid] = max(peaks.get(w.pid, 0.0), rss_mib(w.pid))
        try:
            await asyncio.wait_for(stop.wait(), 5)
        except TimeoutError:
            pass


async def main(n: int, minutes: int, worker_count: int) -> None:
    with running_cluster() as cluster, tempfile.TemporaryDirectory(prefix="skills-soak-") as tmp:
        database_url = cluster.database()
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_binary(), data_converter=pydantic_data_converter,
            search_attributes=[SKILL_NAME, SKILL_AGENT, SKILL_TIER],
            dev_server_extra_args=["--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"])
        address = env.client.service_client.config.target_host
        workers = start_workers(worker_count, address, database_url, Path(tmp))
        peaks: dict[int, float] = {}
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample_rss(workers, peaks, stop))
        try:
            skills = SkillsClient(env.client, QUEUE)
            began = time.monotonic()
            result = await skills.register_many([
                {"name": f"soak {i}", "instructions": "soak", "schedule": "* * * * *", "notify_on_completion": False,
                 "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": f"soak {i}"}}]}
                for i in range(n)])
            assert not result.refused, result.refused[:3]
            registered = time.monotonic() - began
            times = window(minutes)
            print(f"{n} skills registered in {registered:.1f} s on {worker_count} workers; firing "
                  f"{times[0]:%H:%M}..{times[-1]:%H:%M} UTC", flush=True)
            await sleep_until(times[-1])
            query = f"WorkflowType = '{SKILL_RUN}' AND SkillName STARTS_WITH 'soak'"
            deadline = time.monotonic() + DRAIN * 2
            runs = await listed(env.client, query, times)
            while len(runs) < n * minutes and time.monotonic() < deadline:
                await asyncio.sleep(5)
                runs = await listed(env.client, query, times)
            store = Store.open(database_url, schedule_prefix=QUEUE)
            ids = {item.skill_id for item in result.items}
            window_runs = [r for r in store.runs.list_runs(limit=20 * n * minutes)
                           if r.skill_id in ids and r.scheduled_at is not None and times[0] <= r.scheduled_at <= times[-1]]
        finally:
            stop.set()
            await sampler
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(timeout=60)
            await env.shutdown()

    records = Counter((r.skill_id, r.scheduled_at) for r in window_runs)
    statuses = Counter(r.status for r in window_runs)
    executions = Counter(wid for wid, _, _, _ in runs)
    expected = n * minutes
    start, done = [r[2] for r in runs], [r[3] for r in runs]
    print(f"scheduled fires              {expected}  ({n} skills x {minutes} minutes)")
    print(f"run records                  {sum(records.values())}  by status {dict(statuses)}")
    print(f"lost (no record, no skip)    {expected - len(records)}")
    print(f"duplicate records            {sum(c - 1 for c in records.values())}")
    print(f"duplicate executions         {sum(c - 1 for c in executions.values())}")
    print(f"closed executions listed     {len(runs)}")
    print(f"lag to start p50/p95 (ms)    {percentile(start, .5):.0f}/{percentile(start, .95):.0f}")
    print(f"lag to done p50/p95/max (ms) {percentile(done, .5):.0f}/{percentile(done, .95):.0f}/{max(done, default=0):.0f}")
    print(f"worker RSS peak (MiB)        {', '.join(f'{v:.0f}' for v in peaks.values())}")
    print(f"measured at                  {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(main(args.skills, args.minutes, args.workers))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
