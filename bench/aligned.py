"""Aligned fires beside raw Temporal: N skills due the same second, cron every minute, for a few fire minutes.

Raw first (N schedules, cron `* * * * *`, a workflow with one no-op activity each), then the engine (N
Direct-tier skills registered in bulk, one MCP tool call each), each alone on the machine, on one dev
server. For each: the lag from the scheduled second to the workflow's start and to its close (p50, p95,
max), the fires that happened, the lost ones (a scheduled time with no run: for the engine, no run record
and no recorded skip), the duplicates (two runs for one skill and one scheduled time), the throughput in
the burst and the CPU per fire of the dev server and of this process (the workers), from just before the
first fire until the runs closed.

``--spread``: both sides with the default spread (``skills.when.spread``: 6 s for a cron every minute), the
engine's as a new skill takes it, raw's as the same ``jitter`` on its spec. Lags are from the whole minute,
as the owner reads the time (Temporal records a fire's own time, not the one it drew), so they include the
spread. Without it both fire exactly (the engine's skills say ``spread: false``).

    .venv/bin/python -m bench.aligned --n 100 [--minutes 2] [--spread]     # then --n 300, --n 1000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

from temporalio.client import Client, Schedule, ScheduleActionStartWorkflow, ScheduleSpec

from adapters.store import Store
from bench.engine import Cpu, cpu_now
from bench.harness import RAW_QUEUE, header, percentile, row, started
from search_attributes import SCHEDULED_START_TIME
from skills.naming import SKILL_RUN
from skills.spec.models import TriggerConfig
from skills.when.spread import default_spread

CRON = "* * * * *"
SPREAD = timedelta(seconds=default_spread(TriggerConfig(schedule=CRON, timezone="UTC")))

DRAIN = 90.0
"""Seconds after the last fire minute to wait for every run to close."""


def window(minutes: int, ready_margin: float = 10.0) -> list[datetime]:
    """The next ``minutes`` whole minutes, the first at least ``ready_margin`` seconds away."""
    now = datetime.now(UTC)
    first = (now + timedelta(seconds=ready_margin + 60)).replace(second=0, microsecond=0)
    return [first + timedelta(minutes=i) for i in range(minutes)]


async def sleep_until(moment: datetime) -> None:
    await asyncio.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()))


async def listed(client: Client, query: str, times: list[datetime]) -> list[tuple[str, datetime, float, float]]:
    """(workflow id, scheduled time, lag to start, lag to close) of each closed run of the window's minutes
    (filtered here, not in the visibility query, so its time format cannot drop any). The scheduled time
    Temporal records is the fire's own, whatever its jitter: a spread fire's lags include its spread."""
    found = []
    wanted = set(times)
    async for w in client.list_workflows(f"{query} AND ExecutionStatus != 'Running'"):
        scheduled = w.typed_search_attributes.get(SCHEDULED_START_TIME)
        if scheduled is None or w.close_time is None or scheduled.replace(microsecond=0) not in wanted:
            continue
        found.append((w.id, scheduled, (w.start_time - scheduled).total_seconds() * 1000,
                      (w.close_time - scheduled).total_seconds() * 1000))
    return found


async def drain(client: Client, query: str, times: list[datetime], expected: int) -> Cpu:
    """Wait for the window's runs to close (at most ``DRAIN`` seconds after its last minute); the CPU every
    process spent from just before the first fire until then."""
    await sleep_until(times[0] - timedelta(seconds=2))
    before = cpu_now()
    await sleep_until(times[-1])
    deadline = time.monotonic() + DRAIN
    for _ in range(int(DRAIN)):
        if time.monotonic() > deadline or len(await listed(client, query, times)) >= expected:
            break
        await asyncio.sleep(2)
    return cpu_now() - before


async def raw_side(client: Client, n: int, minutes: int, spread: bool) -> dict[str, float]:
    ids = [f"bench-aligned-raw-{i}-{uuid.uuid4().hex[:6]}" for i in range(n)]
    gate = asyncio.Semaphore(10)

    async def create(schedule_id: str) -> None:
        async with gate:
            await client.create_schedule(schedule_id, Schedule(
                action=ScheduleActionStartWorkflow("BenchRaw", "x", id=schedule_id, task_queue=RAW_QUEUE),
                spec=ScheduleSpec(cron_expressions=[CRON], jitter=SPREAD if spread else None)))

    await asyncio.gather(*(create(i) for i in ids))
    times = window(minutes)
    query = "WorkflowType = 'BenchRaw' AND WorkflowId STARTS_WITH 'bench-aligned-raw-'"
    cpu = await drain(client, query, times, n * minutes)
    runs = await listed(client, query, times)

    async def delete(schedule_id: str) -> None:
        async with gate:
            await client.get_schedule_handle(schedule_id).delete()

    await asyncio.gather(*(delete(i) for i in ids))
    # A schedule's workflow id is its action's id and the scheduled time: one per schedule and time.
    pairs = Counter(wid for wid, _, _, _ in runs)
    return figures(runs, n * minutes, len(pairs), sum(c - 1 for c in pairs.values()), cpu)


async def engine_side(client: Client, h: object, n: int, minutes: int, spread: bool) -> dict[str, float]:
    skills = h.skills  # type: ignore[attr-defined]
    settings = h.settings  # type: ignore[attr-defined]
    result = await skills.register_many([
        {"name": f"bench aligned {i}", "instructions": "bench", "schedule": CRON, "notify_on_completion": False,
         "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": f"aligned {i}"}}],
         **({} if spread else {"spread": False})}
        for i in range(n)])
    assert not result.refused, result.refused[:3]
    times = window(minutes)
    query = f"WorkflowType = '{SKILL_RUN}' AND SkillName STARTS_WITH 'bench aligned'"
    cpu = await drain(client, query, times, n * minutes)
    runs = await listed(client, query, times)
    ids = {item.skill_id for item in result.items}
    store = Store.open(settings.store_url, schedule_prefix=settings.task_queue)
    records = Counter((r.skill_id, r.scheduled_at) for r in store.runs.list_runs(limit=10 * n * minutes)
                      if r.skill_id in ids and r.scheduled_at is not None and times[0] <= r.scheduled_at <= times[-1])
    return figures(runs, n * minutes, len(records), sum(c - 1 for c in records.values()), cpu)


def figures(runs: list[tuple[str, datetime, float, float]], expected: int, recorded: int, dup: int,
            cpu: Cpu) -> dict[str, float]:
    start, done = [r[2] for r in runs], [r[3] for r in runs]
    # Throughput: each fire minute's closed runs over the seconds from that minute to its last close.
    by_minute: dict[datetime, list[float]] = {}
    for _, scheduled, _, lag in runs:
        by_minute.setdefault(scheduled.replace(second=0, microsecond=0), []).append(lag)
    rates = [len(lags) / (max(lags) / 1000) for lags in by_minute.values() if max(lags) > 0]
    per_fire = cpu.per(max(1, len(runs)))
    return {"runs": len(runs), "expected": expected, "lost": expected - recorded, "dup": dup,
            "start50": percentile(start, .5), "start95": percentile(start, .95),
            "done50": percentile(done, .5), "done95": percentile(done, .95), "done_max": max(done, default=0),
            "rate": sum(rates) / len(rates) if rates else 0.0,
            "cpu_server": per_fire.server, "cpu_worker": per_fire.worker + per_fire.mcp}


async def main(n: int, minutes: int, spread: bool) -> None:
    async with started() as h:
        raw = await raw_side(h.client, n, minutes, spread)
        engine = await engine_side(h.client, h, n, minutes, spread)
        header()
        how = f"spread up to {SPREAD.total_seconds():g} s" if spread else "exact"
        row(f"N={n}: runs closed / expected", f"{engine['runs']}/{engine['expected']}",
            f"{raw['runs']}/{raw['expected']}", f"{minutes} fire minutes, cron every minute, {how}")
        row(f"N={n}: lag to start p50/p95 (ms)", f"{engine['start50']:.0f}/{engine['start95']:.0f}",
            f"{raw['start50']:.0f}/{raw['start95']:.0f}", "from the whole minute")
        row(f"N={n}: lag to done p50/p95/max (ms)",
            f"{engine['done50']:.0f}/{engine['done95']:.0f}/{engine['done_max']:.0f}",
            f"{raw['done50']:.0f}/{raw['done95']:.0f}/{raw['done_max']:.0f}",
            f"p95 ratio {engine['done95'] / raw['done95']:.2f} (target <= 1.2)")
        row(f"N={n}: lost / duplicate fires", f"{engine['lost']}/{engine['dup']}", f"{raw['lost']}/{raw['dup']}",
            "lost: a scheduled time with no run (engine: no run record, no recorded skip)")
        row(f"N={n}: throughput in the burst (fires/s)", f"{engine['rate']:.1f}", f"{raw['rate']:.1f}",
            "a fire minute's closed runs over the seconds to its last close, mean of the minutes")
        row(f"N={n}: CPU per closed fire, server + workers (ms)",
            f"{engine['cpu_server']:.1f} + {engine['cpu_worker']:.1f}", f"{raw['cpu_server']:.1f} + {raw['cpu_worker']:.1f}",
            f"ratio {(engine['cpu_server'] + engine['cpu_worker']) / max(1e-9, raw['cpu_server'] + raw['cpu_worker']):.2f}; "
            "the dev server; this process (both workers, the outbox in the engine's, the client)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--minutes", type=int, default=2)
    parser.add_argument("--spread", action="store_true",
                        help="both sides with the default spread of a cron every minute, not exact")
    args = parser.parse_args()
    asyncio.run(main(args.n, args.minutes, args.spread))
    os._exit(0)  # temporalio/sdk-python#300: skip teardown once the figures are out
