"""Process starts, engine beside raw Temporal, in one run: what a user waits for before a command
answers or a worker serves.

- `skills --version` and `skills --help`, wall (median of N runs), beside `temporal --version` and
  `temporal --help`;
- `skills get NAME`, warm (the worker already running, the command run once before), wall, beside
  `temporal schedule describe` of the same skill's schedule; and under it, the floor of any Python
  command that asks Temporal: Python importing Temporal's client and its pydantic converter;
- worker spawn -> polling: from starting `python -m worker` (the outbox, its one MCP server) until its task
  queue shows a poller of workflow tasks and one of activity tasks, beside a bare Python worker of the
  one-activity workflow (bench/raw.py); the first engine start (the store created and migrated) apart;
- worker spawn -> first queued fire done: one fire of a Direct skill that calls the outbox, queued while no worker
  polls its task queue, then `python -m worker` started, until that run's workflow is closed (the run succeeded);
  beside the bare worker started with one run of its one-activity workflow queued; and the same spawns, taken in
  turn with those, of a worker whose hub connects its servers at start (`EAGER_WORKER`: the worker before its
  hub connected when first needed), with the CPU seconds each worker had used when its fire was done;
- worker RSS idle, a few seconds after it polls, and again a few seconds after its first fire (one manual run
  of a Direct skill that calls the outbox; the bare worker runs its one-activity workflow once), beside the
  bare worker's.

    .venv/bin/python -m bench.startup [--runs 7] [--spawns 6]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowHandle

from bench.harness import Harness, header, row, rss_mib, started
from client.temporal_cli import temporal_binary
from skills.spec.models import Skill
from starter import exit_process

RAW_WORKER = """
import asyncio
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker
from bench.raw import RawOneActivity, noop
async def main():
    client = await Client.connect({address!r})
    async with Worker(client, task_queue={queue!r}, workflows=[RawOneActivity], activities=[noop]):
        await asyncio.Event().wait()
asyncio.run(main())
"""

EAGER_WORKER = """
import runpy
from adapters.mcp.hub import ToolHub
start = ToolHub.start
async def eager(self, *, wait=True, lazy=False):
    await start(self, wait=wait, lazy=False)
