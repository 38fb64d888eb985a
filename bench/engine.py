"""The engine beside a raw Temporal baseline, on one dev server, in one run.

Figures printed (see docs/performance.md for the numbers we measured):

- per-fire CPU: N fires of a Direct-tier skill (each: load skill + open run, one MCP
  tool call, record run) against N fires of a raw schedule whose workflow runs one
  no-op activity. CPU counts every process a fire costs: the dev server's, this
  process's (workflows, activities, SDK core) and the MCP servers' it started;
- fire lag at 10 aligned skills: 10 one-shot skills due at the same second; lag from
  the scheduled second to the run's start, and to the tool call done, against 10
  raw schedules due at the same second;
- registration rate: skills registered per second (normalize, validate, store,
  create schedule: a RegisterSkill workflow each), sequential and 10 at a time,
  against raw `create_schedule` calls;
- warm tool-call latency: one `outbox_send_message` on the worker's warm MCP
  session, through the hub and as a whole `call_tool` activity;
- the garbage collector's CPU per fire in this process, and its full passes, during the
  per-fire CPU's fires (raw's beside the engine's heap: both workers run in this process).

    .venv/bin/python -m bench.engine [--fires 40] [--registrations 40] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleCalendarSpec,
    ScheduleRange,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import worker
from bench.harness import record
from bench.raw import RawOneActivity, noop
from client import SkillsClient
from client.codec import data_converter
from client.temporal_cli import temporal_binary
from config.settings import Settings
from search_attributes import SCHEDULED_START_TIME, SKILL_AGENT, SKILL_NAME, SKILL_TIER
from skills.messages.run import SkillRunInput
from skills.naming import CALL_TOOL, SKILL_RUN
from starter import exit_process

RAW_QUEUE = "bench-raw"


@dataclass
class Figures:
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)

    def add(self, what: str, engine: str, raw: str, note: str = "") -> None:
        self.rows.append((what, engine, raw, note))
        print(f"{what:<44} {engine:>16} {raw:>16}   {note}", flush=True)
        record(what, engine, raw, note)


@dataclass
class Cpu:
    """CPU seconds (user + system) of the processes a fire costs: this process (the worker's workflows and
    activities, the SDK core, the client), its MCP server children, and the Temporal dev server."""

    worker: float
    mcp: float
    server: float

    @property
    def total(self) -> float:
        return self.worker + self.mcp + self.server

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.worker - other.worker, self.mcp - other.mcp, self.server - other.server)

    def per(self, n: int) -> Cpu:
        return Cpu(self.worker / n * 1000, self.mcp / n * 1000, self.server / n * 1000)

    def parts(self) -> str:
        return f"server {self.server:.1f} + worker {self.worker:.1f} + mcp {self.mcp:.1f}"


class GcMeter:
    """The garbage collector's passes in this process, by generation, and the CPU they took (a ``gc`` callback,
    the collecting thread's CPU). A full pass (generation 2) walks every tracked object the process holds
    (``gc.freeze``'s excepted: the worker freezes none; docs/performance.md, "The garbage collector")."""

    def __init__(self) -> None:
        self.passes = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._began = 0.0

    def __enter__(self) -> GcMeter:
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._note)

    def _note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.thread_time()
        else:
            self.passes[info["generation"]] += 1
            self.seconds[info["generation"]] += time.thread_time() - self._began

    def per(self, fires: int) -> str:
        full = f"{self.seconds[2] / self.passes[2] * 1000:.0f} ms each" if self.passes[2] else "none"
        return (f"{sum(self.seconds) / fires * 1000:.2f} ms a fire; full passes {self.passes[2]} ({full}), "
                f"young {self.passes[0]} + {self.passes[1]}")


