"""Registration beside raw Temporal: skills registered per second (each a RegisterSkill workflow:
normalize and validate against the live catalog, store, create the schedule) against raw
`create_schedule` calls, sequential and from 10 clients; the CPU each costs the dev server and this
process (the worker's and the client's); the floor of a registration's design (a workflow of one no-op
local activity, its rate and CPU) beside two other designs' (started by Update-with-Start; an update of one
running workflow); one registration's history beside a raw workflow's; and a
bulk registration of 1,000 skills (`SkillsClient.register_many`, what `skills register FOLDER` calls)
against 1,000 raw creates 10 at a time.

    .venv/bin/python -m bench.register [--n 40] [--bulk 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleSpec,
    WithStartWorkflowOperation,
)
from temporalio.common import WorkflowIDConflictPolicy

from bench.engine import Cpu, cpu_now
from bench.harness import RAW_QUEUE, Harness, header, row, started
from starter import exit_process


def skill(i: int, tag: str) -> dict[str, Any]:
    return {"name": f"bench reg {tag} {i}", "instructions": "bench", "schedule": "0 9 * * *",
            "notify_on_completion": False,
            "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "x"}}]}


def raw_create(client: Client, i: int, tag: str) -> Awaitable[Any]:
    schedule_id = f"bench-raw-reg-{tag}-{i}-{uuid.uuid4().hex[:6]}"
    return client.create_schedule(schedule_id, Schedule(
        action=ScheduleActionStartWorkflow("BenchRaw", "x", id=schedule_id, task_queue=RAW_QUEUE),
        spec=ScheduleSpec(cron_expressions=["0 9 * * *"])))


def raw_local(client: Client) -> Awaitable[Any]:
    return client.execute_workflow("BenchRawLocal", "x", id=f"bench-raw-local-{uuid.uuid4().hex[:8]}",
                                   task_queue=RAW_QUEUE)


def raw_update_with_start(client: Client) -> Awaitable[Any]:
    start = WithStartWorkflowOperation("BenchRawUpdateLocal", "x", id=f"bench-raw-uws-{uuid.uuid4().hex[:8]}",
                                       task_queue=RAW_QUEUE, id_conflict_policy=WorkflowIDConflictPolicy.FAIL)
    return client.execute_update_with_start_workflow("answer", "x", start_workflow_operation=start)


async def floors(client: Client, n: int) -> None:
    """The floor of a registration's design beside raw's create, each a workflow's cost with one no-op local
    activity (before a registration's own work and its schedule's create): a workflow started and waited for
    (the design), started by Update-with-Start, and an update of one running workflow."""
    entity = await client.start_workflow("BenchRawEntityLocal", id=f"bench-raw-entity-{uuid.uuid4().hex[:8]}",
                                         task_queue=RAW_QUEUE)
    designs: list[tuple[str, Callable[[int], Awaitable[Any]]]] = [
        ("a workflow started, its result awaited", lambda i: raw_local(client)),
        ("started by Update-with-Start", lambda i: raw_update_with_start(client)),
        ("an update of one running workflow", lambda i: entity.execute_update("answer", "x")),
    ]
    for label, make in designs:
        rates = [await rate(make, n, concurrency) for concurrency in (1, 10)]
        cpu = await cpu_per_item(make, n)
        raw = [await rate(lambda i, c=c: raw_create(client, i, f"floor{c}"), n, c) for c in (1, 10)]
        row(f"  floor, {label} ({n}): per second, sequential; 10 at a time",
            f"{rates[0]:.1f}; {rates[1]:.1f}", f"{raw[0]:.1f}; {raw[1]:.1f}",
            f"ratios {rates[0] / raw[0]:.2f}; {rates[1] / raw[1]:.2f}; CPU per item, sequential: server "
            f"{cpu.server:.1f} + this process {cpu.worker:.1f} ms; raw: create_schedule, measured just after")
    await entity.signal("end")


async def rate(make: Callable[[int], Awaitable[Any]], n: int, concurrency: int) -> float:
    started_at = time.perf_counter()
    for batch in range(0, n, concurrency):
        await asyncio.gather(*(make(i) for i in range(batch, min(n, batch + concurrency))))
    return n / (time.perf_counter() - started_at)


async def cpu_per_item(make: Callable[[int], Awaitable[Any]], n: int) -> Cpu:
    """CPU per item, in ms, of ``n`` sequential ``make`` calls and one second after them (a schedule's
    create goes on in the server after its answer: its scheduler workflow starts), by process."""
    before = cpu_now()
    for i in range(n):
        await make(i)
    await asyncio.sleep(1)  # the same second for both sides: the server's idle CPU in it is in both
    return (cpu_now() - before).per(n)


async def main(n: int, bulk: int) -> None:
    async with started() as h:
        header()
        for concurrency, label in ((1, "sequential"), (10, "10 clients")):
            engine = await rate(lambda i, c=concurrency: h.skills.register(skill(i, f"c{c}")), n, concurrency)
            raw = await rate(lambda i, c=concurrency: raw_create(h.client, i, f"c{c}"), n, concurrency)
            row(f"registrations per second, {label} ({n})", f"{engine:.1f}", f"{raw:.1f}",
                f"ratio {engine / raw:.2f} (target >= 0.5)")
        engine_cpu = await cpu_per_item(lambda i: h.skills.register(skill(i, "cpu")), n)
        raw_cpu = await cpu_per_item(lambda i: raw_create(h.client, i, "cpu"), n)
        row(f"CPU per registration, ms ({n}, sequential)", f"{engine_cpu.server + engine_cpu.worker:.1f}",
            f"{raw_cpu.server + raw_cpu.worker:.1f}",
            f"engine: server {engine_cpu.server:.1f} + this process (worker, client) {engine_cpu.worker:.1f}; "
            f"raw: server {raw_cpu.server:.1f} + client {raw_cpu.worker:.1f}; on 2 cores, one at a time")
        await floors(h.client, n)
        await phases(h)
        if bulk:
            started_at = time.perf_counter()
            result = await h.skills.register_many([skill(i, "bulk") for i in range(bulk)])
            engine_s = time.perf_counter() - started_at
            assert not result.refused, result.refused[:3]
            started_at = time.perf_counter()
            await rate(lambda i: raw_create(h.client, i, "bulk"), bulk, 10)
            raw_s = time.perf_counter() - started_at
            row(f"bulk registration of {bulk} skills (s)", f"{engine_s:.1f}", f"{raw_s:.1f}",
                f"{bulk / engine_s:.0f}/s vs {bulk / raw_s:.0f}/s, ratio {raw_s / engine_s:.2f}; target < 30 s; "
                "raw: create_schedule 10 at a time")


async def phases(h: Harness) -> None:
    """Where one registration's time goes: its RegisterSkill history's events, from the start, beside a
    raw workflow with one activity (what every workflow pays: the dispatch of its workflow tasks)."""
    from temporalio.api.enums.v1 import EventType

    async def timeline(handle: Any) -> str:
        events = (await handle.fetch_history()).events
        start = events[0].event_time.ToDatetime()
        return ", ".join(f"{EventType.Name(e.event_type).removeprefix('EVENT_TYPE_').lower()} "
                         f"{(e.event_time.ToDatetime() - start).total_seconds() * 1000:.0f}" for e in events[1:])

    await h.skills.register(skill(0, "phases"))
    registered = [w async for w in h.client.list_workflows("WorkflowType = 'RegisterSkill'", limit=1)][0]
    raw = await h.client.start_workflow("BenchRaw", "x", id=f"bench-raw-phases-{uuid.uuid4().hex[:6]}",
                                        task_queue=RAW_QUEUE)
    await raw.result()
    print("one RegisterSkill, ms from its start:", await timeline(
        h.client.get_workflow_handle(registered.id, run_id=registered.run_id)))
    print("one raw workflow (one activity), ms:  ", await timeline(raw))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--bulk", type=int, default=1000)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.bulk))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