ToolHub.start = eager
runpy.run_module("worker", run_name="__main__", alter_sys=True)
"""
"""`python -m worker` whose hub connects every server at start, once it polls, as before the hub connected them
when first needed: the first queued fire's figure beside the lazy hub's, in one run."""

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")
IDLE_SECONDS = 5.0


def skills_command() -> list[str]:
    """What the `skills` entry point runs, run by this Python in this checkout (so that a copy of an older
    commit measures its own code, not the installed one)."""
    return [sys.executable, "-c", "import sys; from starter.cli import main; sys.exit(main())"]


@dataclass
class Timed:
    wall: float
    cpu: float
    """user + system seconds of the process"""

    def __str__(self) -> str:
        return f"{self.wall:.3f}"


def wall(command: list[str], runs: int, env: dict[str, str] | None = None) -> Timed:
    """Median wall and CPU seconds of ``command`` over ``runs`` runs (after one run not counted); it must exit 0."""
    walls, cpus = [], []
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started_at = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - started_at
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
        if i:
            walls.append(elapsed)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return Timed(statistics.median(walls), statistics.median(cpus))


async def polled(client: Client, queue: str) -> bool:
    """Whether ``queue`` has a poller of workflow tasks and one of activity tasks."""
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        described = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind))
        if not described.pollers:
            return False
    return True


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a running process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def spawn(client: Client, command: list[str], env: dict[str, str], queue: str,
                timeout: float = 120) -> tuple[asyncio.subprocess.Process, Timed]:
    """Start ``command``; return it, and the seconds until ``queue`` is polled (probed every 10 ms) with the
    CPU seconds the process had used by then."""
    started_at = time.perf_counter()
    process = await asyncio.create_subprocess_exec(*command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL)
    while not await polled(client, queue):
        if process.returncode is not None or time.perf_counter() - started_at > timeout:
            raise RuntimeError(f"{command} never polled {queue} (exit {process.returncode})")
        await asyncio.sleep(0.01)
    return process, Timed(time.perf_counter() - started_at, cpu_seconds(process.pid))


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        await asyncio.wait_for(process.wait(), 60)


async def main(runs: int, spawns: int) -> None:
    skills, temporal = skills_command(), temporal_binary()
    version = wall([*skills, "--version"], runs)
    raw_version = wall([temporal, "--version"], runs)
    help_ = wall([*skills, "--help"], runs)
    raw_help = wall([temporal, "--help"], runs)
    client_floor = wall([sys.executable, "-c", "import temporalio.client, temporalio.contrib.pydantic"], runs)

    async with started(queue="bench-startup", worker_in_process=False) as h:
        address = h.env.client.service_client.config.target_host
        base = {**os.environ, "TEMPORAL_ADDRESS": address, "SKILLS_DATA_DIR": str(h.settings.data_dir),
                "SKILLS_TIMEZONE": "UTC", "SKILLS_HEALTH_PORT": "0"}
        engine_times, raw_times = [], []
        first = Timed(0.0, 0.0)
        worker = raw = None
        try:
            for i in range(spawns):
                queue = f"bench-startup-{i}"
                env = {**base, "SKILLS_TASK_QUEUE": queue}
                worker, seconds = await spawn(h.client, [sys.executable, "-m", "worker"], env, queue)
                if i == 0:
                    first = seconds
                else:
                    engine_times.append(seconds)
                raw_queue = f"bench-startup-raw-{i}"
                raw, seconds = await spawn(h.client, [sys.executable, "-c", RAW_WORKER.format(
                    address=address, queue=raw_queue)], base, raw_queue)
                raw_times.append(seconds)
                if i < spawns - 1:
                    await stop(worker)
                    await stop(raw)
            assert worker is not None and raw is not None
            await asyncio.sleep(IDLE_SECONDS)
            idle, raw_idle = rss_mib(worker.pid), rss_mib(raw.pid)
            skill = await register(h, env)
            await fire_once(h, env, skill, raw_queue)
            await asyncio.sleep(IDLE_SECONDS)
            fired, raw_fired = rss_mib(worker.pid), rss_mib(raw.pid)
            get, describe = await warm_get(env, runs, temporal, address, skill.schedule_id)
            for process in (worker, raw):
                await stop(process)
            worker = raw = None
            queued, eager, raw_queued = await queued_fires(h, base, address, skill, spawns - 1)
        finally:
            for process in (worker, raw):
                if process is not None:
                    await stop(process)

    header()
    row("`skills --version`, wall (s)", f"{version}", f"{raw_version}",
        f"target <= 0.15; CPU {version.cpu:.2f} s; raw: temporal --version")
    row("`skills --help`, wall (s)", f"{help_}", f"{raw_help}",
        f"target <= 0.15; CPU {help_.cpu:.2f} s; raw: temporal --help")
    row("`skills get NAME`, warm, wall (s)", f"{get}", f"{describe}",
        f"target <= 0.25; CPU {get.cpu:.2f} s; raw: temporal schedule describe")
    row("  Python with Temporal's client imported (s)", f"{client_floor}", "",
        "the floor of any Python command that asks Temporal: the client and its pydantic converter")
    engine_wall, raw_wall = (statistics.median(t.wall for t in times) for times in (engine_times, raw_times))
    engine_cpu, raw_cpu = (statistics.median(t.cpu for t in times) for times in (engine_times, raw_times))
    row("worker spawn -> polling (s)", f"{engine_wall:.2f}", f"{raw_wall:.2f}",
        f"target <= 0.8; CPU {engine_cpu:.2f} s (raw {raw_cpu:.2f}); median of {len(engine_times)}; 1 MCP server")
    row("worker spawn -> polling, store created (s)", f"{first.wall:.2f}", "",
        f"CPU {first.cpu:.2f} s; the first start, migrations included")
    for name, times in (("worker spawn -> first queued fire done (s)", queued),
                        ("  the same, the hub connected at start (s)", eager)):
        walls, cpus = [t.wall for t in times], [t.cpu for t in times]
        row(name, f"{statistics.median(walls):.2f}", f"{statistics.median(t.wall for t in raw_queued):.2f}",
            f"target <= 0.6; median of {len(times)} (engine {min(walls):.2f}-{max(walls):.2f}, raw "
            f"{min(t.wall for t in raw_queued):.2f}-{max(t.wall for t in raw_queued):.2f}); worker CPU by then "
            f"{statistics.median(cpus):.2f} s (raw {statistics.median(t.cpu for t in raw_queued):.2f}); "
            f"a Direct skill calling the outbox")
    row("worker RSS idle (MiB)", f"{idle:.0f}", f"{raw_idle:.0f}", f"target <= 120; {IDLE_SECONDS:.0f} s after polling")
    row("worker RSS after its first fire (MiB)", f"{fired:.0f}", f"{raw_fired:.0f}",
        f"{IDLE_SECONDS:.0f} s after one run done; raw: one run of its one-activity workflow")
    print(f"(medians of {runs} runs after one not counted; {spawns} worker starts)", flush=True)


async def register(h: Harness, env: dict[str, str]) -> Skill:
    """A Direct skill on the spawned worker's queue: one call of the outbox's tool, a daily schedule."""
    from client import SkillsClient

    result = await SkillsClient(h.client, env["SKILLS_TASK_QUEUE"]).register({
        "name": "bench startup", "instructions": "Say hello to the team.", "schedule": "0 9 * * *",
        "notify_on_completion": False,
        "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": "hello"}}]})
    assert result.skill.schedule_id
    return result.skill


async def fire_once(h: Harness, env: dict[str, str], skill: Skill, raw_queue: str) -> None:
    """One manual run of ``skill`` on the spawned worker, and one of the raw workflow on the bare worker."""
    from skills.messages.run import SkillRunInput
    from skills.naming import SKILL_RUN

    assert skill.id is not None
    await h.client.execute_workflow(SKILL_RUN, SkillRunInput(skill_id=skill.id, trigger="manual"),
                                    id=f"bench-startup-fire-{time.time_ns()}", task_queue=env["SKILLS_TASK_QUEUE"])
    await h.client.execute_workflow("BenchRaw", "x", id=f"bench-startup-raw-{time.time_ns()}", task_queue=raw_queue)


async def queued_fires(h: Harness, base: dict[str, str], address: str, skill: Skill,
                       spawns: int) -> tuple[list[Timed], list[Timed], list[Timed]]:
    """Seconds from spawning a worker until the one fire queued before it started is done, and the CPU seconds the
    worker had used by then, ``spawns`` times each, in turn: a scheduled run of ``skill`` queued on a task queue
    nobody polls, then `python -m worker` on it; the same with the hub connected at start (:data:`EAGER_WORKER`);
    and the bare worker with one run of its workflow queued. Each worker is stopped before the next."""
    from skills.messages.run import SkillRunInput
    from skills.naming import SKILL_RUN
    from skills.spec.models import RunRecord

    assert skill.id is not None
    engine: list[Timed] = []
    eager: list[Timed] = []
    raw: list[Timed] = []
    for i in range(spawns):
        for side, command in ((engine, ["-m", "worker"]), (eager, ["-c", EAGER_WORKER])):
            queue = f"bench-startup-queued-{len(engine) + len(eager)}"
            handle = await h.client.start_workflow(SKILL_RUN, SkillRunInput(skill_id=skill.id, trigger="schedule"),
                                                   id=f"bench-startup-queued-{time.time_ns()}", task_queue=queue,
                                                   result_type=RunRecord)
            timed, record = await served(handle, [sys.executable, *command], {**base, "SKILLS_TASK_QUEUE": queue})
            if record is None or record.status != "success":
                raise RuntimeError(f"the queued fire did not succeed: {record}")
            side.append(timed)
        raw_queue = f"bench-startup-raw-queued-{i}"
        handle = await h.client.start_workflow("BenchRaw", "x", id=f"bench-startup-raw-queued-{time.time_ns()}",
                                               task_queue=raw_queue, result_type=str)
        timed, _ = await served(handle, [sys.executable, "-c", RAW_WORKER.format(address=address, queue=raw_queue)],
                                base)
        raw.append(timed)
    return engine, eager, raw


async def served(handle: WorkflowHandle[Any, T], command: list[str], env: dict[str, str],
                 timeout: float = 120) -> tuple[Timed, T]:
    """Start ``command`` (a worker); the seconds until ``handle``'s workflow is closed with the worker's CPU
    seconds by then, and its result. The result is long-polled, so the close is seen when the server records
    it. The worker is stopped after."""
    started_at = time.perf_counter()
    process = await asyncio.create_subprocess_exec(*command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL)
    try:
        result = await asyncio.wait_for(handle.result(), timeout)
        return Timed(time.perf_counter() - started_at, cpu_seconds(process.pid)), result
    finally:
        await stop(process)


async def warm_get(env: dict[str, str], runs: int, temporal: str, address: str,
                   schedule: str | None) -> tuple[Timed, Timed]:
    """`skills get` of a registered skill on the running worker, and `temporal schedule describe` of its schedule."""
    assert schedule
    get = await asyncio.to_thread(wall, [*skills_command(), "get", "bench startup"], runs, env)
    describe = await asyncio.to_thread(wall, [temporal, "schedule", "describe", "--schedule-id", schedule,
                                              "--address", address], runs, env)
    return get, describe


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (median)")
    parser.add_argument("--spawns", type=int, default=6, help="worker starts (the first one apart)")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.spawns))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
