"""Worker memory with many skills: the resident set (RSS) of a real worker process (`python -m worker`)
with N registered skills, idle, idle after its maintenance and SKILL.md sync rounds, and at its peak during a
burst of runs; beside a bare Python worker running the raw one-activity workflow.

    .venv/bin/python -m bench.rss [--skills 1000] [--burst 200] [--imports | --hub-at-start]

``--imports``: the worker runs under an import hook that records each module's own resident memory (its
`/proc/self/statm` resident pages after its code ran minus before, less its own imports'), and once idle
prints it summed by package, the largest modules, and what is left: the memory no import accounts for (the
runtime's heap: caches, per-skill data, Temporal's bridge at work).

``--hub-at-start``: the restarted worker's hub connects its MCP servers once it polls
(``bench.startup.EAGER_WORKER``), as before it connected them when first needed: that design's idle figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from temporalio.client import Client

from bench.harness import header, row, rss_mib, started
from bench.startup import EAGER_WORKER
from skills.messages.run import SkillRunInput
from skills.naming import MAINTENANCE, SKILL_RUN, SYNC_SKILL_FILES
from skills.skillmd.sync import SyncInput
from starter import exit_process

IDLE_SECONDS = 5.0

IMPORT_HOOK = """
import importlib.abc, json, os, runpy, signal, sys
PAGE = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE
own, stack = {}, []
class Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner
    def create_module(self, spec):
        return self.inner.create_module(spec)
    def exec_module(self, module):
        stack.append(0)
        before = rss()
        try:
            self.inner.exec_module(module)
        finally:
            grew = rss() - before
            own[module.__name__] = grew - stack.pop()
            if stack:
                stack[-1] += grew
    def __getattr__(self, name):
        return getattr(self.inner, name)
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                        spec.loader = Loader(spec.loader)
                    return spec
        return None
sys.meta_path.insert(0, Finder())
def dump(*_):
    import collections, ctypes, gc
    figures = {"own": own, "rss": rss()}
    kinds = collections.Counter(type(thing).__qualname__ for thing in gc.get_objects())
    figures["objects"] = kinds.most_common(15)
    gc.collect()
    figures["after_gc"] = rss()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    figures["after_trim"] = rss()
    with open(os.environ["BENCH_IMPORTS_OUT"], "w") as out:
        json.dump(figures, out)
signal.signal(signal.SIGUSR1, dump)
sys.argv = ["worker"]
runpy.run_module("worker", run_name="__main__", alter_sys=True)
"""


def print_imports(path: Path, pid: int) -> None:
    """Ask the worker under IMPORT_HOOK for its figures and print them: by package, largest modules, the rest."""
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while not path.exists() or not path.stat().st_size:
        if time.monotonic() > deadline:
            raise TimeoutError("the worker never wrote its import figures")
        time.sleep(0.1)
    time.sleep(0.2)
    figures = json.loads(path.read_text())
    own: dict[str, int] = figures["own"]
    packages: dict[str, int] = {}
    for name, grew in own.items():
        packages[name.split(".")[0]] = packages.get(name.split(".")[0], 0) + grew
    mib = 1024 * 1024
    print(f"resident {figures['rss'] / mib:.1f} MiB; imports {sum(own.values()) / mib:.1f} MiB "
          f"({len(own)} modules); the rest {(figures['rss'] - sum(own.values())) / mib:.1f} MiB")
    print(f"after gc.collect() {figures['after_gc'] / mib:.1f} MiB; after malloc_trim(0) "
          f"{figures['after_trim'] / mib:.1f} MiB")
    print("objects by type:", ", ".join(f"{kind} {count:,}" for kind, count in figures["objects"]))
    print("by package (MiB):", ", ".join(f"{name} {grew / mib:.1f}" for name, grew in
                                         sorted(packages.items(), key=lambda item: -item[1]) if grew >= mib / 4))
    print("largest modules (MiB):", ", ".join(f"{name} {grew / mib:.1f}" for name, grew in
                                              sorted(own.items(), key=lambda item: -item[1])[:25]))


def children_rss(pid: int) -> float:
    """RSS of the MCP servers a worker started (its child processes)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == pid:
                    total += rss_mib(int(entry.name))
            except (OSError, ValueError):
                continue
    return total


async def peak_during(pid: int, work: asyncio.Task[object]) -> float:
    peak = rss_mib(pid)
    while not work.done():
        peak = max(peak, rss_mib(pid))
        await asyncio.sleep(0.1)
    await work
    return max(peak, rss_mib(pid))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def ready(port: int, process: asyncio.subprocess.Process, timeout: float = 120) -> None:
    """Until the worker's ``/readyz`` answers 200: it polls its task queue."""
    deadline = time.monotonic() + timeout

    def get() -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
                return answer.status
        except (OSError, urllib.error.URLError):
            return 0

    while await asyncio.to_thread(get) != 200:
        if process.returncode is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the worker never got ready (exit {process.returncode})")
        await asyncio.sleep(0.1)


async def rounds(client: Client, queue: str) -> None:
    """A maintenance round and a SKILL.md sync, run now (their schedules run them every 5 minutes by default)."""
    for workflow, args in ((MAINTENANCE, []), (SYNC_SKILL_FILES, [SyncInput()])):
        await client.execute_workflow(workflow, args=args, id=f"bench-rss-round-{time.time_ns()}", task_queue=queue)


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)