def _descendants(root: int) -> list[tuple[int, str, float]]:
    """(pid, command line, CPU seconds) of every process below ``root``."""
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, str, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_text(errors="ignore")
        except OSError:
            continue
        # After the command name: state ppid ... utime(12) stime(13) counting from state as 1.
        table[int(entry.name)] = (int(fields[1]), cmdline, (int(fields[11]) + int(fields[12])) / tick)
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, cmdline, cpu) in table.items():
            if ppid == parent:
                found.append((pid, cmdline, cpu))
                frontier.append(pid)
    return found


def cpu_now() -> Cpu:
    worker, mcp, server = time.process_time(), 0.0, 0.0
    for _pid, cmdline, cpu in _descendants(os.getpid()):
        if "temporal" in cmdline and "server" in cmdline:
            server += cpu
        else:
            mcp += cpu
    return Cpu(worker, mcp, server)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def wait_for(probe: Callable[[], Awaitable[bool]], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not await probe():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark condition not reached")
        await asyncio.sleep(0.05)


async def count(client: Client, query: str) -> int:
    return (await client.count_workflows(query)).count


# --- per-fire CPU -------------------------------------------------------------------------


async def per_fire_cpu(client: Client, skills: SkillsClient, settings: Settings, fires: int,
                       figures: Figures) -> None:
    """Fires started the way a schedule starts them (a schedule's triggers within one second
    would share a workflow id), ten at a time, so only the fire's own work is measured."""
    result = await skills.register(
        {"name": "bench cpu", "instructions": "bench", "schedule": "0 0 1 1 *", "notify_on_completion": False,
         "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "bench"}}]}
    )
    assert result.skill is not None

    async def measure(start_one: Callable[[int], Awaitable[Any]], meter: GcMeter) -> Cpu:
        started = cpu_now()
        with meter:
            for batch in range(0, fires, 10):
                handles = await asyncio.gather(*(start_one(i) for i in range(batch, min(fires, batch + 10))))
                await asyncio.gather(*(h.result() for h in handles))
        return (cpu_now() - started).per(fires)

    skill_id = result.skill.id
    engine_gc, raw_gc = GcMeter(), GcMeter()
    engine = await measure(lambda i: client.start_workflow(
        SKILL_RUN, SkillRunInput(skill_id=skill_id), id=f"bench-cpu-{i}-{uuid.uuid4().hex[:6]}",
        task_queue=settings.task_queue), engine_gc)
    raw = await measure(lambda i: client.start_workflow(
        "BenchRaw", "x", id=f"bench-raw-cpu-{i}-{uuid.uuid4().hex[:6]}", task_queue=RAW_QUEUE), raw_gc)
    figures.add(f"CPU per fire, all processes (ms, {fires})", f"{engine.total:.1f}", f"{raw.total:.1f}",
                f"ratio {engine.total / raw.total:.2f}; engine {engine.parts()}; raw {raw.parts()}")
    figures.add("CPU per fire, without the dev server (ms)", f"{engine.worker + engine.mcp:.1f}",
                f"{raw.worker + raw.mcp:.1f}", "the figure measured before the server was counted")
    figures.add("garbage collector's CPU per fire (ms)", f"{sum(engine_gc.seconds) / fires * 1000:.2f}",
                f"{sum(raw_gc.seconds) / fires * 1000:.2f}",
                f"engine {engine_gc.per(fires)}; raw {raw_gc.per(fires)} (raw's in this process, the engine's heap beside it)")


# --- fire lag -----------------------------------------------------------------------------


async def fire_lag(client: Client, skills: SkillsClient, settings: Settings, figures: Figures) -> None:
    # The raw group fires 15 s after the engine's, so neither competes with the other for the CPU.
    due = (datetime.now(UTC) + timedelta(seconds=20)).replace(microsecond=0)
    raw_due = due + timedelta(seconds=15)
    await asyncio.gather(*(
        skills.register({"name": f"bench lag {i}", "instructions": "bench", "at": due.isoformat(),
                         "notify_on_completion": False,
                         "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": f"lag {i}"}}]})
        for i in range(10)
    ))
    raw_ids = [f"bench-raw-lag-{i}-{uuid.uuid4().hex[:6]}" for i in range(10)]
    for raw_id in raw_ids:
        await client.create_schedule(
            raw_id,
            Schedule(
                action=ScheduleActionStartWorkflow("BenchRaw", "x", id=raw_id, task_queue=RAW_QUEUE),
                spec=ScheduleSpec(calendars=[ScheduleCalendarSpec(
                    second=[ScheduleRange(raw_due.second)], minute=[ScheduleRange(raw_due.minute)],
                    hour=[ScheduleRange(raw_due.hour)], day_of_month=[ScheduleRange(raw_due.day)],
                    month=[ScheduleRange(raw_due.month)], year=[ScheduleRange(raw_due.year)])]),
                state=ScheduleState(limited_actions=True, remaining_actions=1),
            ),
        )

    async def all_done() -> bool:
        runs = [r for r in await skills.runs(limit=200) if r.skill_name.startswith("bench lag")]
        raw = await count(client, "WorkflowType = 'BenchRaw' AND ExecutionStatus = 'Completed' "
                                  "AND WorkflowId STARTS_WITH 'bench-raw-lag'")
        return len(runs) == 10 and all(r.status == "success" for r in runs) and raw == 10

    await wait_for(all_done, timeout=120)
    async def lags(query: str) -> tuple[list[float], list[float]]:
        """From the scheduled second to the workflow's start and to its close, as Temporal recorded them."""
        start, done = [], []
        async for listed in client.list_workflows(query):
            scheduled = listed.typed_search_attributes.get(SCHEDULED_START_TIME)
            assert scheduled is not None and listed.close_time is not None
            start.append((listed.start_time - scheduled).total_seconds() * 1000)
            done.append((listed.close_time - scheduled).total_seconds() * 1000)
        return start, done

    start_lag, done_lag = await lags(f"WorkflowType = '{SKILL_RUN}' AND SkillName STARTS_WITH 'bench lag'")
    raw_start, raw_done = await lags("WorkflowType = 'BenchRaw' AND WorkflowId STARTS_WITH 'bench-raw-lag'")
    figures.add("fire lag to run start, p50/max (ms)", f"{percentile(start_lag, .5):.0f}/{max(start_lag):.0f}",
                f"{percentile(raw_start, .5):.0f}/{max(raw_start):.0f}", "10 schedules due at the same second")
    figures.add("fire lag to work done, p50/max (ms)", f"{percentile(done_lag, .5):.0f}/{max(done_lag):.0f}",
                f"{percentile(raw_done, .5):.0f}/{max(raw_done):.0f}",
                f"ratio p50 {percentile(done_lag, .5) / percentile(raw_done, .5):.2f}; engine: tool call made "
                "and run recorded")
    for raw_id in raw_ids:
        await client.get_schedule_handle(raw_id).delete()


# --- registration rate --------------------------------------------------------------------


async def registration_rate(client: Client, skills: SkillsClient, n: int, figures: Figures) -> None:
    def skill(i: int, tag: str) -> dict[str, Any]:
        return {"name": f"bench reg {tag} {i}", "instructions": "bench", "schedule": "0 9 * * *",
                "notify_on_completion": False,
                "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "x"}}]}

    def raw(i: int, tag: str) -> Awaitable[Any]:
        schedule_id = f"bench-raw-reg-{tag}-{i}-{uuid.uuid4().hex[:6]}"
        return client.create_schedule(schedule_id, Schedule(
            action=ScheduleActionStartWorkflow("BenchRaw", "x", id=schedule_id, task_queue=RAW_QUEUE),
            spec=ScheduleSpec(cron_expressions=["0 9 * * *"])))

    async def rate(make: Callable[[int], Awaitable[Any]], concurrency: int) -> float:
        started = time.perf_counter()
        for batch in range(0, n, concurrency):
            await asyncio.gather(*(make(i) for i in range(batch, min(n, batch + concurrency))))
        return n / (time.perf_counter() - started)

    seq = await rate(lambda i: skills.register(skill(i, "seq")), 1)
    raw_seq = await rate(lambda i: raw(i, "seq"), 1)
    par = await rate(lambda i: skills.register(skill(i, "par")), 10)
    raw_par = await rate(lambda i: raw(i, "par"), 10)
    figures.add(f"registrations per second, sequential ({n})", f"{seq:.1f}", f"{raw_seq:.1f}",
                f"ratio {seq / raw_seq:.2f}; engine: a RegisterSkill workflow each; raw: create_schedule")
    figures.add(f"registrations per second, 10 at a time ({n})", f"{par:.1f}", f"{raw_par:.1f}",
                f"ratio {par / raw_par:.2f}")


# --- warm tool call -----------------------------------------------------------------------


async def tool_latency(client: Client, settings: Settings, calls: int, figures: Figures) -> None:
    from adapters.mcp import ToolHub, outbox_server

    # The bundled outbox as the worker runs it: in this process (ToolHub.from_settings).
    async with ToolHub({"outbox": outbox_server(settings.outbox_path, in_process=True)}) as hub:
        await hub.call("outbox_send_message", {"message": "warm-up"}, timeout=30)
        samples = []
        for i in range(calls):
            started = time.perf_counter()
            await hub.call("outbox_send_message", {"message": f"bench {i}"}, timeout=30)
            samples.append((time.perf_counter() - started) * 1000)
    activity_samples = []
    for i in range(calls // 5):
        started = time.perf_counter()
        await client.execute_activity(
            # A client may start call_tool only for a read (activities/guard.py): the outbox's list.
            CALL_TOOL, {"tool": "outbox_list_messages", "arguments": {"limit": 1}, "step_id": f"bench-{i}"},
            id=f"bench-tool-{uuid.uuid4().hex}", task_queue=settings.task_queue,
            start_to_close_timeout=timedelta(seconds=30))
        activity_samples.append((time.perf_counter() - started) * 1000)
    figures.add("warm tool call, p50/p95 (ms)", f"{percentile(samples, .5):.1f}/{percentile(samples, .95):.1f}",
                "-", f"outbox_send_message, the outbox in the worker's process ({calls} calls)")
    figures.add("call_tool activity round trip, p50/p95 (ms)",
                f"{percentile(activity_samples, .5):.1f}/{percentile(activity_samples, .95):.1f}", "-",
                "client -> Temporal -> worker -> MCP -> back")


async def main(fires: int, registrations: int, calls: int, as_json: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="skills-bench-") as tmp:
        settings = Settings(task_queue="bench-engine", data_dir=Path(tmp), timezone="UTC", health_port=None)
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_binary(), data_converter=data_converter(None),
            search_attributes=[SKILL_NAME, SKILL_AGENT, SKILL_TIER],
            dev_server_extra_args=["--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=true"],
        )
        client = env.client
        stop, ready = asyncio.Event(), asyncio.Event()
        engine = asyncio.create_task(worker.run_worker(settings, client, stop, ready))
        await ready.wait()
        skills = SkillsClient(client, settings.task_queue)
        figures = Figures()
        print(f"{'':<44} {'engine':>16} {'raw Temporal':>16}", flush=True)
        async with Worker(client, task_queue=RAW_QUEUE, workflows=[RawOneActivity], activities=[noop]):
            await per_fire_cpu(client, skills, settings, fires, figures)
            await fire_lag(client, skills, settings, figures)
            await registration_rate(client, skills, registrations, figures)
            await tool_latency(client, settings, calls, figures)
        stop.set()
        await engine
        await env.shutdown()
        if as_json:
            print(json.dumps([dict(zip(("what", "engine", "raw", "note"), row, strict=True)) for row in figures.rows],
                             indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fires", type=int, default=40)
    parser.add_argument("--registrations", type=int, default=40)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.fires, args.registrations, args.calls, args.json))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