async def main(count: int, burst: int, imports: bool = False, hub_at_start: bool = False) -> None:
    async with started(queue="bench-rss", worker_in_process=False) as h:
        address = h.env.client.service_client.config.target_host
        port = free_port()
        env = {**os.environ, "TEMPORAL_ADDRESS": address, "SKILLS_TASK_QUEUE": h.settings.task_queue,
               "SKILLS_DATA_DIR": str(h.settings.data_dir), "SKILLS_TIMEZONE": "UTC", "SKILLS_HEALTH_PORT": str(port)}
        figures = Path(h.settings.data_dir) / "imports.json"

        async def spawn(command: list[str]) -> asyncio.subprocess.Process:
            process = await asyncio.create_subprocess_exec(
                sys.executable, *command, env={**env, "BENCH_IMPORTS_OUT": str(figures)},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            await ready(port, process)
            return process

        # The worker that registers the skills (the store created and migrated by its start), then a worker
        # restarted over them: the one whose idle memory a deployment pays for, day in, day out.
        worker = await spawn(["-m", "worker"])
        raw = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.raw", address, "bench-rss-raw", env=env)
        try:
            result = await h.skills.register_many([
                {"name": f"bench rss {i}", "instructions": "Say hello to the team. " * 20, "schedule": "0 9 * * *",
                 "notify_on_completion": False,
                 "execution_plan": [{"toolName": "outbox_send_message", "parameters": {"message": f"rss {i}"}}]}
                for i in range(count)])
            assert not result.refused, result.refused[:3]
            await rounds(h.client, h.settings.task_queue)  # the bundled SKILL.md skills stored, as in a deployment
            await asyncio.sleep(IDLE_SECONDS)
            registered = rss_mib(worker.pid)
            await stop(worker)
            worker = await spawn(["-c", IMPORT_HOOK] if imports else ["-c", EAGER_WORKER] if hub_at_start
                                 else ["-m", "worker"])
            await asyncio.sleep(IDLE_SECONDS)
            idle = rss_mib(worker.pid)
            if imports:
                print_imports(figures, worker.pid)
            await rounds(h.client, h.settings.task_queue)
            await asyncio.sleep(IDLE_SECONDS)
            after_rounds = rss_mib(worker.pid)

            async def fire() -> None:
                ids = [item.skill_id for item in result.items[:burst]]
                handles = await asyncio.gather(*(h.client.start_workflow(
                    SKILL_RUN, SkillRunInput(skill_id=skill_id, trigger="manual"), id=f"bench-rss-{skill_id}-{time.time_ns()}",
                    task_queue=h.settings.task_queue) for skill_id in ids))
                await asyncio.gather(*(handle.result() for handle in handles))

            peak = await peak_during(worker.pid, asyncio.create_task(fire()))
            await asyncio.sleep(IDLE_SECONDS)
            after = rss_mib(worker.pid)

            async def fire_raw() -> None:
                handles = await asyncio.gather(*(h.client.start_workflow(
                    "BenchRaw", "x", id=f"bench-rss-raw-{i}-{time.time_ns()}", task_queue="bench-rss-raw")
                    for i in range(burst)))
                await asyncio.gather(*(handle.result() for handle in handles))

            raw_idle = rss_mib(raw.pid)
            raw_peak = await peak_during(raw.pid, asyncio.create_task(fire_raw()))
            await asyncio.sleep(IDLE_SECONDS)
            raw_after = rss_mib(raw.pid)
            header()
            row(f"worker RSS, {count} skills, idle (MiB)", f"{idle:.0f}", f"{raw_idle:.0f}",
                f"target <= 100; a worker restarted over them, {IDLE_SECONDS:.0f} s after it polls"
                f"{' (its hub connected at start)' if hub_at_start else ''}; "
                f"the MCP servers it started: {children_rss(worker.pid):.0f} MiB more")
            row("worker RSS, idle after a maintenance and a sync round (MiB)", f"{after_rounds:.0f}",
                f"{raw_idle:.0f}", "the restarted worker, its rounds run by hand (each every 5 min by default; "
                "its files as stored)")
            row(f"worker RSS, idle after registering {count} (MiB)", f"{registered:.0f}", f"{raw_idle:.0f}",
                "the worker that registered them (its store created and migrated at its start)")
            row(f"worker RSS, peak in a burst of {burst} runs (MiB)", f"{peak:.0f}", f"{raw_peak:.0f}",
                "raw: a bare worker of the one-activity workflow")
            row("worker RSS, idle after the burst (MiB)", f"{after:.0f}", f"{raw_after:.0f}",
                f"{IDLE_SECONDS:.0f} s after its last run")
        finally:
            await stop(worker)
            raw.terminate()
            await asyncio.wait_for(raw.wait(), 30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--imports", action="store_true", help="each import's resident memory, once idle")
    parser.add_argument("--hub-at-start", action="store_true",
                        help="the restarted worker's hub connects its servers at start (the design before)")
    args = parser.parse_args()
    asyncio.run(main(args.skills, args.burst, args.imports, args.hub_at_start))
    exit_process(0)  # temporalio/sdk-python#300: skip teardown once the figures are out (flushed)
